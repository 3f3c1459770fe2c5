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
    table: int | None = None  # a table of its file (a passage holding the table as Markdown)

    @classmethod
    def of(cls, doc: Document, number: int | None = None) -> "PassageRef":
        meta = doc.metadata
        page = meta.get("page")
        table = meta.get("table")
        return cls(id=doc.id or meta.get("id"), title=meta.get("title") or "", text=doc.page_content,
                   source=meta.get("source"), collection=meta.get("collection"),
                   page=int(page) if isinstance(page, (int, float)) or (isinstance(page, str) and page.isdigit())
                   else None,
                   url=meta.get("url"), number=number,
                   table=int(table) if isinstance(table, int) and not isinstance(table, bool) and table > 0
                   else None)

    def document(self) -> Document:
        """The passage as a method reads it again (a resumed run's passages come from its trace): its text, id and
        provenance, as ``of`` took them."""
        meta = {"title": self.title, "source": self.source, "collection": self.collection, "page": self.page,
                "url": self.url, "table": self.table}
        return Document(page_content=self.text, id=self.id,
                        metadata={k: v for k, v in meta.items() if v is not None and v != ""})

    def label(self) -> str:
        """Where the passage comes from, for people: its title, then the file and page, or the url."""
        where = self.url or self.source or self.collection or ""
        page = f", p. {self.page}" if self.page else ""
        page += f", table {self.table}" if self.table else ""
        title = self.title or "Untitled"
        return f"{title} — {where}{page}" if where else title


def passage_refs(docs: list[Document], start: int = 1) -> list[PassageRef]:
    """``docs`` as passage references numbered from ``start``."""
    return [PassageRef.of(doc, i) for i, doc in enumerate(docs, start)]


class QAPair(_Strict):
    question: str
    answer: str
    passage: int | None = None  # the number of the passage it was read from (ToC's one-passage clarification)


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
    escalated_from: str | None = None  # Auto goes deeper: the label of the method whose answer came first

    def describe(self) -> str:
        """One line for people: Auto's pick and why, or the chosen method; and the follow-up it joined."""
        if self.escalated_from:
            line = f"Auto answered first with {self.escalated_from}, then went deeper with {self.label}: {self.reason}"
        elif self.auto:
            line = f"Auto picked {self.label} because {self.reason}"
        else:
            line = f"Method: {self.label}"
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


class PlanPayload(_Strict):
    """A hop-by-hop chain's plan: its sub-questions (``#k`` stands for the answer of sub-question k) and its
    final line; or, when the model's plan cannot be followed, why (the sentence chain runs instead)."""

    kind: Literal["plan"] = "plan"
    questions: list[str] = Field(default_factory=list)
    final: str = ""
    note: str = ""  # how the plan differs from what the model wrote (completed, or read from the question)
    error: str = ""


WHOLE_COLLECTION = "the whole collection"  # what a hop is asked again of by default (KGP's hop_beyond_walk)


class SubQuestionPayload(_Strict):
    """One hop: the sub-question as planned and as asked (earlier answers put in), the passages retrieved for
    it (numbered as its prompt showed them) and the answer read from one of them, checked to be in that
    passage; or, when none was found, why. The web agent hop by hop lists the facts quoted for it instead,
    numbered as the run's facts."""

    kind: Literal["subquestion"] = "subquestion"
    step: int
    planned: str
    question: str = ""
    answer: str = ""
    source: int | None = None  # the number of the passage holding the answer, among ``passages``
    found: bool | None = None  # None while the hop runs
    passages: list[PassageRef] = Field(default_factory=list)
    note: str = ""
    # the country the model named where the passage names only its people ("Russia" for "Russian"): what a later
    # sub-question is asked about
    said: str = ""
    # asked for the likeliest answer after "not found": a passage holds it but does not state it (IRCoT's infer_hop)
    inferred: bool = False
    # asked a second time after the first asking found nothing, of ``again_of``: the whole collection's
    # retrieval (KGP's hop_beyond_walk; also what an empty ``again_of`` of an older trace means) or the next
    # passages the same retrieval ranks (IRCoT's hop_next)
    again: bool = False
    again_of: str = ""

    def again_title(self) -> str:
        """What a hop's title adds when it was asked a second time (" again, of the whole collection"), or ""."""
        return f" again, of {self.again_of or WHOLE_COLLECTION}" if self.again else ""


class ComparedValue(_Strict):
    """One side of a computed comparison: what it is about, the value read and how it was read."""

    about: str
    value: str = ""
    read_as: str = ""
    source: PassageRef | None = None


class ComparePayload(_Strict):
    """A comparison computed in code from two sub-answers (earlier, later, more, less, same, both): both values
    with their passages, and the result, or why it could not be decided."""

    kind: Literal["compare"] = "compare"
    comparison: str
    values: list[ComparedValue] = Field(default_factory=list)
    result: str = ""
    reason: str = ""


class TokenPayload(_Strict):
    kind: Literal["answer_token"] = "answer_token"
    text: str


