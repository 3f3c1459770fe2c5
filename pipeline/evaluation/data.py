"""Evaluation items in the JSONL schema of ``data/eval`` (see ``data/eval/SOURCES.md``)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from corpora.splitting import content_id


@dataclass(frozen=True)
class EvalItem:
    """One question with its gold answers and passages."""

    id: str
    dataset: str
    question: str
    answers: list[str]
    passages: list[dict[str, Any]]
    qa_pairs: list[dict[str, Any]] = field(default_factory=list)  # ASQA: disambiguated questions
    long_answers: list[str] = field(default_factory=list)  # ASQA

    @property
    def is_long_form(self) -> bool:
        """Scored by STR-EM and ROUGE-L (ASQA) rather than EM / F1."""
        return bool(self.qa_pairs and self.long_answers)

    def supporting_ids(self) -> set[str]:
        return {passage_id(p) for p in self.passages if p.get("supporting")}


def passage_id(passage: dict[str, Any]) -> str:
    """The id of a dataset passage: a hash of its title and whitespace-normalised text."""
    title = (passage.get("title") or "").strip()
    text = " ".join((passage.get("text") or "").split())
    return content_id(title, text)


def passage_document(passage: dict[str, Any], source: str) -> Document:
    text = " ".join((passage.get("text") or "").split())
    return Document(page_content=text, metadata={"title": (passage.get("title") or "").strip(), "source": source},
                    id=passage_id(passage))


def load_items(path: Path, limit: int | None = None) -> list[EvalItem]:
    """The first ``limit`` items of a JSONL file; a malformed line raises ``ValueError`` naming it."""
    items = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                items.append(EvalItem(
                    id=str(row["id"]),
                    dataset=str(row.get("dataset", Path(path).stem)),
                    question=row["question"],
                    answers=[str(a) for a in row.get("answers", [])],
                    passages=list(row.get("passages", [])),
                    qa_pairs=list(row.get("qa_pairs", [])),
                    long_answers=list(row.get("long_answers", [])),
                ))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}: line {number} is not an evaluation item ({exc!r}).") from None
            if limit is not None and len(items) >= limit:
                break
    if not items:
        raise ValueError(f"{path}: no evaluation items.")
    return items


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
