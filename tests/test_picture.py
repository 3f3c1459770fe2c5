"""The run's picture from folded states of every method (no browser): every step drawn once, the tree, chain,
graph and timeline layouts, the looks of kept, pruned and restored nodes, typed links, unknown kinds, escaping,
no overlapping boxes or labels at 60+ steps, the drawing cost, the SVG export beside the trace, and the
comparison of several methods in the run service."""

from __future__ import annotations

import itertools
import statistics
import threading
import time
import xml.etree.ElementTree as ET

import pytest
from langchain_core.documents import Document

from pipeline.context import RunContext
from pipeline.events import Link, Status, Tracer
from pipeline.fold import RunState
from pipeline.payloads import (ActionPayload, AnswerPayload, EvidencePayload, ExpandPayload, HopPayload,
                               NodePayload, PassageRef, QAPair, RetrievePayload, RoutePayload, VisitPayload,
                               TreeExtras, WalkPayload, WarningPayload)
from pipeline.picture import draw, layout, mode_of
from pipeline.picture import styles as picture_styles
from pipeline.picture.layout import FONT, PAD_X, SAT_FONT, SAT_W
from pipeline.picture.text import clean, shorten, text_width, wrap
from pipeline.retrieval import HybridRetriever
from pipeline.service import Conversation, RunRequest, RunService
from pipeline.trace import load_trace, save_trace
from tests.fakes import ScriptedLLM, ScriptedRetriever, TreeScript, run_events, settings_with
from ui.picture import Column, compare_html, picture_html, reasoning_html

SVG = "{http://www.w3.org/2000/svg}"
AQ = "Who won the Tour de France?"
Q24, Q23 = "Who won the 2024 Tour de France?", "Who won the 2023 Tour de France?"
FACTS = ["Tadej Pogacar won the 2024 Tour de France, his third overall victory.",
         "Jonas Vingegaard won the 2023 Tour de France ahead of Tadej Pogacar.",
         "Egan Bernal won the 2019 Tour de France, the first Colombian winner."]
EVIL = "<script>alert(1)</script> & \u202eFDP.exe \x0c\x00 \ud800"


# States of every method, folded from their events.

@pytest.fixture(scope="module")
def retriever(tmp_path_factory, embeddings):
    from corpora.store import CollectionStore

    collection = CollectionStore(tmp_path_factory.mktemp("data"), embeddings).create("cycling")
    collection.add([Document(page_content=t, metadata={"title": "Tour de France", "source": "tour.txt"},
                             id=f"t{i}") for i, t in enumerate(FACTS)])
    return HybridRetriever([collection])


def closed(events) -> RunState:
    state = RunState.of(events)
    state.close()
    return state


def toc_state(retriever, embeddings) -> RunState:
    """A tree with kept, pruned (no evidence, verification) and restored nodes."""
    script = TreeScript({AQ: [(Q24, "Tadej Pogacar"), (Q23, "Jonas Vingegaard"),
                              ("Who won the 1903 Tour de France?", "Maurice Garin")],
                         Q24: [("Who won the 2019 Tour de France?", "Egan Bernal")]},
                        p_true={"Jonas Vingegaard": 0.01, "Egan Bernal": 0.01})
    ctx = RunContext(llm=script.llm, retriever=retriever, embeddings=embeddings,
                     settings=settings_with(toc={"min_valid_nodes": 2}))
    return closed(run_events("toc", AQ, ctx))


def ircot_state() -> RunState:
    counter = itertools.count(1)
    retriever = ScriptedRetriever(lambda query, k: [Document(page_content=f"Fact {n}.", metadata={"title": f"Doc {n}"},
                                                             id=f"p{n}") for n in [next(counter) for _ in range(k)]])
    sentences = iter(["The Hobbit was written by J. R. R. Tolkien [1].", "Tolkien was born in Bloemfontein [5].",
                      "So the answer is: Bloemfontein."])

    def reply(messages, options):
        return next(sentences) if messages[0]["content"].startswith("You answer questions that need facts") \
            else "Bloemfontein [5]."
    ctx = RunContext(llm=ScriptedLLM(reply), retriever=retriever,  # the sentence chain (hops: test_hops.py)
                     settings=settings_with(answer_style="short", ircot={"mode": "sentences"}))
    return closed(run_events("ircot", "Where was the author of The Hobbit born?", ctx))


