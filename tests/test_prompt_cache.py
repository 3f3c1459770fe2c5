"""Warm prompt prefixes (models/prompt_cache.py): alternating prompts are not read again, and the replies are the
ones the model gives when it reads every prompt whole."""

from __future__ import annotations

import numpy as np
import pytest

from models.llm import GenerationOptions
from models.prompt_cache import common_prefix

pytestmark = pytest.mark.real_model

NOTES = "\n".join(f"[{i}] The town of Ashford{i} was founded in {1800 + i} beside the river Wey{i}." for i in range(10))
LEDGER = "\n".join(f"- Item {i} costs {3 * i} coins at the market of Barrow{i}." for i in range(10))
CALLS = [(NOTES, "When was Ashford3 founded?"), (LEDGER, "What does item 5 cost?"),
         (NOTES, "When was Ashford7 founded?"), (LEDGER, "What does item 9 cost?")]


def _ask(model, context: str, question: str):
    messages = [{"role": "system", "content": "Answer in a few words."},
                {"role": "user", "content": f"{context}\n\nQuestion: {question}"}]
    return model.chat(messages, GenerationOptions(max_tokens=12))


def test_common_prefix():
    a = np.array([1, 2, 3, 4], dtype=np.intc)
    assert common_prefix(a, np.array([1, 2, 9], dtype=np.intc)) == 2
    assert common_prefix(a, a[:2]) == 2 and common_prefix(a, np.array([], dtype=np.intc)) == 0


def test_alternating_prompts_reuse_their_prefixes_and_answer_alike(fast_model_path):
    from models.llama_backend import LlamaCppChatModel

    replies = {}
    for cache_mb in (0, 256):
        model = LlamaCppChatModel(fast_model_path, n_ctx=4096, prompt_cache_mb=cache_mb)
        try:
            replies[cache_mb] = [_ask(model, context, question) for context, question in CALLS]
            settings = model.backend_settings()  # what a results file records of the run
            assert settings["prompt_cache_mb"] == cache_mb and settings["context_tokens"] == 4096
            assert settings["threads"] >= 1 and settings["llama_cpp_python"]
        finally:
            model.close()
    plain, warm = replies[0], replies[256]
    assert [r.text for r in warm] == [r.text for r in plain]
    # Without the cache, the context only ever holds the previous prompt: alternating prompts share the chat
    # template's first tokens. With it, the third and fourth calls find their own earlier prompt kept.
    assert all(r.cached_tokens < 20 for r in plain)
    for first, again in [(warm[0], warm[2]), (warm[1], warm[3])]:
        assert again.cached_tokens > 0.9 * first.prompt_tokens


def test_forgotten_prompts_are_read_anew_with_the_same_reply(fast_model_path):
    """``forget_prompts`` (benchmarks.four_people asks one question twice): the same prompt again reads it whole."""
    from models.llama_backend import LlamaCppChatModel

    model = LlamaCppChatModel(fast_model_path, n_ctx=4096, prompt_cache_mb=256)
    try:
        first = _ask(model, NOTES, "When was Ashford3 founded?")
        warm = _ask(model, NOTES, "When was Ashford3 founded?")
        model.forget_prompts()
        cold = _ask(model, NOTES, "When was Ashford3 founded?")
    finally:
        model.close()
    assert warm.cached_tokens > 0.9 * first.prompt_tokens
    assert cold.cached_tokens == 0 and cold.text == first.text
