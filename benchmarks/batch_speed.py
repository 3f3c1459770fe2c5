"""Whether llama.cpp's own server (``llama-server``: parallel slots, continuous batching) finishes N model calls
sooner together than one after another on this machine, against llama-cpp-python as the app runs it today.

    python -m benchmarks.batch_speed --model default --out docs/results/batch_speed-default.json   # ~25 min
    python -m benchmarks.batch_speed --quick       # smoke run: small prompts, N = 1, 2, one repeat, the fast model

Every call is a RAG prompt in the app's OneR form (``pipeline/prompts/oner_answer.yaml``): a question and
``--passages`` passages of ``--passage-words`` words cut from one HotpotQA item's passages
(``data/eval/hotpotqa.jsonl``), 900-1,000 tokens with the defaults (5 passages of 100 words), rendered with the
GGUF's own chat template.
Each call writes exactly ``--max-tokens`` tokens at temperature 0 (end-of-generation tokens are banned:
``ignore_eos`` on the server, a -inf logit bias in llama-cpp-python), so both engines do the same work. Two
kinds of batch:

- distinct: every call has its own question, passages and nonce (no shared prefix, not even the instructions);
- shared: the same passages, a different question at the end (ToC / KGP calls over the same passages).

Each round starts its prompts with a new nonce, so no round reuses an earlier round's cached prompt; within a
round, "one after another" may reuse the shared passages (llama-cpp-python keeps the last prompt's prefix, the
server picks the slot holding the longest common prefix) - as the app does today.

For N in 1, 2, 4 (``--n``), and each kind:

- app today: llama-cpp-python (``llama_cpp.Llama``, ``--threads`` threads, n_ctx = ``--ctx-per-seq``, the app's
  AMX rule) runs the N calls one after another;
- server, one after another: ``llama-server -np N -c N x ctx-per-seq`` runs the same N calls one at a time;
- server, together: the same server gets the N calls at once (N client threads).

Speed-up = wall time of N calls one after another / wall time of the same N calls together (on the same server),
and against the app today. Prompt and generation tokens/s per call come from the server's ``timings`` field and
from llama.cpp's own counters in llama-cpp-python (``llama_perf_context``); "all calls" generation tokens/s is the
batch's generated tokens / its wall time. A call's prompt speed read together with others counts the time its
prompt shared the batch, so per-call prompt tokens/s falls as N grows. Figures are medians over ``--repeats``.
The server also answers three feature probes (``n_probs`` under a grammar, ``json_schema``, chat ``logprobs``).

Server flags: ``-t``/``-tb`` = ``--threads``, ``-b``/``-ub`` 512 and ``-fa off`` as llama-cpp-python's ``Llama``
defaults, ``--no-repack`` where the app turns llama.cpp's extra buffer types off (AMX CPUs); the rest are the
server's defaults (continuous batching on, one KV cache per slot, 8 GiB host prompt cache); ``--server-args``
adds more.

Needs the ``llama-server`` binary (``--server-bin``, default ``$RQA_LLAMA_SERVER`` or
``~/.cache/research-qa/bin/llama-server``) built from the llama.cpp that llama-cpp-python 0.3.36 vendors, with the
CPU backend options its wheel gets (llama.cpp's defaults: -march=native, OpenMP, repack, llamafile), statically
(about 5 minutes on 2 cores):

    pip download llama-cpp-python==0.3.36 --no-binary :all: --no-deps -d /tmp/lcp
    cd /tmp/lcp && tar xzf llama_cpp_python-0.3.36.tar.gz && cd llama_cpp_python-0.3.36/vendor/llama.cpp
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DLLAMA_OPENSSL=OFF \\
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \\
        -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
    cmake --build build --target llama-server -j 2
    install -D build/bin/llama-server ~/.cache/research-qa/bin/llama-server

Run it alone: another busy process on the 2 cores changes every figure (llama.cpp's OpenMP threads wait for each
other, so a third runnable process can slow a call several times); the load average before and after is
recorded. The server is stopped at the end, on Ctrl-C and on errors.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Callable

import yaml

from benchmarks import commit

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "eval" / "hotpotqa.jsonl"
PROMPT_FILE = ROOT / "pipeline" / "prompts" / "oner_answer.yaml"
DEFAULT_SERVER_BIN = Path(os.environ.get("RQA_LLAMA_SERVER")
                          or Path.home() / ".cache" / "research-qa" / "bin" / "llama-server")
VARIANTS = ("distinct", "shared")
APP, SERVER = "llama-cpp-python", "llama-server"
ONE_BY_ONE, TOGETHER = "one after another", "together"

Messages = list[dict[str, str]]


# --------------------------------------------------------------------------------------------------- prompts


def load_items(path: Path = DATA, limit: int = 16) -> list[dict]:
    """The first ``limit`` items of a JSONL file with ``question`` and ``passages`` (``title``, ``text``)."""
    items = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                items.append(json.loads(line))
            if len(items) >= limit:
                break
    return items


def cut_passages(item: dict, count: int, words: int) -> list[tuple[str, str]]:
    """``count`` passages of exactly ``words`` words, cut in order from all of ``item``'s passage texts (cycled
    when they are too short), titled with the item's passage titles in order: deterministic, no shared text
    between items beyond what the data shares."""
    pool = [w for p in item["passages"] for w in p["text"].split()]
    titles = [p["title"] for p in item["passages"]] or ["Passage"]
    if not pool:
        raise ValueError(f"item {item.get('id')!r} has no passage text")
    passages = []
    for i in range(count):
        start = i * words
        text = " ".join(pool[(start + k) % len(pool)] for k in range(words))
        passages.append((titles[i % len(titles)], text))
    return passages


def load_prompt_template(path: Path = PROMPT_FILE) -> tuple[str, str]:
    """The (system, user) texts of the app's OneR answer prompt."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    return spec["system"].strip(), spec["user"].strip()


