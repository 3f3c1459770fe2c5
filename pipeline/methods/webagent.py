"""A web-browsing agent in the style of WebCPM (Qin et al., ACL 2023), adapted to English and a 1.5B model: it
searches, opens results, scrolls, goes back, quotes sentences as facts and merges them, then finishes; an answer
is written from the quoted facts, citing each fact's page.

Every choice is constrained: the reply is JSON whose schema allows only the actions the current state permits
(``pipeline.browsing.agent``: WebCPM's masks and anti-loop rules) and only result and sentence numbers that exist
on screen. It browses the real web when web search is chosen, else a local web over the selected collections
(or, in the evaluation, the file's passages); offline with web search chosen, it says so in its first step and
browses the collections. ``mode: pipeline`` is WebCPM's one-shot variant: queries, then pages, then one fact
extraction per page, then the answer.

Events: one ``action`` step per action, each the child of the one before (a timeline), from a ``start`` step
naming what is browsed to a ``finish`` step; merges link to the steps that made the merged facts (``merge``), the
answer to the steps whose facts it cites (``cites``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterator, Literal

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from models.errors import LLMCallError
from models.llm import ChatResult, llm_cost
from pipeline.answering import stream_answer
from pipeline.browsing.agent import Choice, Rules, Tab, clean_query, data, normalise_query
from pipeline.browsing.local import LocalWeb
from pipeline.browsing.pages import BrowseError, Browser, Result, Window, shorten, words_preview
from pipeline.browsing.realweb import RealWeb
from pipeline.context import RunContext
from pipeline.events import EventKind, Link, Status, StepEvent, Tracer
from pipeline.methods.base import MethodSpec
from pipeline.payloads import ActionPayload, PageView, ResultRef, SentenceRef, WarningPayload, passage_refs
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.retrieval import HybridRetriever

if TYPE_CHECKING:
    from pipeline.evaluation.data import EvalItem
    from pipeline.fold import RunState


class WebAgentSettings(BaseModel):
    """The web agent (WebCPM, Qin et al. ACL 2023). Defaults are the paper's or its code's unless noted."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["interactive", "pipeline"] = Field(
        "interactive",
        description="interactive: the agent picks every action (the paper's method). pipeline: queries, then "
        "up to N pages per query, one fact extraction per page, then the answer (WebCPM's one-shot variant, in "
        "its code, not its paper). interactive is the default: on the first 50 items of HotpotQA / 2Wiki / "
        "MuSiQue it scored F1 60.0 / 30.8 / 15.8 against pipeline's 44.8 / 28.8 / 9.7 (OneR: 55.9 / 28.8 / "
        "13.5); pipeline is about 6 times faster (docs/benchmarks.md, Web agent).")
    max_steps: int = Field(16, ge=4, le=100, description="Action budget. The paper allows 100; 15-20 suits a "
                           "1.5B model on 2 cores (docs/design-notes.md), each action being one model call.")
    results_per_window: int = Field(3, ge=1, le=5, description="Search results shown at a time (the paper: 3).")
    window_chars: int = Field(500, ge=200, le=2000, description="Characters of page text shown at a time, as "
                              "numbered sentences (the paper: 500-character windows).")
    max_scrolls: int = Field(3, ge=1, le=10, description="Scrolls in a row before scrolling is masked (the "
                             "paper's code: 3 scroll-downs).")
    max_searches_without_load: int = Field(4, ge=1, le=10, description="Searches without loading a page before "
                                           "searching is masked (the paper's code: 4).")
    min_facts_to_finish: int = Field(1, ge=0, le=5, description="Facts needed before Finish is allowed (the "
                                     "budget ends the run anyway). The paper's code refuses Finish before step 10 "
                                     "with under 2 pages and 3 facts; 1 fits a 16-step budget (this app's choice).")
    max_quote_sentences: int = Field(3, ge=1, le=10, description="Sentences one Quote may take (this app's choice: "
                                     "the paper quotes a free span of the window).")
    fact_words: int = Field(50, ge=10, le=200, description="Facts longer than this are shown to the agent as "
                            "their first and last halves (the paper: over 50 tokens, the first and last 25).")
    search_results: int = Field(9, ge=3, le=30, description="Results fetched per search: three windows of three "
                                "(this app's choice).")
    answer_without_facts: Literal["read", "none"] = Field(
        "read",
        description="When no fact was quoted: read (answer from the page windows the agent read, and the step "
        "says so) or none (answer from the facts only, as the paper: the answer then says the facts do not "
        "hold it).")
    queries: int = Field(2, ge=1, le=5, description="pipeline mode: queries written for the question (the "
                         "paper's code writes several at once).")
    pages_per_query: int = Field(3, ge=1, le=5, description="pipeline mode: pages read per query (the paper's "
                                 "code: 3).")
    max_facts: int = Field(3, ge=1, le=10, description="pipeline mode: stop after this many facts (the paper's "
                           "code: 3).")
    extract_chars: int = Field(3072, ge=500, le=6000, description="pipeline mode: characters of a page, from "
                               "where it opens, read by one fact extraction (the paper's code: 3,072).")


