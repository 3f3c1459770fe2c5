"""The resources one process shares between its users (embedder, collection store, loaded models), and how a
run's context is assembled from a person's choices. Used alike by the app, the CLI and the evaluation."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from corpora.demo import ensure_demo_collection
from corpora.store import CollectionStore
from models.embeddings import SentenceEmbeddings
from models.llm import ChatModel
from models.loading import load_chat_model
from models.rerankers import RankFusionReranker
from pipeline.context import RunContext
from pipeline.retrieval import HybridRetriever
from pipeline.settings import Settings
from pipeline.web import WebSource


def default_data_dir() -> Path:
    """``$RQA_DATA_DIR``, else ``storage/`` beside the code."""
    return Path(os.environ.get("RQA_DATA_DIR", Path(__file__).resolve().parent.parent / "storage"))


def default_model() -> str:
    """``$RQA_MODEL``, else ``default`` (the bundled 1.5B model)."""
    return os.environ.get("RQA_MODEL") or "default"


@dataclass(frozen=True)
class RuntimeConfig:
    data_dir: Path = field(default_factory=default_data_dir)
    model: str = field(default_factory=default_model)  # default | fast | PATH.gguf | openai:URL[#MODEL] | langchain:...
    chroma_url: str | None = None  # None: embedded Chroma under data_dir
    # IRCoT prompts reach about 4,600 tokens with 15 long passages; 8,192 fits them (KV cache ~235 MB, 1.5B).
    n_ctx: int = 8192


class Runtime:
    """Lazily created, shared resources. Loading is guarded by a lock; models are cached by choice."""

    def __init__(self, config: RuntimeConfig, embeddings: SentenceEmbeddings | None = None) -> None:
        self.config = config
        self._lock = threading.RLock()
        self._embeddings = embeddings  # None: loaded on first use
        self._store: CollectionStore | None = None
        self._models: dict[str, ChatModel] = {}
        self._reranker: RankFusionReranker | None = None

    @property
    def embeddings(self) -> SentenceEmbeddings:
        with self._lock:
            if self._embeddings is None:
                self._embeddings = SentenceEmbeddings()
            return self._embeddings

    @property
    def store(self) -> CollectionStore:
        with self._lock:
            if self._store is None:
                self._store = CollectionStore(self.config.data_dir, self.embeddings, self.config.chroma_url)
            return self._store

    @property
    def reranker(self) -> RankFusionReranker:
        with self._lock:
            if self._reranker is None:
                self._reranker = RankFusionReranker(self.embeddings)
            return self._reranker

    def llm(self, choice: str | None = None) -> ChatModel:
        choice = choice or self.config.model
        with self._lock:
            if choice not in self._models:
                self._models[choice] = load_chat_model(choice, n_ctx=self.config.n_ctx)
            return self._models[choice]

    def use_model(self, choice: str, model: ChatModel) -> None:
        """Serve ``choice`` with an already built model (a scripted one in tests, say)."""
        with self._lock:
            self._models[choice] = model

    def ensure_demo(self, progress: Callable[[int, int], None] | None = None) -> None:
        ensure_demo_collection(self.store, progress)

    def context(
        self,
        collections: list[str],
        *,
        settings: Settings | None = None,
        web: WebSource | None = None,
        model: str | None = None,
    ) -> RunContext:
        """A run context over the named collections (and ``web`` when given and enabled in ``settings``)."""
        settings = settings or Settings()
        use_web = web if settings.use_web else None
        sources = self.store.open_many(collections)
        retriever = HybridRetriever(sources, use_web) if (sources or use_web) else None
        return RunContext(llm=self.llm(model), retriever=retriever, settings=settings,
                          embeddings=self.embeddings, reranker=self.reranker)

    def close(self) -> None:
        for model in self._models.values():
            model.close()
        self._models.clear()