def rag_messages(passages: list[tuple[str, str]], question: str, nonce: str,
                 template: tuple[str, str] | None = None) -> Messages:
    """Chat messages for one call: the nonce first (so no earlier round's cache applies), then the passages
    numbered as the app numbers them, the question last (so calls over the same passages share a prefix)."""
    system, user = template or load_prompt_template()
    block = "\n".join(f"[{i}] {title}: {text}" for i, (title, text) in enumerate(passages, 1))
    return [{"role": "system", "content": f"Session {nonce}.\n{system}"},
            {"role": "user", "content": user.replace("{passages}", block).replace("{question}", question)}]


def batch_messages(items: list[dict], n: int, variant: str, nonce: str, *, passages: int, words: int,
                   template: tuple[str, str] | None = None) -> list[Messages]:
    """The N calls of one round. distinct: call j reads item j's passages and asks item j's question, and its
    nonce has the call's number, so no two calls share a prefix at all; shared: every call reads item 0's
    passages under the same nonce, call j asks item j's question."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    if n > len(items):
        raise ValueError(f"{n} calls need {n} items, only {len(items)} loaded")
    template = template or load_prompt_template()
    calls = []
    for j in range(n):
        source = items[j] if variant == "distinct" else items[0]
        call_nonce = f"{nonce}-{j}" if variant == "distinct" else nonce
        calls.append(rag_messages(cut_passages(source, passages, words), items[j]["question"], call_nonce,
                                  template))
    return calls


# ---------------------------------------------------------------------------------------------- arithmetic


def speedup(one_by_one_s: float, together_s: float) -> float:
    """How many times sooner the calls finish together than one after another (>1: together is faster)."""
    if together_s <= 0:
        raise ValueError("together_s must be positive")
    return one_by_one_s / together_s


def rate(tokens: float, seconds: float) -> float:
    """tokens / seconds, NaN when no time was measured."""
    return tokens / seconds if seconds > 0 else float("nan")


def summarise(records: list[dict]) -> list[dict]:
    """One summary per (variant, N) from the measured rounds: median wall times over repeats, the speed-ups,
    and median per-call / all-call token rates for each (engine, mode)."""
    groups: dict[tuple[str, int], dict[tuple[str, str], list[dict]]] = {}
    for rec in records:
        groups.setdefault((rec["variant"], rec["n"]), {}).setdefault((rec["engine"], rec["mode"]), []).append(rec)
    out = []
    for (variant, n), runs in sorted(groups.items(), key=lambda kv: (VARIANTS.index(kv[0][0]), kv[0][1])):
        row: dict = {"variant": variant, "n": n}
        for (engine, mode), recs in runs.items():
            key = f"{'app' if engine == APP else 'server'}_{'seq' if mode == ONE_BY_ONE else 'par'}"
            calls = [c for r in recs for c in r["calls"]]
            row[f"{key}_s"] = statistics.median(r["wall_s"] for r in recs)
            row[f"{key}_gen_tps_call"] = statistics.median(rate(c["predicted_n"], c["predicted_ms"] / 1000)
                                                           for c in calls)
            row[f"{key}_gen_tps_all"] = statistics.median(
                rate(sum(c["predicted_n"] for c in r["calls"]), r["wall_s"]) for r in recs)
            read = [c for c in calls if c["prompt_n"] > 0]
            row[f"{key}_prompt_tps_call"] = (statistics.median(rate(c["prompt_n"], c["prompt_ms"] / 1000)
                                                               for c in read) if read else float("nan"))
            row[f"{key}_prompt_tokens"] = statistics.median(c["prompt_n"] + c.get("cache_n", 0) for c in calls)
            row[f"{key}_prompt_read"] = statistics.median(sum(c["prompt_n"] for c in r["calls"]) for r in recs)
        if "server_seq_s" in row and "server_par_s" in row:
            row["speedup_server"] = speedup(row["server_seq_s"], row["server_par_s"])
        if "app_seq_s" in row and "server_par_s" in row:
            row["speedup_vs_app"] = speedup(row["app_seq_s"], row["server_par_s"])
        out.append(row)
    return out


def _fmt(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return format(value, spec)


def format_tables(summary: list[dict]) -> str:
    """Two markdown tables: wall times and speed-ups, then token rates per (engine, mode)."""
    from pipeline.evaluation.tables import table

    walls = [[r["variant"], r["n"], _fmt(r.get("server_par_prompt_tokens", r.get("app_seq_prompt_tokens")), ".0f"),
              _fmt(r.get("app_seq_s"), ".1f"), _fmt(r.get("server_seq_s"), ".1f"), _fmt(r.get("server_par_s"), ".1f"),
              _fmt(r.get("speedup_server"), ".2f"), _fmt(r.get("speedup_vs_app"), ".2f")]
             for r in summary]
    first = table(["prompts", "N", "prompt tokens per call", "app today: one after another s",
                   "server: one after another s", "server: together s", "together vs one after another (server)",
                   "server together vs app today"], walls)
    rates = []
    for r in summary:
        for key, label in (("app_seq", f"{APP}, {ONE_BY_ONE}"), ("server_seq", f"{SERVER}, {ONE_BY_ONE}"),
                           ("server_par", f"{SERVER}, {TOGETHER}")):
            if f"{key}_s" in r:
                rates.append([r["variant"], r["n"], label, _fmt(r[f"{key}_prompt_read"], ".0f"),
                              _fmt(r[f"{key}_prompt_tps_call"], ".0f"), _fmt(r[f"{key}_gen_tps_call"], ".1f"),
                              _fmt(r[f"{key}_gen_tps_all"], ".1f")])
    second = table(["prompts", "N", "engine, calls", "prompt tokens read (all calls)", "prompt tok/s per call",
                    "generated tok/s per call", "generated tok/s all calls (wall)"], rates)
    return first + "\n\n" + second


# ------------------------------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to send SIGTERM when this benchmark dies, even by SIGKILL."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def http_json(url: str, payload: dict | None = None, timeout: float = 900) -> dict:
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


class LlamaServer:
    """``llama-server`` on a free loopback port for the lifetime of a ``with`` block."""

    def __init__(self, binary: Path, model: Path, *, n_parallel: int, ctx_per_seq: int, threads: int,
                 batch: int, ubatch: int, flash_attn: str, repack: bool, extra: list[str]) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                     "-np", str(n_parallel), "-c", str(n_parallel * ctx_per_seq), "-t", str(threads),
                     "-tb", str(threads), "-b", str(batch), "-ub", str(ubatch), "-fa", flash_attn,
                     *([] if repack else ["--no-repack"]), *extra]
        self.process: subprocess.Popen | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)

    def __enter__(self) -> "LlamaServer":
        self.process = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}; log:\n{self.log_tail()}")
            try:
                if http_json(self.base + "/health", timeout=2).get("status") == "ok":
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"llama-server not ready after {timeout:.0f} s; log:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self.log.closed:
            self.log.close()
            Path(self.log.name).unlink(missing_ok=True)

    def log_tail(self, lines: int = 30) -> str:
        self.log.flush()
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def render(self, messages: Messages) -> str:
        """The prompt text the GGUF's chat template makes of ``messages`` (the server's own rendering)."""
        return http_json(self.base + "/apply-template", {"messages": messages})["prompt"]

    def complete(self, prompt: str, max_tokens: int) -> dict:
        """One call through /completion; its timings and wall time."""
        clock = time.perf_counter()
        reply = http_json(self.base + "/completion", {
            "prompt": prompt, "n_predict": max_tokens, "temperature": 0, "cache_prompt": True,
            "ignore_eos": True, "stream": False})
        wall = time.perf_counter() - clock
        t = reply["timings"]
        return {"wall_s": wall, "prompt_n": t["prompt_n"], "cache_n": t.get("cache_n", 0),
                "prompt_ms": t["prompt_ms"], "predicted_n": t["predicted_n"], "predicted_ms": t["predicted_ms"]}


def run_one_after_another(complete: Callable[[str], dict], prompts: list[str]) -> tuple[float, list[dict]]:
    clock = time.perf_counter()
    calls = [complete(p) for p in prompts]
    return time.perf_counter() - clock, calls


def run_together(complete: Callable[[str], dict], prompts: list[str]) -> tuple[float, list[dict]]:
    """All prompts at once, one thread each; the wall time runs from the common start to the last reply."""
    results: list[dict | BaseException | None] = [None] * len(prompts)
    go = threading.Event()

    def work(i: int) -> None:
        go.wait()
        try:
            results[i] = complete(prompts[i])
        except BaseException as exc:  # reported in the main thread
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    clock = time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - clock
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return wall, results


def probe_features(server: LlamaServer) -> dict:
    """Whether this server version answers ``n_probs`` under a grammar (and with what), ``json_schema`` and
    OpenAI-style chat ``logprobs``."""
    out: dict = {}
    prompt = server.render([{"role": "user", "content": "Is Paris the capital of France? Answer True or False."}])
    try:
        reply = http_json(server.base + "/completion", {
            "prompt": prompt, "n_predict": 1, "temperature": 0, "n_probs": 5,
            "grammar": 'root ::= "True" | "False"'})
        probs = reply.get("completion_probabilities") or []
        top = [(p.get("token"), round(p.get("logprob", p.get("prob", 0)), 3)) for p in probs[0].get("top_logprobs",
               probs[0].get("probs", []))] if probs else []
        out["n_probs_with_grammar"] = {"ok": bool(top), "content": reply.get("content"), "top": top,
                                       "outside_grammar": [t for t, _ in top if t not in ("True", "False")]}
    except (urllib.error.URLError, KeyError, IndexError) as exc:
        out["n_probs_with_grammar"] = {"ok": False, "error": repr(exc)}
    try:
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        reply = http_json(server.base + "/completion", {"prompt": prompt, "n_predict": 32, "temperature": 0,
                                                         "json_schema": schema})
        parsed = json.loads(reply["content"])
        out["json_schema"] = {"ok": isinstance(parsed, dict) and "answer" in parsed, "content": reply["content"]}
    except (urllib.error.URLError, KeyError, ValueError) as exc:
        out["json_schema"] = {"ok": False, "error": repr(exc)}
    try:
        reply = http_json(server.base + "/v1/chat/completions", {
            "messages": [{"role": "user", "content": "Say yes."}], "max_tokens": 2, "temperature": 0,
            "logprobs": True, "top_logprobs": 3})
        content = reply["choices"][0]["logprobs"]["content"]
        out["chat_logprobs"] = {"ok": bool(content and content[0].get("top_logprobs")),
                                "first": content[0] if content else None}
    except (urllib.error.URLError, KeyError, IndexError, TypeError) as exc:
        out["chat_logprobs"] = {"ok": False, "error": repr(exc)}
    return out


# ------------------------------------------------------------------------------------ llama-cpp-python


class AppLlama:
    """llama-cpp-python as the app runs it: ``Llama`` with n_threads / n_threads_batch = threads, the default
    batch (512) and flash attention (off), the app's AMX rule; prompt prefix kept between calls."""

    def __init__(self, model: Path, *, ctx_per_seq: int, threads: int) -> None:
        import llama_cpp

        from models.llama_runtime import configure_llama_cpp

        configure_llama_cpp()
        self.lib = llama_cpp
        self.llama = llama_cpp.Llama(model_path=str(model), n_ctx=ctx_per_seq, n_threads=threads,
                                     n_threads_batch=threads, verbose=False)
        vocab = llama_cpp.llama_model_get_vocab(self.llama._model.model)
        self.ban_eog = {i: float("-inf") for i in range(self.llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, i)}

    def complete(self, prompt: str, max_tokens: int) -> dict:
        ctx = self.llama._ctx.ctx
        self.lib.llama_perf_context_reset(ctx)
        clock = time.perf_counter()
        reply = self.llama.create_completion(prompt, max_tokens=max_tokens, temperature=0.0, stop=[],
                                             logit_bias=self.ban_eog)
        wall = time.perf_counter() - clock
        perf = self.lib.llama_perf_context(ctx)
        # llama.cpp counts a decode of more than one token as prompt, of one token as generation. Generated
        # tokens are counted as the server counts them: the first one, sampled from the prompt's logits, too.
        return {"wall_s": wall, "prompt_n": perf.n_p_eval, "cache_n": reply["usage"]["prompt_tokens"] - perf.n_p_eval,
                "prompt_ms": perf.t_p_eval_ms, "predicted_n": reply["usage"]["completion_tokens"],
                "predicted_ms": perf.t_eval_ms}

    def close(self) -> None:
        self.llama.close()


