"""Rounds that read where conversations begin: the earliest session's opening for a question about how
something began (``beginning``) and the openings of the best sessions for a summary (``openings``)."""

from __future__ import annotations

from collections.abc import Sequence

from refind.agent.kinds._base import Kind, PlanContext, PlanKnobs
from refind.models import Evidence, Round
from refind.policy import POLICY
from refind.search.session import SearchSession

__all__ = ["BEGINNING", "OPENINGS"]


class Beginning(Kind):
    """ "When I first described my setup", "to start my project": the opening messages of the earliest
    session in the evidence, where a person first says what they set out to do. After the budgeted rounds."""

    name = "beginning"
    slot = "after"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        if not plan.reading.asks_beginning:
            return []
        label = "beginning: the earliest session's opening"
        return [Round(kind=self.name, weight=POLICY.weight_browse, label=label)]

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs) -> list[Evidence]:
        dates = session.evidence_sessions()
        if not dates:
            return []
        first = min(dates, key=lambda sid: (dates[sid], sid))
        return session.openings(round_, [first], POLICY.beginning_opening)


class Openings(Kind):
    """A breadth question asking for a summary ("a detailed summary of…", "walk me through…"): the opening
    messages of the best sessions in the evidence (by the fused ranking), where each part of a history says
    what it is about, in words the question rarely shares. After the budgeted rounds; only while the session
    is in the breadth shape."""

    name = "openings"
    slot = "after"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        if not (plan.knobs.openings and plan.reading.asks_summary):
            return []
        label = "summary: the openings of the best sessions"
        return [Round(kind=self.name, weight=POLICY.weight_browse, label=label)]

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs) -> list[Evidence]:
        if session.shape != "breadth":
            return []
        scores = session.session_score
        with_evidence = session.evidence_sessions()
        top = sorted(with_evidence, key=lambda sid: (-scores.get(sid, 0.0), sid))[: POLICY.summary_sessions]
        return session.openings(round_, top, POLICY.summary_opening)


BEGINNING = Beginning()
OPENINGS = Openings()
