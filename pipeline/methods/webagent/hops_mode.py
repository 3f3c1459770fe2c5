"""The web agent hop by hop (``mode: hops``, this app's variant): the question is planned as sub-questions with
IRCoT's planner (``pipeline.methods.ircot.hops.write_plan``, the ``ircot_plan`` prompt), and each sub-question,
earlier answers put in place of ``#k``, is a search of its own. Up to ``pages_per_query`` result pages not yet
read for it are opened, and each is read with one model call under a grammar (``webagent_hop_quote``): the
number of the page sentence that states the answer and the answer copied from it, or "not found". The sentence
is quoted as a fact, as the other modes' facts; the answer is kept only when that sentence (or its page) holds
it (``hops.holds``, the check IRCoT makes of its passages), and reading for the sub-question stops at the first
page that gives one.

The agent does not finish while an answer the plan needs is missing: a sub-question no page answers is searched
once more with its key words (or, when those were searched already, its next results are read); when still
unanswered, the run finishes with a warning naming it, and the answer is read from the facts collected, or not
written (``hop_fallback``). Comparisons are computed in code (``pipeline.methods.ircot.compare``) from the two
answers, each shown with the fact and page it came from. A plan that cannot be followed hands the run to the
interactive agent.

Events (no kind of its own): the start; the plan; one ``subquestion`` step per hop, the child of the hop whose
answer it uses (or of the plan), with its search, load and quote actions under it as a timeline; the
``compare`` step; the finish; the answer, citing the facts' pages.
"""

from __future__ import annotations

from typing import Iterator

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import llm_cost
from pipeline.events import EventKind, Link, Status, StepEvent
from pipeline.methods.ircot.hops import (INSTRUCTION_NOTE, Hop, answer_from_hops, as_written, asks_yes_no,
                                         compare_title, conclusion, holds, instruction_like, is_judgement,
                                         parse_reply, plan_event, unfit, unsaid, write_plan)
from pipeline.methods.ircot.plan import Plan, refs_of, substitute
from pipeline.methods.webagent.browsing.agent import MAX_QUERY_CHARS, clean_query, data, normalise_query
from pipeline.methods.webagent.browsing.pages import Page, PageKey, Result, Window, shorten
from pipeline.methods.webagent.interactive import InteractiveAgent
from pipeline.payloads import ActionPayload, PassageRef, PlanPayload, SubQuestionPayload
from pipeline.prompting import load_prompt
from pipeline.support import key_terms


class PageHop(Hop):
    """A sub-question's outcome on the web: ``passages`` are the facts quoted for it and ``numbers`` their numbers
    among all the run's facts (as its step and the answer show them); ``source`` is the one holding the answer."""

    def __init__(self, question: str):
        super().__init__(question, [])
        self.numbers: list[int] = []
        self.notes: list[str] = []
        self.read: set[PageKey] = set()  # the pages read for this sub-question
        self.given: tuple[str, ...] = ()  # the earlier answers put into the question

    def ref(self) -> PassageRef | None:
        return PassageRef.of(self.evidence, self.numbers[self.source - 1]) if self.evidence is not None else None

    def refs(self) -> list[PassageRef]:
        return [PassageRef.of(doc, number) for doc, number in zip(self.passages, self.numbers)]


def missing_hop(step: int, question: str) -> str:
    """The warning's words for a sub-question no page read answers."""
    return f"No page read states the answer to hop {step}: “{question}”."


