"""Steering a finished answer in the browser (issue #35): what a person may change in the run just shown, the
"Did you mean?" readings, and the resumed run that rewrites the answer from the change.

The choices are the command-line edits of ``pipeline.edits`` (``prune:n4``, ``restore:n7``, ``drop:3``), offered
for the run the session last showed (``Session.last``, kept on the server: the browser sends only which choices
it ticked, never a trace). ``RunService.resume`` checks them against that run again, so a stale or forged choice
is refused with its one-line reason.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.edits import EditError, EditStep, parse_edit
from pipeline.escaping import esc, plain
from pipeline.fold import RunState
from pipeline.methods import METHODS
from pipeline.payloads import ActionPayload, HopPayload, NodePayload, SubQuestionPayload, VisitPayload
from pipeline.resume import passage_key
from pipeline.service import RunService, trace_collections
from pipeline.settings import Settings

MAX_SHOWN = 80  # characters of a reading or a passage's label in a choice
MAX_SENTENCES = 24  # sentences of the pages a browsing agent read offered as facts: the latest shown
QUESTION = ":question"  # a step choice's suffix: the reading's clarified question is rewritten, not its answer


def _short(text: str) -> str:
    """A label's text on one line, without bidirectional-text controls, cut at ``MAX_SHOWN`` characters (Gradio
    shows a choice's label as text)."""
    text = " ".join(plain(text).split())
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 1] + "…"


def edit_choices(state: RunState | None) -> list[tuple[str, str]]:
    """(label, edit) for each change a person may make to the finished run ``state``: prune a kept reading,
    restore a pruned one, clarify a kept reading or the question once more (ToC), drop a passage of the answer
    (every method that read passages), pin a passage the walk visited but the reader did not read (KGP), add a
    sentence of a page the agent read as a fact (the web agent; the latest ``MAX_SENTENCES``). Empty when the run
    has no answer."""
    answer = state.final_answer if state is not None else None
    if answer is None or answer.method not in METHODS:
        return []
    allowed = METHODS[answer.method].edits
    choices = []
    for step_id, node in state.steps_of(NodePayload):
        reading = _short(f"{node.question} → {node.answer}" if node.answer else node.question)
        if node.state == "root" and "expand" in allowed:
            choices.append(("Look for more readings of the question (clarify it once more)",
                            f"expand:{step_id}"))
        elif node.state in ("kept", "restored") and "prune" in allowed:
            choices.append((f"Leave out reading {step_id}: {reading}", f"prune:{step_id}"))
            if "expand" in allowed:
                choices.append((f"Clarify reading {step_id} once more: {reading}", f"expand:{step_id}"))
        elif node.state == "pruned" and "restore" in allowed:
            choices.append((f"Put back reading {step_id}: {reading}", f"restore:{step_id}"))
    if "drop_passage" in allowed:
        for number, passage in enumerate(answer.payload.passages, 1):
            number = passage.number or number
            choices.append((f"Drop passage [{number}]: {_short(passage.label())}", f"drop:{number}"))
    if "pin_passage" in allowed:
        read = {passage_key(p) for p in answer.payload.passages}
        for step_id, visit in state.steps_of(VisitPayload):
            if visit.passage is not None and passage_key(visit.passage) not in read:
                read.add(passage_key(visit.passage))
                choices.append((f"Read visited passage {step_id} too: {_short(visit.passage.label())}",
                                f"pin:{step_id}"))
    if "add_fact" in allowed:
        facts = {" ".join(p.text.split()) for p in answer.payload.passages}
        sentences = [(step_id, s) for step_id, action in state.steps_of(ActionPayload) if action.page is not None
                     for s in action.sentences if not s.quoted and " ".join(s.text.split()) not in facts]
        choices += [(f"Add as a fact ({step_id}, sentence {s.number}): {_short(s.text)}",
                     f"fact:{step_id}:{s.number}") for step_id, s in sentences[-MAX_SENTENCES:]]
    return choices


def step_choices(state: RunState | None) -> list[tuple[str, str]]:
    """(label, step) for each step of a finished run a person may rewrite: a tree's kept readings (ToC: a new
    short answer, step id ``n4``, or a new clarified question, ``n4:question``), a chain's reasoning sentences and
    hops (IRCoT: continued from there), in the order they ran. Each label names its step id, by which the step
    list's "Rewrite" shortcut (ui/assets/steer.js) finds it."""
    answer = state.final_answer if state is not None else None
    if answer is None or answer.method not in METHODS:
        return []
    allowed = METHODS[answer.method].edits
    steps = []
    if "edit_reading" in allowed:
        for step_id, node in state.steps_of(NodePayload):
            if node.state in ("kept", "restored"):
                steps += [(f"Reading {step_id}, its answer: {_short(f'{node.question} → {node.answer}')}", step_id),
                          (f"Reading {step_id}, its question: {_short(node.question)}", f"{step_id}{QUESTION}")]
    if "edit_step" not in allowed:
        return steps
    for event in state.events:
        payload = event.payload
        if state.steps.get(event.id) is not event:  # an earlier event of a step: its last one is shown
            continue
        if isinstance(payload, HopPayload) and payload.sentence:
            steps.append((f"Step {payload.step} ({event.id}): {_short(payload.sentence)}", event.id))
        elif isinstance(payload, SubQuestionPayload) and payload.found is not None:
            said = (f"{payload.answer} (inferred)" if payload.inferred else payload.answer) if payload.found \
                else "not found"
            steps.append((f"Hop {payload.step} ({event.id}): {_short(f'{payload.question} → {said}')}", event.id))
    return steps


