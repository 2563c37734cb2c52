"""Reciprocal-rank fusion, written once: every ranking refind combines goes through this module.

- :func:`fuse_hits`: one round's hits, each by its own BM25 rank r1 and its session's rank r2:
  ``w_hit/(k0 + r1) + w_session/(k0 + r2)`` (ReFind's formula; docs/design.md § "One round"). The Java
  engine runs the same rule inside a round (``Engine.fuse`` in ``refind/store/java``, which mirrors this
  function; ``tests/test_round.py`` holds the two to one result).
- :func:`credit`: across rounds, each round's session ranking adds ``weight/(k0 + rank)`` to its sessions'
  scores (the final session order).
- :func:`final_score`: a block's relevance: its session's fused score (times the latest-first factor) and a
  small share of its own best hit (:attr:`~refind.policy.Policy.block_divisor`).
- :func:`two_rank_order`: items ranked by the fusion of two ranks each (a packing's hits: their own rank
  and their session's).

Pure functions over plain data; the constants are :data:`refind.policy.POLICY`'s and :class:`Fusion`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from refind.config import DEFAULTS
from refind.models import Hit
from refind.policy import POLICY

__all__ = ["Fusion", "SessionSource", "credit", "final_score", "fuse_hits", "reciprocal", "two_rank_order"]

SessionSource = Literal["hits", "documents"]

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Fusion:
    """Session-fusion settings (the ``fusion_*`` settings give them, and their defaults). ``w_session=0`` ranks
    by BM25 alone. ``sessions`` says how a session's rank r2 is found: ``hits`` (by the sum of its hits' BM25
    scores, ReFind's rule) or ``documents`` (by BM25 over the session's whole text, which the store indexes
    as one document per session)."""

    k0: float = DEFAULTS.fusion_k0
    w_hit: float = DEFAULTS.fusion_w_hit
    w_session: float = DEFAULTS.fusion_w_session
    sessions: SessionSource = DEFAULTS.fusion_sessions


def reciprocal(rank: int, k0: float, weight: float = 1.0) -> float:
    """What rank ``rank`` (1 = first) adds in a reciprocal-rank fusion with constant ``k0``."""
    return weight / (k0 + rank)


def fuse_hits(
    hits: Sequence[Hit], fusion: Fusion, session_order: Sequence[str] | None = None
) -> list[tuple[Hit, float]]:
    """Hits (in BM25 order) with their fused scores, best first; ties keep BM25 order.

    ``session_order`` ranks the sessions (r2) when given; otherwise sessions are ranked by the sum of their
    hits' scores. Sessions missing from ``session_order`` rank after all that are in it."""
    if session_order is None:
        session_sum: dict[str, float] = defaultdict(float)
        for h in hits:
            session_sum[h.session_id] += h.score
        session_order = sorted(session_sum, key=lambda s: -session_sum[s])
    session_rank = {sid: r for r, sid in enumerate(dict.fromkeys(session_order), 1)}
    missing = len(session_rank) + 1
    scored = [
        (
            h,
            reciprocal(r1, fusion.k0, fusion.w_hit)
            + reciprocal(session_rank.get(h.session_id, missing), fusion.k0, fusion.w_session),
        )
        for r1, h in enumerate(hits, 1)
    ]
    return sorted(scored, key=lambda x: -x[1])  # sorted() is stable


def credit(scores: dict[str, float], ranking: Iterable[str], weight: float, k0: float) -> list[str]:
    """Add one ranking (its first occurrence of each id counts) to the fused ``scores``, in place; returns the
    ranking as counted."""
    ranked = list(dict.fromkeys(ranking))
    for rank, key in enumerate(ranked, 1):
        scores[key] = scores.get(key, 0.0) + reciprocal(rank, k0, weight)
    return ranked


def final_score(session_score: float, factor: float, block_score: float) -> float:
    """A block's relevance: its session's fused score times ``factor`` (the latest-first factor, 1 when none),
    plus its own best hit's fused score over :attr:`~refind.policy.Policy.block_divisor` (which only orders
    blocks of one session), rounded to :attr:`~refind.policy.Policy.score_digits`."""
    return round(session_score * factor + block_score / POLICY.block_divisor, POLICY.score_digits)


def two_rank_order(
    items: Sequence[T],
    own_rank: Callable[[T], int],
    group_rank: Callable[[T], int],
    k0: float = POLICY.hit_order_k0,
) -> list[T]:
    """``items`` best first by ``1/(k0 + own rank) + 1/(k0 + group rank)``; ties: the better own rank."""
    return sorted(
        items, key=lambda x: (-(reciprocal(own_rank(x), k0) + reciprocal(group_rank(x), k0)), own_rank(x))
    )
