// The run's picture (ui/picture.py): a click, Enter or Space on a step opens its card in the reasoning list
// (#reasoning: scrolled to, its details opened, outlined for a moment); the zoom buttons and Ctrl+wheel zoom,
// dragging pans. Gradio updates these areas after every event by patching the page in place and drops what the
// server did not write (an opened <details>, the zoom): both are put back after each update, before the
// browser paints, so the reader keeps their place while the run grows.
(() => {
  const ZOOMS = [0.4, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 3];
  const zoomOf = {}; // "picture" or "compare" -> zoom factor; absent: fit the width
  const opened = new Map(); // JSON [run, step, index of the details in the card] -> true
  const esc = (value) => (window.CSS && CSS.escape ? CSS.escape(value) : String(value).replace(/["\\]/g, "\\$&"));
  const hostOf = (el) => (el.closest("#picture, #compare") || { id: "picture" }).id;
  const runOf = (el) => {
    const marked = el.closest("[data-run]");
    return marked ? marked.getAttribute("data-run") : "";
  };

  function applyZoom(root) {
    (root || document).querySelectorAll(".rp").forEach((picture) => {
      const zoom = zoomOf[hostOf(picture)];
      if (zoom) {
        if (!picture.classList.contains("rp-zoomed")) picture.classList.add("rp-zoomed");
        if (picture.style.getPropertyValue("--rp-zoom") !== String(zoom)) {
          picture.style.setProperty("--rp-zoom", String(zoom));
        }
      } else if (picture.classList.contains("rp-zoomed")) {
        picture.classList.remove("rp-zoomed");
      }
    });
  }

  function zoom(picture, action) {
    const host = hostOf(picture);
    const box = picture.querySelector(".rp-scroll");
    const svg = picture.querySelector(".rp-svg");
    const centre = box ? [(box.scrollLeft + box.clientWidth / 2) / (box.scrollWidth || 1),
                          (box.scrollTop + box.clientHeight / 2) / (box.scrollHeight || 1)] : null;
    if (action === "fit") {
      delete zoomOf[host];
    } else {
      const natural = svg ? parseFloat(svg.style.getPropertyValue("--rp-w")) : 0;
      const current = zoomOf[host] || (natural ? svg.getBoundingClientRect().width / natural : 1);
      const next = action === "in" ? ZOOMS.find((z) => z > current + 0.01)
                                   : [...ZOOMS].reverse().find((z) => z < current - 0.01);
      if (!next) return;
      zoomOf[host] = next;
    }
    applyZoom();
    if (box && centre) { // keep what was in the middle in the middle
      box.scrollLeft = centre[0] * box.scrollWidth - box.clientWidth / 2;
      box.scrollTop = centre[1] * box.scrollHeight - box.clientHeight / 2;
    }
  }

  function itemFor(run, step) {
    const list = document.getElementById("reasoning");
    if (!list || step === null) return null;
    const scope = run ? list.querySelector(`[data-run="${esc(run)}"]`) : null;
    return (scope || list).querySelector(`[data-step="${esc(step)}"]`);
  }

  const cardDetails = (item) => Array.from(item.querySelectorAll(":scope > .rv-card > details"));

  function openCard(node) {
    const run = runOf(node);
    const step = node.getAttribute("data-node");
    const item = itemFor(run, step);
    if (!item) return;
    cardDetails(item).forEach((details, index) => {
      details.open = true;
      opened.set(JSON.stringify([run, step, index]), true);
    });
    item.classList.add("rv-focus");
    setTimeout(() => item.classList.remove("rv-focus"), 1600);
    item.scrollIntoView({ block: "nearest" });
    const card = item.querySelector(":scope > .rv-card");
    if (card) {
      card.setAttribute("tabindex", "-1");
      card.focus({ preventScroll: true });
    }
  }

  function remember(details, open) {
    const item = details.closest("[data-step]");
    if (!item) return;
    const index = cardDetails(item).indexOf(details);
    if (index < 0) return;
    const key = JSON.stringify([runOf(item), item.getAttribute("data-step"), index]);
    if (open) opened.set(key, true); else opened.delete(key);
    if (opened.size > 500) opened.delete(opened.keys().next().value);
  }

  function reopen() {
    for (const key of opened.keys()) {
      const [run, step, index] = JSON.parse(key);
      const item = itemFor(run, step);
      const details = item && cardDetails(item)[index];
      if (details && !details.open) details.open = true;
    }
  }

  // Pan by dragging the picture's background or a step; a drag is not a click.
  let drag = null;
  let dragged = false;
  document.addEventListener("pointerdown", (event) => {
    const box = event.button === 0 && event.target.closest ? event.target.closest(".rp-scroll") : null;
    dragged = false;
    drag = box ? { box, x: event.clientX, y: event.clientY, left: box.scrollLeft, top: box.scrollTop } : null;
  });
  document.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!dragged && Math.abs(dx) + Math.abs(dy) < 5) return;
    dragged = true;
    drag.box.classList.add("rp-dragging");
    drag.box.scrollLeft = drag.left - dx;
    drag.box.scrollTop = drag.top - dy;
  });
  document.addEventListener("pointerup", () => {
    if (drag) drag.box.classList.remove("rp-dragging");
    drag = null;
  });

  document.addEventListener("click", (event) => {
    const target = event.target;
    if (!target.closest) return;
    const button = target.closest(".rp-btn[data-zoom]");
    if (button) {
      const picture = button.closest(".rp");
      if (picture) zoom(picture, button.getAttribute("data-zoom"));
      return;
    }
    const node = target.closest(".rp-node");
    if (node) {
      if (!dragged) openCard(node);
      return;
    }
    const summary = target.closest("#reasoning summary");
    if (summary && summary.parentElement.tagName === "DETAILS") remember(summary.parentElement, !summary.parentElement.open);
  });

  document.addEventListener("keydown", (event) => {
    const node = event.target.closest ? event.target.closest(".rp-node") : null;
    if (node && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      openCard(node);
    }
  });

  document.addEventListener("wheel", (event) => {
    const picture = event.ctrlKey && event.target.closest ? event.target.closest(".rp") : null;
    if (!picture) return;
    event.preventDefault();
    zoom(picture, event.deltaY < 0 ? "in" : "out");
  }, { passive: false });

  // After each update of the list or a picture (mutation observers run before the next paint).
  const watched = new WeakSet();
  function watch() {
    for (const id of ["reasoning", "picture", "compare"]) {
      const area = document.getElementById(id);
      if (!area || watched.has(area)) continue;
      watched.add(area);
      new MutationObserver(() => (id === "reasoning" ? reopen() : applyZoom(area)))
        .observe(area, { childList: true, subtree: true, attributes: true });
    }
  }
  setInterval(watch, 500);
  watch();
})();
