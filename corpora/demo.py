"""The bundled demo corpus, ingested into the ``demo`` collection on first start."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Callable

from langchain_core.documents import Document

from corpora.splitting import content_id
from corpora.store import CollectionStore, PassageCollection

DEMO_COLLECTION = "demo"
DEMO_FILE = Path(__file__).parent / "demo" / "passages.jsonl.gz"


def demo_passages(path: Path = DEMO_FILE) -> list[Document]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [
        Document(
            page_content=row["text"],
            metadata={"title": row["title"], "source": f"demo/{row['dataset']}", "position": i},
            id=content_id(row["title"], row["text"]),
        )
        for i, row in enumerate(rows)
    ]


def ensure_demo_collection(
    store: CollectionStore, progress: Callable[[int, int], None] | None = None
) -> PassageCollection:
    """Open the demo collection, ingesting whatever of the bundled passages it lacks (all, on first start), and
    build its passage graph if a collection from before graphs existed has none."""
    passages = demo_passages()
    collection = store.create(DEMO_COLLECTION)
    if collection.count() < len(passages):
        collection.add(passages, progress=progress)
    if not collection.graph_status().current:
        collection.update_graph()
    return collection
