"""A local "web" over collections or an evaluation corpus, for offline use, tests and the evaluation.

A page is all passages of one title in one file of one collection (an evaluation corpus: one title; an ingested
file: the file), in position order. Search ranks passages with the run's retriever (hybrid BM25 + dense over
collections, or a pool of passages) and lists each page once, at its best passage, with a snippet of it; opening
a result opens its page at that passage, as a browser following a link to a text fragment would.
"""

from __future__ import annotations

from langchain_core.documents import Document

from pipeline.methods.webagent.browsing.pages import BrowseError, Page, PageKey, Result, snippet
from pipeline.retrieval import HybridRetriever, PoolRetriever

PASSAGES_PER_RESULT = 3  # passages retrieved per result wanted (several passages may share a page)
MAX_PAGE_PASSAGES = 400  # a page (file) holds at most this many passages; the rest are not shown


def page_key(doc: Document) -> PageKey:
    meta = doc.metadata
    return PageKey(collection=meta.get("collection"), source=meta.get("source"), title=meta.get("title") or "")


def _position(doc: Document) -> float:
    position = doc.metadata.get("position")
    return float(position) if isinstance(position, (int, float)) else float("inf")


class LocalWeb:
    """Browse ``retriever``'s passages as pages (see the module docstring). ``retriever`` is a
    ``HybridRetriever`` (pages are read from its collections), a ``PoolRetriever`` (from its pool) or any object
    with ``retrieve(query, k)`` (pages hold the passages seen in its results)."""

    kind = "local"

    def __init__(self, retriever, label: str | None = None, snippet_chars: int = 200) -> None:
        self.retriever = retriever
        self.snippet_chars = snippet_chars
        self.label = label or self._describe()
        self._seen: dict[PageKey, dict[str, Document]] = {}  # passages met in results, per page

    def _describe(self) -> str:
        if isinstance(self.retriever, HybridRetriever):
            names = ", ".join(c.name for c in self.retriever.collections)
            return f"a local web over {names}" if names else "a local web with no collection"
        if isinstance(self.retriever, PoolRetriever):
            return f"a local web over {len(self.retriever.passages)} passages"
        return "a local web"

    def search(self, query: str, limit: int) -> list[Result]:
        """The pages of the best passages for ``query``, best first, each once."""
        retrieved = self.retriever.retrieve(query, limit * PASSAGES_PER_RESULT)
        results: list[Result] = []
        listed: set[PageKey] = set()
        for doc in retrieved.passages:
            key = page_key(doc)
            self._seen.setdefault(key, {})[doc.id or doc.page_content] = doc
            if key in listed or len(results) >= limit:
                continue
            listed.add(key)
            results.append(Result(number=len(results) + 1, title=key.title or "Untitled",
                                  snippet=snippet(doc.page_content, query, self.snippet_chars), key=key, hit=doc))
        return results

    def open(self, result: Result) -> Page:
        """The result's page, opened at the passage the search matched."""
        chunks = self._passages(result.key) or ([result.hit] if result.hit else [])
        if not chunks:
            raise BrowseError("not_found", f"The page “{result.title}” has no text.")
        start = 0
        if result.hit is not None:
            start = next((i for i, doc in enumerate(chunks) if _same(doc, result.hit)), 0)
        page = chunks[start].metadata.get("page")
        return Page(key=result.key, title=result.title, chunks=chunks, start_chunk=start,
                    page_number=int(page) if isinstance(page, (int, float)) else None)

    def _passages(self, key: PageKey) -> list[Document]:
        if isinstance(self.retriever, HybridRetriever):
            docs = []
            for collection in self.retriever.collections:
                if key.collection not in (None, collection.name):
                    continue
                where = [{"title": key.title}] + ([{"source": key.source}] if key.source else [])
                docs += collection.matching(where[0] if len(where) == 1 else {"$and": where}, MAX_PAGE_PASSAGES)
        elif isinstance(self.retriever, PoolRetriever):
            docs = [d for d in self.retriever.passages if page_key(d) == key]
        else:
            docs = list(self._seen.get(key, {}).values())
        unique = list({d.id or d.page_content: d for d in docs}.values())
        return sorted(unique, key=_position)[:MAX_PAGE_PASSAGES]  # stable: storage order within a position


def _same(a: Document, b: Document) -> bool:
    return (a.id is not None and a.id == b.id) or a.page_content == b.page_content
