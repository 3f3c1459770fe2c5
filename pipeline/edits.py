"""A person's edits of a finished run, as data: what the buttons under a step send, what ``pipeline ask
--from-trace T.jsonl --edit ...`` and an edits file hold.

- ``prune``: a kept reading of a tree of interpretations (ToC), by its step id, is left out of the answer.
- ``restore``: a pruned reading, by its step id, is put back into it.
- ``edit_reading``: a reading, by its step id, gets a new clarified question and/or short answer.
- ``expand``: a kept reading, or the question itself (the tree's root), by its step id, is clarified once more:
  its new readings are verified as the tree's were, and the answer is written again with those kept.
- ``drop_passage``: a passage of the answer's evidence, by its number in the answer ([3]) or its passage id, is
  left out, and the answer is written again without it (every method that read passages).
- ``pin_passage``: a passage a walk visited (KGP), by its visit's step id, is put into the reader's set, and the
  answer is read again with it.
- ``add_fact``: a sentence of a page window a browsing agent showed (the web agent), by the step that showed it
  and the sentence's number there, is added to its quoted facts, and the answer is written again with it.
- ``edit_step``: a step of a chain (IRCoT), by its step id, is rewritten and the chain continues from it: a
  reasoning sentence gets the person's text (empty: the sentence is deleted), a hop gets the person's answer; the
  steps before it are kept, those after it redone.

An edit names what it changes and nothing more; whether it fits a run (the step exists, the reading is kept, the
passage number is in range, the method takes such an edit) is checked against the run's trace by
``pipeline.resume.Resumption``, which raises ``EditError`` with a one-line reason. Each edit becomes an ``edit``
step in the resumed run's trace (``pipeline.payloads.EditPayload``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

MAX_QUESTION_CHARS = 300  # a clarified question a person writes
MAX_ANSWER_CHARS = 200  # a short answer a person writes
MAX_SENTENCE_CHARS = 400  # a reasoning sentence a person writes


class EditError(ValueError):
    """An edit that cannot be applied to a run, or that cannot be read; the message is one line for people."""


class _Edit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("node", "step", check_fields=False)
    @classmethod
    def _step_id(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("give the step id of a reading, a chain's step or a visit (such as n4, h2 or v3)")
        return value


class Prune(_Edit):
    """Leave a kept reading (ToC) out of the answer."""

    action: Literal["prune"] = "prune"
    node: str


class Restore(_Edit):
    """Put a pruned reading (ToC) back into the answer."""

    action: Literal["restore"] = "restore"
    node: str


class EditReading(_Edit):
    """Give a reading (ToC) a new clarified question, a new short answer, or both."""

    action: Literal["edit_reading"] = "edit_reading"
    node: str
    question: str | None = Field(None, max_length=MAX_QUESTION_CHARS)
    answer: str | None = Field(None, max_length=MAX_ANSWER_CHARS)

    @field_validator("question", "answer")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return " ".join(value.split()) or None if value is not None else None

    @model_validator(mode="after")
    def _something(self) -> "EditReading":
        if self.question is None and self.answer is None:
            raise ValueError("an edit of a reading needs a new question or a new answer")
        return self


class ExpandNode(_Edit):
    """Clarify a kept reading (ToC), or the question itself (the tree's root), once more."""

    action: Literal["expand"] = "expand"
    node: str


class DropPassage(_Edit):
    """Leave a passage out of the answer's evidence: ``passage`` is its number in the answer ([3]) or its id."""

    action: Literal["drop_passage"] = "drop_passage"
    passage: int | str

    @field_validator("passage")
    @classmethod
    def _named(cls, value: int | str) -> int | str:
        if isinstance(value, str):
            value = value.strip()
            if value.isdigit():
                return int(value)
            if not value:
                raise ValueError("give the passage's number in the answer or its id")
        return value


class EditStep(_Edit):
    """Rewrite a step of a chain (IRCoT) and continue from it: ``text`` is a reasoning sentence ("" deletes the
    sentence) or a hop's answer."""

    action: Literal["edit_step"] = "edit_step"
    step: str
    text: str = Field("", max_length=MAX_SENTENCE_CHARS)

    @field_validator("text")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())


class PinPassage(_Edit):
    """Put a passage a walk visited (KGP), by its visit's step id, into the reader's set."""

    action: Literal["pin_passage"] = "pin_passage"
    step: str


class AddFact(_Edit):
    """Add sentence ``sentence`` of the page window the browsing step ``step`` showed (the web agent) to its facts."""

    action: Literal["add_fact"] = "add_fact"
    step: str
    sentence: int = Field(ge=1)


