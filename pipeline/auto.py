"""Auto: answer first with one retrieval, then go deeper only when what it found asks for it.

The quick path is OneR's (retrieve with the question, stream a cited answer): people see an answer after one
retrieval and one model call. Auto then looks at that answer and its passages (``check``) and runs a deeper
method only on evidence:

- **different answers** (ToC): asked in the same conversation, right after its answer (so llama.cpp reuses the
  prompt it has just read), the model says whether the passages give different answers for different readings
  of the question; its probability of "True" is read from the log-probabilities. One extra call of one token.
- **the answer is not in one passage that is about the question** (IRCoT): the question's structure says it
  reaches one thing through another (a comparison, "the director of the film X", "X's wife"), and no passage
  that holds the answer mentions enough of the question; or the model itself said the passages do not answer
  it although they are about it.
- **newer facts** (the web agent): web search is on and the collections do not answer, or the question asks
  about something that changes over time.

A question's length is never a reason to go deeper. Without a trigger, the quick answer stands. With one, the
quick answer is marked preliminary (the view says so and why), the route names the deeper method and the
trigger, and the deeper method's answer replaces the quick one; if the deeper run is stopped or fails, the
quick answer stays. The browser, the CLI and the evaluation all run this one function (``RunService``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods import METHODS, run_method
from pipeline.methods.base import MethodSpec
from pipeline.methods.oner import METHOD as ONER
from pipeline.methods.oner import OneAnswer, answer_once
from pipeline.payloads import AnswerPayload, CheckPayload, RoutePayload, Signal
from pipeline.prompting import load_prompt
from pipeline.routing import ambiguity_cue, hop_structure_cue
from pipeline.settings import NoSettings
from pipeline.support import answer_passage, coverage, says_unanswerable
from models.llm import llm_cost, probability_true

if TYPE_CHECKING:
    from pipeline.fold import RunState

QUICK_REASON = "it answers first with one retrieval, then goes deeper only when what it finds asks for it"
_COST = ("llm_calls", "prompt_tokens", "cached_tokens", "completion_tokens", "llm_seconds")
_TIME_CUE = "it asks about something that changes over time"


def check(question: str, quick: OneAnswer, ctx: RunContext, available: set[str]) -> tuple[CheckPayload, list]:
    """What Auto reads from its quick answer: the signals, and the deeper method they ask for (among
    ``available``). Returns the payload and the model replies it took (for the step's cost)."""
    settings = ctx.settings
    answer: AnswerPayload = quick.answer.payload
    signals: list[Signal] = []
    calls = []
    unsupported = answer.support is not None  # the support check refused: no passage is about the question
    said_none = not unsupported and says_unanswerable(answer.answer)
    signals.append(Signal(name="no passage is about the question", value=unsupported, fired=False))
    signals.append(Signal(name="the answer says the passages do not answer", value=said_none, fired=said_none,
                          why="the passages found first do not state the answer" if said_none else ""))

    hops = hop_structure_cue(question)
    held = _answer_coverage(question, quick, answer)
    bridge = bool(hops) and not unsupported and not said_none and held < settings.auto_hop_coverage
    signals.append(Signal(name="the question reaches one thing through another", value=bool(hops),
                          why=hops or ""))
    signals.append(Signal(name="share of the question the answer's passage mentions", value=round(held, 3),
                          fired=bridge,
                          why=("the passage that holds the answer is not about the whole question: "
                               "the answer is reached through another passage") if bridge else ""))

    different = None
    if "toc" in available and not unsupported and not said_none and quick.answer is not None:
        reply = _ask_different(quick, answer.answer, ctx)
        calls.append(reply)
        different = probability_true(reply)
    fires_toc = different is not None and different >= settings.auto_different
    signals.append(Signal(name="P(the passages give different answers for different readings)",
                          value=None if different is None else round(different, 3), fired=fires_toc,
                          why="the passages give different answers for different readings of the question"
                          if fires_toc else ""))

    newer = ambiguity_cue(question) if settings.use_web else None
    newer = newer if newer and newer.startswith(_TIME_CUE) else None
    wants_web = settings.use_web and (unsupported or bool(newer))
    signals.append(Signal(name="needs newer facts than the collections", value=wants_web, fired=wants_web,
                          why=("the collections do not answer it" if unsupported else newer or "") if wants_web
                          else ""))

    deeper, reason = _choose(signals, wants_web, said_none or bridge, fires_toc, available)
    return CheckPayload(signals=signals, deeper=deeper, reason=reason), calls


def _choose(signals: list[Signal], web: bool, hop: bool, toc: bool, available: set[str]) -> tuple[str | None, str]:
    fired = {s.name: s.why for s in signals if s.fired}
    if web and "webagent" in available:
        return "webagent", f"{next(iter(fired.values()), 'web search is on')}: searching the web"
    if hop and "ircot" in available:
        return "ircot", f"{_first(fired, 'answer')}: reasoning step by step, retrieving at each step"
    if toc and "toc" in available:
        return "toc", f"{_first(fired, 'different')}: growing a tree of readings"
    return None, ""


def _first(fired: dict[str, str], word: str) -> str:
    return next((why for name, why in fired.items() if word in name and why), next(iter(fired.values()), ""))


def _answer_coverage(question: str, quick: OneAnswer, answer: AnswerPayload) -> float:
    """How much of the question the passage holding the answer mentions (the best such passage): the passages
    a long answer cites, or those containing a short answer. 0 when no passage holds it."""
    cited = [quick.passages[n - 1] for n in answer.citations if 0 < n <= len(quick.passages)]
    holding = cited
    if not holding:
        found = answer_passage(answer.answer, quick.passages)
        holding = [found] if found is not None else []
    return max((coverage(question, p) for p in holding), default=0.0)


def _ask_different(quick: OneAnswer, answer: str, ctx: RunContext):
    """One True/False call continuing the answer's conversation (its prompt is already read)."""
    probe = load_prompt("auto_different")
    messages = quick.prompt.messages(**quick.values) + [{"role": "assistant", "content": answer}]
    messages += probe.messages(question=quick.values["question"])
    return ctx.llm.chat(messages, probe.options(temperature=0.0, top_logprobs=5))


def run(question: str, ctx: RunContext, tracer: Tracer, available: set[str] | None = None) -> Iterator[StepEvent]:
    """Auto's run after its route event: the quick answer, the check, and a deeper method when the check asks
    for one."""
    available = set(METHODS) if available is None else available
    quick = yield from answer_once(question, ctx, tracer)
    if quick.answer is None or not ctx.settings.auto_deeper:
        return
    ctx.check_cancelled()
    step = tracer.new_id("c")
    yield tracer.event(CheckPayload(), "Check the quick answer", id=step, status=Status.RUNNING)
    payload, calls = check(question, quick, ctx, available)
    yield tracer.event(payload, "Check the quick answer", id=step, **llm_cost(*calls))
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

__all__ = ["AUTO", "QUICK_REASON", "auto_record", "check", "run"]
