"""The step events every method yields and every consumer (UI, CLI, evaluation) reads.

An event with an ``id`` already seen is an update of that step (for example ``running`` then ``done``);
``parent_id`` links steps into the tree, chain or graph a method builds, and ``links`` adds typed edges other
than the parent (a graph's neighbours, a merge of two quotes). The payload's model depends on the kind
(``pipeline.payloads``). Saved as JSONL, the events are the run's exportable and replayable trace; traces of the
first, untyped version are converted when read.
"""

from __future__ import annotations

import itertools
import json
import re
import time
import uuid
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Iterator

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.steps import KINDS, NOTE_KINDS, Payload

TRACE_VERSION = 2


class _Kind(str, Enum):
    @property
    def is_note(self) -> bool:
        """Shown on its parent step (a verdict, a pruning, a warning) rather than as a step of its own."""
        return self.value in NOTE_KINDS


# One member per kind of the table of step kinds (``EventKind.HOP == "hop"``).
EventKind = _Kind("EventKind", [(name.upper(), name) for name in KINDS])


class Status(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Link(BaseModel):
    """An edge from this step to another one besides its parent, with its type (e.g. ``keyword``, ``knn``,
    ``merge``)."""

    model_config = ConfigDict(extra="forbid")
    target: str
    type: str


class StepEvent(BaseModel):
    """One step of a method's run, or an update of it. ``kind`` always equals ``payload.kind``."""

    model_config = ConfigDict(extra="forbid")

    v: int = TRACE_VERSION
    id: str
    run_id: str
    seq: int
    method: str
    kind: EventKind
    title: str
    parent_id: str | None = None
    status: Status = Status.DONE
    payload: Payload
    links: list[Link] = Field(default_factory=list)
    started_at: float | None = None  # seconds since the epoch
    elapsed_s: float | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of the prompt tokens, those not read again (warm prefixes of earlier calls)
    completion_tokens: int = 0
    llm_seconds: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _kind_from_payload(cls, data: Any) -> Any:
        if isinstance(data, dict):
            payload = data.get("payload")
            payload_kind = payload.get("kind") if isinstance(payload, dict) else getattr(payload, "kind", None)
            data = {**data, "kind": data.get("kind") or payload_kind}
        return data

    @model_validator(mode="after")
    def _kinds_agree(self) -> "StepEvent":
        if self.kind.value != self.payload.kind:
            raise ValueError(f"event kind {self.kind.value!r} with a {self.payload.kind!r} payload")
        return self

    def to_json(self) -> str:
        return self.model_dump_json()


class Tracer:
    """Makes the events of one run: ids, sequence numbers and timings."""

    def __init__(self, method: str, run_id: str | None = None) -> None:
        self.method = method
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._seq = itertools.count()
        self._ids = itertools.count(1)
        self._started: dict[str, float] = {}

    @classmethod
    def continuing(cls, events: Iterable["StepEvent"], method: str, run_id: str | None = None) -> "Tracer":
        """A tracer for a run that continues ``events`` in one trace (a run resumed with edits): its step ids
        are numbered past every number ending theirs, and its sequence numbers follow theirs, so that no new step
        takes the id of an earlier one."""
        events = list(events)
        tracer = cls(method, run_id)
        numbers = [int(m.group(1)) for e in events if (m := re.search(r"(\d+)$", e.id))]
        tracer._ids = itertools.count(max(numbers, default=0) + 1)
        tracer._seq = itertools.count(max((e.seq for e in events), default=-1) + 1)
        return tracer

    def new_id(self, prefix: str = "s") -> str:
        return f"{prefix}{next(self._ids)}"

    def event(
        self,
        payload: BaseModel,
        title: str,
        *,
        id: str | None = None,  # noqa: A002 - the event's own field name
        parent_id: str | None = None,
        status: Status = Status.DONE,
        links: list[Link] | None = None,
        **cost: Any,
    ) -> StepEvent:
        """An event carrying ``payload`` (its kind is the payload's); a step's elapsed time runs from its first
        event to this one."""
        step_id = id or self.new_id()
        now = time.time()
        started = self._started.setdefault(step_id, now)
        return StepEvent(
            v=TRACE_VERSION,
            id=step_id,
            run_id=self.run_id,
            seq=next(self._seq),
            method=self.method,
            kind=payload.kind,
            title=title,
            parent_id=parent_id,
            status=status,
            payload=payload,
            links=links or [],
            started_at=started,
            elapsed_s=None if status in (Status.PENDING, Status.RUNNING) else now - started,
            **cost,
        )


def write_jsonl(events: Iterable[StepEvent], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for event in events:
            out.write(event.to_json() + "\n")


def read_jsonl(path: Path) -> Iterator[StepEvent]:
    """Events from a saved trace (either version); a malformed line raises ``ValueError`` naming its number."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if isinstance(data, dict) and "v" not in data:
                    data = _upgrade(data)
                elif isinstance(data, dict):
                    data = _upgrade_v2(data)
                yield StepEvent.model_validate(data)
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(map(str, error["loc"]))
                raise ValueError(f"{Path(path).name}: line {number} is not a step event "
                                 f"({where + ': ' if where else ''}{error['msg']})") from None
            except ValueError as exc:
                raise ValueError(f"{Path(path).name}: line {number} is not a step event ({exc})") from None


# The first trace format had untyped payloads: a ToC tree node was an "expand" event with a "node" dict, and a
# pruning's kind was stored under "kind". These rewrite such an event into the current shape.
_OLD_PASSAGE_KEYS = {"id", "title", "text", "source", "collection", "page", "url", "number"}


def _passages(items: Any) -> list[dict]:
    return [{k: v for k, v in p.items() if k in _OLD_PASSAGE_KEYS} for p in items or [] if isinstance(p, dict)]


def _upgrade(data: dict) -> dict:
    kind = data.get("kind")
    if not isinstance(data.get("payload", {}), dict):
        raise ValueError("its payload is not an object")
    old = dict(data.get("payload") or {})
    if kind in ("rerank", "action", "visit"):
        raise ValueError(f"'{kind}' steps are not part of any trace this version can read")
    if kind == "expand" and "node" in old:
        node = old["node"] or {}
        payload = {"kind": "node", "question": node.get("question", data.get("title", "")),
                   "answer": node.get("answer"), "depth": node.get("depth", 0),
                   "state": old.get("state") or "candidate", "reason": old.get("reason") or "",
                   "score": old.get("score"), "prune_kind": old.get("prune_kind") or "",
                   "llm_calls_used": old.get("llm_calls_used")}
    elif kind == "prune":
        payload = {"kind": "prune", "prune_kind": old.get("kind", ""), "reason": old.get("reason", ""),
                   "undo": bool(old.get("undo"))}
    elif kind == "verify":
        evidence = dict(old.get("evidence") or {})
        if isinstance(evidence.get("passage"), dict):
            evidence["passage"] = _passages([evidence["passage"]])[0]
        payload = {"kind": "verify", "keep": bool(old.get("keep")), "score": old.get("score") or 0.0,
                   "reason": old.get("reason", ""), "verifier": old.get("verifier", ""),
                   "evidence": {k: v for k, v in evidence.items()
                                if k in ("passage", "answer", "p_true", "relevance", "sampled")}}
    else:
        payload = {"kind": kind, **old}
        for key in ("passages", "collected"):
            if key in payload:
                payload[key] = _passages(payload[key])
        if kind == "answer" and payload.get("interpretations"):
            payload["interpretations"] = [{"question": i.get("question", ""), "answer": i.get("answer") or ""}
                                          for i in payload["interpretations"]]
    return _upgrade_v2({**data, "v": TRACE_VERSION, "kind": payload["kind"], "payload": payload})


# Traces written before answers had ``extras`` kept every method's answer fields flat on the answer, and marked
# a stop only by its title; both are rewritten here (a trace of today passes unchanged).
_TREE_FIELDS, _CHAIN_FIELDS = ("unambiguous", "interpretations"), ("reader", "reasoning", "short_answer")


def _upgrade_v2(data: dict) -> dict:
    payload = dict(data.get("payload") or {}) if isinstance(data.get("payload"), dict) else data.get("payload")
    if isinstance(payload, dict) and payload.get("kind") == "answer":
        moved = {key: payload.pop(key) for key in (*_TREE_FIELDS, *_CHAIN_FIELDS, "collected") if key in payload}
        if moved.get("unambiguous") is not None:
            payload["extras"] = {"kind": "tree", **{k: moved[k] for k in _TREE_FIELDS if moved.get(k) is not None}}
        elif moved.get("reader"):
            payload["extras"] = {"kind": "chain", **{k: moved[k] for k in (*_CHAIN_FIELDS, "collected")
                                                     if moved.get(k) is not None}}
        elif moved.get("collected"):
            payload["extras"] = {"kind": "walk", "collected": moved["collected"]}
    if isinstance(payload, dict) and payload.get("kind") == "warning" and data.get("title") == "Stopped":
        payload["stopped"] = True
    return {**data, "v": TRACE_VERSION, "payload": payload}
