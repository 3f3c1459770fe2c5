"""A chain steered (issue 35): an IRCoT reasoning sentence rewritten or deleted and the chain continued from it (the
steps before kept, those after redone, nothing before re-read), and a hop answered by a person with the later
sub-questions asked again with that answer; the edit as a step the new chain hangs under; and edits of a chain
that do not fit refused in one line."""

from __future__ import annotations

import pytest

from pipeline.context import RunContext
from pipeline.edits import EditError, EditStep, parse_edit
from pipeline.events import EventKind, Status, Tracer
from pipeline.fold import RunState
from pipeline.payloads import HopPayload, PassageRef, RetrievePayload, SubQuestionPayload
from pipeline.resume import Resumption
from pipeline.service import RunRequest, RunService, trace_collections
from tests.fakes import ScriptedLLM, ScriptedRetriever, settings_with
from tests.test_hops import library, scripted
from tests.test_ircot import QUESTION, fresh_passages, passage

SENTENCES = {"mode": "sentences"}


def _service_run(llm, retriever, question, ircot):
    settings = settings_with(answer_style="short", min_support=0, ircot=ircot)
    ctx = RunContext(llm=llm, retriever=retriever, settings=settings)
    run = RunService().start(RunRequest(question=question, method="ircot", settings=settings), context=ctx)
    list(run)
    return run.state, settings


def _resume(state, edits, llm, retriever, settings):
    ctx = RunContext(llm=llm, retriever=retriever, settings=settings)
    resumed = RunService().resume(state, edits, settings=settings, context=ctx)
    return resumed, list(resumed)


def _new(resumed, state):
    return resumed.state.events[len(state.events):]


def _done(events, kind):
    return [e for e in events if e.kind == kind and e.status == Status.DONE]


def chain_llm(sentences, answer="Bloemfontein"):
    """Replies each reasoning call with the next of ``sentences`` and records the reasoning it was shown."""
    queue = iter(sentences)
    shown = []

    def reply(messages, options):
        if messages[0]["content"].startswith("You answer questions that need facts"):
            shown.append(messages[-1]["content"])
            return next(queue)
        return answer
    llm = ScriptedLLM(reply)
    llm.shown = shown
    return llm


@pytest.fixture
def chain():
    """A sentence chain of three steps that went wrong at step 2, and its answer."""
    llm = chain_llm(["The Hobbit was written by J. R. R. Tolkien.", "Tolkien was born in Oxford.",
                     "So the answer is: Oxford."], answer="Oxford")
    return _service_run(llm, fresh_passages(), QUESTION, SENTENCES)


def test_a_rewritten_sentence_keeps_the_steps_before_and_the_chain_goes_on_from_it(chain):
    state, settings = chain
    steps = [(i, p) for i, p in state.steps_of(HopPayload)]
    second = steps[1][0]
    llm = chain_llm(["So the answer is: Bloemfontein."], answer="Bloemfontein")
    retriever = ScriptedRetriever(lambda q, k: [passage(90 + n) for n in range(k)])
    resumed, _ = _resume(state, [parse_edit(f"step:{second}=Tolkien was born in Bloemfontein.")], llm, retriever,
                         settings)
    new = _new(resumed, state)
    edit = next(e for e in new if e.kind == EventKind.EDIT)
    assert edit.parent_id == state.steps[second].parent_id  # beside the step it rewrites: the chain branches
    assert edit.title == "You rewrote a step: Tolkien was born in Bloemfontein."
    hops = [e.payload for e in _done(new, EventKind.HOP)]
    assert [(h.step, h.sentence) for h in hops] == [(2, "Tolkien was born in Bloemfontein."),
                                                    (3, "So the answer is: Bloemfontein.")]
    assert hops[0].note == "Written by you."
    first_new = next(e for e in _done(new, EventKind.HOP) if e.payload.step == 2)
    assert first_new.parent_id == edit.id and first_new.llm_calls == 0
    # Only the person's sentence retrieved; the model then reasoned once, shown the first step and the new one.
    assert [q for q, _ in retriever.queries] == ["Tolkien was born in Bloemfontein"]
    assert "The Hobbit was written by J. R. R. Tolkien. Tolkien was born in Bloemfontein." in llm.shown[0]
    assert "born in Oxford" not in llm.shown[0]
    # The passages collected before the edit are kept, in order, with the new ones after them.
    collected = [p.id for p in resumed.state.answer.extras.collected]
    before = [p.id for p in state.steps_of(HopPayload)[0][1].passages]
    assert collected[:8] == [p.id for p in _first_retrieval(state)] + before
    assert collected[8:] == ["p90", "p91", "p92", "p93"]
    assert resumed.state.answer.answer.endswith("Bloemfontein")


