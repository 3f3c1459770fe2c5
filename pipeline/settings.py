"""Method defaults in one place, each with where it comes from. A run gets its own copy (per session)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ToCSettings(BaseModel):
    """Tree of Clarifications (Kim et al., EMNLP 2023). Defaults are the paper's unless noted."""

    pool_size: int = Field(20, ge=5, le=100, description="Passages retrieved for the ambiguous question, the pool "
                           "every node re-ranks. The paper retrieves 100 from Wikipedia + Bing; 20 suits the "
                           "local collections and keeps re-ranking fast on 2 cores (this app's choice).")
    passages_per_prompt: int = Field(5, ge=1, le=10, description="Top-5 re-ranked passages per RAC prompt (Sec. "
                                     "3.1); the 1.5B model does worse past 5 short passages (DESIGN.md).")
    demos: int = Field(3, ge=0, le=8, description="Nearest-neighbour demos per RAC prompt. The paper uses 5; 3 "
                       "keeps the prompt within the 2-core time budget (this app's choice).")
    max_valid_nodes: int = Field(10, ge=1, le=20, description="Stop after 10 valid nodes (Sec. 3.2).")
    max_depth: int = Field(3, ge=1, le=5, description="Maximum tree depth (Sec. 3.2).")
    max_failed_expansions: int = Field(3, ge=1, le=10, description="Stop after 3 expansions in a row add no "
                                       "valid node (Sec. 3.2).")
    max_llm_calls: int = Field(19, ge=3, le=60, description="Fewer than 20 LLM calls per question (Sec. 4).")
    min_valid_nodes: int = Field(2, ge=1, le=10, description="With fewer survivors, pruning is undone from the "
                                 "nodes closest to the root (Sec. 3.3; the threshold is this app's choice).")
    answer_passages: int = Field(5, ge=1, le=10, description="Answer-containing passages in the answer prompt "
                                 "(Sec. 3.3).")
    keep_threshold: float = Field(0.5, ge=0.0, le=1.0, description="A node is kept when its verification score "
                                  "(mean of P(True) and the question's relevance to the ambiguous question) "
                                  "reaches this (this app's choice; measured in docs/benchmarks.md).")


class IRCoTSettings(BaseModel):
    """IRCoT (Trivedi et al., ACL 2023). Defaults are the paper's unless noted."""

    k: int = Field(4, ge=1, le=10, description="Passages retrieved per query, with the question and after each "
                   "reasoning sentence. The paper tunes K in {2, 4, 6, 8} per dataset (Sec. 4); 4 keeps the "
                   "prompt short enough for the 1.5B model and 2 cores (this app's choice).")
    max_passages: int = Field(15, ge=2, le=30, description="At most 15 passages are collected (Sec. 4: the "
                              "prompt must fit the reader's context).")
    max_steps: int = Field(8, ge=1, le=15, description="Reasoning steps before the loop stops without an "
                           "answer (Sec. 3.1: 8 for Flan-T5 runs, up to 10 with GPT3).")
    reader_passages: int | None = Field(
        5, ge=1, le=30,
        description="Collected passages the direct reader sees: the best N for the question and the reasoning "
        "(re-ranked); None gives it all of them, as the paper does. The 1.5B model reads 3-5 passages better "
        "than more (DESIGN.md); on the first 10 HotpotQA items 5 and all scored the same F1 (58.0), and 5 "
        "keeps the reader prompt short.",
    )
    reader: Literal["cot", "direct"] = Field(
        "direct",
        description="direct: a separate call answers from the collected passages; cot: the answer is the "
        "conclusion of the reasoning chain (finished by one more call when the chain stopped without one). The "
        "paper offers both (Sec. 3.2); with the 1.5B model the chain often concludes too early, so direct is the "
        "default (a first check on 4 HotpotQA items: F1 0 with cot, 67 with direct).",
    )


class Settings(BaseModel):
    """Knobs shared by the methods; the UI and CLI override them per run."""

    top_k: int = Field(
        5,
        ge=1,
        le=20,
        description="Passages given to the model per answer. ToC uses top-5 per RAC prompt (Kim et al. 2023, "
        "Sec. 3); the 1.5B model reads 3-5 short passages better than 7 (DESIGN.md, measured).",
    )
    answer_max_tokens: int | None = Field(
        None, description="Override the answer prompt's own budget (prompts/*.yaml max_tokens)."
    )
    answer_style: Literal["long", "short"] = Field(
        "long",
        description="long: a few sentences citing passages (the app, ASQA); short: a phrase only, for datasets "
        "scored by EM/F1 against short answers (the IRCoT reader, FlashRAG).",
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Greedy decoding makes runs reproducible.")
    use_web: bool = Field(False, description="Add DuckDuckGo results to local passages.")
    toc: ToCSettings = Field(default_factory=ToCSettings)
    ircot: IRCoTSettings = Field(default_factory=IRCoTSettings)
