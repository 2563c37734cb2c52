"""refind.warm_up: synthetic searches in a throw-away index, so a process's first real searches run compiled
code; it must leave every other index and answer untouched. Token counting up to a cap (used on every
round) must equal the full count's minimum, on real messages."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import refind
from refind.tokens import count_tokens, count_tokens_upto
from tests.server_helpers import add_body, client, running, search_body


def test_warm_up_runs_searches_and_leaves_other_indexes_alone(mem: refind.Memory) -> None:
    mem.add("u", "s1", [{"role": "user", "content": "my sourdough starter died last week"}])
    before = mem.search("what happened to my sourdough starter?", "u")
    done = refind.warm_up(1.0, max_searches=25)
    assert 1 <= done.searches <= 25 and done.seconds > 0
    after = mem.search("what happened to my sourdough starter?", "u")
    assert [b.id for b in after.evidence] == [b.id for b in before.evidence]
    assert after.to_text() == before.to_text()
    stats = mem.stats()  # nothing of the warm-up's history reached this index
    assert stats.messages == 1 and stats.per_user == {"u": 1}


def test_warm_up_bounds() -> None:
    assert refind.warm_up(0.0).searches == 0
    assert refind.warm_up(30.0, max_searches=3).searches == 3
    with pytest.raises(ValueError):
        refind.warm_up(-1.0)


def test_count_tokens_upto_equals_the_capped_full_count_on_real_messages(shared_data: Path) -> None:
    with gzip.open(shared_data / "longmemeval_s_dev.json.gz", "rt", encoding="utf-8") as f:
        questions = json.load(f)
    texts = [t["content"] for q in questions[:6] for s in q["haystack_sessions"] for t in s]
    texts += ["word " * 5000, "x" * 20000, "  spaced   out  " * 900, "日本語のテキスト" * 800]
    long = sum(1 for t in texts if len(t) > 8 * 150 + 64)
    assert long > 100  # the prefix path is exercised
    for text in texts:
        for cap in (1, 16, 150, 1000):
            assert count_tokens_upto(text, cap) == min(count_tokens(text), cap)


def test_token_count_caches_are_bounded_and_cost_the_garbage_collector_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counts are remembered in plain dicts of strings to ints, which the collector does not track (an
    lru_cache's entries made every full collection walk them), and a full cache starts over."""
    import gc

    from refind import tokens

    tokens.clear_caches()
    monkeypatch.setattr(tokens, "_CACHE_MAX", 50)
    texts = [f"message number {i} about the kayak trip" for i in range(120)]
    first = [(count_tokens(t), count_tokens_upto(t, 4)) for t in texts]
    assert len(tokens._counts) <= 50 and all(len(c) <= 50 for c in tokens._counts_upto.values())
    gc.collect()
    assert not gc.is_tracked(tokens._counts)
    assert not any(gc.is_tracked(c) for c in tokens._counts_upto.values())
    again = [(count_tokens(t), count_tokens_upto(t, 4)) for t in texts]  # some remembered, some counted anew
    tokens.clear_caches()
    fresh = [(count_tokens(t), count_tokens_upto(t, 4)) for t in texts]
    assert first == again == fresh and all(n > 4 and upto == 4 for n, upto in first)


@pytest.mark.slow
def test_serve_warms_up_before_its_searches(tmp_path: Path) -> None:
    """``--warm-up`` in the serving process (search workers 0) and in reader processes: searches answer as
    without it, and the log says what ran."""
    for workers in ("0", "1"):
        with (
            running(tmp_path, "--search-workers", workers, "--warm-up", "0.5") as server,
            client(server) as http,
        ):
            add = http.post("/add", json=add_body(f"w{workers}", "u", "s", ["the lighthouse keeper's log"]))
            assert add.status_code == 200
            found = http.post("/search", json=search_body("lighthouse keeper", "u")).json()["data"]
            assert found and "lighthouse" in found[0]["content"]
            assert "warmed up" in server.log(), server.log()[-2000:]
