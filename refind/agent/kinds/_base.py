"""What a kind of round is: a name, where its rounds go in a plan, what rounds it proposes for a question,
and how one of its rounds runs on a session."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from refind.config import DEFAULTS
from refind.models import MAX_QUERY_TERMS, Evidence, Round
from refind.policy import POLICY
from refind.query.reading import QuestionReading
from refind.search.session import SearchSession

__all__ = ["Kind", "PlanContext", "PlanKnobs", "Slot"]

Slot = Literal["first", "main", "last", "after", "none"]
"""Where a kind's rounds go in a plan: ``first`` (before every other), ``main`` (in registry order, counted
against ``max_rounds``), ``last`` (the last place within ``max_rounds``), ``after`` (after the budgeted rounds,
not counted, not stopped by an empty round) or ``none`` (never proposed: a tool's search)."""


@dataclass(frozen=True, slots=True)
class PlanKnobs:
    """The knobs of a plan that are not a question's reading (:class:`refind.query.ReadingRules` holds those):
    see :class:`refind.HeuristicAgent`."""

    max_rounds: int = DEFAULTS.max_rounds
    time_weight: float = DEFAULTS.time_weight
    feedback: bool = DEFAULTS.feedback
    feedback_terms: int = DEFAULTS.feedback_terms
    breadth_k: int = DEFAULTS.breadth_k
    breadth_window: int = DEFAULTS.breadth_window
    openings: bool = DEFAULTS.openings


@dataclass
class PlanContext:
    """What a kind proposes rounds from: the question's reading, the session (for its analysis and term
    statistics, never its evidence: a plan is made before any round runs) and the plan's knobs."""

    session: SearchSession
    reading: QuestionReading
    knobs: PlanKnobs = field(default_factory=PlanKnobs)

    @property
    def words(self) -> list[str]:
        """The question's keywords."""
        return list(self.reading.keywords)

    @property
    def broad(self) -> str:
        """Every keyword of the question and its options, once each: the broad round's words."""
        return " ".join(self.reading.all_keywords)

    @property
    def roles(self) -> tuple[str, ...] | None:
        """The roles every words round keeps to: the person's own messages for a breadth question about
        their words ("the order in which I brought up…"), whose long answers from the other side would
        otherwise take most of the places; None for any other question."""
        r = self.reading
        return ("user",) if r.whose == "user" and r.breadth_cue is not None else None

    @cached_property
    def present(self) -> list[str]:
        """The question's keyword terms this person's history holds, rarest first (one term-statistics call
        for the first :data:`~refind.models.MAX_QUERY_TERMS` keywords; none for a one-word question)."""
        words = self.words
        counts = self.session.term_counts(" ".join(words[:MAX_QUERY_TERMS])) if len(words) > 1 else {}
        return [t for n, t in sorted((n, t) for t, n in counts.items() if n > 0)]

    def words_round(self, kind: str, keywords: str | None, label: str, **values: Any) -> Round:
        """A round of ``kind`` over ``keywords``, kept to :attr:`roles` (and said so in its label) when the
        question asks for one side's words and the round has words."""
        roles = self.roles
        if roles is not None and keywords:
            return Round(
                kind=kind, keywords=keywords, label=f"{label} ({roles[0]} messages)", roles=roles, **values
            )
        return Round(kind=kind, keywords=keywords, label=label, **values)


class Kind:
    """A kind of round. Subclass it: set ``name`` and ``slot``, write :meth:`propose` (the rounds it adds to
    a plan for a question, none by default) and, when its rounds do not run as a BM25 round over their
    keywords, :meth:`run`; then register an instance (:meth:`refind.agent.kinds.Kinds.register`)."""

    name: str = ""
    slot: Slot = "main"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        """The rounds of this kind for ``plan``'s question (in order)."""
        return ()

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs) -> list[Evidence]:
        """Run one round of this kind; returns the blocks it added or extended."""
        return session.words(round_)

    def __repr__(self) -> str:
        return f"<kind {self.name} ({self.slot})>"


def rarer_half(present: Sequence[str]) -> list[str]:
    """The rarer share of ``present`` (rarest first) a rarer-terms round searches."""
    return list(present[: math.ceil(len(present) * POLICY.rarer_share)])
