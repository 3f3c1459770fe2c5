"""The web agent's interactive mode (WebCPM's agent): one constrained action a call, search, load, scroll, go
back, quote, merge or finish, until it finishes or its budget is spent."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from pydantic import ValidationError

from models.errors import LLMCallError
from models.llm import ChatResult, llm_cost
from pipeline.methods.webagent.browsing.agent import Choice, clean_query
from pipeline.events import Link, Status, StepEvent
from pipeline.payloads import ActionPayload, passage_refs
from pipeline.methods.webagent.agent import Agent
from pipeline.prompting import load_prompt


class InteractiveAgent(Agent):
    """Chooses each action with the model, within WebCPM's masks and rules."""

    def browse(self) -> Iterator[StepEvent]:
        prompt = load_prompt("webagent_act")
        ended_by, invalid_in_row = "budget", 0
        while self.step < self.cfg.max_steps and self.browser is not None:
            self.ctx.check_cancelled()
            choice = self.tab.allowed(steps_left := self.cfg.max_steps - self.step)
            if choice.actions == ["finish"]:  # a call could only choose Finish: none is made
                ended_by = "only_finish"
                break
            self.step += 1
            step_id = self.tracer.new_id("w")
            base = {"step": self.step, "allowed": choice.actions, "rules": choice.rules}
            yield self._event(ActionPayload(action="choose", **base, **self._screen()),
                              f"Action {self.step}: choosing…", step_id, Status.RUNNING)
            try:
                result = self._choose(prompt, choice, steps_left)
            except LLMCallError as exc:
                message = f"The agent stopped at action {self.step}: {exc}"
                yield self._event(ActionPayload(action="invalid", **base, error=str(exc)),
                                  f"Action {self.step} failed", step_id, Status.FAILED)
                yield self._warn(message, step_id, "Model call failed")
                self.parent, ended_by = self.last_id, "error"
                break
            cost = llm_cost(result)
            reply = _parse(result.text, choice)
            if reply is None:
                invalid_in_row += 1
                self.tab.note("(an invalid reply)")
                yield self._event(ActionPayload(action="invalid", **base, refused=f"not an allowed action: "
                                                f"{result.text[:120]!r}"), "Invalid reply", step_id, **cost)
                self.parent = self.last_id
                if "finish" in choice.actions or invalid_in_row >= 2:  # WebCPM: an invalid output becomes Finish
                    ended_by = "invalid"
                    break
                continue
            invalid_in_row = 0
            outcome = yield from self._apply(reply, base, step_id, cost)
            self.parent = self.last_id
            if outcome:
                ended_by = outcome
                break
        yield from self._finish(ended_by)

    def _choose(self, prompt, choice: Choice, steps_left: int) -> ChatResult:
        values = self.tab.prompt_values(self.question, steps_left, choice)
        options = replace(prompt.options(self.ctx.settings.temperature), json_schema=choice.schema())
        return self.ctx.llm.chat(prompt.messages(**values), options)

    def _apply(self, reply, base: dict, step_id: str, cost: dict):
        """Carry out one allowed action; yields its step (and notes); returns how the browsing ended, if it did."""
        action = reply.action
        tab = self.tab
        if action == "finish":
            yield self._event(ActionPayload(action="finish", ended_by="model", **base), "Finish", step_id, **cost)
            return "model"
        if action == "search":
            return (yield from self._search(clean_query(reply.query), base, step_id, cost))
        if action == "load":
            yield from self._load(next(r for r in tab.results if r.number == reply.result), base, step_id, cost)
        elif action in ("scroll_down", "scroll_up"):
            tab.scroll(down=action == "scroll_down")
            where = tab.page.title if tab.view == "page" else "results"
            label = "Scroll down" if action == "scroll_down" else "Scroll up"
            yield self._event(ActionPayload(action=action, **base, **self._screen()),
                              f"{label}: {where} ({tab.position()})", step_id, **cost)
        elif action == "back":
            tab.back()
            yield self._event(ActionPayload(action="back", **base, **self._screen()), "Back to the results",
                              step_id, **cost)
        elif action == "quote":
            yield self._quote(sorted(dict.fromkeys(reply.sentences)), base, step_id, cost)
        elif action == "merge":
            first, second, merged = tab.merge(step_id)
            number = len(tab.facts)
            yield self._event(ActionPayload(action="merge", fact=number, merged=[number, number + 1], **base,
                                            passages=passage_refs(merged.passages)),
                              f"Merge facts [{number}] + [{number + 1}]", step_id,
                              links=[Link(target=first.step, type="merge"), Link(target=second.step, type="merge")],
                              **cost)
        return None



def _parse(text: str, choice: Choice):
    """The reply as an allowed action, or None when it is not one."""
    try:
        return choice.reply_model().model_validate_json(text.strip()).root
    except (ValidationError, ValueError):
        return None