def run(question: str, ctx: RunContext, tracer: Tracer) -> Iterator[StepEvent]:
    """Browse for facts (or read pages one-shot in ``pipeline`` mode), then stream the answer citing them."""
    agent = _Agent(question, ctx, tracer)
    yield from agent.start()
    if agent.browser is not None:
        if agent.cfg.mode == "pipeline":
            yield from agent.one_shot()
        else:
            yield from agent.browse()
    yield from agent.answer()


def _browsers(ctx: RunContext) -> tuple[RealWeb | None, LocalWeb | None]:
    """The real web (web search chosen and a session's web source given) and the local web (the collections,
    or whatever passages the run's retriever holds)."""
    retriever = ctx.retriever
    web = None
    if ctx.settings.use_web and isinstance(retriever, HybridRetriever) and retriever.web is not None:
        web = RealWeb(retriever.web, cancel=ctx.cancel)
    if isinstance(retriever, HybridRetriever):
        local = LocalWeb(HybridRetriever(retriever.collections)) if retriever.collections else None
    else:
        local = LocalWeb(retriever) if retriever is not None else None
    return web, local


class _Agent:
    """One run: the browser, the tab, the step counter and the chain of step events."""

    def __init__(self, question: str, ctx: RunContext, tracer: Tracer) -> None:
        self.question, self.ctx, self.tracer = question, ctx, tracer
        self.cfg: WebAgentSettings = ctx.method_settings
        cfg = self.cfg
        self.tab = Tab(Rules(results_per_window=cfg.results_per_window, window_chars=cfg.window_chars,
                             max_scrolls=cfg.max_scrolls, max_searches_without_load=cfg.max_searches_without_load,
                             min_facts_to_finish=cfg.min_facts_to_finish,
                             max_quote_sentences=cfg.max_quote_sentences, fact_words=cfg.fact_words))
        self.web, self.local = _browsers(ctx)
        self.browser: Browser | None = self.web or self.local
        self.parent: str | None = None  # the step the next one hangs under
        self.last_id: str | None = None  # the last step finished
        self.step = 0  # actions taken
        self.retry_notes: list[str] = []
        self.read: dict[str, Document] = {}  # passages shown in page windows, for an answer without facts
        self.hits: list[Document] = []  # passages local search results matched
        if self.web is not None:
            self.web.on_retry = self.retry_notes.append

    # Events.

    def _event(self, payload: ActionPayload, title: str, step_id: str, status: Status = Status.DONE,
               links: list[Link] | None = None, **cost) -> StepEvent:
        payload.facts = len(self.tab.facts)
        if status != Status.RUNNING:
            self.last_id = step_id
        return self.tracer.event(payload, shorten(title, 120), id=step_id, parent_id=self.parent, status=status,
                                 links=links, **cost)

    def _warn(self, message: str, step_id: str, title: str | None = None) -> StepEvent:
        return self.tracer.event(WarningPayload(message=message), title or message, parent_id=step_id)

    def _retries(self, step_id: str) -> Iterator[StepEvent]:
        while self.retry_notes:
            yield self._warn(self.retry_notes.pop(0), step_id, "Retrying")

    def _screen(self, quoted: set[int] = frozenset()) -> dict[str, Any]:
        """The payload fields describing the screen now: a results window, or a page window."""
        tab = self.tab
        if tab.view == "results":
            return {"query": tab.query, "results": [
                ResultRef(number=r.number, title=r.title, snippet=r.snippet, url=r.key.url, source=r.key.source,
                          collection=r.key.collection) for r in tab.result_window()]}
        if tab.view == "page":
            window = tab.current_window()
            passages = tab.window_passages()
            for doc in passages:
                self.read.setdefault(doc.id or doc.page_content, doc)
            page = tab.page
            return {"query": tab.query, "result": tab.result.number if tab.result else None,
                    "page": PageView(title=page.title, url=page.key.url, source=page.key.source,
                                     collection=page.key.collection, page=page.page_number,
                                     window=tab.window + 1, windows=len(tab.windows)),
                    "sentences": [SentenceRef(number=i, text=s.text, quoted=i in quoted)
                                  for i, s in enumerate(window.sentences if window else [], 1)],
                    "passages": passage_refs(passages),
                    "message": page.note}
        return {"query": tab.query}

    # The start: what is browsed.

    def start(self) -> Iterator[StepEvent]:
        step_id = self.tracer.new_id("w")
        offline = self.web is not None and not self.web.online()
        if offline:
            self.browser = self.local
            yield from self._offline_step(step_id)
            return
        if self.browser is None:
            message = "No sources are selected: choose a collection or the web."
            yield self._event(ActionPayload(action="start", message=message), "Nothing to browse", step_id)
            yield self._warn(message, step_id)
        else:
            yield self._event(ActionPayload(action="start", browser=self.browser.label),
                              f"Browse {self.browser.label}", step_id)
        self.parent = self.last_id

    def _offline_step(self, step_id: str) -> Iterator[StepEvent]:
        if self.local is not None:
            message = (f"Web search is unavailable: this machine is offline. Browsing {self.local.label} "
                       "instead, and answering from it.")
            title = f"Offline: browsing {self.local.label} instead of the web"
        else:
            message = ("Web search is unavailable: this machine is offline, and no collection is selected: "
                       "nothing to browse.")
            title = "Offline: nothing to browse"
        yield self._event(ActionPayload(action="start", browser=self.local.label if self.local else "",
                                        message=message), title, step_id)
        yield self._warn(message, step_id)
        self.parent = self.last_id

    # The interactive agent.

    def browse(self) -> Iterator[StepEvent]:
        prompt = load_prompt("webagent_act")
        ended_by, invalid_in_row = "budget", 0
        while self.step < self.cfg.max_steps and self.browser is not None:
            self.ctx.check_cancelled()
            choice = self.tab.allowed(steps_left := self.cfg.max_steps - self.step)
            if choice.actions == ["finish"]:  # a call could only choose Finish: none is made
                ended_by = "only_finish"
                break
            self.step += 1
            step_id = self.tracer.new_id("w")
            base = {"step": self.step, "allowed": choice.actions, "rules": choice.rules}
            yield self._event(ActionPayload(action="choose", **base, **self._screen()),
                              f"Action {self.step}: choosing…", step_id, Status.RUNNING)
            try:
                result = self._choose(prompt, choice, steps_left)
            except LLMCallError as exc:
                message = f"The agent stopped at action {self.step}: {exc}"
                yield self._event(ActionPayload(action="invalid", **base, error=str(exc)),
                                  f"Action {self.step} failed", step_id, Status.FAILED)
                yield self._warn(message, step_id, "Model call failed")
                self.parent, ended_by = self.last_id, "error"
                break
            cost = llm_cost(result)
            reply = _parse(result.text, choice)
            if reply is None:
                invalid_in_row += 1
                self.tab.note("(an invalid reply)")
                yield self._event(ActionPayload(action="invalid", **base, refused=f"not an allowed action: "
                                                f"{result.text[:120]!r}"), "Invalid reply", step_id, **cost)
                self.parent = self.last_id
                if "finish" in choice.actions or invalid_in_row >= 2:  # WebCPM: an invalid output becomes Finish
                    ended_by = "invalid"
                    break
                continue
            invalid_in_row = 0
            outcome = yield from self._apply(reply, base, step_id, cost)
            self.parent = self.last_id
            if outcome:
                ended_by = outcome
                break
        yield from self._finish(ended_by)

    def _choose(self, prompt, choice: Choice, steps_left: int) -> ChatResult:
        values = self.tab.prompt_values(self.question, steps_left, choice)
        options = replace(prompt.options(self.ctx.settings.temperature), json_schema=choice.schema())
        return self.ctx.llm.chat(prompt.messages(**values), options)

    def _apply(self, reply, base: dict, step_id: str, cost: dict):
        """Carry out one allowed action; yields its step (and notes); returns how the browsing ended, if it did."""
        action = reply.action
        tab = self.tab
        if action == "finish":
            yield self._event(ActionPayload(action="finish", ended_by="model", **base), "Finish", step_id, **cost)
            return "model"
        if action == "search":
            return (yield from self._search(clean_query(reply.query), base, step_id, cost))
        if action == "load":
            yield from self._load(next(r for r in tab.results if r.number == reply.result), base, step_id, cost)
        elif action in ("scroll_down", "scroll_up"):
            tab.scroll(down=action == "scroll_down")
            where = tab.page.title if tab.view == "page" else "results"
            label = "Scroll down" if action == "scroll_down" else "Scroll up"
            yield self._event(ActionPayload(action=action, **base, **self._screen()),
                              f"{label}: {where} ({tab.position()})", step_id, **cost)
        elif action == "back":
            tab.back()
            yield self._event(ActionPayload(action="back", **base, **self._screen()), "Back to the results",
                              step_id, **cost)
        elif action == "quote":
            numbers = sorted(dict.fromkeys(reply.sentences))
            fact = tab.quote(numbers, step_id)
            screen = self._screen(quoted=set(numbers))
            screen["passages"] = passage_refs(fact.passages)
            yield self._event(ActionPayload(action="quote", fact=len(tab.facts), **base, **screen),
                              f"Quote → fact [{len(tab.facts)}]: “{words_preview(fact.text, 12)}”", step_id,
                              **cost)
        elif action == "merge":
            first, second, merged = tab.merge(step_id)
            number = len(tab.facts)
            yield self._event(ActionPayload(action="merge", fact=number, merged=[number, number + 1], **base,
                                            passages=passage_refs(merged.passages)),
                              f"Merge facts [{number}] + [{number + 1}]", step_id,
                              links=[Link(target=first.step, type="merge"), Link(target=second.step, type="merge")],
                              **cost)
        return None

    def _search(self, query: str, base: dict, step_id: str, cost: dict):
        tab = self.tab
        if normalise_query(query) in tab.asked:
            why = "searched before"
            tab.refuse_search(query, why)
            yield self._event(ActionPayload(action="search", **base, query=query, refused=why),
                              f"Search refused: “{query}” ({why})", step_id, **cost)
            return None
        try:
            results = self.browser.search(query, self.cfg.search_results)
        except BrowseError as exc:
            yield self._event(ActionPayload(action="search", **base, query=query, error=str(exc)),
                              f"Search failed: {query}", step_id, **cost)
            yield from self._retries(step_id)
            if exc.reason == "offline" and self.browser is self.web:
                # Switch to the collections once, then run the same search there (the same action).
                self.parent = step_id
                self.browser = self.local
                yield from self._offline_step(self.tracer.new_id("w"))
                if self.browser is None:
                    return "web"
                return (yield from self._search(query, base, self.tracer.new_id("w"), {}))
            yield self._warn(f"{exc} Finishing with what was found.", step_id, "Search failed")
            return "web"
        self.hits += [r.hit for r in results if r.hit is not None]
        tab.show_results(query, results)
        yield self._event(ActionPayload(action="search", **base, **self._screen()), f"Search: {query}", step_id,
                          **cost)
        yield from self._retries(step_id)
        return None

    def _load(self, result: Result, base: dict, step_id: str, cost: dict) -> Iterator[StepEvent]:
        tab = self.tab
        try:
            page = self.browser.open(result)
        except BrowseError as exc:
            tab.load_failed(result, exc.reason.replace("_", " "))
            yield self._event(ActionPayload(action="load", **base, result=result.number, error=str(exc),
                                            **{k: v for k, v in self._screen().items() if k != "result"}),
                              f"Load [{result.number}] failed: {result.title}", step_id, **cost)
            yield from self._retries(step_id)
            yield self._warn(str(exc), step_id, "Page not loaded")
            return
        tab.open_page(result, page)
        yield self._event(ActionPayload(action="load", **base, **self._screen()),
                          f"Load [{result.number}]: {page.title}", step_id, **cost)
        yield from self._retries(step_id)

    def _finish(self, ended_by: str) -> Iterator[StepEvent]:
        if ended_by == "model":
            return
        why = {"budget": f"the budget of {self.cfg.max_steps} actions is spent",
               "invalid": "an invalid reply (WebCPM: it counts as Finish)",
               "error": "the model call failed", "web": "the web search failed",
               "pages": "every page found was read", "facts": f"{self.cfg.max_facts} facts were found",
               "only_finish": "no action but Finish was left, so no model call was made"}[ended_by]
        step_id = self.tracer.new_id("w")
        yield self._event(ActionPayload(action="finish", ended_by=ended_by, message=why), f"Finish: {why}", step_id)
        self.parent = self.last_id

    # WebCPM's one-shot "pipeline" variant.

    def one_shot(self) -> Iterator[StepEvent]:
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

    def answer(self) -> Iterator[StepEvent]:
        """Stream the answer from the quoted facts, each cited as [n] with its page; without facts, from the
        windows read (``answer_without_facts``)."""
        facts = self.tab.facts
        title = "Answer from the quoted facts"
        docs = [fact.document() for fact in facts]
        if not facts and self.cfg.answer_without_facts == "read":
            pool = list(self.read.values()) or list({d.id or d.page_content: d for d in self.hits}.values())
            docs = self._best(pool)
            title = ("Answer (no fact was quoted: from the pages read)" if self.read else
                     "Answer (no fact was quoted: from the search results)" if docs else "Answer")
        values = {"question": self.question, "passages": format_passages(docs) or "(no passages found)"}
        prompt = answer_prompt("oner_answer", self.ctx.settings.answer_style)
        # Whether the sources answer the question is judged on every passage the agent saw, as IRCoT judges its
        # whole pool: a quoted fact is a sentence, and a second hop's fact rarely names the question's subject.
        seen = list({d.id or d.page_content: d for d in [*docs, *self.read.values(), *self.hits]}.values())
        for event in stream_answer(self.ctx, self.tracer, prompt, values, docs, parent_id=self.parent, title=title,
                                   support_passages=seen):
            if event.kind == EventKind.ANSWER and event.status == Status.DONE and facts:
                links = [Link(target=facts[n - 1].step, type="cites") for n in event.payload.citations
                         if 1 <= n <= len(facts)]
                event = event.model_copy(update={"links": links})
            yield event

    def _best(self, pool: list[Document]) -> list[Document]:
        k = self.ctx.settings.top_k
        if len(pool) > k and self.ctx.reranker is not None:
            return self.ctx.reranker.rerank(self.question, pool, k)
        return pool[-k:]  # the most recent reads


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


