"""The run's picture in a real headless Chromium, with the scripted fake model: it grows with a Tree of
Clarifications and matches the tree at the end, draws pruned nodes as pruned, opens a step's card on a click or
Enter (and keeps it open and the zoom while the run goes on), lays out 60+ steps within the page without
overlapping labels, compares two methods side by side, exports an SVG that holds every step, and asks an
example question on a click."""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET

from playwright.sync_api import expect

from pipeline.events import write_jsonl
from tests.browser.test_app import AQ, Q19, Q23, Q24, ask, open_app, wait_done
from tests.fakes import TreeScript
from tests.test_picture import big_tree

COUNT_NODES = """() => {
  window.__counts = [];
  const area = document.querySelector('#picture');
  const record = () => {
    const n = area.querySelectorAll('.rp-node').length;
    if (window.__counts[window.__counts.length - 1] !== n) window.__counts.push(n);
  };
  new MutationObserver(record).observe(area, {childList: true, subtree: true});
}"""


def tree_script(delay: float = 0.05) -> TreeScript:
    # The default clarification reads one passage per call; each passage read gives the next reading.
    return TreeScript({AQ: [(Q24, "Tadej Pogacar"), (Q23, "Jonas Vingegaard"), (Q19, "Firmin Lambot")]},
                      p_true={"Firmin Lambot": 0.0}, delay=delay)


def step_ids(page, selector: str, attribute: str) -> list[str]:
    return page.eval_on_selector_all(selector, f"els => els.map(e => e.getAttribute('{attribute}'))")


def test_the_picture_grows_with_the_tree_and_matches_it_at_the_end(page, serve):
    open_app(page, serve(tree_script().llm))
    page.wait_for_selector("#picture")
    page.evaluate(COUNT_NODES)
    ask(page, AQ, method="Tree of Clarifications")
    page.wait_for_selector("#picture .rp-node")
    assert page.query_selector("#reasoning .rv-done") is None  # drawn while the run goes on
    wait_done(page)
    page.wait_for_selector("#picture .rp[data-state=done]")
    counts = page.evaluate("window.__counts")
    assert counts == sorted(counts) and len([c for c in counts if c]) >= 4, counts  # grew step by step
    drawn, listed = step_ids(page, "#picture .rp-node", "data-node"), step_ids(page, "#reasoning [data-step]", "data-step")
    assert sorted(drawn) == sorted(listed) and len(drawn) == counts[-1]
    # Pruned as pruned: the same nodes as the list, a dashed octagon with its icon, the reason on hover.
    pruned = page.locator("#picture .rp-node.rp-v-pruned")
    assert pruned.count() == page.locator("#reasoning .state-pruned").count() == 1
    assert step_ids(page, "#picture .rp-v-pruned", "data-node") == step_ids(page, "#reasoning .state-pruned",
                                                                            "data-step")
    outline = pruned.locator("polygon").first
    assert len(outline.get_attribute("points").split()) == 8 and outline.get_attribute("stroke-dasharray")
    assert pruned.locator("text").text_content().startswith("✗ Who won the 1919")
    assert "answer appears in no retrieved passage" in pruned.locator("title").text_content()
    assert page.locator("#picture .rp-node.rp-v-kept").count() == page.locator("#reasoning .state-kept").count() == 2
    assert page.locator("#picture .rp-node.rp-st-running").count() == 0


def test_a_click_or_enter_opens_the_card_which_stays_open_with_the_zoom_while_the_run_grows(page, serve):
    open_app(page, serve(tree_script(delay=0.08).llm))
    ask(page, AQ, method="Tree of Clarifications")
    retrieval = page.locator("#picture .rp-node[data-kind=retrieve].rp-st-done")
    retrieval.wait_for()
    step = retrieval.get_attribute("data-node")
    retrieval.click()
    card = page.locator(f"#reasoning [data-step='{step}'] > .rv-card")
    expect(card.locator("> details").first).to_have_attribute("open", "")
    expect(card).to_be_in_viewport()
    page.locator("#picture .rp-btn[data-zoom=in]").click()
    zoomed = page.locator("#picture .rp-svg").evaluate("svg => svg.getBoundingClientRect().width")
    assert page.query_selector("#reasoning .rv-done") is None  # all this while the run goes on
    wait_done(page)
    page.wait_for_timeout(300)
    assert card.locator("> details").first.evaluate("d => d.open")  # kept open through every update
    assert page.locator("#picture .rp.rp-zoomed").count() == 1
    width = page.locator("#picture .rp-svg").evaluate("svg => svg.getBoundingClientRect().width")
    natural = page.locator("#picture .rp-svg").evaluate("svg => parseFloat(svg.style.getPropertyValue('--rp-w'))")
    assert width > zoomed * 0.99 and abs(width - natural * 1.0) < 2 or width > natural  # still zoomed in
    page.locator("#picture .rp-btn[data-zoom=fit]").click()
    assert page.locator("#picture .rp.rp-zoomed").count() == 0
    # The keyboard: Tab to a node, Enter opens its card.
    answer = page.locator("#picture .rp-node[data-kind=answer]")
    answer.focus()
    page.keyboard.press("Enter")
    answer_card = page.locator(f"#reasoning [data-step='{answer.get_attribute('data-node')}'] > .rv-card")
    expect(answer_card.locator("> details").first).to_have_attribute("open", "")
    expect(answer_card).to_be_in_viewport()


