"""Kinds of round: the registry every plan and every tool call goes through.

A plan is a list of :class:`~refind.models.Round` values, one kind each. :class:`Kinds` holds the kinds in plan
order; :meth:`Kinds.plan` asks each for its rounds for a question (:meth:`Kind.propose`) and places them by
their slot, and :meth:`Kinds.run` runs one round by its kind (:meth:`Kind.run`): the one door through which
the heuristic plan, the LLM agent's searches and users' own agents' tool calls all run rounds.

A new kind is one file (a :class:`Kind` subclass: a name, a slot, ``propose`` and, unless it is a BM25 round
over its keywords, ``run``) and one line that registers it: ``KINDS.register(MyKind(), before="rarer")`` for
every agent, or on a copy for one agent (``HeuristicAgent(kinds=...)``). docs/design.md has a worked example.
"""

from __future__ import annotations

from collections.abc import Iterator

from refind.agent.kinds._base import Kind, PlanContext, PlanKnobs, Slot
from refind.agent.kinds.feedback import FEEDBACK, feedback_terms
from refind.agent.kinds.meaning import MEANING
from refind.agent.kinds.openings import BEGINNING, OPENINGS
from refind.agent.kinds.question import BROAD, OWN_WORDS, PHRASING
from refind.agent.kinds.terms import OPTION, RARER, RELAXED
from refind.agent.kinds.time import PERIOD, TIME
from refind.agent.kinds.tool import TOOL
from refind.errors import InvalidInput
from refind.models import Evidence, Round
from refind.search.session import SearchSession

__all__ = ["KINDS", "Kind", "Kinds", "PlanContext", "PlanKnobs", "Slot", "feedback_terms"]


class Kinds:
    """An ordered registry of kinds of round (their order is the plan's, within each slot)."""

    def __init__(self, kinds: tuple[Kind, ...] = ()) -> None:
        self._kinds: dict[str, Kind] = {}
        for kind in kinds:
            self.register(kind)

    def register(self, kind: Kind, *, before: str | None = None) -> Kind:
        """Add ``kind`` (last, or just before the kind named ``before``); a kind of the same name is replaced
        in place. Returns it."""
        if not isinstance(kind, Kind) or not kind.name:
            raise InvalidInput(f"kind: expected a named refind.agent.kinds.Kind, got {kind!r}")
        if before is not None and before not in self._kinds:
            raise InvalidInput(f"before: no kind named {before!r}; known: {', '.join(self._kinds)}")
        if kind.name in self._kinds or before is None:
            self._kinds[kind.name] = kind
            return kind
        order = list(self._kinds.items())
        at = [name for name, _ in order].index(before)
        order.insert(at, (kind.name, kind))
        self._kinds = dict(order)
        return kind

    def copy(self) -> Kinds:
        """A registry with the same kinds, to change for one agent."""
        return Kinds(tuple(self._kinds.values()))

    def get(self, name: str) -> Kind:
        """The kind called ``name``; an unknown name is an :class:`~refind.InvalidInput` naming the known."""
        kind = self._kinds.get(name)
        if kind is None:
            raise InvalidInput(f"round kind {name!r} is not registered; known: {', '.join(self._kinds)}")
        return kind

    def __iter__(self) -> Iterator[Kind]:
        return iter(list(self._kinds.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def names(self) -> list[str]:
        """The kinds' names, in order."""
        return list(self._kinds)

    def plan(self, context: PlanContext) -> list[Round]:
        """The rounds for ``context``'s question: ``first`` kinds' rounds, then ``main`` ones in registry order
        with a ``last`` kind's rounds at the last place within ``max_rounds``, then ``after`` ones."""
        by_slot: dict[Slot, list[Round]] = {"first": [], "main": [], "last": [], "after": [], "none": []}
        for kind in self:
            by_slot[kind.slot].extend(kind.propose(context))
        main = [*by_slot["first"], *by_slot["main"]]
        for r in by_slot["last"]:
            main.insert(min(len(main), context.knobs.max_rounds - 1), r)
        return [*main, *by_slot["after"]]

    def budgeted(self, round_: Round) -> bool:
        """Whether ``round_`` counts against a plan's ``max_rounds`` (its kind's slot is not ``after``)."""
        return self.get(round_.kind).slot != "after"

    def run(self, session: SearchSession, round_: Round, knobs: PlanKnobs | None = None) -> list[Evidence]:
        """Run ``round_`` on ``session`` by its kind; returns the blocks it added or extended."""
        return self.get(round_.kind).run(session, round_, knobs or PlanKnobs())


KINDS = Kinds(
    (
        PERIOD,
        BROAD,
        PHRASING,
        TIME,
        RARER,
        OPTION,
        RELAXED,
        OWN_WORDS,
        MEANING,
        BEGINNING,
        OPENINGS,
        FEEDBACK,
        TOOL,
    )
)
"""Every agent's kinds, in plan order."""
