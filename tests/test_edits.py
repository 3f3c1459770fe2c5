"""Steering a finished run (issue 35): a person's edits as data, a run resumed from its trace with them, only what
they touch recomputed (ToC's long answer alone; an answer step without a dropped passage), the edits as steps of
the new trace, the CLI's --from-trace and --edit, and edits that do not fit the run refused in one line."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from langchain_core.documents import Document

import pipeline.__main__ as cli
from pipeline.__main__ import Printer
from pipeline.context import RunContext
from pipeline.edits import DropPassage, EditError, EditReading, ExpandNode, Prune, Restore, parse_edit
from pipeline.events import EventKind, Status, Tracer, read_jsonl
from pipeline.fold import RunState
from pipeline.payloads import (ActionPayload, AnswerPayload, ChainExtras, EditPayload, NodePayload, PassageRef, RoutePayload,
                               VisitPayload, WalkExtras, WalkPayload, passage_refs)
from pipeline.picture import draw
from pipeline.prompting import answer_prompt
from pipeline.resume import AFTER_EDITS, Resumption
from pipeline.service import RunRequest, RunService
from pipeline.trace import markdown_report
from tests.fakes import ScriptedLLM, ScriptedRetriever, TreeScript, settings_with
from ui.view import render

AQ = "Who won the Tour de France?"
Q24, Q23, Q19 = ("Who won the 2024 Tour de France?", "Who won the 2023 Tour de France?",
                 "Who won the 2019 Tour de France?")
FEMMES = "Who won the 2024 Tour de France Femmes?"
FACTS = [
    "Tadej Pogacar won the 2024 Tour de France, his third overall victory.",
    "Jonas Vingegaard won the 2023 Tour de France ahead of Tadej Pogacar.",
    "Egan Bernal won the 2019 Tour de France, the first Colombian winner.",
    "The 2024 Tour de France Femmes was won by Katarzyna Niewiadoma.",
]
DOCS = [Document(page_content=text, metadata={"title": "Tour de France", "source": "tour.txt"}, id=f"t{i}")
        for i, text in enumerate(FACTS)]
# The tree the scripted model grows: three readings of the question; the 2019 one fails verification.
TREE = {AQ: [(Q24, "Tadej Pogacar"), (Q23, "Jonas Vingegaard"), (Q19, "Egan Bernal")]}
TOC = {"clarify": "enumerate", "keep_threshold": 0.5, "max_depth": 1, "min_valid_nodes": 1}


def _interpretations(messages) -> list[str]:
    """The interpretation lines of a ToC answer prompt ("- question answer")."""
    text = messages[-1]["content"]
    block = text.split("Interpretations:\n", 1)[1].split("\nAnswer every", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def echo_readings(messages, options) -> str:
    """A scripted answer writer that writes each interpretation it was given as a sentence, so the answer holds
    exactly the readings of its prompt."""
    return " ".join(f"{line} [1]." for line in _interpretations(messages))


@pytest.fixture(scope="module")
def toc_run(embeddings, tmp_path_factory):
    """A finished ToC run (its Run, with its trace saved) and its settings."""
    settings = settings_with(toc=TOC)
    script = TreeScript(TREE, p_true={"Egan Bernal": 0.01})
    ctx = RunContext(llm=script.llm, retriever=ScriptedRetriever(lambda q, k: DOCS), embeddings=embeddings,
                     settings=settings)
    folder = tmp_path_factory.mktemp("traces")
    run = RunService().start(RunRequest(question=AQ, method="toc", settings=settings), context=ctx,
                             trace_dir=folder)
    list(run)
    assert run.state.outcome == "answered"
    return run, settings


def _node(state: RunState, question: str) -> tuple[str, NodePayload]:
    return next((i, p) for i, p in state.steps_of(NodePayload) if p.question == question)


def _resume(run_state: RunState, edits, settings, embeddings, script=echo_readings, folder: Path | None = None):
    llm = ScriptedLLM(script)
    retriever = ScriptedRetriever(lambda q, k: pytest.fail("a resumed run retrieves nothing"))
    ctx = RunContext(llm=llm, retriever=retriever, embeddings=embeddings, settings=settings)
    resumed = RunService().resume(run_state.events, edits, settings=settings, context=ctx, trace_dir=folder)
    events = list(resumed)
    return resumed, events, llm


def test_pruning_a_kept_reading_reruns_the_long_answer_alone_without_it(toc_run, embeddings, tmp_path):
    run, settings = toc_run
    original = run.state
    pruned, payload = _node(original, Q24)
    assert payload.state == "kept" and _node(original, Q23)[1].state == "kept"
    resumed, events, llm = _resume(original, [Prune(node=pruned)], settings, embeddings, folder=tmp_path)

    # Only the long answer was written again: one model call, ToC's answer prompt, without the pruned reading.
    assert len(llm.calls) == 1
    messages = llm.calls[0][0]
    assert messages[0]["content"].startswith("You write answers to ambiguous questions")
    assert _interpretations(messages) == [f"{Q23} Jonas Vingegaard"]
    state = resumed.state
    assert "2024" not in state.answer_text and "Pogacar" not in state.answer_text
    assert state.answer_text == f"{Q23} Jonas Vingegaard [1]."
    assert [i.question for i in state.answer.extras.interpretations] == [Q23]
    assert state.final_answer.title == "Answer" + AFTER_EDITS

    # The new trace: the original run's events as they were, then the edit and the reading it pruned, then the
    # answer, saved under a new run id beside nothing of the original's.
    n = len(original.events)
    assert [e.model_dump() for e in events[:n]] == [e.model_dump() for e in original.events]
    new = events[n:]
    assert new[0].kind == EventKind.EDIT and new[0].parent_id == pruned
    assert new[0].payload == EditPayload(action="prune", target=pruned, reading=f"{Q24} → Tadej Pogacar")
    assert new[1].id == pruned and new[1].payload.state == "pruned" and new[1].payload.reason == "pruned by you"
    assert {e.kind for e in new[2:]} <= {EventKind.ANSWER, EventKind.ANSWER_TOKEN, EventKind.WARNING}
    assert not {e.id for e in new if e.id != pruned} & set(original.steps)  # no new step takes an old id
    saved = list(read_jsonl(resumed.trace_files[0]))
    assert [e.model_dump() for e in saved] == [e.model_dump() for e in events]
    assert resumed.trace_files[0].name == f"trace-{resumed.id}.jsonl" and resumed.id != run.id
    assert _node(RunState.of(saved), Q24)[1].state == "pruned"
    picture = resumed.trace_files[2].read_text(encoding="utf-8")
    assert f'data-node="{new[0].id}"' in picture and 'data-kind="edit"' in picture and "your edit" in picture
    report = resumed.trace_files[1].read_text(encoding="utf-8")
    assert f"## Your edits\n\n- You pruned: {Q24} → Tadej Pogacar" in report
    assert f"Resumed with your edits from run {run.id}" in report


def test_restoring_a_pruned_reading_brings_it_back_into_the_answer(toc_run, embeddings):
    run, settings = toc_run
    pruned, payload = _node(run.state, Q19)
    assert payload.state == "pruned" and payload.prune_kind == "verification"
    resumed, events, llm = _resume(run.state, [Restore(node=pruned)], settings, embeddings)
    assert len(llm.calls) == 1
    assert _interpretations(llm.calls[0][0]) == [f"{Q24} Tadej Pogacar", f"{Q23} Jonas Vingegaard",
                                                 f"{Q19} Egan Bernal"]
    assert "Egan Bernal" in llm.calls[0][0][-1]["content"].split("</passages>")[0]  # its evidence passage is read
    assert f"{Q19} Egan Bernal [1]." in resumed.state.answer_text
    restored = resumed.state.steps[pruned].payload
    assert restored.state == "restored" and restored.reason.startswith("restored by you (was: score")


def test_a_resumed_trace_resumed_again_keeps_the_first_edits(toc_run, embeddings):
    run, settings = toc_run
    first, _ = _node(run.state, Q24)
    once, _, _ = _resume(run.state, [Prune(node=first)], settings, embeddings)
    twice, _, llm = _resume(once.state, [Restore(node=first), Prune(node=_node(run.state, Q23)[0])], settings,
                            embeddings)
    assert _interpretations(llm.calls[0][0]) == [f"{Q24} Tadej Pogacar"]
    assert [p.action for p in twice.state.payloads(EditPayload)] == ["prune", "restore", "prune"]


def test_editing_a_reading_rewrites_it_in_the_answer_with_the_passage_that_holds_the_new_answer(toc_run,
                                                                                                  embeddings):
    run, settings = toc_run
    edited, _ = _node(run.state, Q24)
    edit = EditReading(node=edited, question=FEMMES, answer="Katarzyna Niewiadoma")
    resumed, events, llm = _resume(run.state, [edit], settings, embeddings)
    assert len(llm.calls) == 1
    prompt = llm.calls[0][0][-1]["content"]
    assert _interpretations(llm.calls[0][0]) == [f"{FEMMES} Katarzyna Niewiadoma", f"{Q23} Jonas Vingegaard"]
    assert FACTS[3] in prompt and FACTS[0] not in prompt  # the new answer's passage replaces the old one's
    assert f"{FEMMES} Katarzyna Niewiadoma [1]." in resumed.state.answer_text
    assert "Tadej Pogacar" not in resumed.state.answer_text
    node = resumed.state.steps[edited].payload
    assert (node.question, node.answer, node.state) == (FEMMES, "Katarzyna Niewiadoma", "kept")
    step = next(s for s in resumed.state.steps.values() if s.kind == EventKind.EDIT)
    assert step.title == f"You edited a reading: {FEMMES} → Katarzyna Niewiadoma"
    assert step.payload.reading == f"{Q24} → Tadej Pogacar"


def test_dropping_a_passage_of_a_toc_answer_takes_it_out_of_the_readings_evidence(toc_run, embeddings):
    run, settings = toc_run
    passages = run.state.answer.passages
    second = next(p for p in passages if p.id == "t1")
    resumed, _, llm = _resume(run.state, [DropPassage(passage=second.number)], settings, embeddings)
    assert len(llm.calls) == 1 and FACTS[1] not in llm.calls[0][0][-1]["content"]
    assert "t1" not in {p.id for p in resumed.state.answer.passages}


def state_settings():
    return settings_with()


def oner_run(answer: str = "Jane Austen wrote Pride and Prejudice [1] and Emma [2].") -> RunState:
    docs = [Document(page_content=text, metadata={"title": title}, id=f"d{i}") for i, (title, text) in enumerate([
        ("Pride and Prejudice", "Pride and Prejudice is an 1813 novel by Jane Austen."),
        ("Emma", "Emma is a novel by Jane Austen, published in 1815."),
        ("Dune", "Dune is a 1965 science fiction novel by Frank Herbert.")])]
    ctx = RunContext(llm=ScriptedLLM([answer]), retriever=ScriptedRetriever(lambda q, k: docs))
    run = RunService().start(RunRequest(question="Which novels did Jane Austen write?", method="oner"),
                             context=ctx)
    list(run)
    return run.state


def test_dropping_a_passage_reanswers_oner_without_it(tmp_path):
    state = oner_run()
    resumed, events, llm = _resume(state, [parse_edit("drop:2")], state_settings(), None, folder=tmp_path,
                                   script=lambda messages, options: "Jane Austen wrote Pride and Prejudice [1].")
    assert len(llm.calls) == 1
    prompt = llm.calls[0][0][-1]["content"]
    assert "published in 1815" not in prompt
    assert "an 1813 novel" in prompt and "1965 science fiction" in prompt
    answer = resumed.state.answer
    assert [p.id for p in answer.passages] == ["d0", "d2"] and [p.number for p in answer.passages] == [1, 2]
    assert answer.answer == "Jane Austen wrote Pride and Prejudice [1]." and answer.citations == [1]
    edit = next(e for e in events if e.kind == EventKind.EDIT)
    assert edit.parent_id == state.final_answer.id and edit.title == "You dropped passage [2]: Emma"
    assert edit.payload.passage.text == "Emma is a novel by Jane Austen, published in 1815."
    # Every consumer shows the edit: the view, the report, the CLI and the picture.
    out = io.StringIO()
    with redirect_stdout(out):
        printer = Printer()
        for event in resumed.state.events:
            printer.show(event, resumed.state)
    assert "You dropped passage [2]: Emma" in out.getvalue()
    assert "You dropped passage [2]: Emma" in render(resumed.state)
    assert "## Your edits\n\n- You dropped passage [2]: Emma" in markdown_report(resumed.state)
    assert 'data-kind="edit"' in draw(resumed.state) and "your edit" in draw(resumed.state, standalone=True)


def _hand_made(method: str, extras, with_visits: bool = False) -> RunState:
    """A finished run of ``method`` made by hand: its route, (a walk and its visits) and an answer from three
    passages."""
    refs = [PassageRef(id=f"p{i}", title=f"Title {i}", text=f"Fact number {i} about the harbour.", number=i)
            for i in (1, 2, 3)]
    tracer = Tracer(method)
    events = [tracer.event(RoutePayload(method=method, label=method, structure="chain", question="What of it?"),
                           method)]
    parent = None
    if with_visits:
        parent = "w1"
        events.append(tracer.event(WalkPayload(question="What of it?"), "Walk", id=parent))
        events += [tracer.event(VisitPayload(node=r.id, passage=r), r.title, id=f"v{r.number}", parent_id=parent)
                   for r in refs]
    events.append(tracer.event(AnswerPayload(answer="It is so [2].", citations=[2], passages=refs, extras=extras),
                               "Answer", id="a9", parent_id=parent))
    return RunState.of(events)


def test_a_method_without_a_reanswer_of_its_own_gets_the_generic_reader():
    extras = ChainExtras(reader="notes", reasoning=["The harbour has a fact."],
                         collected=[PassageRef(id=f"p{i}", text=f"Fact number {i} about the harbour.")
                                    for i in (1, 2, 3)])
    state = _hand_made("ircot", extras)
    resumed, _, llm = _resume(state, [DropPassage(passage="p2")], state_settings(), None,
                              script=lambda messages, options: "It is fact one [1].")
    assert len(llm.calls) == 1
    prompt = llm.calls[0][0]
    oner = answer_prompt("oner_answer", "long").messages(question="q", passages="p")[0]["content"]
    assert prompt[0]["content"] == oner  # OneR's answer prompt, not a chain's
    assert "Fact number 2" not in prompt[-1]["content"] and "Fact number 3" in prompt[-1]["content"]
    answer = resumed.state.answer
    assert [p.id for p in answer.extras.collected] == ["p1", "p3"] and answer.extras.reader == "direct"
    assert answer.extras.reasoning == ["The harbour has a fact."]


def test_kgp_reanswers_with_its_own_reader_linked_to_the_visits():
    state = _hand_made("kgp", WalkExtras(collected=passage_refs(
        [Document(page_content=f"Fact number {i} about the harbour.", id=f"p{i}") for i in (1, 2, 3)])),
        with_visits=True)
    resumed, _, llm = _resume(state, [DropPassage(passage=1)], state_settings(), None,
                              script=lambda messages, options: "It is fact two [1] and three [2].")
    assert len(llm.calls) == 1 and "Fact number 1" not in llm.calls[0][0][-1]["content"]
    final = resumed.state.final_answer
    assert final.parent_id == "w1" and [link.target for link in final.links] == ["v2", "v3"]
    assert [p.id for p in final.payload.extras.collected] == ["p2", "p3"]


@pytest.mark.parametrize("edits, message", [
    ([Prune(node="n999")], "There is no reading 'n999' in this run (its readings: "),
    ([Prune(node="ROOT")], "is the question itself, not one of its readings"),
    ([Restore(node="KEPT")], "is kept, not pruned: only a pruned reading can be restored."),
    ([Prune(node="PRUNED")], "is pruned, not kept: only a kept reading can be pruned."),
    ([Prune(node="KEPT"), Prune(node="KEPT")], "is pruned, not kept"),
    ([DropPassage(passage=99)], "There is no passage [99] in the answer (it read passages [1] to ["),
    ([DropPassage(passage="nope")], "No passage of the answer has the id 'nope'."),
    ([DropPassage(passage=1), DropPassage(passage=1)], "Passage [1] is dropped twice."),
    ([], "No edit was given."),
    ([ExpandNode(node="PRUNED")], "is pruned, not kept: put it back first to clarify it once more."),
    ([ExpandNode(node="KEPT"), ExpandNode(node="KEPT")], "is expanded twice."),
    ([ExpandNode(node="KEPT"), Prune(node="KEPT")], "is expanded: leave it as it is, or expand it in a second"),
])
def test_edits_that_do_not_fit_the_run_are_refused_in_one_line(toc_run, edits, message):
    state = toc_run[0].state
    ids = {"ROOT": next(i for i, p in state.steps_of(NodePayload) if p.state == "root"),
           "KEPT": _node(state, Q23)[0], "PRUNED": _node(state, Q19)[0]}
    edits = [e.model_copy(update={"node": ids.get(e.node, e.node)}) if hasattr(e, "node") else e for e in edits]
    with pytest.raises(EditError) as caught:
        RunService().resume(state.events, edits)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_edit_for_another_method_and_a_run_without_an_answer_are_refused():
    with pytest.raises(EditError, match=r"^'prune' does not apply to this run: its answer is OneR \(retrieve "
                                        r"once\)'s, which takes drop_passage\.$"):
        Resumption(oner_run(), [Prune(node="n1")])
    tracer = Tracer("oner")
    stopped = RunState.of([tracer.event(RoutePayload(method="oner", label="OneR", structure="answer",
                                                     question="q"), "OneR"),
                           tracer.event(AnswerPayload(), "Answer", id="a1", status=Status.RUNNING)])
    with pytest.raises(EditError, match="no answer to rewrite"):
        Resumption(stopped, [DropPassage(passage=1)])


def _scripted_runtime(monkeypatch, tmp_path, embeddings, llm):
    from pipeline.runtime import Runtime, RuntimeConfig

    def runtime(args):
        made = Runtime(RuntimeConfig(data_dir=Path(args.data_dir), model="default"), embeddings=embeddings)
        made.use_model("default", llm)
        return made

    monkeypatch.setattr(cli, "_runtime", runtime)


def test_the_cli_resumes_a_saved_trace_with_edits_and_saves_the_new_trace(toc_run, embeddings, tmp_path,
                                                                         monkeypatch, capsys):
    run, _ = toc_run
    original = run.trace_files[0]
    folder = tmp_path / "traces"
    folder.mkdir()
    trace = folder / original.name
    trace.write_bytes(original.read_bytes())
    llm = ScriptedLLM(echo_readings)
    _scripted_runtime(monkeypatch, tmp_path, embeddings, llm)
    pruned, kept = _node(run.state, Q24)[0], _node(run.state, Q19)[0]
    edits = tmp_path / "edits.json"
    edits.write_text(json.dumps([{"action": "restore", "node": kept}]), encoding="utf-8")
    base = ["ask", "--from-trace", str(trace), "--data-dir", str(tmp_path / "data")]

    assert cli.main(base) == 0  # without edits: what may be edited, nothing written
    listed = capsys.readouterr().out
    assert f"{pruned}  kept     {Q24} → Tadej Pogacar" in listed and f"{kept}  pruned" in listed
    root = next(i for i, n in run.state.steps_of(NodePayload) if n.state == "root")
    assert f"{root}  root     {AQ}" in listed  # the question may be clarified once more (expand)
    assert sorted(p.name for p in folder.iterdir()) == [trace.name]

    assert cli.main([*base, "--edit", f"prune:{pruned}", "--edits", str(edits)]) == 0
    out = capsys.readouterr()
    assert len(llm.calls) == 1 and _interpretations(llm.calls[0][0]) == [f"{Q23} Jonas Vingegaard",
                                                                         f"{Q19} Egan Bernal"]
    assert f"You pruned: {Q24} → Tadej Pogacar" in out.out and f"You restored: {Q19} → Egan Bernal" in out.out
    assert f"Answer: {Q23} Jonas Vingegaard [1]. {Q19} Egan Bernal [1]." in out.out
    assert "Clarify:" not in out.out  # the original run's steps are not printed again
    new = sorted(p for p in folder.iterdir() if p.suffix == ".jsonl" and p != trace)
    assert len(new) == 1 and "Trace saved: " + str(new[0]) in out.err
    assert trace.read_bytes() == original.read_bytes()
    saved = RunState.of(read_jsonl(new[0]))
    assert [p.action for p in saved.payloads(EditPayload)] == ["prune", "restore"]
    assert "Egan Bernal" in saved.answer_text


@pytest.mark.parametrize("edit, message", [
    ("prune:n999", "error: There is no reading 'n999' in this run"),
    ("restore:KEPT", "only a pruned reading can be restored."),
    ("drop:42", "error: There is no passage [42] in the answer"),
    ("zap:n1", "error: cannot read the edit 'zap:n1'"),
])
def test_the_cli_refuses_a_bad_edit_with_exit_code_2_and_writes_nothing(toc_run, tmp_path, monkeypatch, capsys,
                                                                       edit, message):
    run, _ = toc_run
    trace = tmp_path / run.trace_files[0].name
    trace.write_bytes(run.trace_files[0].read_bytes())
    monkeypatch.setattr(cli, "_runtime", lambda args: pytest.fail("a bad edit must not load a model"))
    edit = edit.replace("KEPT", _node(run.state, Q23)[0])
    code = cli.main(["ask", "--from-trace", str(trace), "--edit", edit, "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [trace.name]


def test_the_cli_refuses_an_edit_for_another_method_and_a_missing_trace(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_runtime", lambda args: pytest.fail("a bad edit must not load a model"))
    state = oner_run()
    trace = tmp_path / "trace-oner.jsonl"
    trace.write_text("".join(e.to_json() + "\n" for e in state.events), encoding="utf-8")
    assert cli.main(["ask", "--from-trace", str(trace), "--edit", "prune:n1"]) == 2
    assert "'prune' does not apply to this run" in capsys.readouterr().err
    assert cli.main(["ask", "--from-trace", str(tmp_path / "missing.jsonl"), "--edit", "drop:1"]) == 2
    assert "there is no trace file" in capsys.readouterr().err
    assert cli.main(["ask", "--edit", "drop:1"]) == 2
    assert "--from-trace" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace-oner.jsonl"]


def test_stop_during_a_resumed_answer_ends_it_as_a_run_is_stopped(toc_run, embeddings):
    import threading

    run, settings = toc_run
    cancel = threading.Event()

    def press_stop(messages, options):
        cancel.set()
        return "An answer that is never finished."

    ctx = RunContext(llm=ScriptedLLM(press_stop), embeddings=embeddings, settings=settings)
    resumed = RunService().resume(run.state, [Prune(node=_node(run.state, Q24)[0])], context=ctx, cancel=cancel)
    events = list(resumed)
    assert resumed.state.stopped() and events[-1].title == "Stopped"
    assert resumed.state.final_answer.id == run.state.final_answer.id  # the answer written before stands


class _EchoTree(TreeScript):
    """The tree's script for clarifications and verdicts; the long answer echoes its readings (``echo_readings``)."""

    def reply(self, messages, options):
        if messages[0]["content"].startswith("You write answers to ambiguous questions"):
            return echo_readings(messages, options)
        return super().reply(messages, options)


