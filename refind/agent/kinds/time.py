"""Rounds of the question's period: its sessions by recency (``period``, for a question with a time cue and
no topic words) and its keywords inside the period (``time``)."""

from __future__ import annotations

from collections.abc import Sequence

from refind.agent.kinds._base import Kind, PlanContext, PlanKnobs
from refind.models import Evidence, Round
from refind.policy import POLICY
from refind.search.session import SearchSession

__all__ = ["PERIOD", "TIME"]


def _is_period(plan: PlanContext) -> bool:
    return plan.reading.time_range is not None and plan.reading.shape_name == "period"


class Period(Kind):
    """A period question ("what did we talk about last week?"): the period's sessions, newest first, each by
    its opening and its newest messages in the period; before any other round."""

    name = "period"
    slot = "first"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        cue = plan.reading.time_range
        if cue is None or not _is_period(plan):
            return []
        return [
            Round(
                kind=self.name,
                date_from=cue.start,
                date_to=cue.end,
                weight=POLICY.weight_browse,
                label=f"time: {cue.text} (period)",
            )
        ]

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs) -> list[Evidence]:
        return session.period(round_)


class Time(Kind):
    """The question's keywords inside the period its time cue names ("last Saturday", "in May 2023"); with
    no keywords, the period's sessions by recency. When the words find nothing in the period, its sessions
    by recency follow ("the plant last week" when no message says "plant"): a time cue is never left
    unused."""

    name = "time"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        cue = plan.reading.time_range
        if cue is None or (_is_period(plan) and not plan.words):
            return []
        words = " ".join(plan.words) or None
        return [
            plan.words_round(
                self.name,
                words,
                f"time: {cue.text}",
                date_from=cue.start,
                date_to=cue.end,
                weight=plan.knobs.time_weight,
            )
        ]

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs) -> list[Evidence]:
        if round_.keywords is None:
            return session.period(round_.model_copy(update={"weight": POLICY.weight_browse}))
        new = session.words(round_)
        if not new and round_.date_from is not None:  # the period's words missed: its sessions by recency
            missed = {
                "keywords": None,
                "weight": POLICY.weight_browse,
                "label": f"{round_.label} (words missed)",
            }
            new = session.period(round_.model_copy(update=missed))
        return new


PERIOD = Period()
TIME = Time()
