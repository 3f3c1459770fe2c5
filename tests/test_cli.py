"""The command line: global options before or after the command, settings flags, clear errors."""

from __future__ import annotations

import pytest

from pipeline.__main__ import build_parser, main


@pytest.mark.parametrize("argv", [
    ["--model", "fast", "--data-dir", "/tmp/x", "ask", "q", "--method", "nor"],
    ["ask", "q", "--method", "nor", "--model", "fast", "--data-dir", "/tmp/x"],
    ["--data-dir", "/tmp/x", "ask", "q", "--model", "fast", "--method", "nor"],
])
def test_global_options_go_before_or_after_the_command(argv):
    args = build_parser().parse_args(argv)
    assert (args.model, args.data_dir, args.method, args.question) == ("fast", "/tmp/x", "nor", "q")


def test_global_option_defaults_hold_when_not_given():
    args = build_parser().parse_args(["collections"])
    assert args.model == "default" and args.chroma_url is None and args.data_dir


def test_auto_is_a_method_choice_and_bad_settings_are_clear(capsys, tmp_path, monkeypatch):
    def no_model(args):
        raise AssertionError("a bad setting is reported before the model loads")

    monkeypatch.setattr("pipeline.__main__._runtime", no_model)
    assert build_parser().parse_args(["ask", "q", "--method", "auto"]).method == "auto"
    code = main(["ask", "q", "--corpus", "", "--data-dir", str(tmp_path), "--set", "toc.max_depth=99"])
    assert code == 2 and "toc.max_depth" in capsys.readouterr().err
    code = main(["ask", "q", "--corpus", "", "--data-dir", str(tmp_path), "--set", "nonsense=1"])
    assert code == 2 and "Unknown setting 'nonsense'" in capsys.readouterr().err
    code = main(["ask", "q", "--corpus", "", "--data-dir", str(tmp_path), "--set", "webagent.ask_again_restated=maybe"])
    assert code == 2 and "webagent.ask_again_restated" in capsys.readouterr().err
