"""Prompts as data: each step's prompt is a YAML file in ``pipeline/prompts`` with a ``version``, a system and a
user template (LangChain ``ChatPromptTemplate`` syntax), its generation budget, and optionally:

- ``demos: FILE``: the user/assistant pairs of ``prompts/demos/FILE.yaml`` go before the question as prior
  chat turns, verbatim;
- ``demos: {file: FILE, select: nearest, assistant: TEMPLATE}``: demos chosen per question (the nearest by
  embedding similarity of their questions, nearest last, through LangChain's example selector); each demo turn
  is the prompt's own user template and the assistant template filled with the demo's values;
- ``grammar: FILE``: a GBNF file constraining the reply.

A reply with a JSON shape is described by a pydantic model in the code that reads it
(``models.structured.generate_structured``), not by a schema file. Any other top-level string is kept in
``Prompt.texts`` (for example the alternative task lines a step fills into its template)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.example_selectors import SemanticSimilarityExampleSelector
from langchain_core.prompts import ChatPromptTemplate, FewShotChatMessagePromptTemplate
from langchain_core.vectorstores import InMemoryVectorStore

from models.langchain_backend import to_wire_messages
from models.llm import GenerationOptions, Message
from pipeline.untrusted import format_passage

PROMPT_DIR = Path(__file__).parent / "prompts"


@dataclass(frozen=True)
class Prompt:
    name: str
    version: int
    template: ChatPromptTemplate  # system, verbatim demos, user
    max_tokens: int
    grammar: str | None = None  # GBNF, from the file named by ``grammar:``
    texts: dict[str, str] = field(default_factory=dict)  # the file's other top-level strings
    demo_file: str | None = None  # demos chosen per question (``select: nearest``)
    demo_turn: ChatPromptTemplate | None = None  # how one chosen demo is written as a user/assistant pair

    def options(self, temperature: float = 0.0, max_tokens: int | None = None, top_logprobs: int = 0):
        """Generation options for this prompt: its budget and its grammar."""
        return GenerationOptions(max_tokens=max_tokens or self.max_tokens, temperature=temperature,
                                 grammar=self.grammar, top_logprobs=top_logprobs)

    def messages(self, examples: list[dict] | tuple = (), **values: str) -> list[Message]:
        """The chat messages for ``values``, with ``examples`` (chosen by ``select_demos``) as demo turns."""
        template = self.template
        if examples:
            if self.demo_turn is None:
                raise ValueError(f"Prompt {self.name} takes no chosen demos.")
            shots = FewShotChatMessagePromptTemplate(examples=list(examples), example_prompt=self.demo_turn)
            system, rest = self.template.messages[:1], self.template.messages[1:]
            template = ChatPromptTemplate.from_messages([*system, shots, *rest])
        return to_wire_messages(template.format_messages(**values))

    def select_demos(self, question: str, embeddings: Embeddings, k: int) -> list[dict]:
        """The ``k`` demos whose questions are nearest to ``question``, the nearest last (closest to the
        question in the prompt)."""
        if k <= 0 or self.demo_file is None:
            return []
        chosen = _selector(self.demo_file, embeddings, k).select_examples({"question": question})
        return list(reversed(chosen))


_KEYS = {"system", "user", "max_tokens", "demos", "grammar", "version"}


@functools.lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    """The prompt ``pipeline/prompts/NAME.yaml``."""
    spec = yaml.safe_load((PROMPT_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    if not isinstance(spec.get("version"), int):
        raise ValueError(f"prompts/{name}.yaml needs an integer 'version'.")
    user = spec["user"].strip()
    parts = [("system", spec["system"].strip())] if spec.get("system") else []
    demos = spec.get("demos")
    demo_file = demo_turn = None
    if isinstance(demos, dict):
        if demos.get("select") != "nearest":
            raise ValueError(f"prompts/{name}.yaml: demos.select must be 'nearest'.")
        demo_file = demos["file"]
        demo_turn = ChatPromptTemplate.from_messages([("human", user), ("ai", demos["assistant"].strip())])
    elif demos:
        for demo in load_demos(demos):
            # Demo text is literal: braces must not be read as template variables.
            parts.append(("human", _literal(demo["user"].strip())))
            parts.append(("ai", _literal(demo["assistant"].strip())))
    parts.append(("human", user))
    return Prompt(
        name=name,
        version=spec["version"],
        template=ChatPromptTemplate.from_messages(parts),
        max_tokens=int(spec["max_tokens"]),
        grammar=(PROMPT_DIR / spec["grammar"]).read_text() if spec.get("grammar") else None,
        texts={k: v.strip() for k, v in spec.items() if k not in _KEYS and isinstance(v, str)},
        demo_file=demo_file,
        demo_turn=demo_turn,
    )


@functools.lru_cache(maxsize=16)
def _selector(demo_file: str, embeddings: Embeddings, k: int) -> SemanticSimilarityExampleSelector:
    demos = [dict(d) for d in load_demo_values(demo_file)]
    return SemanticSimilarityExampleSelector.from_examples(demos, embeddings, InMemoryVectorStore, k=k,
                                                           input_keys=["question"])


@functools.lru_cache(maxsize=None)
def load_demo_values(name: str) -> tuple[dict[str, str], ...]:
    """The demos of ``pipeline/prompts/demos/NAME.yaml`` as template values (each with a ``question``)."""
    demos = yaml.safe_load((PROMPT_DIR / "demos" / f"{name}.yaml").read_text(encoding="utf-8"))
    if not all(isinstance(d, dict) and isinstance(d.get("question"), str) for d in demos):
        raise ValueError(f"demos/{name}.yaml: every demo needs a 'question' string.")
    return tuple(demos)


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


def format_passages(passages: list[Document], *, max_words: int = 0) -> str:
    """Passages numbered from 1 as the answer prompts cite them: ``[n] Title: text``, one passage a line, with
    control tokens and instruction-like text removed (``pipeline.untrusted``). The prompt files fence the block
    in ``<passages>`` ... ``</passages>`` as quoted data. ``max_words`` > 0 shows only each text's first words
    (the title always), ending a cut text with "...". """
    if max_words > 0:
        passages = [_first_words(p, max_words) for p in passages]
    return "\n".join(f"[{i}] {format_passage(p)}" for i, p in enumerate(passages, 1))


def _first_words(doc: Document, n: int) -> Document:
    words = doc.page_content.split()
    if len(words) <= n:
        return doc
    return Document(page_content=" ".join(words[:n]) + " ...", metadata=doc.metadata)
