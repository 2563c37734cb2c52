"""The agent protocol: an agent runs rounds on a SearchSession; Memory.search returns its result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from refind.search.session import SearchSession

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """Decides the rounds for one question. ``run`` calls ``session.search`` / ``session.browse`` /
    ``session.note`` / ``session.finish``; it returns nothing (the session holds the evidence)."""

    name: str

    def run(self, session: SearchSession, question: str, *, options: Sequence[str] | None = None) -> None: ...
