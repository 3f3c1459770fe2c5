"""Verifying a clarified answer against the ambiguous question (ToC's pruning), as a replaceable component.

The small models' sampled True/False is near chance (measured: docs/design-notes.md), so the default verifier
combines evidence: a retrieved passage must contain the answer at all; the model's probability of "True" (from
log-probabilities, not the sampled word) is averaged with the clarified question's relevance to the ambiguous
question (embedding cosine similarity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from models.llm import ChatModel, ChatResult
from pipeline.payloads import Evidence, PassageRef
from pipeline.prompting import load_prompt
from pipeline.text import normalize_answer
from pipeline.untrusted import format_passage, neutralise


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


def answer_passage(answer: str, passages: list[Document]) -> Document | None:
    """The first (most relevant) passage whose normalised text contains the normalised answer; for an answer of
    several parts ("50, 100", "Paris and Lyon") that no passage holds as written, the first that holds each part
    ("The default weight is 50, and the maximum is 100")."""
    needle = normalize_answer(answer)
    if not needle:
        return None
    # The text the model read: an answer that only an injected instruction holds has no evidence.
    texts = [f" {normalize_answer(_read_text(passage))} " for passage in passages]
    for passage, text in zip(passages, texts):
        if needle in text:
            return passage
    parts = [normalize_answer(part) for part in _PARTS.split(answer)]
    parts = [part for part in parts if part]
    if len(parts) > 1:
        for passage, text in zip(passages, texts):
            if all(f" {part} " in text for part in parts):
                return passage
    return None


def _read_text(passage: Document) -> str:
    return f"{passage.metadata.get('title', '')} {neutralise(passage.page_content).text}"


_PARTS = re.compile(r"\s*(?:[,;/&]|\band\b)\s*", re.IGNORECASE)


def probability_true(result: ChatResult) -> float:
    """P(True) / (P(True) + P(False)) from the first token's alternatives; the sampled word if none came."""
    p_true = result.first_token_probability(("true",))
    p_false = result.first_token_probability(("false",))
    if p_true is None or p_false is None or p_true + p_false == 0:
        return 1.0 if result.text.strip().lower().startswith("true") else 0.0
    return p_true / (p_true + p_false)


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
