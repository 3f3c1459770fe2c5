"""The resources one process shares between its users (embedder, collection store, loaded models), and how a
run's context is assembled from a person's choices. Used alike by the app, the CLI and the evaluation."""

from __future__ import annotations

import gc
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from corpora.demo import ensure_demo_collection
from corpora.isolated import DEFAULT_MEMORY_MB, DEFAULT_SECONDS
from corpora.store import CollectionStore
from models.cancel import wait_cancellable
from models.catalog import ModelCatalog, ModelOption, default_models_dir
from models.embeddings import SentenceEmbeddings
from models.errors import ModelError
from models.llm import ChatModel
from models.loading import load_chat_model
from models.rerankers import RankFusionReranker
from pipeline.access import CollectionAccess
from pipeline.context import RunContext
from pipeline.retrieval import HybridRetriever
from pipeline.settings import Settings
from pipeline.web import WebSource


MAX_QUESTION_CHARS = 2000  # a longer question is refused before any model work (a pasted document, a mistake)


def model_queue_position(cancel: threading.Event) -> int | None:
    """How many model calls of other runs come before the next call of the run whose Stop switch is ``cancel``
    (in-process models take turns); None when that run is not waiting for one."""
    from models.llama_backend import CALL_GATE

    return CALL_GATE.ahead_of(cancel)


def share_model_turns(cancel: threading.Event, person: str) -> None:
    """Count the in-process model calls of the run(s) whose Stop switch is ``cancel`` as ``person``'s share:
    the model's turns go round the people waiting, not round their runs (``models.cancel.CallGate``)."""
    from models.llama_backend import CALL_GATE

    CALL_GATE.share(cancel, person)


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
    models_dir: Path | None = None  # extra GGUF files on offer; None: default_models_dir(data_dir)
    endpoints: tuple[str, ...] = ()  # NAME=SPEC model servers on offer
    models_config: Path | None = None  # a TOML file with a [models] table of NAME = "SPEC"
    max_loaded_models: int = 2  # the least recently used model beyond this is unloaded
    max_runs_per_person: int = 2  # questions one person may have answered at once (0: no limit)
    max_collections_per_person: int = 20  # collections one person may own (admins: no limit; 0: no limit)
    # The costliest settings a person who is not an admin may choose on a shared server (0: no cap): the web
    # agent's actions and ToC's model calls, at their defaults (pipeline.limits.COSTLY).
    max_agent_actions: int = 16
    max_toc_calls: int = 19
    # Questions run at once in the app (more wait in the page's queue). In-process model calls take turns
    # through one gate anyway; a run waiting on retrieval, the web or a model server holds up nobody.
    max_runs: int = 8
    max_question_chars: int = MAX_QUESTION_CHARS  # a longer question is refused before any model work
    # A run still going after this many seconds is stopped, keeping what it found (0: no limit). The CLI and the
    # evaluation have none; the app's default is set by its --max-run-seconds.
    max_run_seconds: float = 0
    max_waiting: int = 0  # questions that may wait for a turn in the app; one more is told the server is busy
    max_upload_bytes_per_person: int = 0  # file bytes a person who is not an admin may keep (0: no limit)
    keep_traces_days: float = 0  # the app deletes saved traces older than this, hourly (0: keeps them)
    # Reading one added file, in a child process (corpora/isolated.py): its address space and wall-clock time.
    # Over either, the file fails alone with a one-line reason (0: no limit).
    parse_memory_mb: int = DEFAULT_MEMORY_MB
    parse_seconds: float = DEFAULT_SECONDS


