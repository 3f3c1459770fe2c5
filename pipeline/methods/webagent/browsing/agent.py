"""The web agent's browsing state (``Tab``): what the screen shows, the facts quoted, the action history; which
actions are allowed in it (``Tab.allowed``: WebCPM's masks and anti-loop rules); the reply shape those allow
(``Choice.reply_model``, a pydantic model whose JSON schema constrains the model's reply); and the state as
the model reads it (``Tab.prompt_values``).

Masks (Qin et al. 2023, code ``make_data_search_model.py``): only Search before the first search; no Quote or
Merge on a results list; Load only on a results list (so never Load after Load) and only of a result in the
current window; Quote only of sentences of the current window (not already quoted); Go back only from a page.
This app adds: no Load of a page already read or that failed to load (the 0.5B model looped between a page and
its results), and Merge only of two facts quoted from different windows of one page (WebCPM's use: a fact that
runs on past a window; a merged fact cites one page; the 0.5B model otherwise merged after every quote).
Anti-loop rules (the same code's ``run_interactive.py``, applied here as masks before the choice rather than as
refusals after it, so no model call is wasted): at most ``max_scrolls`` scrolls in a row, at most
``max_searches_without_load`` searches without loading a page, no Finish before ``min_facts_to_finish`` facts
(the budget ends the run anyway). A repeated query cannot be masked by a schema; it is refused after the reply,
and Search is masked for the next step. This app adds: the last action of the budget may only be Quote, Merge or
Finish (a search, load, scroll or go-back then would change nothing), and when only Finish is left the agent
finishes without a model call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from pipeline.methods.webagent.browsing.pages import Page, PageKey, Result, Window, make_windows, shorten, words_preview
from pipeline.text import normalize_answer
from pipeline.untrusted import neutralise

SIMPLE_ACTIONS = ("scroll_down", "scroll_up", "back", "merge", "finish")
MAX_QUERY_CHARS = 100


@dataclass(frozen=True)
class Rules:
    """The numbers the masks and rules use (from the method's settings)."""

    results_per_window: int = 3
    window_chars: int = 500
    max_scrolls: int = 3
    max_searches_without_load: int = 4
    min_facts_to_finish: int = 1
    max_quote_sentences: int = 3
    fact_words: int = 50


@dataclass
class Fact:
    """A quoted fact: its text, the page it cites, the passages (chunks) its sentences came from, and the step
    that made it last (a quote, or the merge that joined it)."""

    text: str
    title: str
    key: PageKey
    passages: list[Document]
    step: str
    page_number: int | None = None
    windows: frozenset[int] = frozenset()  # the page windows its sentences were quoted from

    def document(self) -> Document:
        """The fact as a passage for the answer prompt, carrying its page's provenance (cited as [n])."""
        first = self.passages[0] if self.passages else None
        meta = dict(first.metadata) if first is not None else {}
        meta.update({"title": self.title, "url": self.key.url or meta.get("url"),
                     "source": self.key.source or meta.get("source"),
                     "collection": self.key.collection or meta.get("collection")})
        if self.page_number is not None:
            meta["page"] = self.page_number
        return Document(page_content=self.text, metadata={k: v for k, v in meta.items() if v is not None},
                        id=first.id if first is not None else None)


@dataclass
class Choice:
    """The actions allowed at one step, with the result and sentence numbers they may name, and the rules
    that masked an action."""

    actions: list[str]
    load: list[int] = field(default_factory=list)
    quote: list[int] = field(default_factory=list)
    max_quote: int = 3
    rules: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """The allowed actions for the prompt: ``search, load 1/2/3, quote 1-4, finish``."""
        out = []
        for action in self.actions:
            if action == "load":
                out.append("load " + "/".join(map(str, self.load)))
            elif action == "quote":
                out.append(f"quote up to {self.max_quote} of sentences " + _ranges(self.quote))
            else:
                out.append(action)
        return ", ".join(out)

    def reply_model(self) -> type[RootModel]:
        """The shape of a valid reply: exactly one allowed action, naming only existing results and sentences."""
        strict = ConfigDict(extra="forbid")
        options: list[type[BaseModel]] = []
        if "search" in self.actions:
            options.append(create_model("Search", __config__=strict, action=(Literal["search"], ...),
                                        query=(str, Field(min_length=2, max_length=MAX_QUERY_CHARS))))
        if "load" in self.actions:
            options.append(create_model("Load", __config__=strict, action=(Literal["load"], ...),
                                        result=(Literal[tuple(self.load)], ...)))
        if "quote" in self.actions:
            options.append(create_model("Quote", __config__=strict, action=(Literal["quote"], ...),
                                        sentences=(list[Literal[tuple(self.quote)]],
                                                   Field(min_length=1, max_length=self.max_quote))))
        simple = tuple(a for a in self.actions if a in SIMPLE_ACTIONS)
        if simple:
            options.append(create_model("Other", __config__=strict, action=(Literal[simple], ...)))
        return RootModel[Union[tuple(options)]]  # type: ignore[misc]

    def schema(self) -> dict[str, Any]:
        return self.reply_model().model_json_schema()


def _ranges(numbers: list[int]) -> str:
    """``1-3/5`` for [1, 2, 3, 5]."""
    out, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return "/".join(out)


def normalise_query(query: str) -> str:
    return normalize_answer(query)


def data(text: str) -> str:
    """Web or document text as a prompt holds it: neutralised (``pipeline.untrusted``: instruction-like sentences
    become a marker), with angle brackets made harmless so that it cannot close the fence it sits in."""
    return neutralise(text).text.replace("<", "‹").replace(">", "›")


@dataclass
class Tab:
    """One agent's browser tab and notebook."""

    rules: Rules = field(default_factory=Rules)
    view: Literal["start", "results", "page"] = "start"
    query: str | None = None
    results: list[Result] = field(default_factory=list)
    results_window: int = 0
    result: Result | None = None  # the result whose page is open
    page: Page | None = None
    windows: list[Window] = field(default_factory=list)
    window: int = 0
    facts: list[Fact] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)  # normalised queries searched
    visited: set[PageKey] = field(default_factory=set)
    failed: set[int] = field(default_factory=set)  # result numbers whose page would not load (this search)
    quoted: set[tuple[PageKey, int, int]] = field(default_factory=set)  # (page, window, sentence index)
    scrolls_in_row: int = 0
    searches_since_load: int = 0
    search_refused: bool = False  # the last step refused a search: Search is masked once

    # What the screen shows.

    def result_window(self) -> list[Result]:
        size = self.rules.results_per_window
        return self.results[self.results_window * size: (self.results_window + 1) * size]

    def current_window(self) -> Window | None:
        return self.windows[self.window] if self.view == "page" and self.windows else None

    def window_passages(self) -> list[Document]:
        window = self.current_window()
        if window is None:
            return []
        return [self.page.chunks[c] for c in dict.fromkeys(s.chunk for s in window.sentences)]

    # The masks and rules.

    def allowed(self, steps_left: int) -> Choice:
        """The actions allowed now (see the module docstring); never empty (Finish at worst)."""
        rules = self.rules
        actions: list[str] = []
        fired: list[str] = []
        load: list[int] = []
        quote: list[int] = []
        if self.view == "start":
            actions = ["search"]
        else:
            if self.search_refused:
                fired.append("no search right after a refused one")
            elif self.searches_since_load >= rules.max_searches_without_load:
                fired.append(f"no search: {self.searches_since_load} searches without loading a page")
            else:
                actions.append("search")
            if self.view == "results":
                shown = [r for r in self.result_window() if r.number not in self.failed]
                load = [r.number for r in shown if r.key not in self.visited]
                if len(load) < len(shown):
                    fired.append("no reloading a page already read")
                if load:
                    actions.append("load")
            else:
                window = self.current_window()
                quote = [i + 1 for i in range(len(window.sentences)) if not self._was_quoted(i)] if window else []
                if quote:
                    actions.append("quote")
                if self._can_merge():
                    actions.append("merge")
                actions.append("back")
            more_below, more_above = self._can_scroll()
            if more_below or more_above:
                if self.scrolls_in_row >= rules.max_scrolls:
                    fired.append(f"no scroll: {self.scrolls_in_row} scrolls in a row")
                else:
                    actions += (["scroll_down"] if more_below else []) + (["scroll_up"] if more_above else [])
            if len(self.facts) >= rules.min_facts_to_finish:
                actions.append("finish")
            else:
                fired.append(f"no finish before {rules.min_facts_to_finish} quoted fact"
                             f"{'s' if rules.min_facts_to_finish > 1 else ''}")
        if steps_left <= 1 and self.view != "start":
            last = [a for a in actions if a in ("quote", "merge", "finish")]
            if len(last) < len(actions):
                fired.append("last action: only quote, merge or finish can still change the answer")
            actions = last
        if not actions:
            actions = ["finish"]
        order = ["search", "load", "quote", "merge", "scroll_down", "scroll_up", "back", "finish"]
        actions = sorted(set(actions), key=order.index)
        return Choice(actions, load, quote, rules.max_quote_sentences, fired)

    def _was_quoted(self, sentence: int) -> bool:
        return (self.page.key, self.window, sentence) in self.quoted

    def _can_merge(self) -> bool:
        """Merge joins a fact that runs on past a window: the last two facts, from one page, quoted in different
        windows (sentences of one window are quoted together instead)."""
        if len(self.facts) < 2:
            return False
        first, second = self.facts[-2], self.facts[-1]
        return first.key == second.key and not first.windows & second.windows

    def _can_scroll(self) -> tuple[bool, bool]:
        if self.view == "results":
            pages = -(-len(self.results) // self.rules.results_per_window)
            return self.results_window + 1 < pages, self.results_window > 0
        if self.view == "page":
            return self.window + 1 < len(self.windows), self.window > 0
        return False, False

    # Applying actions (the caller checked they are allowed).

    def show_results(self, query: str, results: list[Result]) -> None:
        self.view, self.query, self.results, self.results_window = "results", query, results, 0
        self.result, self.page, self.windows, self.window = None, None, [], 0
        self.asked.append(normalise_query(query))
        self.failed = set()
        self.scrolls_in_row = 0
        self.searches_since_load += 1
        self.search_refused = False
        self.history.append(f"search “{data(query)}”: {len(results)} result{'s' if len(results) != 1 else ''}")

    def open_page(self, result: Result, page: Page) -> None:
        self.view, self.result, self.page = "page", result, page
        self.windows = make_windows(page.chunks, self.rules.window_chars)
        self.window = next((w.index for w in self.windows if w.chunk >= page.start_chunk), 0)
        self.visited.add(result.key)
        self.scrolls_in_row = 0
        self.searches_since_load = 0
        self.search_refused = False
        self.history.append(f"load [{result.number}] {data(shorten(page.title, 60))}")

    def load_failed(self, result: Result, reason: str) -> None:
        self.failed.add(result.number)
        self.scrolls_in_row = 0
        self.search_refused = False
        self.history.append(f"load [{result.number}] failed ({reason})")

    def scroll(self, down: bool) -> None:
        if self.view == "results":
            self.results_window += 1 if down else -1
        else:
            self.window += 1 if down else -1
        self.scrolls_in_row += 1
        self.search_refused = False
        self.history.append(f"{'scroll_down' if down else 'scroll_up'} ({self.position()})")

    def back(self) -> None:
        self.view, self.result, self.page, self.windows, self.window = "results", None, None, [], 0
        self.scrolls_in_row = 0
        self.search_refused = False
        self.history.append("back to the results")

    def quote(self, numbers: list[int], step: str) -> Fact:
        window = self.current_window()
        picked = sorted(dict.fromkeys(numbers))
        sentences = [window.sentences[n - 1] for n in picked]
        for n in picked:
            self.quoted.add((self.page.key, self.window, n - 1))
        chunks = list(dict.fromkeys(s.chunk for s in sentences))
        page_value = self.page.chunks[chunks[0]].metadata.get("page")
        fact = Fact(text=" ".join(s.text for s in sentences), title=self.page.title, key=self.page.key,
                    passages=[self.page.chunks[c] for c in chunks], step=step,
                    page_number=int(page_value) if isinstance(page_value, (int, float)) else None,
                    windows=frozenset({self.window}))
        self.facts.append(fact)
        self.scrolls_in_row = 0
        self.search_refused = False
        self.history.append(f"quote {_ranges(picked)} as fact [{len(self.facts)}]: "
                            f"“{words_preview(data(fact.text), 16)}”")
        return fact

    def merge(self, step: str) -> tuple[Fact, Fact, Fact]:
        """Join the last two facts; returns (first, second, merged)."""
        second, first = self.facts.pop(), self.facts.pop()
        passages = list({(d.id or d.page_content): d for d in first.passages + second.passages}.values())
        merged = Fact(text=f"{first.text} {second.text}", title=first.title, key=first.key, passages=passages,
                      step=step, page_number=first.page_number, windows=first.windows | second.windows)
        self.facts.append(merged)
        self.scrolls_in_row = 0
        self.search_refused = False
        self.history.append(f"merge facts [{len(self.facts)}] and [{len(self.facts) + 1}] into fact "
                            f"[{len(self.facts)}]")
        return first, second, merged

    def refuse_search(self, query: str, why: str) -> None:
        self.search_refused = True
        self.history.append(f"search “{data(query)}” refused: {why}")

    def note(self, text: str) -> None:
        self.history.append(text)

    def position(self) -> str:
        if self.view == "results":
            shown = self.result_window()
            return (f"results {shown[0].number}-{shown[-1].number} of {len(self.results)}" if shown
                    else "no results")
        if self.view == "page":
            return f"part {self.window + 1} of {len(self.windows)}"
        return ""

    # The state as the model reads it.

    def prompt_values(self, question: str, steps_left: int, choice: Choice) -> dict[str, str]:
        """The values of the action prompt's template: the stable parts (question, facts, history) first."""
        facts = "\n".join(f"[{i}] ({data(f.title)}) {words_preview(data(f.text), self.rules.fact_words)}"
                          for i, f in enumerate(self.facts, 1))
        history = "\n".join(f"{i}. {line}" for i, line in enumerate(self.history, 1))
        return {"question": question, "facts": facts or "(none yet)", "history": history or "(none yet)",
                "query": f"“{data(self.query)}”" if self.query else "(none yet)", "screen": self.screen(),
                "steps_left": str(steps_left), "allowed": choice.describe()}

    def screen(self) -> str:
        """What the screen shows: nothing, a window of results, or a window of a page (numbered sentences).
        Page text is neutralised (``pipeline.untrusted``): instruction-like sentences are replaced by a marker."""
        if self.view == "start":
            return "(empty: nothing has been searched yet)"
        if self.view == "results":
            shown = self.result_window()
            if not shown:
                return f"No results for “{self.query}”."
            lines = [f"Search results ({self.position()}):"]
            for r in shown:
                mark = " (visited)" if r.key in self.visited else ""
                mark = " (would not load)" if r.number in self.failed else mark
                lines.append(f"[{r.number}] {data(r.title)}{mark}: {data(r.snippet)}")
            if self._can_scroll()[0]:
                lines.append("(more results below)")
            return "\n".join(lines)
        window = self.current_window()
        lines = [f"Page “{data(self.page.title)}” ({self.position()}):"]
        for i, sentence in enumerate(window.sentences if window else []):
            mark = " (quoted)" if self._was_quoted(i) else ""
            lines.append(f"[{i + 1}] {data(sentence.text)}{mark}")
        if self.page.note:
            lines.append(f"({self.page.note})")
        return "\n".join(lines)


_SPACES = re.compile(r"\s+")


def clean_query(query: str) -> str:
    return _SPACES.sub(" ", query).strip().strip("\"'“”")
