// Citation markers in answers ([n], class "cite") open and show the cited passage listed under the answer,
// on a click or on Enter / Space.
document.addEventListener("click", (event) => {
  const marker = event.target.closest ? event.target.closest(".cite") : null;
  if (!marker) return;
  const key = marker.getAttribute("data-cite");
  const source = Array.from(document.querySelectorAll(".source")).find((el) => el.getAttribute("data-cite") === key);
  if (!source) return;
  source.open = true;
  source.classList.add("highlight");
  source.scrollIntoView({ block: "nearest" });
  setTimeout(() => source.classList.remove("highlight"), 1500);
});
document.addEventListener("keydown", (event) => {
  if ((event.key === "Enter" || event.key === " ") && event.target.classList && event.target.classList.contains("cite")) {
    event.preventDefault();
    event.target.click();
  }
});
