"""Passage windows (``pipeline.windows``): what a window keeps of a passage, and OneR's answer prompt reading the
windows while its answer cites the whole passages."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from pipeline.context import RunContext
from pipeline.windows import GAP, question_weights, window, windows
from tests.fakes import ScriptedLLM, ScriptedRetriever, run_events, settings_with

CLEMENS = Document(
    page_content="William Clemens (1905-1980) was an American film director. He directed many B movies for Warner "
                 "Brothers in the 1930s. His films were mostly mysteries and detective stories, made quickly and cheaply "
                 "on studio back lots. He was born in Saxton, Pennsylvania, to a family of miners. He retired from "
                 "film in 1948 and lived in California.",
    metadata={"title": "William Clemens"})


class _ByTopic(Embeddings):
    """Two-dimensional vectors: sentences about birth point one way, everything else the other."""

    def _vector(self, text: str) -> list[float]:
        birth = any(w in text.lower() for w in ("born", "birth"))
        return [1.0, 0.0] if birth else [0.0, 1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def test_a_passage_within_the_budget_is_left_whole_and_a_zero_budget_leaves_every_passage_whole():
    short = Document(page_content="Emma is a novel by Jane Austen.", metadata={"title": "Emma"})
    assert window(short, question_weights("Who wrote Emma?"), 20) is short
    assert windows("Where was William Clemens born?", [CLEMENS, short], 0) == [CLEMENS, short]


def test_a_window_keeps_the_first_sentence_then_the_sentences_sharing_the_questions_terms_in_order():
    cut = window(CLEMENS, question_weights("Where was William Clemens born in Pennsylvania?"), 25).page_content
    assert cut == ("William Clemens (1905-1980) was an American film director. " + GAP +
                   " He was born in Saxton, Pennsylvania, to a family of miners. " + GAP)
    assert len(cut.split()) <= 25 + 2  # the gap marks are not words of the passage
    assert window(CLEMENS, {}, 25).metadata == CLEMENS.metadata


def test_with_an_embedder_the_sentence_closest_in_meaning_wins_over_shared_words():
    # "place of birth" shares no word with "born in"; "film" and "director" share two with other sentences.
    question = "What is the place of birth of the film director William Clemens?"
    lexical = windows(question, [CLEMENS], 25)[0].page_content
    by_meaning = windows(question, [CLEMENS], 25, _ByTopic())[0].page_content
    assert "Saxton" not in lexical and "Saxton" in by_meaning
    assert by_meaning.startswith("William Clemens (1905-1980) was an American film director.")


def test_a_first_sentence_longer_than_the_budget_is_cut_to_its_first_words():
    long = Document(page_content=" ".join(["word"] * 40) + ". Second sentence.", metadata={})
    assert window(long, {}, 10).page_content == " ".join(["word"] * 10) + f" {GAP}"


def test_oners_prompt_reads_the_windows_and_its_answer_cites_the_whole_passages():
    llm = ScriptedLLM(["Saxton, Pennsylvania [1]."])
    retriever = ScriptedRetriever(lambda query, k: [CLEMENS])
    ctx = RunContext(llm=llm, retriever=retriever, embeddings=_ByTopic(),
                     settings=settings_with(passage_window=25))
    events = run_events("oner", "What is the place of birth of the film director William Clemens?", ctx)
    prompt = llm.calls[0][0][-1]["content"]
    assert "He was born in Saxton" in prompt and "He retired from film" not in prompt and GAP in prompt
    answer = events[-1].payload
    assert answer.answer.startswith("Saxton") and answer.citations == [1]
    assert "He retired from film in 1948" in answer.passages[0].text

    whole = ScriptedLLM(["Saxton, Pennsylvania [1]."])
    run_events("oner", "Where was William Clemens born?", RunContext(llm=whole, retriever=retriever))
    assert "He retired from film in 1948" in whole.calls[0][0][-1]["content"]


def test_kgps_reader_reads_windows_when_its_reader_window_is_set():
    retriever = ScriptedRetriever(lambda query, k: [CLEMENS])
    question = "What is the place of birth of the film director William Clemens?"
    for budget, shown in ((25, False), (0, True)):
        llm = ScriptedLLM(["Saxton, Pennsylvania [1]."])
        ctx = RunContext(llm=llm, retriever=retriever, embeddings=_ByTopic(),
                         settings=settings_with(kgp={"reader_window": budget}))
        events = run_events("kgp", question, ctx)
        assert ("He retired from film in 1948" in llm.calls[-1][0][-1]["content"]) is shown
        assert "He retired from film in 1948" in events[-1].payload.passages[0].text
