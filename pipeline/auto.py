"""Auto: answer first with one retrieval, then go deeper only when what it found asks for it.

The quick path is OneR's (retrieve with the question, stream a cited answer): people see an answer after one
retrieval and one model call. Auto then checks that answer and its passages (``gather``, ``decide``; no model
call) and runs a deeper method only when the check asks for one:

- **the answer is reached through another passage** (IRCoT): the question's structure says it reaches one thing
  through another ("the director of the film X", "X's wife", a grandparent), and the quick answer is an answer
  (``Settings.auto_bridge_always``: a passage that mentions most of such a question is X's own, which names the
  bridge but not what is asked of it); or it compares two things and the passage holding the quick answer
  mentions less than ``Settings.auto_hop_coverage`` of the question; or the model itself said that the passages
  do not answer it although they are about it.
- **several readings** (ToC): the router of the wording (``pipeline.routing.Router``: its cues, then the nearest
  hand-labelled questions vote among OneR, ToC and IRCoT) picks ToC, and the quick answer is an answer. Among
  OneR and ToC alone the vote sent 27 of 50 HotpotQA questions to ToC; among all three, questions that chain
  facts vote for IRCoT, as the labelled ones that resemble them do. The evidence signals
  measured for this (the model's probability that the passages give different answers, read in the answer's own
  conversation; how many passages fit the question equally well) did not tell ASQA's ambiguous questions from
  their disambiguated forms over the same collection (docs/benchmarks.md), so the wording decides here.
- **newer facts** (the web agent): web search is on, and the collections do not answer or the question asks
  about something that changes over time.

A question's length is never a reason to go deeper. With ``Settings.auto_deeper`` off the check is still shown
(what a deeper method would be for) but nothing more runs. When Auto goes deeper, the quick answer is marked
preliminary (the view says why a deeper method runs) and the deeper method's answer replaces it; if the deeper
run is stopped or fails, the quick answer stays. The browser, the CLI and the evaluation all run this module
(``RunService``).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from langchain_core.embeddings import Embeddings

from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods import METHODS, run_method
from pipeline.methods.base import MethodSpec
from pipeline.methods.oner import METHOD as ONER
from pipeline.methods.oner import OneAnswer, answer_once
from pipeline.payloads import AnswerPayload, CheckPayload, RoutePayload, Signal
from pipeline.routing import COMPARES, Router, ambiguity_cue, hop_structure_cue, multi_hop_cue
from pipeline.settings import NoSettings, Settings
from pipeline.support import answer_passage, coverage, says_unanswerable

if TYPE_CHECKING:
    from pipeline.fold import RunState

QUICK_REASON = "it answers first with one retrieval, then goes deeper only when what it finds asks for it"
_COST = ("llm_calls", "prompt_tokens", "cached_tokens", "completion_tokens", "llm_seconds")
_TIME_CUE = "it asks about something that changes over time"

# The check's signals, as the view and the evaluation name them.
NO_PASSAGE = "no passage is about the question"
SAID_NONE = "the answer says the passages do not answer"
HOPS = "the question reaches one thing through another"
HELD = "share of the question the answer's passage mentions"
READINGS = "the wording points at several readings"
NEWER = "needs newer facts than the collections"


@dataclass(frozen=True)
class Evidence:
    """What the check reads from the quick answer, its passages and the question's wording."""

    unsupported: bool  # the support check refused: no passage is about the question
    said_none: bool  # the answer says the passages do not answer, though they are about the question
    hops: str | None  # why the question's structure needs several hops
    held: float  # share of the question the passage holding the answer mentions (0: no passage holds it)
    readings: str | None  # why the wording points at several readings
    newer: str | None  # why the question asks about something that changes over time

    @classmethod
    def from_record(cls, signals: dict[str, Any]) -> "Evidence":
        """The evidence an evaluation record kept (``auto_record``), to replay ``decide`` with other settings."""
        return cls(unsupported=bool(signals[NO_PASSAGE]), said_none=bool(signals[SAID_NONE]),
                   hops=signals[HOPS] or None, held=float(signals[HELD]), readings=signals.get(READINGS) or None,
                   newer=signals.get(NEWER) or None)


