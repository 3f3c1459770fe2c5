# Two commands do all the set-up on a fresh machine:
#   make run    install into .venv, prepare the default model, ingest the demo corpus, serve on :7860
#   make test   the same set-up (plus test tools), then the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements
DEV_STAMP := $(VENV)/.installed-requirements-dev
ARGS ?=
PYTEST_ARGS ?=

CHROMIUM := /usr/bin/chromium

.PHONY: run test setup chromium clean-venv

# constraints.txt holds every package of a passing install, so a fresh clone gets the versions that were tested.
$(STAMP): requirements.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install --progress-bar off -r requirements.txt -c constraints.txt
	touch $@

$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(PY) -m pip install --progress-bar off -r requirements-dev.txt -c constraints.txt
	touch $@

setup: $(STAMP)
	$(PY) -m models.prepare default

run: setup
	$(PY) app.py $(ARGS)

# The browser tests need Debian's chromium; `make run` does not.
chromium:
	@test -x $(CHROMIUM) || { echo "Installing Debian's chromium for the browser tests..."; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

test: $(DEV_STAMP) chromium
	$(PY) -m models.prepare fast default
	$(PY) -m pytest --durations=25 $(PYTEST_ARGS)

clean-venv:
	rm -rf $(VENV)
