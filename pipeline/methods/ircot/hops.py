"""IRCoT hop by hop: the question is planned as simple sub-questions (Self-Ask, Press et al. 2022; MuSiQue's
decompositions), each asked with its own retrieval and answered from one passage under a grammar. An answer is
used only when the passage it names holds it (the bridge entity is checked, not trusted), and is put into the
next sub-question in place of ``#k``. Comparisons are computed in code from the two values read.

Events: the plan; one ``subquestion`` per hop, the child of the hop whose answer it uses (or of the plan), with
its passages and the answer and passage found; a ``compare`` step when the plan compares; then the answer. A
plan that cannot be followed falls back to the sentence chain; a hop with no answer in its passages ends the
chain with "not found", and the answer is then read from what was collected, with a warning that says so (or
not written at all: ``hop_fallback``).

The web agent's ``hops`` mode (``pipeline.methods.webagent.hops_mode``) follows the same plan, reads its answers
from web pages instead of retrieved passages, and shares the rest from here: the plan call (``write_plan``),
the check that a source holds an answer (``holds``), the reply's reading (``parse_reply``), the conclusion of the
hops (``conclusion``: the comparison computed, or the answer) and the answer (``answer_from_hops``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterator

from langchain_core.documents import Document

from models.llm import ChatResult, llm_cost
from pipeline.answering import NO_ANSWER, checked_text, source_warnings, stream_answer
from pipeline.context import RunContext
from pipeline.countries import people_of
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods.ircot.compare import Outcome, compare, yes_no
from pipeline.methods.ircot.plan import (Plan, PlanError, about, both_plan, chain_plan, clause_plan, kin_plan,
                                         misfit, option_of, options, plan_for, refs_of, reordered_plan, restates,
                                         substitute)
from pipeline.payloads import (AnswerPayload, ChainExtras, ComparedValue, ComparePayload, PassageRef,
                               PlanPayload, QAPair, SubQuestionPayload, WarningPayload, WHOLE_COLLECTION,
                               passage_refs)
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.retrieval import NextRetriever, PoolRetriever, deduplicate
from pipeline.text import asks_for_phrase, normalize_answer, normalize_unaccented
from pipeline.untrusted import neutralise

if TYPE_CHECKING:
    from pipeline.methods.ircot.chain import IRCoTSettings

ODDS_ALTERNATIVES = 10  # first-token alternatives asked for when answer_odds reads them
_REPLY = re.compile(r"^\s*\[(\d+)\]\s*(.+?)\s*$", re.DOTALL)
_YES_NO_QUESTION = re.compile(r"^(is|are|was|were|do|does|did|has|have|had|can|could|will|would)\b", re.I)
# "Who is the father of X?", "Who was the director of X?": the one asked about is X, never the answer.
_WHO_OF = re.compile(r"^\s*who\s+(?:is|was|were|are)\s+the\s+(?:\w+\s+){1,2}?of\s+(.+?)\s*\??\s*$", re.I)
_PARENTHESIS = re.compile(r"\s*\([^)]*\)")
# The kind of answer a simple question asks for, and what an answer of that kind holds: "When did X die?" is
# answered by something with a year, a month or an era in it, "How many ...?" by a number, in digits or words.
_WHEN = re.compile(r"^\s*(?:when\b|(?:in|on|from|since|until|by)?\s*(?:what|which)\s+(?:year|date|day|month|"
                   r"century|decade)\b)", re.I)
_DATE_LIKE = re.compile(r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|century|"
                        r"centuries|decade|\b(?:bc|bce|ad|ce)\b|\bera\b|\bage\b|dynasty|period|reign|war\b",
                        re.I)
_WHERE = re.compile(r"^\s*(?:where\b|(?:in|from|at|to)?\s*(?:what|which)\s+(?:city|town|village|country|nation|state|"
                    r"county|province|region|place|continent)\b)", re.I)
# A date and nothing else, word by word: "9 February 1933", "January 15, 1892", "1872", "c. 1650 AD".
_DATE_WORD = re.compile(r"\d+(?:st|nd|rd|th|s)?|circa|c|ca|ad|bc|bce|ce|early|mid|late|"
                        r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*", re.I)
_HOW_MANY = re.compile(r"^\s*how\s+(?:many|much)\b", re.I)
_NUMBER_LIKE = re.compile(r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                          r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|"
                          r"sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|none|no|several|"
                          r"single|twice|once)\b", re.I)


class Hop:
    """A hop's outcome: the answer, the passage that holds it, and every passage retrieved for it."""

    def __init__(self, question: str, passages: list[Document]):
        self.question, self.passages = question, passages
        self.answer: str | None = None
        self.source: int | None = None  # 1-based, among ``passages``
        self.note = ""
        self.unfit = ""  # why the answer the model gave was not used, when it cannot answer the question
        self.said: str | None = None  # the country the model named, when the passage names it by its people
        self.inferred = False  # the answer was asked for after "not found": no passage states it outright

    @property
    def bridge(self) -> str | None:
        """The answer as it goes into a later sub-question: the country the model named rather than its people's
        name that the passage writes ("the first president of Russia", not "of Russian")."""
        return self.said or self.answer

    @property
    def evidence(self) -> Document | None:
        return self.passages[self.source - 1] if self.source else None

    def ref(self) -> PassageRef | None:
        """The passage that holds the answer, numbered as the hop's step shows it."""
        return PassageRef.of(self.evidence, self.source) if self.evidence is not None else None


