"""The table of step kinds (pipeline/steps): every kind declares everything each consumer needs, the union of
payloads, the event kinds and the note kinds come from it, and every kind drawn through every consumer (the
reasoning view, the Markdown report, the CLI printer, the picture and the fold) shows every field of its
payload."""

from __future__ import annotations

import html
import io
import re
from contextlib import redirect_stdout, redirect_stderr
from typing import get_args

import pytest
from pydantic import BaseModel

from pipeline.__main__ import Printer
from pipeline.events import EventKind, Link, Status, StepEvent, Tracer
from pipeline.fold import RunState
from pipeline.payloads import (ActionPayload, AnswerPayload, ChainExtras, ErrorPayload, Evidence, EvidencePayload,
                               ExpandPayload, GraphRef, HopPayload, NodePayload, PageView, PassageRef, PrunePayload,
                               QAPair, ResultRef, RetrievePayload, RoutePayload, SentenceRef, TokenPayload,
                               ComparedValue, ComparePayload, PlanPayload, SubQuestionPayload,
                               VerifyPayload, VisitPayload, WalkPayload, WarningPayload, CheckPayload, Signal,
                               EditPayload)
from pipeline.picture import draw, style_of
from pipeline.steps import KINDS, NOTE_KINDS, Payload
from pipeline.steps.kind import StepKind
from pipeline.steps.look import KindStyle
from pipeline.trace import markdown_report
from ui.view import render


def _passage(n: int) -> PassageRef:
    return PassageRef(id=f"pid{n}", title=f"Title{n}", text=f"text of passage {n}", source=f"file{n}.txt",
                      collection="coll", page=n + 10, number=n, table=2)


# One payload per kind, every field set to a value of its own; a kind added to the table without a sample here
# fails test_every_kind_has_a_sample.
SAMPLES: dict[str, BaseModel] = {
    "route": RoutePayload(method="ircot", label="IRCoT label", structure="chain", question="routed question?",
                          reason="its reason words", auto=True, follow_up="the earlier question",
                          escalated_from="the quick method"),
    "retrieve": RetrievePayload(query="the query words", passages=[_passage(1), _passage(2)]),
    "node": NodePayload(question="clarified question?", answer="node answer", depth=2, state="pruned",
                        reason="pruned for a reason", score=0.42, prune_kind="verification", llm_calls_used=7),
    "expand": ExpandPayload(query="expanded question", passages=[_passage(3)],
                            candidates=[QAPair(question="candidate question?", answer="candidate answer", passage=1)],
                            constrained_retry=True, message="one passage failed"),
    "verify": VerifyPayload(keep=True, score=0.77, reason="verdict reason", verifier="evidence-verifier",
                            evidence=Evidence(passage=_passage(4), answer="evidence answer", p_true=0.91,
                                              relevance=0.33, sampled="True")),
    "prune": PrunePayload(prune_kind="duplicate", reason="prune reason words", undo=True),
    "hop": HopPayload(step=3, sentence="A reasoning sentence.", query="hop query words", passages=[_passage(5)],
                      duplicates=4, pool_size=11, note="a hop note", stop="a stop reason"),
    "plan": PlanPayload(questions=["planned sub-question?"], final="Answer: #1", error="a plan error",
                        note="a plan note"),
    "subquestion": SubQuestionPayload(step=2, planned="Where was #1 born?", question="Where was Someone born?",
                                      answer="hop answer words", source=5, found=True, passages=[_passage(5)],
                                      note="a sub-question note"),
    "compare": ComparePayload(comparison="earlier", result="compare result", reason="a compare reason",
                              values=[ComparedValue(about="compared thing", value="1909", read_as="1909-12-19",
                                                    source=_passage(9))]),
    "answer_token": TokenPayload(text="streamed piece"),
    "answer": AnswerPayload(answer="The final answer [1].", citations=[1], passages=[_passage(6)],
                            finish_reason="stop", abstained=False, support=0.25, unsourced=["Unsourced Name"],
                            extras=ChainExtras(reader="notes", reasoning=["chain sentence one"],
                                               collected=[_passage(6)], short_answer="short one",
                                               hops=[QAPair(question="hop question?", answer="hop answer")])),
    "warning": WarningPayload(message="a warning message", stopped=True),
    "error": ErrorPayload(message="an error message"),
    "action": ActionPayload(action="quote", step=6, browser="a local web", query="action query",
                            results=[ResultRef(number=1, title="result title", snippet="snip", url="https://r.example")],
                            result=1, page=PageView(title="page title", url="https://p.example", page=3, window=2,
                                                    windows=5),
                            sentences=[SentenceRef(number=2, text="quoted sentence text", quoted=True)],
                            fact=3, merged=[1, 2], facts=4, passages=[_passage(7)], allowed=["quote", "finish"],
                            rules=["no load after load"], refused="refusal words", error="error words",
                            ended_by="model", message="action message"),
    "walk": WalkPayload(question="walk question", mode="content",
                        graphs=[GraphRef(collection="graphcoll", description="12 passages, 30 edges", current=False)],
                        seeds=10, neighbours=3, budget=30, depth=2, visited=9, target="table 2 of x.pdf"),
    "visit": VisitPayload(node="node-key", node_kind="table", passage=_passage(8), label="Table 2 of x.pdf",
                          edge="knn+title", via="shared words", from_node="s9", score=0.61, rank=2, depth=1,
                          seed=False, collection="visitcoll", bridge="Bridge Name"),
    "check": CheckPayload(signals=[Signal(name="signal name", value=0.42, fired=True, why="signal why words")],
                          deeper="deeper method", reason="escalation reason words"),
    "evidence": EvidencePayload(text="next evidence words", path=["s1", "s2"], depth=1, candidates=8, chosen=3,
                                fallback="a fallback reason"),
    "edit": EditPayload(action="edit_reading", target="n42", reading="old question? → old answer",
                        question="edited question?", answer="edited answer"),
}

