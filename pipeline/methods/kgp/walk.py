"""Knowledge Graph Prompting (Wang et al., AAAI 2024): a walk over the passage graph of the selected collections,
guided by the model, then a cited answer.

Seeds come from the hybrid search with the question. The walk is breadth-first over paths (the paper's
Algorithm 1): for each path the model writes the next piece of evidence it needs (one short, grammar-bounded
line from the question and the path's passages), the unvisited neighbours of the path's last passage (sequence,
keyword, knn, title and page edges; ``corpora.graph``) are ranked by similarity to that line and the best are
visited, until the budget of visited passages or the depth is reached. The reader then answers from as many
passages as OneR reads (``top_k``): the visited passages that best match the question, each followed by the
neighbour reached from it through a bridge entity (``reader_order``). A question that reaches one thing through
another or compares two is first read hop by hop from the walked passages (``hop_read``).
Questions about a table or a page are answered from that node.

Events: a ``walk`` root; a ``visit`` per node reached (seeds are children of the root; a neighbour is the child
of the visit it came from, its parent edge typed by the graph edge that led there); an ``evidence`` step per
generation (child of the visit it expands); the answer (child of the root, linked to the visits it read).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Literal

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field

from corpora.keywords import as_written
from models.errors import LLMCallError, ModelError
from models.llm import llm_cost
from models.rerankers import reciprocal_rank_fusion
from pipeline.answering import retrieve_step, source_warnings, stream_answer
from pipeline.context import RunContext
from pipeline import metrics
from pipeline.events import Link, Status, StepEvent, Tracer
from pipeline.methods.ircot.chain import hop_record
from pipeline.methods.kgp.bridges import bridge
from pipeline.methods.kgp.graph_sources import GraphSource, WalkSources, find_structure, open_sources, rank_by_text
from pipeline.methods.kgp.hop_read import read_hops
from pipeline.payloads import (ChainExtras, EvidencePayload, PassageRef, VisitPayload, WalkExtras, WalkPayload,
                               WarningPayload, passage_refs)
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.routing import hop_structure_cue
from pipeline.methods.kgp.structure_nodes import structure_ask
from pipeline.windows import windows

MAX_CANDIDATES = 100  # neighbours of one passage ranked against its next evidence (a title can name a long file)
KEYWORDS_SHOWN = 3  # shared keywords named on a keyword edge

if TYPE_CHECKING:
    from pipeline.fold import RunState
    from pipeline.resume import Steering


class KGPSettings(BaseModel):
    """Knowledge Graph Prompting (Wang et al., AAAI 2024). Defaults are the paper's unless noted."""

    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(10, ge=1, le=30, description="Seed passages from the hybrid search with the question. The "
                       "paper seeds with 10 TF-IDF passages (released code: k / k_nei = 30 / 3).")
    neighbours: int = Field(3, ge=1, le=10, description="Branching factor: neighbours visited from each expanded "
                            "passage, the best by similarity to the model's next evidence (paper code: k_nei = 3).")
    budget: int = Field(30, ge=1, le=60, description="Distinct passages the walk may visit, seeds included: the "
                        "paper gives 30 contexts to every method (Supp. 8.2). With 10 seeds and 3 neighbours "
                        "each, 7 seeds are expanded (7 model calls).")
    depth: int = Field(1, ge=0, le=4, description="Hops from a seed. The paper's runs expand each seed once "
                       "(depth 1); its Algorithm 1 allows longer paths, each hop one more model call. 0: no walk, "
                       "the seeds only (with seeds = budget, the no-graph baseline at the same passage budget).")
    guide: Literal["model", "question"] = Field(
        "model",
        description="model: the model writes the next evidence for each path (KGP); question: neighbours are "
        "ranked by the question itself, no model call (the paper's KG-TF-IDF and KG-BM25 rows, Table 1): what "
        "the graph gives without the agent.")
    evidence_model: Literal["same", "fast"] = Field(
        "same",
        description="Which model writes the next-evidence lines: same: the run's model; fast: the bundled 0.5B "
        "model, loaded beside it. On HotpotQA dev's first 50: 1.29 x faster, F1 -5.3 [-13.0, +0.6], so not the "
        "default (docs/performance.md). The reader always uses the run's model.")
    reader_order: Literal["relevance", "fused", "paths", "hops"] = Field(
        "hops",
        description="Which visited passages the reader gets, as many as OneR reads (top_k: the equal budget "
        "of docs/design-notes.md). relevance: the visited passages re-ranked for the question; hops (this app's): "
        "relevance, each passage followed by the neighbour its next evidence reached through a bridge entity "
        "both hold (``bridges``), so a second hop is read beside the passage that named it; paths: each seed with "
        "the neighbour its next evidence ranked first, seeds in retrieval order (the paper's reader reads (seed, "
        "neighbour) pairs); fused: relevance and paths fused by rank. hops against relevance on the same walks "
        "(benchmarks.kgp_reader, default model): F1 +8.9 [+2.6, +16.9] on 2Wiki dev (50 items, where it was "
        "chosen), +0.0 on HotpotQA and MuSiQue dev (20 each); on the test splits +8.6 [+2.0, +16.6] on 2Wiki, "
        "+0.0 on HotpotQA, +4.0 [-3.0, +12.0] on MuSiQue (docs/benchmarks.md).")
    hop_read: Literal["auto", "off"] = Field(
        "auto",
        description="auto: a question that reaches one thing through another or compares two (the cue IRCoT's "
        "auto mode uses, pipeline.routing.hop_structure_cue) is read hop by hop from the walked passages: planned "
        "as IRCoT plans it, each sub-question answered from the walked passages that best match it, the answer "
        "checked to be in its passage and put into the next (pipeline/methods/kgp/hop_read.py); when the hops "
        "reach no answer, the reader reads the walk as with off. off: one read of the walk (this app's variant, "
        "issue 32). Chosen on the dev items the cue sends hop by hop (MuSiQue and HotpotQA 0-19, 2Wiki 0-19; 42): "
        "F1 +20.6 [+9.2, +32.7] (9 better, 0 worse), 8.2 to 10.7 calls per question; on MuSiQue test's 27 such "
        "items of the first 50, +4.6 [-0.1, +11.4] (3 better, 1 worse) (docs/benchmarks.md).")
    hop_beyond_walk: bool = Field(
        True,
        description="With hop_read, a sub-question none of the walked passages answers is asked once more of "
        "passages retrieved from the whole collection (as IRCoT's hops retrieve), and the hops go on from its "
        "answer; off: the hops stop there and the reader reads the walk (this app's variant, issue 32). One more "
        "retrieval and call on such hops. Chosen on the 15 dev items whose hops missed in the walk (MuSiQue, "
        "HotpotQA, 2Wiki 0-19): F1 +27.6 [+7.6, +49.8] (5 better, 0 worse), median seconds 0.87 x on the 5 it changed; on MuSiQue "
        "test's 18 such items of the first 50, +0.0 (3 answers changed, all wrong both ways) (docs/benchmarks.md).")
    hop_focus: bool = Field(
        False,
        description="With hop_read, IRCoT's focus_hop: a hop the model answers \"not found\" is asked once more of "
        "the passages whose title its sub-question names (this app's variant, issue 32). Off for KGP, though "
        "IRCoT's default: on the 18 dev items whose saved KGP hops ended unanswered (it acted on 9), F1 -5.6 "
        "[-16.7, +0.0] (0 better, 1 worse: a same-country yes / no hop read \"no\"), under a rule written before "
        "the runs (docs/benchmarks.md, \"A hop not found, asked again of its subject's own passages\").")
    reader_window: int = Field(
        0, ge=0, le=300,
        description="The reader shows each passage as at most about this many words, as OneR's passage_window "
        "does (pipeline/windows.py); 0 shows whole passages.")


