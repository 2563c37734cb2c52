"""The index analyzer in pure Python: the terms Lucene's chain gives (``refind.store.base.ANALYZER_NAME``).

Lucene's chain, in order, and what stands for each step here:

1. char filter ``patternReplace`` (``:`` to a space): the same replacement;
2. tokenizer ``standard`` (UAX#29 word boundaries): the ``regex`` module's Unicode default word boundaries
   (``(?w)\\b``), keeping the segments Lucene's grammar keeps (letters, numbers, Katakana, Han and Hiragana
   one character each, Southeast Asian runs whole, emoji) and splitting tokens longer than 255 characters;
3. ``cjkWidth``: fullwidth ASCII to ASCII, halfwidth Katakana to fullwidth (voiced marks combined);
4. ``lowercase``: per code point, as Java's ``Character.toLowerCase`` (no final sigma, ``İ`` to ``i``);
5. ``cjkBigram``: adjacent Han, Hiragana, Katakana and Hangul tokens as overlapping bigrams, a lone one as
   itself;
6. ``englishPossessive``: a trailing ``'s`` (``'``, ``’`` or ``＇``) removed;
7. ``stop``: Lucene's English stop set (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``);
8. ``porterStem``: NLTK's Porter stemmer in its ``MARTIN_EXTENSIONS`` mode, the one that gives Lucene's
   ``PorterStemmer`` stems (it keeps words of one or two characters, and has Porter's ``-logi``/``-bli``
   departures that the Snowball ``porter`` algorithm lacks); words are measured in UTF-16 units, as Java does.

``tests/test_engine_contract.py`` checks the terms against the Lucene engine's on real chat text.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable
from functools import lru_cache

import regex

from refind.lexicon import ANALYZER_STOP_WORDS

__all__ = ["MAX_TOKEN_LENGTH", "analyze"]


MAX_TOKEN_LENGTH = 255
"""StandardTokenizer's default ``maxTokenLength``: longer tokens are split into pieces of this length."""

_BOUNDARY = regex.compile(r"(?V1w)\b")
# a segment the standard tokenizer emits holds one of these (whitespace and punctuation segments do not)
_WORDY = regex.compile(
    r"[\p{WB=ALetter}\p{WB=Hebrew_Letter}\p{WB=Numeric}\p{WB=Katakana}\p{Script=Han}\p{Script=Hiragana}"
    r"\p{Line_Break=SA}\p{Extended_Pictographic}\p{Regional_Indicator}]"
)
_ASCII_WORDY = regex.compile(r"[A-Za-z0-9]")
_EXTEND = r"[\p{WB=Extend}\p{WB=Format}\p{WB=ZWJ}]*"
# the token types CJKBigramFilter pairs up (what the tokenizer types IDEOGRAPHIC, HIRAGANA, KATAKANA, HANGUL)
_CJK_TYPED = regex.compile(
    rf"(?:[[\p{{Script=Han}}\p{{Script=Hiragana}}]&&\p{{WB=Other}}]{_EXTEND}"
    rf"|(?:\p{{WB=Katakana}}{_EXTEND})+|(?:\p{{Script=Hangul}}{_EXTEND})+)",
    regex.V1,
)
_SOUTHEAST_ASIAN = regex.compile(rf"(?:\p{{Line_Break=SA}}{_EXTEND})+", regex.V1)
_NEEDS_WIDTH_FOLD = regex.compile(r"[\uff01-\uff5e\uff65-\uff9f]")
_NOT_SIMPLE_LOWER = ("\u0130", "\u03a3")  # where str.lower() differs from Java's per-code-point mapping


def _fold_width(token: str) -> str:
    """CJKWidthFilter: fullwidth ASCII variants to Basic Latin, halfwidth Katakana to fullwidth, a
    halfwidth (semi-)voiced mark combined with the kana before it when they compose."""
    out: list[str] = []
    for ch in token:
        code = ord(ch)
        if 0xFF01 <= code <= 0xFF5E:
            out.append(chr(code - 0xFEE0))
        elif 0xFF65 <= code <= 0xFF9F:
            kana = unicodedata.normalize("NFKC", ch)
            if code >= 0xFF9E and out:
                combined = unicodedata.normalize("NFC", out[-1] + kana)
                if len(combined) == 1:
                    out[-1] = combined
                    continue
            out.append(kana)
        else:
            out.append(ch)
    return "".join(out)


