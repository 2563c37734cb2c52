"""Rounds over part of the question's words: its rarer terms (``rarer``), each multiple-choice option
(``option``), or its terms without the most common one (``relaxed``)."""

from __future__ import annotations

from collections.abc import Sequence

from refind.agent.kinds._base import Kind, PlanContext, rarer_half
from refind.models import Round
from refind.policy import POLICY

__all__ = ["OPTION", "RARER", "RELAXED"]


class Rarer(Kind):
    """The keywords this person's history has fewest messages for (the ones that discriminate), which
    surfaces sessions the common words crowded out. Counts for nothing in the session ranking
    (``POLICY.weight_partial``)."""

    name = "rarer"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        present = plan.present
        if len(present) <= 1:
            return []
        words = " ".join(rarer_half(present))
        return [plan.words_round(self.name, words, "rarer terms", weight=POLICY.weight_partial)]


class Option(Kind):
    """Each multiple-choice option's words on their own (``POLICY.weight_option``)."""

    name = "option"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        return [
            plan.words_round(self.name, " ".join(ws), "option", weight=POLICY.weight_option)
            for ws in plan.reading.option_keywords
        ]


class Relaxed(Kind):
    """Without options: the keywords the history holds minus the most common one (a relaxed query)."""

    name = "relaxed"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        present = plan.present
        if plan.reading.option_keywords or len(present) < POLICY.relaxed_min_terms:
            return []
        label = f"relaxed (without '{present[-1]}')"
        return [plan.words_round(self.name, " ".join(present[:-1]), label, weight=POLICY.weight_partial)]


RARER = Rarer()
OPTION = Option()
RELAXED = Relaxed()