@dataclass
class _Visit:
    """A node of the walk as the method tracks it."""

    doc: Document
    source: GraphSource | None
    step: str
    seed_rank: int  # the rank of the seed its path starts from
    depth: int = 0
    rank: int = 0  # among its siblings
    path: tuple[str, ...] = ()  # step ids from the seed to this visit
    bridge: str | None = None  # the entity its next evidence named, held by this passage and the one before


def run(question: str, ctx: RunContext, tracer: Tracer, cfg: KGPSettings) -> Iterator[StepEvent]:
    """Walk the graph from the seeds (or answer a structure question from its node), then answer."""
    sources = open_sources(ctx.retriever, ctx.embeddings)
    root = tracer.new_id("w")
    payload = WalkPayload(question=question, graphs=[s.ref() for s in sources.graphs], seeds=cfg.seeds,
                          neighbours=cfg.neighbours, budget=cfg.budget, depth=cfg.depth)
    title = _walk_title(sources)
    yield tracer.event(payload, title, id=root, status=Status.RUNNING)
    yield from _graph_warnings(sources, tracer, root)
    if not sources.graphs:
        payload = _with(payload, mode="retrieval")
        yield tracer.event(payload, title, id=root, status=Status.RUNNING)
        passages = yield from retrieve_step(ctx, tracer, question, parent_id=root)
        yield tracer.event(payload, title, id=root)
        yield from answer_from(ctx, tracer, question, passages, root, {})
        return

    ask = structure_ask(question)
    if ask is not None:
        matches, note = find_structure(sources, ask, question)
        if note:
            yield tracer.event(WarningPayload(message=note), note, parent_id=root)
        passages = [doc for m in matches for doc in m.source.fetch(
            [m.node.key] if m.node.kind == "table" else m.source.graph.members(m.node.key))]
        if matches and not passages:  # the graph is older than the collection: the node's passages are gone
            note = f"The passages of {ask.describe(matches[0].node.source)} are no longer in the collection " \
                   "(its graph is out of date); answering from the content instead."
            yield tracer.event(WarningPayload(message=note), note, parent_id=root)
        elif matches:
            target = ask.describe(matches[0].node.source)
            payload = _with(payload, mode="structure", target=target)
            yield tracer.event(payload, f"Structure question: {target}", id=root, status=Status.RUNNING)
            visits = yield from _structure_visits(ctx, tracer, matches, root)
            yield tracer.event(_with(payload, visited=len(visits)), f"Structure question: {target}",
                               id=root)
            read = visits[: ctx.settings.top_k]
            if len(visits) > len(read):
                message = (f"{target} is stored in {len(visits)} passages; the reader reads the first "
                           f"{len(read)} (raise top_k to read more).")
                yield tracer.event(WarningPayload(message=message), message, parent_id=root)
            yield from answer_from(ctx, tracer, question, [v.doc for v in read], root,
                               {v.doc.id: v.step for v in read})
            return

    visits = yield from _walk(ctx, tracer, cfg, question, sources, root)
    yield tracer.event(_with(payload, visited=len(visits)), title, id=root)
    ctx.check_cancelled()
    why = hop_structure_cue(question) if cfg.hop_read == "auto" and ctx.reranker is not None else None
    if why:
        answered = yield from read_hops(ctx, tracer, question, [v.doc for v in visits], root, why,
                                        beyond=cfg.hop_beyond_walk, focus=cfg.hop_focus)
        if answered:
            return
        ctx.check_cancelled()
    read = reader_passages(ctx, cfg, question, visits)
    yield from answer_from(ctx, tracer, question, [v.doc for v in read], root, {v.doc.id: v.step for v in read},
                       collected=[v.doc for v in visits])


