"""IRCoT (Trivedi et al., ACL 2023): chain-of-thought sentences interleaved with retrieval, for multi-hop
questions. Each new reasoning sentence is the query that fetches the next passages; a reader then answers
from everything collected.

Events: the first retrieval, then one ``hop`` per reasoning step, each the child of the step before (so the
steps draw as a chain) and carrying its sentence, its query and the passages it brought in; then the answer.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Iterator, Literal

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import ChatResult, llm_cost
from pydantic import BaseModel, ConfigDict, Field

from pipeline.answering import (NO_ANSWER, checked_text, cited_numbers, empty_answer_warning, retrieve_step,
                                source_warnings, stream_answer)
from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods.ircot.plan import clause_plan
from pipeline.payloads import AnswerPayload, ChainExtras, HopPayload, WarningPayload, passage_refs
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.retrieval import deduplicate
from pipeline.routing import hop_structure_cue
from pipeline.text import first_sentence, has_complete_sentence, strip_citations
from pipeline.untrusted import check_answer

if TYPE_CHECKING:
    from pipeline.fold import RunState


class IRCoTSettings(BaseModel):
    """IRCoT (Trivedi et al., ACL 2023). Defaults are the paper's unless noted."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["auto", "sentences", "hops"] = Field(
        "auto",
        description="sentences: the paper's chain, one reasoning sentence at a time, each the next retrieval "
        "query; hops: the question is planned as simple sub-questions (Self-Ask, Press et al. 2022), each "
        "retrieved for and answered from one passage that must hold the answer, earlier answers put into later "
        "sub-questions, comparisons computed in code (this app's variant, for a model too small to hold a chain "
        "in its head); auto: hop by hop when the question's structure reaches one thing through another or "
        "compares two (the cue Auto uses, pipeline.routing.hop_structure_cue) or, with clause_route, reaches its "
        "subject through one relative clause, the sentence chain otherwise. "
        "Chosen on the first 50 dev items of HotpotQA, 2Wiki and MuSiQue (docs/benchmarks.md): hops gains on "
        "2Wiki's structured questions and loses on HotpotQA's long descriptive bridges.",
    )
    clause_route: bool = Field(
        True,
        description="auto: also hop by hop when the question reaches its subject through one relative clause "
        "(\"When did the person who ended the Achaemenid Empire by conquest die?\", plan.clause_plan), which the "
        "structure cue does not catch (this app's variant, issue 32; the web agent goes hop by hop on every "
        "question). Chosen under a rule written before the runs on the 24 dev items it sends (MuSiQue 20, "
        "HotpotQA 4, 2Wiki 0 of all "
        "100 each): F1 +2.8 [-13.2, +19.4] (4 better, 3 worse; MuSiQue alone -1.7, 3 / 3), support recall -8.3, "
        "median 25.7 to 24.0 s (docs/benchmarks.md, \"IRCoT hop by hop on questions with one relative clause\").",
    )
    hop_fallback: Literal["read", "none"] = Field(
        "read",
        description="Hop by hop, when a sub-question finds no answer in its passages or a comparison cannot be "
        "decided: read: the reader answers from what was collected, under a warning that the answer may be a "
        "guess; none: no answer.",
    )
    ask_again_restated: bool = Field(
        True,
        description="Hop by hop, when the model's plan begins with the whole question again (MuSiQue's nested "
        "questions often are), ask it once more for a plan, telling it so; the new plan is used when it does not "
        "restate the question and shares a word with it. One more plan call on such questions. Chosen on the "
        "first 50 dev items (+2.0 F1 on MuSiQue [+0.0, +6.0], no HotpotQA or 2Wiki answer changed) and then run "
        "once on MuSiQue's first 50 test items: +2.0 [+0.0, +6.0] at 1.07 x the median (docs/benchmarks.md).",
    )
    restated_example: bool = Field(
        True,
        description="With ask_again_restated, the model asked again is shown a worked plan of a question that "
        "reaches its subject through two others (\"the capital of the country where the composer of Rusalka was "
        "born\": composer, then country, then capital). Chosen by a rule written before its runs, on the 38 dev "
        "items whose first plan reaches the re-ask: F1 +0.5 [+0.0, +1.6], 1 better, 0 worse (one 2Wiki date given "
        "whole); the model wrote a new plan no more often with it (4 of 38, 5 without), and on the 21 test items it "
        "reaches it lost one MuSiQue answer (docs/benchmarks.md). KGP's hop reading and the web agent do not use it.",
    )
    clause_plan: bool = Field(
        True,
        description="Hop by hop, when the model's plan begins with the whole question and the question reaches its "
        "subject through one relative clause (\"Who is the brother of the player who has won the most ... "
        "awards?\"), the plan its wording gives is used instead of asking the model again: the clause's thing "
        "first (\"Who is the player who ...?\"), then the question about its answer (\"Who is the brother of "
        "#1?\"). No second plan call on such questions (this app's variant, issue 32). Chosen on MuSiQue's first "
        "50 dev items, where it changes 9: F1 +16.7 [-11.1, +44.4] on them (2 better, 1 worse), support recall "
        "+22.2 [+5.6, +38.9], 4.1 to 3.2 calls (docs/benchmarks.md).",
    )
    chain_plan: bool = Field(
        False,
        description="Hop by hop, when the model's plan begins with the whole question or cannot be followed, and "
        "the question reaches its subject through relations written \"the R of X\" or \"X's R\" (\"the famous "
        "bridge in the birthplace of Gloria in D Major's composer\"), the plan its wording gives is used: the "
        "innermost relation first (\"Who is the composer of Gloria in D Major?\", \"What is the birthplace of "
        "#1?\"), then the question about the last answer (this app's variant, issue 32). Off: on the 5 MuSiQue dev "
        "items of the first 50 it changes, F1 -8.0 [-24.0, +0.0] (0 better, 1 worse), support recall +10.0, 4.0 to "
        "3.2 calls: the first hop is answered on 3 of the 5, the second on none (docs/benchmarks.md).",
    )
    reorder_plan: bool = Field(
        True,
        description="Hop by hop, when the model's plan, asked again, still begins with the whole question and a "
        "later sub-question asks for the relation inside it (\"Who married the publisher of The North Star?\", "
        "then \"Who was the publisher of #1?\"), that sub-question is asked first, of what the question names, "
        "then the question about its answer (\"Who married #1?\") (this app's variant, issue 32). Chosen on the 5 "
        "MuSiQue dev items of 1-100 it changes (all in 51-100): F1 +40.0 [+0.0, +80.0] (2 better, 0 worse), support "
        "recall +20.0; it fires on none of the first 50 test items, nor on 2Wiki's or HotpotQA's dev items "
        "(docs/benchmarks.md).",
    )
    both_plan: bool = Field(
        True,
        description="Hop by hop, \"Are both X and Y P?\" and \"Are X and Y both P?\" are planned from their wording, "
        "without a plan call: \"Is X P?\", \"Is Y P?\", and whether both are yes, computed (this app's variant, "
        "issue 32; the small model's plans ask such a question whole and cannot be followed). \"... the same ...\" "
        "is left to the model's plan. Chosen with checked_yes on the 22 yes / no dev questions of HotpotQA and 2Wiki "
        "that go hop by hop: F1 +18.2 [+0.0, +40.9] (5 better, 1 worse), median 55.0 to 39.9 s (docs/benchmarks.md).",
    )
    checked_yes: bool = Field(
        True,
        description="Hop by hop, a \"yes\" to a yes / no sub-question stands only when a retrieved passage holds "
        "each of its words, frame words aside (\"Is Elko Regional Airport located in Michigan?\": elko, regional, "
        "airport, michigan; a word of five letters or more by its first five); when none does, the hop reads \"no\" "
        "and its note says which words the passage named lacks (this app's variant, issue 32: IRCoT "
        "answered yes to all 8 \"both\" questions of HotpotQA's dev file, where 6 of 8 are no). Chosen with both_plan "
        "(above).",
    )
    ask_again_unfit: bool = Field(
        False,
        description="Hop by hop, when a sub-question's answer cannot answer it (the one it asks about, or an "
        "earlier answer put into it: \"Who wrote Turn Me On by Norah Jones?\" answered \"Norah Jones\"; no date "
        "for a \"when\", no number for a \"how many\", a date alone for a \"where\"), ask the model once more, "
        "telling it why; an answer still unfit is not found. One more call on such hops (this app's variant, "
        "issue 32). Off: on MuSiQue's 27 first-50 dev items that go hop by hop it fired once and changed no "
        "answer (docs/benchmarks.md).",
    )
    infer_hop: bool = Field(
        False,
        description="Hop by hop, when the model finds no passage stating a sub-question's answer, ask it once more "
        "for the likeliest answer that a retrieved passage holds (\"Who played the little girl in Miracle on 34th "
        "Street?\" where the passage only lists the cast); the answer is still checked to be in that passage, "
        "shown as inferred, and the answer warns that it rests on it. One more call on such hops (this app's "
        "variant, issue 32). Off: on the 13 MuSiQue dev items of the first 50 it changes, F1 +2.4 [-6.8, +11.7] "
        "(2 better, 1 worse, both gains a wrong county sharing the word \"County\"), EM unchanged; on test's 13, "
        "+4.7 [-10.0, +24.0] (2 / 3); most inferred bridges are wrong (docs/benchmarks.md).",
    )
    hop_next: bool = Field(
        False,
        description="Hop by hop, when a sub-question's passages give no answer, ask it once more of the next k "
        "passages its retrieval ranks (k+1 to 2k); the answer is checked against its passage as any hop's. One "
        "more retrieval and call on such hops (this app's variant, issue 32). Off: on the 26 MuSiQue dev items of 51-100 "
        "whose chain ended not found, F1 -4.6 [-16.9, +6.2] (1 better, 2 worse), EM -7.7; the next passages are "
        "often about something else (\"the seat of Mountrail County\" read from a Korean county's page) "
        "(docs/benchmarks.md).",
    )
    hop_pool: int = Field(
        0, ge=0, le=100,
        description="Hop by hop, retrieve this many passages for the whole question first and ask each "
        "sub-question of them (reranked for it); a sub-question they do not answer is asked once more of the "
        "whole collection. 0: off, each sub-question retrieves from the whole collection. Replaces hop_next "
        "when on. One more retrieval per question, and one more hop call where the pool gives no answer (this "
        "app's variant, issue 32, after KGP's hop reading of its walked passages answered MuSiQue test's hop "
        "items at 23.9 F1 against IRCoT's 12.0). Off: N = 30 on MuSiQue dev 1-50's 27 hop items, F1 -1.0 [-11.8, "
        "+10.1] (1 better, 3 worse), support recall +1.2, 19.9 to 22.1 s median (docs/benchmarks.md).",
    )
    focus_hop: bool = Field(
        True,
        description="Hop by hop, when the model finds no passage stating a sub-question's answer and some but not "
        "all of its passages have a title the sub-question names (\"In which city was Max Mack born?\": the "
        "passage titled Max Mack), ask it once more of those passages alone, \"not found\" still allowed; the "
        "answer is checked against its passage as any hop's. The 1.5B reader misses a fact in the subject's own "
        "passage when other passages sit beside it. One more short call on such hops (this app's variant, issue "
        "32; KGP's hop reading has its own switch, KGPSettings.hop_focus, off). Chosen under a rule written "
        "before the runs on the 36 dev items whose saved chain ended where it can act (MuSiQue 21, 2Wiki 11, "
        "HotpotQA 4; it acted on 23): F1 +4.1 [-5.6, +14.7] (3 better, 2 worse), EM +5.6, median 21.1 to 22.0 s "
        "on the 23. On the test files' first 50: MuSiQue +3.0, 2Wiki +1.0, HotpotQA -2.0 (one answer) "
        "(docs/benchmarks.md, \"A hop not found, asked again of its subject's own passages\").",
    )
    answer_odds: float = Field(
        0.0, ge=0.0, le=1.0,
        description="Hop by hop, when the model replies \"not found\" to a sub-question but its first token gave "
        "answering (\"[\") at least these odds against \"not\", it is asked for its answer under a grammar "
        "without \"not found\"; the answer is checked against its passage as any hop's. 0: off. One more call on "
        "such hops, read from the same prompt state (this app's variant, issue 32). Off: 0.4, read off the odds of 26 "
        "MuSiQue dev items' hops, gave F1 -1.1 [-3.1, +0.0] (0 better, 2 worse) on the 18 of dev 1-50 whose chain "
        "ended not found; the answers it drew out were mostly the question's own words (docs/benchmarks.md).",
    )
    named_only: bool = Field(
        False,
        description="Hop by hop, use a sub-question's answer only when the passage the model named holds it; an "
        "answer that only another retrieved passage holds (the model named [1], the phrase is in [2]) is not found "
        "(this app's variant, issue 32). Off: the default on 2026-11-29 after 3 MuSiQue dev items of the first 50 "
        "(+33.3 F1, 1 better), it was checked on dev items 51-100, where it refused 8 answers, 5 of them right for "
        "the sub-question asked: off there, F1 +42.5 [+12.5, +75.0] (4 better, 0 worse); on the 11 dev items it "
        "fires on, off is better on 4 and worse on 1 (docs/benchmarks.md).",
    )
    k: int = Field(4, ge=1, le=10, description="Passages retrieved per query, with the question and after each "
                   "reasoning sentence. The paper tunes K in {2, 4, 6, 8} per dataset (Sec. 4); 4 keeps the "
                   "prompt short enough for the 1.5B model and 2 cores (this app's choice; K = 3 was no faster "
                   "and 5 F1 lower on the first 20 HotpotQA items).")
    max_passages: int = Field(15, ge=2, le=30, description="At most 15 passages are collected (Sec. 4: the "
                              "prompt must fit the reader's context).")
    max_steps: int = Field(8, ge=1, le=15, description="Reasoning steps before the loop stops without an "
                           "answer (Sec. 3.1: 8 for Flan-T5 runs, up to 10 with GPT3).")
    reasoning_words: int = Field(
        0, ge=0, le=1000,
        description="Words of each passage the reasoning prompt shows (its title always; a cut text ends in "
        "'...'); 0 shows them whole, as the paper does. The direct and notes readers read them whole. This "
        "app's option, for speed: 40 words cut IRCoT's median by about a quarter (14.5 to 10.5 s, one machine) "
        "but over all 300 multi-hop dev items lost F1 (-2.2 / +1.4 / -3.2 on HotpotQA / 2Wiki / MuSiQue, -1.3 "
        "pooled; MuSiQue's loss is beyond the items' noise: docs/benchmarks.md, 'IRCoT within 20 s'), so it is "
        "off by default.",
    )
    reader_passages: int = Field(
        5, ge=0, le=30,
        description="Collected passages the direct reader sees: the best N for the question and the reasoning "
        "(re-ranked); 0 gives it all of them, as the paper does. The 1.5B model reads a few passages better "
        "than many (docs/design-notes.md). 3 is faster but loses answers: on HotpotQA items 51-100 (with 40-word "
        "reasoning passages) 3 scored 57.6 F1 against 64.2 for the defaults (docs/benchmarks.md).",
    )
    reader: Literal["cot", "direct", "notes", "context", "passages"] = Field(
        "direct",
        description="direct: a separate call answers from the collected passages; notes: the same, with the "
        "reasoning sentences shown to it as notes that may be wrong (this app's variant); context: the "
        "reasoning prompt itself, every collected passage in arrival order and the reasoning, asked for the "
        "answer instead of the next sentence, so llama.cpp serves everything before the reasoning from its "
        "prefix cache (this app's variant; on the first 20 HotpotQA items 20% faster but 10.7 F1 lower, as "
        "it repeats the chain's conclusion); passages: the same without the reasoning (this app's variant; "
        "on the same items 25% faster but 24.2 F1 lower: docs/benchmarks.md); cot: the answer is the "
        "conclusion of the reasoning chain (finished by one more call when the chain stopped without one). "
        "The paper offers cot and direct (Sec. 3.2); with the 1.5B model the chain often concludes too early: "
        "over the 100 items of HotpotQA / 2Wiki / MuSiQue the chains' own conclusions score 41.6 / 17.2 / "
        "13.0 F1, the direct reader 62.9 / 29.6 / 17.1.",
    )