def baseline_state(method: str, retriever) -> RunState:
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: "Tadej Pogacar won in 2024 [1]."),
                     retriever=retriever)
    return closed(run_events(method, Q24, ctx))


def kgp_state() -> RunState:
    """A graph walk as Knowledge Graph Prompting reports it: seeds, neighbours reached by typed edges, the
    evidence asked for, and the answer linked to the visits it read."""
    tracer = Tracer("kgp", "kgp1")
    events = [tracer.event(RoutePayload(method="kgp", label="Knowledge Graph Prompting", structure="graph",
                                        question="Which city hosts the festival?"), "KGP"),
              tracer.event(WalkPayload(question="Which city hosts the festival?"), "Walk over notes", id="w1")]
    for seed in (1, 2):
        events.append(tracer.event(VisitPayload(node=f"d{seed}", seed=True, passage=PassageRef(title=f"Seed {seed}")),
                                   f"Seed {seed}: Festival page {seed}", id=f"v{seed}", parent_id="w1",
                                   links=[Link(target="w1", type="seed")]))
        events.append(tracer.event(EvidencePayload(text="the festival's town"), "Next evidence: the town",
                                   id=f"e{seed}", parent_id=f"v{seed}", links=[Link(target=f"v{seed}", type="evidence")]))
        for n, edge in ((1, "knn"), (2, "keyword")):
            events.append(tracer.event(VisitPayload(node=f"d{seed}{n}", edge=edge), f"{edge} → Town page {seed}.{n}",
                                       id=f"v{seed}{n}", parent_id=f"v{seed}",
                                       links=[Link(target=f"v{seed}", type=edge)]))
    events.append(tracer.event(AnswerPayload(answer="Lindenfeld [1].", citations=[1]), "Answer", id="a1",
                               parent_id="w1", links=[Link(target="v11", type="read"), Link(target="v21", type="read")]))
    return closed(events)


def webagent_state() -> RunState:
    """A browsing agent's timeline: each action the child of the one before, a merge linked to the quotes."""
    tracer = Tracer("webagent", "web1")
    events = [tracer.event(RoutePayload(method="webagent", label="Web agent", structure="timeline",
                                        question="Who founded the festival?"), "Web agent")]
    parent = None
    for number, (action, title) in enumerate([("start", "Browse the notes"), ("search", "Search: festival founder"),
                                              ("load", "Load [1]: Festival"), ("quote", "Quote: founded by Ada"),
                                              ("quote", "Quote: in 1901"), ("merge", "Merge facts 1 and 2"),
                                              ("finish", "Finish")], 1):
        links = [Link(target="s4", type="merge"), Link(target="s5", type="merge")] if action == "merge" else []
        events.append(tracer.event(ActionPayload(action=action, step=number), title, id=f"s{number}",
                                   parent_id=parent, links=links))
        parent = f"s{number}"
    events.append(tracer.event(AnswerPayload(answer="Ada founded it in 1901 [1]."), "Answer", id="a1",
                               parent_id=parent))
    return closed(events)


@pytest.fixture(scope="module")
def every_method(retriever, embeddings):
    return {"toc": toc_state(retriever, embeddings), "ircot": ircot_state(), "oner": baseline_state("oner", retriever),
            "nor": baseline_state("nor", retriever), "kgp": kgp_state(), "webagent": webagent_state()}


def parsed(state: RunState) -> ET.Element:
    return ET.fromstring(draw(state, standalone=True))


