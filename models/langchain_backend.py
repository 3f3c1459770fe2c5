"""Any LangChain chat model (a user's ``ChatOllama``, ``ChatOpenAI``...) behind the ``ChatModel`` interface the
methods use, so every method runs on it unchanged.

What a LangChain model cannot do is dropped gracefully: without JSON-schema support a structured reply is
generated freely and validated (``models.structured``); without log-probabilities a verifier reads the sampled
word; a GBNF grammar is a llama.cpp feature and is not passed on. Generation stops early (``until``) by closing
the stream.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage

from models.cancel import iterate_cancellable
from models.errors import Cancelled, LLMCallError, ModelError
from models.llm import ENDPOINT_TIMEOUT_S, ChatModel, ChatResult, GenerationOptions, Message, Stopwatch, TokenLogprob

_MESSAGES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
_LENGTH_FIELDS = ("max_tokens", "max_completion_tokens", "num_predict", "max_output_tokens")


_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def to_langchain_messages(messages: list[Message]) -> list[BaseMessage]:
    """OpenAI-shaped ``{"role", "content"}`` messages as LangChain messages."""
    return [_MESSAGES[m["role"]](content=m["content"]) for m in messages]


def to_wire_messages(messages: list[BaseMessage]) -> list[Message]:
    """LangChain messages in the OpenAI ``{"role", "content"}`` shape the backends speak."""
    return [{"role": _ROLES.get(m.type, m.type), "content": m.text} for m in messages]


class LangChainChatBackend(ChatModel):
    """Wraps ``model``. Temperature and the reply budget are set on a copy of the model when it has fields for
    them; log-probabilities and JSON-schema replies are asked for from OpenAI-style models (``ChatOpenAI``),
    which pass them on to the server."""

    def __init__(self, model: BaseChatModel, name: str | None = None) -> None:
        self.model = model
        self.name = name or f"LangChain {type(model).__name__}"
        self._openai_style = _is_openai(model)
        # Servers take a JSON schema in different forms: the OpenAI one, or llama.cpp's json_object + schema;
        # the first that works is kept; None: the reply is generated freely and validated by the caller.
        self._schema_forms: list[str | None] = ["json_schema", "json_object", None] if self._openai_style else [None]

    def backend_settings(self) -> dict[str, Any]:
        return {"backend": self.name}

    def _configured(self, options: GenerationOptions) -> BaseChatModel:
        fields = type(self.model).model_fields
        update: dict[str, Any] = {}
        if "temperature" in fields:
            update["temperature"] = options.temperature
        length = next((f for f in _LENGTH_FIELDS if f in fields), None)
        if length:
            update[length] = options.max_tokens
        return self.model.model_copy(update=update) if update else self.model

    def _call_kwargs(self, options: GenerationOptions, schema_form: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if options.stop:
            kwargs["stop"] = list(options.stop)
        if options.top_logprobs and self._openai_style:
            kwargs.update(logprobs=True, top_logprobs=options.top_logprobs)
        if options.json_schema and schema_form == "json_schema":
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "schema": options.json_schema}}
        elif options.json_schema and schema_form == "json_object":
            kwargs["response_format"] = {"type": "json_object", "schema": options.json_schema}
        return kwargs

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        while options.json_schema and len(self._schema_forms) > 1:
            try:  # probe the schema form with a whole reply; streaming resumes once one works
                result = self._generate(messages, options, self._schema_forms[0])
            except LLMCallError:
                self._schema_forms.pop(0)
                continue
            if result.text:
                yield result.text
            yield result
            return
        yield from self._stream(messages, options, self._schema_forms[0] if options.json_schema else None)

    def _generate(self, messages: list[Message], options: GenerationOptions, form: str | None) -> ChatResult:
        result = None
        for item in self._stream(messages, options, form):
            if isinstance(item, ChatResult):
                result = item
        return result

    def _stream(self, messages: list[Message], options: GenerationOptions,
                schema_form: str | None) -> Iterator[str | ChatResult]:
        model = self._configured(options)
        watch = Stopwatch()
        text, finish, merged = "", "stop", None
        try:
            stream = iterate_cancellable(
                lambda: model.stream(to_langchain_messages(messages), **self._call_kwargs(options, schema_form)),
                options.cancel)
            for chunk in stream:
                merged = chunk if merged is None else merged + chunk
                piece = chunk.text if isinstance(chunk, AIMessageChunk) else str(chunk.content)
                if not piece:
                    continue
                text += piece
                yield piece
                if options.until and options.until(text):
                    finish = "until"
                    stream.close()
                    break
        except (ModelError, LLMCallError, Cancelled):
            raise
        except Exception as exc:  # each provider raises its own errors
            raise LLMCallError(f"{self.name} failed: {type(exc).__name__}: {exc}") from exc
        usage = getattr(merged, "usage_metadata", None) or {}
        meta = getattr(merged, "response_metadata", None) or {}
        yield ChatResult(
            text=text,
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
            elapsed_s=watch.elapsed(),
            finish_reason=finish if finish == "until" else str(meta.get("finish_reason") or "stop"),
            logprobs=_logprobs(meta.get("logprobs")),
        )


def _is_openai(model: BaseChatModel) -> bool:
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        return False
    return isinstance(model, ChatOpenAI)


def _logprobs(raw: Any) -> list[TokenLogprob] | None:
    """OpenAI-style log-probabilities (``{"content": [{token, logprob, top_logprobs}]}``), if any came."""
    content = raw.get("content") if isinstance(raw, dict) else raw
    if not isinstance(content, list) or not content:
        return None
    out = []
    for item in content:
        top = {alt["token"]: alt["logprob"] for alt in item.get("top_logprobs") or []
               if isinstance(alt.get("logprob"), (int, float)) and math.isfinite(alt["logprob"])}
        out.append(TokenLogprob(token=item.get("token", ""), logprob=float(item.get("logprob", 0.0)), top=top))
    return out


def load_langchain_model(spec: str) -> LangChainChatBackend:
    """A LangChain model from ``PROVIDER:MODEL[@BASE_URL]`` through ``langchain.chat_models.init_chat_model``
    (e.g. ``openai:qwen@http://127.0.0.1:8000/v1``); the provider's package must be installed."""
    from langchain.chat_models import init_chat_model

    target, _, base_url = spec.partition("@")
    provider, _, name = target.partition(":")
    if not provider or not name:
        raise ModelError(f"'{spec}' is not PROVIDER:MODEL[@BASE_URL] (for example openai:qwen@http://127.0.0.1:8000/v1).")
    kwargs: dict[str, Any] = {"base_url": base_url} if base_url else {}
    if provider == "openai":
        kwargs.update(timeout=ENDPOINT_TIMEOUT_S, max_retries=0)  # seconds per wait, not minutes of retries
        if base_url:
            kwargs.update(api_key="not-needed", stream_usage=True)
    try:
        model = init_chat_model(name, model_provider=provider, **kwargs)
    except (ImportError, ValueError) as exc:
        raise ModelError(f"Cannot make the LangChain model '{spec}': {exc}") from exc
    return LangChainChatBackend(model, name=f"{spec} (LangChain)")

