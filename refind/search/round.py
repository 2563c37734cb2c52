"""One search round: the primitive every agent (and the ``search`` tool) uses.

1. BM25 over the user's messages, filtered by time and by the read-set, over-fetching candidates.
2. Session fusion: each hit gets ``w_hit/(k0 + r1) + w_session/(k0 + r2)``, with r1 its BM25 rank and r2 its
   session's rank by the sum of that session's hit scores (ReFind's formula; weights are settings).
3. The top_k hits by fused score, each expanded to ±window turns of its session; overlapping or adjacent
   windows merged into one block.
4. Evidence blocks: session, date, turns (hits flagged), score = the block's best fused score.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from refind.models import Evidence, Hit, Turn
from refind.store.base import Filters, Store

__all__ = ["Fusion", "build_blocks", "fuse", "search_round"]


@dataclass(frozen=True, slots=True)
class Fusion:
    """Session-fusion weights. ``w_session=0`` ranks by BM25 alone."""

    k0: float = 60.0
    w_hit: float = 1.0
    w_session: float = 1.0


def fuse(hits: Sequence[Hit], fusion: Fusion) -> list[tuple[Hit, float]]:
    """Hits (in BM25 order) with their fused scores, best first; ties keep BM25 order."""
    session_sum: dict[str, float] = defaultdict(float)
    for h in hits:
        session_sum[h.session_id] += h.score
    session_rank = {sid: r for r, sid in enumerate(sorted(session_sum, key=lambda s: -session_sum[s]), 1)}
    scored = [
        (h, fusion.w_hit / (fusion.k0 + r1) + fusion.w_session / (fusion.k0 + session_rank[h.session_id]))
        for r1, h in enumerate(hits, 1)
    ]
    return sorted(scored, key=lambda x: -x[1])  # sorted() is stable


def _spans(selected: Sequence[tuple[Hit, float]], window: int) -> list[tuple[str, int, int, float]]:
    """Merged (session, first turn, last turn, best score) spans around the selected hits."""
    by_session: dict[str, list[tuple[int, int, float]]] = defaultdict(list)
    for h, score in selected:
        by_session[h.session_id].append((max(h.turn - window, 0), h.turn + window, score))
    spans = []
    for sid, ranges in by_session.items():
        ranges.sort()
        lo, hi, best = ranges[0]
        for a, b, s in ranges[1:]:
            if a <= hi + 1:  # overlapping or adjacent
                hi, best = max(hi, b), max(best, s)
            else:
                spans.append((sid, lo, hi, best))
                lo, hi, best = a, b, s
        spans.append((sid, lo, hi, best))
    return spans


def search_round(
    store: Store,
    user_id: str,
    keywords: str,
    *,
    top_k: int = 5,
    window: int = 2,
    filters: Filters | None = None,
    fusion: Fusion | None = None,
    overfetch: int = 50,
    round_no: int = 1,
) -> tuple[list[Evidence], list[Hit]]:
    """Run one round; returns the evidence blocks (best first) and the raw BM25 hits it fused."""
    fusion = fusion or Fusion()
    hits = store.query(user_id, keywords, max(overfetch, top_k), filters)
    if not hits:
        return [], []
    selected = fuse(hits, fusion)[:top_k]
    return build_blocks(store, user_id, selected, window, {h.id for h in hits}, round_no), hits


def build_blocks(
    store: Store,
    user_id: str,
    selected: Sequence[tuple[Hit, float]],
    window: int,
    matched: set[str],
    round_no: int,
) -> list[Evidence]:
    """Expand scored hits to ±window turns, merge overlapping windows, fetch them in one query, and
    return the blocks best first (turns whose id is in ``matched`` are flagged)."""
    spans = _spans(selected, window)
    windows = store.windows(user_id, [(sid, lo, hi) for sid, lo, hi, _ in spans])
    blocks = []
    for (sid, _lo, _hi, score), turns in zip(spans, windows, strict=True):
        if not turns:
            continue
        blocks.append(
            Evidence(
                id=f"{sid}#{turns[0].turn}-{turns[-1].turn}",
                session_id=sid,
                session_date=turns[0].timestamp,
                session_date_text=turns[0].time_text,
                turns=[
                    Turn(
                        id=t.id,
                        turn=t.turn,
                        role=t.role,
                        content=t.content,
                        timestamp=t.timestamp,
                        speaker=t.speaker,
                        time_text=t.time_text,
                        matched=t.id in matched,
                    )
                    for t in turns
                ],
                score=score,
                rounds=[round_no],
            )
        )
    blocks.sort(key=lambda b: -b.score)
    return blocks