CLAUSE_ROUTE = ("it asks about something a relative clause describes (\"the person who ...\", \"the city where "
                "...\"), so it takes more than one hop")
_ANSWER_IS = re.compile(r"answer is\s*:?\s*(.*)", re.IGNORECASE | re.DOTALL)
_CONCLUDING = re.compile(r"^(so|thus|therefore|hence|in conclusion)\b", re.IGNORECASE)


def clean_query(sentence: str) -> str | None:
    """The retrieval query a reasoning sentence makes, or None when it makes none: an empty sentence, or one
    that only concludes ("So ...", "Thus ...", "... the answer is ...") asks for nothing new."""
    text = strip_citations(sentence).strip(" .")
    if not re.search(r"\w\w", text) or _CONCLUDING.match(text) or _ANSWER_IS.search(text):
        return None
    return text


def extract_answer(text: str) -> str | None:
    """The short answer after "answer is" in ``text`` (without citations or a closing period), or None."""
    match = _ANSWER_IS.search(text)
    if not match:
        return None
    answer = strip_citations(match.group(1).strip().splitlines()[0] if match.group(1).strip() else "")
    return answer.strip(" .\"'*") or None


def run(question: str, ctx: RunContext, tracer: Tracer, cfg: IRCoTSettings) -> Iterator[StepEvent]:
    """IRCoT in the mode its settings name: one reasoning sentence at a time, hop by hop, or (auto) hop by hop
    when the question's structure asks for it."""
    why = hop_reason(question, cfg)
    if cfg.mode == "hops" or why:
        from pipeline.methods.ircot.hops import run_hops

        yield from run_hops(question, ctx, tracer, cfg, why=f"Hop by hop: {why}." if why else "")
    else:
        yield from run_sentences(question, ctx, tracer, cfg)