def write_plan(question: str, ctx: RunContext, instead: str, *, ask_again: bool = False,
               clause: bool = False, chain: bool = False, reorder: bool = False,
               both: bool = False, example: bool = False) -> tuple[Plan | None, str, dict]:
    """The plan the model writes for ``question`` (``ircot_plan``, under its grammar): the plan and the call's cost,
    or None and why it cannot be followed (what is done ``instead``, and what the model wrote). A plan whose first
    sub-question restates the question (``restates``) is replaced, with ``clause``, by the plan the wording of a
    question with one relative clause gives (``clause_plan``), or, with ``chain``, by that of a chain of relations
    (``chain_plan``, also used for a plan that cannot be followed); else, with ``ask_again``, asked for once more,
    the model told so (``example``: shown a worked plan of a nested question too), and the new plan used when it
    does not restate; one that still restates is, with ``reorder``, put in order when a later sub-question asks for
    the relation inside the question (``reordered_plan``). A relative two steps away (``kin_plan``) and, with
    ``both``, whether both of two things are so (``both_plan``) are planned from the wording, with no model call."""
    fixed = kin_plan(question) or (both_plan(question) if both else None)
    if fixed is not None:  # no model call: the wording says it all
        return fixed, "", {}
    prompt = load_prompt("ircot_plan")
    messages = prompt.messages(question=question)
    result = ctx.llm.chat(messages, prompt.options(ctx.settings.temperature))
    try:
        plan = plan_for(result.text, question)
    except PlanError as exc:
        wrote = " / ".join(line.strip() for line in result.text.splitlines() if line.strip())[:300]
        if chain and (worded := chain_plan(question)) is not None:
            return replace(worded, note=_joined(UNUSABLE_WORDED.format(exc), worded.note)), "", llm_cost(result)
        return None, (f"The plan cannot be followed ({exc}): {instead} "
                      f"The model wrote: {wrote or '(nothing)'}"), llm_cost(result)
    if restates(plan, question):
        worded = (clause_plan(question) if clause else None) or (chain_plan(question) if chain else None)
        if worded is not None:
            return replace(worded, note=_joined(RESTATED_WORDED.format(plan.questions[0]), worded.note)), "", \
                llm_cost(result)
    if not (ask_again and restates(plan, question)):
        return plan, "", llm_cost(result)
    ctx.check_cancelled()
    request = prompt.texts["restated_example" if example else "restated"].format(question=question)
    again = ctx.llm.chat(messages + [{"role": "assistant", "content": result.text},
                                     {"role": "user", "content": request}],
                         prompt.options(ctx.settings.temperature))
    try:
        second = plan_for(again.text, question)
    except PlanError:
        second = None
    if second is None or restates(second, question) or not about(second, question):
        ordered = reordered_plan(plan, question) if reorder else None
        if ordered is None and reorder and second is not None:
            ordered = reordered_plan(second, question)
        if ordered is not None:
            return replace(ordered, note=_joined(RESTATED_WORDED.format(plan.questions[0]), ordered.note)), "", \
                llm_cost(result, again)
        return replace(plan, note=_joined(plan.note, RESTATED_KEPT)), "", llm_cost(result, again)
    return replace(second, note=_joined(second.note, RESTATED_NOTE.format(plan.questions[0]))), "", \
        llm_cost(result, again)


RESTATED_NOTE = "The model's first plan began with the whole question (“{}”); asked again, it wrote this one."
RESTATED_WORDED = "The model's plan began with the whole question (“{}”)."
UNUSABLE_WORDED = "The model's plan cannot be followed ({})."
RESTATED_KEPT = "The plan begins with the whole question; asked again, the model wrote no better one."


def _joined(*notes: str) -> str:
    return " ".join(note for note in notes if note)


