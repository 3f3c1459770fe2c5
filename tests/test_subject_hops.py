"""benchmarks.subject_hops: the saved chains a hop asked again of its subject's own passages can act on."""

from langchain_core.documents import Document

from benchmarks.subject_hops import subject_rows

GOLD = {"a": {"answers": ["Saginaw"], "decomposition": [{"answer": "William Clemens"}, {"answer": "Saginaw"}]},
        "b": {"answers": ["Paris"]}, "c": {"answers": ["x"]}}


def doc(title, text):
    return Document(page_content=text, metadata={"title": title})


PASSAGES = {
    "Where was William Clemens born?": [doc("Panama", "A country."), doc("William Clemens", "Born in Saginaw.")],
    "Where was Ann Blyth born?": [doc("Ann Blyth", "An actress."), doc("Ann Blyth", "Born in 1928.")],
    "Who wrote Rusalka?": [doc("Dvorak", "A composer.")],
}


def item(item_id, *hops, method="ircot"):
    return {"id": item_id, "method": method, "hops": [{"question": q, "answer": a} for q, a in hops]}


def test_only_chains_ending_unanswered_with_some_but_not_all_passages_titled_by_the_hop_count():
    items = [item("a", ("Who directed Torchy Blane in Panama?", "William Clemens"), ("Where was William Clemens born?", None)),
             item("a", ("Where was William Clemens born?", None)),  # the same item from another file: once
             item("b", ("Where was Ann Blyth born?", None)),  # every passage titled by it: nothing to narrow
             item("c", ("Who wrote Rusalka?", None)),  # none titled by it
             item("d", ("Where was William Clemens born?", "Saginaw")),  # answered
             item("e", ("Where was William Clemens born?", None), method="oner")]
    unanswered, rows = subject_rows(GOLD, items, lambda query, k: PASSAGES[query][:k], k=4)
    assert unanswered == 3
    assert rows == [{"id": "a", "asked": "Where was William Clemens born?", "titles": ["William Clemens"],
                     "held": ["Saginaw"]}]  # William Clemens is named by the sub-question itself