def hop_reason(question: str, cfg: IRCoTSettings) -> str | None:
    """Why IRCoT in auto mode answers ``question`` hop by hop (its structure, or a relative clause with
    ``clause_route``), or None: in auto mode, one reasoning sentence at a time; in the other modes, as they say."""
    if cfg.mode != "auto":
        return None
    why = hop_structure_cue(question)
    if not why and cfg.clause_route and clause_plan(question) is not None:
        why = CLAUSE_ROUTE
    return why


def run_sentences(question: str, ctx: RunContext, tracer: Tracer, cfg: IRCoTSettings) -> Iterator[StepEvent]:
    """Retrieve K passages with the question, then reason one sentence at a time, retrieving K more with each
    sentence, until a sentence gives the answer or the step limit; then answer from the collected passages."""
    root = tracer.new_id("r")
    # The retrieval event numbers these passages as the prompts will: the retriever already de-duplicates.
    pool = yield from retrieve_step(ctx, tracer, question, k=min(cfg.k, cfg.max_passages), step_id=root)
    yield from continue_sentences(question, ctx, tracer, cfg, pool, [], root, 1)


def continue_sentences(question: str, ctx: RunContext, tracer: Tracer, cfg: IRCoTSettings, pool: list[Document],
                       sentences: list[str], parent: str, first: int, given: str | None = None
                       ) -> Iterator[StepEvent]:
    """The chain from step ``first`` on, after ``sentences`` and the passages ``pool`` they collected, each step
    the child of the one before (the first of ``parent``); then the answer. ``given``: the first step's sentence,
    written by a person (``pipeline.resume``: a chain continued from a rewritten step) instead of the model."""
    prompt = load_prompt("ircot_reason")
    sentences, conclusion = list(sentences), None

    for step in range(first, cfg.max_steps + 1):
        ctx.check_cancelled()
        hop = tracer.new_id("h")
        yield tracer.event(HopPayload(step=step), f"Step {step}", id=hop, parent_id=parent,
                           status=Status.RUNNING)
        result, note = None, ""
        if given is not None:
            sentence, given, note = given, None, "Written by you."
        else:
            try:
                result = _reason(ctx, cfg, prompt, question, pool, sentences, prompt.texts["next_step"])
            except LLMCallError as exc:  # e.g. the prompt outgrew the context: answer from what was collected
                message = f"Reasoning stopped at step {step}: {exc}"
                yield tracer.event(HopPayload(step=step, stop=message), f"Step {step}", id=hop, parent_id=parent,
                                   status=Status.FAILED)
                yield tracer.event(WarningPayload(message=message), message, parent_id=hop)
                break
            sentence = first_sentence(result.text)
        query = clean_query(sentence)
        payload = HopPayload(step=step, sentence=sentence, query=query, note=note)
        stop_reason = None
        if not sentence:
            stop_reason = "The model wrote no further reasoning."
        elif sentence in sentences:
            stop_reason = "The model repeated an earlier step."
        else:
            sentences.append(sentence)
            conclusion = extract_answer(sentence)
            if conclusion is not None:
                stop_reason = "The reasoning reached an answer."
        if query and stop_reason is None:
            if len(pool) >= cfg.max_passages:
                payload.note = " ".join(filter(None, [note, f"No retrieval: {cfg.max_passages} passages already "
                                                            "collected."]))
            else:
                added, payload.duplicates = yield from _new_passages(ctx, cfg, tracer, hop, query, pool)
                payload.passages = passage_refs(added, start=len(pool) + 1)
                pool += added
        payload.pool_size = len(pool)
        payload.stop = stop_reason or ""
        yield tracer.event(payload, f"Step {step}: {sentence or '(nothing)'}", id=hop, parent_id=parent,
                           **(llm_cost(result) if result is not None else {}))
        parent = hop
        if stop_reason:
            break

    ctx.check_cancelled()
    yield from _read(ctx, cfg, tracer, prompt, question, pool, sentences, conclusion, parent)