_ROUTERS: "weakref.WeakKeyDictionary[Embeddings, Router]" = weakref.WeakKeyDictionary()
_ROUTERS_LOCK = threading.Lock()


def _router(embeddings: Embeddings) -> Router:
    """One router per embedder (the labelled questions are embedded once)."""
    with _ROUTERS_LOCK:
        if embeddings not in _ROUTERS:
            _ROUTERS[embeddings] = Router(embeddings)
        return _ROUTERS[embeddings]


def gather(question: str, quick: OneAnswer, ctx: RunContext) -> Evidence:
    """The evidence of the quick answer (no model call; the vote costs one embedding of the question)."""
    answer: AnswerPayload = quick.answer.payload
    unsupported = answer.support is not None
    cue = ambiguity_cue(question)
    readings = _readings(question, ctx.embeddings)
    return Evidence(unsupported=unsupported, said_none=not unsupported and says_unanswerable(answer.answer),
                    hops=hop_structure_cue(question), held=round(_answer_coverage(question, quick, answer), 3),
                    readings=readings, newer=cue if cue and cue.startswith(_TIME_CUE) else None)


def _readings(question: str, embeddings: Embeddings | None, router: Router | None = None) -> str | None:
    """Why the wording points at several readings: the router (the app's own unless ``router`` is given, as a
    replay with other settings gives it) picks ToC among all its labels (a question it sends to IRCoT, by its
    structure or its length, or to OneR, has no such reading here). Without an embedder, the cues alone."""
    if embeddings is None:
        return None if multi_hop_cue(question) else ambiguity_cue(question)
    choice = (router or _router(embeddings)).choose(question, {"oner", "toc", "ircot"})
    return choice.reason if choice.method == "toc" else None


def decide(evidence: Evidence, settings: Settings, available: set[str]) -> CheckPayload:
    """The check as the view shows it: each signal, and the deeper method the evidence asks for (among
    ``available``) with the reason, or None when the quick answer stands."""
    e = evidence
    answered = not e.unsupported and not e.said_none
    low = bool(e.hops) and answered and e.held < settings.auto_hop_coverage
    through = bool(e.hops) and answered and e.hops != COMPARES and settings.auto_bridge_always and not low
    bridge = low or through
    several = settings.auto_readings and bool(e.readings) and answered
    web = settings.use_web and (e.unsupported or bool(e.newer))
    signals = [
        Signal(name=NO_PASSAGE, value=e.unsupported),
        Signal(name=SAID_NONE, value=e.said_none, fired=e.said_none,
               why="the passages found first do not state the answer" if e.said_none else ""),
        Signal(name=HOPS, value=e.hops or False, fired=through,
               why=f"{e.hops}; one retrieval does not show each step" if through else e.hops or ""),
        Signal(name=HELD, value=e.held, fired=low,
               why="the passage holding the answer is not about the whole question: the answer is reached "
                   "through another passage" if low else ""),
        Signal(name=READINGS, value=e.readings or False, fired=several, why=e.readings or ""),
        Signal(name=NEWER, value=web, fired=web,
               why=("the collections do not answer it" if e.unsupported else e.newer or "") if web else ""),
    ]
    if web and "webagent" in available:
        deeper, reason = "webagent", f"{signals[5].why}: searching the web"
    elif (e.said_none or bridge) and "ircot" in available:
        why = signals[1].why if e.said_none else signals[3].why if low else signals[2].why
        deeper, reason = "ircot", f"{why}: reasoning step by step, retrieving at each step"
    elif several and "toc" in available:
        deeper, reason = "toc", f"{e.readings.rstrip('.')}: growing a tree of readings"
    else:
        deeper, reason = None, ""
    if deeper is not None and not settings.auto_deeper:
        return CheckPayload(signals=signals, deeper=None, reason=f"{METHODS[deeper].label} could help ({reason}), "
                                                                 "but Auto's deeper runs are off")
    return CheckPayload(signals=signals, deeper=deeper, reason=reason)


