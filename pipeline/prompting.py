"""Prompts as data: each step's prompt is a YAML file in ``pipeline/prompts`` with a system and a user
template (LangChain ``ChatPromptTemplate`` syntax), its generation budget, and optionally ``demos`` (a file in
``prompts/demos`` whose user/assistant pairs go before the question as prior chat turns), ``schema`` (a JSON
schema file) or ``grammar`` (a GBNF file) constraining the reply. Any other top-level string is kept in
``Prompt.texts`` (for example the alternative task lines a step fills into its template)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate

from models.langchain_chat import to_wire_messages
from models.llm import GenerationOptions, Message

PROMPT_DIR = Path(__file__).parent / "prompts"


@dataclass(frozen=True)
class Prompt:
    name: str
    template: ChatPromptTemplate
    max_tokens: int
    json_schema: dict | None = None  # from the file named by ``schema:``
    grammar: str | None = None  # GBNF, from the file named by ``grammar:``
    texts: dict[str, str] = field(default_factory=dict)  # the file's other top-level strings

    def options(self, temperature: float = 0.0, max_tokens: int | None = None, top_logprobs: int = 0):
        """Generation options for this prompt: its budget and its output constraint."""
        return GenerationOptions(max_tokens=max_tokens or self.max_tokens, temperature=temperature,
                                 json_schema=self.json_schema, grammar=self.grammar, top_logprobs=top_logprobs)

    def messages(self, **values: str) -> list[Message]:
        return to_wire_messages(self.template.format_messages(**values))


_KEYS = {"system", "user", "max_tokens", "demos", "schema", "grammar"}


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
    return Prompt(
        name=name,
        template=ChatPromptTemplate.from_messages(parts),
        max_tokens=int(spec["max_tokens"]),
        json_schema=json.loads((PROMPT_DIR / spec["schema"]).read_text()) if spec.get("schema") else None,
        grammar=(PROMPT_DIR / spec["grammar"]).read_text() if spec.get("grammar") else None,
        texts={k: v.strip() for k, v in spec.items() if k not in _KEYS and isinstance(v, str)},
    )


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
