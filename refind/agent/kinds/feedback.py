"""Pseudo-relevance feedback (``feedback``, off by default): the rarest terms of the best hits found so far
added to the question's keywords, in the manner of RM3, so that a second hop reaches sessions that name what
the first hits named. After the budgeted rounds."""

from __future__ import annotations

from collections.abc import Sequence

from refind.agent.kinds._base import Kind, PlanContext, PlanKnobs
from refind.models import MAX_QUERY_TERMS, Evidence, Round
from refind.policy import POLICY
from refind.search.session import SearchSession

__all__ = ["FEEDBACK", "feedback_terms"]


def feedback_terms(session: SearchSession, words: Sequence[str], n: int) -> list[str]:
    """Up to ``n`` expansion terms from the ``POLICY.feedback_hits`` best hit turns collected so far:
    analyzed terms not in ``words``, ranked by how many of those hits hold them, then by how few of this
    person's messages do (rare terms and names discriminate), then alphabetically."""
    asked = set(session.analyze(" ".join(words)))
    turns = sorted((t for b in session.blocks for t in b.turns if t.matched), key=lambda t: (-t.score, t.id))[
        : POLICY.feedback_hits
    ]
    docs: dict[str, int] = {}
    for t in turns:
        for term in set(session.analyze(t.content[: POLICY.feedback_chars])):
            if term not in asked and len(term) > 2 and not term.isdigit():
                docs[term] = docs.get(term, 0) + 1
    if not docs:
        return []
    candidates = sorted(docs, key=lambda w: (-docs[w], w))[: POLICY.feedback_pool * n]
    counts = session.term_counts(" ".join(candidates))
    present = [w for w in candidates if counts.get(w, 0) > 0]
    return sorted(present, key=lambda w: (-docs[w], counts[w], w))[:n]


class Feedback(Kind):
    """The round's keywords are the question's; the expansion terms are found when it runs."""

    name = "feedback"
    slot = "after"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        if not plan.knobs.feedback or plan.knobs.max_rounds <= 1:
            return []
        return [
            Round(
                kind=self.name, keywords=" ".join(plan.words), weight=POLICY.weight_feedback, label="feedback"
            )
        ]

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs) -> list[Evidence]:
        words = (round_.keywords or "").split()
        extra = feedback_terms(session, words, knobs.feedback_terms)
        if not extra:
            return []
        return session.words(
            round_.model_copy(update={"keywords": " ".join([*words[:MAX_QUERY_TERMS], *extra])})
        )


FEEDBACK = Feedback()
