"""The minimal steps view escapes text from documents and folds updates of a step into one line."""

from __future__ import annotations

from pipeline.events import EventKind, Status, Tracer
from ui.steps_view import StepLog


def test_passage_text_is_escaped_and_updates_fold():
    tracer = Tracer("oner")
    log = StepLog()
    log.add(tracer.event(EventKind.RETRIEVE, "Retrieve", id="r1", status=Status.RUNNING))
    log.add(tracer.event(EventKind.RETRIEVE, "Retrieve", id="r1", payload={"passages": [
        {"number": 1, "title": "<b>T</b>", "text": "<script>alert(1)</script><img src=x onerror=alert(2)>"}]}))
    log.add(tracer.event(EventKind.ANSWER_TOKEN, "Answer", id="a1", payload={"text": "Hi "}))
    log.add(tracer.event(EventKind.ANSWER_TOKEN, "Answer", id="a1", payload={"text": "there"}))
    text = log.markdown()
    assert "<script>" not in text and "&lt;script&gt;" in text and "<img" not in text and "&lt;b&gt;" in text
    assert text.count("retrieve") == 1 and log.answer == "Hi there"


def test_long_passage_lists_are_cut():
    tracer = Tracer("toc")
    log = StepLog()
    passages = [{"number": i, "title": f"P{i}", "text": "x"} for i in range(1, 21)]
    log.add(tracer.event(EventKind.RETRIEVE, "Retrieve", payload={"passages": passages}))
    assert "and 15 more passages" in log.markdown() and "P6" not in log.markdown()
