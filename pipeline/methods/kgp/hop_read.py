"""KGP's reader hop by hop (this app's variant, issue 32): for a question that reaches one thing through another
or compares two, the walked passages are read one sub-question at a time instead of all at once.

The walk finds the second hop's passage more often than a single retrieval does, yet one read of them stops at
the bridge ("Frederick Douglass" for his wife) as often as OneR's does. Here the question is planned as IRCoT's
hop-by-hop mode plans it (``pipeline.methods.ircot.hops``: same prompt, same plan repairs, the run's IRCoT
settings), and each sub-question is answered from the walked passages that best match it, the answer checked to
be in its passage and put into the next sub-question. When the hops reach an answer (or compute a comparison)
it is the answer; when a plan cannot be followed or a hop finds nothing, KGP's own reader answers from the walk
exactly as it would have without the hops. With ``hop_beyond_walk``, a hop no walked passage answers is first
asked once more of the whole collection, as IRCoT's hops are.
"""

from __future__ import annotations

from dataclasses import replace

from langchain_core.documents import Document

from pipeline.context import RunContext
from pipeline.events import Status, Tracer
from pipeline.methods.ircot.chain import IRCoTSettings
from pipeline.methods.ircot.hops import (answer_from_hops, ask_hops, compare_title, conclusion, plan_event,
                                         write_plan)
from pipeline.payloads import PlanPayload, WarningPayload
from pipeline.retrieval import PoolRetriever


def read_hops(ctx: RunContext, tracer: Tracer, question: str, walked: list[Document], root: str,
              why: str, beyond: bool = False, focus: bool = False):
    """Plan ``question`` and answer it hop by hop from the ``walked`` passages, under the walk's ``root``; yields
    the steps and returns whether the hops answered it (when not, a warning says why and the caller's reader
    answers). ``why`` says why the question is read hop by hop; ``beyond``: a sub-question no walked passage
    answers is asked once more of the whole collection (``ctx.retrieve``); ``focus``: IRCoT's ``focus_hop``, which
    KGP sets for itself (``KGPSettings.hop_focus``)."""
    cfg = ctx.settings.for_method("ircot", IRCoTSettings).model_copy(update={"focus_hop": focus})
    plan_id = tracer.new_id("p")
    note = f"Read hop by hop: {why}."
    yield tracer.event(PlanPayload(note=note), "Plan", id=plan_id, parent_id=root, status=Status.RUNNING)
    plan, error, cost = write_plan(question, ctx, "the walked passages are read at once instead.",
                                   ask_again=cfg.ask_again_restated, clause=cfg.clause_plan,
                                   chain=cfg.chain_plan, reorder=cfg.reorder_plan, both=cfg.both_plan)
    if plan is None:
        yield tracer.event(PlanPayload(error=error, note=note), "Plan: unusable", id=plan_id, parent_id=root,
                           **cost)
        return False
    yield plan_event(tracer, plan, plan_id, note, cost, parent=root)
    within = replace(ctx, retriever=PoolRetriever(walked, ctx.reranker))
    hops, ids, pool = {}, {}, []
    missing = yield from ask_hops(within, tracer, cfg, plan, plan_id, hops, ids, pool, wider=ctx if beyond else None)
    comparison, answer, missing = conclusion(question, plan, hops, missing)
    last = ids[max(hops)]
    if answer is None:
        message = f"{missing} The walked passages are read at once instead."
        yield tracer.event(WarningPayload(message=message, caveat=True), missing, parent_id=last)
        return False
    if comparison is not None:
        step = tracer.new_id("c")
        yield tracer.event(comparison, compare_title(comparison), id=step, parent_id=last)
        last = step
    yield from answer_from_hops(ctx, tracer, question, plan, hops, pool, answer, None, last,
                                fallback="read", reader_passages=cfg.reader_passages, noun="walked passages",
                                who="walk", support=walked)
    return True
