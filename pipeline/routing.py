"""Auto: pick a method for a question, and say why.

Three stages, all free of model calls.

1. Cues that a question needs several hops (IRCoT): it compares two things ("..., A or B?", "both", "the same"),
   reaches one entity through another ("the director of the film X", "X's wife", "the paternal grandfather of
   X", "the nationality of the composer of ...", anything asked of "the director of film X" other than who
   that is), or is long (13 words or more: chained questions carry their bridge in words).
2. Cues that a question is ambiguous (ToC): its wording points at something that changes over time or has
   several referents — a time-relative word ("last", "next", "current"), a contest held again and again ("who
   won"), a count or record ("how many times", "the most"), a performance or role ("who sang", "who played",
   "who is X in Y"), a filming place, several questions in one, or a plural answer ("what are ...").
3. Otherwise the nearest labelled questions vote: ``routing_examples.yaml`` holds questions written by hand for
   this app (none from an evaluation file), each labelled with the method that suits it (IRCoT, ToC for
   ambiguous questions with several readings, OneR for plain single-fact ones). Only labelled questions that no
   cue catches vote (a question reaches the vote only when no cue caught it, so those are the ones it can
   resemble); the ``k`` nearest by embedding cosine vote with their similarity. IRCoT or ToC wins with the
   largest vote; ToC also wins over OneR with ``toc_share`` (40%) of their joint weight, as ambiguous questions
   are fewer among the voters and look plain.

What the wording cannot show: a question such as "Who sings Does he love you?" is ambiguous because two songs
share the title, which is a fact about the world. Accuracy and its limits: ``benchmarks/routing_accuracy.py``
(docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import yaml
from langchain_core.embeddings import Embeddings

EXAMPLES = Path(__file__).with_name("routing_examples.yaml")


def _method_reasons() -> dict[str, str]:
    """Why each registered method suits a question, in its own words (``MethodSpec.chosen_because``)."""
    from pipeline.methods import METHODS  # the registry imports every method; Auto needs it only when choosing

    return {name: spec.chosen_because for name, spec in METHODS.items() if spec.chosen_because}


_COMPARISON = re.compile(
    r"\b(first|earlier|later|older|younger|longer|shorter|larger|smaller|bigger|higher|recently)\b.*\bor\b|"
    r"\band\b.*\b(same|both)\b|\b(both|same)\b.*\band\b|,[^,]+\bor\b[^,]+\?\s*$",
    re.IGNORECASE,
)
_RELATION = (r"(director|author|founder|creator|father|mother|wife|husband|spouse|son|daughter|performer|singer|"
             r"composer|producer|publisher|owner|capital|birthplace|country|city|team|company|band)")
_NESTED = re.compile(
    rf"\b{_RELATION}\s+of\s+(the\s+)?\w*\s*{_RELATION}\s+of\b|"
    r"\b(of|by|for|in|from)\s+the\s+\w+(\s+\w+)?\s+(who|that|which|whose|where)\b|"
    rf"\bthe\s+{_RELATION}\s+of\s+(the\s+)?"
    r"[\w'\"-]+.*\b(born|die|died|live|lived|located|founded|released|published|start|play|played|work|worked)\b",
    re.IGNORECASE,
)
_KIN = (r"(father|mother|parents?|husband|wife|spouse|widow|widower|son|daughter|child|children|brother|sister|"
        r"siblings?|cousin|girlfriend|boyfriend|partner)")
# "Where did X's wife die?", "What nationality is X's father?" ("Who is X's wife?" alone is one hop).
_POSSESSIVE = re.compile(
    rf"\w's\s+((paternal|maternal|eldest|youngest|first|second)\s+)?({_KIN}|{_RELATION}|purchaser|successor)\b",
    re.IGNORECASE,
)
# "Who is X's wife?" alone is one hop; "What is the place of birth of X's father?" is not ("of" before the name).
_ONE_POSSESSIVE = re.compile(
    r"^(who|what)\s+(is|was|are|were)\s+(the\s+name\s+of\s+)?(?:(?!\bof\b)[^?])*'s\s+\w+\s*\??\s*$", re.IGNORECASE)
# A relative two steps away: a grandparent is a parent's parent, an uncle a parent's brother.
_COMPOUND_KIN = re.compile(
    r"\b(paternal|maternal|grandfather|grandmother|grandson|granddaughter|grandparents?|uncle|aunt|nephew|niece|"
    r"in-law|in law|stepfather|stepmother)\b",
    re.IGNORECASE,
)
# "What nationality is the director of film X?": a property of someone named by their role.
_PROPERTY_OF_ROLE = re.compile(
    rf"\b(nationality|place of (birth|death)|birthday|cause of death)\b.*\b{_RELATION}\s+of\b", re.IGNORECASE)
# "Who married the publisher of X?", "Who is the child of the president under whom ...?"
_KIN_OF_ROLE = re.compile(
    rf"\b({_KIN}|married|marry|marries)\s+(of\s+|to\s+)?the\s+(\w+\s+){{0,2}}({_RELATION}|star|actor|actress|"
    r"president|king|queen|monarch|ruler|emperor|pope|ceo)\b",
    re.IGNORECASE,
)
# "Where did the director of film X study?", "Which country the performer of song X is from?": something said of
# a person named by their role or kinship. Asking for the role itself ("Who is the director of X?") is one hop.
_PERSON = (r"(director|author|writer|founder|creator|performer|singer|composer|producer|publisher|owner|"
           rf"{_KIN[1:-1]})")
_ROLE_THEN_MORE = re.compile(rf"\bthe\s+{_PERSON}\s+of\b", re.IGNORECASE)
_ASKS_FOR_ROLE = re.compile(rf"^(who|what)(\s+|'s\s*)(is|was|are|were|'s)?\s*the\s+{_PERSON}\s+of\b", re.IGNORECASE)
LONG_QUESTION_WORDS = 13


def multi_hop_cue(question: str) -> str | None:
    """Why ``question`` needs several hops, or None when nothing in its wording says so (its structure, or its
    length)."""
    if why := hop_structure_cue(question):
        return why
    if len(question.split()) >= LONG_QUESTION_WORDS:
        return (f"it is long ({len(question.split())} words), as questions that chain facts through a bridge "
                "entity are")
    return None


COMPARES = "it compares or combines two things, so it needs facts from several passages"


def hop_structure_cue(question: str) -> str | None:
    """Why the structure of ``question`` says it needs several hops (a comparison, ``COMPARES``; something
    reached through something else; a relative two steps away), or None. Unlike ``multi_hop_cue``, length alone
    is no cue."""
    if _COMPARISON.search(question):
        return COMPARES
    if (_NESTED.search(question) or _PROPERTY_OF_ROLE.search(question) or _KIN_OF_ROLE.search(question)
            or (_ROLE_THEN_MORE.search(question) and not _ASKS_FOR_ROLE.search(question))):
        return "it asks about something described through something else, so it takes more than one hop"
    if _POSSESSIVE.search(question) and not _ONE_POSSESSIVE.search(question):
        return ("it asks about someone reached through another's relation (X's wife, X's father), so it takes more "
                "than one hop")
    if _COMPOUND_KIN.search(question):
        return "it asks for a relative two steps away (a grandparent, an uncle...), so it takes more than one hop"
    return None


# Wording that points at something that changes over time or has several referents, and what it means. Each
# was kept because it caught ambiguous tuning questions (ASQA dev items 50-99) without catching plain ones;
# "film", "song" and "first" were not (on those questions they won no ASQA question the rest missed, and cost
# plain ones).
_AMBIGUITY = [
    (re.compile(r"\b(last|latest|the new|newest|next|current|currently|now|today|this year|recent|recently|"
                r"upcoming|(when|who|where|what) will)\b", re.IGNORECASE),
     "it asks about something that changes over time"),
    (re.compile(r"\b(won|win|wins|winners?|champions?|championships?)\b", re.IGNORECASE),
     "it asks about a contest held again and again, so the year or edition matters"),
    (re.compile(r"\b(how many times|first time|the most|the highest|world record|record for|most recent)\b",
                re.IGNORECASE),
     "it asks for a count or a record, which changes over time"),
    (re.compile(r"\b(sings|sang|sung|singers?|plays|played|voices|voiced|starred|starring|portrays|portrayed|"
                r"actors?|actress(es)?)\b", re.IGNORECASE),
     "it asks about a performance or a role, and songs, roles and films often have several versions"),
    (re.compile(r"\b(filmed|filming|film the|film it)\b", re.IGNORECASE),
     "it asks where something was filmed, often in several places or for several versions"),
    (re.compile(r"^who('s|\s+is|\s+was)\s+(\S+\s+){1,4}(in|on)\s", re.IGNORECASE),
     "it asks who someone is in a work or a place, which depends on the version or the period"),
    (re.compile(r"\band\s+(what|who|when|where|why|how|which)\b", re.IGNORECASE),
     "it asks several things at once"),
    (re.compile(r"^(what|which|who)\s+are\b", re.IGNORECASE),
     "it asks for several things"),
]


def ambiguity_cue(question: str) -> str | None:
    """Why ``question`` may have several readings, or None when nothing in its wording says so."""
    for pattern, why in _AMBIGUITY:
        found = pattern.search(question)
        if found:
            return f"{why} (\"{found.group(0).strip()}\")"
    return None


def cue(question: str) -> str | None:
    """The method a cue in the wording of ``question`` points to (IRCoT first, then ToC), or None."""
    if multi_hop_cue(question):
        return "ircot"
    if ambiguity_cue(question):
        return "toc"
    return None


@dataclass(frozen=True)
class Choice:
    method: str
    reason: str


@functools.lru_cache(maxsize=None)
def labelled_questions(path: Path = EXAMPLES) -> tuple[tuple[str, str], ...]:
    """``(question, method)`` pairs of the labelled file."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    return tuple((q, method) for method, questions in spec.items() for q in questions)


