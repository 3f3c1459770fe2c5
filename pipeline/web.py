"""The web as a source: DuckDuckGo results through ``ddgs``, with a quick offline check, a short timeout and a
per-session cache. Failures raise ``WebSearchError`` with a reason the caller turns into a warning event."""

from __future__ import annotations

import concurrent.futures
import socket
import threading
from typing import Protocol

from langchain_core.documents import Document

OFFLINE_PROBE_HOST = "duckduckgo.com"


class WebSearchError(RuntimeError):
    """The web search failed; ``reason`` is offline, rate_limited, timeout or failed."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class SearchBackend(Protocol):
    """Returns results as dicts with ``title``, ``url`` and ``snippet``."""

    def search(self, query: str, max_results: int) -> list[dict[str, str]]: ...


def _resolves(host: str, timeout_s: float) -> bool:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(socket.getaddrinfo, host, 443)
    pool.shutdown(wait=False)
    try:
        future.result(timeout=timeout_s)
        return True
    except (OSError, concurrent.futures.TimeoutError):
        return False


class DuckDuckGoBackend:
    """``ddgs`` text search. ``backend`` is ddgs's engine choice ("duckduckgo", "auto", ...)."""

    def __init__(self, timeout_s: int = 5, backend: str = "duckduckgo", region: str = "wt-wt") -> None:
        self.timeout_s = timeout_s
        self.backend = backend
        self.region = region

    def online(self) -> bool:
        """False when the search engine's name does not resolve (no network)."""
        return _resolves(OFFLINE_PROBE_HOST, timeout_s=1.0)

    def search(self, query: str, max_results: int) -> list[dict[str, str]]:
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        if not _resolves(OFFLINE_PROBE_HOST, timeout_s=1.0):
            raise WebSearchError("offline", "Web search is unavailable: this machine is offline (no DNS).")
        try:
            rows = DDGS(timeout=self.timeout_s).text(
                query, max_results=max_results, backend=self.backend, region=self.region
            )
        except RatelimitException as exc:
            raise WebSearchError("rate_limited", f"The search engine is rate-limiting us ({exc}).") from exc
        except TimeoutException as exc:
            raise WebSearchError("timeout", f"Web search timed out after {self.timeout_s} s.") from exc
        except DDGSException as exc:
            raise WebSearchError("failed", f"Web search failed: {exc}") from exc
        return [
            {"title": r.get("title", ""), "url": r.get("href", ""), "snippet": r.get("body", "")} for r in rows
        ]


class WebSource:
    """Web results as passages, cached per session (one instance per browser session or CLI run)."""

    def __init__(self, backend: SearchBackend | None = None, max_results: int = 5) -> None:
        self.backend = backend or DuckDuckGoBackend()
        self.max_results = max_results
        self._cache: dict[tuple[str, int], list[Document]] = {}
        self._lock = threading.Lock()
        self._pages = None  # this session's page loader (the web agent's), made on first use

    @property
    def pages(self):
        """This session's guarded page loader with its cache of loaded pages (``pipeline.fetch``)."""
        with self._lock:
            if self._pages is None:
                from pipeline.fetch import PageFetcher

                self._pages = PageFetcher()
            return self._pages

    def online(self) -> bool:
        """False when the backend can tell that the machine is offline; True when it cannot tell."""
        probe = getattr(self.backend, "online", None)
        return bool(probe()) if callable(probe) else True

    def search(self, query: str, k: int | None = None) -> list[Document]:
        k = k or self.max_results
        key = (" ".join(query.lower().split()), k)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        rows = self.backend.search(query, k)
        docs = [
            Document(
                page_content=row["snippet"],
                metadata={"title": row["title"], "url": row["url"], "source": row["url"], "collection": "web"},
                id=f"web:{row['url']}",
            )
            for row in rows
            if row.get("snippet")
        ]
        with self._lock:
            self._cache[key] = docs
        return docs