class HopsAgent(InteractiveAgent):
    """Plans, then searches and reads for each sub-question in turn; without a usable plan, browses as the
    interactive agent (whose browsing and answer it then uses)."""

    plan: Plan | None = None
    why = ""  # why this question goes hop by hop, when the mode was chosen for it (``mode: auto``)

    def browse(self) -> Iterator[StepEvent]:
        start = self.parent
        plan_id = self.tracer.new_id("p")
        yield self.tracer.event(PlanPayload(), "Plan", id=plan_id, parent_id=start, status=Status.RUNNING)
        plan, error, cost = write_plan(self.question, self.ctx, "browsing one chosen action at a time instead.",
                                       ask_again=self.cfg.ask_again_restated, clause=self.cfg.clause_plan,
                                       both=self.cfg.both_plan)
        if plan is None:
            yield self.tracer.event(PlanPayload(error=error), "Plan: unusable", id=plan_id, parent_id=start, **cost)
            self.parent = plan_id
            yield from super().browse()
            return
        yield plan_event(self.tracer, plan, plan_id, self.why, cost, parent=start)
        self.plan = plan
        self.hops: dict[int, PageHop] = {}
        self.fact_docs: list[Document] = []  # each fact as the answer reads it, in fact order (made once)
        ids: dict[int, str] = {}
        missing, ended_by = None, "hops"
        for i, planned in enumerate(plan.questions, 1):
            self.ctx.check_cancelled()
            refs = refs_of(planned)
            ids[i] = self.tracer.new_id("q")
            hop = self.hops[i] = PageHop(substitute(planned, {k: self.hops[k].bridge for k in refs}))
            hop.given = tuple(self.hops[k].bridge for k in refs)
            outcome = yield from self._hop(i, planned, hop, ids[i], ids[max(refs)] if refs else plan_id)
            if hop.answer is None:
                missing, ended_by = missing_hop(i, hop.question), outcome or ("budget" if self._spent() else "missing")
                break
        comparison, self.found, self.missing = conclusion(self.question, plan, self.hops, missing)
        self.parent = ids[max(self.hops)]
        if comparison is not None:
            step = self.tracer.new_id("c")
            yield self.tracer.event(comparison, compare_title(comparison), id=step, parent_id=self.parent)
            self.parent = step
        yield from self._finish("missing" if self.missing is not None and ended_by == "hops" else ended_by)

    def _hop(self, step: int, planned: str, hop: PageHop, hop_id: str, parent: str):
        """One sub-question's step and the actions under it; returns how browsing ended when it cannot go on
        (the search failed), else None."""
        payload = SubQuestionPayload(step=step, planned=planned, question=hop.question)
        title = f"Hop {step}: {hop.question}"
        yield self.tracer.event(payload, title, id=hop_id, parent_id=parent, status=Status.RUNNING)
        self.parent = hop_id
        prompt = load_prompt("webagent_hop_quote")
        outcome = yield from self._search_and_read(hop, clean_query(hop.question)[:MAX_QUERY_CHARS], prompt)
        if hop.answer is None and outcome is None and not self._spent():
            again = clean_query(" ".join(word for word, _ in key_terms(hop.question)))[:MAX_QUERY_CHARS]
            if len(again) >= 2 and normalise_query(again) not in self.tab.asked:
                hop.notes.append(f"No page read stated the answer: searched again with its key words, “{again}”.")
                outcome = yield from self._search_and_read(hop, again, prompt, "again, with the sub-question's key "
                                                           "words: no page read stated its answer")
            elif self._unread(hop):
                hop.notes.append("No page read stated the answer: read the next results.")
                yield from self._read_pages(hop, self._unread(hop), prompt)
        source = hop.numbers[hop.source - 1] if hop.source else None
        done = payload.model_copy(update=dict(answer=hop.answer or "", source=source, found=hop.answer is not None,
                                              passages=hop.refs(), note=" ".join(hop.notes), said=hop.said or ""))
        yield self.tracer.event(done, f"{title} → {hop.answer}" if hop.answer else f"{title} → not found",
                                id=hop_id, parent_id=parent)
        return outcome

    def _spent(self) -> bool:
        """Whether the action budget (``max_steps``: each search, page opened and page read is one) is spent:
        the server caps it for people who are not admins, and this mode keeps to it like the others."""
        return self.step >= self.cfg.max_steps

    def _search_and_read(self, hop: PageHop, query: str, prompt, message: str = ""):
        """Search ``query`` (an action), then read its first result pages not yet read for ``hop``; returns how
        browsing ended when it cannot go on (the search failed, the budget is spent), else None."""
        self.ctx.check_cancelled()
        if self._spent():
            return "budget"
        self.step += 1
        step_id = self.tracer.new_id("w")
        base = {"step": self.step, "message": message}
        yield self._event(ActionPayload(action="choose", query=query, **base), f"Search: {query}", step_id,
                          Status.RUNNING)
        outcome = yield from self._search(query, base, step_id, {})
        self.parent = self.last_id
        if outcome or self.tab.search_refused:
            return outcome
        yield from self._read_pages(hop, self._unread(hop), prompt)
        return None

    def _unread(self, hop: PageHop) -> list[Result]:
        return [r for r in self.tab.results if r.key not in hop.read][: self.cfg.pages_per_query]

    def _read_pages(self, hop: PageHop, results: list[Result], prompt) -> Iterator[StepEvent]:
        for result in results:
            if hop.answer is not None or self.step + 2 > self.cfg.max_steps:  # opening and reading take two
                break
            self.ctx.check_cancelled()
            hop.read.add(result.key)
            yield from self._read_for(hop, result, prompt)

    def _read_for(self, hop: PageHop, result: Result, prompt) -> Iterator[StepEvent]:
        """Open a result's page and ask, in one call, which sentence states ``hop``'s answer: quote it as a fact,
        and keep the answer when the page holds it."""
        tab = self.tab
        block = yield from self._open_block(result)
        if block is None:
            return
        page = tab.page
        self.step += 1
        quote_id = self.tracer.new_id("w")
        base = {"step": self.step}
        yield self._event(ActionPayload(action="choose", **base), "Reading the page…", quote_id, Status.RUNNING)
        sentences = "\n".join(f"[{i}] {data(s.text)}" for i, s in enumerate(block.sentences, 1))
        try:
            call = self.ctx.llm.chat(prompt.messages(title=data(page.title), sentences=sentences,
                                                     question=hop.question),
                                     prompt.options(self.ctx.settings.temperature))
        except LLMCallError as exc:
            yield from self._reading_failed(exc, base, quote_id)
            tab.back()
            return
        cost = llm_cost(call)
        picked, answer, note, said = _judge(call.text, block, page)
        why = unfit(hop.question, answer, hop.given) if answer is not None and self.cfg.refuse_unfit else ""
        if why:
            answer, note = None, f"{why}: not used."
        elif answer == "yes" and self.cfg.checked_yes and asks_yes_no(hop.question):
            answer, note = _checked_yes(hop.question, page, note)
        if not picked:
            screen = self._screen()
            screen["message"] = note
            yield self._event(ActionPayload(action="quote", **base, **screen),
                              f"No answer on {shorten(page.title, 60)}", quote_id, **cost)
        else:
            yield self._quote(picked, base, quote_id, cost, message=note)
            doc = tab.facts[-1].document()
            self.fact_docs.append(doc)
            hop.passages.append(doc)
            hop.numbers.append(len(tab.facts))
            if answer is not None:
                hop.answer, hop.source, hop.said = answer, len(hop.passages), said
            else:
                hop.notes.append(f"On “{shorten(page.title, 60)}”: {note}")
        self.parent = self.last_id
        tab.back()

    # The answer.

    def answer(self) -> Iterator[StepEvent]:
        """The answer from the hops (``ircot.hops.answer_from_hops``): with short answers the last hop's answer
        or the comparison's result, citing the facts that gave it; else read from the facts with the hops'
        findings as notes, under a warning when an answer is missing. Without a plan, the interactive agent's."""
        if self.plan is None:
            yield from super().answer()
            return
        seen = list({(d.id, d.page_content): d for d in [*self.fact_docs, *self.read.values(), *self.hits]}.values())
        steps = {(fact.title, fact.text): fact.step for fact in self.tab.facts}
        for event in answer_from_hops(self.ctx, self.tracer, self.question, self.plan, self.hops, self.fact_docs,
                                      self.found, self.missing, self.parent, fallback=self.cfg.hop_fallback,
                                      reader_passages=0, noun="facts", who="agent", support=seen):
            if event.kind == EventKind.ANSWER and event.status == Status.DONE:
                given = event.payload.passages
                cited = [(given[n - 1].title, given[n - 1].text) for n in event.payload.citations
                         if 1 <= n <= len(given)]
                links = [Link(target=steps[key], type="cites") for key in dict.fromkeys(cited) if key in steps]
                event = event.model_copy(update={"links": links})
            yield event


