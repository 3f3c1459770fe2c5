"""What each kind of step event carries: one pydantic model per kind, told apart by ``kind``.

A payload is validated when its event is made (an unknown or misspelt field raises at once, in the method that
made it) and when a trace is read back. Consumers read attributes, never string keys, so a field renamed in a
method and not in a consumer fails the tests that run every consumer over every method's events.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PassageRef(_Strict):
    """A passage as a step shows it: text, provenance (collection, file and page, or url) and its number in
    the prompt it was given in (citations [n] refer to it)."""

    id: str | None = None
    title: str = ""
    text: str = ""
    source: str | None = None
    collection: str | None = None
    page: int | None = None
    url: str | None = None
    number: int | None = None

    @classmethod
    def of(cls, doc: Document, number: int | None = None) -> "PassageRef":
        meta = doc.metadata
        page = meta.get("page")
        return cls(id=doc.id or meta.get("id"), title=meta.get("title") or "", text=doc.page_content,
                   source=meta.get("source"), collection=meta.get("collection"),
                   page=int(page) if isinstance(page, (int, float)) or (isinstance(page, str) and page.isdigit())
                   else None,
                   url=meta.get("url"), number=number)

    def label(self) -> str:
        """Where the passage comes from, for people: its title, then the file and page, or the url."""
        where = self.url or self.source or self.collection or ""
        page = f", p. {self.page}" if self.page else ""
        title = self.title or "Untitled"
        return f"{title} — {where}{page}" if where else title


def passage_refs(docs: list[Document], start: int = 1) -> list[PassageRef]:
    """``docs`` as passage references numbered from ``start``."""
    return [PassageRef.of(doc, i) for i, doc in enumerate(docs, start)]


class QAPair(_Strict):
    question: str
    answer: str


class RoutePayload(_Strict):
    """Which method runs and why (Auto's reason, or the person's choice), and the question as run (joined
    with the previous one for a follow-up)."""

    kind: Literal["route"] = "route"
    method: str
    label: str
    structure: str
    question: str
    reason: str = ""
    auto: bool = False
    follow_up: str | None = None  # the previous question this one was joined with

    def describe(self) -> str:
        """One line for people: Auto's pick and why, or the chosen method; and the follow-up it joined."""
        line = f"Auto picked {self.label} because {self.reason}" if self.auto else f"Method: {self.label}"
        if self.follow_up:
            line = f"Read as a follow-up of your previous question: \u201c{self.follow_up}\u201d. {line}"
        return line


class RetrievePayload(_Strict):
    kind: Literal["retrieve"] = "retrieve"
    query: str
    passages: list[PassageRef] = Field(default_factory=list)


class NodePayload(_Strict):
    """A node of a tree of interpretations: the root (the asked question) or a clarified question with its
    answer, and its state. ``prune_kind``: duplicate, no-clarification, no-evidence, verification, budget."""

    kind: Literal["node"] = "node"
    question: str
    answer: str | None = None
    depth: int = 0
    state: Literal["root", "candidate", "kept", "pruned", "restored"] = "candidate"
    reason: str = ""
    score: float | None = None
    prune_kind: str = ""
    llm_calls_used: int | None = None  # on the root, once the tree is finished


class ExpandPayload(_Strict):
    """A step that expands a node: the passages it read and the interpretations it proposed (which become
    node steps under it)."""

    kind: Literal["expand"] = "expand"
    query: str
    passages: list[PassageRef] = Field(default_factory=list)
    candidates: list[QAPair] = Field(default_factory=list)
    constrained_retry: bool = False
    message: str = ""  # why it failed, when it did


class Evidence(_Strict):
    passage: PassageRef | None = None
    answer: str | None = None
    p_true: float | None = None
    relevance: float | None = None
    sampled: str | None = None


class VerifyPayload(_Strict):
    kind: Literal["verify"] = "verify"
    keep: bool
    score: float
    reason: str
    verifier: str = ""
    evidence: Evidence = Field(default_factory=Evidence)


class PrunePayload(_Strict):
    kind: Literal["prune"] = "prune"
    prune_kind: str
    reason: str
    undo: bool = False


class HopPayload(_Strict):
    """One reasoning step of a chain: its sentence, the query it made and the passages that query added."""

    kind: Literal["hop"] = "hop"
    step: int
    sentence: str = ""
    query: str | None = None
    passages: list[PassageRef] = Field(default_factory=list)
    duplicates: int = 0
    pool_size: int | None = None
    note: str = ""
    stop: str = ""


class TokenPayload(_Strict):
    kind: Literal["answer_token"] = "answer_token"
    text: str


class AnswerPayload(_Strict):
    """The answer step: while running, empty; when done, the text, the passages it was given (numbered as
    cited) and the numbers it cites, plus what a method adds (a chain, interpretations...)."""

    kind: Literal["answer"] = "answer"
    answer: str = ""
    citations: list[int] = Field(default_factory=list)
    passages: list[PassageRef] = Field(default_factory=list)
    finish_reason: str | None = None
    short_answer: str | None = None
    reader: str | None = None
    reasoning: list[str] = Field(default_factory=list)
    collected: list[PassageRef] = Field(default_factory=list)
    unambiguous: bool | None = None
    interpretations: list[QAPair] = Field(default_factory=list)


class WarningPayload(_Strict):
    kind: Literal["warning"] = "warning"
    message: str


class ErrorPayload(_Strict):
    kind: Literal["error"] = "error"
    message: str


Payload = Annotated[
    Union[RoutePayload, RetrievePayload, NodePayload, ExpandPayload, VerifyPayload, PrunePayload, HopPayload,
          TokenPayload, AnswerPayload, WarningPayload, ErrorPayload],
    Field(discriminator="kind"),
]

# Notes on their parent step rather than steps of their own.
NOTE_KINDS = frozenset({"verify", "prune", "warning", "error"})