def nodes_of(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-node"): g for g in root.iter(f"{SVG}g") if "rp-node" in (g.get("class") or "").split()}


# Every method.

def test_every_step_of_every_method_is_drawn_once_and_its_label_fits_its_box(every_method):
    for method, state in every_method.items():
        root = parsed(state)
        drawn = nodes_of(root)
        assert set(drawn) == set(state.steps), method
        assert len([g for g in root.iter(f"{SVG}g") if g.get("data-node")]) == len(state.steps), method
        plan = layout(state)
        for box in plan.boxes.values():
            assert all(text_width(line, FONT) <= box.w - 2 * PAD_X for line in box.lines), (method, box.lines)
            assert all(text_width(s.text, SAT_FONT) <= SAT_W - 16 for s in box.satellites)
        assert root.find(f"{SVG}g[@class='rp-legend']") is not None, method
    assert {m: mode_of(s) for m, s in every_method.items()} == {
        "toc": "tree", "ircot": "flow", "oner": "tree", "nor": "tree", "kgp": "tree", "webagent": "flow"}


def test_kept_pruned_and_restored_nodes_differ_in_shape_colour_and_icon(every_method):
    state = every_method["toc"]
    drawn = nodes_of(parsed(state))
    looks = {}
    for step in state.steps.values():
        if isinstance(step.payload, NodePayload) and step.payload.state in ("kept", "pruned", "restored"):
            group = drawn[step.id]
            outline = list(group)[1]  # after the tooltip
            looks.setdefault(step.payload.state, set()).add(
                ((outline.tag, outline.get("rx"), len((outline.get("points") or "").split())),
                 outline.get("stroke"), outline.get("stroke-dasharray"),
                 "".join(group.find(f"{SVG}text").itertext())[:1]))
            assert f"rp-v-{step.payload.state}" in group.get("class")
    assert set(looks) == {"kept", "pruned", "restored"}
    kept, pruned, restored = (looks[k].pop() for k in ("kept", "pruned", "restored"))
    assert len({kept[0], pruned[0], restored[0]}) == 3  # three shapes: rounded box, octagon, hexagon
    assert len({kept[1], pruned[1], restored[1]}) == 3  # three colours
    assert (kept[3], pruned[3], restored[3]) == ("✓", "✗", "↺") and pruned[2]  # icons; pruned is dashed
    # The pruning reason is on hover (the step's tooltip).
    for step in state.steps.values():
        if isinstance(step.payload, NodePayload) and step.payload.state == "pruned":
            assert step.payload.reason and step.payload.reason in drawn[step.id].find(f"{SVG}title").text


def test_a_tree_grows_to_the_right_and_its_clarification_calls_are_dots_between_columns(every_method):
    state = every_method["toc"]
    plan = layout(state)
    root = next(b for b in plan.boxes.values() if getattr(b.step.payload, "state", "") == "root")
    first_level = [b for b in plan.boxes.values() if isinstance(b.step.payload, NodePayload)
                   and b.step.payload.depth == 1]
    assert root.col == 0 and {b.col for b in first_level} == {1}
    dots = [b for b in plan.boxes.values() if isinstance(b.step.payload, ExpandPayload)]
    assert dots and all(b.inline and root.x + root.w < b.x < min(c.x for c in first_level) for b in dots[:1])
    centre = lambda b: b.y + b.h / 2  # noqa: E731
    children = [b for b in first_level if b.step.parent_id == dots[0].id]
    assert min(map(centre, children)) <= centre(dots[0]) <= max(map(centre, children))


def test_a_chain_runs_down_one_column_with_the_passages_each_step_brought_in(every_method):
    state = every_method["ircot"]
    plan = layout(state)
    hops = [b for b in plan.boxes.values() if isinstance(b.step.payload, HopPayload)]
    assert len(hops) == 3 and len({b.x for b in plan.boxes.values()}) == 1  # one column, top to bottom
    assert [b.y for b in hops] == sorted(b.y for b in hops)
    for hop in hops:
        assert [s.passage.number for s in hop.satellites] == [p.number for p in hop.step.payload.passages]
    svg = draw(state)
    assert "1. The Hobbit was written by J. R. R. Tolkien [1]." in svg.replace("\u2026", "")
    assert svg.count('class="rp-sat"') == sum(len(b.satellites) for b in plan.boxes.values())


def test_a_graph_walk_labels_its_typed_edges_and_links(every_method):
    state = every_method["kgp"]
    svg = draw(state, standalone=True)
    root = ET.fromstring(svg)
    labels = ["".join(t.itertext()) for t in root.iter(f"{SVG}text") if t.get("class") == "rp-edge-label"]
    assert labels.count("knn") == 2 and labels.count("keyword") == 2 and labels.count("seed") == 2
    assert labels.count("read") == 2  # the answer's links to the visits it read
    legend = "".join(root.find(f"{SVG}g[@class='rp-legend']").itertext())
    for name in ("seed passage", "visited passage", "evidence asked for", "link: knn", "link: read"):
        assert name in legend
    assert len(root.findall(f".//{SVG}g[@class='rp-link']")) == 2
    assert len(root.findall(f".//{SVG}g[@class='rp-edges']/{SVG}path")) == len(state.steps) - 1


def test_an_agent_draws_as_a_timeline_with_its_merges(every_method):
    state = every_method["webagent"]
    plan = layout(state)
    ordered = sorted(plan.boxes.values(), key=lambda b: b.y)
    assert [b.id for b in ordered] == list(state.steps) and len({b.x for b in ordered}) == 1
    root = parsed(state)
    # The merge's link to the step before it types that parent edge; its link to the earlier quote is an arc.
    assert [g.get("data-link") for g in root.iter(f"{SVG}g") if g.get("class") == "rp-link"] == ["merge"]
    labels = ["".join(t.itertext()) for t in root.iter(f"{SVG}text") if t.get("class") == "rp-edge-label"]
    assert labels == ["merge", "merge"]
    legend = "".join(root.find(f"{SVG}g[@class='rp-legend']").itertext())
    assert all(name in legend for name in ("search", "page view", "quote", "merge", "finish"))


def test_a_kind_the_table_does_not_know_draws_with_its_title(every_method, monkeypatch):
    monkeypatch.delitem(picture_styles.KINDS, "hop")
    state = every_method["ircot"]
    root = parsed(state)
    for step in state.steps.values():
        if step.kind.value == "hop":
            group = nodes_of(root)[step.id]
            assert "".join(group.find(f"{SVG}text").itertext()).startswith(step.title[:12])
    assert "hop" in "".join(root.find(f"{SVG}g[@class='rp-legend']").itertext())


# Safety and scale.

def test_text_from_documents_the_model_or_a_trace_is_escaped_and_the_svg_stays_valid_xml():
    tracer = Tracer("oner", 'r" onload="x')
    passage = PassageRef(number=1, id="p1", title=EVIL, text=EVIL)
    events = [tracer.event(RetrievePayload(query=EVIL, passages=[passage]), EVIL, id='r"1<'),
              tracer.event(WarningPayload(message=EVIL), EVIL, parent_id='r"1<'),
              tracer.event(WarningPayload(message=EVIL), EVIL),
              tracer.event(AnswerPayload(answer=EVIL, passages=[passage]), EVIL, id="a1", parent_id='r"1<')]
    state = closed(events)
    for standalone in (True, False):
        svg = draw(state, standalone=standalone)
        assert "<script" not in svg and "\u202e" not in svg and "\x0c" not in svg and "\x00" not in svg
        ET.fromstring(svg if standalone else svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))
    html = picture_html(state, 'x"><img src=x>') + reasoning_html(state, 'x"><img>')
    assert "<img" not in html and 'data-run="x&quot;&gt;&lt;img src=x&gt;"' in html
    assert "&lt;script&gt;" in compare_html(EVIL, [Column("oner", EVIL, state, "r1")])


