"""Ingestion speed (passages/s into a fresh collection: embedding, Chroma insert, BM25 build) against the raw
encoder's speed on the same passages.

    python -m benchmarks.ingest_speed --passages 1000 --repeats 3 [--batch-size 64]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from corpora.demo import demo_passages
from corpora.store import CollectionStore
from models.embeddings import SentenceEmbeddings
from pipeline.evaluation.tables import machine, median, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=None, help="texts per encoder batch (default: the "
                        "app's)")
    args = parser.parse_args()
    passages = demo_passages()[: args.passages]
    embeddings = SentenceEmbeddings() if args.batch_size is None else SentenceEmbeddings(batch_size=args.batch_size)
    embeddings.embed_documents([p.page_content for p in passages[:64]])  # warm-up
    raw, ingest = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        embeddings.embed_documents([p.page_content for p in passages])  # what the store embeds
        raw.append(len(passages) / (time.perf_counter() - start))
        with tempfile.TemporaryDirectory() as folder:
            collection = CollectionStore(Path(folder), embeddings).create("bench")
            start = time.perf_counter()
            collection.add(passages)
            ingest.append(len(passages) / (time.perf_counter() - start))
    words = median([len(p.page_content.split()) for p in passages])
    print(f"Machine: {machine()}\n")
    print(table(["passages", "median words", "batch", "raw encoder passages/s", "ingestion passages/s", "ratio"],
                [[len(passages), f"{words:.0f}", embeddings.batch_size, f"{median(raw):.1f}", f"{median(ingest):.1f}",
                  f"{median(ingest) / median(raw):.2f}"]]))


if __name__ == "__main__":
    main()