def _with(payload: WalkPayload, **changes) -> WalkPayload:
    return payload.model_copy(update=changes)


def _walk_title(sources: WalkSources) -> str:
    if not sources.graphs:
        return "Plain retrieval (no passage graph)"
    names = ", ".join(s.name or "the question's passages" for s in sources.graphs)
    return f"Graph walk over {names}"


def _graph_warnings(sources: WalkSources, tracer: Tracer, root: str) -> Iterator[StepEvent]:
    messages = []
    if sources.unsupported:
        messages.append(f"KGP: {sources.unsupported}. Answering from a plain retrieval instead.")
    for name in sources.without_graph:
        fallback = ("its passages can be seeds but are not expanded" if sources.graphs
                    else "answering from a plain retrieval instead")
        messages.append(f"Collection '{name}' has no passage graph yet: {fallback}. Build it with "
                        f"`python -m pipeline graph {name}` (adding a file builds it too).")
    for source in sources.graphs:
        if not source.current:
            messages.append(f"The passage graph of '{source.name}' was built for an earlier state of the "
                            f"collection; walking it as it is. Bring it up to date with `python -m pipeline "
                            f"graph {source.name}`.")
    for message in messages:
        yield tracer.event(WarningPayload(message=message), message, parent_id=root)


def _visit_event(tracer: Tracer, visit: _Visit, parent: str, *, edge: str, via: str = "",
                 score: float | None = None, from_node: str | None = None, label: str = "",
                 node_kind: str | None = None) -> StepEvent:
    doc = visit.doc
    kind = node_kind or ("table" if doc.metadata.get("table") else "passage")
    payload = VisitPayload(node=doc.id or "", node_kind=kind, passage=PassageRef.of(doc), label=label, edge=edge,
                           via=via, from_node=from_node, score=score, rank=visit.rank, depth=visit.depth,
                           seed=edge == "seed", collection=visit.source.name if visit.source else None,
                           bridge=visit.bridge)
    name = label or doc.metadata.get("title") or doc.id or "passage"
    title = f"Seed {visit.rank}: {name}" if edge == "seed" else f"{edge} → {name}"
    # A link to the parent types the parent edge (``RunState.edges``): the picture labels it "knn", "title"...
    return tracer.event(payload, title, id=visit.step, parent_id=parent, links=[Link(target=parent, type=edge)])