def test_expanding_a_kept_reading_clarifies_it_once_more_and_answers_its_new_readings_too(toc_run, embeddings):
    """"Clarify once more" on a reading: one clarification of that reading over the run's pool (nothing
    retrieved), its new readings judged as the tree's were (a repeat pruned as a duplicate, a new one verified and
    kept, past the tree's depth limit: a person asked), and the answer written from the old readings and the new."""
    run, settings = toc_run
    original = run.state
    expanded, _ = _node(original, Q24)
    script = _EchoTree({Q24: [(FEMMES, "Katarzyna Niewiadoma"), (Q23, "Jonas Vingegaard")]})
    ctx = RunContext(llm=script.llm, retriever=ScriptedRetriever(lambda q, k: pytest.fail("no retrieval")),
                     embeddings=embeddings, settings=settings)
    resumed = RunService().resume(original.events, [parse_edit(f"expand:{expanded}")], settings=settings,
                                  context=ctx)
    events = list(resumed)
    assert script.clarified == [Q24]
    state = resumed.state
    new = events[len(original.events):]
    assert new[0].payload == EditPayload(action="expand", target=expanded, reading=f"{Q24} → Tadej Pogacar")
    assert new[0].parent_id == expanded and new[0].title == f"You asked for more readings of: {Q24} → Tadej Pogacar"
    femmes, node = _node(state, FEMMES)
    expansion = state.steps[femmes].parent_id
    assert state.steps[expansion].parent_id == expanded and node.state == "kept" and node.depth == 2
    duplicate = [p for i, p in state.steps_of(NodePayload) if p.question == Q23 and p.state == "pruned"]
    assert duplicate and duplicate[0].prune_kind == "duplicate"
    assert _interpretations(script.llm.calls[-1][0]) == [f"{Q24} Tadej Pogacar", f"{Q23} Jonas Vingegaard",
                                                         f"{FEMMES} Katarzyna Niewiadoma"]
    assert f"{FEMMES} Katarzyna Niewiadoma [1]." in state.answer_text
    assert state.final_answer.title == "Answer" + AFTER_EDITS
    assert not {e.id for e in new} & set(original.steps)
    assert f'data-node="{femmes}"' in draw(state)
    report = markdown_report(state)
    assert f"- You asked for more readings of: {Q24} → Tadej Pogacar" in report


