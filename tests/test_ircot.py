"""IRCoT pinned with the scripted LLM and a scripted retriever: first-sentence truncation, query cleaning, the
"answer is" exit, the step limit, the passage cap, de-duplication, the chain of events and both readers."""

from __future__ import annotations

import itertools

import pytest
from langchain_core.documents import Document

from pipeline.answering import NO_ANSWER
from pipeline.context import RunContext
from pipeline.events import EventKind, Status
from pipeline.methods.ircot.chain import clean_query, extract_answer
from pipeline.retrieval import HybridRetriever
from pipeline.text import first_sentence, has_complete_sentence
from pipeline.web import WebSource
from tests.fakes import ScriptedLLM, ScriptedRetriever, ScriptedSearch, run_events, settings_with

# The sentence chain's tests pin its mode: by default (auto) this question, reached through its author, goes hop
# by hop (tests/test_hops.py).
QUESTION = "In which city was the author of The Hobbit born?"


def passage(n: int, text: str | None = None) -> Document:
    return Document(page_content=text or f"Passage number {n} tells of fact {n} about topic {n * 7}.",
                    metadata={"title": f"Doc {n}"}, id=f"p{n}")


def fresh_passages():
    """A retriever giving new, distinct passages for every query."""
    counter = itertools.count(1)
    return ScriptedRetriever(lambda query, k: [passage(next(counter)) for _ in range(k)])


def reasoning_llm(sentences: list[str], answer: str = "Bloemfontein"):
    """Replies ``sentences`` to reasoning calls in turn, then ``answer`` to the reader."""
    queue = iter(sentences)

    def reply(messages, options):
        if messages[0]["content"].startswith("You answer questions that need facts"):
            return next(queue)
        return answer
    return ScriptedLLM(reply)


def run(llm, retriever, **ircot):
    # The scripted passages do not mention the question, so the support check (tested on its own) is off.
    ctx = RunContext(llm=llm, retriever=retriever,
                     settings=settings_with(answer_style="short", min_support=0, ircot={"mode": "sentences", **ircot}))
    return run_events("ircot", QUESTION, ctx)


def hops(events):
    return [e for e in events if e.kind == EventKind.HOP and e.status == Status.DONE]


def answer_event(events):
    done = [e for e in events if e.kind == EventKind.ANSWER and e.status == Status.DONE]
    assert len(done) == 1, [e.payload.message for e in events if e.kind == EventKind.ERROR]
    return done[0]


@pytest.mark.parametrize("text, first", [
    ("The Hobbit was written by J. R. R. Tolkien [1]. He was born in 1892.", "The Hobbit was written by J. R. R. Tolkien [1]."),
    ("He moved to St. Louis in 1990. Then he left.", "He moved to St. Louis in 1990."),
    ("It cost 2.5 million dollars. Then", "It cost 2.5 million dollars."),
    ("Tolkien was born in 1892.[3] Next", "Tolkien was born in 1892.[3]"),
    ("So the answer is: no. The University", "So the answer is: no."),
    ("first line\nsecond line.", "first line"),
    ("no sentence end", "no sentence end"),
    ("   ", ""),
])
def test_first_sentence(text, first):
    assert first_sentence(text) == first


def test_generation_stops_only_once_a_sentence_is_complete():
    assert not has_complete_sentence("It cost 2.")  # may still become 2.5
    assert has_complete_sentence("It cost 2. ")
    assert not has_complete_sentence("Written by J. ")
    assert has_complete_sentence("Written by J. R. R. Tolkien [1]. He")


@pytest.mark.parametrize("sentence, query", [
    ("J. R. R. Tolkien was born in Bloemfontein [3].", "J. R. R. Tolkien was born in Bloemfontein"),
    ("So Tolkien was born in Bloemfontein.", None),
    ("Thus, the city is Bloemfontein [2].", None),
    ("Therefore the answer is Leeds.", None),
    ("The answer is: Leeds.", None),
    ("", None),
    ("[2].", None),
])
def test_query_cleaning(sentence, query):
    assert clean_query(sentence) == query


