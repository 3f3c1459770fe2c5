"""The real web: DuckDuckGo results through the session's ``WebSource`` (its offline probe, time limit and search
cache) and pages through the session's ``PageFetcher`` (guarded, cached). Rate limits and time-outs are retried
a bounded number of times with growing pauses; each retry is reported through ``on_retry`` so the agent shows it
as a warning. A search or page load runs in a worker thread while the run's Stop switch is watched, so Stop ends
the run at once instead of after the fetch's time limit (the abandoned fetch ends on its own)."""

from __future__ import annotations

import threading
import time
from typing import Callable

from langchain_core.documents import Document

from models.cancel import iterate_cancellable
from models.errors import Cancelled
from pipeline.fetch import PageFetcher
from pipeline.methods.webagent.browsing.pages import BrowseError, Page, PageKey, Result, paragraph_chunks, shorten
from pipeline.web import WebSearchError, WebSource

CHUNK_CHARS = 500  # a web page is cut into chunks of about this many characters at paragraph boundaries

RetryNote = Callable[[str], None]


class RealWeb:
    """Search and open pages on the web. ``retries`` extra tries after a rate limit or a time-out, the n-th after
    ``backoff_s * 2**(n-1)`` seconds; a pause ends at once, and the run stops, when ``cancel`` is set."""

    kind = "web"
    label = "the web (DuckDuckGo)"

    def __init__(self, source: WebSource, fetcher: PageFetcher | None = None, *, retries: int = 2,
                 backoff_s: float = 1.0, snippet_chars: int = 200,
                 sleep: Callable[[float], object] | None = None, cancel: threading.Event | None = None) -> None:
        self.source = source
        self.fetcher = fetcher or source.pages
        self.retries = retries
        self.backoff_s = backoff_s
        self.snippet_chars = snippet_chars
        self.cancel = cancel
        self.sleep = sleep or (cancel.wait if cancel is not None else time.sleep)
        self.on_retry: RetryNote = lambda message: None

    def online(self) -> bool:
        """False when the machine is known to be offline (the search engine's name does not resolve)."""
        return self.source.online()

    def search(self, query: str, limit: int) -> list[Result]:
        docs = self._with_retries(lambda: self._search(query, limit), "search")
        return [Result(number=i, title=doc.metadata.get("title") or doc.metadata.get("url") or "Untitled",
                       snippet=shorten(doc.page_content, self.snippet_chars),
                       key=PageKey(url=doc.metadata.get("url")))
                for i, doc in enumerate((d for d in docs if d.metadata.get("url")), 1)]

    def _search(self, query: str, limit: int) -> list[Document]:
        try:
            return self.source.search(query, limit)
        except WebSearchError as exc:
            raise BrowseError(exc.reason, str(exc)) from exc

    def open(self, result: Result) -> Page:
        if not result.url:
            raise BrowseError("not_found", f"“{result.title}” has no address.")
        fetched = self._with_retries(lambda: self.fetcher.fetch(result.url), "page")
        title = fetched.title or result.title
        chunks = [Document(page_content=text, id=f"web:{fetched.url}#{i}",
                           metadata={"title": title, "url": fetched.url, "source": fetched.url, "collection": "web"})
                  for i, text in enumerate(paragraph_chunks(fetched.text, CHUNK_CHARS))]
        note = (f"Only the first {self.fetcher.max_text_chars:,} characters of the page are shown."
                if fetched.truncated else "")
        return Page(key=PageKey(url=fetched.url), title=title, chunks=chunks, note=note)

    def _with_retries(self, call, what: str):
        def once():
            yield call()

        for attempt in range(self.retries + 1):
            try:
                return next(iterate_cancellable(once, self.cancel))
            except BrowseError as exc:
                if not exc.retryable or attempt == self.retries:
                    if exc.retryable and self.retries:
                        raise BrowseError(exc.reason, f"{exc} Gave up after {self.retries + 1} tries.") from exc
                    raise
                pause = self.backoff_s * 2 ** attempt
                self.on_retry(f"{exc} Trying the {what} again in {pause:g} s ({attempt + 1} of {self.retries}).")
                self.sleep(pause)
                if self.cancel is not None and self.cancel.is_set():
                    raise Cancelled()
        raise AssertionError("unreachable")
