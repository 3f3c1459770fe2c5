"""In-process LLM through llama-cpp-python: GGUF chat template, streaming, grammars and log-probabilities."""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from models.cancel import CallGate
from models.prompt_cache import PromptStateCache, common_prefix
from models.errors import Cancelled, LLMCallError, ModelError
from models.llama_runtime import configure_llama_cpp
from models.llm import ChatModel, ChatResult, GenerationOptions, Message, Stopwatch, TokenLogprob


class _LogprobRecorder:
    """A logits processor that records the log-softmax top-n of every sampling step.

    ``create_completion`` only returns log-probabilities when every prompt position keeps its logits
    (``logits_all``), which costs a vocabulary-sized row per prompt token; this records only what is sampled.
    The distribution is taken before the grammar masks it, so "True" vs "False" keeps the model's own odds.
    """

    def __init__(self, top_n: int) -> None:
        self.top_n = top_n
        self.steps: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        shifted = logits - logits.max()
        logprobs = shifted - np.log(np.exp(shifted).sum())
        top = np.argpartition(-logprobs, self.top_n)[: self.top_n]
        top = top[np.argsort(-logprobs[top])]
        self.steps.append((top.copy(), logprobs[top].copy()))
        return logits


# In-process models take turns: one llama.cpp context is not thread-safe, and two models computing at once on
# a 2-core machine only slow each other down.
CALL_GATE = CallGate()


@dataclass(frozen=True)
class _Suspended:
    """What a call that gave way needs to carry on: llama.cpp's context state, the tokens it holds, and the
    completion's sampler."""

    data: bytes
    tokens: np.ndarray
    sampler: object
    mirostat_mu: object


# Memory for warm prompt prefixes per loaded model: about 18 states of 1,000 tokens for the 1.5B model.
DEFAULT_PROMPT_CACHE_MB = 512


