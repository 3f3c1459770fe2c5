"""The web agent's pipeline mode (WebCPM's one-shot variant, from its code): queries, then pages, then one fact
extraction per page, then the answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, Literal

from pydantic import ConfigDict, Field, ValidationError, create_model

from models.errors import LLMCallError
from models.llm import llm_cost
from pipeline.methods.webagent.browsing.agent import clean_query, data
from pipeline.methods.webagent.browsing.pages import Result, shorten
from pipeline.events import Status, StepEvent
from pipeline.payloads import ActionPayload
from pipeline.methods.webagent.agent import Agent
from pipeline.prompting import load_prompt


class OneShotAgent(Agent):
    """Writes its queries at once, then reads each result's page with one extraction call."""

    def browse(self) -> Iterator[StepEvent]:
        queries, cost = yield from self._queries()
        extract = load_prompt("webagent_extract")
        ended_by = "pages"
        for query in queries:
            if len(self.tab.facts) >= self.cfg.max_facts:
                break
            self.ctx.check_cancelled()
            self.step += 1
            step_id = self.tracer.new_id("w")
            base = {"step": self.step}
            yield self._event(ActionPayload(action="choose", **base, query=query), f"Search: {query}", step_id,
                              Status.RUNNING)
            outcome = yield from self._search(query, base, step_id, cost)
            cost = {}
            self.parent = self.last_id
            if outcome:
                ended_by = outcome
                break
            for result in list(self.tab.results[: self.cfg.pages_per_query]):
                if len(self.tab.facts) >= self.cfg.max_facts:
                    ended_by = "facts"
                    break
                if result.key in self.tab.visited:
                    continue
                yield from self._read_page(result, extract)
            if self.browser is None:
                break
        yield from self._finish(ended_by if len(self.tab.facts) < self.cfg.max_facts else "facts")

    def _queries(self):
        """The queries for the question (one model call); the question itself when the call fails."""
        prompt = load_prompt("webagent_queries")
        shape = create_model("Queries", __config__=ConfigDict(extra="forbid"),
                             queries=(list[str], Field(min_length=1, max_length=self.cfg.queries)))
        options = replace(prompt.options(self.ctx.settings.temperature), json_schema=shape.model_json_schema())
        try:
            result = self.ctx.llm.chat(prompt.messages(question=self.question, n=str(self.cfg.queries)), options)
        except LLMCallError as exc:
            yield self._warn(f"Writing queries failed ({exc}); searching with the question.", self.parent)
            return [self.question], {}
        try:
            queries = shape.model_validate_json(result.text).queries
        except (ValidationError, ValueError):
            queries = []
        cleaned = list(dict.fromkeys(q for q in (clean_query(q)[:100] for q in queries) if len(q) >= 2))
        return cleaned or [self.question], llm_cost(result)

    def _read_page(self, result: Result, prompt) -> Iterator[StepEvent]:
        """Load a result's page and extract the sentences that help, from where it opens, in one call."""
        tab = self.tab
        block = yield from self._open_block(result)
        if block is None:
            return
        numbers = list(range(1, len(block.sentences) + 1))
        shape = create_model("Extraction", __config__=ConfigDict(extra="forbid"),
                             sentences=(list[Literal[tuple(numbers)]],
                                        Field(min_length=0, max_length=self.cfg.max_quote_sentences)))
        sentences = "\n".join(f"[{i}] {data(s.text)}" for i, s in enumerate(block.sentences, 1))
        values = {"question": self.question, "query": tab.query or "", "title": data(tab.page.title),
                  "sentences": sentences}
        options = replace(prompt.options(self.ctx.settings.temperature), json_schema=shape.model_json_schema())
        self.step += 1
        quote_id = self.tracer.new_id("w")
        base = {"step": self.step}
        yield self._event(ActionPayload(action="choose", **base), "Reading the page…", quote_id, Status.RUNNING)
        try:
            call = self.ctx.llm.chat(prompt.messages(**values), options)
            picked = sorted(set(shape.model_validate_json(call.text).sentences))
        except LLMCallError as exc:
            yield from self._reading_failed(exc, base, quote_id)
            return
        except (ValidationError, ValueError):
            picked = []
        cost = llm_cost(call)
        if not picked:
            screen = self._screen()
            screen["message"] = "No sentence helps answer the question."
            yield self._event(ActionPayload(action="quote", **base, **screen),
                              f"No fact on {shorten(tab.page.title, 60)}", quote_id, **cost)
        else:
            yield self._quote(picked, base, quote_id, cost)
        self.parent = self.last_id
        tab.back()