def _walk(ctx: RunContext, tracer: Tracer, cfg: KGPSettings, question: str, sources: WalkSources,
          root: str):
    """The breadth-first walk; yields its events and returns the visits in the order they were made."""
    visits: list[_Visit] = yield from _seeds(ctx, tracer, cfg, question, sources, root)
    seen = {_node_id(visit) for visit in visits}
    prompt = load_prompt("kgp_next_evidence")
    guide = None
    queue = deque(visits)
    while queue and len(visits) < cfg.budget:
        ctx.check_cancelled()
        visit = queue.popleft()
        if visit.depth >= cfg.depth or visit.source is None:
            continue
        candidates = _candidates(visit, seen)
        if not candidates:
            continue
        by_id = {step.step: step for step in visits}
        path_docs = [by_id[step].doc for step in visit.path]
        step = tracer.new_id("e")
        depth = visit.depth + 1
        evidence = EvidencePayload(path=[d.id or "" for d in path_docs], depth=depth, candidates=len(candidates))
        asks = [Link(target=visit.step, type="evidence")]
        yield tracer.event(evidence, "Next evidence", id=step, parent_id=visit.step, status=Status.RUNNING,
                           links=asks)
        if guide is None:
            guide, note = _evidence_model(ctx, cfg)
            if note:
                yield tracer.event(WarningPayload(message=note), note, parent_id=root)
        try:
            text, fallback, cost = _next_evidence(ctx, guide, cfg, prompt, question, path_docs)
        except LLMCallError as exc:
            message = f"The walk stopped: {exc}"
            yield tracer.event(evidence.model_copy(update={"fallback": message}), "Next evidence", id=step,
                               parent_id=visit.step, status=Status.FAILED, links=asks)
            yield tracer.event(WarningPayload(message=message), message, parent_id=step)
            break
        docs = visit.source.fetch([c.key for c in candidates])
        ranked = rank_by_text(text or question, docs, visit.source.vectors([d.id for d in docs]), ctx.embeddings)
        chosen = ranked[: min(cfg.neighbours, cfg.budget - len(visits))]
        evidence = evidence.model_copy(update={"text": text, "chosen": len(chosen), "fallback": fallback})
        yield tracer.event(evidence, f"Next evidence: {text or question}", id=step, parent_id=visit.step,
                           links=asks, **cost)
        edges = {c.key: c for c in candidates}
        for rank, (doc, score) in enumerate(chosen, 1):
            child = _Visit(doc, visit.source, tracer.new_id("v"), seed_rank=visit.seed_rank, depth=depth,
                           rank=rank, bridge=bridge(text, question, visit.doc, doc) if text else None)
            child.path = visit.path + (child.step,)
            edge = edges[doc.id]
            shared = as_written(edge.keywords[:KEYWORDS_SHOWN], f"{doc.metadata.get('title', '')}. {doc.page_content}")
            via = "; ".join(filter(None, [edge.via, ", ".join(shared)]))
            yield _visit_event(tracer, child, visit.step, edge=edge.edge, via=via, score=score,
                               from_node=visit.doc.id)
            visits.append(child)
            seen.add(_node_id(child))
            queue.append(child)
    return visits