def _first_retrieval(state):
    return next(e for e in state.events if e.kind == EventKind.RETRIEVE and e.status == Status.DONE).payload.passages


def test_a_deleted_sentence_is_written_again_by_the_model_from_the_steps_before(chain):
    state, settings = chain
    second = state.steps_of(HopPayload)[1][0]
    llm = chain_llm(["Tolkien was born in Bloemfontein.", "So the answer is: Bloemfontein."])
    resumed, _ = _resume(state, [EditStep(step=second, text="")], llm, fresh_passages(), settings)
    new = _new(resumed, state)
    assert next(e for e in new if e.kind == EventKind.EDIT).title == "You deleted a step: Tolkien was born in Oxford."
    assert [h.payload.sentence for h in _done(new, EventKind.HOP)] == ["Tolkien was born in Bloemfontein.",
                                                                       "So the answer is: Bloemfontein."]
    assert "born in Oxford" not in llm.shown[0]


def test_a_hop_answered_by_a_person_is_put_into_the_later_sub_questions():
    question = "Where was the director of film Torchy Blane In Panama born?"
    plan = "1. Who directed Torchy Blane in Panama?\n2. Where was #1 born?\nAnswer: #2"
    wrong = scripted(plan, {"Who directed Torchy Blane in Panama?": "[1] Panama",
                            "Where was Panama born?": "not found"})
    state, settings = _service_run(wrong, ScriptedRetriever(library), question, {"mode": "hops"})
    first = next(i for i, p in state.steps_of(SubQuestionPayload) if p.step == 1)
    llm = scripted(plan, {"Where was William Clemens born?": "[1] Saginaw, Michigan"})
    retriever = ScriptedRetriever(library)
    resumed, _ = _resume(state, [parse_edit(f"step:{first}=William Clemens")], llm, retriever, settings)
    new = _new(resumed, state)
    edit = next(e for e in new if e.kind == EventKind.EDIT)
    assert edit.title == "You answered: Who directed Torchy Blane in Panama? → William Clemens"
    hops = _done(new, EventKind.SUBQUESTION)
    assert [(h.payload.question, h.payload.answer) for h in hops] == [("Where was William Clemens born?",
                                                                       "Saginaw, Michigan")]
    assert hops[0].parent_id == edit.id
    assert [q for q, _ in retriever.queries] == ["Where was William Clemens born?"]  # the first hop is not redone
    assert not any(m[0]["content"].startswith("You split a question") for m, _ in llm.calls)  # nor the plan
    answer = resumed.state.answer
    assert answer.answer == "Saginaw, Michigan"
    assert [(h.question, h.answer) for h in answer.extras.hops] == [
        ("Who directed Torchy Blane in Panama?", "William Clemens"),
        ("Where was William Clemens born?", "Saginaw, Michigan")]
    # Resumed again: the person's answer stays, and a later hop may be answered too.
    second = next(i for i, p in resumed.state.steps_of(SubQuestionPayload)
                  if p.question == "Where was William Clemens born?")
    again, _ = _resume(resumed.state, [parse_edit(f"step:{second}=Saginaw")], scripted(plan, {}),
                       ScriptedRetriever(library), settings)
    assert again.state.answer.answer == "Saginaw"
    assert [h.answer for h in again.state.answer.extras.hops] == ["William Clemens", "Saginaw"]


