"""The chat-model interface every backend implements, and the values it exchanges.

Messages use the OpenAI wire shape (``{"role", "content"}``) because both backends speak it natively;
``models.langchain_backend`` puts any LangChain chat model behind this interface.
"""

from __future__ import annotations

import json
import math
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from models.errors import LLMCallError

Message = dict[str, str]

# How long a model server may take to send the next piece of a reply (the first one comes after it has read the
# whole prompt: about 35 s for 4,600 tokens with the 1.5B model on 2 cores).
ENDPOINT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class GenerationOptions:
    """How to generate one reply. ``json_schema`` and ``grammar`` (GBNF) constrain the output."""

    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None
    top_logprobs: int = 0  # >0: return that many alternatives (with log-probabilities) per generated token
    seed: int = 0
    # Stop early once the text so far satisfies this (e.g. holds a complete first sentence); the result's
    # finish_reason is then "until".
    until: Callable[[str], bool] | None = None
    # The run's Stop switch: backends check it while reading the prompt and per token, and raise ``Cancelled``.
    cancel: threading.Event | None = field(default=None, compare=False, repr=False)


@dataclass
class TokenLogprob:
    """One generation step: a token, its log-probability and the best alternatives at that position.

    From llama.cpp in-process the distribution is the model's own, taken before a grammar masks it, and
    ``token`` is its most likely token; from a server, ``token`` is the token it sampled.
    """

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class ChatResult:
    """A finished reply with its cost."""

    text: str
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens not read again: their keys and values were kept from earlier calls
    completion_tokens: int = 0
    elapsed_s: float = 0.0
    finish_reason: str = "stop"
    logprobs: list[TokenLogprob] | None = None

    def json(self) -> Any:
        """Parse the reply as JSON; raise ``LLMCallError`` naming the reply when it is not valid JSON."""
        try:
            return json.loads(self.text)
        except ValueError as exc:
            raise LLMCallError(f"The model replied in the wrong format (not JSON): {self.text[:200]!r}") from exc

    def first_token_probability(self, candidates: tuple[str, ...]) -> float | None:
        """Total probability the first generated token starts with one of ``candidates`` (case-insensitive).

        Used for verification scores: the probability of "True" is more informative than the sampled word.
        """
        if not self.logprobs:
            return None
        top = self.logprobs[0].top or {self.logprobs[0].token: self.logprobs[0].logprob}
        wanted = tuple(c.lower() for c in candidates)
        return sum(math.exp(lp) for tok, lp in top.items() if tok.strip().lower().startswith(wanted))


def probability_true(result: ChatResult) -> float:
    """P(True) / (P(True) + P(False)) from the first token's alternatives of a True/False reply; the sampled word
    when no alternatives came."""
    p_true = result.first_token_probability(("true",))
    p_false = result.first_token_probability(("false",))
    if p_true is None or p_false is None or p_true + p_false == 0:
        return 1.0 if result.text.strip().lower().startswith("true") else 0.0
    return p_true / (p_true + p_false)


def llm_cost(*results: ChatResult) -> dict[str, Any]:
    """The cost fields of a step event (calls, tokens, seconds) for the replies it took."""
    return {
        "llm_calls": len(results),
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "cached_tokens": sum(r.cached_tokens for r in results),
        "completion_tokens": sum(r.completion_tokens for r in results),
        "llm_seconds": sum(r.elapsed_s for r in results),
    }


class ChatModel(ABC):
    """A chat LLM that can stream, follow a JSON schema or grammar, and report log-probabilities."""

    name: str = "model"

    @abstractmethod
    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        """Yield text pieces as they are generated, then exactly one final ``ChatResult``."""

    def chat(self, messages: list[Message], options: GenerationOptions | None = None) -> ChatResult:
        """Generate a whole reply."""
        result = None
        for item in self.stream(messages, options or GenerationOptions()):
            if isinstance(item, ChatResult):
                result = item
        if result is None:
            raise LLMCallError(f"{self.name} ended without a result.")
        return result

    def close(self) -> None:
        """Release the model's resources."""

    def backend_settings(self) -> dict[str, Any]:
        """How this model is run, as a results file records it: the settings that change speed (and, through
        llama.cpp's prefix reuse, the last digits of logits) but are not method settings."""
        return {"backend": type(self).__name__}


class Stopwatch:
    """Elapsed wall time since creation."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