def run_hops(question: str, ctx: RunContext, tracer: Tracer, cfg: "IRCoTSettings",
             why: str = "") -> Iterator[StepEvent]:
    """Plan, answer each sub-question from its own passages, compare in code where the plan says so, and
    answer; fall back to the sentence chain when the plan is unusable. ``why`` (shown with the plan) says why
    this mode was chosen, when it was chosen for the question."""
    from pipeline.methods.ircot.chain import run_sentences

    plan_id = tracer.new_id("p")
    yield tracer.event(PlanPayload(note=why), "Plan", id=plan_id, status=Status.RUNNING)
    plan, error, cost = write_plan(question, ctx, "reasoning one sentence at a time instead.",
                                   ask_again=cfg.ask_again_restated, clause=cfg.clause_plan,
                                   chain=cfg.chain_plan, reorder=cfg.reorder_plan, both=cfg.both_plan,
                                   example=cfg.restated_example)
    if plan is None:
        yield tracer.event(PlanPayload(error=error, note=why), "Plan: unusable", id=plan_id, **cost)
        yield from run_sentences(question, ctx, tracer, cfg)
        return
    pool_note = POOL_NOTE.format(cfg.hop_pool) if pooled(ctx, cfg) else ""
    yield plan_event(tracer, plan, plan_id, _joined(why, pool_note), cost)

    yield from continue_hops(question, ctx, tracer, cfg, plan, plan_id, {}, {}, [])


POOL_NOTE = ("Each sub-question is asked first of the {} passages retrieved for the whole question, then, when they "
             "do not answer it, of the whole collection.")


def pooled(ctx: RunContext, cfg: "IRCoTSettings") -> bool:
    """Whether the sub-questions are asked first of the question's own passages (``IRCoTSettings.hop_pool``)."""
    return bool(cfg.hop_pool) and ctx.retriever is not None and ctx.reranker is not None


def continue_hops(question: str, ctx: RunContext, tracer: Tracer, cfg: "IRCoTSettings", plan: Plan, plan_id: str,
                  hops: dict[int, Hop], ids: dict[int, str], pool: list[Document]) -> Iterator[StepEvent]:
    """The hops of ``plan`` after those done (``hops`` and their step ``ids`` by number, the passages ``pool`` they
    collected), then the comparison and the answer. A run resumed with a hop answered by a person
    (``pipeline.resume``) continues here with that hop among those done."""
    first, wider, wider_of = ctx, None, ""
    if pooled(ctx, cfg):
        retrieved = ctx.retrieve(question, cfg.hop_pool)
        yield from source_warnings(tracer, retrieved.warnings, plan_id)
        first = replace(ctx, retriever=PoolRetriever(retrieved.passages, ctx.reranker))
        wider, wider_of = ctx, WHOLE_COLLECTION
    elif cfg.hop_next and ctx.retriever is not None:
        wider = replace(ctx, retriever=NextRetriever(ctx.retriever, cfg.k))
        wider_of = f"the next {cfg.k} passage{'s' * (cfg.k > 1)} its retrieval ranks"
    missing = yield from ask_hops(first, tracer, cfg, plan, plan_id, hops, ids, pool, wider, wider_of)
    yield from conclude_hops(ctx, tracer, cfg, question, plan, hops, ids, pool, missing)


def ask_hops(ctx: RunContext, tracer: Tracer, cfg: "IRCoTSettings", plan: Plan, plan_id: str,
             hops: dict[int, Hop], ids: dict[int, str], pool: list[Document], wider: RunContext | None = None,
             wider_of: str = WHOLE_COLLECTION):
    """Ask the sub-questions of ``plan`` not yet in ``hops``, each with its own retrieval (``ctx.retrieve``), an
    earlier answer put into a later sub-question, until one finds no answer; fills ``hops``, their step ``ids``
    and the passages ``pool``. A sub-question that finds no answer is asked once more with ``wider``'s retrieval
    when given, ``wider_of`` saying what that is (KGP: the whole collection after the walked passages; IRCoT's
    ``hop_pool``: the whole collection after the question's passages; ``hop_next``: the next passages its retrieval
    ranks). Yields the hops' events and returns why the chain
    stops short, or None."""
    missing: str | None = None
    if any(hop.answer is None for hop in hops.values()):
        missing = f"No passage answers \"{hops[max(hops)].question}\"."
    for i, planned in enumerate(plan.questions, 1):
        if i in hops or missing is not None:
            continue
        ctx.check_cancelled()
        refs = refs_of(planned)
        ids[i] = tracer.new_id("q")
        given = tuple(hops[k].bridge for k in refs)
        asked = substitute(planned, {k: hops[k].bridge for k in refs})
        hop = yield from _ask(ctx, tracer, cfg, i, planned, asked, ids[i], ids[max(refs)] if refs else plan_id, given)
        pool += deduplicate(hop.passages, against=pool)
        if hop.answer is None and wider is not None:
            ctx.check_cancelled()
            first, ids[i] = ids[i], tracer.new_id("q")
            hop = yield from _ask(wider, tracer, cfg, i, planned, asked, ids[i], first, given, again=wider_of)
            pool += deduplicate(hop.passages, against=pool)
        hops[i] = hop
        if hop.answer is None:
            missing = f"No passage answers \"{hop.question}\"."
    return missing