# ------------------------------------------------------------------------------------------------- main


def machine_info(server_bin: Path) -> dict:
    from pipeline.evaluation.tables import machine

    cpu = "unknown CPU"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        version = subprocess.run([str(server_bin), "--version"], capture_output=True, text=True, timeout=30)
        server_version = " ".join((version.stdout + version.stderr).split())
    except OSError as exc:
        server_version = f"unavailable: {exc}"
    try:
        import llama_cpp

        lcp = llama_cpp.__version__
    except ImportError:
        lcp = "not installed"
    return {"summary": machine(), "cpu": cpu, "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M"),
            "commit": commit(), "python": platform.python_version(), "llama_cpp_python": lcp,
            "llama_server": server_version}


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="default, fast or a GGUF path (default: default; "
                                                       "fast with --quick)")
    parser.add_argument("--n", default="1,2,4", help="parallel calls per batch, comma-separated")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--passages", type=int, default=5)
    parser.add_argument("--passage-words", type=int, default=100)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--ctx-per-seq", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch", type=int, default=512, help="server -b (llama-cpp-python's n_batch is 512)")
    parser.add_argument("--ubatch", type=int, default=512, help="server -ub")
    parser.add_argument("--flash-attn", default="off", choices=["on", "off", "auto"],
                        help="server -fa (off: as llama-cpp-python's Llama by default)")
    parser.add_argument("--server-bin", type=Path, default=DEFAULT_SERVER_BIN)
    parser.add_argument("--server-args", default="", help="extra llama-server options, one shell-quoted string")
    parser.add_argument("--skip-app", action="store_true", help="leave out the llama-cpp-python baseline")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON results (default: docs/results/batch_speed-MODEL.json; "
                             "with --quick a file in the temporary folder)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2 passages of 40 words, 16 tokens, N = 1, 2, one repeat, the fast model")
    args = parser.parse_args(argv)
    if args.quick:
        args.passages, args.passage_words, args.max_tokens, args.repeats = 2, 40, 16, 1
        if args.n == "1,2,4":
            args.n = "1,2"
    model_key = args.model or ("fast" if args.quick else "default")
    out = args.out or (Path(tempfile.gettempdir()) / f"batch_speed-quick-{Path(model_key).stem}.json" if args.quick
                       else ROOT / "docs" / "results" / f"batch_speed-{Path(model_key).stem}.json")
    ns = [int(x) for x in args.n.split(",")]
    variants = [v for v in args.variants.split(",") if v]
    if not args.server_bin.exists():
        sys.exit(f"no llama-server at {args.server_bin}: build it (see the module docstring) or pass --server-bin")

    # SIGTERM ends the run like Ctrl-C, so the server is stopped on the way out.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even where the shell started us ignoring it

    from models.llama_runtime import extra_buffer_types_wanted
    from models.registry import resolve_model_path

    model = resolve_model_path(model_key)
    items = load_items(args.data, limit=max(ns))
    template = load_prompt_template()
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    settings["model_path"] = str(model)
    repack = extra_buffer_types_wanted()
    server_kwargs = dict(ctx_per_seq=args.ctx_per_seq, threads=args.threads, batch=args.batch, ubatch=args.ubatch,
                         flash_attn=args.flash_attn, repack=repack, extra=shlex.split(args.server_args))
    info = machine_info(args.server_bin)
    info["load_average_before"] = os.getloadavg()
    print(f"Machine: {info['summary']}; {info['llama_server']}", flush=True)
    if info["load_average_before"][0] > 0.5:
        print(f"Warning: load average {info['load_average_before'][0]:.1f} - something else is running; the "
              "figures will be noisy", file=sys.stderr, flush=True)

    def rounds():
        """(variant, N, repeat) of every measured round."""
        for n in ns:
            for variant in variants:
                for repeat in range(args.repeats):
                    yield variant, n, repeat

    records: list[dict] = []
    features: dict = {}
    interrupted = False
    server_args: dict[int, list[str]] = {}

    def record(engine, mode, variant, n, repeat, wall, calls):
        records.append({"engine": engine, "mode": mode, "variant": variant, "n": n, "repeat": repeat,
                        "wall_s": wall, "calls": calls})
        per = ", ".join(f"{c['prompt_n']}+{c['cache_n']}p/{c['predicted_n']}g" for c in calls)
        print(f"  {variant:8} N={n} #{repeat} {engine}, {mode}: {wall:6.2f} s  [{per}]", flush=True)

    # Prompts are rendered by the server (the GGUF's template) once, so both engines read the same text.
    rendered: dict[tuple[str, int, int, str], list[str]] = {}
    try:
        with LlamaServer(args.server_bin, model, n_parallel=1, **server_kwargs) as server:
            features = probe_features(server)
            for variant, n, repeat in rounds():
                for mode in (ONE_BY_ONE, TOGETHER):
                    nonce = uuid.uuid4().hex[:12]
                    calls = batch_messages(items, n, variant, nonce, passages=args.passages,
                                           words=args.passage_words, template=template)
                    rendered[(variant, n, repeat, mode)] = [server.render(m) for m in calls]
        print("Feature probes: " + "; ".join(f"{k}: {'yes' if v.get('ok') else 'NO'}" for k, v in features.items()),
              flush=True)

        if not args.skip_app:
            print(f"{APP} (the app today), calls one after another:", flush=True)
            app = AppLlama(model, ctx_per_seq=args.ctx_per_seq, threads=args.threads)
            try:
                app.complete("Warm up.", 4)  # shares no prefix with the measured prompts
                for variant, n, repeat in rounds():
                    # The same prompts the server reads one after another.
                    prompts = rendered[(variant, n, repeat, ONE_BY_ONE)]
                    wall, calls = run_one_after_another(lambda p: app.complete(p, args.max_tokens), prompts)
                    record(APP, ONE_BY_ONE, variant, n, repeat, wall, calls)
            finally:
                app.close()

        for n in ns:
            print(f"{SERVER} -np {n}:", flush=True)
            with LlamaServer(args.server_bin, model, n_parallel=n, **server_kwargs) as server:
                server_args[n] = server.args
                server.complete("Warm up.", 4)
                complete = lambda p: server.complete(p, args.max_tokens)  # noqa: E731
                for variant, n_, repeat in rounds():
                    if n_ != n:
                        continue
                    wall, calls = run_one_after_another(complete, rendered[(variant, n, repeat, ONE_BY_ONE)])
                    record(SERVER, ONE_BY_ONE, variant, n, repeat, wall, calls)
                    wall, calls = run_together(complete, rendered[(variant, n, repeat, TOGETHER)])
                    record(SERVER, TOGETHER, variant, n, repeat, wall, calls)
    except KeyboardInterrupt:
        interrupted = True
        print("Interrupted: the server is stopped; the rounds measured so far follow.", file=sys.stderr)

    info["load_average_after"] = os.getloadavg()
    summary = summarise(records)
    report = format_tables(summary)
    print()
    print(report)
    print(f"\nMachine: {info['summary']}")
    prompt_tokens = [c["prompt_n"] + c["cache_n"] for r in records for c in r["calls"]]
    if prompt_tokens:
        print(f"Prompt tokens per call: {min(prompt_tokens)}-{max(prompt_tokens)}; generated per call: "
              f"{args.max_tokens}")
    if not records:
        print("Nothing measured: no results file written.")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": info, "settings": settings, "complete": not interrupted,
                               "server_args": server_args, "features": features, "summary": summary,
                               "records": records}, indent=1))
    print(f"Wrote {out}" + (" (interrupted: partial)" if interrupted else ""))


if __name__ == "__main__":
    main()
