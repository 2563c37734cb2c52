"""A round by meaning (``meaning``): the person's messages nearest the question in a sentence-embedding space,
fused with the word rounds (issue 27). It reaches what says the same thing in other words ("What chronic
condition did I tell you I have?" and "I'm type 1 diabetic"), which no word round finds. Proposed when the
search has an embedder; after the budgeted word rounds, so it never takes the place of one and runs even
when they found nothing."""

from __future__ import annotations

from collections.abc import Sequence

from refind.agent.kinds._base import Kind, PlanContext, PlanKnobs
from refind.models import Evidence, Round
from refind.policy import POLICY
from refind.search.session import SearchSession

__all__ = ["MEANING"]


class Meaning(Kind):
    name = "meaning"
    slot = "after"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        if not plan.session.can_embed:
            return []
        return [Round(kind=self.name, weight=POLICY.weight_meaning, label="meaning")]

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs) -> list[Evidence]:
        return session.meaning(round_)


MEANING = Meaning()