def conclude_hops(ctx: RunContext, tracer: Tracer, cfg: "IRCoTSettings", question: str, plan: Plan,
                  hops: dict[int, Hop], ids: dict[int, str], pool: list[Document],
                  missing: str | None) -> Iterator[StepEvent]:
    """The comparison step (when the plan compares) and the answer, from the hops asked."""
    comparison, answer, missing = conclusion(question, plan, hops, missing)
    last = ids[max(hops)]
    if comparison is not None:
        step = tracer.new_id("c")
        yield tracer.event(comparison, compare_title(comparison), id=step, parent_id=last)
        last = step
    yield from answer_from_hops(ctx, tracer, question, plan, hops, pool, answer, missing, last,
                                fallback=cfg.hop_fallback, reader_passages=cfg.reader_passages)


def plan_event(tracer: Tracer, plan: Plan, plan_id: str, why: str, cost: dict,
               parent: str | None = None) -> StepEvent:
    """The plan step, done: its sub-questions, its final line, and why it was chosen or how it was changed."""
    note = " ".join(text for text in (why, plan.note) if text)
    return tracer.event(PlanPayload(questions=list(plan.questions), final=plan.final_line(), note=note),
                        f"Plan: {len(plan.questions)} sub-question{'s' * (len(plan.questions) > 1)}", id=plan_id,
                        parent_id=parent, **cost)


def _ask(ctx: RunContext, tracer: Tracer, cfg: "IRCoTSettings", step: int, planned: str, asked: str,
         hop_id: str, parent: str, given: tuple[str, ...] = (), again: str = ""):
    """One hop's events; returns its ``Hop``. ``given`` holds the earlier answers put into ``asked``; an answer
    that does not fit the sub-question (``unfit``) is asked for once more (``ask_again_unfit``), the model told
    why. ``again``: the hop is asked a second time, after the first found nothing, of what it names ("the whole
    collection")."""
    payload = SubQuestionPayload(step=step, planned=planned, question=asked, again=bool(again), again_of=again)
    title = f"Hop {step}{payload.again_title()}: {asked}"
    yield tracer.event(payload, title, id=hop_id, parent_id=parent, status=Status.RUNNING)
    retrieved = ctx.retrieve(asked, cfg.k)
    yield from source_warnings(tracer, retrieved.warnings, hop_id)
    hop = Hop(asked, retrieved.passages)
    cost = {}
    if hop.passages:
        prompt = load_prompt("ircot_hop_answer")
        messages = prompt.messages(question=asked, passages=format_passages(hop.passages))
        result = ctx.llm.chat(messages, prompt.options(ctx.settings.temperature,
                                                       top_logprobs=ODDS_ALTERNATIVES * (cfg.answer_odds > 0)))
        cost = llm_cost(result)
        checked = given if cfg.ask_again_unfit else None
        read_answer(hop, result.text, checked, named_only=cfg.named_only,
                    checked_yes=cfg.checked_yes)
        if hop.unfit and cfg.ask_again_unfit:
            ctx.check_cancelled()
            first = hop.note
            retry = ctx.llm.chat(messages + [{"role": "assistant", "content": result.text},
                                             {"role": "user", "content": prompt.texts["unfit"].format(
                                                 why=hop.unfit, question=asked)}],
                                 prompt.options(ctx.settings.temperature))
            cost = llm_cost(result, retry)
            read_answer(hop, retry.text, checked, named_only=cfg.named_only,
                        checked_yes=cfg.checked_yes)
            hop.note = _joined(first, "Asked again:", hop.note or f"\"{hop.answer}\".")
        elif cfg.focus_hop and hop.answer is None and hop.note == NOT_FOUND_NOTE and \
                0 < len(subject := about_subject(asked, hop.passages)) < len(hop.passages):
            ctx.check_cancelled()
            focused = Hop(asked, [hop.passages[n - 1] for n in subject])
            retry = ctx.llm.chat(prompt.messages(question=asked, passages=format_passages(focused.passages)),
                                 prompt.options(ctx.settings.temperature))
            cost = llm_cost(result, retry)
            read_answer(focused, retry.text, checked, named_only=cfg.named_only, checked_yes=cfg.checked_yes)
            take_focused(hop, focused, subject)
        elif cfg.answer_odds > 0 and hop.answer is None and hop.note == NOT_FOUND_NOTE and \
                (odds := answer_odds(result)) >= cfg.answer_odds:
            ctx.check_cancelled()
            forced = replace(prompt.options(ctx.settings.temperature), grammar=load_prompt("ircot_hop_infer").grammar)
            retry = ctx.llm.chat(messages, forced)
            cost = llm_cost(result, retry)
            read_answer(hop, retry.text, checked, named_only=cfg.named_only, checked_yes=cfg.checked_yes)
            hop.note = _joined(f"The model replied \"not found\" but gave answering odds of {odds:.2f}, at least "
                               f"{cfg.answer_odds:.2f}: asked for its answer.", hop.note)
        elif cfg.infer_hop and hop.answer is None and hop.note == NOT_FOUND_NOTE:
            ctx.check_cancelled()
            infer = load_prompt("ircot_hop_infer")
            retry = ctx.llm.chat(infer.messages(question=asked, passages=format_passages(hop.passages)),
                                 infer.options(ctx.settings.temperature))
            cost = llm_cost(result, retry)
            read_answer(hop, retry.text, checked, named_only=cfg.named_only,
                        checked_yes=cfg.checked_yes)
            hop.inferred = hop.answer is not None
            hop.note = _joined(NOT_FOUND_NOTE, INFERRED_NOTE if hop.inferred else "Asked for the likeliest answer:",
                               hop.note)
    else:
        hop.note = "No passage was retrieved for it."
    if again:
        hop.note = _joined(f"Its first passages held no answer: asked again, of {again}.", hop.note)
    done = payload.model_copy(update=dict(answer=hop.answer or "", source=hop.source, found=hop.answer is not None,
                                          passages=passage_refs(hop.passages), note=hop.note, said=hop.said or "",
                                          inferred=hop.inferred))
    said = f"{hop.answer} (inferred)" if hop.inferred else hop.answer or "not found"
    yield tracer.event(done, f"{title} → {said}", id=hop_id, parent_id=parent, **cost)
    return hop


