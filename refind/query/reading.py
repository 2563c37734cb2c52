"""A question, read once: its keywords, time cue, shape and the cues the rounds and the evidence use.

The design: docs/design.md § "A question is read once" and § "Shapes" (the shape first, then the words).

:func:`read_question` is the one function that reads a question's text. It runs at the start of a search
(:meth:`refind.Memory.open_session`), and what it read travels down as a :class:`QuestionReading`: the agent
plans its rounds from it, the session ranks standing instructions and recent sessions by it, the LLM agent
checks a model's dates against it. Nothing below reads the question's text again. It is pure: no index, no
engine (the engine's analysis of the question happens once, in the session).

How a question is read depends on a few rules an agent is built with (:class:`ReadingRules`: shapes, form
words, time filters; the switches the ablations turn off): a reading carries the rules it was made under.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from refind.models import Shape
from refind.query.keywords import question_words
from refind.query.shape import ShapeReading, read_cues
from refind.query.timeparse import TimeRange, parse_time_range, strip_time_expressions

__all__ = ["QuestionReading", "ReadingRules", "read_question"]


@dataclass(frozen=True, slots=True)
class ReadingRules:
    """How a question is read. ``shapes``: read its shape and cues (breadth, period, whose words, how it
    began, a summary); off, every question is a ``lookup``. ``form_words``: a breadth question's keywords
    leave out the words that give its answer a form (:data:`refind.lexicon.FORM_WORDS`). ``time_filters``:
    its time cue filters rounds (off, the cue is still read, for an LLM agent's date checks, but no round is
    filtered by it and it makes no ``period``)."""

    shapes: bool = True
    form_words: bool = True
    time_filters: bool = True


@dataclass(frozen=True, slots=True)
class QuestionReading:
    """What :func:`read_question` read of one question (and its multiple-choice options)."""

    text: str
    """The question as asked (rounds over its phrasing search it as it is)."""
    now: int | None
    """The question's "now" (epoch ms), which its time cue is resolved against."""
    options: tuple[str, ...]
    """The multiple-choice options, as given."""
    keywords: tuple[str, ...]
    """Content words (time phrases removed, quoted phrases kept; a breadth question's form words dropped
    when words remain)."""
    option_keywords: tuple[tuple[str, ...], ...]
    """Each option's content words (options without any left out)."""
    time_cue: TimeRange | None
    """The question's time cue resolved against ``now`` (read even when ``rules.time_filters`` is off)."""
    shape: ShapeReading
    """The shape (``lookup``, ``breadth``, ``period``) and why."""
    breadth_cue: str | None
    """The breadth cue that matched, if any (read whatever the shape)."""
    whose: str | None
    """``"user"`` / ``"assistant"`` when the question asks about that side's words."""
    asks_beginning: bool
    """It asks how something began ("when I first…")."""
    asks_summary: bool
    """It asks for a summary of how something went."""
    asks_current: bool
    """It asks about the current state ("now", "still", "latest"...)."""
    is_request: bool
    """It asks for something to be done or advised (a standing instruction bears on it)."""
    names_asker: bool
    """It names the one who asks in the first person ("I", "my", "we"): the asker's lasting facts may bear on
    it though it asks for nothing."""
    stems: frozenset[str]
    """Its crude topic stems (:func:`refind.query.keywords.content_stems`)."""
    rules: ReadingRules = field(default_factory=ReadingRules)
    """The rules it was read under."""

    @property
    def time_range(self) -> TimeRange | None:
        """The time cue rounds filter by: ``time_cue`` when the rules use time filters, else None."""
        return self.time_cue if self.rules.time_filters else None

    @property
    def shape_name(self) -> Shape:
        """The shape's name."""
        return self.shape.shape

    @property
    def all_keywords(self) -> list[str]:
        """The question's keywords, then its options', each once (the broad round's words)."""
        return list(dict.fromkeys([*self.keywords, *(w for ws in self.option_keywords for w in ws)]))


def read_question(
    text: str,
    *,
    now: int | None = None,
    options: Sequence[str] | None = None,
    rules: ReadingRules | None = None,
) -> QuestionReading:
    """Read ``text`` (and its ``options``) once, under ``rules`` (default: every rule on): its time cue, then
    its words, then its cues and shape."""
    rules = rules or ReadingRules()
    without_time = strip_time_expressions(text)
    time_cue = parse_time_range(text, now)
    words = question_words(text, without_time, options or ())
    cues = read_cues(
        text,
        words.keywords,
        words.topic,
        has_time_cue=rules.time_filters and time_cue is not None,
        shapes=rules.shapes,
        form_words=rules.form_words,
    )
    return QuestionReading(
        text=text,
        now=now,
        options=tuple(options or ()),
        keywords=cues.keywords,
        option_keywords=words.options,
        time_cue=time_cue,
        shape=cues.shape,
        breadth_cue=cues.breadth_cue,
        whose=cues.whose,
        asks_beginning=cues.asks_beginning,
        asks_summary=cues.asks_summary,
        asks_current=cues.asks_current,
        is_request=cues.is_request,
        names_asker=cues.names_asker,
        stems=words.stems,
        rules=rules,
    )
