"""The real-documents benchmark (benchmarks/real_documents.py, issue 33): its scoring, its question set (well
formed, every gold answer in a quote that is in the named document), its documents (as SOURCES.md lists them),
and one question run through the run service with a scripted model."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from functools import lru_cache

import pytest
from langchain_core.documents import Document

from benchmarks.real_documents import (COLLECTION, DATA, DOCS, KINDS, Question, document_files, found,
                                       load_questions, mentions, normalise, report, run_question, score,
                                       share_of_parts, summarise, tokens)

QUESTIONS = load_questions()


def _q(kind: str, answers=(), parts=None) -> Question:
    parts = [list(p) for p in parts] if parts else []
    return Question(id="x", kind=kind, question="What?", answers=[a for p in parts for a in p] or list(answers),
                    parts=parts)


# -- scoring ------------------------------------------------------------------------------------------------

def test_aliases_match_as_whole_tokens_after_normalisation():
    assert mentions("Use the --skip-text option.", "--skip-text")
    assert mentions("pass skip text", "--skip-text")
    assert mentions("It writes PDF/A-2b files", "pdf a 2b") and mentions("pdf a 2b", "PDF/A-2b")
    assert mentions("Set OMP_THREAD_LIMIT=2", "omp thread limit")
    assert mentions("Each identiﬁer", "identifier")  # NFKC: the PDF's ligature
    assert mentions("C and C++", "c")
    assert not mentions("camlidldll builds it", "camlidl")
    assert not mentions("boolean", "bool")
    assert not mentions("anything", "/*") and not mentions("anything", "")


def test_numbers_are_compared_as_whole_numbers():
    assert tokens("R 4.2.0, p = 0.0082; 1,000 pages.") == ["r", "4.2.0", "p", "0.0082", "1,000", "pages"]
    assert mentions("It exits with code 3.", "3")
    assert not mentions("It waits 30 seconds", "3")
    assert not mentions("version 3.5", "3") and not mentions("version 3.5", "5")
    assert not mentions("R 4.2 was used", "4.2.0") and mentions("R 4.2.0 was used", "4.2.0")
    assert not mentions("HC4 and -O1", "4") and not mentions("HC4 and -O1", "1")
    assert normalise("  Port\n5000! ") == "port 5000"


def test_a_lookup_is_right_when_the_answer_holds_an_alias_and_citations_do_not_count():
    q = _q("lookup", ["HC3"])
    assert score(q, "vcovHC uses HC3 by default [2].") == 1.0
    assert score(q, "It uses HC0 [3].") == 0.0
    number = _q("lookup", ["2"])
    assert score(number, "The answer is in [2].") == 0.0  # a citation marker is no answer
    assert score(number, "Two breaks: 2 [1].") == 1.0


def test_parts_score_the_share_found():
    q = _q("two-part", parts=[["1", "-O1"], ["3", "-O3"]])
    assert share_of_parts("The default is -O1 and the highest -O3.", q.parts) == 1.0
    assert score(q, "The default is -O1 [3].") == 0.5
    assert score(q, "Level 2 is the default [1][3].") == 0.0
    ambiguous = _q("ambiguous", parts=[["4"], ["1"]])
    assert score(ambiguous, "C defaults to 4 for truncated weights and 1 for smoothed ones.") == 1.0
    assert score(ambiguous, "C defaults to 4 [1].") == 0.5


def test_unanswerable_is_right_when_the_run_declines():
    q = _q("unanswerable")
    assert score(q, "The selected sources do not answer this question: no passage found mentions “HC5”.",
                 abstained=True) == 1.0
    assert score(q, "The passages do not mention a default threshold [1].") == 1.0
    assert score(q, "The default threshold is 2.0 [1].") == 0.0


def test_an_abstention_on_an_answerable_question_scores_nothing():
    q = _q("lookup", ["deleted"])
    assert score(q, "The sources do not say whether it is deleted.", abstained=True) == 0.0
    assert found("it is deleted", q.answers)


def test_summary_and_table():
    records = [
        {"method": "oner", "kind": "lookup", "score": 1.0, "seconds": 10.0, "llm_calls": 1, "abstained": False,
         "errors": [], "routes": ["oner"]},
        {"method": "oner", "kind": "unanswerable", "score": 0.0, "seconds": 30.0, "llm_calls": 1,
         "abstained": False, "errors": ["boom"], "routes": ["oner"]},
        {"method": "auto", "kind": "lookup", "score": 0.5, "seconds": 20.0, "llm_calls": 3, "abstained": True,
         "errors": [], "routes": ["oner", "ircot"]},
    ]
    summary = summarise(records)
    assert summary["oner"]["n"] == 2 and summary["oner"]["accuracy"] == 50.0
    assert summary["oner"]["by_kind"] == {"lookup": {"n": 1, "accuracy": 100.0},
                                          "unanswerable": {"n": 1, "accuracy": 0.0}}
    assert summary["oner"]["median_s"] == 20.0 and summary["oner"]["p90_s"] == pytest.approx(28.0)
    assert summary["oner"]["errors"] == 1 and summary["auto"]["abstained"] == 1
    assert summary["auto"]["routes"] == {"oner>ircot": 1} and summary["oner"]["routes"] == {"oner": 2}
    text = report(summary)
    assert "| lookup (n) | unanswerable (n) | median s |" in text  # only the kinds present
    assert "| oner | 2 | 50.0 | 100.0 (1) | 0.0 (1) | 20.0 | 28.0 | 1.0 | 0 | 1 | oner 2 |" in text
    assert "| auto | 1 | 50.0 | 50.0 (1) | - | 20.0 |" in text and "oner>ircot 1 |" in text


# -- the question set -----------------------------------------------------------------------------------------

def test_the_question_set_is_well_formed():
    counts = Counter(q.kind for q in QUESTIONS)
    assert len(QUESTIONS) >= 40 and set(counts) == set(KINDS)
    assert counts["unanswerable"] >= 4 and counts["two-part"] >= 4 and counts["multi-step"] >= 4
    assert counts["ambiguous"] >= 3 and counts["lookup"] >= 0.5 * len(QUESTIONS)
    assert len({q.id for q in QUESTIONS}) == len(QUESTIONS)
    assert len({normalise(q.question) for q in QUESTIONS}) == len(QUESTIONS)
    for q in QUESTIONS:
        assert q.source, q.id
        assert (q.kind in ("two-part", "ambiguous")) == bool(q.parts), q.id
        if q.kind != "unanswerable":
            assert q.files and q.evidence, q.id


def test_load_questions_refuses_a_malformed_item(tmp_path):
    good = {"id": "a", "kind": "lookup", "question": "Q?", "answers": ["x"]}
    bad = [{**good, "kind": "trivia"}, {**good, "kind": "unanswerable"}, {**good, "kind": "two-part"},
           {**good, "answers": []}, {**good, "answers": ["--"]}, {**good, "extra": 1},
           {**good, "kind": "two-part", "parts": [["x"], ["y"]]}]
    for row in bad:
        path = tmp_path / "q.jsonl"
        path.write_text(json.dumps(good | {"id": "b"}) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match=":2"):
            load_questions(path)
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="repeat"):
        load_questions(path)


@lru_cache(maxsize=None)
def _document_text(name: str) -> str:
    """A document's text as the app ingests it (pages and table cells), normalised."""
    from corpora.loaders import load_file

    loaded = load_file(DOCS / name)
    cells = [" ".join(cell for row in table.rows for cell in row) for table in loaded.tables]
    return normalise(" ".join([page.text for page in loaded.pages] + cells))


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.id)
def test_every_quote_is_in_its_document_and_holds_the_gold_answer(q):
    names = {name for _, name in document_files()}
    assert set(q.files) <= names, q.files
    for quote in q.evidence:
        assert any(normalise(quote) in _document_text(name) for name in q.files), quote
    if q.kind != "unanswerable":
        quoted = " ".join(q.evidence)
        for part in q.parts or [q.answers]:
            assert found(quoted, part), part


