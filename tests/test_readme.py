"""Every command in the README runs as written.

Each ``bash`` block of README.md is run line by line, in order, from the repository folder, with the fast model
as the default (``RQA_MODEL=fast``) and a copy of the test data folder (demo corpus included) as the default
data folder. ``make run`` lines must serve the page (then they are stopped); lines ending in ``&`` start a
server the later lines use (stopped when the block ends); every other line must exit 0. ``make test`` is the
command that runs this suite, so it is the one line not run here (CI runs it).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.real_model, pytest.mark.server]

_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def readme_blocks() -> list[list[str]]:
    """The README's bash blocks as lists of commands (comments and continuations resolved)."""
    blocks = []
    for body in _BLOCK.findall((REPO / "README.md").read_text(encoding="utf-8")):
        commands, pending = [], ""
        for raw in body.splitlines():
            line = _without_comment(raw).rstrip()
            if not line.strip():
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            commands.append((pending + line).strip())
            pending = ""
        blocks.append(commands)
    return blocks


def _without_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` inside quotes or a word is kept)."""
    quote = None
    for i, char in enumerate(line):
        if char in "\"'" and quote in (None, char):
            quote = None if quote else char
        elif char == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _port(command: str, default: int) -> int:
    match = re.search(r"--port[ =](\d+)", command)
    return int(match.group(1)) if match else default


def _wait_http(url: str, process: subprocess.Popen, seconds: float) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"exited with {process.returncode} before serving {url}")
        try:
            with urllib.request.urlopen(url, timeout=3) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"nothing served at {url} within {seconds:.0f} s")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def environment(demo_data_dir, fast_model_path, tmp_path_factory):
    data = tmp_path_factory.mktemp("readme") / "data"
    shutil.copytree(demo_data_dir, data)
    env = {**os.environ, "RQA_MODEL": "fast", "RQA_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"}
    env.pop("MAKEFLAGS", None)
    return env


def test_the_readme_has_the_commands_people_need():
    commands = [c for block in readme_blocks() for c in block]
    assert commands[:2] == ["make run", "make test"]
    assert any(c.startswith(".venv/bin/python -m pipeline ask") for c in commands)
    assert any(c.startswith(".venv/bin/python -m pipeline.evaluate") for c in commands)


@pytest.mark.parametrize("number", range(len(readme_blocks())))
def test_readme_block_runs_as_written(number, environment, tmp_path):
    log = tmp_path / "log.txt"
    background: list[subprocess.Popen] = []
    for stale in _outputs_in_tmp(readme_blocks()[number]):
        # An evaluation refuses to resume a results file of other settings (an earlier default-model run);
        # a reader running the block for the first time has none.
        stale.unlink(missing_ok=True)
    try:
        for command in readme_blocks()[number]:
            if command == "make test":
                continue  # the command running this suite
            with open(log, "a") as out:
                out.write(f"\n$ {command}\n")
            output = open(log, "a")
            if command.startswith("make run") or command.endswith("&"):
                line = command.rstrip("&").strip()
                process = subprocess.Popen(["bash", "-c", line], cwd=REPO, env=environment, stdout=output,
                                           stderr=subprocess.STDOUT, start_new_session=True)
                url = _server_url(line)
                try:
                    _wait_http(url, process, seconds=300)
                except AssertionError as exc:
                    _stop(process)
                    pytest.fail(f"README: `{command}`: {exc}\n{log.read_text()[-3000:]}")
                if command.startswith("make run"):
                    _stop(process)
                else:
                    background.append(process)
                continue
            done = subprocess.run(["bash", "-c", command], cwd=REPO, env=environment, stdout=output,
                                  stderr=subprocess.STDOUT, timeout=900)
            if done.returncode != 0:
                pytest.fail(f"README: `{command}` exited with {done.returncode}:\n{log.read_text()[-3000:]}")
    finally:
        for process in background:
            _stop(process)


def _outputs_in_tmp(commands: list[str]) -> list[Path]:
    """The ``--out`` files under /tmp that ``commands`` write."""
    found = (re.search(r"--out[ =](\S+)", command) for command in commands)
    return [Path(m.group(1)) for m in found if m and m.group(1).startswith("/tmp/")]


def _server_url(command: str) -> str:
    """Where a README server line serves: the app's page, a model server's model list, Chroma's heartbeat."""
    words = shlex.split(command)
    if "models.serve" in command:
        return f"http://127.0.0.1:{_port(command, 8000)}/v1/models"
    if words and words[0].endswith("chroma"):
        return f"http://127.0.0.1:{_port(command, 8000)}/api/v2/heartbeat"
    args = next((w.split("=", 1)[1] for w in words if w.startswith("ARGS=")), "")
    return f"http://127.0.0.1:{_port(args, 7860)}/"
