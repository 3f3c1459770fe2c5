"""Collections: embedder checks, deletion, persistence, and the BM25 index kept in step."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from corpora.store import CollectionError, CollectionStore


def docs(*texts, source="a.txt"):
    return [Document(page_content=t, metadata={"title": t.split()[0], "source": source}, id=f"{source}-{i}")
            for i, t in enumerate(texts)]


def test_collection_refuses_another_embedder(tmp_path, embeddings):
    CollectionStore(tmp_path, embeddings).create("books").add(docs("Dune is a novel by Frank Herbert."))

    class OtherEmbedder:
        name, dimension = "other-model", 768

    with pytest.raises(CollectionError, match="built with the embedder 'all-MiniLM-L6-v2' \\(384-d\\)"):
        CollectionStore(tmp_path, OtherEmbedder()).open("books")


def test_invalid_and_unknown_names(store):
    with pytest.raises(CollectionError, match="not a valid collection name"):
        store.create("../x")
    with pytest.raises(CollectionError, match="There is no collection 'nope'"):
        store.open("nope")


def test_delete_file_and_collection_keep_bm25_in_step(store):
    collection = store.create("library")
    collection.add(docs("Dune is a novel by Frank Herbert.", source="dune.txt"))
    collection.add(docs("Emma is a novel by Jane Austen.", source="emma.txt"))
    assert [d.metadata["source"] for d in collection.bm25_search("Austen", 5)] == ["emma.txt"]
    assert collection.delete_source("emma.txt") == 1
    assert collection.bm25_search("Austen", 5) == [] and collection.files() == {"dune.txt": 1}
    store.delete("library")
    assert "library" not in store.names()
    with pytest.raises(CollectionError):
        store.delete("library")


def test_reopened_store_reuses_or_rebuilds_bm25(tmp_path, embeddings):
    first = CollectionStore(tmp_path, embeddings)
    first.create("notes").add(docs("Mercury is the closest planet to the Sun."))
    reopened = CollectionStore(tmp_path, embeddings).open("notes")
    assert reopened.bm25().fingerprint == first.open("notes").bm25().fingerprint
    # A change made behind the index's back (another client) is noticed by its fingerprint.
    first.open("notes")._raw.add(ids=["x"], documents=["Venus is the hottest planet."], embeddings=[[0.0] * 384],
                                 metadatas=[{"title": "Venus", "source": "v.txt"}])
    fresh = CollectionStore(tmp_path, embeddings).open("notes")
    assert [d.id for d in fresh.bm25_search("hottest", 2)] == ["x"]


def test_dense_search_and_summaries(store):
    collection = store.create("planets")
    collection.add(docs("Mars has two moons, Phobos and Deimos.", "Saturn has rings made of ice."))
    assert collection.dense_search("moons of the red planet", 1)[0].metadata["collection"] == "planets"
    assert store.summaries()[0].passages == 2