def test_unanswerable_questions_ask_what_their_documents_never_mention():
    """Spot checks that the documents an unanswerable question is about do not hold its key word."""
    absent = {"rd51": ("ocrmypdf/", "minimum"), "rd52": ("sandwich.pdf", "HC5"), "rd53": ("camlidl", "gcc")}
    for qid, (prefix, word) in absent.items():
        q = next(q for q in QUESTIONS if q.id == qid)
        assert q.kind == "unanswerable" and not q.answers
        texts = [_document_text(name) for _, name in document_files() if name.startswith(prefix)]
        assert texts and not any(f" {normalise(word)} " in f" {text} " for text in texts), (qid, word)


# -- the documents ------------------------------------------------------------------------------------------

def test_sources_lists_every_document_with_its_sha256():
    listed = dict(re.findall(r"^\| docs/(\S+) \|.*\| `([0-9a-f]{64})` \|$",
                             (DATA / "SOURCES.md").read_text(encoding="utf-8"), flags=re.MULTILINE))
    on_disk = {name: hashlib.sha256(path.read_bytes()).hexdigest() for path, name in document_files()}
    assert listed == on_disk
    assert {name.rsplit(".", 1)[-1] for name in on_disk} == {"pdf", "html"}
    assert sum(path.stat().st_size for path, _ in document_files()) < 4_000_000


# -- one run, as the benchmark runs it ------------------------------------------------------------------------

