"""Screenshots of the real app for the README: a Tree of Clarifications mid-question and answered, an IRCoT
chain and a comparison of two methods, each asked with one of the example questions over the demo corpus, and
Knowledge Graph Prompting answering a question about a table of an uploaded PDF.

    .venv/bin/python scripts/screenshots.py [--model default] [--data-dir storage] [--out docs/screenshots]
        [--only toc,ircot,compare,kgp-table]

Serves the app in-process on a free loopback port with the chosen model, drives Debian's headless Chromium
(Playwright) at 1500x1000 and writes toc-mid-question.png, toc-answered.png, toc-steered.png (a tree's answer
rewritten after the person, who meant the TV series, left out the reading about the play),
ircot-chain.png, compare.png and kgp-table.png. The PDF (three pages, two ruled tables on page 2) is made by the script with fpdf2 and uploaded
through the Collections tab into a collection ``reports``. It runs a real model: about six minutes with the
default model on 2 cores; run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.ui_latency import choose, free_port  # noqa: E402  (after the path is set)
from ui import headless  # noqa: E402

TOC_QUESTION = "Who was England's prime minister during WW1?"
IRCOT_QUESTION = "Who died earlier, Theodor Kotsch or Herbert Walther?"
COMPARE_QUESTION = "When is Fortnite Battle Royale being released on Android?"
TABLE_QUESTION = "Which crop had the largest harvest in table 1 of harvest-report.pdf?"
STEER_QUESTION = "When did the Haves and Have Nots start?"
STEER_OUT = "play"  # the person meant the TV series: the reading about the play is left out
SHOTS = ("toc", "steer", "ircot", "compare", "kgp-table")


def make_harvest_report(path: Path) -> None:
    """A three-page PDF with text on every page and two ruled tables on page 2."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pages = ["The 2024 harvest report of the Lindenfeld cooperative covers its four farms and the weather of the "
             "season. Spring was cold and wet; sowing started two weeks late on every farm.",
             "Yields by crop are given below. Barley did best on the northern fields, which drain well; rye "
             "suffered from the wet spring on the eastern fields.",
             "Next year the cooperative plans to rotate oats onto the eastern fields and to share one combine "
             "harvester between the two southern farms."]
    tables = [[("Crop", "Tonnes", "Change on 2023"), ("Barley", "1,240", "+8%"), ("Rye", "455", "-12%"),
               ("Oats", "610", "+2%")],
              [("Month", "Rainfall"), ("April", "92 mm"), ("May", "110 mm"), ("June", "64 mm")]]
    for number, text in enumerate(pages, start=1):
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
        pdf.ln(4)
        if number == 2:
            for rows in tables:
                with pdf.table() as table:
                    for row in rows:
                        cells = table.row()
                        for value in row:
                            cells.cell(value)
                pdf.ln(5)
    pdf.output(str(path))


def _ask(page, question: str) -> None:
    page.click("#new-conversation")
    page.wait_for_selector("#reasoning:has-text('New conversation')")
    page.fill("#question textarea", question)
    page.click("#ask")


def _settle(page) -> None:
    page.wait_for_timeout(600)  # the last update painted, tooltips and animations at rest


def _upload_report(page) -> None:
    """Upload the harvest report into the collection ``reports`` and ask over that collection alone."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "harvest-report.pdf"
        make_harvest_report(path)
        page.click("button[role=tab]:has-text('Collections')")
        if page.locator("#collections-table:has-text('reports')").count() == 0:
            page.fill("#new-collection textarea, #new-collection input", "reports")
            page.click("#create-collection")
            page.wait_for_selector("#collections-table:has-text('reports')")
        choose(page, "chosen-collection", "reports")
        page.set_input_files("#uploads input[type=file]", str(path))
        page.click("#add-files")
        page.wait_for_selector("#ingest-report:has-text('harvest-report.pdf')", timeout=300_000)
    page.click("button[role=tab]:has-text('Ask')")
    for box in page.locator("#collections label").all():
        box.locator("input").set_checked("reports" in box.inner_text())


def _leave_out(page, word: str) -> bool:
    """Tick "Leave out" for the first kept reading that mentions ``word`` and press Rewrite; False (and no
    screenshot) when the tree kept no such reading beside another."""
    readings = page.locator("#steer label", has_text="Leave out reading")
    texts = readings.all_inner_texts()
    chosen = next((i for i, text in enumerate(texts) if word in text.lower()), None)
    if chosen is None or len(texts) < 2:
        print(f"the tree kept no reading about '{word}' beside another: no steered screenshot", file=sys.stderr)
        return False
    readings.nth(chosen).click()
    page.click("#rewrite")
    return True


def main(argv: list[str] | None = None) -> int:
    # A command's main reads top to bottom: its arguments, its set-up, its loop and its report.
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--chromium", default=headless.CHROMIUM)
    parser.add_argument("--only", default=",".join(SHOTS), help="comma-separated shots to take (default: all)")
    args = parser.parse_args(argv)
    shots = set(filter(None, args.only.split(",")))
    if shots - set(SHOTS):
        parser.error(f"unknown shots {sorted(shots - set(SHOTS))}; choose from {', '.join(SHOTS)}")

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
        with headless.launch(args.chromium) as browser:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("#question textarea")

            if "toc" in shots:
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

            if "steer" in shots:
                choose(page, "method", "Tree of Clarifications")
                _ask(page, STEER_QUESTION)
                page.wait_for_selector("#reasoning .rv-done", timeout=900_000)
                if _leave_out(page, STEER_OUT):
                    page.wait_for_selector("#reasoning .kind-edit", timeout=600_000)
                    # The choices are offered afresh, none ticked, once the rewritten answer is done.
                    page.wait_for_function("document.querySelector('#reasoning .rv-done') && "
                                           "!document.querySelector('#steer input:checked')", timeout=600_000)
                    _settle(page)
                    page.screenshot(path=args.out / "toc-steered.png", full_page=True,
                                    clip={"x": 0, "y": 0, "width": 1500, "height": 1350})
                    written.append("toc-steered.png")

            if "ircot" in shots:
                choose(page, "method", "IRCoT")
                _ask(page, IRCOT_QUESTION)
                page.wait_for_selector("#reasoning .rv-done", timeout=900_000)
                _settle(page)
                page.screenshot(path=args.out / "ircot-chain.png")
                written.append("ircot-chain.png")

            if "kgp-table" in shots:
                _upload_report(page)
                choose(page, "method", "Knowledge Graph Prompting")
                _ask(page, TABLE_QUESTION)
                page.wait_for_selector("#reasoning .rv-done", timeout=900_000)
                page.locator("#picture .rp-node[data-kind=visit]").first.click()  # opens the table's card
                _settle(page)
                page.screenshot(path=args.out / "kgp-table.png")
                written.append("kgp-table.png")

            if "compare" in shots:
                page.check("#compare-toggle input")
                page.wait_for_selector("#compare-methods")
                _ask(page, COMPARE_QUESTION)
                page.wait_for_selector("#compare .rp-compare[data-state=done]", timeout=1_800_000)
                _settle(page)
                page.locator("#compare").screenshot(path=args.out / "compare.png")
                written.append("compare.png")
    finally:
        app.close()
        runtime.close()
    for name in written:
        print(args.out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