@pytest.mark.parametrize("text, answer", [
    ("So the answer is: Bloemfontein [3].", "Bloemfontein"),
    ("Thus the answer is \"Leeds\".\nMore text", "Leeds"),
    ("I do not know.", None),
])
def test_answer_extraction(text, answer):
    assert extract_answer(text) == answer


def test_only_the_first_sentence_is_kept_and_becomes_the_query():
    llm = reasoning_llm(["The Hobbit was written by J. R. R. Tolkien [1]. Tolkien was born in Bloemfontein [3].",
                         "So the answer is: Bloemfontein."])
    retriever = fresh_passages()
    events = run(llm, retriever, k=2)
    first = hops(events)[0]
    assert first.payload.sentence == "The Hobbit was written by J. R. R. Tolkien [1]."
    assert first.payload.query == "The Hobbit was written by J. R. R. Tolkien"
    assert first.payload.step == 1 and [p.number for p in first.payload.passages] == [3, 4]
    assert retriever.queries[0] == (QUESTION, 2)
    assert retriever.queries[1][0] == "The Hobbit was written by J. R. R. Tolkien"
    # generation was cut once the first sentence was complete, not run to the end of the reply
    assert llm.calls[1][1].until is not None
    assert first.completion_tokens < len("The Hobbit was written by J. R. R. Tolkien [1]. Tolkien was born".split())
    # the next reasoning call sees the kept sentence only
    assert "Reasoning so far: The Hobbit was written by J. R. R. Tolkien [1].\n" in llm.calls[1][0][-1]["content"]


def test_answer_is_ends_the_loop_and_the_cot_reader_uses_it():
    llm = reasoning_llm(["Tolkien wrote The Hobbit [1].", "So the answer is: Bloemfontein [3].", "never asked"])
    events = run(llm, fresh_passages(), reader="cot")
    assert [h.payload.stop for h in hops(events)] == ["", "The reasoning reached an answer."]
    answer = answer_event(events)
    assert answer.payload.answer == "Bloemfontein" and answer.llm_calls == 0
    assert answer.payload.extras.reader == "cot" and answer.payload.extras.short_answer == "Bloemfontein"
    assert len(llm.calls) == 2  # two reasoning steps, no reader call


def test_concluding_sentences_do_not_retrieve_but_the_loop_goes_on():
    llm = reasoning_llm(["Thus Tolkien matters.", "Tolkien was born in Bloemfontein [2].", "So the answer is: X."])
    retriever = fresh_passages()
    events = run(llm, retriever)
    steps = hops(events)
    assert steps[0].payload.query is None and steps[0].payload.passages == []
    assert [q for q, _ in retriever.queries] == [QUESTION, "Tolkien was born in Bloemfontein"]
    assert len(steps) == 3


def test_step_limit():
    llm = reasoning_llm([f"Fact number {i} is needed." for i in range(20)])
    events = run(llm, fresh_passages(), max_steps=3, max_passages=30)
    assert len(hops(events)) == 3
    assert len(llm.calls) == 4  # three steps and the reader
    assert answer_event(events).payload.answer == "Bloemfontein"


def test_passages_are_capped():
    llm = reasoning_llm([f"Fact number {i} is needed." for i in range(20)])
    retriever = fresh_passages()
    events = run(llm, retriever, k=4, max_passages=10, max_steps=5, reader_passages=0)  # 0: the reader reads all
    steps = hops(events)
    assert [len(h.payload.passages) for h in steps] == [4, 2, 0, 0, 0]
    assert [h.payload.pool_size for h in steps] == [8, 10, 10, 10, 10]
    assert "No retrieval" in steps[2].payload.note
    assert len(retriever.queries) == 3  # the question and the two steps that still had room
    reader_prompt = llm.calls[-1][0][-1]["content"]
    assert "\n[10] Doc" in reader_prompt and "[11]" not in reader_prompt


