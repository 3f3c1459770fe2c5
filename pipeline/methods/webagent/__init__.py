"""A web-browsing agent in the style of WebCPM (Qin et al., ACL 2023): its registration and its run. The session
every mode shares is ``agent``; the modes are ``interactive`` (one constrained action a call), ``pipeline_mode``
(the one-shot variant) and ``hops_mode`` (a search per sub-question of a plan); what it browses is
``browsing``."""

from __future__ import annotations

from typing import Iterator

from pipeline.context import RunContext
from pipeline.events import StepEvent, Tracer
from pipeline.methods.base import MethodSpec
from pipeline.methods.webagent.agent import actions_record, browsing_scores
from pipeline.methods.webagent.hops_mode import HopsAgent
from pipeline.methods.webagent.interactive import InteractiveAgent
from pipeline.methods.webagent.pipeline_mode import OneShotAgent
from pipeline.methods.webagent.settings import WebAgentSettings
from pipeline.routing import hop_structure_cue


def run(question: str, ctx: RunContext, tracer: Tracer, cfg: WebAgentSettings) -> Iterator[StepEvent]:
    """Browse for facts (or read pages one-shot in ``pipeline`` mode, or a search per sub-question in ``hops``
    mode, or, in ``auto`` mode, hop by hop when the question's structure asks for it), then stream the answer
    citing them."""
    why = hop_structure_cue(question) if cfg.mode == "auto" else None
    mode = cfg.mode if cfg.mode != "auto" else "hops" if why else "interactive"
    agent = {"pipeline": OneShotAgent, "hops": HopsAgent}.get(mode, InteractiveAgent)(question, ctx, tracer, cfg)
    if why:
        agent.why = f"Hop by hop: {why}."
    yield from agent.start()
    if agent.browser is not None:
        yield from agent.browse()
    yield from agent.answer()


METHOD = MethodSpec(
    name="webagent", label="Web agent (search, read, quote)", run=run,
    summary="Searches, opens pages, scrolls and quotes facts like a person browsing, then answers from the "
            "quotes: the real web when web search is on, else your collections as a local web.",
    settings=WebAgentSettings, structure="timeline",
    prompts=("webagent_act", "webagent_queries", "webagent_extract", "oner_answer", "oner_answer_short",
             "ircot_plan", "webagent_hop_quote", "ircot_read", "ircot_read_short"),
    record=actions_record, scores=browsing_scores, edits=("drop_passage", "add_fact"),
)
