"""Tree of Clarifications' settings and the shapes of the model's replies it asks for."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ToCSettings(BaseModel):
    """Tree of Clarifications (Kim et al., EMNLP 2023). Defaults are the paper's unless noted; the noted ones
    (clarify, keep_threshold, cover_answers) are the configuration measured on all 100 ASQA dev items."""

    model_config = ConfigDict(extra="forbid")

    pool_size: int = Field(20, ge=5, le=100, description="Passages retrieved for the ambiguous question, the pool "
                           "every node re-ranks. The paper retrieves 100 from Wikipedia + Bing; 20 suits the "
                           "local collections and keeps re-ranking fast on 2 cores (this app's choice).")
    passages_per_prompt: int = Field(5, ge=1, le=10, description="Top-5 re-ranked passages per RAC prompt (Sec. "
                                     "3.1); the 1.5B model does worse past 5 short passages (docs/design-notes.md).")
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
    keep_threshold: float = Field(0.6, ge=0.0, le=1.0, description="A node is kept when its verification score "
                                  "(mean of P(True) and the question's relevance to the ambiguous question) "
                                  "reaches this (this app's choice, calibrated on ASQA dev items 51-72 with "
                                  "benchmarks/verifier_calibration.py; docs/benchmarks.md).")
    clarify: Literal["enumerate", "per_passage"] = Field(
        "per_passage",
        description="enumerate: one call lists every reading found in the passages (the paper's RAC, Sec. 3.1); "
        "per_passage (default): one short call per passage names the reading that passage answers (small models "
        "extract better than they enumerate; this app's variant, measured in docs/benchmarks.md).")
    diversity: float = Field(0.0, ge=0.0, le=0.9, description="Maximal marginal relevance when choosing a node's "
                             "passages: 0 takes the best-ranked ones; higher values trade rank for passages unlike "
                             "those already chosen, so that different readings get read (this app's choice). "
                             "Measured at 0.3 on ASQA's first 50 items: STR-EM 43.5 against 48.0 at 0 "
                             "(docs/benchmarks.md), so it is off.")
    answer_length: Literal["paragraph", "brief"] = Field(
        "paragraph",
        description="paragraph (default): the long answer explains the ambiguity in at least three sentences "
        "(prompts/toc_answer.yaml); brief: one short clause per interpretation (prompts/toc_answer_brief.yaml). "
        "Measured on ASQA's first 50 dev items: brief is 1.15 × faster but 3.8 STR-EM lower, beyond its "
        "interval (docs/performance.md), so it is an option, not the default.")
    cover_answers: bool = Field(True, description="Add to the long answer every kept interpretation's answer "
                                "that the model left out, with its passage cited (this app's choice, measured "
                                "with the two above in docs/benchmarks.md).")


class Clarification(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(max_length=200)
    answer: str = Field(max_length=80)


class PassageReading(BaseModel):
    """The one-passage clarification's reply: the reading a passage answers and its answer (both empty when it
    answers none)."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(max_length=200)
    answer: str = Field(max_length=80)


class Clarifications(BaseModel):
    """The clarification step's reply: up to 4 interpretations, or none when there is nothing to clarify."""

    model_config = ConfigDict(extra="forbid")
    disambiguations: list[Clarification] = Field(max_length=4)