class TreeExtras(_Strict):
    """What Tree of Clarifications adds to its answer: the interpretations it answered, or that none survived
    (the question was treated as unambiguous)."""

    kind: Literal["tree"] = "tree"
    unambiguous: bool
    interpretations: list[QAPair] = Field(default_factory=list)

    def lines(self) -> list[str]:
        """For people, one line each."""
        if self.unambiguous:
            return ["treated as unambiguous: no interpretation survived"]
        return [f"interpretation: {i.question} → {i.answer}" for i in self.interpretations]


class ChainExtras(_Strict):
    """What IRCoT adds to its answer: its reader, the chain's sentences (or, hop by hop, its sub-questions and
    their answers), every passage the chain collected and, for a chain-of-thought reader, the short answer it
    concluded. The web agent hop by hop adds the same, its facts as the passages collected."""

    kind: Literal["chain"] = "chain"
    reader: str
    reasoning: list[str] = Field(default_factory=list)
    collected: list[PassageRef] = Field(default_factory=list)
    short_answer: str | None = None
    hops: list[QAPair] = Field(default_factory=list)  # hop by hop: each sub-question and the answer found

    def lines(self) -> list[str]:
        """For people, one line each."""
        return ([f"reader: {self.reader}"] + [f"reasoning: {s}" for s in self.reasoning]
                + [f"hop: {h.question} → {h.answer or 'not found'}" for h in self.hops]
                + [f"{len(self.collected)} passages collected"]
                + ([f"short answer: {self.short_answer}"] if self.short_answer else []))


class WalkExtras(_Strict):
    """What a graph walk (KGP) adds to its answer: every passage the walk collected for its reader."""

    kind: Literal["walk"] = "walk"
    collected: list[PassageRef] = Field(default_factory=list)

    def lines(self) -> list[str]:
        """For people, one line each."""
        return [f"{len(self.collected)} passages collected by the walk"]


AnswerExtras = Annotated[Union[TreeExtras, ChainExtras, WalkExtras], Field(discriminator="kind")]


class AnswerPayload(_Strict):
    """The answer step: while running, empty; when done, the text, the passages it was given (numbered as
    cited) and the numbers it cites, plus what its method adds (``extras``: a chain, interpretations...)."""

    kind: Literal["answer"] = "answer"
    answer: str = ""
    citations: list[int] = Field(default_factory=list)
    passages: list[PassageRef] = Field(default_factory=list)
    finish_reason: str | None = None
    abstained: bool = False  # the answer says the sources do not answer the question
    support: float | None = None  # share of the question's key terms the passages mention, when too low
    unsourced: list[str] = Field(default_factory=list)  # names and numbers in the answer no given passage mentions
    extras: AnswerExtras | None = None
    preliminary: bool = False  # Auto's quick answer, shown while a deeper method runs (its answer replaces it)


class ResultRef(_Strict):
    """A search result as a browsing agent saw it: its number in the result list, title, snippet and address."""

    number: int
    title: str = ""
    snippet: str = ""
    url: str | None = None
    source: str | None = None
    collection: str | None = None


class SentenceRef(_Strict):
    """A numbered sentence of the page window a browsing agent saw; ``quoted`` when that step quoted it."""

    number: int
    text: str
    quoted: bool = False


class PageView(_Strict):
    """The page open after a browsing action, and which of its windows is shown (1-based)."""

    title: str = ""
    url: str | None = None
    source: str | None = None
    collection: str | None = None
    page: int | None = None
    window: int = 1
    windows: int = 1


class ActionPayload(_Strict):
    """One action of a browsing agent (WebCPM-style): what it did and what the screen showed after it (results,
    or a page window as numbered sentences), the fact it quoted or merged, the actions it was allowed and the
    rules that masked others, a refusal. ``passages`` holds the passages loaded into view or quoted (the
    evaluation's support recall). ``step`` numbers the agent's own actions (None for the start and for an end it
    did not choose); ``ended_by`` on the finish step: model (the agent chose Finish), budget, invalid, error, web
    (the search failed), only_finish (no other action was allowed, so no call was made), pages or facts (the
    one-shot variant read every page, or found enough facts), hops or missing (hop by hop: every sub-question
    was answered, or an answer the plan needs was not found)."""

    kind: Literal["action"] = "action"
    action: Literal["start", "choose", "search", "load", "scroll_down", "scroll_up", "back", "quote", "merge",
                    "finish", "invalid"]
    step: int | None = None
    browser: str = ""  # what is browsed (on a start step)
    query: str | None = None
    results: list[ResultRef] = Field(default_factory=list)
    result: int | None = None  # the result a load opened
    page: PageView | None = None
    sentences: list[SentenceRef] = Field(default_factory=list)
    fact: int | None = None  # the fact this step quoted or merged into
    merged: list[int] = Field(default_factory=list)  # the facts a merge joined
    facts: int = 0  # facts held after this step
    passages: list[PassageRef] = Field(default_factory=list)
    allowed: list[str] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)
    refused: str = ""  # why a rule refused the chosen action (a repeated query), or why a reply was invalid
    error: str = ""  # why the browser failed (a search or a page that did not load)
    ended_by: str = ""
    message: str = ""


