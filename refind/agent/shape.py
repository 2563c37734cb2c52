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

__all__ = [
    "FORM_WORDS",
    "GENERIC_WORDS",
    "Shape",
    "ShapeReading",
    "asks_beginning",
    "breadth_cue",
    "question_shape",
    "strip_answer_form",
    "whose_words",
]

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


FORM_WORDS = frozenset(
    [
        "list",
        "listed",
        "listing",
        "order",
        "ordered",
        "sequence",
        "chronological",
        "chronologically",
        "timeline",
        "item",
        "items",
        "aspect",
        "aspects",
        "different",
        "various",
        "throughout",
        "across",
        "summary",
        "summaries",
        "summarize",
        "summarise",
        "summarized",
        "summarizing",
        "comprehensive",
        "detailed",
        "thorough",
        "overview",
        "recap",
        "brought",
        "bring",
        "bringing",
        "mention",
        "mentioned",
        "mentions",
        "conversations",
        "discussions",
        "discussion",
        "sessions",
        "progression",
        "progressed",
        "evolve",
        "evolved",
        "evolution",
        "reconstruct",
        "walk",
        "covering",
        "covered",
        "capture",
        "captures",
        "captured",
        "including",
        "entire",
        "scope",
        "give",
        "provide",
    ]
)
"""The words of a breadth question that give its answer a form rather than naming its topic ("list the
order in which I brought up different aspects of X throughout our conversations", "a comprehensive summary
of how X progressed"). Searched for, they match whatever message says "list", "order" or "items", and as
the rarest terms they crowd the topic out of the rarer-terms round; a breadth question drops them from its
keywords (when words remain)."""

# "(mention 10 items in order)", "Mention ONLY and ONLY ten items.": how long the answer is to be
_ANSWER_FORM = re.compile(
    r"\b(?:mention|list|name|give|include)\s+(?:only\s+(?:and\s+only\s+)?)?"
    r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)\s+"
    r"(?:items?|points?|things?|events?|steps?|aspects?|topics?)(?:\s+in\s+order)?\b",
    re.IGNORECASE,
)


_SUMMARY = re.compile(
    r"\b(?:summari[sz]\w*|summary|overview|recap|(?:walk|run) me through|full scope|progression|evolution of)\b",
    re.IGNORECASE,
)


def asks_summary(question: str) -> bool:
    """Whether ``question`` asks for a summary of how something went ("a detailed summary of…", "an overview
    of…", "walk me through…"): each part of the history says what it was about in its opening messages."""
    return _SUMMARY.search(question) is not None


def breadth_cue(question: str) -> str | None:
    """The breadth cue of ``question`` (lowercase), or None: see :func:`question_shape`."""
    m = _BREADTH.search(question)
    return m.group(1).lower() if m is not None else None


def strip_answer_form(question: str) -> str:
    """``question`` without the phrase that sets the answer's length ("mention 10 items in order")."""
    return _ANSWER_FORM.sub(" ", question)


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


# "what did I say": the question is about the person's own words (the answer sits in their messages)
_OWN = re.compile(
    r"\b(?:(?:did|have|had|do)\s+i|i(?:'ve|\s+have|\s+had)?)\s+(?:\w+\s+){0,2}?"
    r"(?:brought\s+up|bring\s+up|mention(?:ed)?|ask(?:ed)?|said|say|told\s+you|tell\s+you|share[ds]?|"
    r"rais(?:e|ed)|request(?:ed)?|describ(?:e|ed)|want(?:ed)?|plann?(?:ed)?|decid(?:e|ed)|prefer(?:red)?|"
    r"note[ds]?|list(?:ed)?|report(?:ed)?|express(?:ed)?)\b"
    r"|\bmy\s+(?:own\s+)?(?:requests?|questions?|quer(?:y|ies)|messages?|notes?)\b"
    # "Have I integrated Flask-Login…?", "Did I ever set up…?": whether the person did something, which
    # their own messages say ("I've added…", "I've never…")
    r"|^\s*(?:(?:have|had)\s+i\s+(?:ever\s+|already\s+|actually\s+|not\s+|never\s+)?\w+(?:ed|en|t)|did\s+i)\b",
    re.IGNORECASE,
)
# "what did you tell me": the assistant's own words
_THEIRS = re.compile(
    r"\byou\s+(?:\w+\s+)?(?:told|suggested|recommended|said|mentioned|explained|gave|provided|listed|"
    r"proposed|advised|wrote|shared)\b"
    r"|\b(?:did|have|had)\s+you\s+(?:\w+\s+)?(?:tell|suggest|recommend|say|mention|explain|give|provide|"
    r"list|propose|advise|write|share|told|suggested|recommended|said|mentioned|given|provided)\b",
    re.IGNORECASE,
)


def whose_words(question: str) -> str | None:
    """``"user"`` when ``question`` asks about the person's own words ("the order in which I brought up…",
    "how many columns did I want…", "my requests"), ``"assistant"`` when it asks what the assistant said
    ("the restaurant you recommended"), else None (both, or neither). English only, lexical."""
    own, theirs = _OWN.search(question), _THEIRS.search(question)
    if own and not theirs:
        return "user"
    if theirs and not own:
        return "assistant"
    return None


_BEGINNING = re.compile(
    r"\b(?:(?:when|as)\s+i\s+first|i\s+first|first\s+(?:described|mentioned|started|began|set\s+up)|initially|"
    r"originally|at\s+the\s+(?:start|beginning|outset)(?!\s+of)|in\s+the\s+beginning(?!\s+of)|to\s+start\s+(?:my|the|our|with)|"
    r"when\s+i\s+(?:started|began|kicked\s+off)|starting\s+out|from\s+the\s+start)\b",
    re.IGNORECASE,
)


def asks_beginning(question: str) -> bool:
    """Whether ``question`` asks how something began ("when I first described my setup", "initially", "to
    start my project", "at the beginning"): the opening of the earliest conversation on it holds the answer."""
    return _BEGINNING.search(question) is not None