class LlamaCppChatModel(ChatModel):
    """A GGUF model run in this process. Calls take turns through ``CALL_GATE``; a call's Stop switch
    (``options.cancel``) aborts llama.cpp's computation between graph nodes, so even a long prompt being read
    stops within a fraction of a second."""

    def __init__(
        self,
        model_path: Path | str,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        extra_buffer_types: str | None = None,
        name: str | None = None,
        prompt_cache_mb: int | None = None,
    ) -> None:
        """``prompt_cache_mb``: memory for warm prompt prefixes (``models.prompt_cache``); 0 turns them off;
        None reads ``$RQA_PROMPT_CACHE_MB`` (default 512)."""
        import llama_cpp

        self.name = name or Path(model_path).name
        self.model_path = Path(model_path)
        self._extra_buffer_types = not configure_llama_cpp(extra_buffer_types)
        self._n_threads = n_threads or os.cpu_count() or 1
        clock = time.perf_counter()
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(model_path),
                n_ctx=n_ctx,
                # llama-cpp-python's default is half the cores: one thread on a 2-core laptop halves generation.
                n_threads=self._n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(
                f"llama.cpp could not load '{model_path}': {exc}. Fix: choose a valid GGUF chat model "
                "('default', 'fast' or another .gguf file)."
            ) from exc
        self.load_seconds = time.perf_counter() - clock
        self._format = self._chat_formatter()
        if prompt_cache_mb is None:
            prompt_cache_mb = int(os.environ.get("RQA_PROMPT_CACHE_MB", DEFAULT_PROMPT_CACHE_MB))
        self._prompt_cache_mb = prompt_cache_mb
        self._states = PromptStateCache(self._llama, prompt_cache_mb * 2**20) if prompt_cache_mb > 0 else None
        # The running call's Stop switch, read by llama.cpp between graph nodes. A list, not an attribute, so the
        # callback does not keep this object alive (the runtime frees an evicted model by dropping it).
        self._abort: list[threading.Event | None] = [None]
        abort = self._abort
        self._abort_callback = llama_cpp.ggml_abort_callback(lambda _data: bool(abort[0] and abort[0].is_set()))
        llama_cpp.llama_set_abort_callback(self._llama._ctx.ctx, self._abort_callback, None)

    def forget_prompts(self) -> None:
        """Drop every warm prompt prefix (the prompt-state cache and the context's own), so that the next call
        reads its prompt anew: for a benchmark that asks the same question twice and must time both alike. Call
        it while no call runs."""
        if self._states is not None:
            self._states.clear()
        self._llama.reset()

    def backend_settings(self) -> dict:
        import llama_cpp

        return {"backend": "llama.cpp in-process", "llama_cpp_python": llama_cpp.__version__,
                "threads": self._n_threads, "context_tokens": self._llama.n_ctx(),
                "prompt_cache_mb": self._prompt_cache_mb, "extra_buffer_types": self._extra_buffer_types}

    def _chat_formatter(self):
        from llama_cpp import llama_chat_format

        template = self._llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError(
                f"'{self.model_path}' has no chat template in its GGUF metadata; choose an instruct/chat model."
            )
        model = self._llama._model
        eos = model.token_get_text(self._llama.token_eos())
        bos_id = self._llama.token_bos()
        bos = model.token_get_text(bos_id) if bos_id != -1 else ""
        return llama_chat_format.Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)

    def render_prompt(self, messages: list[Message]) -> tuple[str, list[str]]:
        """The prompt text the GGUF's chat template makes of ``messages``, and its stop strings."""
        formatted = self._format(messages=messages)
        return formatted.prompt, list(formatted.stop or [])

    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _prompt_tokens(self, prompt: str) -> list[int]:
        """The tokens llama.cpp reads for ``prompt`` (its BOS token first when the model wants one)."""
        llama = self._llama
        bos = [llama.token_bos()] if llama._model.add_bos_token() and llama.token_bos() != -1 else []
        return bos + llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        # Longer than 60 lines on purpose: the grammar, the prompt-state cache, the stop strings and the
        # cancel check share one llama.cpp completion and its state; it is the one place a token is generated.
        from llama_cpp import LlamaGrammar, LogitsProcessorList

        prompt, template_stops = self.render_prompt(messages)
        grammar = None
        try:
            if options.grammar:
                grammar = LlamaGrammar.from_string(options.grammar, verbose=False)
            elif options.json_schema:
                grammar = LlamaGrammar.from_json_schema(json.dumps(options.json_schema), verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise LLMCallError(f"Invalid grammar or JSON schema: {exc}") from exc
        recorder = _LogprobRecorder(options.top_logprobs) if options.top_logprobs > 0 else None

        CALL_GATE.acquire(options.cancel)
        held = [True]  # False once a Stop ends a wait for the next turn: the gate is then not ours to release
        try:
            self._abort[0] = options.cancel
            watch = Stopwatch()
            tokens = self._prompt_tokens(prompt)
            pieces: list[str] = []
            finish_reason = "stop"
            try:
                if self._states is not None:
                    cached = self._states.prepare(tokens)
                else:
                    cached = common_prefix(np.asarray(self._llama._input_ids), np.asarray(tokens, dtype=np.intc))
                # llama.cpp reads at least the prompt's last token again, to have its logits.
                cached = min(cached, len(tokens) - 1)
                self._read_prompt(tokens, cached, options.cancel, held)
                chunks = self._llama.create_completion(
                    tokens,
                    max_tokens=options.max_tokens,
                    temperature=options.temperature,
                    stop=list(options.stop) + template_stops,
                    grammar=grammar,
                    seed=options.seed,
                    stream=True,
                    logits_processor=LogitsProcessorList([recorder]) if recorder else None,
                )
                for chunk in chunks:
                    if options.cancel is not None and options.cancel.is_set():
                        chunks.close()
                        raise Cancelled()
                    choice = chunk["choices"][0]
                    if choice.get("text"):
                        pieces.append(choice["text"])
                        yield choice["text"]
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
                    elif options.until and options.until("".join(pieces)):
                        finish_reason = "until"
                        chunks.close()
                        break
                    else:
                        self._give_way(options.cancel, held)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise LLMCallError(f"llama.cpp rejected the request: {exc}") from exc
            except RuntimeError as exc:  # "llama_decode returned 2": the abort callback stopped the computation
                if options.cancel is not None and options.cancel.is_set():
                    raise Cancelled() from exc
                raise LLMCallError(f"llama.cpp failed: {exc}") from exc
            if self._states is not None:
                self._states.save()
            text = "".join(pieces)
            completion_tokens = len(recorder.steps) if recorder else self.count_tokens(text)
            yield ChatResult(
                text=text,
                prompt_tokens=len(tokens),
                cached_tokens=max(cached, 0),
                completion_tokens=completion_tokens,
                elapsed_s=watch.elapsed(),
                finish_reason=finish_reason,
                logprobs=self._logprobs(recorder) if recorder else None,
            )
        finally:
            if held[0]:
                self._abort[0] = None
                CALL_GATE.release()

    def _read_prompt(self, tokens: list[int], cached: int, cancel: threading.Event | None,
                     held: list[bool]) -> None:
        """Read ``tokens`` past the first ``cached`` (which the context holds) in llama.cpp's own batches (512
        tokens, about 3 s on 2 cores), giving way between them, so that a long prompt does not hold everyone
        else up for its whole reading. The batches are the ones the completion would have read, so the replies
        are the same to the last bit; the completion that follows finds the whole prompt read."""
        llama = self._llama
        if len(tokens) >= llama.n_ctx():  # as create_completion would say, before reading any of it
            raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {llama.n_ctx()}")
        llama.n_tokens = cached  # llama.eval drops what the context holds past this
        for start in range(cached, len(tokens), llama.n_batch):
            if start > cached:
                self._give_way(cancel, held)
            llama.eval(tokens[start:start + llama.n_batch])

    def _give_way(self, cancel: threading.Event | None, held: list[bool]) -> None:
        """Between two slices of prompt or two tokens: let a call of a share charged less have the model, then
        carry on exactly where this call was (``models.cancel.CallGate``)."""
        try:
            CALL_GATE.give_way(cancel, self._suspend, lambda state: self._resume(state, cancel))
        except Cancelled:
            held[0] = False
            raise

    def _suspend(self) -> _Suspended:
        import llama_cpp

        llama = self._llama
        size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size)
        self._abort[0] = None
        return _Suspended(bytes(memoryview(buffer)[:written]), np.array(llama._input_ids, dtype=np.intc),
                          llama._sampler, llama._mirostat_mu)

    def _resume(self, state: _Suspended, cancel: threading.Event | None) -> None:
        import llama_cpp

        llama = self._llama
        buffer = (ctypes.c_uint8 * len(state.data)).from_buffer_copy(state.data)
        if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(state.data)) != len(state.data):
            raise LLMCallError("llama.cpp could not restore a call's state after it gave way to another.")
        count = len(state.tokens)
        llama.input_ids[:count] = state.tokens
        llama.n_tokens = count
        llama._requires_eval = True
        # The completion's sampler (its grammar's state with it) lives on the Llama object; another call's
        # completion replaced it.
        llama._sampler, llama._mirostat_mu = state.sampler, state.mirostat_mu
        self._abort[0] = cancel

    def _logprobs(self, recorder: _LogprobRecorder) -> list[TokenLogprob]:
        out = []
        for ids, values in recorder.steps:
            top: dict[str, float] = {}
            for token_id, value in zip(ids.tolist(), values.tolist()):
                token = self._llama.detokenize([token_id]).decode("utf-8", errors="replace")
                top[token] = max(top.get(token, -1e9), value)
            best = next(iter(top))
            out.append(TokenLogprob(token=best, logprob=top[best], top=top))
        return out

    def close(self) -> None:
        self._llama.close()
