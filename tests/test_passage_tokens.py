"""Passages are bounded in the embedder's tokens (corpora/passage_tokens.py), whatever the script: Korean,
Arabic, Cyrillic, Devanagari, Thai, Chinese, Japanese, URL lists, hex and base64-like words. Nothing of the text
is lost at a cut, splitting stays linear in the text's length, English prose splits exactly as before the bound,
and without the tokenizer a conservative estimate holds the bound."""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import random
import sys
import time

import pytest

from corpora import passage_tokens
from corpora.loaders import LoadedFile, Page
from corpora.passage_tokens import MAX_PASSAGE_TOKENS
from corpora.splitting import MAX_PASSAGE_CHARS, file_sha256, split_file

SIZE = 200_000  # characters of each text


@pytest.fixture(scope="module")
def tokenizer():
    """The embedder's tokenizer, loaded here on its own (not through the module under test)."""
    from tokenizers import Tokenizer

    from models.embeddings import bundled_embedder_path

    loaded = Tokenizer.from_file(str(bundled_embedder_path() / "tokenizer.json"))
    loaded.no_truncation()
    loaded.no_padding()
    return loaded


def word_pieces(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


# -- texts: random (seeded), so that no passage is found in the text anywhere but where it was cut from ---------

def _words(rnd: random.Random, letters: str, low: int, high: int, size: int, end: str = ". ", gap: str = " ") -> str:
    out, length = [], 0
    while length < size:
        sentence = gap.join("".join(rnd.choice(letters) for _ in range(rnd.randint(low, high)))
                            for _ in range(rnd.randint(5, 15))) + end
        out.append(sentence)
        length += len(sentence)
    return "".join(out)[:size]


# Common syllables (all-MiniLM's vocabulary lacks some jamo, and a word with one of them is one [UNK]).
_HANGUL = "가나다라마바사아자차카타파하서울은대한민국의수도이며세에서장큰시중입니어는말글을를게고습요지만로으와과면해던들정부람학교경제문화역"
_ARABIC = "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
_CYRILLIC = "абвгдежзийклмнопрстуфхцчшщъыьэюя"
_DEVANAGARI = ["क", "ख", "ग", "च", "ज", "ट", "ड", "त", "द", "न", "प", "ब", "म", "य", "र", "ल", "व", "स", "ह",
               "का", "की", "कु", "के", "को", "में", "है", "ने", "से"]
_THAI = "กขคงจฉชซญดตถทธนบปผพฟภมยรลวศสหอะาิีึืุูเแโใไ่้๊๋"
_HAN = "".join(chr(c) for c in range(0x4E00, 0x9FA5, 3))
_KANA = "".join(chr(c) for c in range(0x3041, 0x3094)) + "".join(chr(c) for c in range(0x30A1, 0x30F4))


def _urls(rnd: random.Random, size: int) -> str:
    out, length = [], 0
    while length < size:
        url = (f"https://{rnd.choice(['www', 'cdn', 'docs', 'api'])}.example-{rnd.randint(1, 999)}.org/"
               f"{rnd.getrandbits(64):x}/{rnd.getrandbits(40):x}/item?id={rnd.randint(1, 10**9)}&"
               f"ref={base64.urlsafe_b64encode(rnd.randbytes(9)).decode()}#s{rnd.randint(1, 99)}")
        out.append(url)
        length += len(url) + 1
    return rnd.choice(["\n", " "]).join(out)[:size]


def _texts() -> dict[str, str]:
    rnd = random.Random(34)
    return {
        "korean": _words(rnd, _HANGUL, 1, 4, SIZE),
        "arabic": _words(rnd, _ARABIC, 3, 8, SIZE),
        "russian": _words(rnd, _CYRILLIC, 2, 11, SIZE),
        "hindi": _words(rnd, _DEVANAGARI, 1, 4, SIZE, end="। "),
        "thai": _words(rnd, _THAI, 8, 30, SIZE, end=" "),
        "urls": _urls(rnd, SIZE),
        "hex words": " ".join(f"{rnd.getrandbits(bits):0{bits // 4}x}" for bits in rnd.choices((32, 64, 160, 256),
                                                                                                k=SIZE // 30))[:SIZE],
        "base64 words": " ".join(base64.b64encode(rnd.randbytes(rnd.randint(12, 60))).decode()
                                 for _ in range(SIZE // 50))[:SIZE],
        "base64 lines": "\n".join(base64.b64encode(rnd.randbytes(57)).decode() for _ in range(SIZE // 77))[:SIZE],
        "chinese": _words(rnd, _HAN, 1, 3, SIZE, end="。", gap="，"),
        "japanese": _words(rnd, _HAN + _KANA, 1, 4, SIZE, end="。", gap="、"),
        "mixed": _words(rnd, _HANGUL + _ARABIC + _CYRILLIC + "0123456789abcdef/.:?=&%-", 3, 20, SIZE),
    }


TEXTS = _texts()
# Texts that the word and character bounds alone left over the embedder's window (the others are within it
# already, and are here for the "nothing lost" half of the check).
OVER_BEFORE = {"arabic", "russian", "hindi", "urls", "hex words", "base64 words", "base64 lines", "korean", "mixed"}


def split(text: str, title: str = "t"):
    return split_file(LoadedFile(title, [Page(text)]), source=f"{title}.txt", content_sha256=file_sha256(text.encode()))


def assert_all_text_kept(text: str, passages) -> None:
    """Every character of ``text`` but its spaces is in the passages, in order: each passage is a stretch of the
    text (spaces aside) that starts no later than where the passages before it end (overlaps allowed, gaps not),
    and the last ends with the text. A passage is looked for from a little before that end: the splitter's
    overlap can start one before the last pieces of the passage before it were cut off in tokens."""
    whole = "".join(text.split())
    end = 0
    for passage in passages:
        piece = "".join(passage.page_content.split())
        found = whole.find(piece, max(0, end - 3 * MAX_PASSAGE_CHARS))
        assert found != -1, f"not a stretch of the text: {piece[:80]!r}"
        assert found <= end, f"{found - end} characters lost before {piece[:40]!r}"
        end = max(end, found + len(piece))
    assert end == len(whole), f"{len(whole) - end} characters lost at the end"


# -- the bound -------------------------------------------------------------------------------------------------

def test_the_bound_is_the_embedders_window_less_its_two_special_tokens():
    from corpora import splitting
    from models.embeddings import bundled_embedder_path

    config = json.loads((bundled_embedder_path() / "sentence_bert_config.json").read_text())
    assert MAX_PASSAGE_TOKENS == config["max_seq_length"] - 2 == splitting.MAX_PASSAGE_TOKENS == 254


def test_a_passage_at_the_bound_is_read_whole_by_the_embedder_and_one_token_more_is_not(tokenizer, embeddings):
    """The count is the embedder's own: of a text of 254 word pieces it reads all, of 255 not the last."""
    text = TEXTS["russian"][:2_000]
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    for size in (MAX_PASSAGE_TOKENS, MAX_PASSAGE_TOKENS + 1):
        prefix = text[:offsets[size - 1][1]]  # ends where its last word piece ends
        ids = tokenizer.encode(prefix, add_special_tokens=False).ids
        read = embeddings.model.tokenize([prefix])["input_ids"][0].tolist()
        assert len(ids) == passage_tokens.count_tokens(prefix) == size
        assert (read[1:-1] == ids) == (size <= MAX_PASSAGE_TOKENS)  # between [CLS] and [SEP]
        assert len(read) == MAX_PASSAGE_TOKENS + 2


@pytest.mark.parametrize("name", list(TEXTS))
def test_every_passage_is_within_the_token_bound_and_no_text_is_lost(name, tokenizer, monkeypatch):
    text = TEXTS[name]
    passages = split(text, name)
    counts = [word_pieces(tokenizer, p.page_content) for p in passages]
    assert max(counts) <= MAX_PASSAGE_TOKENS, (name, max(counts))
    assert max(len(p.page_content) for p in passages) <= MAX_PASSAGE_CHARS
    assert_all_text_kept(text, passages)
    assert [p.metadata["position"] for p in passages] == list(range(len(passages)))
    assert len({p.id for p in passages}) == len(passages)
    # The bound is what holds them: without the token cut, the words and characters bounds alone let these
    # through over the window.
    monkeypatch.setattr("corpora.splitting.within_tokens", lambda part: [part])
    before = max(word_pieces(tokenizer, p.page_content) for p in split(text, name))
    assert (before > MAX_PASSAGE_TOKENS) == (name in OVER_BEFORE), before


def test_cuts_fall_at_sentence_ends_or_spaces_where_there_are_some():
    """Russian of sentences of 5-15 words: the word and character bounds make passages of far more than 254 word
    pieces, cut further in tokens, and the cuts end sentences (or, failing that, words)."""
    passages = split(TEXTS["russian"])
    assert len(passages) > 600
    words = set(TEXTS["russian"].replace(".", " ").split())
    assert all(p.page_content.replace(".", " ").split()[0] in words for p in passages)  # no word cut in two
    assert all(p.page_content.replace(".", " ").split()[-1] in words for p in passages)
    assert sum(p.page_content.endswith(".") for p in passages) > 0.9 * len(passages)


@pytest.mark.parametrize("name", ["thai", "emoji"])
def test_a_word_the_vocabulary_lacks_counts_a_token_per_character(name, monkeypatch):
    """all-MiniLM reads a Thai word, a run of emoji or a word of over 100 characters as one [UNK], where the
    default LLM reads a Thai passage of 1,250 characters as about 1,200 tokens. Counted per character, such
    passages are cut to 254 tokens: about as many characters (the tokenizer drops Thai's combining marks)."""
    rnd = random.Random(3)
    text = TEXTS["thai"] if name == "thai" else " ".join("".join(rnd.choices("😀🎉🚀🌍🔥✨💡", k=rnd.randint(2, 8)))
                                                           for _ in range(SIZE // 6))
    assert passage_tokens.count_tokens("ภาษาไทย 😀🎉 " + "x" * 150) == 7 + 2 + 150
    passages = split(text, name)
    assert max(passage_tokens.count_tokens(p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS
    assert max(len("".join(p.page_content.split())) for p in passages) <= 1.1 * MAX_PASSAGE_TOKENS
    assert_all_text_kept(text, passages)
    monkeypatch.setattr("corpora.splitting.within_tokens", lambda part: [part])
    assert max(passage_tokens.count_tokens(p.page_content) for p in split(text, name)) > 2 * MAX_PASSAGE_TOKENS


def test_a_cut_inside_a_word_keeps_every_character_and_the_bound(tokenizer):
    """Text without a space for hundreds of word pieces (hex runs under 100 characters joined by dashes into
    one long run of words the tokenizer splits at each dash) is cut at token starts."""
    rnd = random.Random(5)
    text = "-".join(f"{rnd.getrandbits(96):024x}" for _ in range(300))  # 7,500 characters, no space
    pieces = passage_tokens.within_tokens(text)
    assert len(pieces) > 5 and "".join(pieces) == text
    assert max(word_pieces(tokenizer, piece) for piece in pieces) <= MAX_PASSAGE_TOKENS
    word = "".join(f"{rnd.getrandbits(96):024x}" for _ in range(3))[:90]  # one word of 90 characters
    pieces = passage_tokens.within_tokens(" ".join([word] * 20), limit=40)
    assert "".join(pieces).replace(" ", "") == word * 20
    assert max(word_pieces(tokenizer, piece) for piece in pieces) <= 40


# -- English: as before ----------------------------------------------------------------------------------------

def _demo_files() -> dict[str, str]:
    """The demo corpus's passages joined per title: texts of English prose (Wikipedia), split as files."""
    from corpora.demo import demo_passages

    texts = collections.defaultdict(list)
    for passage in demo_passages():
        texts[passage.metadata["title"]].append(passage.page_content)
    return {title: "\n\n".join(parts) for title, parts in texts.items()}


def _digest(passages) -> str:
    digest = hashlib.sha256()
    for p in passages:
        digest.update(json.dumps([p.id, p.page_content, p.metadata["position"], p.metadata["file_passages"]]).encode())
    return digest.hexdigest()


def test_english_prose_splits_exactly_as_before_the_token_bound(tokenizer, monkeypatch):
    files = _demo_files()
    first = [p for title in list(files)[:200] for p in split(files[title], title)]
    # The passages (ids, texts, positions) of the first 200 demo texts as the splitter cut them before the bound.
    assert (len(first), _digest(first)) == (219, "dbef147fc1298d60034df8e53adb1587dd45d65857f4db8a73537da7d605b61e")
    bounded = {title: split(text, title) for title, text in files.items()}
    monkeypatch.setattr("corpora.splitting.within_tokens", lambda part: [part])
    unbounded = {title: split(text, title) for title, text in files.items()}
    changed = {title for title in files if _digest(bounded[title]) != _digest(unbounded[title])}
    over = {title for title, passages in unbounded.items()
            if any(passage_tokens.count_tokens(p.page_content) > MAX_PASSAGE_TOKENS for p in passages)}
    truncated = {title for title, passages in unbounded.items()
                 if any(word_pieces(tokenizer, p.page_content) > MAX_PASSAGE_TOKENS for p in passages)}
    # Only texts with a passage over the bound split differently; all others keep their passages and ids. Those
    # are the texts with a passage the embedder truncated, and two whose IPA pronunciations ("dʒoʊˈhænɪsbɜːrɡ")
    # are words its vocabulary lacks, counted by their characters.
    assert changed == over and truncated <= over
    assert (len(files), len(truncated), len(over)) == (3626, 5, 7)


# -- without the tokenizer -------------------------------------------------------------------------------------

@pytest.fixture
def no_tokenizer(monkeypatch):
    """A setup without the embedder's model package: ``bundled_embedder_path`` raises, as it does then."""
    from models.errors import ModelError

    def missing():
        raise ModelError("The embedding model package is missing.")

    monkeypatch.setattr("models.embeddings.bundled_embedder_path", missing)
    passage_tokens.passage_tokenizer.cache_clear()
    yield
    passage_tokens.passage_tokenizer.cache_clear()


@pytest.mark.parametrize("name", ["korean", "arabic", "hindi", "urls", "hex words", "chinese", "japanese", "mixed"])
def test_without_the_tokenizer_a_character_estimate_holds_the_bound(name, tokenizer, no_tokenizer, caplog):
    text = TEXTS[name][:50_000]
    passages = split(text, name)
    assert passage_tokens.passage_tokenizer() is None
    assert "passage tokens are estimated from characters" in caplog.text
    assert max(word_pieces(tokenizer, p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS
    assert max(passage_tokens.count_tokens(p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS
    assert_all_text_kept(text, passages)


def test_without_the_tokenizers_library_the_estimate_is_used(monkeypatch):
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "tokenizers", None)  # its import fails
        passage_tokens.passage_tokenizer.cache_clear()
        assert passage_tokens.passage_tokenizer() is None
        assert passage_tokens.count_tokens("서울 abc") == 2 + 3 + 3  # 서 and 울 are 2 and 3 jamo; a, b, c
    passage_tokens.passage_tokenizer.cache_clear()
    assert passage_tokens.passage_tokenizer() is not None
    assert passage_tokens.count_tokens("서울 abc") == 2 + 3 + 1


def test_the_estimate_is_never_below_the_tokenizers_count(tokenizer):
    """For each character of the Basic Multilingual Plane and a sample of the others, and each passage of the
    texts above: a word piece holds at least one character in NFD form."""
    chars = [chr(c) for c in [*range(0x21, 0xD800), *range(0xE000, 0x10000), *range(0x10000, 0x30000, 7)]]
    below = [c for c in chars if len(passage_tokens.estimated_starts(c)) < word_pieces(tokenizer, c)]
    assert not below, below[:10]
    for name, text in TEXTS.items():
        for passage in split(text[:20_000], name):
            estimate = len(passage_tokens.estimated_starts(passage.page_content))
            assert estimate >= passage_tokens.count_tokens(passage.page_content) >= word_pieces(
                tokenizer, passage.page_content)


def test_english_without_the_tokenizer_is_cut_smaller_but_whole(tokenizer, no_tokenizer, monkeypatch):
    files = _demo_files()
    text = "\n\n".join(files[title] for title in list(files)[:30])
    passages = split(text)
    assert max(passage_tokens.count_tokens(p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS
    assert max(word_pieces(tokenizer, p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS // 2
    assert_all_text_kept(text, passages)
    monkeypatch.setattr("corpora.splitting.within_tokens", lambda part: [part])
    assert len(passages) >= 3 * len(split(text))  # about 45 words a passage rather than up to 160


# -- tables ----------------------------------------------------------------------------------------------------

def _numeric_table():
    from corpora.tables import make_table

    rnd = random.Random(7)
    rows = [("Year", "Rainfall (mm)", "Mean temperature", "Yield (t/ha)", "Station")]
    rows += [(str(1700 + i), f"{rnd.uniform(300, 900):.1f}", f"{rnd.uniform(-5, 25):.2f}", f"{rnd.uniform(1, 9):.3f}",
              f"ST-{rnd.getrandbits(24):06x}") for i in range(300)]
    return make_table(1, rows, page=4, caption="Rainfall and yields")


def test_table_passages_are_within_the_token_and_character_bounds(tokenizer):
    """Numbers are about three word pieces each: parts of 200 words of a numeric table made 400. Such a table
    is cut into parts within the bounds, each with the table's heading and header row, every row in one part."""
    from corpora.tables import _parts, _texts, table_passages

    table = _numeric_table()
    before = _texts(table, _parts(table))  # parts of TABLE_PART_WORDS words alone
    assert max(word_pieces(tokenizer, text) for text in before) > MAX_PASSAGE_TOKENS
    passages = table_passages("Farm", [table], source="farm.md", content_sha256="cd" * 32, start=2)
    assert max(word_pieces(tokenizer, p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS
    assert max(len(p.page_content) for p in passages) <= MAX_PASSAGE_CHARS
    count = len(passages)
    assert [p.page_content.split("\n")[0] for p in passages] == [
        f"Table 1 (page 4): Rainfall and yields, part {n} of {count}" for n in range(1, count + 1)]
    assert all(p.page_content.split("\n")[2] == table.line(table.rows[0]) for p in passages)
    rows = [line for p in passages for line in p.page_content.split("\n")[4:]]
    assert rows == [table.line(row) for row in table.rows[1:]]
    assert [p.metadata["position"] for p in passages] == list(range(2, 2 + count))
    assert [p.metadata["table_part"] for p in passages] == list(range(1, count + 1))


def test_a_table_within_the_bounds_keeps_its_parts(tokenizer):
    from corpora.tables import _parts, _texts, make_table, table_passages

    rows = [("Item", "Note")] + [(f"item {i}", "a fairly long note about the item " * 2) for i in range(40)]
    table = make_table(1, rows)
    passages = table_passages("Inventory", [table], source="inv.md", content_sha256="cd" * 32, start=0)
    assert [p.page_content for p in passages] == _texts(table, _parts(table)) and len(passages) == 4
    assert max(word_pieces(tokenizer, p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS


def test_a_table_row_too_long_for_a_passage_is_cut_like_text_and_kept_whole(tokenizer):
    from corpora.tables import make_table

    cell = TEXTS["russian"][:20_000]
    table = make_table(2, [("Key", "Value"), ("a", "short"), ("b", cell), ("c", "short again")])
    loaded = LoadedFile("Settings", [Page("Some text before the table.")], tables=[table])
    passages = split_file(loaded, source="s.md", content_sha256="ef" * 32)
    tables = [p for p in passages if "table" in p.metadata]
    assert len(tables) > 20 and max(word_pieces(tokenizer, p.page_content) for p in tables) <= MAX_PASSAGE_TOKENS
    assert max(len(p.page_content) for p in tables) <= MAX_PASSAGE_CHARS
    joined = "".join("".join(p.page_content.split()) for p in tables)
    assert "".join(cell.split()) in joined and joined.index("|c|shortagain|") > joined.index("".join(cell.split()))
    assert [p.metadata["position"] for p in passages] == list(range(len(passages)))
    assert len({p.id for p in passages}) == len(passages)


def test_a_file_read_in_its_child_process_is_split_with_the_tokenizer_as_in_process(tmp_path):
    """The forkserver loads the tokenizer before it forks a child for each file (corpora/tokenizer_preload.py):
    the child's passages are those of this process, not of the estimate, even under a memory limit."""
    from corpora.isolated import ParseLimits, read_isolated, read_passages

    path = tmp_path / "russian.txt"
    path.write_text(TEXTS["russian"][:30_000], encoding="utf-8")
    digest = file_sha256(path.read_bytes())
    here = read_passages(path, "russian.txt", digest)
    child = read_isolated(path, "russian.txt", digest, ParseLimits(memory_mb=384))
    assert [(p.id, p.page_content) for p in child] == [(p.id, p.page_content) for p in here]
    # The estimate would have cut every passage to 254 of its own tokens; the tokenizer leaves some longer.
    assert max(len(passage_tokens.estimated_starts(p.page_content)) for p in child) > MAX_PASSAGE_TOKENS
    state = read_isolated(path, "russian.txt", digest, ParseLimits(reader="tests.ingest_helpers:tokenizer_state"))
    assert state[0].metadata["title"] == "tokenizer preloaded: True"


# -- time ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["korean", "arabic", "urls", "hex words", "base64 words", "japanese"])
def test_splitting_takes_time_linear_in_the_texts_length(name):
    """A cut counts only the text of one passage again, never the whole text: ten times the text takes about
    ten times as long (a count of the whole text per cut would make it a hundred)."""
    text = TEXTS[name]

    def seconds(size):
        begin = time.perf_counter()
        split(text[:size])
        return time.perf_counter() - begin

    small = min(seconds(SIZE // 10) for _ in range(2))
    assert seconds(SIZE) < 30 * max(small, 0.005), name


def test_a_megabyte_of_such_text_is_split_within_seconds(tokenizer):
    """A million characters of all the texts above, interleaved in paragraphs of 5,000. The bound is generous (a
    benchmark may be running beside the tests); the split takes a few seconds (docs/reliability.md)."""
    texts = list(TEXTS.values())
    text = "\n\n".join(texts[i % len(texts)][j:j + 5_000] for j in range(0, SIZE, 5_000)
                        for i in range(len(texts)))[:1_000_000]
    begin = time.perf_counter()
    passages = split(text)
    elapsed = time.perf_counter() - begin
    assert elapsed < 60, elapsed
    assert max(word_pieces(tokenizer, p.page_content) for p in passages) <= MAX_PASSAGE_TOKENS
    assert_all_text_kept(text, passages)
