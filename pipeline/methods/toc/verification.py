"""Verifying a clarified answer against the ambiguous question (ToC's pruning), as a replaceable component.

The small models' sampled True/False is near chance (measured: docs/design-notes.md), so the default verifier
combines evidence: a retrieved passage must contain the answer at all; the model's probability of "True" (from
log-probabilities, not the sampled word) is averaged with the clarified question's relevance to the ambiguous
question (embedding cosine similarity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from models.llm import ChatModel, ChatResult, probability_true
from pipeline.payloads import Evidence, PassageRef
from pipeline.prompting import load_prompt
from pipeline.support import answer_passage
from pipeline.untrusted import format_passage


@dataclass
class Verdict:
    """Whether to keep a node, its score in 0..1, the evidence behind it, and the LLM call it cost (if any)."""

    keep: bool
    score: float
    reason: str
    evidence: Evidence = field(default_factory=Evidence)
    call: ChatResult | None = None


class Verifier(Protocol):
    name: str

    def verify(self, ambiguous: str, clarified: str, answer: str, passages: list[Document],
               source: Document | None = None) -> Verdict: ...


class EvidenceVerifier:
    """The default verifier: answer-containing passage required; score = mean(P(True), relevance)."""

    name = "evidence (answer in passage, P(True), relevance)"

    def __init__(self, llm: ChatModel, embeddings: Embeddings, threshold: float = 0.5,
                 temperature: float = 0.0) -> None:
        self.llm = llm
        self.embeddings = embeddings
        self.threshold = threshold
        self.temperature = temperature
        self.prompt = load_prompt("toc_verify")

    def relevance(self, ambiguous: str, clarified: str) -> float:
        vectors = np.asarray(self.embeddings.embed_documents([ambiguous, clarified]))
        return float(np.clip(vectors[0] @ vectors[1], 0.0, 1.0))

    def verify(self, ambiguous: str, clarified: str, answer: str, passages: list[Document],
               source: Document | None = None) -> Verdict:
        """``source``: the passage the clarification was read from (one-passage clarification); its relevance
        to the ambiguous question replaces the clarified question's, which restates the question whatever the
        passage is about."""
        passage = answer_passage(answer, ([source] if source is not None else []) + passages)
        if passage is None:
            return Verdict(False, 0.0, "the answer appears in no retrieved passage", Evidence(answer=answer))
        messages = self.prompt.messages(
            ambiguous_question=ambiguous,
            passage=format_passage(passage),  # neutralised: pipeline/untrusted.py
            clarified_question=clarified,
            answer=answer,
        )
        result = self.llm.chat(messages, self.prompt.options(self.temperature, top_logprobs=10))
        p_true = probability_true(result)
        about = f"{source.metadata.get('title', '')}: {source.page_content}" if source is not None else clarified
        relevance = self.relevance(ambiguous, about)
        score = (p_true + relevance) / 2
        evidence = Evidence(passage=PassageRef.of(passage), p_true=round(p_true, 4),
                            relevance=round(relevance, 4), sampled=result.text.strip())
        keep = score >= self.threshold
        reason = (f"score {score:.2f} {'≥' if keep else '<'} {self.threshold:.2f} "
                  f"(P(True) {p_true:.2f}, relevance {relevance:.2f})")
        return Verdict(keep, score, reason, evidence, result)