def test_the_browsers_choices_are_the_edits_that_fit_the_run(toc_run, embeddings):
    """What "Change the answer" offers (ui.steer): each kept reading to leave out, each pruned one to put back, each
    passage of the answer to drop; each resumes the run, and a forged or empty choice is refused in one line."""
    from ui import steer

    run, settings = toc_run
    choices = dict((value, label) for label, value in steer.edit_choices(run.state))
    kept = {i for i, n in run.state.steps_of(NodePayload) if n.state == "kept"}
    pruned = {i for i, n in run.state.steps_of(NodePayload) if n.state == "pruned"}
    assert {v for v in choices if v.startswith("prune:")} == {f"prune:{i}" for i in kept}
    assert {v for v in choices if v.startswith("restore:")} == {f"restore:{i}" for i in pruned}
    root = next(i for i, n in run.state.steps_of(NodePayload) if n.state == "root")
    assert {v for v in choices if v.startswith("expand:")} == {f"expand:{i}" for i in kept | {root}}
    passages = run.state.final_answer.payload.passages
    assert {v for v in choices if v.startswith("drop:")} == {f"drop:{p.number}" for p in passages}
    assert "Egan Bernal" in choices[f"restore:{next(iter(pruned))}"]
    for value in choices:
        Resumption(run.state, steer.parse_choices([value]))  # fits the run: no EditError
    for forged in ([], None, ["prune:n999"], ["rm -rf:/"]):
        with pytest.raises(EditError):
            Resumption(run.state, steer.parse_choices(forged))
    assert steer.readings_to_ask(run.state) == [Q24, Q23]
    assert steer.edit_choices(None) == [] and steer.readings_to_ask(RunState()) == []
    assert steer.describe([f"drop:{passages[0].number}"], steer.edit_choices(run.state)).startswith(
        "Rewrite the answer: Drop passage [")


