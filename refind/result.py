"""SearchResult: the evidence for one question, with the renderings every front uses.

The design: docs/design.md § "Evidence".

It lives apart from :mod:`refind.models` so the models stay a leaf: a result renders and packs itself
through :mod:`refind.evidence`, which builds on the models.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from refind.errors import InvalidInput
from refind.evidence import by_relevance, pack_for, render, render_block
from refind.models import Evidence, RoundTrace, Shape
from refind.policy import POLICY
from refind.tokens import count_tokens

__all__ = ["SearchResult"]


class SearchResult(BaseModel):
    """The evidence for one question: blocks grouped by session, sessions in time order, turns in order.

    ``by_relevance()`` gives the blocks best first; ``to_text(max_tokens)`` renders them for a prompt,
    packed for the budget (hits first, then context nearest them, long turns cut to the passage that
    matched; see :mod:`refind.evidence`); ``packed(max_tokens)`` is the same packing as a result, and
    ``render_block`` renders one block as ``to_text`` does. ``trace`` records every round.
    """

    question: str
    user_id: str
    now: int | None = None
    agent: str
    evidence: list[Evidence] = Field(default_factory=list)
    trace: list[RoundTrace] = Field(default_factory=list)
    context_tokens: int | None = 150
    hit_tokens: int | None = 1000
    segment_turns: int = POLICY.segment_turns
    shape: Shape = "lookup"
    """The question's shape the agent planned by: ``breadth`` spends the evidence on more places, each
    shorter; ``period`` browses the period's sessions (refind.query.shape)."""

    floor: list[Evidence] | None = Field(default=None, exclude=True, repr=False)
    """The evidence of the plan this result's plan started from and only added to (an LLM plan's heuristic
    rounds), when there is one: packing shows first what it would show of that evidence alone, so the
    added rounds never push it out of a budget. Not serialized; ``packed`` results have none."""
    floor_shape: Shape | None = Field(default=None, exclude=True, repr=False)
    """The shape ``floor`` was found under and is packed by (the plan's later rounds may change ``shape``)."""

    def by_relevance(self) -> list[Evidence]:
        """Blocks, most relevant first (ties: earlier round, then time)."""
        return by_relevance(self.evidence)

    def sessions(self) -> list[str]:
        """Session ids, most relevant first (each session ranked by its best block)."""
        return list(dict.fromkeys(e.session_id for e in self.by_relevance() if not e.standing))

    def packed(self, max_tokens: int) -> SearchResult:
        """This result with its evidence packed for ``max_tokens`` (what ``to_text(max_tokens)`` shows)."""
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise InvalidInput("max_tokens: expected a positive integer", field="max_tokens")
        blocks = pack_for(
            self.evidence,
            max_tokens,
            self.shape,
            context_tokens=self.context_tokens,
            hit_tokens=self.hit_tokens,
            segment_turns=self.segment_turns,
            floor=self.floor,
            floor_shape=self.floor_shape,
        )
        return self.model_copy(update={"evidence": blocks, "floor": None, "floor_shape": None})

    def to_text(self, max_tokens: int | None = None) -> str:
        """The evidence rendered for a prompt, packed for ``max_tokens`` when given (see
        :func:`refind.evidence.render`)."""
        evidence = self.packed(max_tokens).evidence if max_tokens is not None else self.evidence
        return render(evidence, context_tokens=self.context_tokens, hit_tokens=self.hit_tokens)

    def render_block(self, block: Evidence) -> str:
        """One block as ``to_text`` renders it (header, speakers, hits marked ``*``, long turns cut)."""
        return render_block(block, context_tokens=self.context_tokens, hit_tokens=self.hit_tokens)

    @property
    def tokens(self) -> int:
        """Tokens of the full rendered evidence."""
        return count_tokens(self.to_text())