def _answer_coverage(question: str, quick: OneAnswer, answer: AnswerPayload) -> float:
    """How much of the question the passage holding the answer mentions (the best such passage): the passages
    a long answer cites, or those containing a short answer. 0 when no passage holds it."""
    holding = [quick.passages[n - 1] for n in answer.citations if 0 < n <= len(quick.passages)]
    if not holding:
        found = answer_passage(answer.answer, quick.passages)
        holding = [found] if found is not None else []
    return max((coverage(question, p) for p in holding), default=0.0)


def run(question: str, ctx: RunContext, tracer: Tracer, available: set[str] | None = None) -> Iterator[StepEvent]:
    """Auto's run after its route event: the quick answer, the check, and a deeper method when the check asks
    for one."""
    available = set(METHODS) if available is None else available
    quick = yield from answer_once(question, ctx, tracer)
    if quick.answer is None:
        return
    ctx.check_cancelled()
    step = tracer.new_id("c")
    yield tracer.event(CheckPayload(), "Check the quick answer", id=step, status=Status.RUNNING)
    payload = decide(gather(question, quick, ctx), ctx.settings, available)
    yield tracer.event(payload, "Check the quick answer", id=step)
    if payload.deeper is None:
        return
    ctx.check_cancelled()
    first = quick.answer
    marked = tracer.event(first.payload.model_copy(update={"preliminary": True}), first.title, id=first.id,
                          parent_id=first.parent_id, **{k: getattr(first, k) for k in _COST})
    yield marked.model_copy(update={"elapsed_s": first.elapsed_s})
    spec = METHODS[payload.deeper]
    yield tracer.event(RoutePayload(method=spec.name, label=spec.label, structure=spec.structure, question=question,
                                    reason=payload.reason, auto=True, escalated_from=ONER.label), spec.label)
    tracer.method = spec.name
    yield from run_method(spec, question, ctx, tracer=tracer)


def auto_record(state: "RunState") -> dict[str, Any]:
    """What the evaluation keeps of an Auto run: the check's signals and verdict, the quick answer and the
    seconds until it was written (from the run's first event)."""
    checks = [s for s in state.steps.values() if isinstance(s.payload, CheckPayload) and s.status == Status.DONE]
    answers = [s for s in state.steps.values() if isinstance(s.payload, AnswerPayload) and s.status == Status.DONE]
    if not answers or not state.events:
        return {}
    first, start = answers[0], state.events[0].started_at or 0.0
    record: dict[str, Any] = {"quick_answer": first.payload.answer,
                              "quick_s": round((first.started_at or start) + (first.elapsed_s or 0.0) - start, 3)}
    if checks:
        payload: CheckPayload = checks[0].payload
        record["check"] = {"deeper": payload.deeper, "fired": [s.name for s in payload.signals if s.fired],
                           "signals": {s.name: s.value for s in payload.signals}}
    return record


def _run(question: str, ctx: RunContext, tracer: Tracer, settings: NoSettings) -> Iterator[StepEvent]:
    yield from run(question, ctx, tracer)


# Auto as a method spec, so that it runs under ``run_method``'s handling of Stop, model errors and bugs. It is not
# in the registry: people choose it as "auto", and it is never a deeper method of itself.
AUTO = MethodSpec(name="auto", label="Auto", run=_run, structure="answer",
                  summary="Answers first with one retrieval, then goes deeper only when what it finds asks for it.")

__all__ = ["AUTO", "Evidence", "QUICK_REASON", "auto_record", "decide", "gather", "run"]