def _read(ctx: RunContext, cfg: IRCoTSettings, tracer: Tracer, prompt, question: str, pool: list[Document],
          sentences: list[str], conclusion: str | None, parent: str) -> Iterator[StepEvent]:
    """The answer, by the reader ``cfg.reader`` names, from the collected passages and the chain."""
    if cfg.reader in ("context", "passages"):
        yield from _read_in_context(ctx, cfg, tracer, prompt, question, pool, sentences, parent,
                                    show_reasoning=cfg.reader == "context")
        return
    if cfg.reader in ("direct", "notes"):
        read = pool
        if cfg.reader_passages and len(pool) > cfg.reader_passages and ctx.reranker is not None:
            query = " ".join([question, *map(strip_citations, sentences)])
            read = ctx.reranker.rerank(query, pool, cfg.reader_passages)
        values = {"question": question, "passages": format_passages(read) or "(no passages found)"}
        prompt_name = "oner_answer"
        if cfg.reader == "notes":
            prompt_name = "ircot_read"
            # Citations in the notes number the collected pool, not the reader's passages: left out.
            values["reasoning"] = " ".join(map(strip_citations, sentences)) or "(none)"
        yield from stream_answer(ctx, tracer, answer_prompt(prompt_name, ctx.settings.answer_style), values,
                                 read, parent_id=parent, support_passages=pool,
                                 extras=ChainExtras(reader=cfg.reader, reasoning=sentences,
                                                    collected=passage_refs(pool)))
        return
    yield from _conclude(ctx, cfg, tracer, prompt, question, pool, sentences, conclusion, parent)