def test_duplicates_and_near_duplicates_are_dropped():
    first = [passage(1, "Tolkien was born in Bloemfontein in the Orange Free State in 1892 to English parents."),
             passage(2)]
    near_copy = Document(page_content="Tolkien was born in Bloemfontein, in the Orange Free State, in 1892 to "
                         "English parents.", metadata={"title": "Copy"}, id="other-id")
    later = [first[1], near_copy, passage(3), passage(4), passage(5)]
    retriever = ScriptedRetriever(lambda query, k: first if query == QUESTION else later)
    llm = reasoning_llm(["Tolkien was born somewhere.", "So the answer is: Bloemfontein."])
    events = run(llm, retriever, k=2)
    step = hops(events)[0]
    assert [p.id for p in step.payload.passages] == ["p3", "p4"]  # K new ones after dropping the copies
    assert step.payload.duplicates == 2
    assert retriever.queries[1] == ("Tolkien was born somewhere", 4)  # asked for K more than it holds


def test_events_form_a_chain_and_the_reader_answers_from_the_best_collected_passages():
    class FirstN:
        name = "first"

        def rerank(self, query, documents, top_k):
            return documents[:top_k]

    llm = reasoning_llm(["Tolkien wrote The Hobbit [1].", "Tolkien was born in Bloemfontein [5].",
                         "So the answer is: Bloemfontein."])
    ctx = RunContext(llm=llm, retriever=fresh_passages(),
                     settings=settings_with(answer_style="short", min_support=0,
                                            ircot={"mode": "sentences", "k": 3, "reader_passages": 4}),
                     reranker=FirstN())
    events = run_events("ircot", QUESTION, ctx)
    root = next(e for e in events if e.kind == EventKind.RETRIEVE)
    steps = hops(events)
    assert [h.parent_id for h in steps] == [root.id, steps[0].id, steps[1].id]
    answer = answer_event(events)
    assert answer.parent_id == steps[-1].id
    assert len(answer.payload.passages) == 4 and len(answer.payload.extras.collected) == 9
    assert answer.payload.extras.reasoning[-1] == "So the answer is: Bloemfontein."
    assert answer.payload.extras.reader == "direct"
    assert sum(e.llm_calls for e in events) == 4


def test_reader_passages_zero_gives_the_direct_reader_every_collected_passage():
    class Reverse:
        name = "reverse"

        def __init__(self):
            self.calls = 0

        def rerank(self, query, documents, top_k):
            self.calls += 1
            return list(reversed(documents))[:top_k]

    llm = reasoning_llm(["Tolkien wrote The Hobbit [1].", "Tolkien was born in Bloemfontein [5].",
                         "So the answer is: Bloemfontein."])
    reranker = Reverse()
    ctx = RunContext(llm=llm, retriever=fresh_passages(), reranker=reranker,
                     settings=settings_with(answer_style="short", ircot={"mode": "sentences", "k": 3, "reader_passages": 0}))
    answer = answer_event(run_events("ircot", QUESTION, ctx))
    assert reranker.calls == 0  # nothing to choose: the reader reads the whole pool, in collection order
    assert [p.id for p in answer.payload.passages] == [p.id for p in answer.payload.extras.collected]
    assert len(answer.payload.passages) == 9 and [p.number for p in answer.payload.passages] == list(range(1, 10))
    assert "\n[9] Doc" in llm.calls[-1][0][-1]["content"]


def test_cot_reader_concludes_a_chain_cut_by_the_step_limit():
    llm = reasoning_llm(["Tolkien wrote The Hobbit [1].", "Tolkien was born in Bloemfontein [2]. So the answer "
                         "is: Bloemfontein."])
    events = run(llm, fresh_passages(), max_steps=1, reader="cot")
    answer = answer_event(events)
    assert answer.llm_calls == 1 and answer.payload.answer == "Bloemfontein"
    assert "Finish the reasoning" in llm.calls[-1][0][-1]["content"]


def test_an_empty_conclusion_gives_a_clear_answer_and_a_warning():
    llm = reasoning_llm(["Tolkien wrote The Hobbit [1].", "  "])
    events = run(llm, fresh_passages(), max_steps=1, reader="cot")
    answer = answer_event(events)
    assert answer.payload.answer == NO_ANSWER and answer.llm_calls == 1
    assert [e.title for e in events if e.kind == EventKind.WARNING] == ["Empty answer"]


