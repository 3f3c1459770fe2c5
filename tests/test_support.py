"""The support check that lets a method say "the collections do not answer this" instead of guessing: the key
terms it weighs, the coverage it computes, and the answer a run gives when the passages miss the question (no
model call, cited closest passages, ``abstained`` set) or when the model itself says so."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from pipeline.context import NO_SOURCES, RunContext
from pipeline.events import EventKind, Status
from pipeline.fold import RunState
from pipeline.support import (abstention, check_support, cite_by_terms, key_terms, says_unanswerable,
                              unsourced_names)
from tests.fakes import ScriptedLLM, ScriptedRetriever, run_events, settings_with
from ui.answer import answer_message

WEASLEY = "Who played the Weasley brothers in Harry Potter?"
VOLDEMORT = Document(page_content="Lord Voldemort is the main antagonist of the series, played by Ralph Fiennes.",
                     metadata={"title": "Lord Voldemort"}, id="v")
WEASLEYS = Document(page_content="James and Oliver Phelps played Fred and George Weasley in the Harry Potter films.",
                    metadata={"title": "Harry Potter (film series)"}, id="w")


def test_key_terms_drop_question_words_and_weigh_names_double():
    terms = dict(key_terms(WEASLEY))
    assert "Who" not in terms and "the" not in terms and "in" not in terms
    assert terms == {"played": 1.0, "Weasley": 2.0, "brothers": 1.0, "Harry": 2.0, "Potter": 2.0}


def test_coverage_counts_stems_in_titles_and_text():
    good = check_support(WEASLEY, [WEASLEYS], 0.5)
    assert good.supported and good.missing == ["brothers"] and good.coverage == pytest.approx(7 / 8)
    bad = check_support(WEASLEY, [VOLDEMORT], 0.5)
    assert not bad.supported and bad.coverage == pytest.approx(1 / 8)
    assert bad.missing == ["Weasley", "brothers", "Harry", "Potter"]
    assert not check_support(WEASLEY, [], 0.5).supported
    assert check_support("Who?", [VOLDEMORT], 0.5).supported  # nothing to check


def test_terms_count_in_one_passage_not_spread_over_several():
    capital = Document(page_content="Tito visited the capital in 1960.", metadata={"title": "Josip Broz Tito"})
    chile = Document(page_content="Buttice coached clubs in Chile.", metadata={"title": "Carlos Buttice"})
    apart = check_support("What is the capital of Chile?", [capital, chile], 0.7)
    assert not apart.supported and apart.coverage == pytest.approx(2 / 3, abs=1e-4) and apart.missing == []
    assert "no passage found is about all of it" in abstention(apart, [capital, chile])
    together = Document(page_content="Santiago is the capital of Chile.", metadata={"title": "Santiago"})
    assert check_support("What is the capital of Chile?", [capital, together], 0.7).supported


class _Cosine:
    """Embeddings whose cosine between the question and a passage is set per passage text."""

    def __init__(self, cosines: dict[str, float]) -> None:
        self.cosines, self.calls = cosines, 0

    def embed_query(self, text):
        self.calls += 1
        return [1.0, 0.0]

    def embed_documents(self, texts):
        cosines = [next(c for key, c in self.cosines.items() if key in t) for t in texts]
        return [[c, (1 - c * c) ** 0.5] for c in cosines]


def test_a_passage_close_in_meaning_supports_a_question_worded_otherwise():
    question = "Who was England's prime minister during WW1?"
    passage = Document(page_content="Lloyd George led the British government in the First World War.",
                       metadata={"title": "David Lloyd George"})
    assert not check_support(question, [passage], 0.7).supported  # "England's" and "WW1" are in no passage
    close = check_support(question, [passage], 0.7, _Cosine({"Lloyd George": 0.55}), 0.45)
    assert close.supported and close.similarity == pytest.approx(0.55)
    far = check_support(question, [passage], 0.7, _Cosine({"Lloyd George": 0.40}), 0.45)
    assert not far.supported and far.similarity == pytest.approx(0.40)
    assert not check_support(question, [passage], 0.7, _Cosine({"Lloyd George": 0.99}), 1.0).supported  # off
    embedder = _Cosine({"": 0.0})
    assert check_support(WEASLEY, [WEASLEYS], 0.7, embedder, 0.45).similarity is None
    assert embedder.calls == 0  # the terms sufficed: nothing was embedded


def test_abstention_names_what_is_missing_and_cites_what_was_found():
    text = abstention(check_support(WEASLEY, [VOLDEMORT], 0.5), [VOLDEMORT])
    assert text.startswith("The selected sources do not answer this question")
    assert "“Weasley”" in text and "Lord Voldemort [1]" in text


def test_abstention_names_a_passage_without_title_or_text():
    untitled = [Document(page_content="James Phelps played Fred Weasley.", metadata={}), Document(page_content=" ")]
    text = abstention(check_support(WEASLEY, untitled, 0.9), untitled)
    assert "James Phelps played Fred Weasley. [1]" in text
    assert "an untitled, empty passage [2]" in text


@pytest.mark.parametrize("answer, unanswerable", [
    ("The passages do not mention who played the Weasley brothers.", True),
    ("There is no information about this in the sources.", True),
    ("Unknown", True),
    ("James and Oliver Phelps played Fred and George Weasley [1].", False),
    ("He did not contain his anger, the passages say [2].", False),
])
def test_the_model_saying_so_counts_as_an_abstention(answer, unanswerable):
    assert says_unanswerable(answer) is unanswerable


def _answer(method, passages, reply="James and Oliver Phelps [1].", **settings):
    llm = ScriptedLLM(lambda messages, options: reply)
    ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda query, k: passages[:k]),
                     settings=settings_with(**settings))
    events = run_events(method, WEASLEY, ctx)
    done = [e for e in events if e.kind == EventKind.ANSWER and e.status == Status.DONE]
    assert len(done) == 1
    return done[0], llm


@pytest.mark.parametrize("method", ["oner", "ircot"])
def test_a_method_whose_passages_miss_the_question_abstains_without_a_model_answer(method):
    answer, llm = _answer(method, [VOLDEMORT], reply="Ron Weasley and Harry Potter [1].")
    assert answer.payload.abstained and answer.payload.support == pytest.approx(1 / 8)
    assert "do not answer this question" in answer.payload.answer and "Ron" not in answer.payload.answer
    assert answer.payload.citations == [1]
    answering = [m for m, _ in llm.calls if not m[0]["content"].startswith("You answer questions that need facts")]
    assert answering == []  # IRCoT's reasoning steps ran; no call wrote an answer


def test_a_run_answers_a_question_worded_unlike_its_passage_when_the_passage_is_close_in_meaning(embeddings):
    question = "Who was England's prime minister during WW1?"
    passage = Document(page_content="David Lloyd George was Prime Minister of the United Kingdom during the "
                       "later years of the First World War.", metadata={"title": "David Lloyd George"}, id="g")
    for given, abstained in [(None, True), (embeddings, False)]:
        ctx = RunContext(llm=ScriptedLLM(lambda messages, options: "David Lloyd George [1]."), embeddings=given,
                         retriever=ScriptedRetriever(lambda query, k: [passage]), settings=settings_with())
        answer = [e for e in run_events("oner", question, ctx) if e.kind == EventKind.ANSWER][-1]
        assert answer.payload.abstained is abstained


def test_supported_passages_are_answered_and_the_threshold_is_a_setting():
    answer, _ = _answer("oner", [WEASLEYS])
    assert not answer.payload.abstained and answer.payload.answer.startswith("James and Oliver Phelps")
    answer, _ = _answer("oner", [VOLDEMORT], min_support=0)
    assert not answer.payload.abstained and answer.payload.answer.startswith("James")


@pytest.mark.parametrize("method", ["oner", "ircot"])
def test_with_no_source_selected_the_answer_says_so_not_that_the_sources_lack_it(method):
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: "Ron Weasley [1]."), retriever=None,
                     settings=settings_with())
    answer = [e for e in run_events(method, "Who founded Quibbleton?", ctx) if e.kind == EventKind.ANSWER][-1]
    assert answer.payload.abstained and answer.payload.answer == NO_SOURCES


def test_nor_has_no_passages_to_check():
    answer, _ = _answer("nor", [], reply="I do not know.")
    assert not answer.payload.abstained and answer.payload.answer == "I do not know."


def test_a_model_reply_saying_the_passages_lack_the_answer_is_marked():
    answer, _ = _answer("oner", [WEASLEYS], reply="The passages do not mention the Weasley brothers.")
    assert answer.payload.abstained


def test_restatements_are_checked_by_terms_first_and_the_passages_embedded_once():
    from pipeline.support import best_support

    class Counting(_Cosine):
        def __init__(self, cosines):
            super().__init__(cosines)
            self.documents = 0

        def embed_documents(self, texts):
            self.documents += 1
            return super().embed_documents(texts)

    passage = Document(page_content="Lloyd George led the British government in the First World War.",
                       metadata={"title": "David Lloyd George"})
    questions = ["Who was England's prime minister during WW1?", "Who was premier in the Great War?"]
    embedder = Counting({"Lloyd George": 0.5})
    support = best_support(questions, [passage], 0.7, embedder, 0.45)
    assert support.supported and support.similarity == pytest.approx(0.5)
    assert embedder.documents == 1 and embedder.calls == 2  # the passages once, each question once
    restated = "Who led the British government in the First World War?"  # the terms suffice: nothing embedded
    assert best_support([questions[0], restated], [passage], 0.7, embedder, 0.45).similarity is None
    assert embedder.documents == 1


MONA = Document(page_content="Mona Hopton Bell (1896-1985) was an American painter of portraits.",
                metadata={"title": "Mona Hopton Bell"}, id="m")


def test_names_and_numbers_no_passage_mentions_are_found():
    assert unsourced_names("Leonardo da Vinci painted the Mona Lisa in 1503 [1].", [MONA],
                           "Who painted the Mona Lisa?") == ["Leonardo", "Vinci", "1503"]
    assert unsourced_names("Mona Hopton Bell painted portraits until 1985 [1].", [MONA]) == []
    # names from the question, stems of the passages' words, stop words and citations are not counted
    assert unsourced_names("The Weasleys were played by the Phelps twins [2].", [WEASLEYS], WEASLEY) == []
    assert unsourced_names("It was Ron.", [], "Who was it, Ron or Harry?") == []


def test_an_answer_naming_what_no_passage_holds_gets_a_warning():
    reply = "Leonardo da Vinci painted the Mona Lisa [1]."
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: reply),
                     retriever=ScriptedRetriever(lambda query, k: [MONA]), settings=settings_with(min_support=0))
    events = run_events("oner", "Who painted the Mona Lisa?", ctx)
    warnings = [e.payload.message for e in events if e.kind == EventKind.WARNING]
    assert warnings == ["The answer names “Leonardo”, “Vinci”, which no passage it was given mentions: "
                        "that part may come from the model's own knowledge, not from your sources."]
    assert events[-1].payload.answer == reply  # the answer itself is kept
    assert events[-1].payload.unsourced == ["Leonardo", "Vinci"]


@pytest.mark.parametrize("method, passages, reply", [
    ("oner", [WEASLEYS], "James and Oliver Phelps [1]."),  # sourced
    ("oner", [WEASLEYS], "The passages do not mention Fred Weasley's actor."),  # an abstention
    ("nor", [], "Ron Weasley."),  # no passages: the model's own knowledge by design
])
def test_sourced_answers_abstentions_and_nor_get_no_such_warning(method, passages, reply):
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: reply),
                     retriever=ScriptedRetriever(lambda query, k: passages[:k]), settings=settings_with())
    events = run_events(method, WEASLEY, ctx)
    assert not [e for e in events if e.kind == EventKind.WARNING]


COUNTERPARTS = Document(page_content='"Counterparts" is a song by the Canadian rock band Rush, released in 1993.',
                        metadata={"title": "Counterparts (song)"}, id="c")
PEART = Document(page_content="Neil Peart, the drummer of Rush, was inducted into the Modern Drummer Hall of Fame "
                              "in 1983.", metadata={"title": "Neil Peart"}, id="p")


def test_an_uncited_answer_is_cited_where_passages_hold_most_of_a_sentences_terms():
    passages = [MONA, COUNTERPARTS, PEART]
    assert cite_by_terms("Rush released Counterparts in 1993. Neil Peart was its drummer.", passages) == \
        "Rush released Counterparts in 1993 [2]. Neil Peart was its drummer [3]."
    # one sentence held by two passages cites both, the one holding more first
    assert cite_by_terms("Rush released Counterparts in 1993, and Neil Peart entered the Modern Drummer Hall of "
                         "Fame in 1983.", passages).endswith("in 1983 [3] [2].")
    # a sentence no passage holds stays uncited; the mark goes before closing punctuation and quotes
    assert cite_by_terms("Paris is the capital of France.\nHe said \"Rush, 1993!\"", passages) == \
        "Paris is the capital of France.\nHe said \"Rush, 1993 [2]!\""
    assert cite_by_terms("Rush.", []) == "Rush."


def test_a_run_whose_model_cites_nothing_gets_the_apps_citations_with_a_warning():
    question = "Which Canadian band released Counterparts, and who was its drummer?"
    reply = "Rush released Counterparts in 1993. Neil Peart was its drummer."
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: reply),
                     retriever=ScriptedRetriever(lambda query, k: [COUNTERPARTS, PEART][:k]),
                     settings=settings_with())
    events = run_events("oner", question, ctx)
    assert [e.title for e in events if e.kind == EventKind.WARNING] == ["Citations added"]
    answer = events[-1].payload
    assert answer.answer == "Rush released Counterparts in 1993 [1]. Neil Peart was its drummer [2]."
    assert answer.citations == [1, 2]
    # the model's own citations are kept as they are, and an answer no passage holds is not cited
    for reply, expected in [("Rush [2].", [2]), ("Tomatoes grow in Spain.", [])]:
        ctx = RunContext(llm=ScriptedLLM(lambda messages, options: reply),
                         retriever=ScriptedRetriever(lambda query, k: [COUNTERPARTS, PEART][:k]),
                         settings=settings_with(min_support=0))
        events = run_events("oner", question, ctx)
        assert events[-1].payload.answer == reply and events[-1].payload.citations == expected
        assert "Citations added" not in [e.title for e in events if e.kind == EventKind.WARNING]


def test_a_number_with_thousands_separators_is_checked_whole():
    paris = Document(page_content="The 2012 census counted 2,240,621 people in Paris.", metadata={"title": "Paris"})
    assert set(unsourced_names("In 2023 Paris had 2,141,000 people [1].", [paris])) == {"2023", "2,141,000"}
    assert unsourced_names("Paris had 2,240,621 people [1].", [paris]) == []
    assert unsourced_names("Paris had 2240621 people [1].", [paris]) == []  # the same number, written without commas


def test_a_citation_of_a_passage_the_answer_did_not_read_is_removed_with_a_warning():
    question = "Which Canadian band released Counterparts, and who was its drummer?"
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: "Rush released it [1]. Its drummer was Neil Peart [2]."),
                     retriever=ScriptedRetriever(lambda query, k: [COUNTERPARTS]), settings=settings_with())
    events = run_events("oner", question, ctx)
    answer = events[-1].payload
    assert answer.answer == "Rush released it [1]. Its drummer was Neil Peart."
    assert answer.citations == [1]
    warnings = [e.payload.message for e in events if e.kind == EventKind.WARNING]
    assert "The model cited [2], which is no passage of this answer (it read 1); that mark was removed." in warnings


def test_with_no_source_selected_the_chat_says_so_once():
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: "Ron Weasley [1]."), retriever=None,
                     settings=settings_with())
    state = RunState.of(run_events("oner", "Who founded Quibbleton?", ctx))
    assert answer_message(state, "r").count("No sources are selected") == 1  # the answer, not again as its caveat
