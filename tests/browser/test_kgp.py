"""Knowledge Graph Prompting in a real headless Chromium, with the scripted fake model: the walk is drawn as a
graph that grows as its events arrive (seeds, the evidence asked for, visits with the type of the edge taken), a
click on a visited node opens its passage, and a question about a table of an uploaded PDF is answered from the
table's node and cites it."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import NOTES
from tests.browser.test_app import ask, last_answer, open_app, upload, wait_done
from tests.browser.test_picture import COUNT_NODES
from tests.fakes import ScriptedLLM
from tests.test_kgp import make_report_pdf

KGP = "Knowledge Graph Prompting"
# More passages than the walk's 10 seeds, so that seeds are expanded through the graph.
CYCLING = NOTES + [
    ("Tour de France", f"The {year} Tour de France was won by {winner}.")
    for year, winner in [(2021, "Tadej Pogacar"), (2020, "Tadej Pogacar"), (2019, "Egan Bernal"),
                         (2018, "Geraint Thomas"), (2017, "Chris Froome"), (2016, "Chris Froome")]
] + [("Giro d'Italia", f"The {year} Giro d'Italia was won by {winner}.")
     for year, winner in [(2024, "Tadej Pogacar"), (2023, "Primoz Roglic"), (2022, "Jai Hindley")]]


def kgp_model(evidence: str, answer: str, delay: float = 0.0) -> ScriptedLLM:
    """Next-evidence calls get ``evidence``, the reader gets ``answer``."""
    def reply(messages, options):
        return evidence if messages[0]["content"].startswith("You plan") else answer
    return ScriptedLLM(reply, delay=delay)


def test_the_walk_grows_as_a_graph_and_a_visited_node_opens_its_passage(page, serve):
    open_app(page, serve(kgp_model("Who won the 2023 Tour de France?",
                                   "Jonas Vingegaard won the 2023 Tour de France [1].", delay=0.05),
                         notes=CYCLING))
    page.wait_for_selector("#picture")
    page.evaluate(COUNT_NODES)
    ask(page, "Who won the Tour de France the year before Pogacar's third win?", method=KGP)
    page.wait_for_selector("#picture .rp-node[data-kind=visit]")
    wait_done(page)
    page.wait_for_selector("#picture .rp[data-state=done]")
    counts = page.evaluate("window.__counts")
    kinds = page.eval_on_selector_all("#picture .rp-node", "els => els.map(e => e.getAttribute('data-kind'))")
    assert counts == sorted(counts) and len([c for c in counts if c]) >= 4, (counts, kinds)  # grew step by step
    assert {"walk", "visit", "evidence", "answer"} <= set(kinds), kinds
    labels = page.eval_on_selector_all("#picture .rp-edge-label", "els => els.map(e => e.textContent)")
    assert "seed" in labels and {"knn", "keyword", "sequence"} & set(labels), labels  # typed edges, labelled
    visits = page.locator("#picture .rp-node[data-kind=visit]")
    listed = page.eval_on_selector_all("#reasoning [data-step]", "els => els.map(e => e.getAttribute('data-step'))")
    drawn = [v.get_attribute("data-node") for v in visits.all()]
    assert len(drawn) >= 10 and set(drawn) <= set(listed)  # each visit drawn is a step in the list
    node = visits.last
    node.click()
    card = page.locator(f"#reasoning [data-step='{node.get_attribute('data-node')}'] > .rv-card")
    expect(card.locator("> details").first).to_have_attribute("open", "")
    expect(card).to_be_in_viewport()
    shown = card.inner_text()
    assert "depth 1" in shown and any(text in shown for _, text in CYCLING)  # the passage reached, in full
    assert "Jonas Vingegaard" in last_answer(page).inner_text()


def test_a_table_question_about_an_uploaded_pdf_is_answered_from_the_table(page, serve, tmp_path):
    path = tmp_path / "report.pdf"
    make_report_pdf(path)
    model = kgp_model("unused", "Rainfall was 710 mm in 2022 and 640 mm in 2021 [1].")
    open_app(page, serve(model))
    page.click("button[role=tab]:has-text('Collections')")
    upload(page, "notes", path)
    page.click("button[role=tab]:has-text('Ask')")
    ask(page, "What is in table 2 of report.pdf?", method=KGP)
    wait_done(page)
    table = page.locator("#picture .rp-node[data-kind=visit]")
    expect(table).to_have_count(1)
    assert "Table 2 of report.pdf" in table.text_content()
    assert "report.pdf, p. 3, table 2" in last_answer(page).inner_text()  # cited as the table
    reading = page.inner_text("#reasoning")
    assert "Structure question: table 2 of report.pdf" in reading and "710 mm" in reading
    assert len(model.calls) == 1  # the reader only: no walk for a structure question
