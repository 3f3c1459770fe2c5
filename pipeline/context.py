"""What a method run needs: the model, the sources, the settings and a way to be stopped."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from langchain_core.embeddings import Embeddings

from models.cancel import CancellableModel
from models.errors import Cancelled, ModelError
from models.llm import ChatModel
from models.rerankers import Reranker
from pipeline.retrieval import HybridRetriever, PoolRetriever, Retrieved
from pipeline.settings import Settings

NO_SOURCES = "No sources are selected: choose a collection or the web."


@dataclass
class RunContext:
    """One run's resources. ``cancel`` is set from outside (the Stop button) and checked between steps and
    tokens, so a stop never touches another session's run."""

    llm: ChatModel
    retriever: HybridRetriever | PoolRetriever | None = None
    settings: Settings = field(default_factory=Settings)
    embeddings: Embeddings | None = None  # for demo selection and relevance checks
    reranker: Reranker | None = None  # orders a pool of passages for a new query
    cancel: threading.Event = field(default_factory=threading.Event)
    # Other models on offer, by choice ("fast"), loaded on first use: for a step whose setting gives it to a
    # smaller model (KGP's next-evidence line). None: only ``llm``.
    models: Callable[[str], ChatModel] | None = None

    def model_for(self, choice: str) -> ChatModel:
        """The model for a step whose setting names ``choice`` ("same": the run's own), under the run's Stop
        switch. ``ModelError`` when it is not on offer or cannot load."""
        if choice == "same":
            return self.llm
        if self.models is None:
            raise ModelError(f"No model '{choice}' is on offer to this run (it has only its own model).")
        return CancellableModel(self.models(choice), self.cancel)

    def stop_with(self, cancel: threading.Event) -> None:
        """Make ``cancel`` this run's Stop switch, checked by the model on every token as well."""
        self.cancel = cancel
        model = self.llm.model if isinstance(self.llm, CancellableModel) else self.llm
        self.llm = CancellableModel(model, cancel)

    def check_cancelled(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()

    def require_embeddings(self) -> Embeddings:
        if self.embeddings is None:
            raise ValueError("This method needs an embedding model in its run context.")
        return self.embeddings

    def retrieve(self, query: str, k: int | None = None) -> Retrieved:
        if self.retriever is None:
            return Retrieved(passages=[], warnings=[NO_SOURCES])
        return self.retriever.retrieve(query, k or self.settings.top_k)
