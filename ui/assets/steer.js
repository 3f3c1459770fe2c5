// Shortcuts on the readings of a tree in the step list (#reasoning): "Leave out" and "Clarify once more" on a
// kept reading, "Put back" on a pruned one. A click (or Enter/Space: they are buttons) ticks the matching change
// in "Change the answer" (#steer, ui/steer.py) and moves the focus to "Rewrite the answer". The server checks every
// change again against the run it showed, so a button is a shortcut, never a permission.
(() => {
  // Each shortcut: its text, its tooltip, and what the label of its change in #steer starts with and holds.
  const SHORTCUTS = [
    { text: "Leave out", starts: "Leave out reading", holds: (step) => `reading ${step}:`,
      tip: "Tick this reading to be left out of the answer, then press Rewrite the answer: only the answer is written again." },
    { text: "Put back", starts: "Put back reading", holds: (step) => `reading ${step}:`,
      tip: "Tick this pruned reading to be put back into the answer, then press Rewrite the answer: only the answer is written again." },
    { text: "Clarify once more", starts: "Clarify reading", holds: (step) => `reading ${step} once more:`,
      tip: "Tick this reading to be clarified once more over the passages already found, then press Rewrite the answer: its new readings are verified and answered too." },
  ];

  function changeFor(shortcut, step) {
    const steer = document.getElementById("steer");
    if (!steer) return null;
    const wanted = shortcut.holds(step);
    return Array.from(steer.querySelectorAll("label")).find((label) => {
      const text = label.textContent.trim();
      return text.startsWith(shortcut.starts) && text.includes(wanted);
    }) || null;
  }

  function tick(label) {
    const box = label.querySelector("input[type=checkbox]");
    if (box && !box.checked) label.click();
    const rewrite = document.getElementById("rewrite");
    if (rewrite) rewrite.focus();
  }

  function decorate() {
    const list = document.getElementById("reasoning");
    if (!list) return;
    list.querySelectorAll("li.kind-node[data-step]").forEach((item) => {
      const title = item.querySelector(":scope > .rv-card > .rv-title");
      if (!title) return;
      const step = item.getAttribute("data-step");
      const offered = SHORTCUTS.filter((shortcut) => changeFor(shortcut, step));
      const shown = Array.from(title.querySelectorAll(":scope > .rv-steer"));
      if (shown.map((b) => b.textContent).join("|") === offered.map((s) => s.text).join("|")) return;
      shown.forEach((button) => button.remove());
      offered.forEach((shortcut) => {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "rv-steer";
        button.textContent = shortcut.text;
        button.title = shortcut.tip;
        button.addEventListener("click", (event) => {
          event.stopPropagation();
          const label = changeFor(shortcut, step);  // looked up again: the list may have been redrawn
          if (label) tick(label);
        });
        title.appendChild(button);
      });
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
