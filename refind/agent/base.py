"""The agent protocol: an agent runs rounds on a SearchSession; Memory.search returns its result."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from refind.search.session import SearchSession

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """Decides the rounds for one question. ``run`` reads the question from ``session.reading`` (a
    :class:`~refind.query.QuestionReading`, made once when the search began), runs rounds through the kinds'
    registry (:data:`refind.agent.kinds.KINDS`: ``KINDS.run(session, Round(...))``), may ``note`` blocks, and
    ends with ``session.finish``; it returns nothing (the session holds the evidence). An agent that reads
    questions under rules of its own has a ``reading_rules`` attribute (:class:`~refind.query.ReadingRules`),
    which the search is opened with."""

    name: str

    def run(self, session: SearchSession) -> None: ...
