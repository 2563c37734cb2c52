"""What a reader gets within a budget: the first-fit packer on hand-computed cases, and refind's own packing
checked against ``Memory.search(..., max_tokens=B)`` and ``to_text(max_tokens=B)`` on real LoCoMo data."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import adapters as registry
from benchmarks import metrics
from benchmarks.adapters.base import AdapterConfig, RankedItem
from benchmarks.catalog import load_dataset
from benchmarks.packing import SEPARATOR, pack_in_order
from refind.tokens import count_tokens


def _items(*turns: str) -> list[RankedItem]:
    return [RankedItem("s", 1.0, f"text {t}", (t,)) for t in turns]


def test_first_fit_skips_what_does_not_fit_and_goes_on() -> None:
    items = _items("t1", "t2", "t3")
    tokens = [400, 700, 100]  # as counted by the runner; the texts themselves are short
    gap = count_tokens(SEPARATOR)
    assert gap == 1
    # 1,000: t1 (400); t2 would make 400 + 1 + 700 = 1,101: skipped; t3 makes 400 + 1 + 100 = 501
    packed = pack_in_order(items, tokens, 1000)
    assert packed.turn_ids == {"t1", "t3"} and packed.items == 2
    assert packed.text == "text t1\n\ntext t3" and packed.tokens == count_tokens("text t1\n\ntext t3")
    # 1,101: t1 and t2 exactly (the separator costs its token), then t3 no longer fits
    assert pack_in_order(items, tokens, 1101).turn_ids == {"t1", "t2"}
    assert pack_in_order(items, tokens, 1100).turn_ids == {"t1", "t3"}
    # 300: only t3 fits; the ranked-items metric stops at t1 and delivers nothing
    assert pack_in_order(items, tokens, 300).turn_ids == {"t3"}
    assert metrics.turn_recall_at_budget([("t1",), ("t2",), ("t3",)], tokens, {"t3"}, 300) == 0.0
    assert pack_in_order(items, tokens, 1203).turn_ids == {"t1", "t2", "t3"}
    empty = pack_in_order(items, tokens, 50)
    assert (empty.text, empty.tokens, empty.turn_ids, empty.items) == ("", 0, frozenset(), 0)
    assert pack_in_order([RankedItem("s", 1.0, "x", None)], [1], 10).turn_ids == frozenset()
    with pytest.raises(ValueError):
        pack_in_order(items, tokens, -1)


def test_first_fit_never_exceeds_the_budget_on_the_joined_text() -> None:
    """Costs are summed per item; if the joined text still counts more than B, the last item taken goes."""
    items = [RankedItem("s", 1.0, " ".join(["word"] * 50), (f"t{i}",)) for i in range(3)]
    real = count_tokens(items[0].text)
    assert real == 50
    packed = pack_in_order(items, [1, 1, 1], 60)  # understated costs: all three pass the sum
    assert packed.items == 1 and packed.turn_ids == {"t0"} and packed.tokens == 50
    assert pack_in_order(items, [real] * 3, 60).items == 1
    assert pack_in_order(items, [real] * 3, 101).items == 2  # 50 + 1 + 50


@pytest.fixture(scope="module")
def conv26(shared_data: Path):
    ds = load_dataset("locomo", shared_data / "locomo10_dev.json")
    sessions = dict(ds.haystacks({"conv-26"}))["conv-26"]
    questions = [q for q in ds.questions if q.haystack == "conv-26"]
    return sessions, questions


def test_refind_packs_what_memory_search_returns_for_the_budget(conv26) -> None:
    """On real data: the adapter's packed evidence for B is ``Memory.search(..., max_tokens=B)`` (its text, its
    turns), that text is ``to_text(max_tokens=B)`` of the unbudgeted search, and it stays within B."""
    sessions, questions = conv26
    adapter = registry.create("refind")
    state = adapter.init(sessions, AdapterConfig("locomo", 5, turn_level=True))
    trimmed = 0
    try:
        for q in questions[:12]:
            items = adapter.query(q, state, 5)
            packed = adapter.pack(q, state, 5, items, metrics.BUDGETS)
            full = state.memory.search(q.text, "haystack", now=q.now, top_k=5)
            for b in metrics.BUDGETS:
                budgeted = state.memory.search(q.text, "haystack", now=q.now, top_k=5, max_tokens=b)
                assert packed[b].text == budgeted.to_text() == full.to_text(max_tokens=b), (q.id, b)
                assert packed[b].turn_ids == {t.id for e in budgeted.evidence for t in e.turns}
                assert packed[b].items == len(budgeted.evidence)
                assert packed[b].tokens == count_tokens(packed[b].text) <= b
                trimmed += packed[b].text != full.to_text()
    finally:
        adapter.teardown(state)
    assert trimmed > 0  # the budgets did cut some evidence, so the equalities were not all trivial


def test_hit_list_adapters_pack_their_items_in_rank_order(conv26) -> None:
    """bm25 has no packer of its own: the runner packs its hits first fit, each hit as bm25 renders it."""
    from benchmarks.runner import _pack

    sessions, questions = conv26
    adapter = registry.create("bm25")
    assert not hasattr(adapter, "pack")
    gap = count_tokens(SEPARATOR)
    state = adapter.init(sessions, AdapterConfig("locomo", 5, turn_level=True))
    try:
        for q in questions[:5]:
            items = adapter.query(q, state, 5)
            tokens = [count_tokens(i.text) for i in items]
            packed = _pack(adapter, q, state, 5, items, tokens)
            for b in metrics.BUDGETS:
                taken = [i for i, item in enumerate(items) if item.turn_ids[0] in packed[b].turn_ids]
                assert packed[b].text == SEPARATOR.join(items[i].text for i in taken)  # rank order
                assert packed[b].items == len(taken) and 0 < packed[b].tokens <= b
                used = sum(tokens[i] for i in taken) + gap * (len(taken) - 1)
                skipped = [n for i, n in enumerate(tokens) if i not in taken]
                assert used <= b and (not skipped or b - used < gap + min(skipped))  # nothing left would fit
    finally:
        adapter.teardown(state)
