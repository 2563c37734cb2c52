"""A round in one call (the Lucene engine's ``round``) equals the round through the engine's separate calls.

``refind.search.round.run_round`` sends a whole round to an engine that runs one (one crossing of the
bridge); every other engine runs it through ``query``, ``query_sessions``, ``windows``, ``analyze`` and
``query_titles`` (``round_by_calls``). The two must give the same hits, session orders, chosen hits, spans,
turns and terms, or the engine would rank differently depending on which path ran. Checked on a real
LoCoMo conversation in a real Lucene index, over the rounds the heuristic agent actually runs (read-sets,
time filters, roles, both session rankings) and over edge cases.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import refind
from refind.loaders import iter_locomo
from refind.search.round import round_by_calls, run_round
from refind.store.base import Filters, RoundFound, RoundRunner, RoundSpec
from refind.store.lucene import LuceneStore


@pytest.fixture(scope="module")
def conv(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[refind.Memory]:
    mem = refind.Memory(tmp_path_factory.mktemp("round") / "index")
    mem.import_sessions(
        s for s in iter_locomo(shared_data / "locomo10_dev.json") if s.user_id in {"conv-26", "conv-30"}
    )
    yield mem
    mem.close()


def _plain(found: RoundFound) -> dict:
    return {
        "hits": [(h.id, h.session_id, h.turn, h.timestamp, h.role, h.score) for h in found.hits],
        "orders": found.orders,
        "selected": list(found.selected.items()),
        "spans": found.spans,
        "windows": [
            [(h.id, h.turn, h.role, h.content, h.timestamp, h.speaker, h.time_text) for h in w]
            for w in found.windows
        ],
        "terms": found.terms,
        "titled": found.titled,
    }


def test_lucene_runs_a_round_in_one_call(conv: refind.Memory) -> None:
    assert isinstance(conv.store, LuceneStore) and isinstance(conv.store, RoundRunner)


def test_the_agents_rounds_are_the_same_in_one_call(conv: refind.Memory, shared_data: Path) -> None:
    """Every round of the heuristic agent's searches for the conversation's questions, replayed both ways."""
    import json

    questions = [
        q
        for c in json.loads((shared_data / "locomo10_dev.json").read_text())
        if c["sample_id"] == "conv-26"
        for q in c["qa"]
    ]
    specs: list[RoundSpec] = []
    original = LuceneStore.round

    def recording(self: LuceneStore, user_id: str, spec: RoundSpec) -> RoundFound:
        specs.append(spec)
        return original(self, user_id, spec)

    LuceneStore.round = recording  # type: ignore[method-assign]
    try:
        for q in questions[:60]:
            conv.search(q["question"], "conv-26")
    finally:
        LuceneStore.round = original  # type: ignore[method-assign]
    assert len(specs) > 100
    assert any(s.exclude_ids for s in specs) and any(s.read for s in specs)
    assert any(s.filters is not None and s.filters.time_from is not None for s in specs)
    assert any(s.content_terms for s in specs)  # the rounds over a question's phrasing
    compared = 0
    for spec in specs:
        one = conv.store.round("conv-26", spec)
        calls = round_by_calls(conv.store, "conv-26", spec)
        assert _plain(one) == _plain(calls), spec
        compared += bool(one.spans)
    assert compared > 50  # most rounds chose hits and read their windows


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"sessions": "documents"},
        {"sessions": "documents", "restrict": True},
        {"read": True, "exclude_ids": ("D1:3", "D1:4", "D2:1")},
        {"read": True, "exclude_sessions": ("session_1", "session_2")},
        {"read": False, "exclude_sessions": ("session_1",)},
        {"filters": Filters(roles=["user"])},
        {"filters": Filters(time_from=0, time_to=1)},  # nothing in range
        {"window": 0, "top_k": 12},
        {"top_k": 1, "fetch": 1},
        {"text": "the of and"},  # stopwords only: nothing
        {"text": "Caroline Caroline adoption agencies", "titles": True},
        {"w_session": 0.0},
        # a question as asked: hits chosen among messages with a content word, ranked by every match
        {"text": "what did Caroline say about the group", "content_terms": ("carolin", "group")},
        {"text": "what did she say", "content_terms": ()},  # function words only: no hit at all
        {
            "text": "what did Caroline say",
            "content_terms": ("carolin",),
            "read": True,
            "exclude_ids": ("D1:3",),
        },
        {"text": "what did Caroline say", "content_terms": ("carolin",), "sessions": "documents"},
    ],
)
def test_edge_rounds_are_the_same_in_one_call(conv: refind.Memory, change: dict) -> None:
    base = RoundSpec(text="Caroline LGBTQ support group painting", fetch=50, top_k=5, window=2, filters=None)
    spec = replace(base, **change)
    one = conv.store.round("conv-26", spec)
    assert _plain(one) == _plain(round_by_calls(conv.store, "conv-26", spec))
    assert _plain(run_round(conv.store, "conv-26", spec)) == _plain(one)


def test_another_users_messages_never_enter_a_round(conv: refind.Memory) -> None:
    """Two people in one index: the one-call round filters by owner like the separate calls do."""
    spec = RoundSpec(
        text="work family weekend dance painting",
        fetch=50,
        top_k=10,
        window=3,
        filters=None,
        sessions="documents",
    )
    for user in ("conv-26", "conv-30"):
        found = conv.store.round(user, spec)
        sessions = {s.session_id for s in conv.sessions(user)}
        assert found.hits and {h.session_id for h in found.hits} <= sessions
        assert {t.id for w in found.windows for t in w} <= {
            t.id for sid in sessions for t in conv.session(user, sid)
        }
        assert _plain(found) == _plain(round_by_calls(conv.store, user, spec))


def test_a_personal_index_searched_without_the_owner_filter_still_keeps_owners_apart(tmp_path: Path) -> None:
    """A query over one person's index leaves the owner filter out (every message is theirs); once a second
    person's messages arrive, in a segment of their own or beside the first's, it is back."""
    mem = refind.Memory(tmp_path / "index")
    mem.add(
        "ann", "a1", [{"role": "user", "content": f"the red kite flew over the hill {i}"} for i in range(30)]
    )
    alone = mem.query("ann", "red kite hill", k=50)
    assert len(alone) == 30
    mem.add("bob", "b1", [{"role": "user", "content": f"my red kite is better {i}"} for i in range(30)])
    for user, n in (("ann", 30), ("bob", 30)):
        hits = mem.query(user, "red kite", k=100)
        assert len(hits) == n and {h.session_id for h in hits} == {"a1" if user == "ann" else "b1"}
        spec = RoundSpec(text="red kite", fetch=100, top_k=5, window=1, filters=None, sessions="documents")
        found = mem.store.round(user, spec)
        assert {h.session_id for h in found.hits} == {"a1" if user == "ann" else "b1"}
        assert _plain(found) == _plain(round_by_calls(mem.store, user, spec))
    assert mem.store.term_counts("ann", "kite better") == {"kite": 30, "better": 0}
    mem.delete_user("bob")
    assert [h.id for h in mem.query("ann", "red kite hill", k=50)] == [h.id for h in alone]
    assert mem.store.term_counts("ann", "kite better") == {"kite": 30, "better": 0}
    mem.close()


def test_a_personal_index_is_asked_again_once_another_person_shares_its_session_ids(tmp_path: Path) -> None:
    """The engine remembers, per version of the index, whether one person holds every message and session
    (then windows and the session ranking skip the owner checks); a second person's write, even to a session
    of the same id, makes a new version, and the windows and ranking keep the two apart again."""
    mem = refind.Memory(tmp_path / "index")
    mem.add(
        "ann", "s1", [{"role": "user", "content": f"the red kite flew over the hill {i}"} for i in range(12)]
    )
    specs = [
        RoundSpec(
            text="red kite hill", fetch=50, top_k=5, window=3, filters=None, sessions="documents", restrict=r
        )
        for r in (False, True)
    ]
    for spec in specs:  # asked while ann is the only person in the index
        windows = mem.store.round("ann", spec).windows
        assert windows and all(t.content.startswith("the red kite flew") for w in windows for t in w)
    mem.add(
        "bob",
        "s1",
        [{"role": "user", "content": f"my red kite is better than the hill {i}"} for i in range(12)],
    )
    for user, mine in (("ann", "the red kite flew"), ("bob", "my red kite is better")):
        for spec in specs:
            found = mem.store.round(user, spec)
            turns = [t for w in found.windows for t in w]
            assert found.hits and turns
            assert all(t.content.startswith(mine) for t in turns)
            assert {h.id for h in found.hits} <= {h.id for h in mem.query(user, "red kite hill", k=100)}
            assert _plain(found) == _plain(round_by_calls(mem.store, user, spec))
    mem.close()