class GraphRef(_Strict):
    """A passage graph a walk used: its collection and its size for people."""

    collection: str
    description: str = ""
    current: bool = True  # False: built for an earlier state of the collection


class WalkPayload(_Strict):
    """The root of a graph walk (KGP): the graphs walked and the walk's bounds; when done, how many passages it
    visited. ``mode``: content (seeds, then neighbours chosen by the model's next evidence), structure (a
    question about a table or page, answered from that node) or retrieval (no graph: a plain retrieval)."""

    kind: Literal["walk"] = "walk"
    question: str
    mode: Literal["content", "structure", "retrieval"] = "content"
    graphs: list[GraphRef] = Field(default_factory=list)
    seeds: int = 0
    neighbours: int = 0
    budget: int = 0
    depth: int = 0
    visited: int = 0
    target: str = ""  # what a structure question asked for: "table 2 of report.pdf"


class VisitPayload(_Strict):
    """A node the walk reached: a passage or table with the edge type that led there (``seed`` for a seed;
    several types joined by "+"), or a page node of a structure question. ``from_node`` is the passage it came
    from (also the step's parent), ``via`` the keywords, title or page the edge went through, ``score`` its
    similarity to the next evidence (or its seed retrieval score) and ``rank`` its place among the candidates.
    ``bridge`` is the entity the next evidence named that this passage and the one it came from both hold: the
    visit is a hop of the question (``pipeline.methods.kgp.bridges``)."""

    kind: Literal["visit"] = "visit"
    node: str
    node_kind: Literal["passage", "table", "page", "document"] = "passage"
    passage: PassageRef | None = None
    label: str = ""  # a structure node for people: "Page 3 of report.pdf"
    edge: str = "seed"
    via: str = ""
    from_node: str | None = None
    score: float | None = None
    rank: int | None = None
    depth: int = 0
    seed: bool = False
    collection: str | None = None
    bridge: str | None = None


class EvidencePayload(_Strict):
    """The next piece of evidence the model asked for on one path (the question and the path's passages), and
    how many neighbours of the path's last passage were ranked against it and visited. ``fallback`` says why
    the question itself ranked them instead (the model asked for nothing usable)."""

    kind: Literal["evidence"] = "evidence"
    text: str = ""
    path: list[str] = Field(default_factory=list)  # passage ids from the seed to the expanded passage
    depth: int = 0
    candidates: int = 0
    chosen: int = 0
    fallback: str = ""


class Signal(_Strict):
    """One thing Auto looked at after its quick answer: its name, what it found (a share, a yes/no, or the
    reason a cue gives), whether it asks for a deeper method, and why in words."""

    name: str
    value: float | bool | str | None = None  # a text value is a reason found (a cue's words)
    fired: bool = False
    why: str = ""


class CheckPayload(_Strict):
    """Auto's look at its quick answer and the passages behind it: the signals, and the deeper method they ask
    for (None: the quick answer stands)."""

    kind: Literal["check"] = "check"
    signals: list[Signal] = Field(default_factory=list)
    deeper: str | None = None
    reason: str = ""


class EditPayload(_Strict):
    """A person's edit of a finished run (``pipeline.edits``), recorded in the resumed run's trace before the steps
    it made recomputed: a reading pruned, restored or rewritten (``target`` is its step id, ``reading`` how it read
    before, ``question`` and ``answer`` what an edit made of it) or clarified once more (``expand``: ``target`` the
    reading's or the root's step id), or a passage dropped from the answer's evidence
    (its ``number`` in that answer, the ``passage`` itself, ``target`` its id), or a step of a chain rewritten
    (``target`` its step id, ``reading`` how it read before, ``answer`` the person's text: a reasoning sentence, ""
    when deleted, or a hop's answer), or a passage a walk visited pinned into the reader's set (``target`` its
    visit's step id, ``passage`` the passage), or a sentence of a page a browsing agent showed added as a fact
    (``target`` the step that showed it, ``number`` its number in that window, ``passage`` the fact)."""

    kind: Literal["edit"] = "edit"
    action: Literal["prune", "restore", "edit_reading", "expand", "drop_passage", "edit_step", "pin_passage",
                    "add_fact"]
    target: str = ""
    reading: str = ""
    question: str | None = None
    answer: str | None = None
    number: int | None = None
    passage: PassageRef | None = None


class WarningPayload(_Strict):
    """Something people should know about a step or the run; ``stopped``: the run was stopped (by Stop, or a
    limit), so it ends here without an answer; ``caveat``: it qualifies the answer (a source that failed, an
    answer read after a chain stopped short, a citation removed), so the answer is shown with it, not only the
    step."""

    kind: Literal["warning"] = "warning"
    message: str
    stopped: bool = False
    caveat: bool = False


class ErrorPayload(_Strict):
    kind: Literal["error"] = "error"
    message: str