def test_the_simulated_person_prunes_readings_without_a_gold_answer_and_drops_unsupporting_passages(toc_run):
    """benchmarks.steering's person: on a tree, every kept reading whose answer holds no gold short answer is
    pruned; elsewhere every passage of the answer that is not supporting is dropped; nothing to change, no click."""
    from benchmarks.steering import simulated_edits, summarize
    from corpora.splitting import content_id
    from pipeline.evaluation.data import EvalItem

    state = toc_run[0].state
    asqa = EvalItem(id="1", dataset="asqa", question=AQ, answers=["Tadej Pogačar"], passages=[],
                    qa_pairs=[{"question": Q24, "short_answers": ["Tadej Pogačar"]}], long_answers=["..."])
    edits = simulated_edits(state, asqa)
    vingegaard = _node(state, Q23)[0]
    assert edits == [Prune(node=vingegaard)]
    asqa.qa_pairs.append({"question": Q23, "short_answers": ["Vingegaard"]})
    assert simulated_edits(state, asqa) == []

    docs = [Document(page_content=text, metadata={"title": "Tour de France"}, id=content_id("Tour de France", text))
            for text in FACTS[:3]]
    ctx = RunContext(llm=ScriptedLLM(lambda m, o: "Jonas Vingegaard [1]."),
                     retriever=ScriptedRetriever(lambda q, k: docs), settings=settings_with())
    run = RunService().start(RunRequest(question="Who won in 2023?", method="oner"), context=ctx)
    list(run)
    oner = run.state
    hotpot = EvalItem(id="2", dataset="hotpotqa", question="Who won in 2023?", answers=["Jonas Vingegaard"],
                      passages=[{"title": "Tour de France", "text": FACTS[1], "supporting": True},
                                {"title": "Tour de France", "text": FACTS[0]}])
    supporting = hotpot.supporting_ids()
    dropped = [e.passage for e in simulated_edits(oner, hotpot)]
    assert dropped and not set(dropped) & supporting
    assert len(dropped) == len(oner.final_answer.payload.passages) - len(supporting)
    # A passage the answer holds twice (a chain read it at two hops) is one click, which the run takes.
    twice = oner.final_answer.payload.passages
    answer = oner.final_answer.model_copy(update={"payload": oner.final_answer.payload.model_copy(
        update={"passages": twice + [next(p for p in twice if p.id == dropped[0]).model_copy(
            update={"number": len(twice) + 1})]})})
    doubled = RunState.of(list(oner.events) + [answer])  # the answer step's last event holds it twice
    assert len(doubled.final_answer.payload.passages) == len(twice) + 1
    edits = simulated_edits(doubled, hotpot)
    assert [e.passage for e in edits] == dropped
    Resumption(doubled, edits)  # no "dropped twice"

    records = [{"clicks": 1, "before": {"f1": 0.0}, "after": {"f1": 1.0}, "reanswer_s": 2.0, "first_run_s": 8.0},
               {"clicks": 0, "before": {"f1": 0.5}, "after": {"f1": 0.5}, "first_run_s": 6.0}]
    summary = summarize(records, "f1")
    assert (summary["before"], summary["after"], summary["clicks_per_question"]) == (25.0, 75.0, 0.5)
    assert summary["reanswer_over_first_median"] == 0.25 and summary["questions_changed"] == 1


