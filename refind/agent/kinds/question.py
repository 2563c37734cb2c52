"""Rounds over the question itself: its keywords (``broad``), its phrasing (``phrasing``), and its keywords
among one side's messages when it asks whose words (``own_words``)."""

from __future__ import annotations

from collections.abc import Sequence

from refind.agent.kinds._base import Kind, PlanContext
from refind.models import Round

__all__ = ["BROAD", "OWN_WORDS", "PHRASING"]


class Broad(Kind):
    """Every keyword of the question and of its multiple-choice options, no time filter."""

    name = "broad"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        return [plan.words_round(self.name, plan.broad, "broad")] if plan.broad else []


class Phrasing(Kind):
    """The question as asked: its function words and phrasing rank sessions differently from the bare
    keywords (the two rankings are fused); proposed only when it adds a term the keywords lack."""

    name = "phrasing"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        broad = plan.broad
        if not broad or not set(plan.session.question_terms()) - set(plan.session.analyze(broad)):
            return []
        return [plan.words_round(self.name, plan.reading.text, "question")]


class OwnWords(Kind):
    """The keywords once more among one side's messages, when the question asks about that side's words
    ("what did I say…", "the restaurant you recommended"): the long answers of the other side otherwise
    crowd out the short messages that hold it. The last round within the budget; a breadth question about
    the person's own words keeps every round to their messages instead (:attr:`PlanContext.roles`)."""

    name = "own_words"
    slot = "last"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        who = plan.reading.whose
        if not plan.broad or who is None or plan.roles is not None:
            return []
        return [Round(kind=self.name, keywords=plan.broad, roles=(who,), label=f"broad ({who} messages)")]


BROAD = Broad()
PHRASING = Phrasing()
OWN_WORDS = OwnWords()