def big_tree(long: str = "Which of the many cyclists named in these passages won the stage to Col du Tourmalet "
                         "in the year written here: ") -> RunState:
    """A tree of 64 steps with long labels: a root, its retrieval, three levels of clarifications."""
    tracer = Tracer("toc", "big")
    events = [tracer.event(RoutePayload(method="toc", label="Tree of Clarifications", structure="tree",
                                        question=long), "ToC"),
              tracer.event(NodePayload(question=long, state="root"), long, id="n0"),
              tracer.event(RetrievePayload(query=long, passages=[PassageRef(number=1, title="T")]), "Retrieve",
                           id="r", parent_id="n0")]
    frontier, count = ["n0"], 0
    for depth in (1, 2, 3):
        nxt = []
        for parent in frontier:
            expansion = f"e{parent}"
            events.append(tracer.event(ExpandPayload(query=long), f"Clarify: {long}", id=expansion, parent_id=parent))
            for i in range(4):
                count += 1
                node = f"n{count}"
                state = ("kept", "pruned", "restored", "kept")[i % 4]
                events.append(tracer.event(NodePayload(question=f"{long} {1900 + count} — “Ŵörld” 世界?",
                                                       answer=f"Rider number {count} Ŵ" * 3, depth=depth, state=state,
                                                       reason="duplicate of an earlier one" if state == "pruned" else ""),
                                           long, id=node, parent_id=expansion))
                if state != "pruned" and len(nxt) < 8:
                    nxt.append(node)
        frontier = nxt
    events.append(tracer.event(AnswerPayload(answer=long * 3, extras=TreeExtras(unambiguous=False, interpretations=[QAPair(question="q", answer="a")])),
                               "Answer", id="a", parent_id="n0"))
    return closed(events)


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_sixty_steps_with_long_labels_never_overlap_and_grow_downwards():
    state = big_tree()
    assert len(state.steps) >= 60
    plan = layout(state)
    rects = [(b.x, b.y, b.x + b.w, b.bottom) for b in plan.boxes.values()]
    rects += [(s.x, s.y, s.x + SAT_W, s.y + 20) for b in plan.boxes.values() for s in b.satellites]
    assert not [(a, b) for a, b in itertools.combinations(rects, 2) if overlap(a, b)]
    assert plan.width <= 4 * 164 + 3 * 40  # four columns: depth goes right, breadth goes down
    for box in plan.boxes.values():
        assert len(box.lines) <= 3 and all(text_width(line, FONT) <= box.w - 2 * PAD_X for line in box.lines)


