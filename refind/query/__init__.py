"""A question read once: its keywords, time cue, shape and cues, as one :class:`QuestionReading`.

The design: docs/design.md § "A question is read once".

Pure functions over text: keyword extraction (:mod:`~refind.query.keywords`), time expressions
(:mod:`~refind.query.timeparse`), the question's shape and cues (:mod:`~refind.query.shape`), and
:func:`read_question`, the one function that reads a question (:mod:`~refind.query.reading`).
"""

from refind.query.reading import QuestionReading, ReadingRules, read_question

__all__ = ["QuestionReading", "ReadingRules", "read_question"]
