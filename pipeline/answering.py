"""Steps shared by methods: retrieving with events, and streaming a cited answer token by token (checked against
instructions hidden in the passages, ``pipeline.untrusted``)."""

from __future__ import annotations

import re
from typing import Callable, Generator, Iterator

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import ChatResult, GenerationOptions, llm_cost
from pipeline.context import NO_SOURCES, RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.payloads import AnswerExtras, AnswerPayload, RetrievePayload, TokenPayload, WarningPayload, passage_refs
from pipeline.prompting import Prompt, load_prompt
from pipeline.support import abstention, best_support, cite_by_terms, says_unanswerable, unsourced_names
from pipeline.text import CITATION, asks_for_phrase, is_yes_no, normalize_answer
from pipeline.untrusted import WITHHELD, StreamGuard, check_answer, flag_message, injected_targets, scan

NO_ANSWER = "The model wrote no answer. Ask again, or choose another method."


def cited_numbers(text: str, n_passages: int) -> list[int]:
    """Passage numbers cited as [n] in ``text`` that exist, in order of first citation."""
    seen: list[int] = []
    for match in CITATION.finditer(text):
        number = int(match.group(1))
        if 1 <= number <= n_passages and number not in seen:
            seen.append(number)
    return seen


def _without_phantom_citations(text: str, n_passages: int) -> tuple[str, list[int]]:
    """``text`` without the citation marks of passages that do not exist (the model's "[2]" when it read one),
    and those numbers."""
    phantom: list[int] = []

    def keep(match: re.Match) -> str:
        number = int(match.group(1))
        if 1 <= number <= n_passages:
            return match.group(0)
        if number not in phantom:
            phantom.append(number)
        return ""

    cleaned = CITATION.sub(keep, text)
    return (re.sub(r" +([.,;:!?])", r"\1", re.sub(r"  +", " ", cleaned)) if phantom else text), phantom


def source_warnings(tracer: Tracer, warnings: list[str], parent_id: str | None) -> Iterator[StepEvent]:
    """One warning event per source that failed a retrieval (no source selected, the web offline): caveats, as
    they qualify the answer (``WarningPayload.caveat``)."""
    for warning in warnings:
        yield tracer.event(WarningPayload(message=warning, caveat=True), warning, parent_id=parent_id)


def empty_answer_warning(tracer: Tracer, message: str, step: str) -> StepEvent:
    """The warning shown under an answer step whose reply was empty; the answer then reads `NO_ANSWER`."""
    return tracer.event(WarningPayload(message=message), "Empty answer", parent_id=step)


def retrieve_step(
    ctx: RunContext, tracer: Tracer, query: str, *, parent_id: str | None = None, title: str | None = None,
    k: int | None = None, step_id: str | None = None,
) -> Generator[StepEvent, None, list[Document]]:
    """Yield the retrieval step's events (and a warning per failed source); return the passages
    (``passages = yield from retrieve_step(...)``)."""
    step = step_id or tracer.new_id("r")
    title = title or f"Retrieve: {query}"
    yield tracer.event(RetrievePayload(query=query), title, id=step, parent_id=parent_id, status=Status.RUNNING)
    result = ctx.retrieve(query, k)
    yield from source_warnings(tracer, result.warnings, step)
    yield tracer.event(RetrievePayload(query=query, passages=passage_refs(result.passages)), title, id=step,
                       parent_id=parent_id)
    return result.passages


