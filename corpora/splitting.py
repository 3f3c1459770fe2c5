"""Splitting loaded files into passages of about 100-200 words (and at most ``MAX_PASSAGE_CHARS`` characters),
each with its provenance and a content id."""

from __future__ import annotations

import hashlib
import re

from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter

from corpora.loaders import LoadedFile
from corpora.tables import table_passages

# About 100-200 words per passage (issue #2; DPR-style 100-word passages are the field's usual unit, and the
# 1.5B model reads 3-5 short passages better than fewer long ones, docs/design-notes.md).
PASSAGE_WORDS = 160
OVERLAP_WORDS = 20


# Han, kana, hangul and the CJK punctuation and full-width forms: text written without spaces between words.
_CJK = re.compile("[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
# A passage's length is at least its characters over this (English averages about six characters a word), so a
# text without spaces (a base64 blob, a long URL list) is cut too.
CHARS_PER_WORD = 8
# No passage is longer than this, whatever its words: the splitter sums the lengths of the pieces it merges, and
# 160 words of 15 letters each count as 160 words (each under CHARS_PER_WORD twice) but make 2,560 characters.
MAX_PASSAGE_CHARS = PASSAGE_WORDS * CHARS_PER_WORD


def passage_length(text: str) -> int:
    """A text's length in the splitter's units, about words: words between spaces, each CJK character one more
    (a Chinese or Japanese character is about one token), and never less than the characters over
    ``CHARS_PER_WORD``. Counting spaces alone kept 200,000 characters of Chinese as one passage."""
    words = len(text.split()) + len(_CJK.findall(text))
    return max(words, len(text) // CHARS_PER_WORD)


def make_splitter(words: int = PASSAGE_WORDS, overlap: int = OVERLAP_WORDS) -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(
        chunk_size=words,
        chunk_overlap=overlap,
        length_function=passage_length,
        # Sentence ends and commas of Latin and CJK scripts, then spaces, then anywhere.
        separators=["\n\n", "\n", ". ", "。", "！", "？", "; ", "；", ", ", "，", "、", " ", ""],
        keep_separator="end",
    )


def content_id(title: str, text: str) -> str:
    """The id of a passage given as a title and a text (demo and dataset passages): a hash of both, so the
    same passage has the same id wherever it comes from."""
    return hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:32]


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _within_chars(text: str, limit: int = MAX_PASSAGE_CHARS) -> list[str]:
    """``text`` (spaces normalised) in pieces of at most ``limit`` characters, cut at the last space of each
    (anywhere when its second half has none)."""
    pieces = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit + 1)
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def split_file(
    loaded: LoadedFile,
    *,
    source: str,
    content_sha256: str,
    splitter: RecursiveCharacterTextSplitter | None = None,
) -> list[Document]:
    """Passages of one file. Ids derive from the file's content hash and the passage position, so the same
    file ingested twice (under any name) yields the same ids and adds nothing. Each passage's metadata holds
    ``file_passages``, the number of passages of the file."""
    splitter = splitter or make_splitter()
    passages: list[Document] = []
    for page in loaded.pages:
        chunks = [piece for text in splitter.split_text(page.text) for piece in _within_chars(" ".join(text.split()))]
        for chunk in chunks:
            position = len(passages)
            metadata = {
                "title": loaded.title,
                "source": source,
                "position": position,
                "file_sha256": content_sha256,
            }
            if page.number is not None:
                metadata["page"] = page.number
            passages.append(
                Document(page_content=chunk, metadata=metadata, id=f"{content_sha256[:24]}-{position:05d}")
            )
    passages += table_passages(loaded.title, loaded.tables, source=source, content_sha256=content_sha256,
                               start=len(passages))  # each table a passage of its own (corpora/tables.py)
    for passage in passages:  # the file version is complete when this many of its passages are stored
        passage.metadata["file_passages"] = len(passages)
    return passages
