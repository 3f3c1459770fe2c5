"""Replies of a given shape (a pydantic model), at the speed of unconstrained generation when the model
complies.

llama.cpp checks a grammar against the whole vocabulary at every sampling step; measured here, a JSON-schema
grammar halves the generation speed (fast model: 26 vs 14.6 tokens/s). Models given a chat-turn demonstration
of the format usually comply anyway, so the reply is first generated freely and validated; only a reply that
does not validate is generated again under the JSON schema generated from the model, which guarantees the shape.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from models.errors import LLMCallError
from models.llm import ChatModel, ChatResult, GenerationOptions, Message

Reply = TypeVar("Reply", bound=BaseModel)


def _json_in(text: str) -> Any:
    """The JSON object in ``text``, also when wrapped in a Markdown fence or surrounded by prose."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object")
    return json.loads(text[start : end + 1])


def parse_reply(text: str, shape: type[Reply]) -> Reply:
    """``text`` read as ``shape``; ``ValueError`` when it is not that shape."""
    try:
        return shape.model_validate(_json_in(text))
    except ValidationError as exc:
        raise ValueError(str(exc)) from None


def generate_structured(llm: ChatModel, messages: list[Message], options: GenerationOptions,
                        shape: type[Reply]) -> tuple[Reply, list[ChatResult]]:
    """A reply of ``shape`` and the calls it took (one, or two when the free reply did not validate). Raises
    ``LLMCallError`` when even the constrained reply is not of that shape."""
    first = llm.chat(messages, replace(options, json_schema=None))
    try:
        return parse_reply(first.text, shape), [first]
    except ValueError:
        pass
    second = llm.chat(messages, replace(options, json_schema=shape.model_json_schema()))
    try:
        return parse_reply(second.text, shape), [first, second]
    except ValueError as exc:
        raise LLMCallError(f"The model replied in the wrong format: {second.text[:200]!r} ({exc})") from None
