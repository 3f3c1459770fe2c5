"""IRCoT after a person's edits (``pipeline.resume``): a chain continued from a rewritten step, or its answer read
again without the passages dropped.

A reasoning sentence rewritten (or deleted) keeps the sentences before it and the passages they collected; the
person's sentence is the next step, with its own retrieval, and the model reasons on from there. A hop answered
by a person keeps the hops before it; the person's answer is put into the later sub-questions, which are asked
again, and the comparison and the answer follow. Either way the new steps hang under the ``edit`` step, so the
picture shows the chain branching off where the person changed it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from langchain_core.documents import Document

from pipeline.context import RunContext
from pipeline.edits import EditStep
from pipeline.events import StepEvent, Tracer
from pipeline.methods.ircot.chain import IRCoTSettings, continue_sentences
from pipeline.methods.ircot.hops import Hop, continue_hops, holds
from pipeline.methods.ircot.plan import Plan, PlanError, parse_plan
from pipeline.payloads import EditPayload, HopPayload, PlanPayload, SubQuestionPayload
from pipeline.retrieval import deduplicate

if TYPE_CHECKING:
    from pipeline.fold import RunState
    from pipeline.resume import Steering


def reanswer(steering: "Steering", ctx: RunContext, tracer: Tracer, cfg: IRCoTSettings) -> Iterator[StepEvent]:
    """IRCoT's steps again after ``steering``'s edits: the chain from a rewritten step, else the generic reader
    over the answer's passages less those dropped (``pipeline.resume.read_again``)."""
    from pipeline.resume import read_again

    edit = next((e for e in steering.edits if isinstance(e, EditStep)), None)
    if edit is None:
        yield from read_again(steering, ctx, tracer, cfg)
        return
    state = steering.state
    edit_id = _edit_step_id(state, edit.step)
    payload = state.steps[edit.step].payload
    if isinstance(payload, HopPayload):
        pool, sentences = _chain_before(state, edit.step)
        yield from continue_sentences(steering.question, ctx, tracer, cfg, pool, sentences, edit_id, payload.step,
                                      given=edit.text or None)
    else:
        plan, plan_id, hops, ids, pool = _hops_before(state, edit.step, edit.text, edit_id)
        yield from continue_hops(steering.question, ctx, tracer, cfg, plan, plan_id, hops, ids, pool)


def _edit_step_id(state: "RunState", target: str) -> str:
    """The id of the (latest) ``edit`` step that rewrote ``target``."""
    return [i for i, p in state.steps_of(EditPayload) if p.action == "edit_step" and p.target == target][-1]


def _documents(refs) -> list[Document]:
    return [ref.document() for ref in refs]


def _chain_before(state: "RunState", step_id: str) -> tuple[list[Document], list[str]]:
    """The passages collected and the sentences written before the step ``step_id`` of a sentence chain: those of
    the steps it continues (its ancestors, through any earlier edit), and the retrieval the chain started from."""
    hops: list[HopPayload] = []
    start: list[Document] = []
    parent = state.steps[step_id].parent_id
    while parent is not None:
        step = state.steps[parent]
        if isinstance(step.payload, HopPayload):
            hops.append(step.payload)
        elif not isinstance(step.payload, EditPayload):  # the chain's first retrieval
            start = _documents(getattr(step.payload, "passages", []))
            break
        parent = step.parent_id
    hops.reverse()
    pool = list(start)
    for hop in hops:
        pool += _documents(hop.passages)
    return pool, [hop.sentence for hop in hops if hop.sentence]


def _hops_before(state: "RunState", step_id: str, answer: str, edit_id: str):
    """The plan, the hops before the hop ``step_id`` (the latest of each number before it in the trace, a
    person's answer included) with the person's ``answer`` for it, their step ids (the person's: its ``edit``
    step), and the passages they collected."""
    plan_step = next(((i, p) for i, p in reversed(state.steps_of(PlanPayload)) if p.questions), None)
    if plan_step is None:
        raise PlanError("the run has no plan to continue")
    plan_id, planned = plan_step
    plan: Plan = parse_plan("\n".join([f"{n}. {q}" for n, q in enumerate(planned.questions, 1)] + [planned.final]),
                            max_questions=len(planned.questions))
    edited: SubQuestionPayload = state.steps[step_id].payload
    hops: dict[int, Hop] = {}
    ids: dict[int, str] = {}
    for event in state.events:  # in order: a later answer of a number (a person's, a redone hop) replaces it
        if event.id == step_id and edited.found is not None and getattr(event.payload, "found", None) is not None:
            break
        payload = event.payload
        if isinstance(payload, SubQuestionPayload) and payload.found is not None and payload.step < edited.step:
            hop = Hop(payload.question, _documents(payload.passages))
            hop.answer, hop.source, hop.note = (payload.answer or None), payload.source, payload.note
            hop.said, hop.inferred = payload.said or None, payload.inferred
            hops[payload.step], ids[payload.step] = hop, event.id
        elif isinstance(payload, EditPayload) and payload.action == "edit_step" and event.id != edit_id:
            target = state.steps.get(payload.target)
            hop = target.payload if target is not None else None
            if isinstance(hop, SubQuestionPayload) and hop.step < edited.step:
                hops[hop.step], ids[hop.step] = _answered(hop, payload.answer or ""), event.id
    hops[edited.step], ids[edited.step] = _answered(edited, answer), edit_id
    pool: list[Document] = []
    for number in sorted(hops):
        pool += deduplicate(hops[number].passages, against=pool)
    return plan, plan_id, hops, ids, pool


def _answered(payload: SubQuestionPayload, answer: str) -> Hop:
    """A hop answered by a person: their answer, from the passage of the hop that holds it if one does."""
    hop = Hop(payload.question, _documents(payload.passages))
    hop.answer = answer
    hop.source = next((n for n, doc in enumerate(hop.passages, 1) if holds(doc, answer)), None)
    hop.note = "Answered by you."
    return hop