def _read_in_context(ctx: RunContext, cfg: IRCoTSettings, tracer: Tracer, prompt, question: str, pool: list[Document],
                     sentences: list[str], parent: str, *, show_reasoning: bool) -> Iterator[StepEvent]:
    """The ``context`` and ``passages`` readers: the last reasoning prompt with the answer task in place of the
    next-step task, with or without the reasoning. Everything before the reasoning is the prompt the chain just
    sent, so it is served from the prefix cache."""
    style = ctx.settings.answer_style
    if show_reasoning:
        task, shown = prompt.texts[f"answer_{style}"], sentences
    else:
        task, shown = prompt.texts[f"answer_{style}_from_passages"], []
    values = _reasoning_values(question, pool, shown, task, cfg.reasoning_words)
    # The reasoning prompt's budget is one sentence; an answer gets the answering prompts' budget.
    reader = replace(prompt, max_tokens=answer_prompt("oner_answer", style).max_tokens)
    finish = _short_answer if style == "short" else None
    yield from stream_answer(ctx, tracer, reader, values, pool, parent_id=parent, finish=finish,
                             extras=ChainExtras(reader="context" if show_reasoning else "passages",
                                                reasoning=sentences, collected=passage_refs(pool)))


def _short_answer(text: str) -> str:
    """A short answer from a reply that may still reason ("... So the answer is: X.") or cite ("X [2].")."""
    answer = extract_answer(text)
    if answer is None:
        lines = [line for line in text.splitlines() if line.strip()]
        answer = strip_citations(lines[0] if lines else "").strip(" .\"'*")
    return answer or text