def test_drawing_sixty_steps_takes_well_under_the_hundred_millisecond_budget():
    state = big_tree()
    draw(state)
    timings = []
    for _ in range(7):
        started = time.perf_counter()
        draw(state)
        timings.append(time.perf_counter() - started)
    assert statistics.median(timings) < 0.05, timings  # measured here: a few milliseconds


def test_a_growing_run_keeps_every_step_in_its_column_and_earlier_leaves_in_place(every_method):
    state = every_method["toc"]
    partial, columns, leaves = RunState(), {}, {}
    for event in state.events:
        partial.add(event)
        plan = layout(partial)
        for box in plan.boxes.values():
            assert columns.setdefault(box.id, box.col) == box.col
        retrieval = next((b for b in plan.boxes.values() if b.step.kind.value == "retrieve"), None)
        if retrieval is not None:  # the first child of the root: nothing is ever placed above it
            assert leaves.setdefault("first", (retrieval.x, retrieval.y)) == (retrieval.x, retrieval.y)


def test_wrapping_and_shortening_fit_the_width():
    text = "Who won the 2024 Tour de France general classification and the mountains jersey?"
    lines = wrap(text, 150, 12, 2)
    assert len(lines) == 2 and lines[-1].endswith("…") and all(text_width(x, 12) <= 150 for x in lines)
    assert wrap("short", 150, 12, 3) == ["short"]
    assert all(text_width(x, 12) <= 60 for x in wrap("Supercalifragilisticexpialidocious", 60, 12, 3))
    assert shorten("x" * 100, 50, 12).endswith("…") and text_width(shorten("W" * 40, 50, 12), 12) <= 50
    assert clean("a\u202eb\x00c\n d") == "abc d"


# Export and replay.

