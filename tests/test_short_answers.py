"""A short answer that is a bare yes or no to a question asking for a name, place, date or number ("Who is the
spouse of ...?" → "no") is asked for once more, the model told why, with a warning; a second yes or no gives an
abstention, never the yes or no (``answering.stream_answer``, ``Settings.ask_again_yes_no``)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from pipeline.context import RunContext
from pipeline.events import EventKind
from pipeline.text import asks_for_phrase, is_yes_no
from tests.fakes import ScriptedLLM, ScriptedRetriever, run_events, settings_with

BETTANY = Document(page_content="Paul Bettany played Vision in Avengers: Age of Ultron. He is married to Jennifer "
                                "Connelly.", metadata={"title": "Paul Bettany"}, id="b")
SPOUSE = "Who is the spouse of the actor that plays Vision in Avengers: Age of Ultron?"
TITLE = "A yes or no to a question asking for a name"


@pytest.mark.parametrize("question, phrase", [
    (SPOUSE, True),
    ("In the King's Speech, who played the King of England in 1950?", True),  # a clause before the question word
    ("Scott Parkin has been a critic of a corporation that operates in how many countries?", True),
    ("Is Paul Bettany married to Jennifer Connelly?", False),
    ("Were both Paul Bettany and Jennifer Connelly born in London?", False),
    ("Did the director of Kiss and Tell die before 1990, and where?", False),  # begins as a yes / no question
    ("Is Nanda Devi or Broad Peak higher?", False),  # a choice put as a yes / no question is left alone
    ("Common Sense was an important work because?", False),  # no question word: nothing is assumed
])
def test_a_question_asks_for_a_phrase_when_it_holds_a_question_word_and_does_not_begin_with_a_verb(question,
                                                                                                    phrase):
    assert asks_for_phrase(question) is phrase


def test_yes_no_is_a_bare_yes_or_no():
    assert is_yes_no("No.") and is_yes_no(" yes") and not is_yes_no("No one") and not is_yes_no("Norway")


def _run(question: str, replies: list[str], **settings):
    """OneR with short answers over Bettany's passage; the model replies ``replies`` in turn (the last repeated)."""
    seen = []

    def reply(messages, options):
        seen.append(messages)
        return replies[min(len(seen), len(replies)) - 1]

    ctx = RunContext(llm=ScriptedLLM(reply), retriever=ScriptedRetriever(lambda query, k: [BETTANY][:k]),
                     settings=settings_with(answer_style="short", min_support=0, **settings))
    return run_events("oner", question, ctx), seen


def test_a_no_to_a_who_question_is_asked_again_in_the_same_chat_and_the_second_reply_is_the_answer():
    events, seen = _run(SPOUSE, ["no", "Jennifer Connelly"])
    answer = events[-1]
    assert answer.kind == EventKind.ANSWER and answer.payload.answer == "Jennifer Connelly"
    assert not answer.payload.abstained and answer.llm_calls == 2
    warnings = [e for e in events if e.kind == EventKind.WARNING]
    assert [w.title for w in warnings] == [TITLE]
    assert "“no”" in warnings[0].payload.message and "“Jennifer Connelly”" in warnings[0].payload.message
    again = seen[1]
    assert again[:-2] == seen[0]  # the same chat, then the model's reply and the follow-up
    assert again[-2] == {"role": "assistant", "content": "no"}
    assert again[-1]["role"] == "user" and '"no" does not answer this question' in again[-1]["content"]


@pytest.mark.parametrize("second", ["No.", "not stated", "The passages do not say."])
def test_a_second_yes_or_no_or_not_stated_gives_an_abstention_not_the_yes_or_no(second):
    events, seen = _run(SPOUSE, ["no", second])
    payload = events[-1].payload
    assert len(seen) == 2 and payload.abstained
    assert payload.answer == "The sources read do not state the answer (the model replied “no”, which does not " \
                             "answer it)."
    assert [e.title for e in events if e.kind == EventKind.WARNING] == [TITLE]


def test_a_yes_or_no_question_keeps_its_yes_or_no_and_the_setting_off_keeps_any():
    events, seen = _run("Is Paul Bettany married to Jennifer Connelly?", ["yes", "WRONG"])
    assert events[-1].payload.answer == "yes" and len(seen) == 1
    assert not [e for e in events if e.kind == EventKind.WARNING]
    events, seen = _run(SPOUSE, ["no", "WRONG"], ask_again_yes_no=False)
    assert events[-1].payload.answer == "no" and len(seen) == 1


def test_long_answers_are_not_asked_again():
    ctx = RunContext(llm=ScriptedLLM(lambda messages, options: "No."),
                     retriever=ScriptedRetriever(lambda query, k: [BETTANY][:k]), settings=settings_with(min_support=0))
    events = run_events("oner", SPOUSE, ctx)
    assert not [e for e in events if e.kind == EventKind.WARNING and e.title == TITLE]
