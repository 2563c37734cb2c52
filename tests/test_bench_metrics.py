"""benchmarks.metrics against hand-computed cases, plus invariants over random rankings."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import metrics as m


def test_session_metrics_hand_computed() -> None:
    ranked = ["a", "b", "a", "c", "d", "e", "f"]  # the repeat of "a" is dropped: a b c d e | f
    gold = {"c", "x"}
    assert m.precision_at_k(ranked, gold, 5) == pytest.approx(1 / 5)
    assert m.recall_at_k(ranked, gold, 5) == pytest.approx(1 / 2)
    assert m.recall_all_at_k(ranked, gold, 5) == 0.0
    assert m.hit_at_k(ranked, gold, 5) == 1.0
    # DCG = 1/log2(3+1) (c at rank 3); ideal = 1/log2(2) + 1/log2(3) (two gold, K = 5)
    assert m.ndcg_at_k(ranked, gold, 5) == pytest.approx(0.5 / (1 + 1 / math.log2(3)))
    assert m.top_gold_rank(ranked, gold) == 3
    assert m.reciprocal_rank(ranked, gold) == pytest.approx(1 / 3)
    assert m.hit_at_k(ranked, gold, 2) == 0.0
    assert m.top_gold_rank(ranked, {"zz"}) is None
    assert m.reciprocal_rank(ranked, {"zz"}) == 0.0


def test_precision_counts_empty_slots_and_recall_all() -> None:
    assert m.precision_at_k(["g"], {"g"}, 5) == pytest.approx(0.2)
    assert m.precision_at_k([], {"g"}, 5) == 0.0
    assert m.recall_all_at_k(["g", "h", "i"], {"g", "i"}, 3) == 1.0
    assert m.recall_all_at_k(["g", "h", "i"], {"g", "i"}, 2) == 0.0
    assert m.ndcg_at_k(["g", "i"], {"g", "i"}, 5) == pytest.approx(1.0)
    assert m.ndcg_at_k(["h", "g"], {"g"}, 5) == pytest.approx(1 / math.log2(3))
    with pytest.raises(ValueError):
        m.recall_at_k(["a"], set(), 5)
    with pytest.raises(ValueError):
        m.precision_at_k(["a"], {"a"}, 0)


def test_evidence_tokens_is_the_prefix_up_to_the_kth_session() -> None:
    sessions, tokens = ["s1", "s1", "s2", "s3", "s1"], [10, 20, 30, 40, 50]
    assert m.evidence_tokens(sessions, tokens, 1) == 30  # both s1 items before s2 appears
    assert m.evidence_tokens(sessions, tokens, 2) == 60
    assert m.evidence_tokens(sessions, tokens, 3) == 150  # s1's later item belongs to a top-3 session
    assert m.evidence_tokens(sessions, tokens, 5) == 150  # fewer sessions than K: everything
    assert m.evidence_tokens([], [], 5) == 0


def test_turn_recall_counts_only_items_that_fit_whole() -> None:
    turns = [("t1",), ("t2", "t9"), ("t3",)]
    tokens = [400, 700, 100]
    gold = {"t1", "t3"}
    assert m.turn_recall_at_budget(turns, tokens, gold, 300) == 0.0
    assert m.turn_recall_at_budget(turns, tokens, gold, 1000) == 0.5  # 400 fits, 400+700 does not: stop
    assert m.turn_recall_at_budget(turns, tokens, gold, 1200) == 1.0  # 400+700+100 = 1200 fits exactly
    assert m.turn_recall_at_budget([None, ("t3",)], [5, 5], gold, 100) == 0.5
    with pytest.raises(ValueError):
        m.turn_recall_at_budget(turns, tokens, set(), 1000)


def test_packed_turn_recall_reads_the_delivered_turns() -> None:
    gold = {"t1", "t3", "t4"}
    assert m.packed_turn_recall({"t1", "t2"}, gold) == pytest.approx(1 / 3)
    assert m.packed_turn_recall(frozenset(), gold) == 0.0
    assert m.packed_turn_recall(["t4", "t3", "t1", "t9"], gold) == 1.0
    with pytest.raises(ValueError):
        m.packed_turn_recall({"t1"}, set())


def test_score_question_with_packed_evidence() -> None:
    # ranked items: t1 (600), t2 (600), t3 (600); the packed evidence is the adapter's own choice
    packed = {1000: {"t3"}, 2000: {"t3"}, 4000: {"t1", "t2", "t3"}}
    row = m.score_question(
        ["s1", "s2", "s1"],
        [("t1",), ("t2",), ("t3",)],
        [600, 600, 600],
        ["s1"],
        ["t1", "t3"],
        5,
        packed_turns=packed,
        packed_tokens={1000: 990, 2000: 1300, 4000: 1900},
    )
    # the ranked items: t1 within 1,000 tokens, all three (1,800) within 2,000
    assert row["turn_recall_at_budget"] == {"1000": 0.5, "2000": 1.0, "4000": 1.0}
    assert row["packed_turn_recall_at_budget"] == {"1000": 0.5, "2000": 0.5, "4000": 1.0}
    assert row["packed_tokens_at_budget"] == {"1000": 990, "2000": 1300, "4000": 1900}
    unpacked = m.score_question(["s1"], [("t1",)], [10], ["s1"], ["t1"], 5)
    assert unpacked["packed_turn_recall_at_budget"] is None and unpacked["packed_tokens_at_budget"] is None
    no_turn_gold = m.score_question(["s1"], [("t1",)], [10], ["s1"], None, 5, packed_turns=packed)
    assert no_turn_gold["packed_turn_recall_at_budget"] is None


def test_percentile_interpolates_like_numpy() -> None:
    assert m.percentile([4, 1, 3, 2], 50) == pytest.approx(2.5)
    assert m.percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert m.percentile([7], 95) == 7
    assert m.percentile([], 50) is None
    assert m.mean([1, None, 3]) == 2
    assert m.mean([None]) is None


def test_score_question_with_and_without_gold() -> None:
    row = m.score_question(
        ["s1", "s2", "s1"], [("a",), ("b",), ("c",)], [600, 600, 600], ["s1"], ["a", "c"], 5
    )
    assert row["ranked_sessions"] == ["s1", "s2"]
    assert row["precision_at_k"] == pytest.approx(0.2)
    assert row["recall_all_at_k"] == 1.0
    assert row["evidence_tokens"] == 1800
    assert row["turn_recall_at_budget"] == {"1000": 0.5, "2000": 1.0, "4000": 1.0}
    abstain = m.score_question(["s1"], [None], [10], [], None, 5)
    assert abstain["precision_at_k"] is None and abstain["top_gold_rank"] is None
    assert abstain["turn_recall_at_budget"] is None
    assert abstain["evidence_tokens"] == 10
    failed = m.failed_question(["s1"], ["a"])
    assert failed["recall_at_k"] == 0.0 and failed["turn_recall_at_budget"]["4000"] == 0.0
    assert failed["packed_turn_recall_at_budget"] == {"1000": 0.0, "2000": 0.0, "4000": 0.0}
    assert failed["packed_tokens_at_budget"] == {"1000": 0, "2000": 0, "4000": 0}


def _row(qtype: str, p: float, latency: float, abstention: bool = False) -> dict:
    base = m.score_question(["s1"] if p else ["s9"], [("t",)], [10], [] if abstention else ["s1"], None, 1)
    return base | {"type": qtype, "abstention": abstention, "latency_ms": latency, "status": "ok"}


def test_aggregate_by_type_and_abstention_apart() -> None:
    rows = [_row("x", 1, 1.0), _row("x", 0, 2.0), _row("y", 1, 3.0), _row("x", 0, 4.0, abstention=True)]
    out = m.aggregate(rows)
    assert out["n"] == 3
    assert out["precision_at_k"] == pytest.approx(2 / 3)
    assert out["hit_rate"] == pytest.approx(2 / 3)
    assert out["by_type"]["x"]["n"] == 2 and out["by_type"]["x"]["hit_rate"] == 0.5
    assert out["by_type"]["y"]["recall_at_k"] == 1.0
    assert out["latency_p50_ms"] == pytest.approx(2.5)  # over every query, abstention included
    assert out["by_type"]["x"]["latency_p50_ms"] == pytest.approx(1.5)
    assert out["abstention"]["n"] == 1
    assert out["turn_recall_at_budget"] is None
    assert out["packed_turn_recall_at_budget"] is None and out["packed_over_budget"] is None
    assert out["errors"] == 0


def test_aggregate_packed_means_and_over_budget() -> None:
    def row(qtype: str, packed: dict[int, set[str]], tokens: dict[int, int]) -> dict:
        base = m.score_question(
            ["s1"], [("a",)], [10], ["s1"], ["a", "b"], 5, packed_turns=packed, packed_tokens=tokens
        )
        return base | {"type": qtype, "abstention": False, "latency_ms": 1.0, "status": "ok"}

    rows = [
        row("x", {1000: set(), 2000: {"a"}, 4000: {"a", "b"}}, {1000: 0, 2000: 900, 4000: 3000}),
        row("y", {1000: {"a"}, 2000: {"a"}, 4000: {"a"}}, {1000: 1200, 2000: 1200, 4000: 1200}),
    ]
    out = m.aggregate(rows)
    assert out["turn_recall_at_budget"] == {"1000": 0.5, "2000": 0.5, "4000": 0.5}  # item "a", 10 tokens
    assert out["packed_turn_recall_at_budget"] == {"1000": 0.25, "2000": 0.5, "4000": 0.75}
    assert out["packed_tokens_at_budget"] == {"1000": 600, "2000": 1050, "4000": 2100}
    assert out["packed_over_budget"] == 1  # question y's 1,200 tokens at B = 1,000
    assert out["by_type"]["x"]["packed_turn_recall_at_budget"] == {"1000": 0.0, "2000": 0.5, "4000": 1.0}
    assert out["by_type"]["y"]["packed_over_budget"] == 1 and out["by_type"]["x"]["packed_over_budget"] == 0


def test_all_gold_packed_gold_hits_and_buckets_hand_computed() -> None:
    def row(bucket: str | None, items: list[tuple[str, ...]], packed: dict[int, set[str]]) -> dict:
        base = m.score_question(
            ["s1"] * len(items), items, [10] * len(items), ["s1"], ["a", "b"], 5, packed_turns=packed
        )
        extra = {} if bucket is None else {"bucket": bucket}
        return base | {"type": "x", "abstention": False, "latency_ms": 1.0, "status": "ok"} | extra

    both = row("100K", [("a",), ("b",)], {1000: {"a"}, 2000: {"a", "b"}, 4000: {"a", "b", "c"}})
    assert both["packed_all_at_budget"] == {"1000": 0.0, "2000": 1.0, "4000": 1.0}
    assert both["packed_hit_at_budget"] == {"1000": 1.0, "2000": 1.0, "4000": 1.0}
    assert both["turn_hit"] == 1.0 and both["nonempty"] == 1.0
    none = row("1M", [("c",)], {1000: set(), 2000: {"c"}, 4000: {"c", "b"}})
    assert none["packed_all_at_budget"] == {"1000": 0.0, "2000": 0.0, "4000": 0.0}
    assert none["packed_hit_at_budget"] == {"1000": 0.0, "2000": 0.0, "4000": 1.0}
    assert none["turn_hit"] == 0.0  # no gold turn among the ranked items
    empty = row("1M", [], {1000: set(), 2000: set(), 4000: set()})
    assert empty["nonempty"] == 0.0 and empty["turn_hit"] == 0.0
    assert m.packed_all({"a", "b", "z"}, ["a", "b"]) == 1.0 and m.packed_all({"a"}, ["a", "b"]) == 0.0
    with pytest.raises(ValueError):
        m.packed_all({"a"}, [])

    out = m.aggregate([both, none, empty])
    assert out["packed_all_at_budget"] == pytest.approx({"1000": 0.0, "2000": 1 / 3, "4000": 1 / 3})
    assert out["packed_hit_at_budget"] == pytest.approx({"1000": 1 / 3, "2000": 1 / 3, "4000": 2 / 3})
    assert out["nonempty_rate"] == pytest.approx(2 / 3) and out["turn_hit_rate"] == pytest.approx(1 / 3)
    assert set(out["by_bucket"]) == {"100K", "1M"} and out["by_bucket"]["1M"]["n"] == 2
    assert out["by_bucket"]["100K"]["packed_all_at_budget"] == {"1000": 0.0, "2000": 1.0, "4000": 1.0}
    # rows without a bucket (every other dataset) give no by_bucket at all
    assert "by_bucket" not in m.aggregate([row(None, [("a",)], {1000: set(), 2000: set(), 4000: set()})])
    # no turn gold: the turn measures are absent, only nonempty is counted
    session_only = m.score_question(["s1"], [None], [10], ["s1"], None, 5)
    assert session_only["turn_hit"] is None and session_only["packed_all_at_budget"] is None
    assert session_only["nonempty"] == 1.0


ids = st.sampled_from(list("abcdefghij"))


@given(st.lists(ids, max_size=15), st.sets(ids, min_size=1, max_size=5), st.integers(1, 12))
def test_metric_invariants(ranked: list[str], gold: set[str], k: int) -> None:
    p, r = m.precision_at_k(ranked, gold, k), m.recall_at_k(ranked, gold, k)
    assert 0 <= p <= 1 and 0 <= r <= 1
    assert p * k == pytest.approx(r * len(gold))
    assert m.recall_all_at_k(ranked, gold, k) <= r <= m.hit_at_k(ranked, gold, k)
    assert 0 <= m.ndcg_at_k(ranked, gold, k) <= 1 + 1e-12
    assert m.recall_at_k(ranked, gold, k + 1) >= r
    rank = m.top_gold_rank(ranked, gold)
    assert (rank is not None and rank <= k) == (m.hit_at_k(ranked, gold, k) == 1.0)