def _seeds(ctx: RunContext, tracer: Tracer, cfg: KGPSettings, question: str, sources: WalkSources, root: str):
    """The seed passages, retrieved with the question; yields their visits' events and returns the visits."""
    retrieved = ctx.retrieve(question, min(cfg.seeds, cfg.budget))
    yield from source_warnings(tracer, retrieved.warnings, root)
    visits: list[_Visit] = []
    for rank, doc in enumerate(retrieved.passages, 1):
        visit = _Visit(doc, sources.of(doc), tracer.new_id("v"), seed_rank=rank, rank=rank)
        visit.path = (visit.step,)
        score = doc.metadata.get("rerank_score")
        yield _visit_event(tracer, visit, root, edge="seed", score=float(score) if score is not None else None)
        visits.append(visit)
    return visits


def _evidence_model(ctx: RunContext, cfg: KGPSettings):
    """The model that writes the next-evidence lines (``evidence_model``), and a note when the run's own model
    stands in for one that cannot be had."""
    if cfg.guide == "question":
        return ctx.llm, ""
    try:
        return ctx.model_for(cfg.evidence_model), ""
    except ModelError as exc:
        return ctx.llm, (f"The {cfg.evidence_model} model cannot write the next evidence ({exc}); the run's model "
                         "does.")


def _next_evidence(ctx: RunContext, llm, cfg: KGPSettings, prompt, question: str,
                   path_docs: list[Document]) -> tuple[str, str, dict]:
    """The next evidence ``llm`` asks for on a path (or none, ranking by the question), why the question
    ranks instead when it does, and the call's cost. Raises ``LLMCallError``."""
    if cfg.guide == "question":
        return "", "Ranked by the question (guide: question, no model call).", {}
    result = llm.chat(prompt.messages(question=question, passages=format_passages(path_docs)),
                      prompt.options(ctx.settings.temperature))
    text = clean_evidence(result.text)
    fallback = "" if text else "The model asked for no further evidence; the question ranked the neighbours."
    return text, fallback, llm_cost(result)


def _node_id(visit: _Visit) -> tuple[str | None, str]:
    return (visit.source.name if visit.source else visit.doc.metadata.get("collection"), visit.doc.id or "")


def _candidates(visit: _Visit, seen: set[tuple[str | None, str]]):
    name = visit.source.name
    return [n for n in visit.source.graph.neighbours(visit.doc.id) if (name, n.key) not in seen][:MAX_CANDIDATES]


_LEAD = re.compile(r"^\s*(?:next evidence|evidence|we need|needed)\s*:\s*", re.IGNORECASE)
_NOTHING = re.compile(r"^(?:(?:none|nothing|no (?:further|more) evidence|n/a)\b|na\W*$)", re.IGNORECASE)


def clean_evidence(text: str) -> str:
    """The evidence line as a ranking text: its first line without a label or quotes; empty when the model asked
    for nothing."""
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    line = _LEAD.sub("", line).strip().strip("\"'“”").strip()
    return "" if not re.search(r"\w\w", line) or _NOTHING.match(line) else line


