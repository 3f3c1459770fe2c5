// Citation links in answers ([n]: <a class="cite" href="#cite-<run>-<n>">, see ui/answer.py) open, highlight and
// show the cited passage listed under the same answer: <details class="source" id="cite-<run>-<n>"> whose
// summary starts with "[n]". Gradio's chat sanitiser drops data-* attributes, so the number is read from the
// href (or, failing that, from the link's text), and the passage is looked for in the link's own message first.
(() => {
  const numberIn = (text, pattern) => {
    const match = pattern.exec(text || "");
    return match ? match[1] : null;
  };

  function citedSource(marker) {
    const href = marker.getAttribute("href") || "";
    const number = numberIn(href, /-(\d+)$/) || numberIn(marker.textContent, /\[(\d+)\]/);
    if (!number) return null;
    const id = href.startsWith("#") ? href.slice(1) : "";
    const message = marker.closest(".message-content, .message, [data-testid=bot]") || document;
    const sources = Array.from(message.querySelectorAll("details.source"));
    const byNumber = (source) => {
      const summary = source.querySelector("summary");
      return numberIn(summary && summary.textContent, /^\s*\[(\d+)\]/) === number;
    };
    const found = sources.find((source) => id && source.id === id) || sources.find(byNumber);
    if (found) return found;
    const elsewhere = id ? document.getElementById(id) : null;
    return elsewhere && elsewhere.matches("details.source") ? elsewhere : null;
  }

  document.addEventListener("click", (event) => {
    const marker = event.target.closest ? event.target.closest(".cite") : null;
    if (!marker) return;
    event.preventDefault(); // the page's address stays as it is
    const source = citedSource(marker);
    if (!source) return;
    source.open = true;
    source.classList.add("highlight");
    source.scrollIntoView({ block: "nearest" });
    setTimeout(() => source.classList.remove("highlight"), 1500);
  });

  // Enter follows a link by itself; Space does too on a citation, as on a button.
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.key === " " && target.classList && target.classList.contains("cite")) {
      event.preventDefault();
      target.click();
    }
  });
})();