def about_subject(question: str, passages: list[Document]) -> list[int]:
    """The numbers (from 1) of the ``passages`` whose title, a parenthesis aside, ``question`` names as whole words
    ("Max Mack" in "In which city was Max Mack born?"; "Max Brown (English actor)" would need "Max Brown"): the
    passages about the one the question asks about. Case, punctuation and accents aside."""
    asked = f" {normalize_unaccented(question)} "
    numbers = []
    for n, doc in enumerate(passages, 1):
        title = normalize_unaccented(_PARENTHESIS.sub("", str(doc.metadata.get("title") or "")))
        if title and f" {title} " in asked:
            numbers.append(n)
    return numbers


def take_focused(hop: Hop, focused: Hop, numbers: list[int]) -> None:
    """Put into ``hop`` (not found among all its passages) the reading of ``focused``, the same sub-question asked
    again of its passages ``numbers`` alone, the source renumbered as ``hop`` shows its passages."""
    which = ", ".join(f"[{n}]" for n in numbers)
    asked = (f"Not found among its {len(hop.passages)} passages; asked again of {which} alone, the "
             f"passage{'s' * (len(numbers) > 1)} whose title it names:")
    if focused.answer is None:
        hop.note = f"{NOT_FOUND_NOTE} {asked} {focused.note or NOT_FOUND_NOTE}"
        return
    hop.answer, hop.said, hop.source = focused.answer, focused.said, numbers[focused.source - 1]
    hop.note = f"{asked} found in [{hop.source}]."


def answer_odds(result: ChatResult) -> float:
    """How much the hop-answer call's first token leaned to answering: P("[") / (P("[") + P("not")), from its
    alternatives (0 when none came)."""
    answer = result.first_token_probability(("[",)) or 0.0
    refusal = result.first_token_probability(("not",)) or 0.0
    return answer / (answer + refusal) if answer + refusal else 0.0


def parse_reply(reply: str, noun: str = "passage") -> tuple[int, str] | str:
    """The number and the answer in a hop's reply ("[2] William Clemens"), or why it gives none ("not found",
    no number, no answer), the number being that of a ``noun``."""
    match = _REPLY.match(reply.strip().splitlines()[0] if reply.strip() else "")
    if not match:
        return NOT_FOUND_NOTE.replace("passage", noun) if "not found" in reply.lower() else \
            f"The reply names no {noun}: {reply.strip()[:80]!r}."
    named, answer = int(match.group(1)), match.group(2).strip(" .\"'*")
    return (named, answer) if answer else "The reply gives no answer."


NOT_FOUND_NOTE = "The model found no passage stating the answer."
INFERRED_NOTE = ("Asked for the likeliest answer, it named this one: the passage holds it but does not state it as "
                 "the answer, so it is inferred and may be wrong.")


def is_judgement(answer: str) -> bool:
    """A one-word yes or no: a judgement about a source, not a phrase copied from it."""
    return yes_no(answer) is not None and len(answer.split()) == 1


