"""``grep``: the seed framework's lexical baseline, ported exactly (agentmemory eval/runner/adapters/grep.ts).

Query tokens: lowercase, every character outside ``[a-z0-9_]`` becomes a space, keep tokens longer than 2
characters (repeats are kept). A session's score is the number of query tokens that occur as a substring
of its lowercased text; zero scores are dropped; a stable sort by score, descending, keeps input order
among ties. Unlike the seed (which cuts at k) every scored session is returned, so the rank of a gold
session below k is known; metrics at K read the first K either way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.adapters.base import AdapterConfig, RankedItem
from benchmarks.datasets import Question, Session

__all__ = ["GrepAdapter", "tokenize"]

_NON_WORD = re.compile(r"[^a-z0-9_]+")


def tokenize(text: str) -> list[str]:
    return [t for t in _NON_WORD.sub(" ", text.lower()).split() if len(t) > 2]


@dataclass(frozen=True, slots=True)
class _State:
    sessions: tuple[Session, ...]
    bodies: tuple[str, ...]


class GrepAdapter:
    name = "grep"

    @staticmethod
    def unavailable() -> str | None:
        return None

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        return _State(tuple(sessions), tuple(s.text.lower() for s in sessions))

    def query(self, question: Question, state: _State, k: int) -> list[RankedItem]:
        terms = tokenize(question.text)
        scored = []
        for session, body in zip(state.sessions, state.bodies, strict=True):
            hits = sum(1 for t in terms if t in body)
            if hits > 0:
                scored.append(RankedItem(session.id, float(hits), session.text, session.turn_ids))
        scored.sort(key=lambda item: -item.score)
        return scored