def reader_passages(ctx: RunContext, cfg: KGPSettings, question: str, visits: list[_Visit]) -> list[_Visit]:
    """The visited passages the reader gets: as many as OneR reads (``top_k``), in ``reader_order``."""
    budget = ctx.settings.top_k
    paths = _path_order(visits)
    if cfg.reader_order == "paths" or len(visits) <= budget:
        return paths[:budget]
    if ctx.reranker is None:
        return (_hops_first(paths, visits) if cfg.reader_order == "hops" else paths)[:budget]
    by_id = {v.doc.id: v for v in reversed(visits)}
    relevance = [by_id[d.id] for d in ctx.reranker.rerank(question, [v.doc for v in visits], len(visits))
                 if d.id in by_id]
    if cfg.reader_order == "relevance":
        return relevance[:budget]
    if cfg.reader_order == "hops":
        return _hops_first(relevance, visits)[:budget]
    fused = reciprocal_rank_fusion([[v.step for v in relevance], [v.step for v in paths]])
    return sorted(paths, key=lambda v: -fused.get(v.step, 0.0))[:budget]


def _hops_first(order: list[_Visit], visits: list[_Visit]) -> list[_Visit]:
    """``order``, each passage followed at once by the first neighbour its next evidence reached through a
    bridge entity: the second hop stays beside the passage that named it."""
    hop_of: dict[str, _Visit] = {}
    for visit in visits:  # walk order: the best-ranked neighbour of a passage first
        if visit.bridge and len(visit.path) >= 2:
            hop_of.setdefault(visit.path[-2], visit)
    out: list[_Visit] = []
    taken: set[str] = set()
    for visit in order:
        for each in (visit, hop_of.get(visit.step)):
            if each is not None and each.step not in taken:
                out.append(each)
                taken.add(each.step)
    return out


def _path_order(visits: list[_Visit]) -> list[_Visit]:
    """Each seed followed by the neighbour its next evidence ranked first, seeds in retrieval order; then the
    other visits by depth, seed and rank."""
    seeds = sorted((v for v in visits if v.depth == 0), key=lambda v: v.seed_rank)
    first: list[_Visit] = []
    for seed in seeds:
        first.append(seed)
        best = next((v for v in visits if v.depth == 1 and v.rank == 1 and v.path[0] == seed.step), None)
        if best is not None:
            first.append(best)
    taken = {v.step for v in first}
    return first + sorted((v for v in visits if v.step not in taken), key=lambda v: (v.depth, v.seed_rank, v.rank))


def _structure_visits(ctx: RunContext, tracer: Tracer, matches, root: str):
    """Visit the tables, or the page and its passages, a structure question names; return the passages."""
    visits: list[_Visit] = []
    for match in matches:
        source, node = match.source, match.node
        if node.kind == "table":
            for doc in source.fetch([node.key]):
                visit = _Visit(doc, source, tracer.new_id("v"), seed_rank=len(visits) + 1, rank=len(visits) + 1)
                yield _visit_event(tracer, visit, root, edge="structure", label=node.describe())
                visits.append(visit)
            continue
        page_step = tracer.new_id("v")
        page = VisitPayload(node=node.key, node_kind="page", label=node.describe(), edge="structure", seed=True,
                            collection=source.name)
        yield tracer.event(page, node.describe(), id=page_step, parent_id=root,
                           links=[Link(target=root, type="structure")])
        for rank, doc in enumerate(source.fetch(source.graph.members(node.key)), 1):  # the reader cuts, and says so
            visit = _Visit(doc, source, tracer.new_id("v"), seed_rank=1, depth=1, rank=rank)
            yield _visit_event(tracer, visit, page_step, edge="page", via=f"p. {node.page}")
            visits.append(visit)
    return visits


