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
- ``turn recall @ B`` (``turn_recall_at_budget``): walk the ranked items in order adding each item's tokens;
  an item counts only if it fits entirely within B together with every item ranked above it, and the walk
  stops at the first item that does not fit. The gold turns carried by counted items, over all gold turns.
  It reads the items an adapter ranks, not the evidence it would pack for a reader.
- ``packed turn recall @ B`` (``packed_turn_recall_at_budget``): the gold turns carried by the evidence
  the adapter hands a reader for B tokens, over all gold turns. That evidence is the adapter's own packing
  where it has one (``refind``: ``Memory.search(..., max_tokens=B)``, whose text is what
  ``SearchResult.to_text(max_tokens=B)`` gives; a turn it holds counts even when cut to a passage), else
  its ranked items in rank order, each rendered as for a reader, joined by a blank line, each taken when
  it fits with those already taken and skipped when it does not, the walk going on (first fit;
  :mod:`benchmarks.packing`). ``packed tokens @ B`` are the tokens of that text (never above B for the
  first-fit packer; ``packed_over_budget`` counts the budgets an adapter's own packer overran).
- ``packed all @ B`` (``packed_all_at_budget``): 1 when every gold turn is in that packed evidence, else 0.
- ``turn hit`` (``turn_hit``): 1 when any gold turn is among the turns of the ranked items (all of them, no
  budget), else 0; ``packed hit @ B`` (``packed_hit_at_budget``): the same within the evidence packed for B
  tokens; ``nonempty``: 1 when the adapter returned any item.
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
    "packed_all",
    "packed_turn_recall",
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


def packed_turn_recall(delivered: Collection[str], gold_turns: Collection[str]) -> float:
    """Share of ``gold_turns`` among the ``delivered`` turns (those the packed evidence carries)."""
    gold = set(gold_turns)
    if not gold:
        raise ValueError("turn recall needs at least one gold turn")
    return len(gold.intersection(delivered)) / len(gold)


def packed_all(delivered: Collection[str], gold_turns: Collection[str]) -> float:
    """1.0 when every one of ``gold_turns`` is among the ``delivered`` turns, else 0.0."""
    gold = set(gold_turns)
    if not gold:
        raise ValueError("turn recall needs at least one gold turn")
    return 1.0 if gold <= set(delivered) else 0.0


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
    *,
    packed_turns: Mapping[int, Collection[str]] | None = None,
    packed_tokens: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """Every per-question metric of one ranked result. Without gold sessions (abstention) the retrieval
    metrics are None; ``turn_recall_at_budget`` is None without gold turns. ``packed_turns[B]`` are the
    turns of the evidence packed for B tokens (``packed_tokens[B]`` its tokens); the packed metrics are
    None without gold turns or without packed evidence."""
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
    row["nonempty"] = 1.0 if item_sessions else 0.0
    row["turn_hit"] = None
    if gold_turns:
        returned = {t for turns in item_turns if turns for t in turns}
        row["turn_hit"] = 1.0 if returned.intersection(gold_turns) else 0.0
    row["packed_turn_recall_at_budget"] = row["packed_tokens_at_budget"] = None
    row["packed_all_at_budget"] = row["packed_hit_at_budget"] = None
    if gold_turns and packed_turns is not None:
        row["packed_turn_recall_at_budget"] = {
            str(b): packed_turn_recall(packed_turns[b], gold_turns) for b in budgets
        }
        row["packed_all_at_budget"] = {str(b): packed_all(packed_turns[b], gold_turns) for b in budgets}
        row["packed_hit_at_budget"] = {
            str(b): 1.0 if set(gold_turns).intersection(packed_turns[b]) else 0.0 for b in budgets
        }
        if packed_tokens is not None:
            row["packed_tokens_at_budget"] = {str(b): packed_tokens[b] for b in budgets}
    return row


def failed_question(gold_sessions: Collection[str], gold_turns: Collection[str] | None) -> dict[str, Any]:
    """The row of a question whose adapter failed: a miss on every metric (never silently dropped)."""
    nothing = {b: () for b in BUDGETS}
    row = score_question(
        [],
        [],
        [],
        gold_sessions,
        gold_turns,
        1,
        packed_turns=nothing,
        packed_tokens=dict.fromkeys(BUDGETS, 0),
    )
    return row | {"ranked_sessions": [], "n_items": 0}


# ---------------------------------------------------------------------------------------- aggregation


def _budget_means(
    rows: Sequence[Mapping[str, Any]], key: str, budgets: Sequence[int]
) -> dict[str, Any] | None:
    values = [r[key] for r in rows if r.get(key)]
    return {str(b): mean(v[str(b)] for v in values) for b in budgets} if values else None


def _group_stats(rows: Sequence[Mapping[str, Any]], budgets: Sequence[int]) -> dict[str, Any]:
    latencies = [r["latency_ms"] for r in rows if r.get("latency_ms") is not None]
    packed_tokens = [r["packed_tokens_at_budget"] for r in rows if r.get("packed_tokens_at_budget")]
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
        "turn_recall_at_budget": _budget_means(rows, "turn_recall_at_budget", budgets),
        "packed_turn_recall_at_budget": _budget_means(rows, "packed_turn_recall_at_budget", budgets),
        "packed_all_at_budget": _budget_means(rows, "packed_all_at_budget", budgets),
        "packed_hit_at_budget": _budget_means(rows, "packed_hit_at_budget", budgets),
        "nonempty_rate": mean(r.get("nonempty") for r in rows),
        "turn_hit_rate": mean(r.get("turn_hit") for r in rows),
        "packed_tokens_at_budget": _budget_means(rows, "packed_tokens_at_budget", budgets),
        "packed_over_budget": (
            sum(1 for t in packed_tokens for b in budgets if t[str(b)] > b) if packed_tokens else None
        ),
        "errors": sum(1 for r in rows if r.get("status") == "error"),
    }


def aggregate(rows: Sequence[Mapping[str, Any]], budgets: Sequence[int] = BUDGETS) -> dict[str, Any]:
    """Summary of one adapter's rows: metrics over answerable questions (latency percentiles over every
    query, abstention included), ``by_type`` over answerable questions (and ``by_bucket`` when the rows
    carry a ``bucket``), and ``abstention`` separately."""
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
    buckets: dict[str, list[Mapping[str, Any]]] = {}
    for r in answerable:
        if r.get("bucket") is not None:
            buckets.setdefault(r["bucket"], []).append(r)
    if buckets:  # only datasets whose questions have a bucket (BEAM, time-only)
        out["by_bucket"] = {b: _group_stats(group, budgets) for b, group in buckets.items()}
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
