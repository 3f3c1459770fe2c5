"""The web agent's pipeline mode (WebCPM's one-shot variant, from its code): queries, then pages, then one fact
extraction per page, then the answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, Literal

from pydantic import ConfigDict, Field, ValidationError, create_model

from models.errors import LLMCallError
from models.llm import llm_cost
from pipeline.methods.webagent.browsing.agent import clean_query, data
from pipeline.methods.webagent.browsing.pages import Result, Window, shorten, words_preview
from pipeline.events import Status, StepEvent
from pipeline.payloads import ActionPayload, passage_refs
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
        self.step += 1
        step_id = self.tracer.new_id("w")
        yield from self._load(result, {"step": self.step}, step_id, {})
        self.parent = self.last_id
        if tab.view != "page":
            return
        block = _block(tab.windows[tab.window:], self.cfg.extract_chars)
        tab.windows, tab.window = [block], 0
        for doc in {tab.page.chunks[s.chunk].id: tab.page.chunks[s.chunk] for s in block.sentences}.values():
            self.read.setdefault(doc.id or doc.page_content, doc)
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
            yield self._event(ActionPayload(action="invalid", **base, error=str(exc)), "Reading failed", quote_id,
                              Status.FAILED)
            yield self._warn(str(exc), quote_id, "Model call failed")
            self.parent = self.last_id
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
            fact = tab.quote(picked, quote_id)
            screen = self._screen(quoted=set(picked))
            screen["passages"] = passage_refs(fact.passages)
            yield self._event(ActionPayload(action="quote", fact=len(tab.facts), **base, **screen),
                              f"Quote → fact [{len(tab.facts)}]: “{words_preview(fact.text, 12)}”", quote_id,
                              **cost)
        self.parent = self.last_id
        tab.back()

    # The answer.


def _block(windows: list[Window], limit: int) -> Window:
    """Consecutive windows joined into one of at most ``limit`` characters (at least the first)."""
    sentences, size = [], 0
    for window in windows:
        for sentence in window.sentences:
            if sentences and size + len(sentence.text) > limit:
                return Window(windows[0].index, sentences)
            sentences.append(sentence)
            size += len(sentence.text) + 1
    return Window(windows[0].index if windows else 0, sentences)
