"""Steering an answer in a real headless Chromium (issue 35): a reading of a tree left out and the answer rewritten
without it, the picture and the step list showing the edit, the rewritten run's trace replayed with the edit, a
passage dropped, and a "Did you mean?" reading asked alone; a reading clarified once more and its question
rewritten; and the step list's buttons for each change (a reading's, a chain step's, a visited passage's, an answer
passage's, a page sentence's), by keyboard and mouse."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.test_app import AQ, Q23, Q24, ask, last_answer, open_app, wait_done
from tests.fakes import ScriptedLLM, TreeScript

Q19 = "Who won the 1919 Tour de France?"


class EchoTree(TreeScript):
    """The browser tests' tree, whose long answer writes each reading of its prompt as a sentence: the answer
    holds exactly the readings it was given."""

    def reply(self, messages, options):
        prompt = messages[-1]["content"]
        if "Interpretations:\n" in prompt:
            block = prompt.split("Interpretations:\n", 1)[1].split("\nAnswer every", 1)[0]
            return " ".join(f"{line[2:]} [1]." for line in block.splitlines() if line.startswith("- "))
        return super().reply(messages, options)


def tree_script() -> EchoTree:
    return EchoTree({AQ: [(Q24, "Tadej Pogacar"), (Q23, "Jonas Vingegaard"), (Q19, "Firmin Lambot")]},
                    p_true={"Firmin Lambot": 0.0})


def press_and_rewrite(page, button, change) -> None:
    """Press a step list's ``button`` by keyboard: its ``change`` under the answer is ticked and the focus is on
    Rewrite the answer, which Enter then presses."""
    button.focus()
    page.keyboard.press("Enter")  # keyboard-reachable
    expect(change.locator("input")).to_be_checked()
    expect(page.locator("#rewrite")).to_be_focused()
    page.keyboard.press("Enter")


def tick(page, text: str) -> None:
    """Tick the change whose label holds ``text`` in the "Change the answer" list."""
    page.locator("#steer label", has_text=text).first.click()


def test_leaving_out_a_reading_rewrites_the_answer_and_the_trace_replays_the_edit(page, serve, tmp_path):
    open_app(page, serve(tree_script().llm))
    expect(page.locator("#rewrite")).to_be_hidden()
    ask(page, AQ, method="Tree of Clarifications")
    wait_done(page)
    answer = last_answer(page)
    expect(answer).to_contain_text("Jonas Vingegaard")
    expect(page.locator("#rewrite")).to_be_visible()
    # The kept readings may be left out, the pruned one put back, and each passage of the answer dropped.
    expect(page.locator("#steer label", has_text="Leave out reading")).to_have_count(2)
    expect(page.locator("#steer label", has_text="Put back reading")).to_have_count(1)
    expect(page.locator("#steer label", has_text="Drop passage [1]")).to_have_count(1)

    tick(page, "Jonas Vingegaard")
    page.click("#rewrite")
    rewritten = last_answer(page)
    expect(rewritten).to_contain_text("Tadej Pogacar", timeout=30_000)
    expect(page.locator("#reasoning .kind-edit")).to_have_count(1)
    wait_done(page)
    expect(rewritten).not_to_contain_text("Vingegaard")
    # The person's line that asked for it, the first answer still above it.
    expect(page.locator("#chat .message-row.user-row").last).to_contain_text("Leave out reading")
    expect(page.locator("#chat .message-row.bot-row").first).to_contain_text("Jonas Vingegaard")
    # The step list and the picture show the reading pruned by the person.
    expect(page.locator("#reasoning .state-pruned", has_text="Jonas Vingegaard")).to_contain_text("pruned by you")
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("Jonas Vingegaard")
    expect(page.locator("#picture .rp")).to_contain_text("You pruned")
    # The reading left out is now offered back.
    expect(page.locator("#steer label", has_text="Put back reading")).to_have_count(2)

    with page.expect_download() as download:
        page.locator("#trace-files tr:has-text('.jsonl') a").first.click()
    trace = tmp_path / "steered.jsonl"
    download.value.save_as(trace)
    page.click("#new-conversation")
    expect(page.locator("#rewrite")).to_be_hidden()
    with page.expect_file_chooser() as chooser:
        page.click("#replay")
    chooser.value.set_files(str(trace))
    page.wait_for_selector("#reasoning:has-text('Replayed from a trace file')")
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("Jonas Vingegaard")
    expect(last_answer(page)).not_to_contain_text("Vingegaard")
    expect(page.locator("#rewrite")).to_be_visible()  # a replayed answer may be steered too


def test_a_dropped_passage_and_a_did_you_mean_reading(page, serve):
    open_app(page, serve(tree_script().llm))
    ask(page, AQ, method="Tree of Clarifications")
    wait_done(page)
    readings = page.locator("#did-you-mean")
    expect(readings).to_contain_text(Q24)
    expect(readings).to_contain_text(Q23)
    expect(readings).not_to_contain_text(Q19)  # pruned by the verifier: not offered

    tick(page, "Drop passage [1]")
    page.click("#rewrite")
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("[1]", timeout=30_000)
    wait_done(page)

    page.locator("#did-you-mean", has_text=Q24).get_by_text(Q24).click()
    expect(page.locator("#chat .message-row.user-row").last).to_contain_text(Q24, timeout=30_000)
    wait_done(page)
    expect(page.locator("#reasoning .rv-head")).to_contain_text("OneR")
    expect(page.locator("#did-you-mean")).to_be_hidden()  # OneR's answer has no readings to offer


def test_a_readings_shortcut_in_the_step_list_ticks_its_change(page, serve):
    open_app(page, serve(tree_script().llm))
    ask(page, AQ, method="Tree of Clarifications")
    wait_done(page)
    kept = page.locator("#reasoning li.kind-node.state-kept", has_text="Jonas Vingegaard")
    shortcut = kept.locator(".rv-steer").first
    expect(shortcut).to_have_text("Leave out")
    expect(shortcut).to_have_attribute("title", "Tick this reading to be left out of the answer, then press "
                                                "Rewrite the answer: only the answer is written again.")
    press_and_rewrite(page, shortcut, page.locator("#steer label", has_text="Leave out")
                      .filter(has_text="Jonas Vingegaard"))
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("Jonas Vingegaard", timeout=30_000)
    wait_done(page)
    expect(last_answer(page)).not_to_contain_text("Vingegaard")
    expect(page.locator("#reasoning li.kind-node.state-pruned", has_text="Jonas Vingegaard")
           .locator(".rv-steer")).to_have_text(["Put back"])


def chain_script() -> ScriptedLLM:
    """An IRCoT sentence chain that concludes from whatever its first step claims: each reasoning call writes the next
    sentence for the reasoning it was shown; the reader (IRCoT's direct reader reads the passages, not the chain)
    answers Pogacar."""
    def reply(messages, options):
        prompt = messages[-1]["content"]
        if messages[0]["content"].startswith("You answer questions that need facts"):
            if "Vingegaard won twice" in prompt:
                return "So the answer is: Jonas Vingegaard."
            if "Pogacar won twice" in prompt:
                return "So the answer is: Tadej Pogacar."
            return "Pogacar won twice in a row."
        return "Tadej Pogacar [1]."
    return ScriptedLLM(reply)


def test_a_rewritten_chain_step_continues_the_chain_from_it(page, serve):
    question = "Which rider won the Tour de France twice in a row?"
    open_app(page, serve(chain_script()))
    ask(page, question, method="IRCoT")
    wait_done(page)
    expect(last_answer(page)).to_contain_text("Tadej Pogacar")
    expect(page.locator("#continue-chain")).to_be_visible()
    # The step list's shortcut on the sentence chooses it under the answer, shows its text and focuses it.
    sentence = page.locator("#reasoning li.kind-hop", has_text="Pogacar won twice in a row.").last
    shortcut = sentence.locator(":scope > .rv-card .rv-steer")
    expect(shortcut).to_have_text(["Rewrite"])
    shortcut.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#step-choice input")).to_have_value(re.compile(r"^Step 1 \(\w+\): Pogacar won twice"))
    expect(page.locator("#step-text textarea")).to_have_value("Pogacar won twice in a row.")  # its text now
    expect(page.locator("#step-text textarea")).to_be_focused()
    page.fill("#step-text textarea", "Vingegaard won twice in a row, in 2022 and 2023.")
    page.click("#continue-chain")
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("You rewrote a step", timeout=30_000)
    wait_done(page)
    expect(page.locator("#chat .message-row.bot-row")).to_have_count(2)  # the answer written again
    expect(page.locator("#chat .message-row.user-row").last).to_contain_text("Continue the chain from step")
    # The new chain goes on from the edit: the person's step, then the model's conclusion from it.
    expect(page.locator("#reasoning li.kind-hop", has_text="Written by you")).to_contain_text(
        "Vingegaard won twice in a row")
    expect(page.locator("#reasoning li.kind-hop", has_text="So the answer is: Jonas Vingegaard.")).to_have_count(1)
    expect(page.locator("#reasoning li.kind-hop", has_text="So the answer is: Tadej Pogacar.")).to_have_count(1)
    expect(page.locator("#picture .rp")).to_contain_text("You rewrote a step")


def test_a_readings_answer_rewritten_in_the_browser(page, serve):
    open_app(page, serve(tree_script().llm))
    ask(page, AQ, method="Tree of Clarifications")
    wait_done(page)
    page.click("#step-choice input")
    page.click("ul[role=listbox] li:has-text('Jonas Vingegaard')")
    expect(page.locator("#step-text textarea")).to_have_value("Jonas Vingegaard")  # its answer now
    page.fill("#step-text textarea", "Jonas Vingegaard (his first Tour)")
    page.click("#continue-chain")
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("You edited a reading", timeout=30_000)
    wait_done(page)
    expect(last_answer(page)).to_contain_text("Jonas Vingegaard (his first Tour)")
    expect(page.locator("#chat .message-row.user-row").last).to_contain_text("answered")


def test_a_reading_clarified_once_more_and_a_readings_question_rewritten(page, serve):
    femmes = "Who won the 2024 Tour de France Femmes?"
    script = EchoTree({AQ: [(Q24, "Tadej Pogacar"), (Q23, "Jonas Vingegaard"), (Q19, "Firmin Lambot")],
                       Q24: [(femmes, "Katarzyna Niewiadoma")]}, p_true={"Firmin Lambot": 0.0})
    open_app(page, serve(script.llm))
    ask(page, AQ, method="Tree of Clarifications")
    wait_done(page)
    expect(page.locator("#steer label", has_text="Look for more readings of the question")).to_have_count(1)
    # The step list's shortcut on the reading ticks its change, and the focus goes to Rewrite.
    label = page.locator("#steer label", has_text="Leave out reading").filter(has_text="Tadej Pogacar").inner_text()
    kept = page.locator(f"#reasoning li.kind-node.state-kept[data-step={label.split()[3].rstrip(':')}]")
    expect(kept.locator(":scope > .rv-card .rv-steer")).to_have_text(["Leave out", "Clarify once more", "Rewrite"])
    press_and_rewrite(page, kept.locator(".rv-steer", has_text="Clarify once more"),
                      page.locator("#steer label", has_text="Clarify reading").filter(has_text="Tadej Pogacar"))
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("You asked for more readings of", timeout=30_000)
    wait_done(page)
    # The new reading is a node of the tree, under the one expanded, and its answer is in the rewritten answer.
    # (The step list nests a node's steps under it: the innermost match is the new reading's own item.)
    expect(page.locator("#reasoning li.kind-node.state-kept", has_text=femmes).last).to_contain_text(
        "Katarzyna Niewiadoma")
    expect(page.locator("#picture .rp")).to_contain_text("Katarzyna Niewiadoma")
    expect(last_answer(page)).to_contain_text("Katarzyna Niewiadoma")
    expect(last_answer(page)).to_contain_text("Tadej Pogacar")

    # A reading's clarified question: choosing it shows its text, which the person rewrites.
    page.click("#step-choice input")
    page.click(f"ul[role=listbox] li:has-text('its question: {Q23}')")
    expect(page.locator("#step-text textarea")).to_have_value(Q23)
    page.fill("#step-text textarea", "Who won the 2023 Tour de France, the men's race?")
    page.click("#continue-chain")
    expect(page.locator("#reasoning .kind-edit").last).to_contain_text("You edited a reading", timeout=30_000)
    wait_done(page)
    expect(last_answer(page)).to_contain_text("the men's race? Jonas Vingegaard")
    expect(page.locator("#chat .message-row.user-row").last).to_contain_text("asking")


def test_a_visited_passage_read_too_from_the_step_list(page, serve):
    from tests.browser.test_kgp import CYCLING, KGP, kgp_model

    open_app(page, serve(kgp_model("Who won the 2023 Tour de France?", "Jonas Vingegaard won in 2023 [1]."),
                         notes=CYCLING))
    ask(page, "Who won the Tour de France the year before Pogacar's third win?", method=KGP)
    wait_done(page)
    shortcut = page.locator("#reasoning li.kind-visit .rv-steer", has_text="Read too").first
    expect(shortcut).to_have_attribute("title", "Tick this visited passage to be read with the answer's passages, "
                                                "then press Rewrite the answer.")
    visit = shortcut.locator("xpath=ancestor::li[contains(@class, 'kind-visit')][1]").get_attribute("data-step")
    press_and_rewrite(page, shortcut, page.locator("#steer label", has_text=f"Read visited passage {visit} too:"))
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("You pinned", timeout=30_000)
    wait_done(page)
    expect(page.locator("#chat .message-row.bot-row")).to_have_count(2)


def test_a_passage_of_the_answer_dropped_from_its_own_button(page, serve):
    open_app(page, serve(tree_script().llm))
    ask(page, AQ, method="Tree of Clarifications")
    wait_done(page)
    answer = page.locator("#reasoning li.kind-answer").last
    answer.locator(".rv-passages summary").first.click()
    drop = answer.locator(".rv-passages li").first.locator(".rv-steer")
    expect(drop).to_have_text("Drop")
    expect(drop).to_have_attribute("title", "Tick this passage to be dropped from the answer's evidence, then press "
                                            "Rewrite the answer: the answer is written again without it.")
    press_and_rewrite(page, drop, page.locator("#steer label", has_text="Drop passage [1]:"))
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("You dropped passage [1]", timeout=30_000)
    wait_done(page)


def test_a_sentence_the_web_agent_showed_added_as_a_fact_from_its_own_button(page, serve):
    from tests.test_webagent import FINISH, Agent, load, quote, search

    agent = Agent([search("tour de france 2024"), load(1), quote(1), FINISH], answer="Tadej Pogacar [1].")
    page_text = ("Tadej Pogacar won the 2024 Tour de France. It was his third overall victory. "
                 "He also won the Giro d'Italia that year.")
    open_app(page, serve(agent.llm, notes=[("Tour de France 2024", page_text)]))
    # The scripted model plays the interactive agent, chosen in the settings panel (the default is hop by hop).
    page.locator("#method-settings").get_by_text("Method settings").click()
    page.locator("#settings-webagent").get_by_text("Web agent (search, read, quote)").click()
    page.locator("#setting-webagent-mode input[value=interactive]").check()
    ask(page, Q24, method="Web agent")
    wait_done(page)
    window = page.locator("#reasoning li.kind-action .rv-window").first
    window.locator("summary").click()
    add = window.locator("ol > li .rv-steer", has_text="Add as fact").first
    expect(add).to_be_visible()
    step = add.locator("xpath=ancestor::li[@data-step][1]").get_attribute("data-step")
    number = add.locator("xpath=..").get_attribute("value")
    add.click()
    expect(page.locator("#steer label", has_text=f"({step}, sentence {number}):").locator("input")).to_be_checked()
    page.click("#rewrite")
    expect(page.locator("#reasoning .kind-edit")).to_contain_text("You added a fact", timeout=30_000)
    wait_done(page)
