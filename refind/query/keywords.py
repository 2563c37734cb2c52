"""Keyword extraction: content words of a question, with names, numbers and quoted phrases kept, and the
function words a person would never type into a chat app's search box dropped (their list:
:data:`refind.lexicon.KEYWORD_STOP_WORDS`); and the crude topic stems that say what two texts share."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from refind.lexicon import ANSWER_FORM, ASKED_UNIT, FORM_WORDS, KEYWORD_STOP_WORDS, STEM_STOP_WORDS
from refind.policy import POLICY

__all__ = [
    "QuestionWords",
    "content_stems",
    "extract_keywords",
    "question_words",
    "quoted_phrases",
    "strip_answer_form",
]

_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»]{1,200})[\"“”«»]")
_WORD = re.compile(r"[\w][\w'’\-.]*[\w]|[\w]", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def quoted_phrases(text: str) -> list[str]:
    """Phrases in double quotes, as written."""
    return [m.group(1).strip() for m in _QUOTED.finditer(text) if m.group(1).strip()]


def extract_keywords(text: str, *, extra_stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Content words of ``text`` in order of appearance, de-duplicated (case-insensitive).

    Kept: words that are not stopwords, every number, capitalized names, words of quoted phrases, CJK runs
    (the index analyzer turns them into bigrams). Dropped: stopwords, one-letter words, punctuation.
    """
    out: list[str] = []
    seen: set[str] = set()
    text = ASKED_UNIT.sub(" ", text)
    for token in _WORD.findall(text):
        token = token.strip(".-'’")
        if not token:
            continue
        low = token.lower().replace("’", "'")
        if low in seen:
            continue
        keep = (
            bool(_CJK.search(token))
            or any(ch.isdigit() for ch in token)
            or (len(low) > 1 and low not in KEYWORD_STOP_WORDS and low not in extra_stopwords)
        )
        if keep:
            seen.add(low)
            out.append(token)
    return out


_WORDS = re.compile(r"\w+")


def content_stems(text: str) -> set[str]:
    """Crude content stems of ``text`` for topic overlap (lowercase words of 3+ letters, a plural or verb
    ending cut, :data:`refind.lexicon.STEM_STOP_WORDS` dropped): no bridge call per message. At most
    ``POLICY.stem_chars`` characters are read."""
    out = set()
    for w in _WORDS.findall(text.lower()[: POLICY.stem_chars]):
        if w.isdigit():
            continue
        w = w.rstrip("0123456789") or w  # "html5" and "html", "python3" and "python"
        if len(w) < 3 or w in STEM_STOP_WORDS:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                break
        out.add(w)
    return out


def strip_answer_form(question: str) -> str:
    """``question`` without the phrase that sets the answer's length ("mention 10 items in order")."""
    return ANSWER_FORM.sub(" ", question)


@dataclass(frozen=True, slots=True)
class QuestionWords:
    """The words of a question (:func:`question_words`)."""

    keywords: tuple[str, ...]
    """Content words, time phrases removed, quoted phrases added."""
    topic: tuple[str, ...]
    """The same without the words that give an answer its form (:data:`refind.lexicon.FORM_WORDS`, "mention 10
    items in order"): what a breadth question searches when any remains."""
    options: tuple[tuple[str, ...], ...]
    """Each multiple-choice option's content words (options without any left out)."""
    stems: frozenset[str]
    """The question's crude topic stems (:func:`content_stems`)."""


def question_words(question: str, without_time: str, options: Sequence[str] = ()) -> QuestionWords:
    """The words of ``question``: ``without_time`` is its text with time phrases removed."""
    quoted = quoted_phrases(question)
    keywords = extract_keywords(" ".join([without_time, *quoted]))
    topic = extract_keywords(" ".join([strip_answer_form(without_time), *quoted]), extra_stopwords=FORM_WORDS)
    return QuestionWords(
        keywords=tuple(keywords),
        topic=tuple(topic),
        options=tuple(tuple(w) for w in (extract_keywords(o) for o in options) if w),
        stems=frozenset(content_stems(question)),
    )