def test_the_picture_is_saved_beside_the_trace_shown_in_the_report_and_redrawn_on_replay(tmp_path, every_method):
    state = every_method["ircot"]
    jsonl, report, svg = save_trace(state, tmp_path, picture=True)
    assert svg.name == jsonl.stem + ".svg" and svg.parent == jsonl.parent
    assert f"]({svg.name})" in report.read_text()
    root = ET.parse(svg).getroot()
    assert set(nodes_of(root)) == set(state.steps)
    assert draw(load_trace(jsonl), standalone=True) == svg.read_text()
    assert len(save_trace(state, tmp_path / "plain")) == 2  # without the picture, as before


def test_a_drawing_failure_costs_the_trace_nothing(tmp_path, every_method, monkeypatch):
    import pipeline.picture

    def broken(state, standalone=False):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(pipeline.picture, "draw", broken)
    files = save_trace(every_method["oner"], tmp_path, picture=True)
    assert [f.suffix for f in files] == [".jsonl", ".md"] and "](" not in files[1].read_text()


# The comparison in the run service.

def service_for(retriever, llm) -> RunService:
    return RunService(lambda request, web, cancel: RunContext(llm=llm, retriever=retriever,
                                                              settings=request.settings))


def test_a_comparison_runs_each_method_in_turn_on_one_question(retriever, tmp_path):
    llm = ScriptedLLM(lambda messages, options: "Tadej Pogacar [1].")
    conversation = Conversation(asked=["Who won the 2024 Tour de France?"])
    comparison = service_for(retriever, llm).compare(RunRequest(question="And who came second?"),
                                                     ["oner", "nor", "oner"], conversation=conversation,
                                                     trace_dir=tmp_path)
    order = [(run.request.method, event.kind.value) for run, event in comparison]
    assert [m for m, _ in itertools.groupby(m for m, _ in order)] == ["oner", "nor"]  # in turn, once each
    assert [r.state.route.method for r in comparison.runs] == ["oner", "nor"]
    joined = "Who won the 2024 Tour de France? And who came second?"
    assert [r.state.question for r in comparison.runs] == [joined, joined]  # the follow-up resolved alike
    assert conversation.asked == ["Who won the 2024 Tour de France?", joined]  # and recorded once
    assert all(r.state.answer_text for r in comparison.runs)
    assert sorted(p.suffix for p in comparison.trace_files) == [".jsonl", ".jsonl", ".md", ".md", ".svg", ".svg"]


def test_stop_ends_the_running_method_and_starts_no_other(retriever):
    cancel = threading.Event()

    def reply(messages, options):
        cancel.set()  # Stop pressed while the first method answers
        return "one two three four"
    comparison = service_for(retriever, ScriptedLLM(reply)).compare(RunRequest(question=Q24), ["oner", "nor"],
                                                                    cancel=cancel)
    list(comparison)
    assert len(comparison.runs) == 1 and comparison.runs[0].state.stopped()


def test_the_comparison_view_shows_each_method_its_picture_and_answer(every_method):
    columns = [Column("oner", "OneR", every_method["oner"], "r1"), Column("ircot", "IRCoT", every_method["ircot"], "r2"),
               Column("toc", "Tree of Clarifications")]
    html = compare_html(Q24, columns)
    assert html.count('class="rp-col ') == 3 and html.count("<svg ") == 2 and "Waits for its turn" in html
    assert 'data-state="running"' in html and "Tadej Pogacar won in 2024 [1]." in html and "Bloemfontein" in html
    assert compare_html(Q24, columns[:2]).count('data-state="done"') == 1
    assert 'data-run="r1"' in picture_html(every_method["oner"], "r1") and "Zoom in" in picture_html(
        every_method["oner"], "r1")
    assert reasoning_html(every_method["oner"], "r1").startswith('<div class="rv-run" data-run="r1">')


def test_running_steps_are_drawn_as_running_and_interrupted_ones_as_interrupted():
    tracer = Tracer("oner", "run")
    state = RunState()
    state.add(tracer.event(RetrievePayload(query="q"), "Retrieve", id="r1", status=Status.RUNNING))
    assert 'rp-st-running' in draw(state) and "retrieving…" in draw(state)
    state.close()
    assert "rp-st-interrupted" in draw(state) and "No steps yet" in draw(RunState())