def read_answer(hop: Hop, reply: str, given: tuple[str, ...] | None = None, *,
                named_only: bool = False, checked_yes: bool = False) -> None:
    """Fill ``hop``'s answer and source from the model's reply ("[2] William Clemens" or "not found"), keeping
    the answer only when a retrieved passage holds it: the one named, or else another (said in the note). A
    yes / no is a judgement, not a copy: it is kept with the passage named. An answer that cannot answer the
    question (``unfit``: an earlier answer put into it, ``given``, or not the kind of thing asked for) is not
    used, and ``hop.unfit`` says why; with ``given`` None only the one a "Who is the <relation> of X?" question
    asks about is refused (``is_subject``). With ``named_only`` an answer held only by passages other than
    the one named is not used. With ``checked_yes`` a "yes" stands only when a passage holds each word of the
    question (``check_yes``); when none does, the hop reads "no"."""
    hop.answer = hop.source = hop.said = None
    hop.note = hop.unfit = ""
    parsed = parse_reply(reply)
    if isinstance(parsed, str):
        hop.note = parsed
        return
    named, answer = parsed
    in_range = 1 <= named <= len(hop.passages)
    if is_judgement(answer):
        if not in_range:
            hop.note = f"The reply names passage [{named}], which was not retrieved."
            return
        if given is not None and (why := unfit(hop.question, answer)):
            hop.unfit, hop.note = why, f"{why}: not used."
            return
        hop.answer, hop.source = answer.lower(), named
        if checked_yes and hop.answer == "yes" and asks_yes_no(hop.question):
            check_yes(hop)
        return
    if instruction_like(answer):
        hop.note = INSTRUCTION_NOTE.format(answer[:120])
        return
    why = unfit(hop.question, answer, given) if given is not None else \
        (f"\"{answer}\" is the one the question asks about, not the answer" if is_subject(hop.question, answer) else "")
    if why:
        hop.unfit, hop.note = why, f"{why}: not used."
        return
    # A people's name ("Finnish") is a common word: it counts only in the passage the model named.
    written = as_written(answer, lambda text: in_range and holds(hop.passages[named - 1], text))
    holders = [n for n, doc in enumerate(hop.passages, 1) if holds(doc, written)]
    if not holders:
        hop.note = f"\"{answer}\" is in no retrieved passage: not used."
        return
    if named_only and named not in holders:
        hop.note = (f"\"{answer}\" is not in passage [{named}], which the model named (it is in [{holders[0]}]): "
                    "not used.")
        return
    hop.answer = written
    hop.said = answer if written != answer else None
    hop.source = named if named in holders else holders[0]
    notes = []
    if written != answer:
        notes.append(f"The model wrote \"{answer}\"; the passages name its people, \"{written}\".")
    if hop.source != named:
        notes.append(f"The model named passage [{named}]; the answer is in [{hop.source}].")
    hop.note = " ".join(notes)


def asks_yes_no(question: str) -> bool:
    """Whether ``question`` is worded as a yes / no question (its first word an auxiliary: "Is ...", "Did ...")."""
    return _YES_NO_QUESTION.match(question.strip()) is not None


def check_yes(hop: Hop) -> None:
    """A "yes" to ``hop``'s yes / no question stands with the passage named when it holds each of the question's
    words (``unsaid``), else with the first other passage that does (said in the note); when none does, the hop
    reads "no"."""
    missing = unsaid(hop.question, hop.passages[hop.source - 1])
    if not missing:
        return
    other = next((n for n, doc in enumerate(hop.passages, 1) if not unsaid(hop.question, doc)), None)
    if other is not None:
        hop.source, hop.note = other, f"The model named passage [{hop.source}]; [{other}] holds each word asked."
        return
    hop.answer = "no"
    hop.note = (f"The model said yes, but passage [{hop.source}] does not hold "
                f"{', '.join(repr(word) for word in missing)}, nor does any other hold each word asked: read as no.")


# Words a yes / no question holds that say nothing of what is asked: its verb, articles, prepositions, and nouns
# that only frame the predicate ("a type of shrub").
_FRAME_WORDS = frozenset("""is are was were do does did has have had can could will would be been being a an the of in
on at to for from by with and or as than more less most least both either any all some its it their his her this that
type types kind kinds sort sorts form forms one ones member members part located situated based headquartered""".split())


def unsaid(question: str, doc: Document) -> list[str]:
    """The words of the yes / no ``question`` that ``doc`` (title and text) does not hold: each word that is not a
    frame word (``_FRAME_WORDS``), one of five letters or more matched by its first five ("genuses" by "genus",
    "Argentinian" by "Argentine"), a shorter one whole."""
    text = _as_read(doc).split()
    whole, stems = set(text), {word[:5] for word in text if len(word) >= 5}
    words = [word for word in normalize_answer(question).split() if word not in _FRAME_WORDS]
    return [word for word in words if (word[:5] not in stems if len(word) >= 5 else word not in whole)]


def unfit(question: str, answer: str, given: tuple[str, ...] = ()) -> str:
    """Why ``answer`` cannot answer the simple ``question``, or "" when it may: it is the one the question asks
    about (``is_subject``, or an earlier answer put into the question, ``given``: "Who wrote Turn Me On by Norah
    Jones?" is not answered by "Norah Jones"), or a "when" question is answered with no date, a "how many" one
    with no number, a "where" one with a date alone ("Where was William Clemens born?": "9 February 1933"), or
    one asking for a name, place, date or number with a yes or no (``asks_for_phrase``).
    Only whole names count: a namesake ("Alexandre Dumas" for the father of "Alexandre Dumas fils") is an answer."""
    if is_judgement(answer) and asks_for_phrase(question):
        return f"\"{answer}\" is a yes or no, and the question asks for a name, place, date or number"
    said = normalize_answer(_PARENTHESIS.sub("", answer))
    if is_subject(question, answer) or any(said == normalize_answer(_PARENTHESIS.sub("", g)) for g in given if g):
        return f"\"{answer}\" is the one the question asks about, not the answer"
    if _WHEN.match(question) and not _DATE_LIKE.search(answer):
        return f"\"{answer}\" is not a date, which the question asks for"
    if _HOW_MANY.match(question) and not _NUMBER_LIKE.search(answer):
        return f"\"{answer}\" is not a number, which the question asks for"
    if _WHERE.match(question) and _only_date(answer):
        return f"\"{answer}\" is a date, not the place the question asks for"
    return ""


