"""A question's shape, read before its words: a pure function over the question text.

The design: docs/design.md § "Shapes".

- ``breadth``: the answer is spread over many places: ordering ("in order", "which came first",
  "chronological"), summaries ("summarize", "overview", "how did ... go/progress"), counts ("how many",
  "how often", "number of times"), and "all", "every time", "list", "across", "so far", "throughout".
  The evidence should be many short passages from more sessions, in time order.
- ``period``: a time cue and no topic words of its own ("what did we talk about last week?"): the
  period's sessions by recency.
- ``lookup``: everything else: one fact in one or two places.

English only for now; a question in another language is a ``lookup`` unless it has no keywords at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from refind.lexicon import (
    BEGINNING_CUES,
    BREADTH_CUES,
    CURRENT_STATE_CUES,
    FACT_FIRST_PERSON,
    GENERIC_WORDS,
    OWN_WORDS_CUES,
    REQUEST_CUES,
    SUMMARY_CUES,
    THEIR_WORDS_CUES,
)
from refind.models import Shape

__all__ = [
    "Cues",
    "Shape",
    "ShapeReading",
    "asks_beginning",
    "asks_current_state",
    "asks_summary",
    "breadth_cue",
    "is_request",
    "names_asker",
    "question_shape",
    "read_cues",
    "whose_words",
]


def asks_summary(question: str) -> bool:
    """Whether ``question`` asks for a summary of how something went ("a detailed summary of…", "an overview
    of…", "walk me through…"): each part of the history says what it was about in its opening messages."""
    return SUMMARY_CUES.search(question) is not None


def breadth_cue(question: str) -> str | None:
    """The breadth cue of ``question`` (lowercase), or None: see :func:`question_shape`."""
    m = BREADTH_CUES.search(question)
    return m.group(1).lower() if m is not None else None


@dataclass(frozen=True, slots=True)
class ShapeReading:
    """What :func:`question_shape` read: the shape and why (the cue that matched, or the reason)."""

    shape: Shape
    reason: str


def question_shape(
    question: str, keywords: Sequence[str] = (), *, has_time_cue: bool = False
) -> ShapeReading:
    """The shape of ``question``. ``keywords`` are its content words (time phrases removed) and
    ``has_time_cue`` says whether it names a period the agent could resolve; a period question is one whose
    keywords are all :data:`GENERIC_WORDS` (or none)."""
    topical = [w for w in keywords if w.lower() not in GENERIC_WORDS]
    if has_time_cue and not topical:
        return ShapeReading("period", "a time cue and no topic words")
    cue = breadth_cue(question)
    if cue is not None:
        return ShapeReading("breadth", f"cue {cue!r}")
    return ShapeReading("lookup", "one fact")


def whose_words(question: str) -> str | None:
    """``"user"`` when ``question`` asks about the person's own words ("the order in which I brought up…",
    "how many columns did I want…", "my requests"), ``"assistant"`` when it asks what the assistant said
    ("the restaurant you recommended"), else None (both, or neither). English only, lexical."""
    own, theirs = OWN_WORDS_CUES.search(question), THEIR_WORDS_CUES.search(question)
    if own and not theirs:
        return "user"
    if theirs and not own:
        return "assistant"
    return None


def asks_beginning(question: str) -> bool:
    """Whether ``question`` asks how something began ("when I first described my setup", "initially", "to
    start my project", "at the beginning"): the opening of the earliest conversation on it holds the answer."""
    return BEGINNING_CUES.search(question) is not None


def asks_current_state(question: str) -> bool:
    """True when ``question`` asks about the current state of something ("now", "currently", "still",
    "latest", "anymore", "these days"...): then the latest statement of a changed fact should win."""
    return CURRENT_STATE_CUES.search(question) is not None


def is_request(question: str) -> bool:
    """Whether ``question`` asks for something to be done or advised ("could you show me…", "what would you
    suggest…", "I'm planning to…", "write…"), the requests a standing instruction bears on, rather than
    asking what happened ("when did…", "what did I say about…")."""
    return REQUEST_CUES.search(question) is not None


_WORD = re.compile(r"[\w'’]+")


def names_asker(question: str) -> bool:
    """Whether ``question`` names the one who asks in the first person ("what did I…", "my son", "we"):
    a question about someone else ("When did Caroline go to the support group?") is not about the asker,
    whose standing facts then bear on it only when it asks for something (:func:`is_request`)."""
    return any(w.lower().replace("’", "'") in FACT_FIRST_PERSON for w in _WORD.findall(question))


@dataclass(frozen=True, slots=True)
class Cues:
    """What :func:`read_cues` read of a question: its shape, the keywords it searches by, and its cues."""

    shape: ShapeReading
    keywords: tuple[str, ...]
    breadth_cue: str | None
    whose: str | None
    asks_beginning: bool
    asks_summary: bool
    asks_current: bool
    is_request: bool
    names_asker: bool


def read_cues(
    question: str,
    keywords: Sequence[str],
    topic: Sequence[str],
    *,
    has_time_cue: bool,
    shapes: bool = True,
    form_words: bool = True,
) -> Cues:
    """Every cue of ``question`` at once. ``keywords`` are its content words and ``topic`` the same without
    the words that give an answer its form: a breadth question searches its ``topic`` when any remains
    (with ``form_words``). With ``shapes`` off, every question is a ``lookup`` with no cue of shape, whose
    words, beginning or summary (its current-state and request cues are read whatever the shape)."""
    cue = breadth_cue(question)
    if shapes and form_words and cue is not None and topic:
        keywords = topic
    shape = (
        question_shape(question, keywords, has_time_cue=has_time_cue)
        if shapes
        else ShapeReading("lookup", "shapes off")
    )
    return Cues(
        shape=shape,
        keywords=tuple(keywords),
        breadth_cue=cue,
        whose=whose_words(question) if shapes else None,
        asks_beginning=shapes and asks_beginning(question),
        asks_summary=shapes and asks_summary(question),
        asks_current=asks_current_state(question),
        is_request=is_request(question),
        names_asker=names_asker(question),
    )
