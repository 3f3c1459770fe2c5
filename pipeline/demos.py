"""Few-shot demonstrations chosen by nearest-neighbour similarity of their questions to the asked question."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import yaml
from langchain_core.embeddings import Embeddings

from pipeline.prompting import PROMPT_DIR


@functools.lru_cache(maxsize=None)
def demo_pool(name: str) -> tuple[dict[str, Any], ...]:
    """The demos of ``pipeline/prompts/demos/NAME.yaml`` (each with at least a ``question``)."""
    demos = yaml.safe_load((PROMPT_DIR / "demos" / f"{name}.yaml").read_text(encoding="utf-8"))
    if not all(isinstance(d, dict) and isinstance(d.get("question"), str) for d in demos):
        raise ValueError(f"demos/{name}.yaml: every demo needs a 'question' string.")
    return tuple(demos)


@functools.lru_cache(maxsize=8)
def selector(name: str, embeddings: Embeddings) -> "DemoSelector":
    """A cached selector per demo file and embedder."""
    return DemoSelector(name, embeddings)


class DemoSelector:
    """Picks the ``k`` demos whose questions are most similar to a question; demo vectors are computed once."""

    def __init__(self, name: str, embeddings: Embeddings) -> None:
        self.demos = demo_pool(name)
        self.embeddings = embeddings
        self._vectors = np.asarray(embeddings.embed_documents([d["question"] for d in self.demos]))

    def select(self, question: str, k: int) -> list[dict[str, Any]]:
        if k <= 0:
            return []
        similarity = self._vectors @ np.asarray(self.embeddings.embed_query(question))
        order = np.argsort(-similarity, kind="stable")[:k]
        return [self.demos[i] for i in reversed(order)]  # the closest demo last, nearest to the question