class Runtime:
    """Lazily created, shared resources. Models are those of the operator's catalog, each loaded at most once
    (keyed by file or endpoint), the least recently used unloaded beyond ``max_loaded_models``. Loading runs in
    a worker thread and holds no lock that the collections or other sessions need."""

    def __init__(self, config: RuntimeConfig, embeddings: SentenceEmbeddings | None = None) -> None:
        self.config = config
        self._lock = threading.RLock()
        self._embeddings = embeddings  # None: loaded on first use
        self._store: CollectionStore | None = None
        self._reranker: RankFusionReranker | None = None
        self.catalog = ModelCatalog.configured(
            config.model, models_dir=config.models_dir or default_models_dir(config.data_dir),
            endpoints=config.endpoints, config=config.models_config)
        self._models_lock = threading.Lock()  # guards the three model tables, never held while loading
        self._loaded: OrderedDict[str, ChatModel] = OrderedDict()  # by identity, least recently used first
        self._loading: dict[str, Future] = {}
        self._pinned: set[str] = set()  # models given by use_model: never unloaded
        self._loader = ThreadPoolExecutor(max_workers=2, thread_name_prefix="model-load")
        self.access = CollectionAccess(config.data_dir)  # who may read and change each collection

    @property
    def embeddings(self) -> SentenceEmbeddings:
        with self._lock:
            if self._embeddings is None:
                self._embeddings = SentenceEmbeddings()
            return self._embeddings

    def load_embeddings_in_background(self) -> threading.Thread:
        """Start loading the embedder's model (torch and transformers: about 4-6 s) in a thread of its own, so it is
        ready by the first question; a load that fails is reported by the first embedding instead."""
        def load() -> None:
            try:
                self.embeddings.load()
            except ModelError:
                pass

        thread = threading.Thread(target=load, name="embedder-load", daemon=True)
        thread.start()
        return thread

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

    def model_choices(self) -> list[tuple[str, str]]:
        """(label, key) of every model on offer, for the browser's dropdown."""
        return self.catalog.choices()

    def llm(self, choice: str | None = None, cancel: threading.Event | None = None) -> ChatModel:
        """The model offered under ``choice`` (default: the runtime's), loading it if needed. ``ModelError``
        when it is not on offer or cannot load; ``Cancelled`` as soon as ``cancel`` is set while it loads."""
        option = self.catalog.get(choice or self.config.model)
        identity = option.identity()
        with self._models_lock:
            if identity in self._loaded:
                self._loaded.move_to_end(identity)
                return self._loaded[identity]
            future = self._loading.get(identity)
            if future is None:
                future = self._loading[identity] = self._loader.submit(self._load, option, identity)
        return wait_cancellable(future.result, cancel)

    def _load(self, option: ModelOption, identity: str) -> ChatModel:
        try:
            model = load_chat_model(option.spec, n_ctx=self.config.n_ctx)
        finally:
            with self._models_lock:
                self._loading.pop(identity, None)
        with self._models_lock:
            self._loaded[identity] = model
            evicted = self._evict(keep=identity)
        if evicted:
            # A run still using an unloaded model keeps it alive until it ends; collect now so that memory is
            # given back as soon as nothing uses it (llama.cpp objects sit in reference cycles).
            del evicted
            gc.collect()
        return model

    def _evict(self, keep: str) -> list[ChatModel]:
        evicted = []
        for identity in list(self._loaded):
            if len(self._loaded) <= max(1, self.config.max_loaded_models):
                break
            if identity != keep and identity not in self._pinned:
                evicted.append(self._loaded.pop(identity))
        return evicted

    def loaded_models(self) -> list[str]:
        """Identities of the models in memory, least recently used first."""
        with self._models_lock:
            return list(self._loaded)

    def use_model(self, choice: str, model: ChatModel) -> None:
        """Offer ``choice`` served by an already built model (a scripted one in tests, say)."""
        identity = self.catalog.add(choice).identity()
        with self._models_lock:
            self._loaded[identity] = model
            self._pinned.add(identity)

    def ensure_demo(self, progress: Callable[[int, int], None] | None = None) -> None:
        ensure_demo_collection(self.store, progress)

    def context(
        self,
        collections: list[str],
        *,
        settings: Settings | None = None,
        web: WebSource | None = None,
        model: str | None = None,
        cancel: threading.Event | None = None,
    ) -> RunContext:
        """A run context over the named collections (and ``web`` when given and enabled in ``settings``);
        ``cancel`` stops the wait for the model to load."""
        settings = settings or Settings()
        use_web = web if settings.use_web else None
        sources = self.store.open_many(collections)
        retriever = HybridRetriever(sources, use_web) if (sources or use_web) else None
        return RunContext(llm=self.llm(model, cancel), retriever=retriever, settings=settings,
                          embeddings=self.embeddings, reranker=self.reranker, cancel=cancel or threading.Event(),
                          models=lambda choice: self.llm(choice, cancel))

    def close(self) -> None:
        self._loader.shutdown(wait=True)
        with self._models_lock:
            models, self._loaded = list(self._loaded.values()), OrderedDict()
        for model in models:
            model.close()