def test_long_answers_cite_the_collected_passages():
    llm = reasoning_llm(["Tolkien wrote The Hobbit [1].", "So the answer is: Bloemfontein [3]."])
    ctx = RunContext(llm=llm, retriever=fresh_passages(), settings=settings_with(ircot={"mode": "sentences", "reader": "cot"}))
    answer = answer_event(run_events("ircot", QUESTION, ctx))
    assert answer.payload.answer == "Tolkien wrote The Hobbit [1]. So the answer is: Bloemfontein [3]."
    assert answer.payload.citations == [1, 3]


def test_works_over_the_web_source():
    search = ScriptedSearch({
        QUESTION: [{"title": "The Hobbit", "url": "https://example.org/hobbit", "snippet": "The Hobbit is a novel "
                    "by J. R. R. Tolkien."}],
        "The Hobbit is by J. R. R. Tolkien": [{"title": "Tolkien", "url": "https://example.org/tolkien",
                                              "snippet": "Tolkien was born in Bloemfontein."}],
    })
    llm = reasoning_llm(["The Hobbit is by J. R. R. Tolkien [1].", "So the answer is: Bloemfontein [2]."])
    events = run(llm, HybridRetriever([], WebSource(search)), reader="cot")
    assert search.queries == [QUESTION, "The Hobbit is by J. R. R. Tolkien"]
    assert [p.url for p in answer_event(events).payload.passages] == [
        "https://example.org/hobbit", "https://example.org/tolkien"]


def test_short_passages_that_differ_in_a_detail_are_not_duplicates():
    from pipeline.retrieval import deduplicate

    years = [Document(page_content=f"The {year} Tour de France was won by Tadej Pogacar of Slovenia.", id=str(year))
             for year in (2020, 2021)]
    assert len(deduplicate(years)) == 2


def test_model_failure_and_an_empty_reply_end_cleanly():
    from models.errors import LLMCallError

    events = run(ScriptedLLM(lambda messages, options: LLMCallError("model crashed")), fresh_passages())
    assert events[-1].kind == EventKind.ERROR and "model crashed" in events[-1].payload.message
    chatty = reasoning_llm(["", "never asked"], answer="Bloemfontein")
    events = run(chatty, fresh_passages())
    assert hops(events)[0].payload.stop == "The model wrote no further reasoning."
    assert answer_event(events).payload.answer == "Bloemfontein"


def test_a_failed_reasoning_step_still_answers_from_the_collected_passages():
    from models.errors import LLMCallError

    replies = iter(["Tolkien wrote The Hobbit [1].", LLMCallError("Requested tokens exceed context window")])

    def reply(messages, options):
        if messages[0]["content"].startswith("You answer questions that need facts"):
            return next(replies)
        return "Bloemfontein"

    events = run(ScriptedLLM(reply), fresh_passages())
    failed = [e for e in events if e.kind == EventKind.HOP and e.status == Status.FAILED]
    assert len(failed) == 1 and "context window" in failed[0].payload.stop
    assert failed[0].payload.passages == [] and failed[0].payload.sentence == ""
    assert any(e.kind == EventKind.WARNING and "context window" in e.payload.message for e in events)
    assert answer_event(events).payload.answer == "Bloemfontein"


def context_reader_llm(sentences: list[str], answer: str):
    """Replies ``sentences`` to next-step tasks in turn, then ``answer`` to the answer task."""
    queue = iter(sentences)
    return ScriptedLLM(lambda messages, options: next(queue) if messages[-1]["content"].rstrip().endswith(
        "Write the next sentence of the reasoning.") else answer)


