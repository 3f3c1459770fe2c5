// Shortcuts on the readings of a tree in the step list (#reasoning): "Leave out" on a kept reading, "Put back" on
// a pruned one. A click (or Enter/Space: they are buttons) ticks the matching change in "Change the answer"
// (#steer, ui/steer.py) and moves the focus to "Rewrite the answer". The server checks every change again
// against the run it showed, so a button is a shortcut, never a permission.
(() => {
  const TIPS = {
    "Leave out": "Tick this reading to be left out of the answer, then press Rewrite the answer: only the answer is written again.",
    "Put back": "Tick this pruned reading to be put back into the answer, then press Rewrite the answer: only the answer is written again.",
  };

  function changeFor(step) {
    const steer = document.getElementById("steer");
    if (!steer) return null;
    const wanted = `reading ${step}:`;
    return Array.from(steer.querySelectorAll("label")).find((label) => label.textContent.includes(wanted)) || null;
  }

  function tick(step) {
    const label = changeFor(step);
    if (!label) return;
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
      const step = item.getAttribute("data-step");
      const offered = changeFor(step);
      const old = title && title.querySelector(".rv-steer");
      const text = item.classList.contains("state-pruned") ? "Put back" : "Leave out";
      if (!title || (old && old.textContent === text && offered)) return;
      if (old) old.remove();
      if (!offered) return;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "rv-steer";
      button.textContent = text;
      button.title = TIPS[text];
      button.addEventListener("click", (event) => {
        event.stopPropagation();
        tick(step);
      });
      title.appendChild(button);
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