def stream_answer(
    ctx: RunContext,
    tracer: Tracer,
    prompt: Prompt,
    values: dict[str, str],
    passages: list[Document],
    *,
    parent_id: str | None = None,
    title: str = "Answer",
    extras: AnswerExtras | None = None,
    finish: Callable[[str], str] | None = None,
    grounded: bool = True,
    support_passages: list[Document] | None = None,
    support_questions: list[str] | None = None,
    check_passages: list[Document] | None = None,
) -> Iterator[StepEvent]:
    """Generate the answer, yielding one ``answer_token`` event per piece (all with the answer step's id:
    consumers append their text) and a final ``answer`` event with the text, citations and cost. ``extras``
    is what the method adds to its answer (a chain's reasoning, a tree's interpretations); ``finish`` may complete
    the checked text before its citations are read (ToC adds the answers of interpretations the model left out).

    Passages with instruction-like text (left out of the prompt by ``format_passages``) get a warning; the
    answer loses the sentences that repeat what such text asked for (``untrusted.check_answer``), with a
    warning saying so; while such targets exist, tokens are passed on a sentence at a time (``StreamGuard``), so
    a dropped sentence is never shown. The answer a person gets is checked whole: the model's text, then that
    text as ``finish`` completed it, against the instructions of ``check_passages`` (default ``passages``; ToC
    adds the passages its readings came from, whose answers ``finish`` appends).

    A ``grounded`` answer (every method's but NoR's) is written only when one passage mentions enough of the
    question or is close to it in meaning (``pipeline.support``, ``Settings.min_support`` and
    ``support_similarity``; the latter needs ``ctx.embeddings``); otherwise the answer says that the
    sources do not answer the question and what they hold instead, without a model call. An answer in which the
    model itself says so is marked ``abstained`` too. The check reads ``support_passages`` when given (every
    passage the method retrieved, where the prompt holds only a chosen few), else ``passages``; the answer is
    supported when the question or one of ``support_questions`` (ToC's kept interpretations, restated in the
    passages' words) is.

    A short answer that is a bare yes or no to a question asking for a name, place, date or number is asked for
    once more (``Settings.ask_again_yes_no``), with a warning; a second yes or no gives no answer.

    A long answer in which the model cited no passage gets citations from the app where one or two passages
    mention most of a sentence's terms, with a warning saying so (``support.cite_by_terms``)."""
    step = tracer.new_id("a")
    yield tracer.event(AnswerPayload(), title, id=step, parent_id=parent_id, status=Status.RUNNING)
    if grounded and ctx.settings.min_support > 0:
        unsupported = _unsupported(ctx, values, passages, support_passages, support_questions, extras)
        if unsupported is not None:
            yield tracer.event(unsupported, title, id=step, parent_id=parent_id)
            return
    flagged = scan(passages)
    guard = None
    if flagged:
        message = flag_message(flagged)
        yield tracer.event(WarningPayload(message=message), "Instruction-like text in passages", parent_id=step)
        targets = injected_targets(passages, values.get("question", ""))
        guard = StreamGuard(targets) if targets else None
    result = yield from _generate(ctx, tracer, prompt, values, guard, step, title, parent_id)
    checked, question = passages if check_passages is None else check_passages, values.get("question", "")
    results, reply = [result], result.text.strip()
    if ctx.settings.answer_style == "short" and ctx.settings.ask_again_yes_no and is_yes_no(reply) \
            and asks_for_phrase(question):
        again, reply = yield from _ask_for_phrase(ctx, tracer, prompt, values, reply, step)
        results.append(again)
    check = check_answer(reply, checked, question)
    if finish is not None and check.text != WITHHELD:
        # What ``finish`` appends passes the same check: nothing reaches the answer after it.
        check = check.then(check_answer(finish(check.text), checked, question))
    text = check.text
    if check.changed:
        yield from _check_warnings(tracer, check, step)
    if not text.strip():
        yield empty_answer_warning(tracer, f"The model wrote no answer (it stopped: "
                                           f"{result.finish_reason or 'unknown reason'}).", step)
        text = NO_ANSWER
    text, phantom = _without_phantom_citations(text, len(passages))
    if phantom:
        marks, one = ", ".join(f"[{n}]" for n in phantom), len(phantom) == 1
        message = (f"The model cited {marks}, which {'is' if one else 'are'} no passage of this answer (it read "
                   f"{len(passages)}); {'that mark was' if one else 'those marks were'} removed.")
        yield tracer.event(WarningPayload(message=message, caveat=True), "Citation of no passage", parent_id=step)
    cited = cited_numbers(text, len(passages))
    if flagged and not cited and text != WITHHELD and ctx.settings.answer_style == "long":
        yield tracer.event(WarningPayload(message="The answer cites no passage, and some passages held "
                                                  "instruction-like text: check it against the passages."),
                           "Uncited answer", parent_id=step)
    abstained, names = says_unanswerable(text), []
    if not cited and passages and not abstained and text not in (NO_ANSWER, WITHHELD) \
            and ctx.settings.answer_style == "long":
        text, cited = yield from _cite_uncited(tracer, text, passages, step)
    if grounded and not abstained and text not in (NO_ANSWER, WITHHELD):
        names = unsourced_names(text, passages, values.get("question", ""))
        if names:
            yield _unsourced_warning(tracer, names, step)
    payload = AnswerPayload(answer=text, citations=cited, passages=passage_refs(passages),
                            finish_reason=results[-1].finish_reason, abstained=abstained, unsourced=names,
                            extras=extras)
    yield tracer.event(payload, title, id=step, parent_id=parent_id, **llm_cost(*results))


def _cite_uncited(tracer: Tracer, text: str, passages: list[Document],
                  step: str) -> Generator[StepEvent, None, tuple[str, list[int]]]:
    """An answer the model wrote without citations, cited where one or two passages hold most of a sentence's
    terms (``support.cite_by_terms``), with a warning saying that the markers are the app's, not the model's."""
    cited_text = cite_by_terms(text, passages)
    cited = cited_numbers(cited_text, len(passages))
    if cited:
        yield tracer.event(WarningPayload(message="The model cited no passage. The app added the [n] marks where one "
                                                  "or two passages mention most of a sentence's names and terms: "
                                                  "check the answer against them."),
                           "Citations added", parent_id=step)
    return (cited_text, cited) if cited else (text, [])