def _lower(token: str) -> str:
    """Java's ``Character.toLowerCase`` per code point (Python's ``str.lower`` applies the final-sigma rule
    and maps ``İ`` to two characters)."""
    if not any(c in token for c in _NOT_SIMPLE_LOWER):
        return token.lower()
    return "".join("i" if c == "\u0130" else c.lower() for c in token)


def _tokens(text: str) -> list[tuple[str, int, int, bool]]:
    """(token, start, end, CJK-typed) for the standard tokenizer's tokens, after width folding and
    lowercasing."""
    out: list[tuple[str, int, int, bool]] = []
    # without these two, lowercasing the whole text first is Java's per-code-point mapping and keeps offsets
    simple = not any(c in text for c in _NOT_SIMPLE_LOWER)
    src = (text.lower() if simple else text).replace(":", " ")
    lower: Callable[[str], str] = str if simple else _lower  # str(t) is t
    pos = 0
    sa_start = sa_end = -1  # a Southeast Asian run being joined

    def flush_sa() -> None:
        nonlocal sa_start
        if sa_start >= 0:
            out.append((lower(src[sa_start:sa_end]), sa_start, sa_end, False))
            sa_start = -1

    for seg in _BOUNDARY.split(src):
        start, pos = pos, pos + len(seg)
        if seg.isascii():  # the common case: no CJK, no width folding, no Southeast Asian script
            if not seg.isalnum() and (seg.isspace() or not _ASCII_WORDY.search(seg)):
                continue
            flush_sa()
            if simple and len(seg) <= MAX_TOKEN_LENGTH:
                out.append((seg, start, pos, False))
                continue
            cjk = False
        else:
            if not _WORDY.search(seg):
                continue
            if _SOUTHEAST_ASIAN.fullmatch(seg):  # UAX#29 breaks these scripts everywhere; Lucene keeps runs
                if sa_start < 0 or sa_end != start:
                    flush_sa()
                    sa_start = start
                sa_end = pos
                continue
            flush_sa()
            cjk = _CJK_TYPED.fullmatch(seg) is not None
        for i in range(0, len(seg), MAX_TOKEN_LENGTH):
            piece = seg[i : i + MAX_TOKEN_LENGTH]
            if _NEEDS_WIDTH_FOLD.search(piece):
                piece = _fold_width(piece)
            out.append((lower(piece), start + i, min(start + i + MAX_TOKEN_LENGTH, pos), cjk))
    flush_sa()
    return out


def _bigrams(tokens: list[tuple[str, int, int, bool]]) -> list[str]:
    """CJKBigramFilter: runs of adjacent CJK-typed tokens become overlapping bigrams of their code points
    (a run of one code point stays a unigram); other tokens pass through."""
    out: list[str] = []
    run: list[str] = []
    last_end = -1

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        else:
            out.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
        run.clear()

    for token, start, end, cjk in tokens:
        if cjk:
            if run and start != last_end:
                flush()
            run.extend(token)
            last_end = end
        else:
            if run:
                flush()
            out.append(token)
    if run:
        flush()
    return out


_stemmer: Callable[[str], str] | None = None
_stemmer_lock = threading.Lock()


def _load_stemmer() -> Callable[[str], str]:
    global _stemmer
    with _stemmer_lock:
        if _stemmer is None:
            from nltk.stem.porter import PorterStemmer

            porter = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
            _stemmer = lambda word: porter.stem(word, to_lowercase=False)  # noqa: E731
        return _stemmer


def _stem(word: str) -> str:
    stem = _stemmer or _load_stemmer()
    if word.isascii() or all(ord(c) < 0x10000 for c in word):
        return stem(word)
    # Java counts UTF-16 units: the stemmer sees a supplementary character as two (non-vowel) units
    units = word.encode("utf-16-le", "surrogatepass")
    split = "".join(chr(int.from_bytes(units[i : i + 2], "little")) for i in range(0, len(units), 2))
    return stem(split).encode("utf-16-le", "surrogatepass").decode("utf-16-le")


@lru_cache(maxsize=200_000)
def _term(token: str) -> str | None:
    """The index term of one token after the bigram filter: possessive removed, stop words dropped
    (None), stemmed."""
    if len(token) >= 2 and token[-1] in "sS" and token[-2] in "'\u2019\uff07":
        token = token[:-2]
    if token in ANALYZER_STOP_WORDS:
        return None
    return _stem(token)


def analyze(text: str) -> list[str]:
    """The index terms of ``text``, in order (repeats kept), as Lucene's chain gives them."""
    if not text or text.isspace():
        return []
    return [t for t in map(_term, _bigrams(_tokens(text))) if t is not None]