def _only_date(answer: str) -> bool:
    """Whether ``answer`` is a date and nothing else: every word a day, month, year or era word, one with a digit."""
    words = [w for w in re.split(r"[\s,.\-–/]+", answer) if w]
    return any(w[0].isdigit() for w in words) and all(_DATE_WORD.fullmatch(w) for w in words)


def is_subject(question: str, answer: str) -> bool:
    """Whether ``answer`` names the one a "Who is the <relation> of X?" question asks about (X, a date in
    parentheses aside): someone is not their own father, nor a film its own director. Only the whole name counts,
    so a namesake ("Alexandre Dumas" for the father of "Alexandre Dumas fils") is an answer."""
    asked = _WHO_OF.match(question)
    if not asked:
        return False
    subject = normalize_answer(_PARENTHESIS.sub("", asked.group(1)))
    return bool(subject) and normalize_answer(_PARENTHESIS.sub("", answer)) == subject


def as_written(answer: str, held: Callable[[str], bool]) -> str:
    """``answer`` as the source writes it: a country that the source names only by its people ("France" where the
    passage says "a French film director") becomes the people's name, which is then the phrase copied; any other
    answer is left as it is. ``held`` says whether the source holds a phrase."""
    people = people_of(answer)
    return people if people and not held(answer) and held(people) else answer


def holds(doc: Document, answer: str) -> bool:
    """Whether ``doc`` (its title or text, as a prompt shows it) holds ``answer``: its normalised words in a row,
    or each of them somewhere in the passage ("Stevenson, Adlai" for "Adlai Stevenson").

    A hop's answer goes into the next hop's question, so it must be data: text that only an instruction of the
    passage holds (removed from the prompt's copy by ``pipeline.untrusted.neutralise``) holds nothing, and an
    answer that reads like an instruction itself (``instruction_like``) is held by no passage."""
    if instruction_like(answer):
        return False
    needle = normalize_answer(answer)
    text = _as_read(doc)
    return bool(needle) and (f" {needle} " in f" {text} " or set(needle.split()) <= set(text.split()))


def _as_read(doc: Document) -> str:
    """``doc``'s title and text as the checks read them: normalised, with what only an instruction holds removed."""
    return normalize_answer(neutralise(f"{doc.metadata.get('title', '')} {doc.page_content}").text)


def instruction_like(answer: str) -> bool:
    """Whether a hop's answer reads like an instruction, a chat turn or markup rather than a name, a date or a
    number (``pipeline.untrusted.neutralise`` flags it)."""
    return neutralise(answer).flagged


INSTRUCTION_NOTE = "“{}” reads like an instruction, not an answer: not used."


def conclusion(question: str, plan: Plan, hops: dict[int, Hop],
               missing: str | None) -> tuple[ComparePayload | None, str | None, str | None]:
    """What the hops give: the comparison computed (its payload) when the plan compares, the answer, and why
    there is none (``missing``: a hop found nothing; or the comparison cannot be decided; or the answer does not
    fit the question)."""
    comparison = answer = None
    if missing is None and plan.compare:
        comparison, answer, reason = _compared(question, plan, hops)
        if answer is None:
            missing = reason
    elif missing is None:
        answer = hops[plan.answer].answer
    why = misfit(question, answer) if answer is not None else None
    if why is not None:
        answer, missing = None, f"The chain's answer does not fit the question: {why}"
    return comparison, answer, missing


def compare_title(payload: ComparePayload) -> str:
    return f"Compare ({payload.comparison}): {payload.result or 'undecided'}"


