"""Any ``ChatModel`` as a LangChain chat model, so LangChain code can use either backend unchanged."""

from __future__ import annotations

from typing import Any, Iterator

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult as LCChatResult
from pydantic import ConfigDict

from models.llm import ChatModel, ChatResult, GenerationOptions, Message

_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def to_wire_messages(messages: list[BaseMessage]) -> list[Message]:
    """LangChain messages in the OpenAI ``{"role", "content"}`` shape."""
    return [{"role": _ROLES.get(m.type, m.type), "content": m.text} for m in messages]


class LangChainChatModel(BaseChatModel):
    """Wraps a ``ChatModel``. Extra invoke kwargs (``json_schema``, ``grammar``, ``top_logprobs``,
    ``max_tokens``, ``temperature``) become ``GenerationOptions``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    backend: ChatModel
    max_tokens: int = 256
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "research-qa"

    def _options(self, stop: list[str] | None, kwargs: dict[str, Any]) -> GenerationOptions:
        return GenerationOptions(
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            stop=tuple(stop or ()),
            json_schema=kwargs.get("json_schema"),
            grammar=kwargs.get("grammar"),
            top_logprobs=kwargs.get("top_logprobs", 0),
        )

    @staticmethod
    def _metadata(result: ChatResult) -> tuple[UsageMetadata, dict]:
        usage = UsageMetadata(
            input_tokens=result.prompt_tokens,
            output_tokens=result.completion_tokens,
            total_tokens=result.prompt_tokens + result.completion_tokens,
        )
        meta = {"finish_reason": result.finish_reason, "elapsed_s": result.elapsed_s}
        if result.logprobs:
            meta["logprobs"] = [{"token": t.token, "logprob": t.logprob, "top": t.top} for t in result.logprobs]
        return usage, meta

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> LCChatResult:
        result = self.backend.chat(to_wire_messages(messages), self._options(stop, kwargs))
        usage, meta = self._metadata(result)
        message = AIMessage(content=result.text, usage_metadata=usage, response_metadata=meta)
        return LCChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for item in self.backend.stream(to_wire_messages(messages), self._options(stop, kwargs)):
            if isinstance(item, ChatResult):
                usage, meta = self._metadata(item)
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", usage_metadata=usage, response_metadata=meta)
                )
            else:
                if run_manager:
                    run_manager.on_llm_new_token(item)
                yield ChatGenerationChunk(message=AIMessageChunk(content=item))
