"""Screenshots of the real app for the README: a Tree of Clarifications mid-question and answered, an IRCoT
chain, and a comparison of two methods, each asked with one of the example questions over the demo corpus.

    .venv/bin/python scripts/screenshots.py [--model default] [--data-dir storage] [--out docs/screenshots]

Serves the app in-process on a free loopback port with the chosen model, drives Debian's headless Chromium
(Playwright) at 1500x1000 and writes toc-mid-question.png, toc-answered.png, ircot-chain.png and compare.png.
It runs a real model: about five minutes with the default model on 2 cores; run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.ui_latency import choose, free_port  # noqa: E402  (after the path is set)

TOC_QUESTION = "Who was England's prime minister during WW1?"
IRCOT_QUESTION = "Where was the director of film Torchy Blane In Panama born?"
COMPARE_QUESTION = "When is Fortnite Battle Royale being released on Android?"


def _ask(page, question: str) -> None:
    page.click("#new-conversation")
    page.wait_for_selector("#reasoning:has-text('New conversation')")
    page.fill("#question textarea", question)
    page.click("#ask")


def _settle(page) -> None:
    page.wait_for_timeout(600)  # the last update painted, tooltips and animations at rest


def main(argv: list[str] | None = None) -> int:
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from ui.app import build_app, launch_options

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model=args.model))
    runtime.llm()
    runtime.ensure_demo()
    app = build_app(runtime)
    app.queue(default_concurrency_limit=1)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("#question textarea")

            choose(page, "method", "Tree of Clarifications")
            _ask(page, TOC_QUESTION)
            # Mid-question: some interpretations drawn, the run still going.
            page.wait_for_function("document.querySelectorAll('#picture .rp-node').length >= 5 && "
                                   "!document.querySelector('#reasoning .rv-done')", timeout=600_000)
            _settle(page)
            page.screenshot(path=args.out / "toc-mid-question.png")
            page.wait_for_selector("#reasoning .rv-done", timeout=900_000)
            _settle(page)
            page.screenshot(path=args.out / "toc-answered.png")
            written += ["toc-mid-question.png", "toc-answered.png"]

            choose(page, "method", "IRCoT")
            _ask(page, IRCOT_QUESTION)
            page.wait_for_selector("#reasoning .rv-done", timeout=900_000)
            _settle(page)
            page.screenshot(path=args.out / "ircot-chain.png")
            written.append("ircot-chain.png")

            page.check("#compare-toggle input")
            page.wait_for_selector("#compare-methods")
            _ask(page, COMPARE_QUESTION)
            page.wait_for_selector("#compare .rp-compare[data-state=done]", timeout=1_800_000)
            _settle(page)
            page.locator("#compare").screenshot(path=args.out / "compare.png")
            written.append("compare.png")
            browser.close()
    finally:
        app.close()
        runtime.close()
    for name in written:
        print(args.out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
