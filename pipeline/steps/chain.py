"""The kinds of step of a reasoning chain (IRCoT): one sentence, the query it made and the passages it added;
or, hop by hop, the plan, each sub-question with the answer found and the passage that holds it, and a
comparison computed in code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import ComparePayload, HopPayload, PlanPayload, SubQuestionPayload
from pipeline.steps.kind import StepKind, listed_passages, titled, no_passages, one_line, passage_lines, passages_card
from pipeline.steps.look import QUESTION, KindStyle, Paint, passages_line

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState


def _title(step: "StepEvent") -> str:
    p: HopPayload = step.payload
    return f"Step {p.step}: {p.sentence}" if p.sentence else step.title


def _no_new(step: "StepEvent", p: HopPayload) -> bool:
    return bool(p.query) and step.status.value == "done" and not p.passages and not p.note


def _lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: HopPayload = step.payload
    lines = [f"query: {one_line(p.query)}"] if p.query else []
    if _no_new(step, p):
        lines.append(f"no new passages ({p.duplicates} already collected)")
    elif p.query:
        lines.append(f"+{len(p.passages)} passages" + (f", {p.duplicates} already collected" if p.duplicates else "")
                     + (f", {p.pool_size} in all" if p.pool_size is not None else ""))
    return lines + [one_line(text) for text in (p.note, p.stop) if text] + passage_lines(p.passages)


def _card(step: "StepEvent", state: "RunState") -> str:
    p: HopPayload = step.payload
    out = []
    if p.query:
        out.append(f'<div class="rv-query">query: {esc(p.query)}</div>')
        if _no_new(step, p):
            out.append(f'<div class="rv-muted">no new passages ({esc(p.duplicates)} already collected)</div>')
        elif p.pool_size is not None and step.status.value == "done":
            out.append(f'<div class="rv-muted">{esc(p.pool_size)} passages collected so far'
                       + (f" ({esc(p.duplicates)} retrieved again)" if p.duplicates else "") + "</div>")
    elif p.sentence:
        out.append('<div class="rv-query rv-muted">no query (the sentence only concludes)</div>')
    out.extend(f'<div class="rv-muted">{esc(text)}</div>' for text in (p.note, p.stop) if text)
    return "".join(out) + passages_card("new passage")(step, state)


def _label(step: "StepEvent", state: "RunState") -> list[str]:
    p: HopPayload = step.payload
    return [f"{p.step}. {p.sentence or ('thinking…' if step.status.value == 'running' else '(no sentence)')}"]


def _details(step: "StepEvent", state: "RunState") -> list[str]:
    p: HopPayload = step.payload
    lines = [f"query: {p.query}"] if p.query else []
    if p.query and step.status.value == "done" and not p.passages:
        lines.append(f"no new passages ({p.duplicates} already collected)")
    return lines + [text for text in (p.note, p.stop) if text] + passages_line(p.passages)


def _subquestion_title(step: "StepEvent") -> str:
    p: SubQuestionPayload = step.payload
    return f"Hop {p.step}{p.again_title()}: {p.question or p.planned}"


def _compare_title(step: "StepEvent") -> str:
    p: ComparePayload = step.payload
    return f"Compare ({p.comparison}): {p.result or 'undecided'}"


def _plan_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: PlanPayload = step.payload
    return [one_line(line) for line in [text for text in (p.error, p.note) if text] + _plan(p)]


def _plan(p: PlanPayload) -> list[str]:
    return [f"{i}. {q}" for i, q in enumerate(p.questions, 1)] + ([p.final] if p.final else [])


def _plan_card(step: "StepEvent", state: "RunState") -> str:
    p: PlanPayload = step.payload
    error = "".join(f'<div class="rv-muted">{esc(text)}</div>' for text in (p.error, p.note) if text)
    items = "".join(f"<li>{esc(q)}</li>" for q in p.questions)
    final = f'<div class="rv-query">{esc(p.final)}</div>' if p.final else ""
    return error + (f"<ol>{items}</ol>" if items else "") + final


def _subquestion_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: SubQuestionPayload = step.payload
    lines = [f"planned: {one_line(p.planned)}"] if p.planned != p.question else []
    if p.found:
        how = "inferred from passage" if p.inferred else "passage"
        lines.append(f"answer: {one_line(p.answer)} ({how} [{p.source}])")
    elif p.found is False:
        lines.append("answer: not found")
    return lines + ([one_line(p.note)] if p.note else []) + passage_lines(p.passages)


def _source_html(p: SubQuestionPayload) -> str:
    source = next((ref for ref in p.passages if ref.number == p.source), None)
    if source is None:
        return ""
    return (f'<div class="rv-passage"><span class="rv-passage-title">[{esc(source.number)}]</span> '
            f'{esc(source.label())}: {esc(source.text[:300])}</div>')


def _subquestion_card(step: "StepEvent", state: "RunState") -> str:
    p: SubQuestionPayload = step.payload
    out = [f'<div class="rv-muted">planned as: {esc(p.planned)}</div>'] if p.planned != p.question else []
    if p.found:
        how = "inferred from" if p.inferred else "from"
        out.append(f'<div class="rv-answer-line">answer: <b>{esc(p.answer)}</b>, {how} passage [{esc(p.source)}]'
                   f"</div>{_source_html(p)}")
    elif p.found is False:
        out.append('<div class="rv-answer-line">answer: <b>not found</b></div>')
    if p.note:
        out.append(f'<div class="rv-muted">{esc(p.note)}</div>')
    return "".join(out) + passages_card("passage", "retrieved")(step, state)


def _subquestion_label(step: "StepEvent", state: "RunState") -> list[str]:
    p: SubQuestionPayload = step.payload
    if p.found is None:
        return [f"{p.step}. {p.question}", "searching…"]
    inferred = " (inferred)" if p.inferred else ""
    return [f"{p.step}. {p.question}", f"→ {p.answer} [{p.source}]{inferred}" if p.found else "→ not found"]


def _subquestion_details(step: "StepEvent", state: "RunState") -> list[str]:
    p: SubQuestionPayload = step.payload
    source = next((ref for ref in p.passages if ref.number == p.source), None)
    return ([f"planned: {p.planned}"] if p.planned != p.question else []) + \
        ([f"from [{source.number}] {source.label()}"] if source else []) + ([p.note] if p.note else []) + \
        passages_line(p.passages)


def _compare_values(p: ComparePayload) -> list[str]:
    return [f"{v.about}: {v.value or '?'}" + (f" (read as {v.read_as})" if v.read_as and v.read_as != v.value else "")
            + (f" [{v.source.number}] {v.source.label()}" if v.source else "") for v in p.values]


def _compare_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: ComparePayload = step.payload
    return [one_line(line) for line in _compare_values(p)] + \
        [one_line(text) for text in (f"result: {p.result}" if p.result else "", p.reason) if text]


def _compare_card(step: "StepEvent", state: "RunState") -> str:
    p: ComparePayload = step.payload
    rows = "".join(f"<li>{esc(line)}</li>" for line in _compare_values(p))
    result = f'<div class="rv-answer-line">{esc(p.comparison)}: <b>{esc(p.result)}</b></div>' if p.result else ""
    reason = f'<div class="rv-muted">{esc(p.reason)}</div>' if p.reason else ""
    return f"<ul>{rows}</ul>{result}{reason}"


def _compare_label(step: "StepEvent", state: "RunState") -> list[str]:
    p: ComparePayload = step.payload
    return [f"{p.comparison}?"] + [f"{v.value or '?'}" for v in p.values] + [f"→ {p.result or 'undecided'}"]


KINDS = (
    StepKind("hop", HopPayload, "step", title=_title, lines=_lines, card=_card,
             style=KindStyle("reasoning step", "box", Paint("#eef2ff", "#4f6bed", width=2), label=_label,
                             details=_details, satellites=True),
             passages=listed_passages, sequential=True),
    StepKind("plan", PlanPayload, "step", title=titled, lines=_plan_lines, card=_plan_card,
             style=KindStyle("plan of sub-questions", "box", QUESTION,
                             label=lambda step, state: _plan(step.payload) or [step.title],
                             details=lambda step, state: [t for t in (step.payload.error, step.payload.note) if t]),
             passages=no_passages),
    StepKind("subquestion", SubQuestionPayload, "step", title=_subquestion_title, lines=_subquestion_lines,
             card=_subquestion_card,
             style=KindStyle("sub-question and its answer", "box", Paint("#eef2ff", "#4f6bed", width=2),
                             label=_subquestion_label, details=_subquestion_details, satellites=True),
             passages=listed_passages, reads_sources=True),
    StepKind("compare", ComparePayload, "step", title=_compare_title, lines=_compare_lines, card=_compare_card,
             style=KindStyle("comparison computed", "hexagon", Paint("#fef3c7", "#b45309", width=2),
                             label=_compare_label, details=lambda step, state: _compare_values(step.payload)),
             passages=lambda p: [v.source for v in p.values if v.source]),
)
