"""Auto: multi-hop cues, then ambiguity cues, then the nearest hand-labelled questions vote (real MiniLM
embeddings, except where a stub embedder makes the vote exact)."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import Embeddings

from pipeline.routing import Router, ambiguity_cue, cue, labelled_questions, multi_hop_cue


@pytest.fixture(scope="module")
def router(embeddings):
    return Router(embeddings)


@pytest.mark.parametrize("question, method", [
    ("Which board game was published more recently, Pirate's Cove or Catan?", "ircot"),
    ("Where was the director of the film Jaws born?", "ircot"),
    ("Are Tokyo and Osaka in the same country?", "ircot"),
    ("The cathedral that houses the tomb of the first Norman king of England lies on which river today?", "ircot"),
    ("Who played Batman?", "toc"),
    ("what is the capital of peru", "oner"),
])
def test_auto_routing(router, question, method):
    choice = router.choose(question)
    assert choice.method == method and choice.reason


def test_cues_and_votes_respect_the_available_methods(router):
    assert router.choose("Where was the director of the film Jaws born?", {"oner", "toc"}).method in {"oner", "toc"}
    assert router.choose("Who played Batman?", {"oner", "nor"}).method == "oner"
    assert multi_hop_cue("Who played Batman?") is None


def test_the_labelled_file_has_every_label():
    labels = {method for _, method in labelled_questions()}
    assert labels == {"ircot", "toc", "oner"}


@pytest.mark.parametrize("question, says", [
    ("Where did Marie Curie's husband die?", "another's relation"),  # a relation of an entity, then a fact
    ("What nationality is Picasso's father?", "another's relation"),
    ("Who is the paternal grandfather of Louis XIV?", "two steps away"),
    ("Who is the uncle of Queen Elizabeth II?", "two steps away"),
    ("What nationality is the director of film Amelie?", "described through"),
    ("Who married the founder of the Ford Motor Company?", "described through"),
    ("Where was the singer of Hey Jude born?", "described through"),
    ("Where did the director of film Amelie study?", "described through"),  # any fact of a person named by role
    ("Which country the performer of song Hey Jude is from?", "described through"),
    ("What is the place of birth of Marie Curie's husband?", "another's relation"),  # "of" before the name
    ("Who is the father of Empress Wang's husband?", "another's relation"),
])
def test_multi_hop_cues(question, says):
    reason = multi_hop_cue(question)
    assert reason and says in reason


@pytest.mark.parametrize("question", [
    "Who is Barack Obama's wife?",  # one relation of a named entity is one hop
    "What is Germany's capital?",
    "Who is the author of The Hobbit?",
    "Who was the director of the film Casablanca?",  # asking for the role itself
    "What is the name of Barack Obama's wife?",
])
def test_one_relation_is_one_hop(question):
    assert multi_hop_cue(question) is None


@pytest.mark.parametrize("question, words", [
    ("When did the Cubs last make the playoffs?", "last"),
    ("When does the new season of Fargo start?", "the new"),
    ("Who is the current mayor of Paris?", "current"),
    ("who won the tour de france", "won"),
    ("How many times has Italy reached the final?", "How many times"),
    ("Who has the most caps for Wales?", "the most"),
    ("Who sang Yellow Submarine?", "sang"),
    ("Who voiced Aladdin?", "voiced"),
    ("Where was Braveheart filmed?", "filmed"),
    ("Who is Gandalf in The Hobbit?", "Who is Gandalf in "),
    ("Who invented the telescope and what did they see first?", "and what"),
    ("What are the moons of Mars?", "What are"),
])
def test_ambiguity_cues(question, words):
    reason = ambiguity_cue(question)
    assert reason and reason.startswith("it asks") and f'("{words.strip()}")' in reason


@pytest.mark.parametrize("question", [
    "What is the chemical symbol for tin?",
    "Who wrote The Trial?",
    "How many legs does an insect have?",
    "Who founded the record label Motown?",  # "record" only as a record to beat
    "who painted the night watch",
    "Who was the first person to reach the South Pole?",  # "first" alone is no cue: plain questions use it
    "Who directed the film Casablanca?",  # nor are "film" or "song" (they cost plain questions, gained nothing)
])
def test_plain_questions_have_no_cue(question):
    assert cue(question) is None


def test_a_multi_hop_cue_wins_over_an_ambiguity_cue(router):
    question = "Where was the singer of Hey Jude born?"
    assert multi_hop_cue(question) and ambiguity_cue(question)
    assert router.choose(question).method == "ircot"


def test_labelled_questions_with_a_cue_agree_with_their_label():
    assert [(q, m) for q, m in labelled_questions() if cue(q) not in (None, m)] == []


def test_only_labelled_questions_without_a_cue_vote(router):
    assert router.voters and all(cue(q) is None for q, _ in router.voters)
    assert {m for _, m in router.voters} == {"ircot", "toc", "oner"}


class _SameVector(Embeddings):
    """Every text gets the same vector, so every labelled question gets the same vote."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def test_toc_wins_over_a_larger_oner_vote_from_its_share(tmp_path):
    examples = tmp_path / "examples.yaml"
    examples.write_text('toc:\n  - "Where is Springfield?"\noner:\n  - "What is a noun?"\n  - "What is a verb?"\n'
                        'ircot:\n  - "Which is older, Rome or Athens?"\n', encoding="utf-8")
    question = "What is an adverb?"  # ToC holds 1 of the 3 votes: a third
    assert Router(_SameVector(), k=3, examples=examples, toc_share=0.5).choose(question).method == "oner"
    choice = Router(_SameVector(), k=3, examples=examples, toc_share=0.3).choose(question)
    assert choice.method == "toc" and "ToC holds 33%" in choice.reason
