"""Model load time and prompt / generation speed of the bundled models through the public ``ChatModel``.

    python -m benchmarks.model_speed --models default,fast --repeats 5

Cold load: the GGUF dropped from the page cache first (needs root), as on the first start after a reboot;
warm load: the file already cached, as on every later start. Prompt tokens/s = prompt tokens / time to the first streamed piece (prompt evaluation); generation tokens/s =
(completion tokens - 1) / the rest of the time. Each repeat starts its prompt with a new nonce, so llama.cpp's
prefix cache cannot help. Figures are medians over the repeats.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from pathlib import Path

from models.llama_backend import LlamaCppChatModel
from models.llm import ChatResult, GenerationOptions
from models.registry import BUNDLED, prepare_bundled
from pipeline.evaluation.tables import machine, median, table

FILLER = ("The history of the printing press begins with movable type in East Asia and continues with "
          "Gutenberg's press in Mainz around 1440, which spread across Europe within fifty years. ") * 12


def measure(model: LlamaCppChatModel, max_tokens: int) -> tuple[float, float, int, int]:
    messages = [
        {"role": "system", "content": f"Session {uuid.uuid4().hex}. You are a helpful writer."},
        {"role": "user", "content": FILLER + "\nWrite a long, detailed essay about the printing press."},
    ]
    start = time.perf_counter()
    first = None
    result = None
    for item in model.stream(messages, GenerationOptions(max_tokens=max_tokens)):
        if isinstance(item, ChatResult):
            result = item
        elif first is None:
            first = time.perf_counter() - start
    total = time.perf_counter() - start
    return (result.prompt_tokens / first, (result.completion_tokens - 1) / (total - first),
            result.prompt_tokens, result.completion_tokens)


def cold_load_seconds(path) -> float | None:
    """Load time with the file out of the page cache (the first start after a reboot); None without root."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return None
    model = LlamaCppChatModel(path)
    model.close()
    return model.load_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="default,fast")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    rows = []
    for key in args.models.split(","):
        path = prepare_bundled(key)
        cold = [cold_load_seconds(path) for _ in range(args.repeats)]
        loads = []
        for _ in range(args.repeats):
            model = LlamaCppChatModel(path)
            loads.append(model.load_seconds)
            model.close()
        model = LlamaCppChatModel(path)
        measure(model, 8)  # warm-up
        runs = [measure(model, args.max_tokens) for _ in range(args.repeats)]
        model.close()
        cold_text = f"{median(cold):.2f}" if None not in cold else "n/a (needs root)"
        rows.append([f"{key} ({BUNDLED[key].description})", cold_text, f"{median(loads):.2f}",
                     f"{median([r[0] for r in runs]):.0f}", f"{median([r[1] for r in runs]):.1f}",
                     f"{median([r[2] for r in runs]):.0f}", f"{median([r[3] for r in runs]):.0f}"])
    print(f"Machine: {machine()}\n")
    print(table(["model", "cold load s", "warm load s", "prompt tok/s", "generation tok/s", "prompt tokens",
                 "generated tokens"], rows))


if __name__ == "__main__":
    main()
