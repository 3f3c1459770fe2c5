"""Several warm prompt prefixes for one llama.cpp context.

llama.cpp keeps the key/value cache of the last prompt only, so a method that alternates prompts (ToC's
clarification and verification, IRCoT's reasoning and reader, the first call of the next question) reads the
shared part of each prompt again. ``PromptStateCache`` keeps the context state (the key/value cache of the
tokens read) after each call, keyed by those tokens; before a call, the state whose tokens share the longest
prefix with the new prompt is restored when it shares more than the live context does, so only the rest is read.

llama-cpp-python ships ``LlamaRAMCache`` for this, but its saved states carry a copy of the context's score
matrix (n_batch x vocabulary floats: about 300 MB for Qwen2.5 with a 512 batch) on every call; this cache keeps
only llama.cpp's own state (about 28 KB per token for the 1.5B model).
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SavedState:
    tokens: np.ndarray  # the tokens whose keys and values the state holds
    data: bytes  # llama.cpp's state (llama_state_get_data)

    @property
    def size(self) -> int:
        return len(self.data) + self.tokens.nbytes


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """The length of the longest common prefix of two token arrays."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    different = np.flatnonzero(a[:n] != b[:n])
    return int(different[0]) if len(different) else n


class PromptStateCache:
    """Saved context states of one ``llama_cpp.Llama``, the least recently used dropped beyond ``capacity``
    bytes. Use it under the model's call lock: ``prepare(tokens)`` before a call, ``save()`` after it."""

    def __init__(self, llama, capacity_bytes: int, min_gain: int = 32) -> None:
        self._llama = llama
        self.capacity = capacity_bytes
        self.min_gain = min_gain  # restoring costs a copy: worth it only for this many more reusable tokens
        self._states: OrderedDict[int, SavedState] = OrderedDict()
        self._lock = threading.Lock()
        self._next = 0

    @property
    def size(self) -> int:
        return sum(state.size for state in self._states.values())

    def prepare(self, tokens: list[int]) -> int:
        """Make the context hold the longest saved prefix of ``tokens``; return how many prompt tokens need not
        be read again."""
        import llama_cpp

        llama = self._llama
        wanted = np.asarray(tokens, dtype=np.intc)
        live = common_prefix(np.asarray(llama._input_ids, dtype=np.intc), wanted)
        with self._lock:
            best_key, best = None, live
            for key, state in self._states.items():
                shared = common_prefix(state.tokens, wanted)
                if shared > best:
                    best_key, best = key, shared
            if best_key is None or best < live + self.min_gain:
                return live
            state = self._states[best_key]
            self._states.move_to_end(best_key)
        buffer = (ctypes.c_uint8 * len(state.data)).from_buffer_copy(state.data)
        if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(state.data)) != len(state.data):
            llama.reset()  # a failed restore leaves the context unknown: read the whole prompt
            return 0
        count = len(state.tokens)
        llama.input_ids[:count] = state.tokens
        llama.n_tokens = count
        llama._requires_eval = True  # the logits of a restored state are not the live ones
        return best

    def save(self) -> None:
        """Keep the context's state, keyed by the tokens it holds (a state whose tokens are a prefix of the new
        one's is dropped: the new one serves every prompt it served)."""
        import llama_cpp

        llama = self._llama
        tokens = np.array(llama._input_ids, dtype=np.intc)
        if len(tokens) == 0:
            return
        size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size)
        state = SavedState(tokens, bytes(memoryview(buffer)[:written]))
        if state.size > self.capacity:
            return
        with self._lock:
            for key in [k for k, s in self._states.items()
                        if len(s.tokens) <= len(tokens) and common_prefix(s.tokens, tokens) == len(s.tokens)]:
                del self._states[key]
            self._states[self._next] = state
            self._next += 1
            while self.size > self.capacity:
                self._states.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._states.clear()