def _compared(question: str, plan: Plan, hops: dict[int, Hop]) -> tuple[ComparePayload, str | None, str | None]:
    """The comparison computed in code from the two hops the plan names: its payload (both values, how each
    was read and its source), the answer or None, and why there is none."""
    kind, a, b = plan.compare
    choices = options(question)
    abouts = [option_of(plan, ref, choices) or hops[ref].question for ref in (a, b)]
    outcome: Outcome = compare(kind, hops[a].answer, hops[b].answer)
    answer = reason = None
    if outcome.verdict is not None:
        answer = outcome.verdict
    elif outcome.winner is not None:
        about = option_of(plan, (a, b)[outcome.winner], choices)
        if about is None and len(choices) == 2:
            about = choices[outcome.winner]
        if about is None and asks_yes_no(question):
            about = "yes" if outcome.winner == 0 else "no"
        answer = about
        if answer is None:
            reason = "The question names no two things to choose between."
    else:
        reason = f"The comparison cannot be decided: {outcome.reason}."
    values = [ComparedValue(about=abouts[n], value=hops[ref].answer or "", read_as=outcome.shown[n],
                            source=hops[ref].ref()) for n, ref in enumerate((a, b))]
    return ComparePayload(comparison=kind, values=values, result=answer or "", reason=reason or ""), answer, reason


def _cited(hop: Hop, read: list[Document]) -> str:
    """`` [n]``: where ``hop``'s evidence is among the passages the reader reads, or "" when it is not there."""
    n = next((n for n, doc in enumerate(read, 1) if doc is hop.evidence), None)
    return f" [{n}]" if n else ""


def _facts(hops: dict[int, Hop]) -> list[QAPair]:
    return [QAPair(question=hops[k].question, answer=hops[k].answer or "") for k in sorted(hops)]


def answer_from_hops(ctx: RunContext, tracer: Tracer, question: str, plan: Plan, hops: dict[int, Hop],
                     pool: list[Document], answer: str | None, missing: str | None, parent: str, *,
                     fallback: str, reader_passages: int, noun: str = "passages", who: str = "chain",
                     support: list[Document] | None = None) -> Iterator[StepEvent]:
    """The answer: the chain's own when it has one and a short answer is asked for; else a reader over the
    hops' evidence first, then the rest of what was collected (``pool``, at most ``reader_passages`` of it when
    not 0), with the hops' findings as notes. When ``missing`` says why the hops give no answer, a warning says it
    first; ``fallback`` none then writes no answer. ``noun`` names what was collected and ``who`` what stops, in
    the warnings; ``support`` is what the support check reads (default ``pool``)."""
    facts = _facts(hops)
    evidence = [hops[k].evidence for k in sorted(hops) if hops[k].evidence is not None]
    read = evidence + [doc for doc in pool if all(doc is not e for e in evidence)]
    read = read[: max(reader_passages, len(evidence))] if reader_passages else read
    extras = ChainExtras(reader="hops", hops=facts, collected=passage_refs(pool), short_answer=answer)
    inferred = [f"hop {k}'s, \"{hops[k].answer}\"" for k in sorted(hops) if hops[k].inferred]
    if inferred:
        message = (f"An answer the chain used is inferred, not stated by its passage ({', '.join(inferred)}): "
                   f"the answer below may be wrong.")
        yield tracer.event(WarningPayload(message=message), "An inferred hop", parent_id=parent)
    if answer is not None and ctx.settings.answer_style == "short":
        step = tracer.new_id("a")
        answer = yield from checked_text(tracer, answer, read, question, step)
        extras = extras.model_copy(update={"short_answer": answer})
        used = [plan.answer] if plan.answer is not None else list(plan.compare[1:])
        cited = [evidence.index(hops[k].evidence) + 1 for k in used if hops[k].evidence in evidence]
        yield tracer.event(AnswerPayload(answer=answer, citations=cited, passages=passage_refs(evidence),
                                         extras=extras), "Answer", id=step, parent_id=parent)
        return
    if missing is not None:
        if fallback == "none":
            yield tracer.event(WarningPayload(message=f"{missing} The {who} stops without an answer."),
                               missing, parent_id=parent)
            step = tracer.new_id("a")
            yield tracer.event(AnswerPayload(answer=NO_ANSWER, passages=passage_refs(read), extras=extras),
                               "Answer", id=step, parent_id=parent)
            return
        collected = f"{len(read)} {noun.removesuffix('s') if len(read) == 1 else noun}"
        yield tracer.event(WarningPayload(message=f"{missing} The answer below is read from the {collected} "
                                                  f"collected and may be a guess.", caveat=True),
                           missing, parent_id=parent)
    # A hop with no answer is left out: the warning above says so, and a note "... not found." was copied into
    # the prose ("was born in not found").
    # A long answer cites: each note names the passage that gave it, as the reader numbers them, or the 1.5B
    # reader cites the hops' evidence one number off ("born in Halberstadt [3]" from passage [2]).
    cite = ctx.settings.answer_style == "long"
    notes = " ".join(f"{hops[k].question} {hops[k].answer}{_cited(hops[k], read) if cite else ''}."
                     for k in sorted(hops) if hops[k].answer)
    if answer is not None:
        notes += f" So the answer is: {answer}."
    values = {"question": question, "passages": format_passages(read) or "(no passages found)", "reasoning": notes}
    yield from stream_answer(ctx, tracer, answer_prompt("ircot_read", ctx.settings.answer_style), values, read,
                             parent_id=parent, support_passages=pool if support is None else support,
                             extras=extras)
