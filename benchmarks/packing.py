"""What a reader gets within a token budget: the evidence an adapter hands over for B tokens.

An adapter with a packer of its own (``refind``: ``Memory.search(..., max_tokens=B)``) packs its evidence
itself (its ``pack`` method). Every other adapter hands over its ranked items as they are, by
:func:`pack_in_order`: the items in rank order, each rendered as the adapter renders it for a reader
(``RankedItem.text``), joined by a blank line, an item taken when it fits together with those already
taken. An item that does not fit is skipped and the walk goes on to the next (first fit): a packer that
fills a reader's prompt would not leave the rest of the budget empty because one hit is long, and it is
the rule refind's own packer follows for its blocks (best first, each taken while it fits), so baselines
and refind are packed alike. Costs are each item's tokens plus the separator's between items; the joined
text is then counted once and, should it exceed the budget (token counts are not exactly additive), the
last item taken is dropped until it fits. The packed text never exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.adapters.base import PackedEvidence, RankedItem
from refind.tokens import count_tokens

__all__ = ["SEPARATOR", "pack_in_order"]

SEPARATOR = "\n\n"


def pack_in_order(
    items: Sequence[RankedItem], tokens: Sequence[int], budget: int, *, separator: str = SEPARATOR
) -> PackedEvidence:
    """``items`` (best first; ``tokens[i]`` the tokens of ``items[i].text``) packed into ``budget``
    tokens by the first-fit rule of this module's docstring."""
    if budget < 0:
        raise ValueError("budget must not be negative")
    gap = count_tokens(separator)
    taken: list[int] = []
    used = 0
    for i, n in enumerate(tokens):
        cost = n + (gap if taken else 0)
        if used + cost <= budget:
            taken.append(i)
            used += cost

    def joined() -> str:
        return separator.join(items[i].text for i in taken)

    text = joined()
    while taken and count_tokens(text) > budget:
        taken.pop()
        text = joined()
    return PackedEvidence(
        text=text,
        tokens=count_tokens(text) if taken else 0,
        turn_ids=frozenset(t for i in taken for t in (items[i].turn_ids or ())),
        items=len(taken),
    )
