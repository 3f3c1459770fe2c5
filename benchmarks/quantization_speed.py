"""How fast the default model reads a prompt and writes tokens in other llama.cpp quantizations, made from the
bundled GGUF with llama.cpp's own quantizer (through llama-cpp-python; no download). For issue 33: reading is
most of a question's seconds, and a quantization whose CPU kernels read faster would speed every method.

    python -m benchmarks.quantization_speed [--types q4_0,q8_0] [--prompt-tokens 1000] [--repeats 3]

Each type is written once next to the bundled model's cache (``<models>/quantized/``), then each file in turn is
loaded alone in this process with the app's thread count (every core); a prompt of ``--prompt-tokens`` tokens of the README is
read from an empty context ``--repeats`` times, each followed by 32 single-token steps (decoding without sampling,
so it times the model, not the sampler). A type made from Q4_K_M re-quantizes weights already quantized: its
answers must be measured before any use, which this benchmark does not do. Run it alone.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import time
from pathlib import Path

from pipeline.evaluation.tables import table

TYPES = {"q4_0": 2, "q8_0": 7}  # llama_ftype values (llama.h: LLAMA_FTYPE_MOSTLY_Q4_0, LLAMA_FTYPE_MOSTLY_Q8_0)
README = Path(__file__).resolve().parents[1] / "README.md"


def quantize(source: Path, kind: str, out_dir: Path) -> Path:
    """``source`` re-quantized to ``kind`` in ``out_dir`` (made once)."""
    import llama_cpp

    target = out_dir / f"{source.stem}.{kind}.gguf"
    if target.exists():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread, params.ftype, params.allow_requantize = 2, TYPES[kind], True
    partial = target.with_suffix(".part")
    if llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp could not quantize {source} to {kind}")
    partial.rename(target)
    return target


def speeds(path: Path, prompt_tokens: int, repeats: int, threads: int) -> tuple[list[float], list[float]]:
    """Prompt tokens read per second and tokens written per second, one of each per repeat."""
    import llama_cpp

    llm = llama_cpp.Llama(str(path), n_ctx=max(2048, prompt_tokens + 64), n_threads=threads, verbose=False)
    tokens = llm.tokenize(README.read_text(encoding="utf-8").encode())[:prompt_tokens]
    read, written = [], []
    for _ in range(repeats):
        llm.reset()
        start = time.perf_counter()
        llm.eval(tokens)
        read.append(len(tokens) / (time.perf_counter() - start))
        start = time.perf_counter()
        for token in tokens[:32]:
            llm.eval([token])
        written.append(32 / (time.perf_counter() - start))
    del llm
    return read, written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--types", default="q4_0,q8_0", help=f"comma-separated, among {', '.join(TYPES)}")
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from models.registry import resolve_model_path

    source = resolve_model_path("default")
    files = [("q4_k_m (bundled)", source)] + [
        (kind, quantize(source, kind, source.parent / "quantized")) for kind in args.types.split(",")]
    rows, base = [], None
    for label, path in files:
        read, written = speeds(path, args.prompt_tokens, args.repeats, os.cpu_count() or 1)  # as the app's backend
        base = base or statistics.median(read)
        rows.append([label, f"{path.stat().st_size / 2**20:,.0f}", " / ".join(f"{r:.0f}" for r in read),
                     f"{statistics.median(read) / base:.2f} ×", " / ".join(f"{w:.1f}" for w in written)])
    print(table(["GGUF", "MiB", f"prompt tokens read per s ({args.prompt_tokens} tokens, each repeat)",
                 "reading against the bundled", "tokens written per s (each repeat)"], rows))


if __name__ == "__main__":
    main()
