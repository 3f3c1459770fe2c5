"""Running methods on evaluation items exactly as the app runs them (the same run service and method
generators), scoring each item from the run's folded state, and keeping a resumable ``results.json`` that
records each method's settings and prompt versions."""

from __future__ import annotations

import hashlib
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
from pipeline import metrics
from pipeline.evaluation.data import EvalItem, file_sha256, load_items, passage_document
from pipeline.methods import METHODS
from pipeline.retrieval import HybridRetriever, PoolRetriever
from pipeline.auto import auto_record
from pipeline.service import AUTO, RunRequest, RunService
from pipeline.routing import EXAMPLES as ROUTING_EXAMPLES
from pipeline.settings import Settings

SETTINGS = ("closed", "per-question", "pooled")
# The pooled setting's library: every evaluation file, dev and test, as a person's mixed library would hold them.
POOL_FOLDERS = (Path("data/eval"), Path("data/eval-test"))
PER_QUESTION = "_per_question"  # a method's score that is a count per question (MethodSpec.scores), not a share


@dataclass(frozen=True)
class RunConfig:
    """What a results file was computed with; a resumed run must match it."""

    data: str
    data_sha256: str
    model: str
    setting: str
    top_k: int
    pool_sha256: str | None = None  # the pooled setting: the files of its corpus, hashed together

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def method_config(method: str, settings: Settings) -> dict[str, Any]:
    """What a method's results depend on besides the data and model: its settings, the shared ones and the
    versions of its prompts (for Auto: the labelled questions its check's vote reads, and every method it may
    run)."""
    shared = settings.model_dump(exclude={"methods", "answer_style"})
    if method == AUTO:
        router = hashlib.sha256(ROUTING_EXAMPLES.read_bytes()).hexdigest()[:16]
        return {"shared": shared, "router": router,
                "methods": {name: method_config(name, settings) for name in METHODS}}
    spec = METHODS[method]
    return {"shared": shared, "settings": settings.for_method(method, spec.settings).model_dump(),
            "prompts": spec.prompt_versions()}


def closed_corpus(store: CollectionStore, items: list[EvalItem], data_sha256: str,
                  progress: Callable[[int, int], None] | None = None) -> PassageCollection:
    """All passages of ``items`` (a file's, or every file's of the pooled setting), de-duplicated, in a collection
    cached by ``data_sha256`` (the file's hash, or the pool's), with its passage graph (KGP; built with the index,
    or once for a collection cached before graphs existed)."""
    collection = store.create(f"eval-{data_sha256[:16]}")
    passages = [passage_document(p, source=item.dataset) for item in items for p in item.passages]
    unique = list({p.id: p for p in passages if p.page_content}.values())
    if collection.count() < len(unique):
        collection.add(unique, progress=progress)
    if not collection.graph_status().current:
        collection.update_graph()
    return collection


def file_corpus(store: CollectionStore, data: Path) -> PassageCollection:
    """The closed corpus of the evaluation file ``data``, as ``pipeline.evaluate`` indexes and caches it."""
    return closed_corpus(store, load_items(data), file_sha256(data))


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


def item_settings(item: EvalItem, settings: Settings) -> Settings:
    """Long cited answers for long-form items (ASQA), short ones for items scored by EM / F1."""
    return settings.model_copy(update={"answer_style": "long" if item.is_long_form else "short"})