def test_run_question_records_the_route_answer_score_and_abstention():
    from pipeline.context import RunContext
    from pipeline.service import RunService
    from pipeline.settings import Settings
    from tests.fakes import ScriptedLLM, ScriptedRetriever

    watcher = Document(page_content="OCR_ON_SUCCESS_DELETE takes precedence over OCR_ON_SUCCESS_ARCHIVE: if both "
                       "options are set for the watcher, the input file will be deleted.",
                       metadata={"title": "Batch processing", "source": "ocrmypdf/batch.html"}, id="w")
    llm = ScriptedLLM(["If both are set, the input file is deleted [1]."])
    seen = []

    def build(request, web, cancel):
        seen.append(request.collections)
        return RunContext(llm=llm, retriever=ScriptedRetriever(lambda query, k: [watcher]),
                          settings=request.settings)

    service = RunService(build)
    question = next(q for q in QUESTIONS if q.id == "rd12")
    record = run_question(service, question, "oner", None, Settings())
    assert seen == [(COLLECTION,)]
    assert record["routes"] == ["oner"] and record["score"] == 1.0 and not record["abstained"]
    assert record["answer"].startswith("If both are set") and record["llm_calls"] == 1 and record["seconds"] >= 0
    assert record["cited"] == ["ocrmypdf/batch.html"] and record["errors"] == []

    unanswerable = next(q for q in QUESTIONS if q.id == "rd52")  # nothing about HC5: abstains without the model
    record = run_question(service, unanswerable, "oner", None, Settings())
    assert record["abstained"] and record["score"] == 1.0 and record["llm_calls"] == 0 and len(llm.calls) == 1


def test_the_command_runs_writes_its_results_and_resumes(tmp_path, monkeypatch, capsys):
    """The whole command with a stand-in runtime (a scripted model, no collection to build): one line per run,
    the table, a results file; a second run skips what is done, and a run with another model is refused."""
    import benchmarks.real_documents as bench
    import pipeline.runtime
    from pipeline.context import RunContext
    from tests.fakes import ScriptedLLM, ScriptedRetriever

    llm = ScriptedLLM(lambda messages, options: "If both are set, the input file is deleted [1].")
    passage = Document(page_content="If both OCR_ON_SUCCESS_DELETE and OCR_ON_SUCCESS_ARCHIVE are set for the "
                       "watcher, the input file will be deleted.", metadata={"title": "Batch processing",
                       "source": "ocrmypdf/batch.html"}, id="w")

    class Collection:
        def count(self):
            return 244

        def files(self):
            return {name: 1 for _, name in document_files()}

    class Store:
        def open(self, name):
            assert name == COLLECTION
            return Collection()

    class Runtime:
        def __init__(self, config):
            self.config, self.store = config, Store()

        def llm(self, choice=None, cancel=None):
            return llm

        def context(self, collections, *, settings=None, web=None, model=None, cancel=None):
            assert collections == [COLLECTION]
            return RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: [passage]), settings=settings)

        def close(self):
            pass

    monkeypatch.setattr(pipeline.runtime, "Runtime", Runtime)
    monkeypatch.setattr(bench, "ensure_collection", lambda runtime, progress=None: "present")
    out = tmp_path / "results.json"
    args = ["--methods", "oner", "--ids", "rd12,rd52", "--out", str(out), "--data-dir", str(tmp_path)]
    assert bench.main(args) == 0
    printed = capsys.readouterr()
    assert "| oner | 2 | 100.0 | 100.0 (1) | 100.0 (1) |" in printed.out
    assert "[1/2] oner rd12 lookup: 1.00" in printed.err and "[2/2] oner rd52 unanswerable: 1.00" in printed.err
    result = json.loads(out.read_text())
    assert [r["id"] for r in result["items"]] == ["rd12", "rd52"] and result["collection"]["passages"] == 244
    assert result["summary"]["oner"]["n"] == 2
    assert result["config"]["model"] == "default" and result["config"]["documents"] == bench.file_hashes()
    calls = len(llm.calls)
    assert bench.main(args) == 0 and len(llm.calls) == calls  # resumed: nothing run again
    assert bench.main(args + ["--model", "fast"]) == 2
    assert "other questions, documents, model" in capsys.readouterr().err
    # a changed setting is recorded with the run (so it never resumes a run at other settings); a bad one is refused
    assert bench.main(args + ["--set", "passage_window=60"]) == 2  # the results file holds the default's run
    wider = ["--methods", "oner", "--ids", "rd12", "--out", str(tmp_path / "w.json"), "--data-dir", str(tmp_path)]
    assert bench.main(wider + ["--set", "passage_window=60"]) == 0
    assert json.loads((tmp_path / "w.json").read_text())["config"]["settings"]["passage_window"] == 60
    assert bench.main(wider + ["--set", "no_such=1"]) == 2 and "Unknown setting" in capsys.readouterr().err
