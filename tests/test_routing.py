"""Auto: multi-hop cues first, then the nearest hand-labelled questions vote (real MiniLM embeddings)."""

from __future__ import annotations

import pytest

from pipeline.routing import Router, labelled_questions, multi_hop_cue


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