def _new_passages(ctx: RunContext, cfg: IRCoTSettings, tracer: Tracer, hop: str, query: str,
                  pool: list[Document]):
    """Up to K passages for ``query`` that are not (near-)copies of collected ones, within the cap; yields a
    warning per failed source; returns them and how many retrieved passages were copies."""
    # Ask for enough that K new ones remain once those already collected are dropped.
    retrieved = ctx.retrieve(query, cfg.k + len(pool))
    yield from source_warnings(tracer, retrieved.warnings, hop)
    new = deduplicate(retrieved.passages, against=pool)
    return new[: min(cfg.k, cfg.max_passages - len(pool))], len(retrieved.passages) - len(new)


def _reasoning_values(question: str, pool: list[Document], sentences: list[str], task: str,
                      max_words: int = 0) -> dict[str, str]:
    """The reasoning prompt's values; every task shares them, so each call's prefix is the one cached before."""
    return {"question": question, "passages": format_passages(pool, max_words=max_words) or "(no passages found)",
            "reasoning": " ".join(sentences) or "(none yet)", "task": task}


def _reason(ctx: RunContext, cfg: IRCoTSettings, prompt, question: str, pool: list[Document],
            sentences: list[str], task: str, *, first_only: bool = True) -> ChatResult:
    values = _reasoning_values(question, pool, sentences, task, cfg.reasoning_words)
    options = prompt.options(ctx.settings.temperature)
    if first_only:  # only the first sentence is kept: stop generating once it is complete
        options = replace(options, until=has_complete_sentence)
    return ctx.llm.chat(prompt.messages(**values), options)