# Fields a consumer need not show, and why.
UNSHOWN = {
    "route": {"method", "structure", "auto"},  # the label names the method; the structure picks the layout
    "node": {"depth", "llm_calls_used"},  # the depth is the nesting; the calls are in the step's totals
    "expand": {"constrained_retry"},  # a detail of the model call, counted in its calls
    "hop": set(),
    "subquestion": {"found"},  # shown as the answer or "not found"
    "answer": {"finish_reason", "citations", "abstained", "support"},  # the citations are marked on the passages
    "warning": {"stopped"},  # a stop is what the title and the message say
    "action": {"result", "fact", "facts", "rules", "page", "results", "sentences", "passages", "allowed",
               "merged", "ended_by"},  # a merge shows what it merged, a finish how it ended; the rest below
    "walk": {"question", "mode", "visited", "target"},  # the root's question is the run's; mode picks the bounds
    "visit": {"node", "node_kind", "label", "from_node", "collection", "seed"},  # ids and the edge's source
    "evidence": {"path", "depth"},  # the path is the parent chain
    "verify": {"evidence"},  # checked through its parts below
    "edit": {"action"},  # said in words by the title: "You pruned", "You edited a reading"...
}


def _witnesses(kind: str, payload: BaseModel) -> dict[str, str]:
    """For each shown field, a string that must appear where the step is shown."""
    out = {}
    for name, value in payload:
        if name == "kind" or name in UNSHOWN.get(kind, set()) or value in (None, "", [], False):
            continue
        if isinstance(value, float):
            out[name] = f"{value:.2f}"
        elif isinstance(value, bool):
            out[name] = {"keep": "keep", "undo": "undone", "current": "out of date", "fired": "asks for more"}.get(name, name)
        elif isinstance(value, (int, str)):
            out[name] = str(value)
        elif isinstance(value, list) and value and isinstance(value[0], PassageRef):
            out[name] = value[0].title
        elif isinstance(value, list) and value and isinstance(value[0], QAPair):
            out[name] = value[0].question
        elif isinstance(value, list) and value and isinstance(value[0], GraphRef):
            out[name] = value[0].description
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            out.update({f"{name}.{inner}": shown for inner, shown in _witnesses(kind, value[0]).items()})
        elif isinstance(value, list):
            out[name] = str(value[0])
        elif isinstance(value, PassageRef):
            out[name] = value.title
        elif isinstance(value, BaseModel):
            for inner, shown in _witnesses(kind, value).items():
                out[f"{name}.{inner}"] = shown
    if kind == "verify":
        out.update({"evidence.p_true": "0.91", "evidence.relevance": "0.33", "evidence.passage": "Title4"})
    if kind == "action":
        out.update({"sentences": "quoted sentence text", "page": "page title"})
    return out