def _ask_for_phrase(ctx: RunContext, tracer: Tracer, prompt: Prompt, values: dict[str, str], said: str,
                    step: str) -> Generator[StepEvent, None, tuple[ChatResult, str]]:
    """A bare yes or no (``said``) to a question that asks for a name, place, date or number, asked for once more
    in the same chat (``prompts/short_answer_again.yaml`` tells the model why), with a warning saying so; returns
    the second reply and the answer: that reply, or an abstention when it is a yes or no again or says that no
    passage states the answer."""
    ctx.check_cancelled()
    follow = load_prompt("short_answer_again")
    messages = [*prompt.messages(**values), {"role": "assistant", "content": said}, *follow.messages(said=said)]
    again = ctx.llm.chat(messages, GenerationOptions(max_tokens=ctx.settings.answer_max_tokens or prompt.max_tokens,
                                                     temperature=ctx.settings.temperature))
    reply = again.text.strip()
    first = f"The model answered “{said}”, which cannot answer a question asking for a name, place, date or number"
    if not reply or is_yes_no(reply) or says_unanswerable(reply) or normalize_answer(reply) in _NOT_STATED:
        answer = f"The sources read do not state the answer (the model replied “{said}”, which does not answer it)."
        message = f"{first}; asked again, it gave no such answer, so none is given."
    else:
        answer, message = reply, f"{first}: asked again, it answered “{reply}”."
    yield tracer.event(WarningPayload(message=message), "A yes or no to a question asking for a name",
                       parent_id=step)
    return again, answer


_NOT_STATED = ("not stated", "not found")


def _unsupported(ctx: RunContext, values: dict[str, str], passages: list[Document],
                 support_passages: list[Document] | None, support_questions: list[str] | None,
                 extras: AnswerExtras | None) -> AnswerPayload | None:
    """The abstention, written without the model, when no passage supports the question; None otherwise."""
    checked = passages if support_passages is None else support_passages
    support = best_support([values.get("question", ""), *(support_questions or [])], checked,
                           ctx.settings.min_support, ctx.embeddings, ctx.settings.support_similarity)
    if support.supported:
        return None
    # With nothing to search, say so rather than that the (absent) sources lack the answer.
    text = NO_SOURCES if ctx.retriever is None and not passages else abstention(support, passages)
    return AnswerPayload(answer=text, citations=cited_numbers(text, len(passages)), passages=passage_refs(passages),
                         abstained=True, support=support.coverage, extras=extras)


def _generate(ctx: RunContext, tracer: Tracer, prompt: Prompt, values: dict[str, str], guard: StreamGuard | None,
              step: str, title: str, parent_id: str | None) -> Generator[StepEvent, None, ChatResult]:
    """Stream the model's answer as ``answer_token`` events (through ``guard`` when injected instructions have
    targets); return the model's result."""
    options = GenerationOptions(
        max_tokens=ctx.settings.answer_max_tokens or prompt.max_tokens, temperature=ctx.settings.temperature
    )
    result: ChatResult | None = None
    for piece in ctx.llm.stream(prompt.messages(**values), options):
        ctx.check_cancelled()
        if isinstance(piece, ChatResult):
            result = piece
            piece = guard.flush() if guard else ""
        elif guard:
            piece = guard.feed(piece)
        if piece:
            yield tracer.event(TokenPayload(text=piece), title, id=step, parent_id=parent_id,
                               status=Status.RUNNING)
    if result is None:
        raise LLMCallError(f"{ctx.llm.name} ended without a result.")
    return result


def _unsourced_warning(tracer: Tracer, names: list[str], step: str) -> StepEvent:
    listed = ", ".join(f"“{name}”" for name in names[:6])
    return tracer.event(WarningPayload(message=f"The answer names {listed}, which no passage it was given "
                                               "mentions: that part may come from the model's own "
                                               "knowledge, not from your sources."),
                        "Names not in the sources", parent_id=step)


def checked_text(tracer: Tracer, text: str, passages: list[Document], question: str,
                 step: str) -> Generator[StepEvent, None, str]:
    """``text``, an answer a method wrote without ``stream_answer`` (a chain's own conclusion), after the same
    check against the instructions in ``passages``; a warning event for whatever it removed."""
    check = check_answer(text, passages, question)
    if check.changed:
        yield from _check_warnings(tracer, check, step)
    return check.text


def _check_warnings(tracer: Tracer, check, step: str) -> Iterator[StepEvent]:
    if check.dropped:
        echoed = ", ".join(f"“{t}”" for t in check.echoed)
        count = f"{len(check.dropped)} sentence{'s' if len(check.dropped) > 1 else ''}"
        yield tracer.event(WarningPayload(message=f"Removed from the answer: {count} repeating what an instruction "
                                                  f"inside a passage asked for ({echoed})."),
                           "Answer checked against injected instructions", parent_id=step)
    if check.sanitised:
        yield tracer.event(WarningPayload(message="Control tokens, scripts or active links were removed from the "
                                                  "answer."), "Answer sanitised", parent_id=step)