def run_item(service: RunService, method: str, item: EvalItem, ctx: RunContext) -> dict[str, Any]:
    """Run one method (or Auto) on one item through the run service; return the item's record, read from the
    run's folded state."""
    started = time.perf_counter()
    # Saved traces (``pipeline.evaluate --trace-dir``) are named by method and item, so a later step (the
    # simulated person of benchmarks.steering) finds each one.
    run = service.start(RunRequest(question=item.question, method=method, settings=ctx.settings), context=ctx,
                        run_id=f"{method}-{item.id}" if service.trace_dir is not None else None)
    for _ in run:
        pass
    wall = time.perf_counter() - started
    state = run.state
    prediction = state.answer.answer if state.answer else ""
    scores = score(item, prediction, state.passage_ids())
    spec = METHODS.get(state.route.method) if state.route else None
    if spec is not None and spec.scores is not None:
        scores.update(spec.scores(item, state))
    kept = spec.record(state) if spec is not None and spec.record is not None else {}
    errors = state.errors()
    return {
        "id": item.id,
        "method": method,
        **({"routed_to": state.route.method} if method == AUTO and state.route else {}),
        "question": item.question,
        "prediction": prediction,
        "gold": item.answers,
        "scores": scores,
        "cost": {"wall_s": wall, **state.cost()},
        **({"abstained": True} if state.answer and state.answer.abstained else {}),
        **kept,
        **(auto_record(state) if method == AUTO else {}),
        **({"warnings": warnings} if (warnings := state.warnings()) else {}),
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
        # Scores are shares in 0..1 shown x100, except counts (keys ending in _per_question), shown as means.
        scores = {k: (1 if k.endswith(PER_QUESTION) else 100)
                  * statistics.fmean(r["scores"][k] for r in rows if k in r["scores"]) for k in names}
        walls = [r["cost"]["wall_s"] for r in rows]
        cost = {
            "n": len(rows),
            "errors": sum("error" in r for r in rows),
            "wall_s_median": statistics.median(walls),
            "wall_s_p90": float(np.percentile(walls, 90)),
            "llm_calls_mean": statistics.fmean(r["cost"]["llm_calls"] for r in rows),
            "prompt_tokens_mean": statistics.fmean(r["cost"]["prompt_tokens"] for r in rows),
            # Prompt tokens not read again (warm prefixes); records made before this was counted have none.
            "cached_tokens_mean": statistics.fmean(r["cost"].get("cached_tokens", 0) for r in rows),
            "completion_tokens_mean": statistics.fmean(r["cost"]["completion_tokens"] for r in rows),
            "llm_share_of_wall": sum(r["cost"]["llm_s"] for r in rows) / max(sum(walls), 1e-9),
        }
        cost["abstained"] = sum(bool(r.get("abstained")) for r in rows)
        routed = [r["routed_to"] for r in rows if "routed_to" in r]
        if routed:
            cost["routed_to"] = {m: routed.count(m) for m in sorted(set(routed))}
        out[method] = {"metrics": scores, "cost": cost}
    return out


class ResultsFile:
    """``results.json``: written after every item (atomically), so an interrupted run resumes where it was.
    It refuses to mix results of different data, models, settings or prompt versions. Its folder is made when
    missing, before any item runs (a run would otherwise fail when it first saves, its first item lost)."""

    def __init__(self, path: Path, config: RunConfig, machine: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.data: dict[str, Any] = {**config.as_dict(), "machine": machine, "n": 0, "methods": {}, "items": [],
                                     "method_configs": {}}
        self._old_backend: dict[str, Any] | None = None
        if self.path.exists():
            old = json.loads(self.path.read_text())
            mismatched = {k: (old.get(k), v) for k, v in config.as_dict().items() if old.get(k) != v}
            if mismatched:
                raise ValueError(
                    f"{self.path} holds results of another run ({', '.join(f'{k}: {a!r} here, {b!r} now' for k, (a, b) in mismatched.items())}). "
                    "Choose another --out, or delete the file to start over."
                )
            self.data["items"] = old.get("items", [])
            self.data["method_configs"] = old.get("method_configs", {})
            self._old_backend = old.get("backend")  # files written before backends were recorded have none

    def use_method(self, method: str, config: dict[str, Any]) -> None:
        """Record the configuration ``method`` runs with; ``ValueError`` when the file holds results of it
        computed with another one (other settings or prompt versions)."""
        config = json.loads(json.dumps(config))  # as it reads back from the file
        known = self.data["method_configs"].get(method)
        has_items = any(r["method"] == method for r in self.data["items"])
        if has_items and known != config:
            why = "before settings were recorded" if known is None else "with other settings or prompt versions"
            raise ValueError(f"{self.path} holds results of {method} computed {why}. Choose another --out, "
                             "or delete the file to start over.")
        self.data["method_configs"][method] = config

    def use_backend(self, settings: dict[str, Any]) -> None:
        """Record how the model runs (``ChatModel.backend_settings``: threads, prompt cache...); ``ValueError``
        when the file holds items computed with other backend settings, as their seconds would not compare."""
        settings = json.loads(json.dumps(settings))
        known = self._old_backend
        if known is not None and known != settings and self.data["items"]:
            changed = ", ".join(f"{k}: {known.get(k)!r} there, {settings.get(k)!r} now"
                                for k in sorted(set(known) | set(settings)) if known.get(k) != settings.get(k))
            raise ValueError(f"{self.path} holds results computed with other backend settings ({changed}). "
                             "Choose another --out, or delete the file to start over.")
        self.data["backend"] = settings

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
                 reranker: RankFusionReranker, settings: Settings, models=None) -> RunContext:
    """The run context of one item: the closed corpus or the item's own passages, and its answer style;
    ``models`` offers other models by choice (``Runtime.llm``) to steps whose setting names one."""
    if setting in ("closed", "pooled"):
        retriever = HybridRetriever([collection])
    else:
        retriever = PoolRetriever([passage_document(p, item.dataset) for p in item.passages], reranker)
    return RunContext(llm=llm, retriever=retriever, settings=item_settings(item, settings),
                      embeddings=reranker.embeddings, reranker=reranker, models=models)


def data_config(data: Path, model: str, setting: str, top_k: int, pool: list[Path] | None = None) -> RunConfig:
    if setting not in SETTINGS:
        raise ValueError(f"--setting must be one of {', '.join(SETTINGS)}.")
    pool_sha = pool_sha256(pool) if setting == "pooled" and pool else None
    return RunConfig(data=str(data), data_sha256=file_sha256(data), model=model, setting=setting, top_k=top_k,
                     pool_sha256=pool_sha)


def pool_files(data: Path, folders: tuple[Path, ...] = POOL_FOLDERS) -> list[Path]:
    """The files whose passages make the pooled corpus: every JSONL of ``folders``, and ``data`` itself."""
    files = {p.resolve(): p for folder in folders if folder.is_dir() for p in sorted(folder.glob("*.jsonl"))}
    files.setdefault(data.resolve(), data)
    return sorted(files.values(), key=lambda p: str(p))


def pool_sha256(files: list[Path]) -> str:
    """One hash for a pool of files: their contents' hashes, in a fixed order."""
    return hashlib.sha256("\n".join(sorted(file_sha256(p) for p in files)).encode()).hexdigest()
