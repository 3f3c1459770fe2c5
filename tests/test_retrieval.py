"""Hybrid retrieval over several collections, and the web source's failures, cache and offline check."""

from __future__ import annotations

import time

import pytest
from langchain_core.documents import Document

from models.rerankers import RankFusionReranker, reciprocal_rank_fusion
from pipeline.retrieval import HybridRetriever
from pipeline.web import DuckDuckGoBackend, WebSearchError, WebSource
from tests.fakes import ScriptedSearch

FACTS = {
    "rivers": ["The Danube flows through ten countries.", "The Rhine rises in the Swiss Alps.",
               "The Volga is the longest river in Europe."],
    "mountains": ["Mont Blanc is the highest mountain in the Alps.", "The Volga is the longest river in Europe."],
}


@pytest.fixture
def collections(store):
    out = []
    for name, texts in FACTS.items():
        collection = store.create(name)
        collection.add([Document(page_content=t, metadata={"title": t.split()[1], "source": f"{name}.txt"},
                                 id=f"{name}-{i}") for i, t in enumerate(texts)])
        out.append(collection)
    return out


def test_rrf_sums_reciprocal_ranks():
    scores = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert max(scores, key=scores.get) == "b"


def test_hybrid_search_fuses_collections_and_drops_duplicates(collections):
    result = HybridRetriever(collections).retrieve("longest river in Europe", k=3)
    texts = [p.page_content for p in result.passages]
    assert texts[0] == "The Volga is the longest river in Europe."
    assert texts.count("The Volga is the longest river in Europe.") == 1  # in both collections, kept once
    assert len(texts) == 3 and not result.warnings
    assert {p.metadata["collection"] for p in result.passages} <= {"rivers", "mountains"}


def test_web_results_join_local_ones(collections):
    web = WebSource(ScriptedSearch({"Volga length": [
        {"title": "Volga - Wikipedia", "url": "https://example.org/volga", "snippet": "The Volga is 3,531 km long."}
    ]}))
    result = HybridRetriever(collections, web).retrieve("Volga length", k=4)
    urls = [p.metadata.get("url") for p in result.passages]
    assert "https://example.org/volga" in urls and len(result.passages) == 4


@pytest.mark.parametrize("reason", ["offline", "rate_limited", "timeout"])
def test_failing_web_is_a_warning_and_local_results_still_come(collections, reason):
    web = WebSource(ScriptedSearch(error=WebSearchError(reason, f"web is {reason}")))
    result = HybridRetriever(collections, web).retrieve("Danube", k=2)
    assert result.passages[0].page_content.startswith("The Danube")
    assert result.warnings == [f"web is {reason} Continuing with local sources only."]


def test_web_cache_is_per_source_instance():
    backend = ScriptedSearch({"q": [{"title": "t", "url": "u", "snippet": "s"}]})
    web = WebSource(backend)
    assert web.search("q") == web.search("  Q ")
    assert backend.queries == ["q"]
    WebSource(backend).search("q")
    assert backend.queries == ["q", "q"]


def test_real_ddgs_backend_reports_offline_quickly():
    """No network here: the real backend must fail fast with the 'offline' reason, not hang."""
    started = time.perf_counter()
    with pytest.raises(WebSearchError) as info:
        DuckDuckGoBackend(timeout_s=3).search("python", 3)
    assert info.value.reason in {"offline", "failed", "timeout"}
    assert time.perf_counter() - started < 5


def test_rank_fusion_reranker_orders_a_pool_by_a_new_query(embeddings):
    pool = [Document(page_content=t, metadata={"title": ""}) for t in
            ["Bananas are yellow fruit.", "Paris is the capital of France.", "The Seine flows through Paris."]]
    top = RankFusionReranker(embeddings).rerank("Which river runs through Paris?", pool, 2)
    assert top[0].page_content == "The Seine flows through Paris." and len(top) == 2
    assert top[0].metadata["rerank_score"] > top[1].metadata["rerank_score"]


class CountingEmbeddings:
    """Bag-of-letters vectors; counts the passages it embeds."""

    def __init__(self):
        self.embedded = 0

    def _vector(self, text):
        return [text.lower().count(c) + 0.01 for c in "abcdefghijklmnopqrstuvwxyz"]

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)


def test_the_reranker_reuses_a_pools_vectors_and_keeps_its_cache_bounded():
    from langchain_core.documents import Document

    embeddings = CountingEmbeddings()
    reranker = RankFusionReranker(embeddings)
    pool = [Document(page_content=f"passage {i} about rivers and towns {i * 3}", id=f"d{i}") for i in range(6)]
    first = reranker.rerank("rivers", pool, 3)
    assert embeddings.embedded == 6
    assert [d.id for d in reranker.rerank("rivers", pool, 3)] == [d.id for d in first]
    assert embeddings.embedded == 6  # the pool's vectors were cached
    reranker.MAX_VECTORS = 4
    reranker.rerank("towns", [Document(page_content=f"other {i}", id=f"o{i}") for i in range(5)], 2)
    assert len(reranker._vectors) == 4