def test_a_visited_passage_pinned_is_read_first_and_the_browser_offers_it():
    from ui.steer import edit_choices

    base = _hand_made("kgp", WalkExtras(collected=passage_refs(
        [Document(page_content=f"Fact number {i} about the harbour.", id=f"p{i}") for i in (1, 2, 3)])),
        with_visits=True)
    tracer = Tracer("kgp")
    extra = PassageRef(id="p4", title="Title 4", text="The harbour master is Ada Byron.")
    visit = tracer.event(VisitPayload(node="p4", passage=extra, edge="keyword"), "Title 4", id="v4", parent_id="w1")
    state = RunState.of([*base.events[:-1], visit, base.events[-1]])
    assert ("Read visited passage v4 too: Title 4", "pin:v4") in edit_choices(state)
    assert not any(value in ("pin:v1", "pin:v2") for _, value in edit_choices(state))  # read already
    resumed, events, llm = _resume(state, [parse_edit("pin:v4"), parse_edit("drop:1")], state_settings(), None,
                                   script=lambda messages, options: "Ada Byron [1].")
    prompt = llm.calls[0][0][-1]["content"]
    assert prompt.index("Ada Byron") < prompt.index("Fact number 2") and "Fact number 1" not in prompt
    final = resumed.state.final_answer
    assert [p.id for p in final.payload.passages] == ["p4", "p2", "p3"]
    assert final.links[0].target == "v4"  # the pinned passage is linked to the visit that found it
    pin = next(e for e in events if e.kind == EventKind.EDIT and e.payload.action == "pin_passage")
    assert pin.title == "You pinned: Title 4" and pin.parent_id == "v4"
    for bad, message in (("pin:v2", r"is read already: it is \[2\]"), ("pin:w1", "There is no visited passage .w1.")):
        with pytest.raises(EditError, match=message):
            Resumption(state, [parse_edit(bad)])


