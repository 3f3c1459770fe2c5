"""An OpenAI-compatible chat server (llama.cpp's server, vLLM, Ollama) behind the ``ChatModel`` interface."""

from __future__ import annotations

import logging
from typing import Iterator

from models.cancel import iterate_cancellable
from models.errors import LLMCallError, ModelError
from models.llm import ENDPOINT_TIMEOUT_S, ChatModel, ChatResult, GenerationOptions, Message, Stopwatch, TokenLogprob

log = logging.getLogger(__name__)


class OpenAICompatibleChatModel(ChatModel):
    """Chat through ``/v1/chat/completions``.

    JSON schemas go as ``response_format`` (the OpenAI ``json_schema`` form, falling back to the
    ``json_object``-with-schema form of llama-cpp-python's server); GBNF grammars go as the ``grammar`` field
    that llama.cpp's servers read (servers that do not know it ignore it).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        api_key: str = "not-needed",
        connect_timeout_s: float = 3.0,
        token_timeout_s: float = ENDPOINT_TIMEOUT_S,
    ) -> None:
        """``token_timeout_s`` bounds the wait for each streamed piece (the first one included, which comes
        after the server has read the whole prompt); a server that accepts and never answers fails then."""
        import openai

        self._openai = openai
        # openai.Timeout is the class of the HTTP client openai itself uses (httpx2 since openai 3.x); another
        # library's Timeout is refused by httpx2 2.17 and later.
        timeout = openai.Timeout(token_timeout_s, connect=connect_timeout_s)
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        try:
            listing = self._client.with_options(timeout=openai.Timeout(10.0, connect=connect_timeout_s))
            available = [m.id for m in listing.models.list().data]
        except openai.OpenAIError as exc:
            # The message may reach a browser: the operator's address goes to the server log only.
            log.warning("No OpenAI-compatible server answers at %s: %s: %s", base_url, type(exc).__name__, exc)
            raise ModelError(
                f"The model server does not answer ({type(exc).__name__}; its address is in the server log). Fix: "
                "start the server (for example `python -m models.serve --model fast --port 8000`) or correct "
                "its URL."
            ) from exc
        if model is None:
            if not available:
                log.warning("The model server at %s lists no models.", base_url)
                raise ModelError("The model server lists no models; name one with --model-name.")
            model = available[0]
        self.model = model
        self.base_url = base_url
        self.name = model  # shown to people: the address stays with the operator
        self._schema_style = "json_schema"  # the OpenAI form; vLLM and llama.cpp's own server accept it

    def _response_format(self, schema: dict) -> dict:
        if self._schema_style == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}
        return {"type": "json_object", "schema": schema}

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        request: dict = {
            "model": self.model,
            "messages": messages,
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "seed": options.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if options.stop:
            request["stop"] = list(options.stop)
        if options.json_schema:
            request["response_format"] = self._response_format(options.json_schema)
        if options.grammar:
            request["extra_body"] = {"grammar": options.grammar}
        if options.top_logprobs:
            request.update(logprobs=True, top_logprobs=options.top_logprobs)

        watch = Stopwatch()
        pieces: list[str] = []
        logprobs: list[TokenLogprob] = []
        usage = None
        finish_reason = "stop"
        try:
            for chunk in iterate_cancellable(lambda: self._chunks(request, options), options.cancel):
                if chunk.usage:
                    usage = chunk.usage
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                if choice.delta and choice.delta.content:
                    pieces.append(choice.delta.content)
                    yield choice.delta.content
                if choice.logprobs and choice.logprobs.content:
                    for item in choice.logprobs.content:
                        top = {alt.token: alt.logprob for alt in (item.top_logprobs or [])}
                        logprobs.append(TokenLogprob(token=item.token, logprob=item.logprob, top=top))
                if choice.finish_reason:
                    finish_reason = choice.finish_reason
                elif options.until and options.until("".join(pieces)):
                    finish_reason = "until"
                    break
        except self._openai.OpenAIError as exc:
            raise LLMCallError(f"The model server failed: {type(exc).__name__}: {exc}") from exc
        text = "".join(pieces)
        yield ChatResult(
            text=text,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else len(pieces),
            elapsed_s=watch.elapsed(),
            finish_reason=finish_reason,
            logprobs=logprobs or None,
        )

    def _chunks(self, request: dict, options: GenerationOptions):
        """The streamed chunks of one request (run in a worker thread, so a Stop never waits on the server)."""
        try:
            chunks = self._client.chat.completions.create(**request)
        except self._openai.APIStatusError as exc:
            rejected_format = exc.status_code in (400, 422) or "response_format" in str(exc)
            if not (options.json_schema and self._schema_style == "json_schema" and rejected_format):
                raise
            # llama-cpp-python's server wants the schema inside a json_object format (and says so with a 500).
            self._schema_style = "json_object"
            request["response_format"] = self._response_format(options.json_schema)
            chunks = self._client.chat.completions.create(**request)
        try:
            yield from chunks
        finally:
            chunks.close()

    def close(self) -> None:
        self._client.close()