def _checked_yes(question: str, page: Page, note: str) -> tuple[str, str]:
    """A "yes" to the yes / no ``question`` read from ``page``: it stands when the page (title and text) holds each
    of the question's words (``ircot.hops.unsaid``), else it reads "no", the note naming the words the page lacks."""
    missing = unsaid(question, _whole(page))
    if not missing:
        return "yes", note
    return "no", (f"The model said yes, but this page does not hold {', '.join(repr(word) for word in missing)}: "
                  "read as no.")


def _whole(page: Page) -> Document:
    """``page``'s text, every chunk of it, with its title, as the checks of an answer read it."""
    return Document(page_content=" ".join(chunk.page_content for chunk in page.chunks), metadata={"title": page.title})


def _judge(reply: str, block: Window, page: Page) -> tuple[list[int], str | None, str, str | None]:
    """What a page reading gives: the sentences to quote (none when the reply names none on the page), the
    answer when the page holds it, and a note saying which. A sentence is read with its page's title ("It was
    directed by ..." on the film's page); an answer not in the sentence named but in another of the part read
    is quoted with it; one only elsewhere on the page is kept with the sentence named; one not on the page is not
    used (the sentence is still a fact). A yes / no is a judgement, kept with the sentence named. Last, the
    country the model named when the page names it only by its people (``Hop.said``), else None."""
    parsed = parse_reply(reply, "sentence")
    if isinstance(parsed, str):
        return [], None, parsed, None
    named, answer = parsed
    if not 1 <= named <= len(block.sentences):
        return [], None, f"The reply names sentence [{named}], which is not on the part of the page read.", None

    def holder(text: str) -> bool:
        return holds(Document(page_content=text, metadata={"title": page.title}), answer)

    if is_judgement(answer):
        return [named], answer.lower(), f"Answer: {answer.lower()} (a judgement on the sentence quoted).", None
    if instruction_like(answer):
        return [named], None, INSTRUCTION_NOTE.format(answer[:120]), None
    whole_page = _whole(page)
    said = answer
    answer = as_written(answer, lambda text: holds(whole_page, text))
    said = said if said != answer else None
    if holder(block.sentences[named - 1].text):
        return [named], answer, f"Answer: {answer}.", said
    other = next((n for n, s in enumerate(block.sentences, 1) if holder(s.text)), None)
    if other is not None:
        return sorted({named, other}), answer, (f"Answer: {answer}, stated in sentence [{other}], quoted with "
                                                f"sentence [{named}], which the model named."), said
    if holder(whole_page.page_content):
        return [named], answer, f"Answer: {answer}, stated on the page, not in the sentence quoted.", said
    return [named], None, f"“{answer}” is not on this page: not used as the answer.", None