def _conclude(ctx: RunContext, cfg: IRCoTSettings, tracer: Tracer, prompt, question: str, pool: list[Document],
              sentences: list[str], conclusion: str | None, parent: str) -> Iterator[StepEvent]:
    """The chain-of-thought reader: the chain's own conclusion, or one more call to reach one."""
    step = tracer.new_id("a")
    yield tracer.event(AnswerPayload(), "Answer", id=step, parent_id=parent, status=Status.RUNNING)
    cost: dict = {"llm_calls": 0}
    reasoning = list(sentences)
    if conclusion is None:
        result = _reason(ctx, cfg, prompt, question, pool, sentences, prompt.texts["conclude"], first_only=False)
        cost = llm_cost(result)
        reasoning.append(" ".join(result.text.split()))
        conclusion = extract_answer(result.text) or first_sentence(result.text)
    text = conclusion if ctx.settings.answer_style == "short" else " ".join(reasoning)
    text = yield from checked_text(tracer, text, pool, question, step)
    if conclusion:
        conclusion = check_answer(conclusion, pool, question).text
    if not text.strip():
        yield empty_answer_warning(tracer, "The model wrote no conclusion.", step)
        text = NO_ANSWER
    payload = AnswerPayload(answer=text, citations=cited_numbers(" ".join(reasoning), len(pool)),
                            passages=passage_refs(pool),
                            extras=ChainExtras(reader="cot", reasoning=reasoning, short_answer=conclusion))
    yield tracer.event(payload, "Answer", id=step, parent_id=parent, **cost)


def chain_record(state: "RunState") -> dict:
    """What the evaluation keeps of a chain: its sentences, or its plan and hops."""
    record: dict = {}
    if (chain := [hop.sentence for hop in state.payloads(HopPayload)]):
        record["chain"] = chain
    return {**record, **hop_record(state)}


def hop_record(state: "RunState") -> dict:
    """What the evaluation keeps of a run's hops (IRCoT's, or KGP's reading of its walk): the plan, each hop's
    answer and source, and the comparison computed."""
    from pipeline.payloads import ComparePayload, PlanPayload, SubQuestionPayload

    record: dict = {}
    for plan in state.payloads(PlanPayload):
        record["plan"] = plan.error or [*plan.questions, plan.final]
    if (hops := state.payloads(SubQuestionPayload)):
        record["hops"] = [{"question": h.question, "answer": h.answer if h.found else None, "source": h.source,
                           **({"note": h.note} if h.note else {}), **({"again": True} if h.again else {})}
                          for h in hops]
    for comparison in state.payloads(ComparePayload):
        record["compare"] = {"kind": comparison.comparison, "values": [v.value for v in comparison.values],
                             "result": comparison.result or comparison.reason}
    return record
