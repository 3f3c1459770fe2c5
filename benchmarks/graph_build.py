"""Cost of the passage graph of Knowledge Graph Prompting (corpora/graph.py): build time, memory and size for the
demo corpus and for large synthetic collections, and the time to add one file to such a collection.

    python -m benchmarks.graph_build --sizes demo,100000 --file README.md
    python -m benchmarks.graph_build --sizes "" --eval data/eval/hotpotqa.jsonl,data/eval/musique.jsonl

``--eval`` measures the graphs of evaluation files' closed corpora (indexed in ``--eval-data-dir``, as
``pipeline.evaluate`` caches them; indexing a file not cached yet embeds its passages first).

The demo corpus is the bundled one with its real embeddings. Larger collections are synthetic, made as in
``benchmarks.retrieval_latency``: each passage a real demo passage with a unique suffix, its vector that passage's
embedding plus small noise (embedding 100k passages would take most of an hour and does not change the graph's
cost). Their texts repeat, so their keyword edges are fewer than a real collection's (a keyword salient in more
than 50 passages links nothing) while their nearest neighbours are near copies: the figures are the cost of the
machinery, not a picture of a real graph. Adding a file goes through the real ingest (load, split, embed, store,
BM25 index, graph) and reports the graph's share.
"""

from __future__ import annotations

import argparse
import gc
import resource
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.retrieval_latency import fill
from corpora.demo import demo_passages
from corpora.graph import PassageGraph
from corpora.ingest import ingest_files
from corpora.store import CollectionStore
from models.embeddings import SentenceEmbeddings
from pipeline.evaluation.data import file_sha256, load_items
from pipeline.evaluation.harness import closed_corpus
from pipeline.evaluation.tables import machine, table
from pipeline.runtime import default_data_dir


def resident_mb() -> float:
    """Resident memory of this process now (MB)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 1e6


class PeakSampler:
    """The highest resident memory while the block runs, sampled every 20 ms (the process's own peak was set
    earlier, by the embedder)."""

    def __enter__(self) -> "PeakSampler":
        self.peak = resident_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, resident_mb())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def folder_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def demo_collection(store: CollectionStore, base, vectors: np.ndarray):
    """The demo corpus with its real embeddings, stored without building its graph."""
    collection = store.create("bench")
    for start in range(0, len(base), 5000):
        batch = base[start : start + 5000]
        collection._raw.add(ids=[p.id for p in batch], embeddings=vectors[start : start + len(batch)].tolist(),
                            documents=[p.page_content for p in batch], metadatas=[p.metadata for p in batch])
    collection.bm25()
    return collection


def measure(collection, label: str, add_file: Path | None) -> list:
    """Build the graph from scratch, reload it, and add ``add_file``; one table row."""
    collection._graph.drop()  # from scratch, also where one was built before
    gc.collect()
    before = resident_mb()
    with PeakSampler() as sampler:
        start = time.perf_counter()
        collection.update_graph()
        build = time.perf_counter() - start
    graph = collection.graph()
    gc.collect()
    stats = graph.stats()
    resident = resident_mb() - before
    peak = sampler.peak - before
    folder = collection.store.graph_folder(collection.name)
    start = time.perf_counter()
    PassageGraph.load(folder)
    load = time.perf_counter() - start
    kinds = " / ".join(f"{stats.get(f'{name}_edges', 0):,}" for name in ("knn", "keyword", "title", "sequence"))
    row = [label, f"{stats.get('passage_nodes', 0):,}", f"{stats['edges']:,}", kinds, f"{build:.1f}",
           f"{resident:.0f}", f"{peak:.0f}", f"{folder_mb(folder):.1f}", f"{load:.2f}"]
    if add_file is None:
        return row + ["-", "-", "-"]
    timings: list[float] = []
    sync = collection._graph.sync  # the store's hook: time the graph's share of the ingest

    def timed(data, refit=False):
        started = time.perf_counter()
        try:
            return sync(data, refit)
        finally:
            timings.append(time.perf_counter() - started)

    collection._graph.sync = timed
    start = time.perf_counter()
    (outcome,) = ingest_files(collection, [(add_file, add_file.name)])
    total = time.perf_counter() - start
    collection._graph.sync = sync
    return row + [f"{outcome.passages}", f"{total:.1f}", f"{sum(timings):.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="demo,100000", help="'demo' and/or numbers of synthetic passages")
    parser.add_argument("--file", type=Path, default=Path(__file__).resolve().parent.parent / "README.md",
                        help="the file added to each collection (default: the README)")
    parser.add_argument("--eval", default="", help="comma-separated evaluation files whose closed corpora to measure")
    parser.add_argument("--eval-data-dir", type=Path, default=default_data_dir() / "evaluation",
                        help="where pipeline.evaluate caches closed corpora (default: %(default)s)")
    args = parser.parse_args()
    embeddings = SentenceEmbeddings()
    rows = []
    for data in filter(None, args.eval.split(",")):
        store = CollectionStore(args.eval_data_dir, embeddings)
        collection = closed_corpus(store, load_items(Path(data)), file_sha256(Path(data)))
        rows.append(measure(collection, f"closed corpus of {Path(data).stem}", None))
    sizes = [s for s in args.sizes.split(",") if s]
    if not sizes:
        _print(rows)
        return
    base = demo_passages()
    print(f"Embedding the {len(base):,} demo passages once...", flush=True)
    vectors = np.asarray(embeddings.embed_documents([p.page_content for p in base]), dtype=np.float32)
    rng = np.random.default_rng(0)
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix="graph-bench-"))
        try:
            store = CollectionStore(folder, embeddings)
            if size == "demo":
                collection, label = demo_collection(store, base, vectors), "demo corpus"
            else:
                collection, label = store.create("bench"), f"synthetic {int(size):,}"
                fill(collection, base, vectors, int(size), rng)
            rows.append(measure(collection, label, args.file))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    _print(rows)


def _print(rows: list) -> None:
    print(f"Machine: {machine()}\n")
    print(table(["collection", "passages", "edges", "knn / keyword / title / sequence", "build s",
                 "memory kept MB", "memory peak MB", "on disk MB", "load s", "file passages", "add file s",
                 "of which graph s"], rows))


if __name__ == "__main__":
    main()
