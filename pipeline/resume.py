"""A finished run resumed with a person's edits (``pipeline.edits``): only what the edits touch is recomputed.

A ``Resumption`` holds a run's trace and edits to it, checked against each other as soon as it is made (an
unknown step, a reading that is not kept, a passage number out of range, an edit the run's method does not take:
``EditError``, one line, before any model is loaded). Its events, in the order the new trace keeps them:

1. the original run's events, replayed as they were (``RunService.resume`` yields them first);
2. one ``edit`` step per edit ("You pruned: ..."), under the step it edits; an edit of a reading also updates
   that reading's ``node`` step (pruned, restored or rewritten, "by you"), so the picture shows the tree as edited;
3. the method's steps run again (``MethodSpec.reanswer``) from the run folded with those events: ToC rebuilds
   its kept readings, clarifies and verifies once more the readings a person asked to expand (over the run's
   retrieved pool), and writes its long answer; OneR and KGP read the answer's passages less those
   dropped (KGP with the visited passages pinned first) with their own answer step; IRCoT continues its chain
   from a rewritten step (``pipeline.methods.ircot.steer``: the steps before kept, those after redone, with
   retrieval) or reads again; any other method gets the generic reader (``read_again``). No clarification,
   verification or walk is redone but an expansion asked for, and nothing retrieves but a continued chain.

``RunService.resume`` (``pipeline.service``) runs one for the browser and the CLI alike, with the same Stop, the
same time limit and the same trace saving as a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from langchain_core.documents import Document

from pipeline.context import RunContext
from pipeline.edits import (AddFact, DropPassage, Edit, EditError, EditReading, EditStep, ExpandNode, PinPassage, Prune,
                            Restore)
from pipeline.events import StepEvent, Tracer
from pipeline.fold import RunState
from pipeline.methods import METHODS
from pipeline.methods.base import MethodSpec, guarded
from pipeline.methods.oner import answer_from
from pipeline.payloads import (ActionPayload, AnswerPayload, EditPayload, HopPayload, NodePayload, PassageRef,
                               SubQuestionPayload, TokenPayload, VisitPayload)
from pipeline.steps.edit import summary

AFTER_EDITS = " (after your edits)"  # added to the title of an answer written again


def passage_key(passage: PassageRef | Document) -> str:
    """What tells one passage from another across a trace: its id, else its text."""
    if isinstance(passage, PassageRef):
        return passage.id or passage.text
    return passage.id or passage.metadata.get("id") or passage.page_content


def dropped_passages(state: RunState) -> frozenset[str]:
    """The keys (``passage_key``) of every passage a person dropped in the run so far, by this resumption's edits
    and by earlier ones (a resumed trace resumed again keeps them dropped)."""
    return frozenset(passage_key(p.passage) for p in state.payloads(EditPayload)
                     if p.action == "drop_passage" and p.passage is not None)


@dataclass(frozen=True)
class Steering:
    """What a method's ``reanswer`` gets: the question, the run folded with the edit events (a reading's ``node``
    step holds its edited state), the answer step the edits change (the run's final answer before them), the
    edits, and the keys of the passages dropped (``is_dropped``)."""

    question: str
    state: RunState
    answer: StepEvent
    edits: tuple[Edit, ...]
    dropped: frozenset[str]

    def is_dropped(self, passage: PassageRef | Document) -> bool:
        """Whether a person dropped ``passage`` from the answer's evidence."""
        return passage_key(passage) in self.dropped

    def kept_passages(self) -> list[Document]:
        """The passages the answer was given, less those dropped, in their order, as documents to read again."""
        return [p.document() for p in self.answer.payload.passages if not self.is_dropped(p)]


@dataclass(frozen=True)
class _Change:
    """One checked edit: its ``edit`` step's payload and parent, and the reading's new ``node`` payload."""

    edit: EditPayload
    parent_id: str | None
    node_id: str | None = None
    node: NodePayload | None = None


class Resumption:
    """A finished run (its events or its folded state) and edits to it, checked at once: ``EditError`` with a
    one-line reason when an edit does not fit the run. ``method`` is the method whose answer the edits change
    (the final answer's: for an Auto run, the method it ended with)."""

    def __init__(self, trace: RunState | Iterable[StepEvent], edits: Sequence[Edit]) -> None:
        state = trace if isinstance(trace, RunState) else RunState.of(trace)
        if not state.events:
            raise EditError("The trace holds no steps.")
        if not edits:
            raise EditError("No edit was given.")
        answer = state.final_answer
        if answer is None:
            how = {"stopped": "it was stopped", "failed": "it failed"}.get(state.outcome, "it ended without one")
            raise EditError(f"The run has no answer to rewrite ({how}).")
        if answer.method not in METHODS:
            raise EditError(f"The run's answer comes from '{answer.method}', a method this app does not have.")
        self.original = state
        self.answer = answer
        self.spec: MethodSpec = METHODS[answer.method]
        self.edits: tuple[Edit, ...] = tuple(edits)
        self._changes = self._check()

    @property
    def method(self) -> str:
        return self.spec.name

    @property
    def retrieves(self) -> bool:
        """Whether the recomputed steps retrieve (a chain continued from a rewritten step), so that the resumed
        run needs the run's collections, not only its trace."""
        return any(isinstance(edit, EditStep) for edit in self.edits)

    @property
    def question(self) -> str:
        return self.original.question

    # Checking.

    def _check(self) -> list[_Change]:
        nodes = dict(self.original.steps_of(NodePayload))
        passages = self.answer.payload.passages
        touched: set[str] = set()  # the passages dropped or pinned so far
        expanded: set[str] = set()  # the readings to clarify once more
        changes = []
        if self.retrieves and len(self.edits) > 1:
            raise EditError("A rewritten step is an edit of its own: the chain after it is redone, so make it "
                            "alone.")
        for edit in self.edits:
            if edit.action not in self.spec.edits:
                raise EditError(f"'{edit.action}' does not apply to this run: its answer is {self.spec.label}'s, "
                                f"which takes {', '.join(self.spec.edits)}.")
            if isinstance(edit, EditStep):
                changes.append(self._step_change(edit))
                continue
            if isinstance(edit, (PinPassage, AddFact, DropPassage)):
                change, twice = self._passage_change(edit, passages)
                if passage_key(change.edit.passage) in touched:
                    raise EditError(twice)
                touched.add(passage_key(change.edit.passage))
                changes.append(change)
                continue
            if isinstance(edit, ExpandNode):
                changes.append(self._expand_change(edit, nodes, expanded))
                expanded.add(edit.node)
                continue
            if edit.node in expanded:
                raise EditError(f"Reading {edit.node} is expanded: leave it as it is, or expand it in a second "
                                "rewrite.")
            node = self._node(edit.node, nodes)
            before = _reading(node)
            if isinstance(edit, Prune):
                if node.state not in ("kept", "restored"):
                    raise EditError(f"Reading {edit.node} is {node.state}, not kept: only a kept reading can be "
                                    "pruned.")
                new = node.model_copy(update={"state": "pruned", "prune_kind": "person", "reason": "pruned by you"})
                payload = EditPayload(action="prune", target=edit.node, reading=before)
            elif isinstance(edit, Restore):
                if node.state != "pruned":
                    raise EditError(f"Reading {edit.node} is {node.state}, not pruned: only a pruned reading can be "
                                    "restored.")
                was = f" (was: {node.reason})" if node.reason else ""
                new = node.model_copy(update={"state": "restored", "reason": f"restored by you{was}"})
                payload = EditPayload(action="restore", target=edit.node, reading=before)
            else:
                assert isinstance(edit, EditReading)
                question, answer = edit.question or node.question, edit.answer or node.answer
                new = node.model_copy(update={"question": question, "answer": answer,
                                              "reason": f"edited by you (was: {before})"})
                payload = EditPayload(action="edit_reading", target=edit.node, reading=before, question=question,
                                      answer=answer)
            nodes[edit.node] = new
            changes.append(_Change(payload, edit.node, edit.node, new))
        return changes

    def _expand_change(self, edit: ExpandNode, nodes: dict[str, NodePayload], expanded: set[str]) -> _Change:
        """A kept reading, or the tree's root, to be clarified once more (once: ``expanded`` holds those so
        far)."""
        node = nodes.get(edit.node)
        if node is None or node.state != "root":
            node = self._node(edit.node, nodes)
            if node.state not in ("kept", "restored"):
                raise EditError(f"Reading {edit.node} is {node.state}, not kept: put it back first to clarify it "
                                "once more.")
        if edit.node in expanded:
            raise EditError(f"Step {edit.node} is expanded twice.")
        return _Change(EditPayload(action="expand", target=edit.node, reading=_reading(node)), edit.node)

    def _passage_change(self, edit: PinPassage | AddFact | DropPassage, passages: list[PassageRef]
                        ) -> tuple[_Change, str]:
        """The checked change of an edit that puts a passage in or takes one out of the answer's evidence, and
        what to say when the same passage comes twice."""
        if isinstance(edit, PinPassage):
            ref = self._visited(edit, passages)
            return (_Change(EditPayload(action="pin_passage", target=edit.step, passage=ref), edit.step),
                    f"The passage of visit {edit.step} is pinned twice.")
        if isinstance(edit, AddFact):
            ref = self._sentence(edit, passages)
            return (_Change(EditPayload(action="add_fact", target=edit.step, number=edit.sentence, passage=ref),
                            edit.step), f"Sentence {edit.sentence} of step {edit.step} is added twice.")
        ref = self._passage(edit, passages)
        return (_Change(EditPayload(action="drop_passage", target=ref.id or "", number=ref.number, passage=ref),
                        self.answer.id), f"Passage [{ref.number}] is dropped twice.")

    def _visited(self, edit: PinPassage, passages: list[PassageRef]) -> PassageRef:
        """The passage of the visit ``edit`` names, which the reader did not read already."""
        step = self.original.steps.get(edit.step)
        visit = step.payload if step is not None else None
        if not isinstance(visit, VisitPayload) or visit.passage is None:
            visits = [i for i, v in self.original.steps_of(VisitPayload) if v.passage is not None]
            known = f" (its visits: {', '.join(visits[:10])}{' ...' if len(visits) > 10 else ''})" if visits else ""
            raise EditError(f"There is no visited passage '{edit.step}' in this run{known}.")
        if any(passage_key(p) == passage_key(visit.passage) for p in passages):
            raise EditError(f"The passage of visit {edit.step} is read already: it is [{_number(visit.passage, passages)}]"
                            " of the answer.")
        return visit.passage

    def _sentence(self, edit: AddFact, passages: list[PassageRef]) -> PassageRef:
        """Sentence ``edit.sentence`` of the page window step ``edit.step`` showed, as a fact with its page."""
        step = self.original.steps.get(edit.step)
        action = step.payload if step is not None else None
        if not isinstance(action, ActionPayload) or not action.sentences or action.page is None:
            raise EditError(f"Step {edit.step} showed no page: give a step that loaded or scrolled a page.")
        sentence = next((s for s in action.sentences if s.number == edit.sentence), None)
        if sentence is None:
            numbers = [s.number for s in action.sentences]
            raise EditError(f"Step {edit.step} showed sentences {numbers[0]} to {numbers[-1]}, not "
                            f"{edit.sentence}.")
        page = action.page
        fact = PassageRef(text=sentence.text, title=page.title, url=page.url, source=page.source,
                          collection=page.collection, page=page.page)
        if any(" ".join(p.text.split()) == " ".join(fact.text.split()) for p in passages):
            raise EditError(f"Sentence {edit.sentence} of step {edit.step} is a fact of the answer already.")
        return fact

    def _step_change(self, edit: EditStep) -> _Change:
        """A chain's step rewritten: a reasoning sentence (deleted when the text is empty) or a hop's answer.
        Its ``edit`` step hangs where the step hung, so the chain continued from it branches off the original."""
        step = self.original.steps.get(edit.step)
        payload = step.payload if step is not None else None
        if isinstance(payload, HopPayload):
            if not payload.sentence:
                raise EditError(f"Step {edit.step} has no sentence to rewrite.")
            before = payload.sentence
        elif isinstance(payload, SubQuestionPayload):
            if not edit.text:
                raise EditError(f"Hop {edit.step} needs an answer: a hop cannot be deleted, only answered.")
            before = f"{payload.question} → {payload.answer or 'not found'}"
        else:
            chain = [i for i, p in self.original.steps_of(HopPayload) if p.sentence]
            chain += [i for i, _ in self.original.steps_of(SubQuestionPayload)]
            known = f" (its steps: {', '.join(chain[:10])})" if chain else " (it has no chain)"
            raise EditError(f"There is no step '{edit.step}' of a chain in this run{known}.")
        return _Change(EditPayload(action="edit_step", target=edit.step, reading=before, answer=edit.text),
                       step.parent_id)

    def _node(self, step_id: str, nodes: dict[str, NodePayload]) -> NodePayload:
        node = nodes.get(step_id)
        readings = [i for i, n in nodes.items() if n.state != "root"]
        if node is None:
            known = ", ".join(readings[:8]) + (" ..." if len(readings) > 8 else "")
            raise EditError(f"There is no reading '{step_id}' in this run"
                            + (f" (its readings: {known})." if readings else " (it has no readings)."))
        if node.state == "root":
            raise EditError(f"Step {step_id} is the question itself, not one of its readings.")
        return node

    def _passage(self, edit: DropPassage, passages: list[PassageRef]) -> PassageRef:
        if isinstance(edit.passage, int):
            numbered = {p.number or i: p for i, p in enumerate(passages, 1)}
            if edit.passage not in numbered:
                read = f"it read passages [1] to [{len(passages)}]" if passages else "it read no passages"
                raise EditError(f"There is no passage [{edit.passage}] in the answer ({read}).")
            return numbered[edit.passage]
        found = next((p for p in passages if p.id == edit.passage), None)
        if found is None:
            raise EditError(f"No passage of the answer has the id '{edit.passage}'.")
        return found

    # Running.

    def edit_events(self, tracer: Tracer) -> Iterator[StepEvent]:
        """The edits as events: an ``edit`` step each, under the step it edits, and a reading's updated ``node``
        step after its edit."""
        steps = self.original.steps
        for change in self._changes:
            yield tracer.event(change.edit, summary(change.edit), parent_id=change.parent_id)
            if change.node is not None:
                node = steps[change.node_id]
                yield tracer.event(change.node, change.node.question, id=change.node_id, parent_id=node.parent_id)

    def recompute(self, state: RunState, ctx: RunContext, tracer: Tracer) -> Iterator[StepEvent]:
        """The method's answer step again, from ``state`` (the original run folded with ``edit_events``), its
        answer titled as written after the edits; Stop, model failures and bugs end it with a warning or an error
        event, as in a run."""
        spec = self.spec
        steering = Steering(self.question, state, self.answer, self.edits, dropped_passages(state))
        settings = ctx.settings.for_method(spec.name, spec.settings)
        reanswer = spec.reanswer or read_again

        def steps() -> Iterator[StepEvent]:
            for event in reanswer(steering, ctx, tracer, settings):
                if isinstance(event.payload, (AnswerPayload, TokenPayload)) and not event.title.endswith(AFTER_EDITS):
                    event = event.model_copy(update={"title": event.title + AFTER_EDITS})
                yield event

        yield from guarded(steps, tracer, f"resuming a {spec.name} run on {self.question!r} failed")


def read_again(steering: Steering, ctx: RunContext, tracer: Tracer, settings) -> Iterator[StepEvent]:
    """The generic reader after a dropped passage, for a method with no ``reanswer`` of its own: OneR's answer
    prompt over the answer's passages less those dropped, under the answer's parent step.

    IRCoT's readers are not run again: the chain-of-thought reader's answer is the chain's own conclusion, the
    context readers continue the chain's reasoning prompt, and the notes reader reads the chain's sentences, any of
    which may repeat what the dropped passage said. Its "direct" reader is this one; the chain's sentences stay
    shown with the answer (``extras``), and editing them is IRCoT's own edit (not built yet). The web agent's
    answer is OneR's prompt over its quoted facts, which this reads the same way (its links to the quoting steps
    are not redrawn); its hop mode's reader also reads the hops as notes, which this does not."""
    answer: AnswerPayload = steering.answer.payload
    extras = answer.extras
    if extras is not None and hasattr(extras, "collected"):
        update = {"collected": [p for p in extras.collected if not steering.is_dropped(p)]}
        if getattr(extras, "reader", None):
            update["reader"] = "direct"
        extras = extras.model_copy(update=update)
    added = [p.document() for p in pinned_passages(steering.state, "add_fact")]
    yield from answer_from(steering.question, steering.kept_passages() + added, ctx, tracer,
                           parent_id=steering.answer.parent_id, extras=extras)


def pinned_passages(state: RunState, action: str = "pin_passage") -> list[PassageRef]:
    """The passages a person put into the reader's set, by this resumption's edits and earlier ones, in order:
    visits pinned into a walk's reader (``pin_passage``), or sentences added to a browsing agent's facts
    (``add_fact``)."""
    pins = {passage_key(p.passage): p.passage for p in state.payloads(EditPayload)
            if p.action == action and p.passage is not None}
    return [p for key, p in pins.items() if key not in dropped_passages(state)]


def _number(passage: PassageRef, passages: list[PassageRef]) -> int | str:
    return next((p.number or i for i, p in enumerate(passages, 1) if passage_key(p) == passage_key(passage)), "?")


def _reading(node: NodePayload) -> str:
    return f"{node.question} → {node.answer}" if node.answer else node.question


def targets(state: RunState) -> list[str]:
    """What a person may edit in a finished run, one line each: its tree's root and readings (step id, state,
    question and answer: the root may be expanded, a reading pruned, restored, edited or expanded), its chain's
    sentences and hops (step id), and the passages of its answer (number and id), for ``pipeline ask
    --from-trace`` without edits."""
    lines = [f"{step_id}  {node.state:<8} {_reading(node)}" for step_id, node in state.steps_of(NodePayload)]
    lines += [f"{step_id}  step {hop.step}  {hop.sentence}" for step_id, hop in state.steps_of(HopPayload)
              if hop.sentence]
    lines += [f"{step_id}  hop {hop.step}   {hop.question} → {hop.answer or 'not found'}"
              for step_id, hop in state.steps_of(SubQuestionPayload)]
    lines += [f"{step_id}  visited  {visit.passage.label()}" for step_id, visit in state.steps_of(VisitPayload)
              if visit.passage is not None]
    lines += [f"{step_id}:{s.number}  sentence  {s.text[:100]}" for step_id, action in state.steps_of(ActionPayload)
              if action.page is not None for s in action.sentences if not s.quoted]
    answer = state.final_answer
    if answer is not None:
        lines += [f"[{p.number}]  {p.id or '(no id)'}  {p.label()}" for p in answer.payload.passages]
    return lines


__all__ = ["AFTER_EDITS", "Resumption", "Steering", "dropped_passages", "passage_key", "pinned_passages", "read_again",
           "targets"]
