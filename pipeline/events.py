"""The step events every method yields and every consumer (UI, CLI, evaluation) reads.

An event with an ``id`` already seen is an update of that step (for example ``running`` then ``done``);
``parent_id`` links steps into the tree, chain or graph a method builds. Saved as JSONL, the events are the
run's exportable and replayable trace.
"""

from __future__ import annotations

import itertools
import time
import uuid
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Iterator

from langchain_core.documents import Document
from pydantic import BaseModel, Field


class EventKind(str, Enum):
    RETRIEVE = "retrieve"
    RERANK = "rerank"
    EXPAND = "expand"
    VERIFY = "verify"
    PRUNE = "prune"
    HOP = "hop"
    ACTION = "action"
    VISIT = "visit"
    ANSWER_TOKEN = "answer_token"
    ANSWER = "answer"
    WARNING = "warning"
    ERROR = "error"


class Status(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class StepEvent(BaseModel):
    """One step of a method's run, or an update of it."""

    id: str
    run_id: str
    seq: int
    method: str
    kind: EventKind
    title: str
    parent_id: str | None = None
    status: Status = Status.DONE
    payload: dict[str, Any] = Field(default_factory=dict)
    started_at: float | None = None  # seconds since the epoch
    elapsed_s: float | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0

    def to_json(self) -> str:
        return self.model_dump_json()


def passage_payload(doc: Document, number: int | None = None) -> dict[str, Any]:
    """A passage as event data: its text, provenance (collection, file, page, or url) and rank."""
    meta = doc.metadata
    out = {
        "id": doc.id or meta.get("id"),
        "title": meta.get("title", ""),
        "text": doc.page_content,
        "source": meta.get("source"),
        "collection": meta.get("collection"),
        "page": meta.get("page"),
        "url": meta.get("url"),
    }
    if number is not None:
        out["number"] = number
    return {key: value for key, value in out.items() if value is not None}


class Tracer:
    """Makes the events of one run: ids, sequence numbers and timings."""

    def __init__(self, method: str, run_id: str | None = None) -> None:
        self.method = method
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._seq = itertools.count()
        self._ids = itertools.count(1)
        self._started: dict[str, float] = {}

    def new_id(self, prefix: str = "s") -> str:
        return f"{prefix}{next(self._ids)}"

    def event(
        self,
        kind: EventKind,
        title: str,
        *,
        id: str | None = None,  # noqa: A002 - the event's own field name
        parent_id: str | None = None,
        status: Status = Status.DONE,
        payload: dict[str, Any] | None = None,
        **cost: Any,
    ) -> StepEvent:
        """An event; a step's elapsed time runs from its first event to this one."""
        step_id = id or self.new_id()
        now = time.time()
        started = self._started.setdefault(step_id, now)
        return StepEvent(
            id=step_id,
            run_id=self.run_id,
            seq=next(self._seq),
            method=self.method,
            kind=kind,
            title=title,
            parent_id=parent_id,
            status=status,
            payload=payload or {},
            started_at=started,
            elapsed_s=None if status in (Status.PENDING, Status.RUNNING) else now - started,
            **cost,
        )


def write_jsonl(events: Iterable[StepEvent], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for event in events:
            out.write(event.to_json() + "\n")


def read_jsonl(path: Path) -> Iterator[StepEvent]:
    """Events from a saved trace; a malformed line raises ``ValueError`` naming its line number."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield StepEvent.model_validate_json(line)
            except ValueError as exc:
                raise ValueError(f"{path}: line {number} is not a step event ({exc})") from None
