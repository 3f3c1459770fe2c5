"""The pins a fresh clone installs: requirements.txt and requirements-dev.txt name what the app and the tests use,
constraints.txt every package a passing install held. A pin changed in one and not the other would make `make`
fail to resolve, or install something never tested."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def _pins(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _PIN.match(line)
        assert match, f"{path.name}:{number} is not an exact pin: {raw!r}"
        name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
        assert name not in pins, f"{path.name} pins {name} twice"
        pins[name] = match.group(2)
    return pins


@pytest.mark.parametrize("requirements", ["requirements.txt", "requirements-dev.txt"])
def test_every_direct_pin_is_the_version_the_constraints_hold(requirements):
    constraints = _pins(ROOT / "constraints.txt")
    for name, version in _pins(ROOT / requirements).items():
        assert constraints.get(name) == version, (
            f"{requirements} pins {name}=={version}, constraints.txt {constraints.get(name)}")


def test_the_required_packages_are_pinned():
    pinned = _pins(ROOT / "requirements.txt")
    for name in ("gradio", "langchain", "chromadb", "ddgs", "llama-cpp-python", "sentence-transformers", "pytest"):
        assert name in pinned


def test_make_installs_both_files_under_the_constraints():
    makefile = (ROOT / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "pip install" in line]
    assert len(installs) == 2
    assert all("-c constraints.txt" in line for line in installs)
    assert re.search(r"^\$\(STAMP\):.*\bconstraints\.txt\b", makefile, re.M)
