"""Retrieval metrics, per question and aggregated. Pure functions; definitions (docs/benchmarks/README.md):

- The session ranking of a result is the session ids of its ranked items, first occurrence kept.
- ``P@K`` = gold sessions among the first K / K (empty slots count as misses; the seed framework's
  definition, under which coding-agent-life-v1's best possible P@5 is 0.240).
- ``R@K`` = gold sessions among the first K / number of gold sessions.
- ``recall_all@K`` = 1 when every gold session is among the first K, else 0 (LongMemEval's recall_all).
- ``hit`` = 1 when any gold session is among the first K (LongMemEval's recall_any).
- ``nDCG@K``: binary relevance, DCG = sum of 1/log2(rank+1) over gold sessions in the first K, divided by
  the DCG of an ideal ranking (min(|gold|, K) gold sessions first).
- ``top gold rank``: 1-based rank of the first gold session in the whole ranking (None when absent);
  ``MRR`` is the mean of its reciprocal (0 when absent).
- ``evidence tokens``: tokens of the ranked items up to and including the one that brings in the K-th
  distinct session (all items when fewer than K sessions appear): what a reader gets for "top K".
- ``turn recall @ B``: walk the ranked items in order adding each item's tokens; an item counts only if it
  fits entirely within B together with every item ranked above it, and the walk stops at the first item
  that does not fit. The gold turns carried by counted items, over all gold turns.
- Latency percentiles interpolate linearly between closest ranks (numpy's default method).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "BUDGETS",
    "SCORE_KEYS",
    "aggregate",
    "dedupe",
    "evidence_tokens",
    "failed_question",
    "hit_at_k",
    "mean",
    "ndcg_at_k",
    "percentile",
    "precision_at_k",
    "recall_all_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "score_question",
    "top_gold_rank",
    "turn_recall_at_budget",
]

BUDGETS = (1000, 2000, 4000)


def dedupe(ids: Iterable[str]) -> list[str]:
    """``ids`` with repeats removed, first occurrence kept."""
    return list(dict.fromkeys(ids))


def _hits(ranked: Sequence[str], gold: Collection[str], k: int) -> int:
    gold_set = set(gold)
    return sum(1 for s in dedupe(ranked)[:k] if s in gold_set)


def precision_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    if k <= 0:
        raise ValueError("k must be positive")
    return _hits(ranked, gold, k) / k


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    if not gold:
        raise ValueError("recall needs at least one gold id")
    return _hits(ranked, gold, k) / len(set(gold))


def recall_all_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    if not gold:
        raise ValueError("recall needs at least one gold id")
    return 1.0 if set(gold) <= set(dedupe(ranked)[:k]) else 0.0


def hit_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    return 1.0 if _hits(ranked, gold, k) > 0 else 0.0


def ndcg_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("nDCG needs at least one gold id")
    dcg = sum(1.0 / math.log2(i + 2) for i, s in enumerate(dedupe(ranked)[:k]) if s in gold_set)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold_set), k)))
    return dcg / ideal


def top_gold_rank(ranked: Sequence[str], gold: Collection[str]) -> int | None:
    gold_set = set(gold)
    for i, s in enumerate(dedupe(ranked)):
        if s in gold_set:
            return i + 1
    return None


def reciprocal_rank(ranked: Sequence[str], gold: Collection[str]) -> float:
    rank = top_gold_rank(ranked, gold)
    return 0.0 if rank is None else 1.0 / rank


def evidence_tokens(sessions: Sequence[str], tokens: Sequence[int], k: int) -> int:
    """Tokens of the shortest prefix of items whose sessions include the first ``k`` distinct sessions.
    ``sessions[i]``/``tokens[i]`` are the session id and token count of item ``i``."""
    seen: set[str] = set()
    total = 0
    for session, n in zip(sessions, tokens, strict=True):
        if session not in seen:
            if len(seen) == k:
                break
            seen.add(session)
        total += n
    return total


def turn_recall_at_budget(
    item_turns: Sequence[Collection[str] | None],
    tokens: Sequence[int],
    gold_turns: Collection[str],
    budget: int,
) -> float:
    """Share of ``gold_turns`` carried by the items that fit entirely within ``budget`` tokens, walking
    the items in rank order and stopping at the first that does not fit."""
    gold = set(gold_turns)
    if not gold:
        raise ValueError("turn recall needs at least one gold turn")
    used = 0
    covered: set[str] = set()
    for turns, n in zip(item_turns, tokens, strict=True):
        if used + n > budget:
            break
        used += n
        if turns:
            covered.update(gold.intersection(turns))
    return len(covered) / len(gold)


def percentile(values: Sequence[float], p: float) -> float | None:
    """The ``p``-th percentile (0-100) with linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the non-None values; None when there are none."""
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


# ---------------------------------------------------------------------------------------- per question

SCORE_KEYS = ("precision_at_k", "recall_at_k", "recall_all_at_k", "hit", "ndcg_at_k", "reciprocal_rank")


def score_question(
    item_sessions: Sequence[str],
    item_turns: Sequence[Collection[str] | None],
    item_tokens: Sequence[int],
    gold_sessions: Collection[str],
    gold_turns: Collection[str] | None,
    k: int,
    budgets: Sequence[int] = BUDGETS,
) -> dict[str, Any]:
    """Every per-question metric of one ranked result. Without gold sessions (abstention) the retrieval
    metrics are None; ``turn_recall_at_budget`` is None without gold turns."""
    ranked = dedupe(item_sessions)
    row: dict[str, Any] = {
        "ranked_sessions": ranked[:k],
        "n_items": len(item_sessions),
        "evidence_tokens": evidence_tokens(item_sessions, item_tokens, k),
    }
    if gold_sessions:
        row.update(
            precision_at_k=precision_at_k(ranked, gold_sessions, k),
            recall_at_k=recall_at_k(ranked, gold_sessions, k),
            recall_all_at_k=recall_all_at_k(ranked, gold_sessions, k),
            hit=hit_at_k(ranked, gold_sessions, k),
            ndcg_at_k=ndcg_at_k(ranked, gold_sessions, k),
            top_gold_rank=top_gold_rank(ranked, gold_sessions),
            reciprocal_rank=reciprocal_rank(ranked, gold_sessions),
        )
    else:
        row.update(dict.fromkeys(SCORE_KEYS), top_gold_rank=None)
    row["turn_recall_at_budget"] = (
        {str(b): turn_recall_at_budget(item_turns, item_tokens, gold_turns, b) for b in budgets}
        if gold_turns
        else None
    )
    return row


def failed_question(gold_sessions: Collection[str], gold_turns: Collection[str] | None) -> dict[str, Any]:
    """The row of a question whose adapter failed: a miss on every metric (never silently dropped)."""
    return score_question([], [], [], gold_sessions, gold_turns, 1) | {"ranked_sessions": [], "n_items": 0}


# ---------------------------------------------------------------------------------------- aggregation


def _group_stats(rows: Sequence[Mapping[str, Any]], budgets: Sequence[int]) -> dict[str, Any]:
    latencies = [r["latency_ms"] for r in rows if r.get("latency_ms") is not None]
    turn_rows = [r["turn_recall_at_budget"] for r in rows if r.get("turn_recall_at_budget")]
    return {
        "n": len(rows),
        "precision_at_k": mean(r["precision_at_k"] for r in rows),
        "recall_at_k": mean(r["recall_at_k"] for r in rows),
        "recall_all_at_k": mean(r["recall_all_at_k"] for r in rows),
        "hit_rate": mean(r["hit"] for r in rows),
        "ndcg_at_k": mean(r["ndcg_at_k"] for r in rows),
        "mrr": mean(r["reciprocal_rank"] for r in rows),
        "latency_p50_ms": percentile(latencies, 50),
        "latency_p95_ms": percentile(latencies, 95),
        "evidence_tokens_mean": mean(r["evidence_tokens"] for r in rows),
        "turn_recall_at_budget": (
            {str(b): mean(t[str(b)] for t in turn_rows) for b in budgets} if turn_rows else None
        ),
        "errors": sum(1 for r in rows if r.get("status") == "error"),
    }


def aggregate(rows: Sequence[Mapping[str, Any]], budgets: Sequence[int] = BUDGETS) -> dict[str, Any]:
    """Summary of one adapter's rows: metrics over answerable questions (latency percentiles over every
    query, abstention included), ``by_type`` over answerable questions, and ``abstention`` separately."""
    answerable = [r for r in rows if not r["abstention"]]
    abstention = [r for r in rows if r["abstention"]]
    out = _group_stats(answerable, budgets)
    every = [r["latency_ms"] for r in rows if r.get("latency_ms") is not None]
    out["latency_p50_ms"] = percentile(every, 50)
    out["latency_p95_ms"] = percentile(every, 95)
    out["errors"] = sum(1 for r in rows if r.get("status") == "error")
    types: dict[str, list[Mapping[str, Any]]] = {}
    for r in answerable:
        types.setdefault(r["type"], []).append(r)
    out["by_type"] = {t: _group_stats(group, budgets) for t, group in types.items()}
    out["abstention"] = (
        {
            "n": len(abstention),
            "returned_sessions_mean": mean(len(r["ranked_sessions"]) for r in abstention),
            "evidence_tokens_mean": mean(r["evidence_tokens"] for r in abstention),
            "latency_p50_ms": percentile([r["latency_ms"] for r in abstention], 50),
        }
        if abstention
        else None
    )
    return out