def answer_from(ctx: RunContext, tracer: Tracer, question: str, passages: list[Document], root: str,
                steps: dict[str | None, str], collected: list[Document] | None = None) -> Iterator[StepEvent]:
    """The reader: a cited answer from ``passages`` (linked to the visits that found them, ``steps``: passage id
    -> visit step id), under the walk's ``root``. The walk calls it last; a run resumed with edits calls it alone
    (``reanswer``)."""
    shown = windows(question, passages, ctx.settings.for_method("kgp", KGPSettings).reader_window, ctx.embeddings)
    values = {"question": question, "passages": format_passages(shown) or "(no passages found)"}
    links = [Link(target=steps[d.id], type="read") for d in passages if d.id in steps]
    extras = WalkExtras(collected=passage_refs(collected)) if collected else None
    for event in stream_answer(ctx, tracer, answer_prompt("oner_answer", ctx.settings.answer_style), values,
                               passages, parent_id=root, extras=extras):
        yield event.model_copy(update={"links": links}) if event.status == Status.DONE and links else event


def reanswer(steering: "Steering", ctx: RunContext, tracer: Tracer, cfg: KGPSettings) -> Iterator[StepEvent]:
    """KGP after edits: its reader again, from the passages it read less those dropped and with those pinned
    first, linked to the visits that found them; no walk, no seed retrieval."""
    from pipeline.resume import pinned_passages

    steps = {v.passage.id: step for step, v in steering.state.steps_of(VisitPayload)
             if v.passage is not None and v.passage.id}
    extras = steering.answer.payload.extras
    collected = ([p.document() for p in extras.collected if not steering.is_dropped(p)]
                 if isinstance(extras, WalkExtras) else None)
    pinned = [p.document() for p in pinned_passages(steering.state)]
    yield from answer_from(ctx, tracer, steering.question, pinned + steering.kept_passages(),
                           steering.answer.parent_id, steps, collected)


def recorded_visits(state: "RunState") -> list[_Visit]:
    """A finished walk's passage visits as its trace holds them, in the order they were made, each neighbour's
    bridge found again from the next-evidence line that chose it: the reader orders compared on one walk
    (``benchmarks.kgp_reader``)."""
    steps = state.steps
    evidence = {steps[i].parent_id: p.text for i, p in state.steps_of(EvidencePayload)}
    question = state.question
    visits: dict[str, _Visit] = {}
    for step_id, payload in state.steps_of(VisitPayload):
        if payload.passage is None:
            continue  # a page node of a structure question
        parent = visits.get(steps[step_id].parent_id or "")
        doc = payload.passage.document()
        text = evidence.get(parent.step, "") if parent else ""
        visit = _Visit(doc, None, step_id, seed_rank=parent.seed_rank if parent else payload.rank or 0,
                       depth=payload.depth, rank=payload.rank or 0,
                       bridge=bridge(text, question, parent.doc, doc) if parent and text else None)
        visit.path = (parent.path if parent else ()) + (step_id,)
        visits[step_id] = visit
    return list(visits.values())


def walk_scores(item, state) -> dict[str, float]:
    """Recall of the supporting passages among every passage the walk visited, and how many it visited (its
    reader gets ``top_k`` of them: the harness's support recall counts those, as OneR's counts its top_k)."""
    visited = {v.passage.id for v in state.payloads(VisitPayload) if v.passage is not None and v.passage.id}
    if not visited:
        return {}
    found = metrics.recall(visited, item.supporting_ids())
    return {"visited_per_question": float(len(visited)), **({} if found is None else {"walk_recall": found})}


def walk_record(state: "RunState") -> dict:
    """What the evaluation keeps of a walk: each visit's edge, depth and passage (or node); and, when it was read
    hop by hop, the hops (``hop_record``) and whether they gave the answer."""
    walk = [{"edge": v.edge, "depth": v.depth, "id": v.passage.id if v.passage else v.node}
            for v in state.payloads(VisitPayload)]
    record = {"walk": walk} if walk else {}
    if (hops := hop_record(state)):
        answer = state.answer
        record.update(hops, hop_answer=answer is not None and isinstance(answer.extras, ChainExtras))
    return record
