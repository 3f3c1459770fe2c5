"""Deterministic stand-ins: a scripted chat model and a scripted web-search backend."""

from __future__ import annotations

import contextlib
import http.server
import json
import math
import re
import threading
import time
from typing import Callable, Iterator

from models.errors import Cancelled, LLMCallError
from models.llm import ChatModel, ChatResult, GenerationOptions, Message, TokenLogprob

Reply = str | Exception
Script = list[Reply] | Callable[[list[Message], GenerationOptions], Reply]


class ScriptedLLM(ChatModel):
    """Replies from a list (in order) or a function of the request; records every request in ``calls``.

    Replies stream word by word (``delay`` seconds apart) and honour ``options.until`` as a backend does. An ``Exception`` as a reply is raised, as a failing backend would.
    ``logprobs`` (token -> log-probability) is returned as the first token's alternatives when asked for.
    """

    name = "scripted"

    def __init__(self, script: Script, logprobs: dict[str, float] | None = None, delay: float = 0.0,
                 gate=None) -> None:
        self.script = script
        self.logprobs = logprobs
        self.delay = delay  # seconds per streamed piece, to watch a run unfold in a browser
        self.gate = gate  # a models.cancel.CallGate: calls take turns through it, as in-process models do
        self.calls: list[tuple[list[Message], GenerationOptions]] = []

    def _next_reply(self, messages: list[Message], options: GenerationOptions) -> str:
        if callable(self.script):
            reply = self.script(messages, options)
        elif len(self.calls) <= len(self.script):
            reply = self.script[len(self.calls) - 1]
        else:
            raise LLMCallError(f"The script has no reply for call {len(self.calls)}.")
        if isinstance(reply, Exception):
            raise reply
        return reply

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        if self.gate is None:
            yield from self._stream(messages, options)
            return
        self.gate.acquire(options.cancel)
        held = True
        try:
            for item in self._stream(messages, options):
                yield item
                try:  # between pieces, as llama_backend gives way between tokens
                    self.gate.give_way(options.cancel, lambda: None, lambda _state: None)
                except Cancelled:
                    held = False
                    raise
        finally:
            if held:
                self.gate.release()

    def _stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        self.calls.append((messages, options))
        reply = self._next_reply(messages, options)
        pieces = re.findall(r"\S+\s*|\s+", reply)
        finish_reason = "stop"
        if options.until:
            for end in range(1, len(pieces) + 1):
                if options.until("".join(pieces[:end])):
                    pieces, reply, finish_reason = pieces[:end], "".join(pieces[:end]), "until"
                    break
        for piece in pieces:
            if self.delay:
                time.sleep(self.delay)
            yield piece
        top = [TokenLogprob(token=pieces[0] if pieces else "", logprob=0.0, top=self.logprobs)] \
            if self.logprobs and options.top_logprobs else None
        yield ChatResult(
            text=reply,
            prompt_tokens=sum(len(m["content"].split()) for m in messages),
            completion_tokens=len(pieces),
            finish_reason=finish_reason,
            logprobs=top,
        )


class ScriptedSearch:
    """A web-search backend answering from a dict (query -> rows) or raising a given error; counts calls."""

    def __init__(self, results: dict[str, list[dict[str, str]]] | None = None, error: Exception | None = None):
        self.results = results or {}
        self.error = error
        self.queries: list[str] = []

    def search(self, query: str, max_results: int) -> list[dict[str, str]]:
        self.queries.append(query)
        if self.error:
            raise self.error
        return self.results.get(query, [])[:max_results]


class ScriptedRetriever:
    """A retriever answering from a function of (query, k) -> passages; records every (query, k)."""

    def __init__(self, answer: Callable[[str, int], list]) -> None:
        self.answer = answer
        self.queries: list[tuple[str, int]] = []

    def retrieve(self, query: str, k: int):
        from pipeline.retrieval import Retrieved

        self.queries.append((query, k))
        return Retrieved(passages=list(self.answer(query, k))[:k])


class TreeScript:
    """Scripted replies: clarifications per asked question (all at once, or one per passage read), P(True) per
    answer, and the final answer."""

    def __init__(self, tree: dict[str, list[tuple[str, str]] | str], p_true: dict[str, float] | None = None,
                 answer: str = "The 2024 Tour was won by Tadej Pogacar [1]. In 2023 Jonas Vingegaard won [2]. "
                               "The question has several readings.", delay: float = 0.0):
        self.tree, self.p_true, self.answer = tree, p_true or {}, answer
        self.llm = ScriptedLLM(self.reply, logprobs={}, delay=delay)
        self.calls_for: list[str] = []  # the question of every clarification call (retries included)

    @property
    def clarified(self) -> list[str]:
        """The questions expanded, in order (a retry under the grammar is the same expansion)."""
        return list(dict.fromkeys(self.calls_for))

    def reply(self, messages, options):
        last = messages[-1]["content"]
        if messages[0]["content"].startswith("You find which specific version"):  # one passage at a time
            return self._reading(last.split("Question: ", 1)[1].split("\n", 1)[0].strip())
        if messages[0]["content"].startswith("You clarify"):
            question = last.rsplit("Question: ", 1)[1].strip()
            self.calls_for.append(question)
            pairs = self.tree.get(question, [])
            if isinstance(pairs, str):  # a malformed reply
                return pairs
            return json.dumps({"disambiguations": [{"question": q, "answer": a} for q, a in pairs]})
        if options.grammar and "True" in options.grammar:
            answer = last.split("Proposed answer: ", 1)[1].split("\n")[0]
            p = self.p_true.get(answer, 0.9)
            self.llm.logprobs = {"True": math.log(max(p, 1e-9)), "False": math.log(max(1 - p, 1e-9))}
            return "True" if p >= 0.5 else "False"
        return self.answer

    def _reading(self, question: str) -> str:
        """The one-passage clarification: the n-th passage read for ``question`` gives its n-th scripted pair,
        and empty strings once they run out."""
        self.calls_for.append(question)
        pairs = self.tree.get(question, [])
        if isinstance(pairs, str):
            return pairs
        read = self.calls_for.count(question) - 1
        clarified, answer = pairs[read] if read < len(pairs) else ("", "")
        return json.dumps({"question": clarified, "answer": answer})


def run_events(method: str, question: str, ctx) -> list:
    """All events of ``method`` on ``question`` in ``ctx`` (through the safe runner, as the service runs it)."""
    from pipeline.methods import get_method, run_method

    return list(run_method(get_method(method), question, ctx))


def settings_with(**overrides):
    """Default settings with ``overrides`` by dotted name: ``settings_with(**{"toc.max_depth": 1})``, or
    per method: ``settings_with(toc={"max_depth": 1})``."""
    from pipeline.methods import settings_models
    from pipeline.settings import Settings

    flat = {}
    for key, value in overrides.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return Settings().changed(flat, settings_models())


class _SilentChat(http.server.BaseHTTPRequestHandler):
    """Lists one model at once, then never answers a chat request (a hung or hostile server)."""

    hang_s = 120.0

    def do_GET(self):  # noqa: N802
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        time.sleep(self.hang_s)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """An OpenAI-compatible server on loopback that accepts chat requests and never answers; yields its
    ``/v1`` URL and shuts it down afterwards."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SilentChat)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
