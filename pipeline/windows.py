"""Passage windows: the sentences of a passage that a question needs, so that an answer prompt reads fewer tokens.

Reading the prompt is most of a question's time on a CPU (docs/performance.md), and an answer prompt's passages
are most of what it reads anew. A window keeps a passage's first sentence (what the passage is about; a bridge
passage's first sentence often holds the fact asked for), then the sentences that rank highest for the question,
as many as fit in a budget of words, in the passage's own order, with "..." where sentences were left out. With
an embedder, sentences rank by closeness in meaning to the question ("born in" answers "place of birth", which
shares no word with it); without one, by the question's key terms they mention (``pipeline.support.key_terms``:
names and numbers count double). A passage within the budget is left whole; the title is always shown. Only the
prompt reads the window: the picture, the citations and the support check keep the whole passage.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from pipeline.support import _WORD, _stems, key_terms
from pipeline.text import sentence_spans

GAP = "..."


def question_weights(question: str) -> dict[str, float]:
    """The stems of ``question``'s key terms with their weights (a stem's highest)."""
    terms = key_terms(question)
    out: dict[str, float] = {}
    for stem, (_, weight) in zip(_stems([t for t, _ in terms]), terms):
        out[stem] = max(out.get(stem, 0.0), weight)
    return out


def window(passage: Document, weights: dict[str, float], budget: int, *,
           score: Callable[[list[str]], list[float]] | None = None) -> Document:
    """``passage`` cut to at most about ``budget`` words of its sentences (see the module); whole when it fits.
    ``score`` ranks the sentences (higher first); by default, the weights of the key terms each mentions."""
    text = " ".join(passage.page_content.split())
    if budget <= 0 or len(text.split()) <= budget:
        return passage
    sentences = _sentences(text)
    sizes = [len(s.split()) for s in sentences]
    scores = score(sentences) if score is not None else [
        sum(weights.get(stem, 0.0) for stem in set(_stems(_WORD.findall(s)))) for s in sentences]
    kept, used = {0}, sizes[0]
    for i in sorted(range(1, len(sentences)), key=lambda i: (-scores[i], i)):
        if used + sizes[i] <= budget:
            kept.add(i)
            used += sizes[i]
    if sizes[0] > budget:  # one long first sentence: its first words only
        return Document(page_content=" ".join(sentences[0].split()[:budget]) + f" {GAP}", metadata=passage.metadata)
    parts, last = [], -1
    for i in sorted(kept):
        if i != last + 1:
            parts.append(GAP)
        parts.append(sentences[i])
        last = i
    if last != len(sentences) - 1:
        parts.append(GAP)
    return Document(page_content=" ".join(parts), metadata=passage.metadata)


def windows(question: str, passages: list[Document], budget: int,
            embeddings: Embeddings | None = None) -> list[Document]:
    """Each of ``passages`` as its window for ``question`` (the passages themselves when ``budget`` is 0), its
    sentences ranked by closeness in meaning to the question when ``embeddings`` is given (one batch for all)."""
    if budget <= 0:
        return passages
    weights = question_weights(question)
    score = None
    if embeddings is not None:
        long = [p for p in passages if len(p.page_content.split()) > budget]
        sentences = sorted({s for p in long for s in _sentences(p.page_content)})
        if sentences:
            asked = np.asarray(embeddings.embed_query(question))
            similarity = dict(zip(sentences, (np.asarray(embeddings.embed_documents(sentences)) @ asked).tolist()))

            def score(found: list[str]) -> list[float]:
                return [similarity[s] for s in found]

    return [window(p, weights, budget, score=score) for p in passages]


def _sentences(text: str) -> list[str]:
    text = " ".join(text.split())
    return [s for s in (text[a:b].strip() for a, b in sentence_spans(text)) if s]
