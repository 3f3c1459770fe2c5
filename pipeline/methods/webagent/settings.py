"""The web agent's settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class WebAgentSettings(BaseModel):
    """The web agent (WebCPM, Qin et al. ACL 2023). Defaults are the paper's or its code's unless noted."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["auto", "interactive", "pipeline", "hops"] = Field(
        "hops",
        description="interactive: the agent picks every action (the paper's method). pipeline: queries, then "
        "up to N pages per query, one fact extraction per page, then the answer (WebCPM's one-shot variant, in "
        "its code, not its paper). hops: the question is planned as sub-questions (IRCoT's planner); each, "
        "earlier answers put in, is searched, and up to pages_per_query result pages are read, one call each "
        "quoting the sentence that states its answer, kept only when that sentence or its page holds it; a "
        "sub-question no page answers is searched once more with its key words, and the run finishes with a "
        "warning naming it if still unanswered (hop_fallback); comparisons are computed in code (this app's "
        "variant). auto: hops when the question's structure reaches one thing through another or compares two "
        "(pipeline.routing.hop_structure_cue, as IRCoT's auto mode), interactive otherwise. Auto was the default "
        "from the first 50 dev items of HotpotQA / 2Wiki / MuSiQue (auto 60.7 / 58.5 / 16.6 F1, hops 48.8 / 58.6 / "
        "16.1, interactive 60.0 / 30.8 / 15.8, pipeline 44.8 / 28.8 / 9.7). Hops is the default since a fresh dev "
        "split decided it (rule written before the runs): on the 41 items of dev 51-100 where the two differ, F1 "
        "37.9 (auto) against 38.3 (hops), +0.4 [-16.3, +17.4], at a median of 12.3 s against 69.8 s a question "
        "(docs/benchmarks.md, \"The web agent's default mode, decided on dev items 51-100\").")
    max_steps: int = Field(16, ge=4, le=100, description="Action budget. The paper allows 100; 15-20 suits a "
                           "1.5B model on 2 cores (docs/design-notes.md), each action being one model call.")
    results_per_window: int = Field(3, ge=1, le=5, description="Search results shown at a time (the paper: 3).")
    window_chars: int = Field(500, ge=200, le=2000, description="Characters of page text shown at a time, as "
                              "numbered sentences (the paper: 500-character windows).")
    max_scrolls: int = Field(3, ge=1, le=10, description="Scrolls in a row before scrolling is masked (the "
                             "paper's code: 3 scroll-downs).")
    max_searches_without_load: int = Field(4, ge=1, le=10, description="Searches without loading a page before "
                                           "searching is masked (the paper's code: 4).")
    min_facts_to_finish: int = Field(1, ge=0, le=5, description="Facts needed before Finish is allowed (the "
                                     "budget ends the run anyway). The paper's code refuses Finish before step 10 "
                                     "with under 2 pages and 3 facts; 1 fits a 16-step budget (this app's choice).")
    max_quote_sentences: int = Field(3, ge=1, le=10, description="Sentences one Quote may take (this app's choice: "
                                     "the paper quotes a free span of the window).")
    fact_words: int = Field(50, ge=10, le=200, description="Facts longer than this are shown to the agent as "
                            "their first and last halves (the paper: over 50 tokens, the first and last 25).")
    search_results: int = Field(9, ge=3, le=30, description="Results fetched per search: three windows of three "
                                "(this app's choice).")
    answer_without_facts: Literal["read", "none"] = Field(
        "read",
        description="When no fact was quoted: read (answer from the page windows the agent read, and the step "
        "says so) or none (answer from the facts only, as the paper: the answer then says the facts do not "
        "hold it).")
    queries: int = Field(2, ge=1, le=5, description="pipeline mode: queries written for the question (the "
                         "paper's code writes several at once).")
    pages_per_query: int = Field(3, ge=1, le=5, description="pipeline and hops modes: pages read per query (the "
                                 "paper's code: 3); hop by hop, result pages not yet read for that sub-question, "
                                 "and fewer when one states its answer.")
    max_facts: int = Field(3, ge=1, le=10, description="pipeline mode: stop after this many facts (the paper's "
                           "code: 3).")
    extract_chars: int = Field(3072, ge=500, le=6000, description="pipeline and hops modes: characters of a page, "
                               "from where it opens, read by one call (the paper's code: 3,072).")
    hop_fallback: Literal["read", "none"] = Field(
        "read",
        description="hops mode, when no page read states a sub-question's answer (after its second search) or "
        "a comparison cannot be decided: read: the answer is read from the facts collected, under a warning "
        "naming what is missing and that the answer may be a guess; none: no answer (as IRCoT's hop_fallback).")
    refuse_unfit: bool = Field(
        False,
        description="hops mode, an answer a page gives that cannot answer the sub-question (the one it asks about "
        "or an earlier answer put into it, no date for a \"when\", no number for a \"how many\", a date alone "
        "for a \"where\": pipeline.methods.ircot.hops.unfit) is not used, and the next page is read (as "
        "IRCoTSettings.ask_again_unfit, without asking the same page again; issue 32). Off: not measured yet.")
    ask_again_restated: bool = Field(
        False,
        description="hops mode, when the model's plan begins with the whole question again, ask it once more for "
        "a plan, as IRCoT does by default (IRCoTSettings.ask_again_restated). Off: on MuSiQue's questions that go "
        "hop by hop it lost F1 on dev (-1.5 [-12.6, +9.6], 27 items) and test (-3.7 [-11.1, +0.0]); the web "
        "agent's searches often find the answer to a restated hop (docs/benchmarks.md).")
    clause_plan: bool = Field(
        True,
        description="hops mode, when the model's plan begins with the whole question and the question reaches its "
        "subject through one relative clause, the plan its wording gives is used, as IRCoT does by default "
        "(IRCoTSettings.clause_plan: the clause's thing first, then the question about its answer; no model call "
        "more). Chosen on the 31 dev items (MuSiQue 28, HotpotQA 3, 2Wiki 0 of all 100 each) whose plan it changes: "
        "F1 +6.0 [-7.2, +19.9] (5 better, 3 worse), support recall +19.9 [+6.5, +33.9], 6.6 to 5.8 calls "
        "(docs/benchmarks.md, \"The web agent's plans from the question's wording\").")
    both_plan: bool = Field(
        False,
        description="hops mode, \"Are both X and Y P?\" is planned from its wording, as IRCoT does by default "
        "(IRCoTSettings.both_plan: \"Is X P?\", \"Is Y P?\", and whether both are yes, computed; no plan call). "
        "Off: on HotpotQA's 7 such dev questions it answered yes to all 7 (5 are no), F1 -14.3 [-42.9, +0.0] "
        "(0 better, 1 worse), though at a median of 9.2 s against 89.3 s; with checked_yes (below), on the 24 yes / "
        "no dev questions of HotpotQA and 2Wiki, -4.2 [-20.8, +12.5] (docs/benchmarks.md).")
    checked_yes: bool = Field(
        False,
        description="hops mode, a \"yes\" to a yes / no sub-question stands only when the page it was read from "
        "(title and text) holds each of the sub-question's words, frame words aside, as IRCoT's checked_yes asks of "
        "its passages (IRCoTSettings.checked_yes: a word of five letters or more by its first five); when the page "
        "does not, the hop reads \"no\" and the quote's note names the words it lacks (issue 32). Off: with "
        "both_plan, on the 24 yes / no dev questions of HotpotQA and 2Wiki, F1 -4.2 [-20.8, +12.5] (2 better, 3 "
        "worse), median 33.4 to 18.8 s: a count (\"more than 15 bestselling novels\") or a relation between two "
        "things (\"from the same country as Y\") is not on a page word for word (docs/benchmarks.md, \"The web "
        "agent's checked yes\").")
