"""Running methods on evaluation items exactly as the app runs them (the same event generators), scoring each
item, and keeping a resumable ``results.json``."""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from corpora.store import CollectionStore, PassageCollection
from models.rerankers import RankFusionReranker
from pipeline.context import RunContext
from pipeline.evaluation import metrics
from pipeline.evaluation.data import EvalItem, file_sha256, passage_document
from pipeline.events import EventKind, Status, StepEvent
from pipeline.methods import run_method
from pipeline.retrieval import HybridRetriever, PoolRetriever
from pipeline.settings import Settings

SETTINGS = ("closed", "per-question")


@dataclass(frozen=True)
class RunConfig:
    """What a results file was computed with; a resumed run must match it."""

    data: str
    data_sha256: str
    model: str
    setting: str
    top_k: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def closed_corpus(store: CollectionStore, items: list[EvalItem], data_sha256: str,
                  progress: Callable[[int, int], None] | None = None) -> PassageCollection:
    """All passages of all items of a file, de-duplicated, in a collection cached by the file's hash."""
    collection = store.create(f"eval-{data_sha256[:16]}")
    passages = [passage_document(p, source=item.dataset) for item in items for p in item.passages]
    unique = list({p.id: p for p in passages if p.page_content}.values())
    if collection.count() < len(unique):
        collection.add(unique, progress=progress)
    return collection


def _passage_ids(events: list[StepEvent]) -> set[str] | None:
    """Ids of every passage the run retrieved or gave the model; None when it had no retrieval step."""
    if not any(e.kind == EventKind.RETRIEVE for e in events):
        return None
    ids = set()
    for event in events:
        if event.kind in (EventKind.RETRIEVE, EventKind.HOP, EventKind.ANSWER) and event.status == Status.DONE:
            ids.update(p["id"] for p in event.payload.get("passages", []) if p.get("id"))
    return ids


def score(item: EvalItem, prediction: str, retrieved: set[str] | None) -> dict[str, float]:
    """The item's scores in 0..1: STR-EM / ROUGE-L / their geometric mean for long-form items, EM / F1
    otherwise, and recall of supporting passages when the run retrieved (``retrieved`` not None) and the item
    marks supporting passages."""
    answer = metrics.strip_citations(prediction)
    if item.is_long_form:
        out = {"str_em": metrics.str_em(answer, item.qa_pairs), "rouge_l": metrics.rouge_l(answer, item.long_answers)}
        out["str_em_rouge_l_geomean"] = metrics.geometric_mean(out["str_em"], out["rouge_l"])
    else:
        out = {"em": metrics.best_over_aliases(metrics.exact_match, answer, item.answers),
               "f1": metrics.best_over_aliases(metrics.f1, answer, item.answers)}
    found = None if retrieved is None else metrics.recall(retrieved, item.supporting_ids())
    if found is not None:
        out["support_recall"] = found
    return out


def tree_nodes(events: list[StepEvent]) -> list[dict[str, Any]]:
    """The final state of every clarification node a run produced (ToC), in creation order."""
    final: dict[str, StepEvent] = {}
    for event in events:
        if event.kind == EventKind.EXPAND and "node" in event.payload:
            final[event.id] = event
    return [{**e.payload["node"], "id": e.id, "state": e.payload.get("state"),
             "prune_kind": e.payload.get("prune_kind"), "score": e.payload.get("score")}
            for e in final.values() if e.payload["node"].get("answer") is not None]


def clarification_scores(item: EvalItem, nodes: list[dict[str, Any]]) -> dict[str, float]:
    """Answer-F1 of kept and of pruned clarified answers against all gold short answers of the item's
    qa_pairs (each node scored alone, averaged per item). Duplicates are left out: they are pruned for
    redundancy, not for being wrong."""
    golds = [a for pair in item.qa_pairs for a in pair.get("short_answers", [])]
    if not golds:
        return {}
    out = {}
    kept = [metrics.answer_f1(n["answer"], golds) for n in nodes if n["state"] in ("kept", "restored")]
    pruned = [metrics.answer_f1(n["answer"], golds) for n in nodes
              if n["state"] == "pruned" and n["prune_kind"] != "duplicate"]
    if kept:
        out["kept_dq_answer_f1"] = statistics.fmean(kept)
    if pruned:
        out["pruned_dq_answer_f1"] = statistics.fmean(pruned)
    return out


