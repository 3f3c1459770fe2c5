"""The browsing session every mode of the web agent shares (the browser, the tab, the chain of action
steps, the start, the finish and the answer); the modes are ``interactive``, ``pipeline_mode`` and
``hops_mode``.

A web-browsing agent in the style of WebCPM (Qin et al., ACL 2023), adapted to English and a 1.5B model: it
searches, opens results, scrolls, goes back, quotes sentences as facts and merges them, then finishes; an answer
is written from the quoted facts, citing each fact's page.

Every choice is constrained: the reply is JSON whose schema allows only the actions the current state permits
(``pipeline.methods.webagent.browsing.agent``: WebCPM's masks and anti-loop rules) and only result and sentence numbers that exist
on screen. It browses the real web when web search is chosen, else a local web over the selected collections
(or, in the evaluation, the file's passages); offline with web search chosen, it says so in its first step and
browses the collections. ``mode: pipeline`` is WebCPM's one-shot variant: queries, then pages, then one fact
extraction per page, then the answer. ``mode: hops`` plans the question as sub-questions (IRCoT's planner) and
searches for each in turn, quoting the sentence that states its answer. ``mode: auto`` (the default) runs
``hops`` for a question whose structure reaches one thing through another or compares two, ``interactive``
otherwise.

Events: one ``action`` step per action, each the child of the one before (a timeline), from a ``start`` step
naming what is browsed to a ``finish`` step; merges link to the steps that made the merged facts (``merge``), the
answer to the steps whose facts it cites (``cites``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from langchain_core.documents import Document

from pipeline.answering import stream_answer
from pipeline.methods.webagent.browsing.agent import Rules, Tab, normalise_query
from pipeline.methods.webagent.browsing.local import LocalWeb
from pipeline.methods.webagent.browsing.pages import BrowseError, Browser, Result, Window, shorten, words_preview
from pipeline.methods.webagent.browsing.realweb import RealWeb
from pipeline.context import NO_SOURCES, RunContext
from pipeline.events import EventKind, Link, Status, StepEvent, Tracer
from pipeline.payloads import ActionPayload, PageView, ResultRef, SentenceRef, WarningPayload, passage_refs
from pipeline.prompting import answer_prompt, format_passages
from pipeline.retrieval import HybridRetriever

from pipeline.methods.webagent.settings import WebAgentSettings

if TYPE_CHECKING:
    from pipeline.evaluation.data import EvalItem
    from pipeline.fold import RunState


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


class Agent:
    """One run: the browser, the tab, the step counter and the chain of step events."""

    def __init__(self, question: str, ctx: RunContext, tracer: Tracer, cfg: WebAgentSettings) -> None:
        self.question, self.ctx, self.tracer = question, ctx, tracer
        self.cfg = cfg
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

    def _warn(self, message: str, step_id: str, title: str | None = None, caveat: bool = False) -> StepEvent:
        return self.tracer.event(WarningPayload(message=message, caveat=caveat), title or message, parent_id=step_id)

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
            message = NO_SOURCES
            yield self._event(ActionPayload(action="start", message=message), "Nothing to browse", step_id)
            yield self._warn(message, step_id, caveat=True)
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
        yield self._warn(message, step_id, caveat=True)
        self.parent = self.last_id

    # The interactive agent.

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
            yield self._warn(f"{exc} Finishing with what was found.", step_id, "Search failed", caveat=True)
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

    def _open_block(self, result: Result):
        """Load a result's page (a step) and keep ``extract_chars`` characters of it, from where it opens, as the
        one window a single model call reads (the modes that read a page in one call); returns the window, or
        None when the page did not load."""
        tab = self.tab
        self.step += 1
        step_id = self.tracer.new_id("w")
        yield from self._load(result, {"step": self.step}, step_id, {})
        self.parent = self.last_id
        if tab.view != "page":
            return None
        block = page_block(tab.windows[tab.window:], self.cfg.extract_chars)
        tab.windows, tab.window = [block], 0
        for doc in {tab.page.chunks[s.chunk].id: tab.page.chunks[s.chunk] for s in block.sentences}.values():
            self.read.setdefault(doc.id or doc.page_content, doc)
        return block

    def _quote(self, numbers: list[int], base: dict, step_id: str, cost: dict, message: str = "") -> StepEvent:
        """Quote sentences of the window on screen as a fact; the step that shows them quoted."""
        fact = self.tab.quote(numbers, step_id)
        screen = self._screen(quoted=set(numbers))
        screen["passages"] = passage_refs(fact.passages)
        if message:
            screen["message"] = message
        return self._event(ActionPayload(action="quote", fact=len(self.tab.facts), **base, **screen),
                           f"Quote → fact [{len(self.tab.facts)}]: “{words_preview(fact.text, 12)}”", step_id, **cost)

    def _reading_failed(self, exc: Exception, base: dict, step_id: str) -> Iterator[StepEvent]:
        """A page reading whose model call failed: the failed step and a warning."""
        yield self._event(ActionPayload(action="invalid", **base, error=str(exc)), "Reading failed", step_id,
                          Status.FAILED)
        yield self._warn(str(exc), step_id, "Model call failed")
        self.parent = self.last_id

    def browse(self) -> Iterator[StepEvent]:
        """The mode's browsing, between the start and the answer (``interactive``, ``pipeline_mode``,
        ``hops_mode``)."""
        raise NotImplementedError

    def _finish(self, ended_by: str) -> Iterator[StepEvent]:
        if ended_by == "model":
            return
        why = {"budget": f"the budget of {self.cfg.max_steps} actions is spent",
               "invalid": "an invalid reply (WebCPM: it counts as Finish)",
               "error": "the model call failed", "web": "the web search failed",
               "pages": "every page found was read", "facts": f"{self.cfg.max_facts} facts were found",
               "only_finish": "no action but Finish was left, so no model call was made",
               "hops": "every sub-question of the plan was answered",
               "missing": "an answer the plan needs was not found"}[ended_by]
        step_id = self.tracer.new_id("w")
        yield self._event(ActionPayload(action="finish", ended_by=ended_by, message=why), f"Finish: {why}", step_id)
        self.parent = self.last_id

    # WebCPM's one-shot "pipeline" variant.

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


def page_block(windows: list[Window], limit: int) -> Window:
    """Consecutive windows joined into one of at most ``limit`` characters (at least the first sentence)."""
    sentences, size = [], 0
    for window in windows:
        for sentence in window.sentences:
            if sentences and size + len(sentence.text) > limit:
                return Window(windows[0].index, sentences)
            sentences.append(sentence)
            size += len(sentence.text) + 1
    return Window(windows[0].index if windows else 0, sentences)


def browsing_scores(item: "EvalItem", state: "RunState") -> dict[str, float]:
    """Per question: actions, queries, pages and facts, invalid replies and refused actions (means, keys ending
    in ``_per_question``), and whether the agent ended by choosing Finish rather than by its budget (a share)."""
    actions = state.payloads(ActionPayload)
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


def actions_record(state: "RunState") -> dict:
    """What the evaluation keeps of a browsing run: its actions in order; hop by hop, also its plan, each
    sub-question with the answer found and the fact that holds it, and the comparison (as IRCoT's)."""
    from pipeline.methods.ircot.chain import chain_record

    actions = [a.action for a in state.payloads(ActionPayload)]
    return {**({"actions": actions} if actions else {}), **chain_record(state)}