def _parse(text: str, choice: Choice):
    """The reply as an allowed action, or None when it is not one."""
    try:
        return choice.reply_model().model_validate_json(text.strip()).root
    except (ValidationError, ValueError):
        return None


def browsing_scores(item: "EvalItem", state: "RunState") -> dict[str, float]:
    """Per question: actions, queries, pages and facts, invalid replies and refused actions (means, keys ending
    in ``_per_question``), and whether the agent ended by choosing Finish rather than by its budget (a share)."""
    actions = state.actions()
    if not actions:
        return {}
    searches = [a for a in actions if a.action == "search" and not a.refused and not a.error]
    pages = {(a.page.title, a.page.url, a.page.source, a.page.collection)
             for a in actions if a.action == "load" and a.page is not None and not a.error}
    finish = next((a for a in reversed(actions) if a.action == "finish"), None)
    return {
        "actions_per_question": float(len({a.step for a in actions if a.step is not None})),
        "queries_per_question": float(len(searches)),
        "pages_per_question": float(len(pages)),
        "facts_per_question": float(actions[-1].facts),
        "invalid_per_question": float(sum(a.action == "invalid" for a in actions)),
        "refused_per_question": float(sum(bool(a.refused) for a in actions if a.action != "invalid")),
        "ended_by_finish": 1.0 if finish is not None and finish.ended_by == "model" else 0.0,
    }


METHOD = MethodSpec(
    name="webagent", label="Web agent (search, read, quote)", run=run,
    summary="Searches, opens pages, scrolls and quotes facts like a person browsing, then answers from the "
            "quotes: the real web when web search is on, else your collections as a local web.",
    settings=WebAgentSettings, structure="timeline",
    prompts=("webagent_act", "webagent_queries", "webagent_extract", "oner_answer", "oner_answer_short"),
    scores=browsing_scores,
)
