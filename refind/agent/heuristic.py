"""HeuristicAgent: the default, offline, deterministic planner (no LLM).

Its plan is the rounds the registered kinds (:mod:`refind.agent.kinds`) propose for the question's reading,
in their order: each over what earlier rounds have not returned (the read-set), the plan stopping when a
round adds nothing (never while a time-filtered round is still to come), at most ``max_rounds`` of them, then
the rounds that come after the budget. With the built-in kinds:

1. **period** (a time cue and no topic words, "what did we talk about last week?"): the period's sessions
   by recency, first;
2. **broad**: every keyword of the question (and of its multiple-choice options), no time filter;
3. **phrasing**: the question as asked (its function words rank sessions differently; fused);
4. **time**: when the question has a time cue ("last Saturday", "in May 2023") that ``now`` resolves, the
   keywords inside that range (its sessions by recency when they find nothing there);
5. **rarer** terms (the ones this person's history has fewest messages for), then each **option**, or
   without options a **relaxed** query (the keywords minus the most common);
6. **own words**: the keywords among one side's messages when the question asks whose words, as the last
   round within the budget;
7. after the budget: **beginning** (how something began: the earliest session's opening), **openings** (a
   summary: the openings of the best sessions), **feedback** (off by default: pseudo-relevance feedback).

A breadth question (its shape, :mod:`refind.query.shape`) widens the session first: more places, each
shorter.
"""

from __future__ import annotations

from refind.agent.kinds import KINDS, Kinds, PlanContext, PlanKnobs
from refind.config import DEFAULTS, AgentSettings
from refind.models import Round
from refind.query.reading import ReadingRules
from refind.search.session import SearchSession

__all__ = ["HeuristicAgent"]

_DEFAULT = DEFAULTS.agent  # every knob's default is AgentSettings'


class HeuristicAgent:
    """Offline planner. ``max_rounds`` bounds the budgeted searches; ``time_filters=False`` skips the time
    rounds, ``shapes=False`` reads every question as a lookup, ``form_words=False`` keeps a breadth question's
    form words, ``openings=False`` drops a summary's openings round, ``feedback=True`` adds a feedback round
    of ``feedback_terms`` terms (for ablations); ``time_weight`` is the time round's weight in the session
    ranking; ``breadth_k`` / ``breadth_window`` how a breadth question widens the rounds; ``kinds`` the
    registry of round kinds (default: every registered kind, :data:`refind.agent.kinds.KINDS`).

    Every knob but ``kinds`` is a field of :class:`refind.config.AgentSettings`, which gives its default, its
    bounds and its ``REFIND_*`` variable; :meth:`from_settings` builds the agent a memory's settings describe
    (what :meth:`refind.Memory.search` runs when given no agent)."""

    name = "heuristic"

    def __init__(
        self,
        max_rounds: int = _DEFAULT.max_rounds,
        *,
        time_filters: bool = _DEFAULT.time_filters,
        time_weight: float = _DEFAULT.time_weight,
        feedback: bool = _DEFAULT.feedback,
        feedback_terms: int = _DEFAULT.feedback_terms,
        shapes: bool = _DEFAULT.shapes,
        breadth_k: int = _DEFAULT.breadth_k,
        breadth_window: int = _DEFAULT.breadth_window,
        form_words: bool = _DEFAULT.form_words,
        openings: bool = _DEFAULT.openings,
        kinds: Kinds | None = None,
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self.max_rounds = max_rounds
        self.reading_rules = ReadingRules(shapes=shapes, form_words=form_words, time_filters=time_filters)
        self.knobs = PlanKnobs(
            max_rounds=max_rounds,
            time_weight=time_weight,
            feedback=feedback,
            feedback_terms=feedback_terms,
            breadth_k=breadth_k,
            breadth_window=breadth_window,
            openings=openings,
        )
        self.kinds = kinds if kinds is not None else KINDS

    @classmethod
    def from_settings(cls, settings: AgentSettings, *, kinds: Kinds | None = None) -> HeuristicAgent:
        """The agent ``settings`` describe (an :class:`~refind.config.AgentSettings`, or a whole
        :class:`~refind.Settings`: its agent fields)."""
        knobs = {name: getattr(settings, name) for name in AgentSettings.model_fields}
        return cls(**knobs, kinds=kinds)

    def plan(self, session: SearchSession) -> list[Round]:
        """The rounds this agent would run for ``session``'s question, in order (its time cue resolved against
        ``session.now``): the budgeted ones first, then those that come after the budget."""
        reading = session.reading_for(self.reading_rules)
        return self.kinds.plan(PlanContext(session, reading, self.knobs))

    def run(self, session: SearchSession) -> None:
        session.finish(self.run_rounds(session))

    def run_rounds(self, session: SearchSession) -> str:
        """The plan's rounds on ``session`` without finishing it (an agent that goes on after them, such as
        :class:`~refind.LLMAgent`, starts here); returns why the plan stopped."""
        shape = session.reading_for(self.reading_rules).shape
        if self.reading_rules.shapes:
            if shape.shape == "breadth":  # many places, each short
                session.widen(shape.reason, self.knobs.breadth_k, self.knobs.breadth_window)
            else:
                session.set_shape(shape.shape, shape.reason)
        rounds = self.plan(session)
        main = [r for r in rounds if self.kinds.budgeted(r)]
        after = [r for r in rounds if not self.kinds.budgeted(r)]
        if not main:
            return "no keywords and no time cue"
        budget = self.max_rounds
        reason = "plan done" if len(main) <= budget else "budget spent"
        for i, r in enumerate(main[:budget]):
            new = self.kinds.run(session, r, self.knobs)
            # never stop while a time cue is unused: a later round filters by it
            ahead = main[i + 1 : budget]
            if not new and not any(x.date_from is not None for x in ahead):
                reason = "a round added nothing"
                break
        for r in after:
            self.kinds.run(session, r, self.knobs)
        return reason