def test_a_sentence_the_web_agent_read_is_added_as_a_fact_and_the_answer_written_again():
    """The web agent: a sentence of a page window it showed but did not quote becomes a fact (checked against
    what the step showed), the answer is written again from the facts and it; the browser offers it."""
    from tests.test_webagent import FINISH, Agent, load, quote, run, search
    from ui.steer import edit_choices

    agent = Agent([search("halley comet"), load(1), quote(1), FINISH], answer="It is a comet [1].")
    _, state = run(agent)
    shown = next(i for i, a in state.steps_of(ActionPayload) if a.action == "load")
    offered = dict((value, label) for label, value in edit_choices(state))
    assert f"fact:{shown}:2" in offered and "visible from Earth" in offered[f"fact:{shown}:2"]
    assert f"fact:{shown}:1" not in offered  # quoted already
    resumed, events, llm = _resume(state, [parse_edit(f"fact:{shown}:2")], state_settings(), None,
                                   script=lambda messages, options: "It returns every 75 to 79 years [2].")
    prompt = llm.calls[0][0][-1]["content"]
    assert "[2] Halley's Comet: It is visible from Earth every 75 to 79 years." in prompt
    answer = resumed.state.answer
    assert [p.text for p in answer.passages][1] == "It is visible from Earth every 75 to 79 years."
    added = next(e for e in events if e.kind == EventKind.EDIT)
    assert added.title == "You added a fact: It is visible from Earth every 75 to 79 years."
    assert added.parent_id == shown
    for bad, message in ((f"fact:{shown}:1", "is a fact of the answer already"),
                         (f"fact:{shown}:99", "not 99"), ("fact:nope:1", "showed no page")):
        with pytest.raises(EditError, match=message):
            Resumption(state, [parse_edit(bad)])