Edit = Annotated[Union[Prune, Restore, EditReading, ExpandNode, DropPassage, EditStep, PinPassage, AddFact],
                 Field(discriminator="action")]

_EDITS = TypeAdapter(list[Edit])

# The short forms of the command line: ACTION:TARGET[:FIELD=TEXT].
_ALIASES = {"prune": "prune", "restore": "restore", "edit": "edit_reading", "edit_reading": "edit_reading",
            "drop": "drop_passage", "drop_passage": "drop_passage", "step": "edit_step", "edit_step": "edit_step",
            "expand": "expand", "pin": "pin_passage", "pin_passage": "pin_passage", "fact": "add_fact",
            "add_fact": "add_fact"}
USAGE = ("prune:STEP, restore:STEP, edit:STEP:answer=TEXT, edit:STEP:question=TEXT, expand:STEP, drop:N or "
         "drop:PASSAGE_ID, step:STEP=TEXT (a chain's step rewritten, empty TEXT deletes a sentence), pin:VISIT (a "
         "visited passage read), fact:STEP:N (sentence N of the page a browsing step showed, added as a fact)")


def parse_edit(text: str) -> Edit:
    """An edit from its command-line form: ``prune:n4``, ``restore:n7``, ``edit:n4:answer=Mark Carney``,
    ``edit:n4:question=Who ...?``, ``expand:n4`` (a reading, or the root, clarified once more), ``drop:3``
    (passage [3] of the answer), ``drop:PASSAGE_ID`` or ``step:h2=TEXT`` (a chain's step rewritten; ``step:h2=``
    deletes a sentence). ``EditError`` when it is none of these."""
    action, _, rest = text.strip().partition(":")
    name = _ALIASES.get(action.strip().lower())
    if name is None or not rest.strip():
        raise EditError(f"cannot read the edit '{text}': write one of {USAGE}")
    try:
        if name == "drop_passage":
            return DropPassage(passage=rest)
        if name == "pin_passage":
            return PinPassage(step=rest)
        if name == "add_fact":
            step, _, number = rest.rpartition(":")
            if not step or not number.strip().isdigit():
                raise EditError(f"cannot read the edit '{text}': a fact to add is fact:STEP:N (sentence N)")
            return AddFact(step=step, sentence=int(number))
        if name == "edit_step":
            step, equals, value = rest.partition("=")
            if not equals:
                raise EditError(f"cannot read the edit '{text}': a step's edit is step:STEP=TEXT")
            return EditStep(step=step, text=value)
        if name != "edit_reading":
            return _EDIT_TYPES[name](node=rest)
        node, _, change = rest.partition(":")
        field, _, value = change.partition("=")
        if field.strip().lower() not in ("question", "answer"):
            raise EditError(f"cannot read the edit '{text}': an edit of a reading is edit:STEP:answer=TEXT or "
                            "edit:STEP:question=TEXT")
        return EditReading(node=node, **{field.strip().lower(): value})
    except ValidationError as exc:
        raise EditError(f"cannot read the edit '{text}': {_reason(exc)}") from None


_EDIT_TYPES = {"prune": Prune, "restore": Restore, "expand": ExpandNode}


def read_edits(data: object) -> list[Edit]:
    """Edits from their JSON form: a list of objects such as ``{"action": "prune", "node": "n4"}``, ``{"action":
    "drop_passage", "passage": 3}``, or an object with such a list under ``"edits"``."""
    if isinstance(data, dict) and set(data) == {"edits"}:
        data = data["edits"]
    try:
        return _EDITS.validate_python(data)
    except ValidationError as exc:
        raise EditError(f"the edits are not valid: {_reason(exc)}") from None


def read_edits_file(path: Path) -> list[Edit]:
    """The edits in a small JSON file (see ``read_edits``); ``EditError`` naming the file when it cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EditError(f"cannot read the edits file {path}: {exc}") from None
    try:
        return read_edits(data)
    except EditError as exc:
        raise EditError(f"{Path(path).name}: {exc}") from None


def edits_json(edits: list[Edit]) -> str:
    """``edits`` as the JSON an edits file holds."""
    return json.dumps([edit.model_dump(exclude_none=True) for edit in edits], ensure_ascii=False, indent=2)


def _reason(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"] if not isinstance(part, int))
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


__all__ = ["AddFact", "DropPassage", "Edit", "EditError", "EditReading", "EditStep", "ExpandNode", "PinPassage",
           "Prune", "Restore", "USAGE", "edits_json", "parse_edit", "read_edits", "read_edits_file"]