def test_a_resumed_chain_puts_the_country_a_hop_read_as_its_people_into_the_later_sub_questions():
    """Hop 1 answered "Russian" as the passage writes it, the model having said "Russia"; after a person answers
    hop 2, hop 3 is asked about "Russia", as it would have been in the run itself."""
    from langchain_core.documents import Document

    places = [Document(page_content="The Kamchatka Peninsula is a peninsula in the Russian Far East.",
                       metadata={"title": "Kamchatka Peninsula"}, id="kamchatka"),
              Document(page_content="Boris Yeltsin was the first president of Russia. Its capital is Moscow.",
                       metadata={"title": "Boris Yeltsin"}, id="yeltsin")]
    question = "Who was the first president of the country where the Kamchatka Peninsula is located?"
    plan = ("1. What is the country where the Kamchatka Peninsula is located?\n2. What is the capital of #1?\n"
            "3. Who was the first president of #1?\nAnswer: #3")
    first = scripted(plan, {"What is the country where the Kamchatka Peninsula is located?": "[1] Russia",
                            "What is the capital of Russia?": "not found"})
    state, settings = _service_run(first, ScriptedRetriever(lambda query, k: places[:k]), question, {"mode": "hops"})
    hop1, hop2 = [p for _, p in state.steps_of(SubQuestionPayload) if p.found is not None]
    assert (hop1.answer, hop1.said, hop2.question) == ("Russian", "Russia", "What is the capital of Russia?")
    second = next(i for i, p in state.steps_of(SubQuestionPayload) if p.step == 2)
    llm = scripted(plan, {"Who was the first president of Russia?": "[2] Boris Yeltsin"})
    resumed, _ = _resume(state, [parse_edit(f"step:{second}=Moscow")], llm,
                         ScriptedRetriever(lambda query, k: places[:k]), settings)
    hops = _done(_new(resumed, state), EventKind.SUBQUESTION)
    assert [h.payload.question for h in hops] == ["Who was the first president of Russia?"]
    assert resumed.state.answer.answer == "Boris Yeltsin"


@pytest.mark.parametrize("edits, message", [
    (["step:h999=text"], "There is no step 'h999' of a chain in this run"),
    (["step:STEP2=new text", "drop:1"], "A rewritten step is an edit of its own"),
    (["prune:n1"], "'prune' does not apply to this run"),
])
def test_edits_of_a_chain_that_do_not_fit_are_refused_in_one_line(chain, edits, message):
    state, _ = chain
    second = state.steps_of(HopPayload)[1][0]
    with pytest.raises(EditError, match=message) as caught:
        Resumption(state, [parse_edit(e.replace("STEP2", second)) for e in edits])
    assert "\n" not in str(caught.value)


def test_a_step_edit_reads_as_the_command_line_writes_it():
    assert parse_edit("step:h2=Tolkien was born in Bloemfontein.") == EditStep(step="h2",
                                                                               text="Tolkien was born in Bloemfontein.")
    assert parse_edit("step:h2=") == EditStep(step="h2", text="")
    with pytest.raises(EditError, match="step:STEP=TEXT"):
        parse_edit("step:h2")


def test_a_resumed_chain_retrieves_from_the_collections_its_passages_came_from():
    tracer = Tracer("ircot")
    state = RunState.of([tracer.event(RetrievePayload(query="q", passages=[
        PassageRef(id="a", text="x", collection="manuals"), PassageRef(id="b", text="y", collection="notes"),
        PassageRef(id="c", text="z", url="https://example.org/")]), "Retrieve")])
    assert trace_collections(state) == ("manuals", "notes")


def test_a_chain_continued_in_the_browser_retrieves_only_from_collections_the_person_may_read(chain):
    """A rewritten step makes the chain retrieve again, from the collections its passages came from: one the person
    may not read (a replayed trace of someone else's run) refuses the rewrite before anything runs."""
    from corpora.store import CollectionError
    from ui.steer import resume_last, step_edit

    state, settings = chain
    tracer = Tracer("ircot")
    private = tracer.event(RetrievePayload(query="q", passages=[PassageRef(id="s", text="x",
                                                                           collection="alice-notes")]), "Retrieve")
    stolen = RunState.of([private, *state.events])
    second = state.steps_of(HopPayload)[1][0]
    asked = []

    def may_read(name):
        asked.append(name)
        if name == "alice-notes":
            raise CollectionError("You may not read 'alice-notes'.")

    with pytest.raises(CollectionError, match="alice-notes"):
        resume_last(RunService(), stolen, step_edit(stolen, second, "Tolkien was born in Bloemfontein."), settings, None,
                    None, None, may_read=may_read)
    assert asked == ["alice-notes"]
    # Leaving a passage out retrieves nothing, so no collection is asked about.
    asked.clear()
    resume_last(RunService(), stolen, ["drop:1"], settings, None, None, None, may_read=may_read)
    assert asked == []