@pytest.mark.parametrize("reply, short", [
    ("So the answer is: Bloemfontein [5].", "Bloemfontein"),
    ("Bloemfontein [5].\nTolkien was born there.", "Bloemfontein"),
    ("\"Bloemfontein\"", "Bloemfontein"),
])
def test_context_reader_asks_the_reasoning_prompt_for_the_answer_so_its_prefix_is_reused(reply, short):
    llm = context_reader_llm(["Tolkien wrote The Hobbit [1].", "Tolkien was born in Bloemfontein [5]."], reply)
    events = run(llm, fresh_passages(), k=3, max_steps=2, reader="context")
    answer = answer_event(events)
    assert answer.payload.extras.reader == "context" and answer.payload.answer == short
    assert len(llm.calls) == 3 and answer.llm_calls == 1
    last_step, reader = llm.calls[1][0], llm.calls[2][0]
    # Same system, demos and question; the passages grew by the second step's retrieval, then the reasoning.
    assert reader[:-1] == last_step[:-1]
    shared = last_step[-1]["content"].split("Reasoning so far:")[0]
    assert reader[-1]["content"].startswith(shared.split("</passages>")[0])
    assert "Reasoning so far: Tolkien wrote The Hobbit [1]. Tolkien was born in Bloemfontein [5]." in \
        reader[-1]["content"]
    assert reader[-1]["content"].rstrip().endswith("a short phrase such as a name, a date, a number, or yes / no.")
    assert "\n[9] Doc" in reader[-1]["content"]  # every collected passage, in arrival order
    assert len(answer.payload.passages) == 9
    assert llm.calls[2][1].max_tokens == 32 and llm.calls[2][1].until is None  # the short answers' budget, whole


def test_passages_reader_hides_the_reasoning_but_keeps_the_cached_prefix():
    llm = context_reader_llm(["Tolkien wrote The Hobbit [1].", "Tolkien was born in Bloemfontein [5]."],
                             "Bloemfontein [5].")
    events = run(llm, fresh_passages(), k=3, max_steps=2, reader="passages")
    answer = answer_event(events)
    assert answer.payload.extras.reader == "passages" and answer.payload.answer == "Bloemfontein"
    assert answer.payload.extras.reasoning == ["Tolkien wrote The Hobbit [1].", "Tolkien was born in Bloemfontein [5]."]
    assert len(llm.calls) == 3 and answer.llm_calls == 1
    last_step, reader = llm.calls[1][0], llm.calls[2][0]
    assert reader[:-1] == last_step[:-1]  # same system, demos and question
    content = reader[-1]["content"]
    assert content.startswith(last_step[-1]["content"].split("</passages>")[0])
    assert "Tolkien" not in content.split("</passages>")[1]  # the chain is not shown
    assert "Reasoning so far: (none yet)" in content
    assert content.rstrip().endswith("Reply with the answer only: a short phrase such as a name, a date, a "
                                     "number, or yes / no.")
    assert "\n[9] Doc" in content and len(answer.payload.passages) == 9


def test_context_reader_writes_a_cited_answer_in_the_long_style():
    llm = context_reader_llm(["So the answer is: Bloemfontein."], "Tolkien was born in Bloemfontein [2].")
    ctx = RunContext(llm=llm, retriever=fresh_passages(),
                     settings=settings_with(min_support=0, ircot={"mode": "sentences", "k": 2, "reader": "context"}))
    answer = answer_event(run_events("ircot", QUESTION, ctx))
    assert answer.payload.answer == "Tolkien was born in Bloemfontein [2]." and answer.payload.citations == [2]
    assert "citing the passages" in llm.calls[-1][0][-1]["content"]


def test_reasoning_words_cut_the_reasoning_prompts_passages_but_the_reader_reads_them_whole():
    llm = reasoning_llm(["Tolkien wrote The Hobbit [1].", "So the answer is: Bloemfontein."])
    events = run(llm, fresh_passages(), k=2, max_steps=3, reasoning_words=3, reader="direct")
    assert answer_event(events).payload.answer == "Bloemfontein"
    reasoning, reader = llm.calls[0][0][-1]["content"], llm.calls[-1][0][-1]["content"]
    assert "[1] Doc 1: Passage number 1 ...\n[2] Doc 2: Passage number 2 ..." in reasoning
    assert "tells of fact" not in reasoning
    assert "[1] Doc 1: Passage number 1 tells of fact 1 about topic 7." in reader


def test_a_passage_within_the_reasoning_words_is_shown_whole():
    from pipeline.prompting import format_passages
    short, long = passage(1, "Three words only."), passage(2, "One two three four five.")
    assert format_passages([short, long], max_words=3) == \
        "[1] Doc 1: Three words only.\n[2] Doc 2: One two three ..."
    assert format_passages([long]) == "[1] Doc 2: One two three four five."
