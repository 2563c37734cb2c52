"""A question's shape, read before its words (DESIGN §9): a pure function over the question text.

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

from refind.models import Shape

__all__ = ["GENERIC_WORDS", "Shape", "ShapeReading", "question_shape"]

# Cues of a question whose answer is spread over many places. Each is a phrase on word boundaries; the
# first that matches is reported as the reason.
_BREADTH = re.compile(
    r"\b("
    # ordering
    r"in (?:what|which|the|chronological) order|in order|order of|order in which|ordering|chronolog\w*|"
    r"sequence of|timeline|which (?:came|happened|did i \w+) first|before or after|"
    # summaries
    r"summari[sz]\w*|summary|overview|recap|(?:walk|run) me through|how (?:has|have|did) .{1,60}? "
    r"(?:go|gone|going|progress(?:ed)?|evolve[ds]?|develop(?:ed)?|change[ds]?)|progression|evolution of|"
    # counts
    r"how many|how often|how much time|number of (?:times|different)|count of|"
    # all / every / list / across / so far
    r"all (?:the|of|my|our|your)|every (?:time|one|single)|each time|everything|list (?:all|every|the|of|my)|"
    r"list\b|across|so far|throughout|over (?:time|the (?:course|past|last))|to date|in total|altogether"
    r")\b",
    re.IGNORECASE,
)

GENERIC_WORDS = frozenset(
    [
        "talk",
        "talked",
        "talking",
        "discuss",
        "discussed",
        "discussing",
        "discussion",
        "conversation",
        "conversations",
        "chat",
        "chats",
        "chatted",
        "say",
        "said",
        "mention",
        "mentioned",
        "tell",
        "told",
        "speak",
        "spoke",
        "happen",
        "happened",
        "happening",
        "go",
        "going",
        "went",
        "do",
        "doing",
        "done",
        "thing",
        "things",
        "stuff",
        "anything",
        "something",
        "everything",
        "work",
        "worked",
        "topic",
        "topics",
        "subject",
        "subjects",
        "remind",
        "recall",
        "remember",
        "bring",
        "brought",
        "ask",
        "asked",
        "question",
        "questions",
        "week",
        "weeks",
        "month",
        "months",
        "day",
        "days",
        "year",
        "years",
        "time",
        "times",
        "recently",
        "lately",
    ]
)
"""Words that say a question is about *a conversation* rather than a topic: with a time cue and nothing
else, the question is a ``period`` question."""


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
    m = _BREADTH.search(question)
    if m is not None:
        return ShapeReading("breadth", f"cue {m.group(1).lower()!r}")
    return ShapeReading("lookup", "one fact")
