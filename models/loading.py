"""Turn a user's model choice into a running ``ChatModel``.

A choice is ``default``, ``fast``, a path to a GGUF file, ``openai:URL`` (optionally ``openai:URL#MODEL``)
for an OpenAI-compatible server, or ``langchain:PROVIDER:MODEL[@BASE_URL]`` for any LangChain chat model that
``init_chat_model`` can make (its provider package installed).
"""

from __future__ import annotations

from pathlib import Path

from models.llm import ChatModel
from models.registry import BUNDLED, resolve_model_path

OPENAI_PREFIX = "openai:"
LANGCHAIN_PREFIX = "langchain:"


def describe_choice(choice: str) -> str:
    """A short human label for a model choice."""
    if choice in BUNDLED:
        return f"{choice} ({BUNDLED[choice].description})"
    return choice


def load_chat_model(choice: str, *, n_ctx: int = 8192, cache_dir: Path | None = None) -> ChatModel:
    """Load the model a user chose; raises ``ModelError`` with a fix when it cannot."""
    if choice.startswith(LANGCHAIN_PREFIX):
        from models.langchain_backend import load_langchain_model

        return load_langchain_model(choice[len(LANGCHAIN_PREFIX):])
    if choice.startswith(OPENAI_PREFIX):
        from models.openai_backend import OpenAICompatibleChatModel

        url, _, model = choice[len(OPENAI_PREFIX):].partition("#")
        return OpenAICompatibleChatModel(base_url=url, model=model or None)
    from models.llama_backend import LlamaCppChatModel

    path = resolve_model_path(choice, cache_dir)
    return LlamaCppChatModel(path, n_ctx=n_ctx, name=describe_choice(choice))