def test_the_browsers_line_for_a_rewrite_names_what_was_asked(toc_run):
    """ui.steer.describe: the chat's line for ticked changes, a rewritten step and a reading's new answer; an
    unreadable (forged) choice is an EditError, which the handler shows as a notice before anything runs."""
    from ui import steer

    state = toc_run[0].state
    choices = steer.edit_choices(state)
    prune = next(value for _, value in choices if value.startswith("prune:"))
    assert steer.describe([prune], choices).startswith("Rewrite the answer: Leave out reading ")
    assert steer.describe(["step:h2="], choices) == "Continue the chain from step h2, rewritten: deleted"
    kept = _node(state, Q24)[0]
    assert steer.describe(steer.step_edit(state, kept, "Tadej"), choices) == (
        f'Rewrite the answer with reading {kept} answered "Tadej"')
    with pytest.raises(EditError):
        steer.parse_choices(["<script>"])


def test_a_readings_question_is_offered_shown_and_rewritten_from_the_step_list(toc_run, embeddings):
    """"Rewrite a step" offers a kept reading's answer and its clarified question; choosing one shows its text now
    (ui.steer.step_text), and a rewritten question becomes the reading's in the answer prompt."""
    from ui import steer

    run, settings = toc_run
    state = run.state
    kept = _node(state, Q24)[0]
    steps = dict((value, label) for label, value in steer.step_choices(state))
    assert steps[kept].startswith(f"Reading {kept}, its answer: ")
    assert steps[f"{kept}:question"] == f"Reading {kept}, its question: {Q24}"
    assert steer.step_text(state, kept) == "Tadej Pogacar" and steer.step_text(state, f"{kept}:question") == Q24
    assert steer.step_text(state, "n999") == "" and steer.step_text(None, kept) == ""
    asked = "Who won the 2024 Tour de France, the men's race?"
    chosen = steer.step_edit(state, f"{kept}:question", asked)
    assert chosen == [f"edit:{kept}:question={asked}"]
    assert steer.describe(chosen, []) == f'Rewrite the answer with reading {kept} asking "{asked}"'
    with pytest.raises(EditError, match="new clarified question"):
        steer.step_edit(state, f"{kept}:question", "  ")
    resumed, _, llm = _resume(state, steer.parse_choices(chosen), settings, embeddings)
    assert _interpretations(llm.calls[0][0]) == [f"{asked} Tadej Pogacar", f"{Q23} Jonas Vingegaard"]