def run_item(method: str, item: EvalItem, ctx: RunContext) -> dict[str, Any]:
    """Run one method on one item through its event generator; return the item's record."""
    started = time.perf_counter()
    events = list(run_method(method, item.question, ctx))
    wall = time.perf_counter() - started
    answers = [e for e in events if e.kind == EventKind.ANSWER and e.status == Status.DONE]
    errors = [e.payload.get("message", e.title) for e in events if e.kind == EventKind.ERROR]
    prediction = answers[-1].payload.get("answer", "") if answers else ""
    nodes = tree_nodes(events)
    chain = [e.payload.get("sentence", "") for e in events if e.kind == EventKind.HOP and e.status == Status.DONE]
    scores = score(item, prediction, _passage_ids(events))
    scores.update(clarification_scores(item, nodes))
    return {
        "id": item.id,
        "method": method,
        "question": item.question,
        "prediction": prediction,
        "gold": item.answers,
        "scores": scores,
        "cost": {
            "wall_s": wall,
            "llm_calls": sum(e.llm_calls for e in events),
            "prompt_tokens": sum(e.prompt_tokens for e in events),
            "completion_tokens": sum(e.completion_tokens for e in events),
            "llm_s": sum(e.llm_seconds for e in events),
        },
        **({"tree": nodes} if nodes else {}),
        **({"chain": chain} if chain else {}),
        **({"error": "; ".join(errors)} if errors else {}),
    }


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-method means of the scores (x100) and the cost figures."""
    by_method: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_method.setdefault(record["method"], []).append(record)
    out = {}
    for method, rows in by_method.items():
        names = sorted({k for r in rows for k in r["scores"]})
        scores = {k: 100 * statistics.fmean(r["scores"][k] for r in rows if k in r["scores"]) for k in names}
        walls = [r["cost"]["wall_s"] for r in rows]
        cost = {
            "n": len(rows),
            "errors": sum("error" in r for r in rows),
            "wall_s_median": statistics.median(walls),
            "wall_s_p90": float(np.percentile(walls, 90)),
            "llm_calls_mean": statistics.fmean(r["cost"]["llm_calls"] for r in rows),
            "prompt_tokens_mean": statistics.fmean(r["cost"]["prompt_tokens"] for r in rows),
            "completion_tokens_mean": statistics.fmean(r["cost"]["completion_tokens"] for r in rows),
            "llm_share_of_wall": sum(r["cost"]["llm_s"] for r in rows) / max(sum(walls), 1e-9),
        }
        out[method] = {"metrics": scores, "cost": cost}
    return out


class ResultsFile:
    """``results.json``: written after every item (atomically), so an interrupted run resumes where it was."""

    def __init__(self, path: Path, config: RunConfig, machine: str) -> None:
        self.path = Path(path)
        self.config = config
        self.data: dict[str, Any] = {**config.as_dict(), "machine": machine, "n": 0, "methods": {}, "items": []}
        if self.path.exists():
            old = json.loads(self.path.read_text())
            mismatched = {k: (old.get(k), v) for k, v in config.as_dict().items() if old.get(k) != v}
            if mismatched:
                raise ValueError(
                    f"{self.path} holds results of another run ({', '.join(f'{k}: {a!r} here, {b!r} now' for k, (a, b) in mismatched.items())}). "
                    "Choose another --out, or delete the file to start over."
                )
            self.data["items"] = old.get("items", [])

    def done(self, item_id: str, method: str) -> bool:
        return any(r["id"] == item_id and r["method"] == method for r in self.data["items"])

    def add(self, record: dict[str, Any]) -> None:
        self.data["items"].append(record)
        self.save()

    def save(self) -> None:
        self.data["methods"] = summarize(self.data["items"])
        self.data["n"] = len({r["id"] for r in self.data["items"]})
        self.data["date"] = time.strftime("%Y-%m-%d %H:%M")
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, ensure_ascii=False))
        os.replace(tmp, self.path)


def make_context(llm, item: EvalItem, setting: str, collection: PassageCollection | None,
                 reranker: RankFusionReranker, top_k: int) -> RunContext:
    """The run context of one item: long-form answers for ASQA-style items, short ones for EM/F1 items."""
    settings = Settings(top_k=top_k, answer_style="long" if item.is_long_form else "short")
    if setting == "closed":
        retriever = HybridRetriever([collection])
    else:
        retriever = PoolRetriever([passage_document(p, item.dataset) for p in item.passages], reranker)
    return RunContext(llm=llm, retriever=retriever, settings=settings, embeddings=reranker.embeddings,
                      reranker=reranker)


def data_config(data: Path, model: str, setting: str, top_k: int) -> RunConfig:
    if setting not in SETTINGS:
        raise ValueError(f"--setting must be one of {', '.join(SETTINGS)}.")
    return RunConfig(data=str(data), data_sha256=file_sha256(data), model=model, setting=setting, top_k=top_k)
