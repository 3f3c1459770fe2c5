"""Prompts as data: each step's prompt is a YAML file in ``pipeline/prompts`` with a system and a user
template (LangChain ``ChatPromptTemplate`` syntax), its generation budget, and optionally ``demos``: the name
of a file in ``prompts/demos`` whose user/assistant pairs go before the question as prior chat turns."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate

from models.langchain_chat import to_wire_messages
from models.llm import Message

PROMPT_DIR = Path(__file__).parent / "prompts"


@dataclass(frozen=True)
class Prompt:
    name: str
    template: ChatPromptTemplate
    max_tokens: int

    def messages(self, **values: str) -> list[Message]:
        return to_wire_messages(self.template.format_messages(**values))


@functools.lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    """The prompt ``pipeline/prompts/NAME.yaml``."""
    spec = yaml.safe_load((PROMPT_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    parts = [("system", spec["system"].strip())] if spec.get("system") else []
    for demo in load_demos(spec["demos"]) if spec.get("demos") else []:
        # Demo text is literal: braces must not be read as template variables.
        parts.append(("human", _literal(demo["user"].strip())))
        parts.append(("ai", _literal(demo["assistant"].strip())))
    parts.append(("human", spec["user"].strip()))
    return Prompt(name=name, template=ChatPromptTemplate.from_messages(parts), max_tokens=int(spec["max_tokens"]))


def answer_prompt(step: str, style: str) -> Prompt:
    """The prompt of an answering step in the given answer style (``long`` or ``short``)."""
    return load_prompt(step if style == "long" else f"{step}_{style}")


@functools.lru_cache(maxsize=None)
def load_demos(name: str) -> tuple[dict[str, str], ...]:
    """The demonstrations in ``pipeline/prompts/demos/NAME.yaml`` (a list of ``{user, assistant}``)."""
    demos = yaml.safe_load((PROMPT_DIR / "demos" / f"{name}.yaml").read_text(encoding="utf-8"))
    for demo in demos:
        if not (isinstance(demo.get("user"), str) and isinstance(demo.get("assistant"), str)):
            raise ValueError(f"demos/{name}.yaml: every demo needs string 'user' and 'assistant' (quote yes/no).")
    return tuple(demos)


def _literal(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def format_passages(passages: list[Document]) -> str:
    """Passages numbered from 1 as the answer prompts cite them: ``[n] Title: text``."""
    return "\n".join(
        f"[{i}] {p.metadata.get('title') or 'Untitled'}: {p.page_content}" for i, p in enumerate(passages, 1)
    )
