// Shortcuts on the steps of a finished run in the step list (#reasoning), each the same change as one offered under
// the answer (ui/steer.py):
// - on a tree's reading: "Leave out", "Clarify once more" (kept) or "Put back" (pruned) tick its change in "Change
//   the answer" (#steer); "Rewrite" chooses it in "Rewrite a step" (#step-choice);
// - on a walk's visited passage: "Read too" ticks its change;
// - on a chain's sentence or hop: "Rewrite" chooses it in "Rewrite a step";
// - on a passage of the answer: "Drop"; on a sentence of a page the web agent showed: "Add as fact" (both tick).
// A click (or Enter/Space: they are buttons) ticks or chooses, then moves the focus to what comes next (Rewrite the
// answer, or the step's new text). The server checks every change again against the run it showed, so a button is
// a shortcut, never a permission.
(() => {
  const REWRITE_TIP = "Choose this step in Rewrite a step: give its new text there, then press Rewrite from this step.";
  // Ticking shortcuts: the item they sit on, their text and tooltip, and how the label of their change starts and
  // what it holds.
  const TICKS = [
    { on: "li.kind-node", text: "Leave out", starts: "Leave out reading", holds: (step) => `reading ${step}:`,
      tip: "Tick this reading to be left out of the answer, then press Rewrite the answer: only the answer is written again." },
    { on: "li.kind-node", text: "Put back", starts: "Put back reading", holds: (step) => `reading ${step}:`,
      tip: "Tick this pruned reading to be put back into the answer, then press Rewrite the answer: only the answer is written again." },
    { on: "li.kind-node", text: "Clarify once more", starts: "Clarify reading", holds: (step) => `reading ${step} once more:`,
      tip: "Tick this reading to be clarified once more over the passages already found, then press Rewrite the answer: its new readings are verified and answered too." },
    { on: "li.kind-visit", text: "Read too", starts: "Read visited passage", holds: (step) => `passage ${step} too:`,
      tip: "Tick this visited passage to be read with the answer's passages, then press Rewrite the answer." },
  ];
  // Choosing shortcuts: the item, and the text of its option in #step-choice (ui.steer.step_choices' labels).
  const PICKS = [
    { on: "li.kind-node", option: (step) => `Reading ${step}, its answer:` },
    { on: "li.kind-hop, li.kind-subquestion", option: (step) => `(${step}):` },
  ];

  function ticked(shortcut, step) {
    return label(shortcut.starts, shortcut.holds(step));
  }

  function rewritable(step) {
    const offers = document.querySelector("#step-offers .step-offers");
    const panel = document.getElementById("continue-chain");
    if (!offers || !panel || panel.offsetParent === null) return false;
    return (offers.getAttribute("data-steps") || "").split(" ").includes(step);
  }

  function tickLabel(found) {
    const box = found.querySelector("input[type=checkbox]");
    if (box && !box.checked) found.click();
    const rewrite = document.getElementById("rewrite");
    if (rewrite) rewrite.focus();
  }

  function tick(shortcut, step) {
    const found = ticked(shortcut, step);  // looked up again: the list may have been redrawn
    if (found) tickLabel(found);
  }

  function pick(shortcut, step) {
    const input = document.querySelector("#step-choice input");
    if (!input) return;
    input.focus();
    input.click();  // opens the options
    let tries = 0;
    const choose = () => {
      const wanted = shortcut.option(step);
      const item = Array.from(document.querySelectorAll("ul[role=listbox] li"))
        .find((li) => li.textContent.includes(wanted));
      if (!item && tries++ < 20) {
        requestAnimationFrame(choose);
        return;
      }
      if (item) item.dispatchEvent(new MouseEvent("mousedown", { bubbles: true, cancelable: true }));
      const text = document.querySelector("#step-text textarea");
      if (text) text.focus();
    };
    requestAnimationFrame(choose);
  }

  function button(text, tip, action) {
    const made = document.createElement("button");
    made.type = "button";
    made.className = "rv-steer";
    made.textContent = text;
    made.title = tip;
    made.addEventListener("click", (event) => {
      event.stopPropagation();
      action();
    });
    return made;
  }

  // Shortcuts inside a card: on each passage of the last answer ("Drop", the passage's number in the answer), and
  // on each sentence of a page window the web agent showed ("Add as fact", the step and the sentence's number).
  const INNER = [
    { items: () => {
        const answers = document.querySelectorAll("#reasoning li.kind-answer[data-step]");
        const last = answers[answers.length - 1];
        return last ? Array.from(last.querySelectorAll(":scope > .rv-card .rv-passages li")) : [];
      },
      text: "Drop", starts: "Drop passage",
      holds: (li) => `${(li.querySelector(":scope > .rv-passage-title") || {}).textContent || "?"}:`,
      tip: "Tick this passage to be dropped from the answer's evidence, then press Rewrite the answer: the answer is written again without it." },
    { items: () => Array.from(document.querySelectorAll("#reasoning li.kind-action[data-step] .rv-window ol > li")),
      text: "Add as fact", starts: "Add as a fact",
      holds: (li) => `(${li.closest("li[data-step]").getAttribute("data-step")}, sentence ${li.getAttribute("value")}):`,
      tip: "Tick this sentence to be added to the agent's facts, then press Rewrite the answer: the answer is written again with it." },
  ];

  // The changes offered under the answer, (label, text): read once per pass over the step list, which may hold
  // hundreds of steps and sentences, rather than once per step.
  let cached = null;

  function changes() {
    if (cached) return cached;
    const steer = document.getElementById("steer");
    return steer ? Array.from(steer.querySelectorAll("label")).map((found) => [found, found.textContent.trim()]) : [];
  }

  function label(starts, wanted) {
    const found = changes().find(([, text]) => text.startsWith(starts) && text.includes(wanted));
    return found ? found[0] : null;
  }

  function decorateInner() {
    INNER.forEach((shortcut) => shortcut.items().forEach((li) => {
      const old = li.querySelector(":scope > .rv-steer");
      const offered = label(shortcut.starts, shortcut.holds(li));
      if (Boolean(old) === Boolean(offered)) return;
      if (old) {
        old.remove();
        return;
      }
      const made = button(shortcut.text, shortcut.tip, () => {
        const found = label(shortcut.starts, shortcut.holds(li));
        if (found) tickLabel(found);
      });
      const title = li.querySelector(":scope > .rv-passage-title");
      if (title) title.after(made);
      else li.prepend(made);
    }));
  }

  function decorate() {
    cached = null;
    cached = changes();
    try {
      decorateSteps();
      decorateInner();
    } finally {
      cached = null;  // a click looks the labels up afresh
    }
  }

  function decorateSteps() {
    const list = document.getElementById("reasoning");
    if (!list) return;
    list.querySelectorAll("li[data-step]").forEach((item) => {
      const title = item.querySelector(":scope > .rv-card > .rv-title");
      if (!title) return;
      const step = item.getAttribute("data-step");
      const offered = TICKS.filter((s) => item.matches(s.on) && ticked(s, step))
        .map((s) => ({ text: s.text, tip: s.tip, action: () => tick(s, step) }));
      PICKS.filter((s) => item.matches(s.on) && rewritable(step))
        .forEach((s) => offered.push({ text: "Rewrite", tip: REWRITE_TIP, action: () => pick(s, step) }));
      const shown = Array.from(title.querySelectorAll(":scope > .rv-steer"));
      if (shown.map((b) => b.textContent).join("|") === offered.map((s) => s.text).join("|")) return;
      shown.forEach((old) => old.remove());
      offered.forEach((s) => title.appendChild(button(s.text, s.tip, s.action)));
    });
  }

  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      decorate();
    });
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