class Router:
    """Cues first, then the nearest labelled questions vote for a method. ``embeddings`` may be a zero-argument
    function returning the embedder, so that building a router costs nothing until Auto is first used."""

    def __init__(self, embeddings: Embeddings | Callable[[], Embeddings], k: int = 7,
                 examples: Path = EXAMPLES, toc_share: float = 0.4, reasons: dict[str, str] | None = None) -> None:
        self._embeddings = embeddings
        self._reasons = reasons
        self.k = k
        self.toc_share = toc_share
        self._path = examples
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def reasons(self) -> dict[str, str]:
        """Why a label suits a question, in words for the view ("Auto picked X because ..."): each method's
        own (``MethodSpec.chosen_because``) unless given."""
        if self._reasons is None:
            self._reasons = _method_reasons()
        return self._reasons

    def _embedder(self) -> Embeddings:
        return self._embeddings if isinstance(self._embeddings, Embeddings) else self._embeddings()

    @property
    def examples(self) -> tuple[tuple[str, str], ...]:
        return labelled_questions(self._path)

    @functools.cached_property
    def voters(self) -> tuple[tuple[str, str], ...]:
        """The labelled questions that vote: those no cue catches, like the questions that reach the vote."""
        return tuple((q, m) for q, m in self.examples if cue(q) is None)

    def _matrix(self) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                vectors = np.asarray(self._embedder().embed_documents([q for q, _ in self.voters]))
                self._vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            return self._vectors

    def scores(self, question: str, available: set[str] | None = None) -> dict[str, float]:
        """Each method's similarity-weighted vote among the ``k`` nearest voting labelled questions."""
        matrix = self._matrix()
        query = np.asarray(self._embedder().embed_query(question))
        similarity = matrix @ (query / np.linalg.norm(query))
        allowed = [i for i, (_, m) in enumerate(self.voters) if available is None or m in available]
        nearest = sorted(allowed, key=lambda i: -similarity[i])[: self.k]
        votes: dict[str, float] = defaultdict(float)
        for i in nearest:
            votes[self.voters[i][1]] += float(similarity[i])
        return dict(votes)

    def choose(self, question: str, available: set[str] | None = None) -> Choice:
        """The method Auto runs for ``question`` (among ``available``, all labelled ones when None)."""
        def allowed(method: str) -> bool:
            return available is None or method in available

        if allowed("ircot") and (why := multi_hop_cue(question)):
            return Choice("ircot", why)
        if allowed("toc") and (why := ambiguity_cue(question)):
            return Choice("toc", why)
        votes = self.scores(question, available)
        if not votes:
            return Choice("oner" if allowed("oner") else sorted(available)[0],
                          "no labelled question matches the available methods")
        method = max(votes, key=votes.get)
        total = sum(votes.values())
        toc, oner = votes.get("toc", 0.0), votes.get("oner", 0.0)
        if method == "oner" and toc and toc >= self.toc_share * (toc + oner):
            return Choice("toc", f"{self.reasons.get('toc', '')} (ToC holds {toc / (toc + oner):.0%} of the weight that the "
                                 f"{self.k} most similar labelled questions give ToC and OneR, and "
                                 f"{self.toc_share:.0%} is enough).")
        return Choice(method, f"{self.reasons.get(method, 'it resembles questions this method answers well')} "
                              f"({votes[method] / total:.0%} of the weight of the {self.k} most similar labelled "
                              "questions).")
