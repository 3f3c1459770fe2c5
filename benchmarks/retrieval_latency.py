"""Median latency of one hybrid retrieval (query embedding, BM25, HNSW search, fusion, passage fetch) at 10k
and 100k passages.

    python -m benchmarks.retrieval_latency --sizes 10000,100000 --queries 50

Embedding 100k passages takes most of an hour on 2 cores, and the passages' meaning does not change the
latency, so the large collections are synthetic but realistic: each passage is a real demo passage with a
unique suffix, and its vector is that passage's real embedding plus small noise (so the HNSW graph sees
clustered, not uniform, data). Queries are the real questions of the evaluation files, embedded for real.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from corpora.demo import demo_passages
from corpora.store import CollectionStore
from models.embeddings import SentenceEmbeddings
from pipeline.evaluation.tables import machine, median, table
from pipeline.retrieval import HybridRetriever

EVAL_DIR = Path(__file__).resolve().parent.parent / "data" / "eval"


def fill(collection, base, vectors, size: int, rng: np.random.Generator) -> None:
    batch = 5000
    for start in range(0, size, batch):
        rows = range(start, min(size, start + batch))
        picks = [i % len(base) for i in rows]
        noisy = vectors[picks] + rng.normal(0, 0.02, (len(picks), vectors.shape[1]))
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        collection._raw.add(
            ids=[f"p{i}" for i in rows],
            embeddings=noisy.tolist(),
            documents=[f"{base[p].page_content} (copy {i})" for p, i in zip(picks, rows)],
            metadatas=[{"title": base[p].metadata["title"], "source": "synthetic"} for p in picks],
        )
    collection.bm25()  # build the BM25 index, as the store does after every change


def questions(limit: int) -> list[str]:
    out = []
    for path in sorted(EVAL_DIR.glob("*.jsonl")):
        out += [json.loads(line)["question"] for line in path.read_text().splitlines()[:limit]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    embeddings = SentenceEmbeddings()
    base = demo_passages()
    vectors = np.asarray(embeddings.embed_documents([p.page_content for p in base]))
    queries = questions(args.queries)[: args.queries]
    rng = np.random.default_rng(0)
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as folder:
            collection = CollectionStore(Path(folder), embeddings).create("bench")
            start = time.perf_counter()
            fill(collection, base, vectors, size, rng)
            build = time.perf_counter() - start
            retriever = HybridRetriever([collection])
            retriever.retrieve(queries[0], args.k)  # warm-up
            latencies = []
            for query in queries:
                start = time.perf_counter()
                retriever.retrieve(query, args.k)
                latencies.append((time.perf_counter() - start) * 1000)
            rows.append([f"{size:,}", len(queries), f"{median(latencies):.1f}",
                         f"{np.percentile(latencies, 90):.1f}", f"{build:.0f}"])
    print(f"Machine: {machine()}\n")
    print(table(["passages", "queries", "median ms", "p90 ms", "insert + BM25 build s"], rows))


if __name__ == "__main__":
    main()
