"""Collections: embedder checks, deletion, persistence, and the BM25 index kept in step."""

from __future__ import annotations

import os

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


def file_docs(source, sha, texts, of=None):
    """Passages of one ingested file version; ``of`` is its passage count (``None``: an older collection)."""
    out = []
    for i, text in enumerate(texts):
        meta = {"title": source, "source": source, "file_sha256": sha, "position": i}
        if of is not None:
            meta["file_passages"] = of
        out.append(Document(page_content=text, metadata=meta, id=f"{sha}-{i:05d}"))
    return out


def test_first_open_in_a_process_removes_files_an_ingest_left_half_stored(tmp_path, embeddings, monkeypatch):
    import corpora.store as store_module

    collection = CollectionStore(tmp_path, embeddings).create("shelf")
    collection.add(file_docs("whole.txt", "w1", ["Ceres is a dwarf planet.", "Vesta is an asteroid."], of=2))
    collection.add(file_docs("half.txt", "h1", ["Pluto has five moons.", "Charon is the largest."], of=5))
    collection.add(file_docs("old.txt", "o1", ["Eris is far away."]))  # stored before file_passages existed
    (half,) = collection.file_versions("half.txt")
    assert (half.stored, half.expected, half.complete) == (2, 5, False)
    assert collection.file_versions("old.txt")[0].complete
    # Opened again in this process (the ingest may still be running): nothing is removed.
    again = CollectionStore(tmp_path, embeddings).open("shelf")
    assert again.files() == {"whole.txt": 2, "half.txt": 2, "old.txt": 1}
    assert [d.metadata["source"] for d in collection.bm25_search("Pluto moons", 3)][:1] == ["half.txt"]

    monkeypatch.setattr(store_module, "_recovered", set())  # as in a new process
    reopened = CollectionStore(tmp_path, embeddings).open("shelf")
    assert reopened.files() == {"whole.txt": 2, "old.txt": 1} and reopened.count() == 3
    assert reopened.bm25_search("Pluto moons", 3) == []
    assert len(reopened.bm25().ids) == 3 and reopened.file_versions("half.txt") == []


def test_a_version_check_and_deletions_by_version(store):
    collection = store.create("versions")
    collection.add(file_docs("a.txt", "v1", ["Alpha one.", "Alpha two."], of=2))
    collection.add(file_docs("a.txt", "v2", ["Alpha three."], of=1))
    assert sorted((v.sha256, v.stored, v.complete) for v in collection.file_versions("a.txt")) == [
        ("v1", 2, True), ("v2", 1, True)]
    assert [v.source for v in collection.content_versions("v2")] == ["a.txt"]
    assert collection.delete_source("a.txt", keep_sha256="v2") == 2
    assert collection.files() == {"a.txt": 1} and collection.delete_version("a.txt", "v2") == 1
    assert collection.count() == 0 and collection.bm25().ids == []


def test_one_process_may_hold_several_stores_on_one_directory(tmp_path, embeddings):
    first, second = CollectionStore(tmp_path, embeddings), CollectionStore(tmp_path, embeddings)
    first.create("shared").add(docs("Io is a moon of Jupiter."))
    assert second.open("shared").count() == 1
    assert (tmp_path / ".rqa.lock").read_text().strip() == str(os.getpid())