def _run(kind: str) -> tuple[RunState, StepEvent]:
    """A closed run holding one step of ``kind`` (a note or a streamed piece on a hop step)."""
    tracer = Tracer("toc")
    state = RunState()
    payload = SAMPLES[kind]
    role = KINDS[kind].role
    if role == "step":
        event = tracer.event(payload, f"Title of the {kind} step", id="x1")
    elif role == "stream":  # a piece of the answer being written
        state.add(tracer.event(AnswerPayload(), "Answer", id="a1", status=Status.RUNNING))
        event = tracer.event(payload, "Answer", id="a1", status=Status.RUNNING)
    else:
        state.add(tracer.event(HopPayload(step=1, sentence="host"), "host", id="h1"))
        event = tracer.event(payload, f"Title of the {kind} step", parent_id=None if role == "route" else "h1")
    state.add(event)
    state.close()
    return state, event


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def test_every_kind_declares_everything_its_consumers_need():
    for name, kind in KINDS.items():
        assert isinstance(kind, StepKind) and kind.name == name
        assert kind.payload.model_fields["kind"].default == name, name
        assert kind.role in ("step", "note", "stream", "route"), name
        assert all(callable(f) for f in (kind.title, kind.lines, kind.card, kind.passages)), name
        if kind.role == "step":
            assert isinstance(kind.style, KindStyle) and kind.style.legend, f"{name} has no look in the picture"
        else:
            assert kind.style is None and kind.drawn_as, f"{name} must say how the picture shows it"


def test_the_union_the_event_kinds_and_the_notes_come_from_the_table():
    union = get_args(get_args(Payload)[0])
    assert set(union) == {kind.payload for kind in KINDS.values()}
    assert {k.value for k in EventKind} == set(KINDS)
    assert NOTE_KINDS == {name for name, kind in KINDS.items() if kind.role == "note"}
    assert {k.value for k in EventKind if k.is_note} == NOTE_KINDS


def test_every_kind_has_a_sample():
    assert set(SAMPLES) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_shows_each_field_in_the_view_the_report_and_the_cli(kind):
    state, event = _run(kind)
    spec = KINDS[kind]
    witnesses = _witnesses(kind, SAMPLES[kind])
    view = _text(render(state))
    report = markdown_report(state)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        printer = Printer()
        for e in state.events:
            printer.show(e, state)
    printed = out.getvalue() + err.getvalue()
    if spec.role == "stream":
        assert "streamed piece" in view and "streamed piece" in printed
        assert "streamed piece" in draw(state)  # the answer box's tooltip while it is written
        return
    if spec.role == "route":
        view = _text(render(state, header=None))
        assert "its reason words" in view and "its reason words" in printed
        return
    for field, shown in witnesses.items():
        assert shown in view, f"{kind}.{field} ({shown!r}) is not in the view"
        assert shown in report, f"{kind}.{field} ({shown!r}) is not in the report"
        if spec.role == "step" or spec.alert:
            assert shown in printed, f"{kind}.{field} ({shown!r}) is not printed by the CLI"


@pytest.mark.parametrize("kind", sorted(k for k, s in KINDS.items() if s.role == "step"))
def test_every_step_kind_is_drawn_with_its_own_look(kind):
    state, event = _run(kind)
    svg = draw(state, standalone=True)
    assert f'data-kind="{kind}"' in svg
    assert html.escape(style_of(event).legend) in svg  # its own look's legend, not the fallback's


@pytest.mark.parametrize("kind", sorted(k for k, s in KINDS.items() if s.reads_sources))
def test_a_kind_that_reads_sources_has_its_passages_scored(kind):
    state, _ = _run(kind)
    assert state.has_retrieval()
    expected = {p.id for p in KINDS[kind].passages(SAMPLES[kind])}
    assert state.passage_ids() == expected


def test_links_and_notes_fold_by_role():
    tracer = Tracer("toc")
    state = RunState.of([tracer.event(SAMPLES["node"], "n", id="n1"),
                         tracer.event(SAMPLES["verify"], "v", parent_id="n1"),
                         tracer.event(SAMPLES["answer"], "a", id="a1", parent_id="n1",
                                      links=[Link(target="n1", type="cites")])])
    assert list(state.steps) == ["n1", "a1"] and [n.kind for n in state.notes["n1"]] == [EventKind.VERIFY]
    assert state.outcome == "answered"


def _hostile(value):
    """``value`` with markup added to every string in it."""
    if isinstance(value, str):
        return value + '<script>alert(1)</script><img src=x onerror="y">'
    if isinstance(value, list):
        return [_hostile(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k in ("kind", "state", "mode", "action", "node_kind", "structure", "method") else _hostile(v)
                for k, v in value.items()}
    return value


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_escapes_what_its_payload_holds(kind):
    sample = SAMPLES[kind]
    hostile = type(sample).model_validate(_hostile(sample.model_dump()))
    SAMPLES[kind], original = hostile, sample
    try:
        state, _ = _run(kind)
    finally:
        SAMPLES[kind] = original
    assert "&lt;script&gt;alert(1)" in render(state)  # shown, as text
    for shown in (render(state), draw(state), draw(state, standalone=True)):
        assert "<script" not in shown and "<img" not in shown, kind
