"""Salient keywords of passages for the passage graph: noun-phrase-like terms weighted by scikit-learn's TF-IDF.

KGP (Wang et al., AAAI 2024, Supp. 8.2) links passages that share TF-IDF keywords: nouns and noun phrases, 1-4
words, stemmed, stop words removed, titles added. No part-of-speech tagger is packaged for offline use (NLTK's
and spaCy's models are downloads), so noun phrases are approximated by rule: runs of words between stop words,
punctuation and numbers, without inflected verbs ("directed", "starring", "was born") or adverbs; every 1-3 word
n-gram of a run is a term, each word stemmed (PyStemmer, as the BM25 index). Passages are read with their
title, so a document's name is one of its terms.

The vocabulary and the IDF are fitted once on a collection and kept (``KeywordModel``); passages added later are
weighted with them, so adding a file never refits; the graph refits when the collection has grown enough that
the fitted vocabulary is stale (``corpora.graph_build.REFIT_GROWTH``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from models.lexical import stemmer

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer

MAX_WORDS = 3  # n-grams of 1-3 words (the paper uses 1-4; 4-grams of noun runs are rare and never shared)
SALIENT = 10  # keywords kept per passage (the paper keeps 50 and links on any shared one: far denser)

_TOKEN = re.compile(r"\w+(?:['’-]\w+)*|[^\w\s]")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)

# Frequent English verbs: their inflected forms ("directed", "starring", "won") end a noun run; base forms stay,
# being nouns as often as verbs ("play", "record", "show").
_VERBS = frozenset("""
act add allow appear ask attend award base bear become begin believe belong border bring build buy call carry
cause change choose come compete compose consider consist contain continue cover create decide describe design
develop die direct discover draw drive elect employ end establish expect feature fight find follow form found
get give go graduate grow happen have hear help hold host include introduce involve join keep kill know launch
lead learn leave let like list live locate lose love make manage marry mean meet move name need offer open
operate organize own pass pay perform place play portray produce provide publish put raise reach read receive
record release remain remember replace report represent require return rule run say see seem sell send serve
set show sign sing situate speak spend stand star start stay stop study succeed suggest support take talk teach
tell think train transfer try turn understand use visit wait walk want watch win work write
""".split())
_IRREGULAR = frozenset("""
was were been being is are am has had did does done said went gone got gotten made knew known thought took
taken saw seen came gave given told found became began begun brought bought held kept left led lost meant met
paid put ran read said sat sent set spent stood taught understood won wrote written born borne drew drawn
drove driven fought grew grown rose risen sang sung spoke spoken stole stolen chose chosen fell fallen
""".split())
_LY_NOUNS = frozenset("family assembly supply ally rally reply anomaly monopoly butterfly lily belly jelly "
                      "bully holly melody comedy anthology ceremony colony dynasty".split())


@functools.lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """scikit-learn's English stop words and a few more. scikit-learn is imported here, not with the module: it
    takes about 2 s, and most commands (listing collections, a question to the model alone) never need it."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | {"also", "however", "although", "though", "including", "like", "s"}


@functools.lru_cache(maxsize=1)
def _verb_stems() -> frozenset[str]:
    return frozenset(stemmer().stemWords(sorted(_VERBS)))


def _content(token: str) -> bool:
    """Whether ``token`` may be part of a noun phrase."""
    lower = token.lower()
    if len(lower) < 2 or lower in stop_words() or not any(c.isalpha() for c in lower) or lower[0].isdigit():
        return False
    if token != lower:  # capitalised: a name, or the start of a sentence; kept
        return True
    if lower in _IRREGULAR:
        return False
    if lower.endswith(("ed", "ing")) and stemmer().stemWord(lower) in _verb_stems():
        return False
    return not (lower.endswith("ly") and len(lower) > 4 and lower not in _LY_NOUNS)


def _phrases(text: str, max_words: int) -> list[tuple[str, str]]:
    """(stemmed term, words as written) of every 1..``max_words``-word n-gram of each noun-like run."""
    stem = stemmer().stemWord
    out: list[tuple[str, str]] = []
    run: list[tuple[str, str]] = []

    def flush() -> None:
        for n in range(1, max_words + 1):
            for i in range(len(run) - n + 1):
                words = run[i : i + n]
                out.append((" ".join(w[0] for w in words), " ".join(w[1] for w in words)))
        run.clear()

    for token in _TOKEN.findall(text):
        token = _POSSESSIVE.sub("", token)
        if _content(token):
            run.append((stem(token.lower()), token))
        else:
            flush()
    flush()
    return out


def noun_phrases(text: str, max_words: int = MAX_WORDS) -> list[str]:
    """The terms of ``text``: every 1..``max_words``-word n-gram of each noun-like run, stemmed and lower-cased
    (the analyzer of ``KeywordModel``)."""
    return [term for term, _ in _phrases(text, max_words)]


def as_written(terms: tuple[str, ...] | list[str], text: str) -> list[str]:
    """Stemmed ``terms`` as ``text`` writes them ("brass telescop" -> "brass telescope"), for people; a term the
    text does not hold stays stemmed."""
    written: dict[str, str] = {}
    for term, words in _phrases(text, MAX_WORDS):
        written.setdefault(term, words)
    return [written.get(term, term) for term in terms]


def passage_text(title: str, text: str) -> str:
    """What keywords are read from: the title (KGP adds titles to every passage's keys) and the text."""
    return f"{title}.\n{text}" if title else text


@dataclass
class KeywordModel:
    """A fitted vocabulary and IDF (scikit-learn's ``TfidfVectorizer``) and how many passages it was fitted on.
    ``salient`` gives each passage's best terms, as vocabulary indices, by TF-IDF weight."""

    vocabulary: list[str]
    idf: np.ndarray
    fitted_on: int

    @classmethod
    def fit(cls, texts: list[str]) -> "KeywordModel":
        """Fit on ``texts`` (``passage_text`` of every passage). Terms of a single passage link nothing and
        are left out (``min_df=2``)."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(analyzer=noun_phrases, min_df=2 if len(texts) > 2 else 1,
                                     sublinear_tf=True, dtype=np.float32)
        try:
            vectorizer.fit(texts)
        except ValueError:  # no term occurs twice (a tiny collection)
            return cls([], np.zeros(0, dtype=np.float32), len(texts))
        return cls(list(vectorizer.get_feature_names_out()), vectorizer.idf_.astype(np.float32), len(texts))

    @functools.cached_property
    def _vectorizer(self) -> TfidfVectorizer:
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(analyzer=noun_phrases, vocabulary=self.vocabulary, sublinear_tf=True,
                                     dtype=np.float32)
        vectorizer.idf_ = self.idf
        return vectorizer

    def salient(self, texts: list[str], n: int = SALIENT) -> list[np.ndarray]:
        """Each text's ``n`` best terms (vocabulary indices, best first)."""
        if not self.vocabulary:
            return [np.zeros(0, dtype=np.int32) for _ in texts]
        weights = self._vectorizer.transform(texts).tocsr()
        out = []
        for row in range(weights.shape[0]):
            start, end = weights.indptr[row], weights.indptr[row + 1]
            terms, values = weights.indices[start:end], weights.data[start:end]
            best = np.argsort(-values, kind="stable")[:n]
            out.append(terms[best].astype(np.int32))
        return out
