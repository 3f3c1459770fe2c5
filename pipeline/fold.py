"""One fold of a run's events into its state: steps, the tree or chain they form, edges, notes, the answer,
passages and costs. The reasoning view, the Markdown report, the CLI printer and the evaluation all read this
state; none of them decodes events on its own."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from typing import Literal, TypeVar

from pydantic import BaseModel

from pipeline.events import Status, StepEvent
from pipeline.payloads import (AnswerPayload, EditPayload, ErrorPayload, PassageRef, RetrievePayload, RoutePayload,
                               WarningPayload)
from pipeline.steps import kind_of

P = TypeVar("P", bound=BaseModel)

# How a run ended, or that it has not: answered, stopped (Stop or a limit), failed (an error), ended without
# an answer for another reason (a trace that stops short), or still running.
Outcome = Literal["running", "answered", "stopped", "failed", "ended"]


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    type: str  # "parent" for the tree/chain structure, else the link's type


class RunState:
    """The state of one run, updated event by event (``add``)."""

    def __init__(self) -> None:
        self.events: list[StepEvent] = []  # everything received: the run's trace
        self.steps: dict[str, StepEvent] = {}  # the latest version of each step, in first-seen order
        self.children: dict[str | None, list[str]] = defaultdict(list)
        self.notes: dict[str | None, list[StepEvent]] = defaultdict(list)  # verdicts, prunings, warnings
        self.streamed = ""  # text of the answer being written, received token by token
        self._streaming: str | None = None  # the id of the answer step ``streamed`` belongs to
        self.route: RoutePayload | None = None
        self.closed = False  # the run ended (answered, failed or stopped): no step is still running

    @classmethod
    def of(cls, events) -> "RunState":
        state = cls()
        for event in events:
            state.add(event)
        return state

    def add(self, event: StepEvent) -> None:
        """Fold one event in: a new step, an update of a known one, a note on its parent, or answer text."""
        self.events.append(event)
        role = kind_of(event).role
        if role == "stream":
            if event.id != self._streaming:  # a new answer (Auto's deeper one after its quick one)
                self.streamed, self._streaming = "", event.id
            self.streamed += event.payload.text
            return
        if role == "route":
            self.route = event.payload
            return
        if role == "note":
            self.notes[event.parent_id if event.parent_id in self.steps else None].append(event)
            return
        if event.id not in self.steps:
            self.children[event.parent_id if event.parent_id in self.steps else None].append(event.id)
        self.steps[event.id] = event

    def close(self) -> None:
        """Mark the run as over; steps left running (a stopped run) count as interrupted."""
        self.closed = True

    # What the run produced.

    @property
    def final_answer(self) -> StepEvent | None:
        """The finished answer step, if the run has one. Auto's quick answer, marked preliminary while a deeper
        method runs, is the answer only when the deeper run ends without one (stopped or failed): nothing found
        is lost."""
        done = [s for s in self.steps.values() if isinstance(s.payload, AnswerPayload) and s.status == Status.DONE]
        final = [s for s in done if not s.payload.preliminary]
        if final:
            return final[-1]
        return done[-1] if done and (self.closed or self.stopped() or self.errors()) else None

    @property
    def preliminary(self) -> AnswerPayload | None:
        """Auto's quick answer while a deeper method runs (None once that method has answered, or without one)."""
        if self.final_answer is not None:
            return None
        done = [s.payload for s in self.steps.values()
                if isinstance(s.payload, AnswerPayload) and s.status == Status.DONE and s.payload.preliminary]
        return done[-1] if done else None

    @property
    def answer(self) -> AnswerPayload | None:
        final = self.final_answer
        return final.payload if final else None

    @property
    def answer_text(self) -> str:
        """The final answer, or the text streamed so far while the run goes on. A run that ended without one
        (stopped or failed while writing) has none: its streamed words are not an answer (the view still shows
        them as they came)."""
        if self.answer:
            return self.answer.answer
        if self.closed or self.stopped():
            return ""
        quick = self.steps.get(self._streaming or "")
        if quick is not None and isinstance(quick.payload, AnswerPayload) and quick.payload.preliminary:
            return quick.payload.answer  # the deeper method has not started writing yet
        return self.streamed

    def cited_passages(self) -> list[PassageRef]:
        answer = self.answer
        if answer is None:
            return []
        return [p for p in answer.passages if p.number in set(answer.citations)]

    @property
    def question(self) -> str:
        """The question as run (from the route step), else the first retrieval's query."""
        if self.route:
            return self.route.question
        return next((s.payload.query for s in self.steps.values() if isinstance(s.payload, RetrievePayload)), "")

    @property
    def methods(self) -> list[str]:
        return sorted({e.method for e in self.events if kind_of(e).role != "route"})

    def errors(self) -> list[str]:
        return [n.payload.message for ns in self.notes.values() for n in ns if isinstance(n.payload, ErrorPayload)]

    def warnings(self) -> list[str]:
        """The titles of the run's warnings, each once, in the order first given."""
        return list(dict.fromkeys(n.title for ns in self.notes.values() for n in ns
                                  if isinstance(n.payload, WarningPayload)))

    def caveats(self) -> list[str]:
        """The messages of the warnings that qualify the answer (``WarningPayload.caveat``), each once, from the
        path that wrote it: those after the run's last route (Auto's deeper method) or edit (a resumed run)."""
        start = max((i for i, e in enumerate(self.events)
                     if kind_of(e).role == "route" or isinstance(e.payload, EditPayload)), default=0)
        return list(dict.fromkeys(e.payload.message for e in self.events[start:]
                                  if isinstance(e.payload, WarningPayload) and e.payload.caveat))

    def stopped(self) -> bool:
        """Whether the run was stopped (a warning marked ``stopped``)."""
        return any(isinstance(n.payload, WarningPayload) and n.payload.stopped
                   for ns in self.notes.values() for n in ns)

    @property
    def outcome(self) -> Outcome:
        """How the run ended: answered, stopped, failed or ended (without an answer); running while it goes on."""
        if self.final_answer is not None:
            return "answered"
        if self.stopped():
            return "stopped"
        if self.errors():
            return "failed"
        return "ended" if self.closed else "running"

    @property
    def finished(self) -> bool:
        """Whether the run is over (closed, answered or failed)."""
        return self.closed or self.final_answer is not None or bool(self.errors())

    def status_of(self, step: StepEvent) -> str:
        """A step's status for people; a step still running in a closed run was interrupted."""
        if self.closed and step.status in (Status.RUNNING, Status.PENDING):
            return "interrupted"
        return step.status.value

    # The structure.

    def payloads(self, model: type[P], done: bool = True) -> list[P]:
        """The final payload of every step whose payload is a ``model`` (only finished steps unless not
        ``done``), in creation order: a method's tree nodes, chain steps, visits or actions."""
        return [s.payload for s in self.steps.values() if isinstance(s.payload, model)
                and (not done or s.status == Status.DONE)]

    def steps_of(self, model: type[P]) -> list[tuple[str, P]]:
        """(step id, final payload) of every step whose payload is a ``model``, finished or not."""
        return [(i, s.payload) for i, s in self.steps.items() if isinstance(s.payload, model)]

    def notes_on(self, step_id: str, model: type[P]) -> list[P]:
        """The payloads of the notes on one step that are a ``model`` (its verdicts, its prunings)."""
        return [n.payload for n in self.notes.get(step_id, []) if isinstance(n.payload, model)]

    def edges(self) -> list[Edge]:
        """Parent edges and typed links between steps that exist. A step's link to its own parent gives the
        parent edge its type (a graph walk's "knn" or "title" edge) instead of adding a second edge."""
        out = [Edge(s.parent_id, s.id, next((link.type for link in s.links if link.target == s.parent_id),
                                            "parent"))
               for s in self.steps.values() if s.parent_id in self.steps]
        out += [Edge(s.id, link.target, link.type) for s in self.steps.values() for link in s.links
                if link.target in self.steps and link.target != s.parent_id]
        return out

    # What was read.

    def has_retrieval(self) -> bool:
        """Whether the run read sources: a retrieval, a graph walk, or a browsing agent's actions (pages loaded,
        quotes)."""
        return any(kind_of(s).reads_sources for s in self.steps.values())

    def passage_ids(self) -> set[str] | None:
        """Ids of every passage the run retrieved or gave the model; None when it had no retrieval step. A
        graph walk counts the passages it gave its reader (the answer step's), not every node it visited."""
        if not self.has_retrieval():
            return None
        ids: set[str] = set()
        for step in self.steps.values():
            if step.status == Status.DONE:
                ids.update(p.id for p in kind_of(step).passages(step.payload) if p.id)
        return ids

    # Cost.

    def totals(self) -> tuple[int, int, float]:
        """LLM calls, tokens and wall seconds so far."""
        steps = list(self.steps.values()) + [n for ns in self.notes.values() for n in ns]
        calls = sum(s.llm_calls for s in steps)
        tokens = sum(s.prompt_tokens + s.completion_tokens for s in steps)
        starts = [e.started_at for e in self.events if e.started_at]
        last = max((e.started_at + (e.elapsed_s or 0) for e in self.events if e.started_at), default=0.0)
        return calls, tokens, (last - min(starts)) if starts else 0.0

    def totals_line(self) -> str:
        """The totals for people: "3 steps · 1 LLM call · 477 tokens · 8.8 s"."""
        calls, tokens, seconds = self.totals()
        steps = len(self.steps)
        return (f"{steps} step{'' if steps == 1 else 's'} · {calls} LLM call{'' if calls == 1 else 's'} · "
                f"{tokens} tokens · {seconds:.1f} s")

    def cost(self) -> dict[str, float]:
        """LLM calls, prompt and completion tokens and seconds inside the model, over the whole run."""
        steps = list(self.steps.values()) + [n for ns in self.notes.values() for n in ns]
        return {
            "llm_calls": sum(s.llm_calls for s in steps),
            "prompt_tokens": sum(s.prompt_tokens for s in steps),
            "cached_tokens": sum(s.cached_tokens for s in steps),
            "completion_tokens": sum(s.completion_tokens for s in steps),
            "llm_s": sum(s.llm_seconds for s in steps),
        }