def offered_steps(steps: list[tuple[str, str]]) -> str:
    """The step ids of ``step_choices``, for the step list's "Rewrite" shortcuts (ui/assets/steer.js) to know
    which steps to offer, as a hidden element's attribute (escaped: a replayed trace's ids are anyone's text)."""
    ids = " ".join(dict.fromkeys(value for _, value in steps if not value.endswith(QUESTION)))
    return f'<div class="step-offers" data-steps="{esc(ids)}"></div>'


def step_edit(state: RunState | None, step: str | None, text: str | None) -> list[str]:
    """The ticked-choice form (``parse_edit``'s) of the step ``step`` of ``state`` rewritten with ``text``: a
    reading's new short answer, or a chain's step (empty: a sentence deleted)."""
    if not step:
        raise EditError("Choose the step to rewrite first.")
    text = " ".join((text or "").split())
    node, field = _step_field(step)
    found = state.steps.get(node) if state is not None else None
    if found is not None and isinstance(found.payload, NodePayload):
        if not text:
            wanted = "clarified question" if field == "question" else "short answer"
            raise EditError(f"Give the reading's new {wanted}.")
        return [f"edit:{node}:{field}={text}"]
    return [f"step:{step}={text}"]


def _step_field(step: str) -> tuple[str, str]:
    """A ``step_choices`` value as (step id, what of a reading is rewritten: "question" or "answer")."""
    return (step[: -len(QUESTION)], "question") if step.endswith(QUESTION) else (step, "answer")


def step_text(state: RunState | None, step: str | None) -> str:
    """The text the step ``step`` (a ``step_choices`` value) of ``state`` has now, for the person to rewrite: a
    reading's short answer or clarified question, a chain's sentence or a hop's answer; "" for anything else."""
    node, field = _step_field(step or "")
    found = state.steps.get(node) if state is not None else None
    payload = found.payload if found is not None else None
    if isinstance(payload, NodePayload):
        text = payload.question if field == "question" else payload.answer
    elif isinstance(payload, HopPayload):
        text = payload.sentence
    elif isinstance(payload, SubQuestionPayload):
        text = payload.answer if payload.found else ""
    else:
        text = ""
    return " ".join(plain(text or "").split())


def readings_to_ask(state: RunState | None) -> list[str]:
    """The kept readings' clarified questions of a finished ToC run, in tree order and without repeats: the
    "Did you mean?" offers under its answer."""
    if state is None or state.final_answer is None:
        return []
    seen: list[str] = []
    for _, node in state.steps_of(NodePayload):
        question = " ".join(plain(node.question).split())
        if node.state in ("kept", "restored") and question not in seen:
            seen.append(question)
    return seen


def parse_choices(chosen: list[str] | None) -> list:
    """The edits behind the ticked choices; ``EditError`` when none is ticked or one cannot be read (a forged
    request: the page offers only readable ones)."""
    if not chosen:
        raise EditError("Tick at least one change first: a reading to leave out or put back, or a passage to drop.")
    return [parse_edit(str(choice)) for choice in chosen]


def resume_last(service: RunService, last: RunState, chosen: list[str] | None, settings: Settings,
                model: str | None, cancel, trace_dir: Path, may_read=lambda name: None):
    """The run ``last`` resumed with the ticked edits (``RunService.resume``; ``EditError`` at once when an edit
    does not fit it). A rewritten step makes the chain retrieve again, from the collections the run read:
    ``may_read(name)`` raises for one the person may no longer read."""
    edits = parse_choices(chosen)
    if any(isinstance(edit, EditStep) for edit in edits):
        for name in trace_collections(last):
            may_read(name)
    return service.resume(last, edits, settings=settings, model=model, cancel=cancel, trace_dir=trace_dir)


def describe(chosen: list[str] | None, choices: list[tuple[str, str]]) -> str:
    """What the person asked for, as the chat's line for it: the ticked choices' labels."""
    labels = {value: label for label, value in choices}
    steps = [parse_edit(c) for c in chosen or [] if str(c).startswith(("step:", "edit:"))]
    if steps and isinstance(steps[0], EditStep):
        said = f'"{steps[0].text}"' if steps[0].text else "deleted"
        return f"Continue the chain from step {steps[0].step}, rewritten: {said}"
    if steps and steps[0].question is not None:
        return f"Rewrite the answer with reading {steps[0].node} asking \"{steps[0].question}\""
    if steps:
        return f"Rewrite the answer with reading {steps[0].node} answered \"{steps[0].answer}\""
    return "Rewrite the answer: " + "; ".join(labels.get(c, str(c)) for c in chosen or [])
