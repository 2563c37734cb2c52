"""Evidence assembly across the rounds of one search: blocks found by several rounds become one.

Rendering and packing for a reader live in :mod:`refind.render` (beside the models, which render
themselves); this module is the search side's: how the blocks of successive rounds combine."""

from __future__ import annotations

from refind.models import Evidence, Turn

__all__ = ["merge_blocks"]


def merge_blocks(a: Evidence, b: Evidence) -> Evidence:
    """One block for two overlapping or adjacent blocks of the same session."""
    turns: dict[int, Turn] = {t.turn: t for t in a.turns}
    for t in b.turns:
        if t.turn in turns:
            old = turns[t.turn]
            turns[t.turn] = old.model_copy(
                update={"matched": old.matched or t.matched, "score": max(old.score, t.score)}
            )
        else:
            turns[t.turn] = t
    ordered = [turns[k] for k in sorted(turns)]
    return Evidence(
        id=f"{a.session_id}#{ordered[0].turn}-{ordered[-1].turn}",
        session_id=a.session_id,
        session_date=min(a.session_date, b.session_date),
        session_date_text=a.session_date_text if a.session_date <= b.session_date else b.session_date_text,
        turns=ordered,
        score=max(a.score, b.score),
        rounds=sorted(set(a.rounds) | set(b.rounds)),
        noted=a.noted or b.noted,
        terms=list(dict.fromkeys([*a.terms, *b.terms])),
    )