def test_a_sixty_step_tree_fits_the_page_width_and_its_labels_do_not_overlap(page, serve, tmp_path):
    state = big_tree()
    trace = tmp_path / "big.jsonl"
    write_jsonl(state.events, trace)
    open_app(page, serve(tree_script().llm))
    with page.expect_file_chooser() as chooser:
        page.click("#replay")
    chooser.value.set_files(str(trace))
    page.wait_for_selector("#reasoning:has-text('Replayed from a trace file')")
    assert page.locator("#picture .rp-node").count() == len(state.steps) >= 60
    viewport = page.viewport_size["width"]
    boxes = page.eval_on_selector_all("#picture .rp-node", """els => els.map(e => {
        const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })""")
    labels = page.eval_on_selector_all("#picture .rp-node text, #picture .rp-edge-label", """els => els.map(e => {
        const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })""")
    assert all(0 <= left and right <= viewport for left, _, right, _ in boxes)
    for group in (boxes, labels):
        clashes = [(a, b) for a, b in itertools.combinations(group, 2)
                   if a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5]
        assert not clashes, clashes[:3]
    # Every label stays inside its own box.
    inside = page.eval_on_selector_all("#picture .rp-node", """els => els.every(g => {
        const box = g.children[1].getBoundingClientRect(), text = g.querySelector('text');
        if (!text) return true;
        const r = text.getBoundingClientRect();
        return r.left >= box.left && r.right <= box.right + 0.5 && r.top >= box.top && r.bottom <= box.bottom + 0.5;
    })""")
    assert inside
    scale = page.locator("#picture .rp-svg").evaluate(
        "svg => svg.getBoundingClientRect().width / parseFloat(svg.style.getPropertyValue('--rp-w'))")
    assert scale > 0.7  # shrunk to the column's width, still legible; the zoom buttons enlarge it


def test_compare_runs_two_methods_on_one_question_and_shows_both_answers(page, serve):
    script = tree_script(delay=0.01)
    open_app(page, serve(script.llm))
    page.check("#compare-toggle input")
    page.wait_for_selector("#compare-methods")
    assert page.locator("#compare-methods input:checked").count() == 2  # OneR and ToC by default
    page.fill("#question textarea", AQ)
    page.click("#ask")
    page.wait_for_selector("#compare .rp-compare[data-state=done]", timeout=60_000)
    columns = page.locator("#compare .rp-col")
    assert columns.count() == 2
    assert [c.get_attribute("data-method") for c in columns.all()] == ["oner", "toc"]
    for column in columns.all():
        assert "Tadej Pogacar" in column.locator(".rp-col-answer").inner_text()
        assert column.locator("svg .rp-node").count() >= 2
    assert page.locator("#chat .user-row").count() == 1  # one question...
    answers = page.inner_text("#chat")  # ...two answers, each under its method's name, in the order they ran
    assert answers.count("Tadej Pogacar") == 2
    assert answers.index("OneR") < answers.index("Tree of Clarifications") < answers.rindex("Tadej Pogacar")
    assert page.locator("#reasoning .rv-run").count() == 2  # both runs' steps, each card findable
    node = page.locator("#compare .rp-col[data-method=oner] .rp-node[data-kind=retrieve]")
    node.click()
    run = page.locator("#compare .rp-col[data-method=oner]").get_attribute("data-run")
    card = page.locator(f"#reasoning .rv-run[data-run='{run}'] [data-step='{node.get_attribute('data-node')}']")
    expect(card.locator("> .rv-card > details").first).to_have_attribute("open", "")
    files = page.locator("#trace-files tr")
    expect(files).to_have_count(6)  # JSONL, report and picture of each run


def test_the_exported_picture_opens_and_holds_every_step(page, serve, tmp_path):
    open_app(page, serve(tree_script(delay=0.0).llm))
    ask(page, AQ, method="Tree of Clarifications")
    wait_done(page)
    downloads = {}
    for suffix in (".svg", ".jsonl"):
        with page.expect_download() as download:
            page.locator(f"#trace-files tr:has-text('{suffix}') a").first.click()
        downloads[suffix] = tmp_path / f"trace{suffix}"
        download.value.save_as(downloads[suffix])
    steps = {json.loads(line)["id"] for line in downloads[".jsonl"].read_text().splitlines()
             if json.loads(line)["kind"] not in ("route", "answer_token", "verify", "prune", "warning", "error")}
    root = ET.parse(downloads[".svg"]).getroot()
    assert {g.get("data-node") for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("data-node")} == steps
    page.goto(downloads[".svg"].as_uri())
    assert page.locator(".rp-node").count() == len(steps)
    assert page.locator("svg").evaluate("svg => svg.getBoundingClientRect().width") > 300  # it renders


def test_an_example_question_is_asked_with_its_method_on_a_click(page, serve):
    script = tree_script(delay=0.0)
    open_app(page, serve(script.llm))
    first = page.locator("#examples tbody tr").first
    expect(first.locator("td").first).to_have_text(re.compile(r"\w"), timeout=15_000)  # drawn before its text
    question = first.locator("td").first.inner_text().strip()
    first.click()
    page.wait_for_selector(f"#chat .user-row:has-text({json.dumps(question[:30])})")
    wait_done(page)
    assert "Tree of Clarifications" in page.locator("#method input").input_value()
    assert script.clarified and script.clarified[0] == question  # run as a tree from the example's question
    assert page.locator("#picture .rp-node").count() >= 3
