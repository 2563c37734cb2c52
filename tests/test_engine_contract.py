"""The engine contract (refind/store/base.py): one suite, run over every engine in tests/engines.py.

Each test states a rule of the protocol and checks it through the protocol's calls only. Where a rule needs
an engine to do more than the protocol (keep its data after close, open a reader beside its writer), the
test runs over the engines that can. Orders are asserted where every engine must agree on them (a clear
relevance winner, equal scores in insertion order); BM25 values are compared across engines only in the
real-data test at the end, which holds the reference engine to Lucene's own scores.

A rule that an engine breaks is marked there with ``known_defect`` (a strict xfail naming the defect), so
the suite keeps failing for that engine until it is fixed and then says so.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import refind
from refind.config import Settings
from refind.errors import ReadOnlyError, StoreClosed
from refind.lexicon import ANALYZER_STOP_WORDS
from refind.models import MAX_QUERY_TERMS, id_problem
from refind.standing import read_standing
from refind.store import open_engine
from refind.store.base import (
    Engine,
    Filters,
    Marker,
    Record,
    SessionCounts,
    SessionDoc,
    SessionInfo,
    SessionState,
    StandingMark,
    WriteBatch,
)
from tests.conftest import ROOT
from tests.engines import ENGINES, EngineKind, kind

DAY = 86_400_000
T0 = 1_683_540_000_000  # 2023-05-08T10:00:00Z
INJECTIONS = ["user_id:other", "*:*", '") OR ("', "\u0000", "alice OR bob", "kind:m", "\\", "%", "' --"]


def _states(engine: Engine, user: str, sessions: list[str]) -> dict[str, SessionState]:
    """One user's session states, from the engine's batched lookup."""
    return {sid: st for (u, sid), st in engine.session_states({user: sessions}).items() if u == user}


# ---------------------------------------------------------------------------------------------- fixtures
# engine_kind (every engine), engine (a new one of that kind) and durable_kind: tests/conftest.py's, which
# tests/test_engine_vectors.py runs over too


def known_defect(
    request: pytest.FixtureRequest, engine_kind: EngineKind, names: Iterable[str], why: str
) -> None:
    """Mark the running test a strict xfail for the engines ``names``: a defect found by this suite."""
    if engine_kind.name in set(names):
        request.applymarker(pytest.mark.xfail(strict=True, reason=why))


# ---------------------------------------------------------------------------------------------- helpers


def rec(
    user: str,
    session: str,
    turn: int,
    content: str,
    *,
    ts: int | None = None,
    role: str | None = None,
    id: str | None = None,
    speaker: str | None = None,
    time_text: str | None = None,
) -> Record:
    return Record(
        user_id=user,
        session_id=session,
        id=id if id is not None else f"{session}:{turn}",
        turn=turn,
        timestamp=ts if ts is not None else T0 + turn * 60_000,
        role=role or ("user" if turn % 2 == 0 else "assistant"),
        content=content,
        speaker=speaker,
        time_text=time_text,
    )


def put(
    engine: Engine,
    records: Sequence[Record] = (),
    sessions: Sequence[SessionDoc] = (),
    marker: Marker | None = None,
    *,
    commit: bool = True,
) -> None:
    engine.write(WriteBatch(list(records), list(sessions), marker))
    if commit:
        engine.commit()


def ids(hits: Iterable[refind.Hit]) -> list[str]:
    return [h.id for h in hits]


# ---------------------------------------------------------------------------------------------- shape


def test_an_engine_is_the_protocol(engine: Engine) -> None:
    assert isinstance(engine, Engine)
    assert engine.read_only is False
    assert engine.path is None or engine.path.is_dir()
    assert engine.count() == 0 and engine.users() == []
    assert engine.query("u", "anything", 10) == [] and engine.browse("u", 10) == []
    assert engine.query("u", "   ", 10) == [] and engine.analyze("") == [] and engine.analyze(" \n ") == []
    assert engine.windows("u", []) == [] and engine.windows("u", [("s", 0, 9)]) == [[]]


# ---------------------------------------------------------------------------------------------- visibility


def test_nothing_written_is_visible_before_commit(engine: Engine) -> None:
    records = [rec("u", "s", 0, "the red kayak at the harbour"), rec("u", "s", 1, "kayaks are fun")]
    doc = SessionDoc("u", "s", "the red kayak at the harbour\nkayaks are fun", new=True)
    put(engine, records, [doc], Marker("u", "req-1", '{"digest": "abc"}'), commit=False)

    def reads() -> list[Any]:
        return [
            engine.query("u", "kayak", 10),
            engine.query_sessions("u", "kayak", 10),
            engine.windows("u", [("s", 0, 9)]),
            engine.browse("u", 10),
            engine.get("u", ["s:0", "s:1"]),
            engine.term_counts("u", "kayak harbour"),
            _states(engine, "u", ["s"]),
            engine.request_marker("u", "req-1"),
            engine.count("u"),
            engine.count(),
            engine.users(),
        ]

    assert reads() == [[], [], [[]], [], [], {"kayak": 0, "harbour": 0}, {}, None, 0, 0, []]
    engine.commit()
    (q, qs, win, browse, got, counts, states, marker, n_user, n_all, users) = reads()
    assert sorted(ids(q)) == ["s:0", "s:1"] and [s for s, _ in qs] == ["s"]
    assert [ids(w) for w in win] == [["s:0", "s:1"]]
    assert ids(browse) == ["s:1", "s:0"] and ids(got) == ["s:0", "s:1"]
    assert counts == {"kayak": 2, "harbour": 1} and marker == '{"digest": "abc"}'
    assert states["s"].tail.id == "s:1" and states["s"].text == doc.text
    assert (n_user, n_all, users) == (2, 2, ["u"])


def test_each_commit_is_visible_to_the_next_read(engine: Engine) -> None:
    for i in range(5):
        put(engine, [rec("u", "s", i, f"note number {i} about zebras")])
        assert len(engine.query("u", "zebras", 50)) == i + 1
        assert engine.count("u") == i + 1


# ---------------------------------------------------------------------------------------------- replace-by-id


def test_an_id_replaces_that_users_message_only(engine: Engine) -> None:
    put(
        engine,
        [
            rec("alice", "s", 3, "I live in Berlin", id="D1:3"),
            rec("bob", "s", 3, "I live in Berlin", id="D1:3"),
        ],
    )
    put(engine, [rec("alice", "s", 3, "I moved to Lisbon", id="D1:3", ts=T0 + DAY, role="assistant")])
    assert engine.count("alice") == 1 and engine.count("bob") == 1 and engine.count() == 2
    assert engine.query("alice", "Berlin", 10) == []
    assert ids(engine.query("bob", "Berlin", 10)) == ["D1:3"]
    (new,) = engine.get("alice", ["D1:3"])
    assert (new.content, new.timestamp, new.role, new.turn) == ("I moved to Lisbon", T0 + DAY, "assistant", 3)
    assert engine.get("bob", ["D1:3"])[0].content == "I live in Berlin"
    assert [h.content for h in engine.windows("alice", [("s", 0, 9)])[0]] == ["I moved to Lisbon"]


def test_an_id_given_in_another_session_moves_the_message(engine: Engine) -> None:
    put(engine, [rec("u", "s1", 0, "the harbour kayak", id="m1"), rec("u", "s1", 1, "other words")])
    put(engine, [rec("u", "s2", 5, "the harbour kayak again", id="m1")])
    assert ids(engine.windows("u", [("s1", 0, 9)])[0]) == ["s1:1"]
    moved = engine.windows("u", [("s2", 0, 9)])[0]
    assert [(h.id, h.turn, h.session_id) for h in moved] == [("m1", 5, "s2")]
    assert [(h.id, h.session_id) for h in engine.query("u", "kayak", 10)] == [("m1", "s2")]


def test_equal_scores_keep_insertion_order_and_a_replacement_is_inserted_anew(engine: Engine) -> None:
    put(engine, [rec("u", "s", i, "same words exactly", id=name, ts=T0) for i, name in enumerate("abc")])
    assert ids(engine.query("u", "words", 10)) == ["a", "b", "c"]
    assert ids(engine.browse("u", 10)) == ["a", "b", "c"]  # equal times: insertion order too
    assert sorted(ids(engine.get("u", ["c", "a", "b", "zz"]))) == ["a", "b", "c"]
    put(engine, [rec("u", "s", 0, "same words exactly", id="a", ts=T0)])
    hits = engine.query("u", "words", 10)
    assert ids(hits) == ["b", "c", "a"] and len({h.score for h in hits}) == 1
    assert ids(engine.browse("u", 10)) == ["b", "c", "a"]


# ---------------------------------------------------------------------------------------------- isolation


# ids are valid ids (refind.models.id_problem: no control characters), so "\u0000" is only query text here
USERS = ["alice", "bob", "alice:x", "ALICE", *(s for s in INJECTIONS if id_problem(s) is None)]


def test_users_never_see_each_other(engine: Engine) -> None:
    for i, user in enumerate(USERS):
        put(
            engine,
            [rec(user, "s1", 0, f"my passport is in the blue folder owner{i}", id="D1:3"),
             rec(user, "s1", 1, f"noted, owner{i}")],
            [SessionDoc(user, "s1", f"my passport is in the blue folder owner{i}\nnoted, owner{i}", new=True)],
            Marker(user, "req", f"payload of {i}"),
        )  # fmt: skip
    for i, user in enumerate(USERS):
        own = f"owner{i}"
        assert [h.content for h in engine.query(user, "passport blue folder", 100)] == [
            f"my passport is in the blue folder {own}"
        ]
        everything = " ".join(f"owner{j} passport noted" for j in range(len(USERS)))
        for hits in (
            engine.query(user, everything, 100),
            engine.browse(user, 100),
            engine.get(user, ["D1:3", "s1:1"]),
            engine.windows(user, [("s1", 0, 9)])[0],
        ):
            assert len(hits) == 2 and all(own in h.content for h in hits)
        assert engine.term_counts(user, "passport owner0 noted") == {
            "passport": 1,
            "owner0": 2 * int(i == 0),
            "note": 1,
        }
        state = _states(engine, user, ["s1"])["s1"]
        assert state.tail is not None and own in state.tail.content and own in (state.text or "")
        assert [s for s, _ in engine.query_sessions(user, own, 100)] == ["s1"]
        other = f"owner{(i + 1) % len(USERS)}"
        assert engine.query(user, other, 100) == [] and engine.query_sessions(user, other, 100) == []
        assert engine.request_marker(user, "req") == f"payload of {i}"
        assert engine.count(user) == 2
    assert engine.users() == sorted(USERS) and engine.count() == 2 * len(USERS)
    for nobody in ["carol", "alice ", "alic", "*"]:
        assert engine.query(nobody, "passport", 100) == [] and engine.browse(nobody, 100) == []
        assert engine.get(nobody, ["D1:3"]) == [] and engine.windows(nobody, [("s1", 0, 9)]) == [[]]
        assert _states(engine, nobody, ["s1"]) == {} and engine.request_marker(nobody, "req") is None
        assert engine.query_sessions(nobody, "passport", 100) == [] and engine.count(nobody) == 0


def test_query_text_is_never_query_syntax(engine: Engine) -> None:
    put(engine, [rec("alice", "s", 0, "the red kayak"), rec("alice", "s", 1, "a blue boat"),
                 rec("other", "s", 0, "the red kayak user_id other")])  # fmt: skip
    for text in [*INJECTIONS, "kayak*", '"red kayak"', "title:kayak", "kayak~2", "(kayak", "+kayak -boat"]:
        hits = engine.query("alice", text, 10)
        assert {h.session_id for h in hits} <= {"s"} and all("user_id" not in h.content for h in hits)
        assert all(isinstance(n, int) for n in engine.term_counts("alice", text).values())
        engine.query_sessions("alice", text, 10)
    assert ids(engine.query("alice", "kayak*", 10)) == ["s:0"]
    assert ids(engine.query("alice", "title:kayak", 10)) == ["s:0"]  # ':' splits words
    assert sorted(ids(engine.query("alice", '"red boat"', 10))) == ["s:0", "s:1"]  # a bag of words
    assert sorted(ids(engine.query("alice", "+kayak -boat", 10))) == ["s:0", "s:1"]  # no operators


# ---------------------------------------------------------------------------------------------- filters


def test_time_filters_are_inclusive_at_both_boundaries(engine: Engine) -> None:
    put(engine, [rec("u", "s", d, f"lunch with sam day {d}", ts=T0 + d * DAY) for d in range(5)])

    def times(f: Filters) -> list[int]:
        got = sorted(h.timestamp for h in engine.query("u", "lunch sam", 10, f))
        assert got == sorted(h.timestamp for h in engine.browse("u", 10, f))  # browse filters the same
        return got

    assert times(Filters(time_from=T0 + DAY, time_to=T0 + 3 * DAY)) == [T0 + DAY, T0 + 2 * DAY, T0 + 3 * DAY]
    assert times(Filters(time_from=T0 + DAY + 1, time_to=T0 + 3 * DAY - 1)) == [T0 + 2 * DAY]
    assert times(Filters(time_from=T0 + 2 * DAY, time_to=T0 + 2 * DAY)) == [T0 + 2 * DAY]
    assert times(Filters(time_from=T0 + 4 * DAY + 1)) == [] and times(Filters(time_to=T0 - 1)) == []
    assert times(Filters(time_to=T0)) == [T0] and times(Filters(time_from=T0 + 4 * DAY)) == [T0 + 4 * DAY]
    assert times(Filters(time_from=T0 + 3 * DAY, time_to=T0 + DAY)) == []


def test_session_and_role_filters(engine: Engine) -> None:
    put(engine, [rec("u", sid, t, f"tomato soup in {sid}") for sid in ("a", "b", "c") for t in range(2)])
    f = Filters(session_ids=["a", "c"])
    assert {h.session_id for h in engine.query("u", "tomato", 50, f)} == {"a", "c"}
    assert {h.session_id for h in engine.browse("u", 50, f)} == {"a", "c"}
    for roles in (["assistant"], ["ASSISTANT"]):  # roles are stored lowercase; a filter matches any case
        hits = engine.query("u", "tomato", 50, Filters(roles=roles))
        assert len(hits) == 3 and {h.role for h in hits} == {"assistant"}
    assert engine.query("u", "tomato", 50, Filters(session_ids=[])) == []  # an empty set admits nothing
    assert engine.query("u", "tomato", 50, Filters(roles=[])) == []
    both = Filters(session_ids=["b"], roles=["user"], time_from=T0, time_to=T0)
    assert ids(engine.query("u", "tomato", 50, both)) == ["b:0"] == ids(engine.browse("u", 50, both))


def test_a_hit_can_be_required_to_hold_one_of_some_terms(engine: Engine) -> None:
    """``any_terms``: a message must hold one of these index terms (an empty list admits nothing), applied
    before the top k, scores unchanged (a round over a question's phrasing chooses its hits this way)."""
    put(engine, [rec("u", "a", 0, "what is the best way to photograph a dog"),
                 rec("u", "b", 0, "what we decided about the cache: redis"),
                 rec("u", "c", 0, "what what what did we say")])  # fmt: skip
    every = engine.query("u", "what did we decide about the cache", 10)
    assert {h.session_id for h in every} == {"a", "b", "c"}
    chosen = engine.query("u", "what did we decide about the cache", 10, Filters(any_terms=["decid", "cach"]))
    assert ids(chosen) == ["b:0"] and chosen[0].score == next(h.score for h in every if h.id == "b:0")
    assert engine.query("u", "what did we say", 10, Filters(any_terms=[])) == []
    assert engine.query("nobody", "what", 10, Filters(any_terms=["what"])) == []


def test_filters_apply_before_top_k(engine: Engine) -> None:
    loud = [rec("u", "loud", i, "tomato tomato tomato soup", ts=T0 + i) for i in range(30)]
    quiet = rec(
        "u", "quiet", 0, "a long message that mentions tomato once among many other words here", ts=T0 - DAY
    )
    put(engine, [*loud, quiet])
    assert engine.query("u", "tomato", 1)[0].session_id == "loud"
    assert ids(engine.query("u", "tomato", 1, Filters(session_ids=["quiet"]))) == ["quiet:0"]
    assert ids(engine.query("u", "tomato", 1, Filters(exclude_ids=[r.id for r in loud]))) == ["quiet:0"]
    assert ids(engine.query("u", "tomato", 1, Filters(exclude_sessions=["loud"]))) == ["quiet:0"]
    assert ids(engine.query("u", "tomato", 1, Filters(time_to=T0 - 1))) == ["quiet:0"]
    assert ids(engine.query("u", "tomato", 1, Filters(roles=["user"], session_ids=["quiet"]))) == ["quiet:0"]
    assert ids(engine.browse("u", 1, Filters(exclude_sessions=["loud"]))) == ["quiet:0"]


def test_the_read_set_is_excluded(engine: Engine) -> None:
    put(engine, [rec("u", sid, t, "painting by the lake") for sid in ("a", "b") for t in range(3)])
    f = Filters(exclude_ids=["a:0", "b:2", "no-such-id"])
    assert sorted(ids(engine.query("u", "painting", 50, f))) == ["a:1", "a:2", "b:0", "b:1"]
    assert sorted(ids(engine.browse("u", 50, f))) == ["a:1", "a:2", "b:0", "b:1"]
    g = Filters(exclude_sessions=["a"])
    assert {h.session_id for h in engine.query("u", "painting", 50, g)} == {"b"}
    both = Filters(exclude_ids=["b:0"], exclude_sessions=["a"])
    assert sorted(ids(engine.query("u", "painting", 50, both))) == ["b:1", "b:2"]
    assert engine.query("u", "painting", 50, Filters(exclude_sessions=["a", "b"])) == []


# ---------------------------------------------------------------------------------------------- windows


def test_windows_ranges_clamping_order_and_missing_sessions(engine: Engine) -> None:
    put(engine, [rec("u", "s", t, f"turn {t}") for t in range(5, 10)])  # written out of turn order
    put(engine, [rec("u", "s", t, f"turn {t}") for t in range(5)])
    put(engine, [rec("u", "gaps", t, f"turn {t}") for t in (0, 5, 10)])
    put(engine, [rec("other", "s", t, f"not yours {t}") for t in range(10)])
    spans = [("s", 2, 4), ("s", -5, 1), ("s", 8, 10**12), ("s", 4, 2), ("missing", 0, 9), ("gaps", 1, 9),
             ("s", 2, 4), ("gaps", 0, 2**31 - 1)]  # fmt: skip
    got = engine.windows("u", spans)
    assert [[h.turn for h in w] for w in got] == [
        [2, 3, 4],
        [0, 1],
        [8, 9],
        [],
        [],
        [5],
        [2, 3, 4],
        [0, 5, 10],
    ]
    assert all(
        h.content == f"turn {h.turn}" and h.session_id == sid
        for (sid, _, _), w in zip(spans, got, strict=True)
        for h in w
    )
    assert [h.turn for h in engine.windows("u", [("s", 0, 2**31 - 1)])[0]] == list(range(10))


def test_windows_answer_many_spans_at_once(
    engine: Engine, engine_kind: EngineKind, request: pytest.FixtureRequest
) -> None:
    put(engine, [rec("u", "s", t, f"turn {t}") for t in range(1500)])
    for n in (400, 600, 1500):
        got = engine.windows("u", [("s", t, t) for t in range(n)])
        assert [[h.turn for h in w] for w in got] == [[t] for t in range(n)]


# ---------------------------------------------------------------------------------------------- hits


def test_browse_is_newest_or_oldest_first(engine: Engine) -> None:
    times = [3, 1, 4, 1, 5, 9, 2, 6]
    put(engine, [rec("u", "s", i, f"message {i}", ts=T0 + t * DAY) for i, t in enumerate(times)])
    newest = engine.browse("u", 10)
    assert [h.timestamp for h in newest] == sorted((T0 + t * DAY for t in times), reverse=True)
    assert ids(newest)[-2:] == ["s:1", "s:3"]  # equal times in insertion order
    oldest = engine.browse("u", 3, newest_first=False)
    assert ids(oldest) == ["s:1", "s:3", "s:6"] and all(h.content for h in oldest)
    assert engine.browse("u", 0) == [] and len(engine.browse("u", 5)) == 5


def test_hits_without_content_rank_the_same(engine: Engine) -> None:
    put(engine, [
        rec("u", "s", 0, "the kayak trip with Sam", speaker="Ann", time_text="8 May 2023"),
        rec("u", "s", 1, "kayak kayak paddles", speaker="Bo"),
        rec("u", "t", 0, "a red kayak for sale somewhere near the harbour of the old town"),
    ])  # fmt: skip
    full = engine.query("u", "kayak sam", 10)
    bare = engine.query("u", "kayak sam", 10, content=False)
    assert len(full) == 3 and ids(full)[0] == "s:0"
    assert [(h.id, h.session_id, h.turn, h.timestamp, h.role, h.score) for h in bare] == [
        (h.id, h.session_id, h.turn, h.timestamp, h.role, h.score) for h in full
    ]
    assert all(h.content == "" and h.speaker is None and h.time_text is None for h in bare)
    assert (full[0].speaker, full[0].time_text, full[0].content) == (
        "Ann",
        "8 May 2023",
        "the kayak trip with Sam",
    )
    assert [h.score for h in full] == sorted((h.score for h in full), reverse=True) and full[-1].score > 0


def test_lookups_that_do_not_rank_carry_score_zero(
    engine: Engine, engine_kind: EngineKind, request: pytest.FixtureRequest
) -> None:
    put(engine, [rec("u", "s", t, f"turn {t}") for t in range(3)])
    unscored = [
        *engine.get("u", ["s:0"]),
        *engine.browse("u", 3),
        _states(engine, "u", ["s"])["s"].tail,
        *engine.windows("u", [("s", 0, 2)])[0],
    ]
    assert [h.score for h in unscored if h is not None] == [0.0] * 8


def test_term_counts(engine: Engine) -> None:
    put(engine, [rec("u", "s", 0, "running shoes"), rec("u", "s", 1, "he runs daily"),
                 rec("u", "s", 2, "new shoes"), rec("v", "s", 0, "running running shoes")])  # fmt: skip
    assert engine.term_counts("u", "the shoes of Running, run!") == {"shoe": 2, "run": 2}
    assert list(engine.term_counts("u", "zebra shoes run")) == ["zebra", "shoe", "run"]  # first seen first
    assert engine.term_counts("u", "zebra") == {"zebra": 0} and engine.term_counts("u", "the of") == {}
    assert engine.term_counts("v", "running") == {"run": 1} and engine.term_counts("w", "run") == {"run": 0}


# ---------------------------------------------------------------------------------------------- session state


def test_session_states_give_the_last_turn_and_the_text(engine: Engine) -> None:
    put(engine, [rec("u", "s", 7, "the last turn", time_text="May"), rec("u", "s", 2, "an early turn")])
    put(
        engine,
        [rec("u", "s", 3, "written later, an earlier turn")],
        [SessionDoc("u", "s", "whole text", True)],
    )
    put(engine, [rec("u", "bare", 0, "no document")], [SessionDoc("u", "docs-only", "text only", True)])
    states = _states(engine, "u", ["s", "bare", "docs-only", "missing"])
    assert set(states) == {"s", "bare", "docs-only"}
    tail = states["s"].tail
    assert tail is not None and (tail.id, tail.turn, tail.content, tail.time_text) == (
        "s:7",
        7,
        "the last turn",
        "May",
    )
    assert states["s"].text == "whole text"
    bare = states["bare"].tail
    assert states["bare"].text is None and bare is not None and bare.id == "bare:0"
    assert states["docs-only"].tail is None and states["docs-only"].text == "text only"
    put(engine, [rec("u", "s", 9, "not committed")], [SessionDoc("u", "s", "new text")], commit=False)
    state = _states(engine, "u", ["s"])["s"]  # as of the last commit
    assert state.text == "whole text" and state.tail is not None and state.tail.turn == 7
    assert _states(engine, "u", []) == {}


def test_session_documents_rank_sessions_per_user(engine: Engine) -> None:
    put(engine, sessions=[
        SessionDoc("u", "boats", "kayak kayak paddle harbour", True),
        SessionDoc("u", "food", "tomato soup and a kayak poster", True),
        SessionDoc("u", "none", "nothing relevant here", True),
        SessionDoc("v", "boats", "kayak kayak kayak", True),
    ])  # fmt: skip
    ranked = engine.query_sessions("u", "kayak paddle", 10)
    assert [s for s, _ in ranked] == ["boats", "food"] and ranked[0][1] > ranked[1][1] > 0
    assert [s for s, _ in engine.query_sessions("u", "kayak", 10, ["food", "none"])] == ["food"]
    assert engine.query_sessions("u", "kayak", 10, []) == []
    assert [s for s, _ in engine.query_sessions("u", "kayak", 1)] == ["boats"]
    put(engine, sessions=[SessionDoc("u", "boats", "sailing only"), SessionDoc("u", "food", None)])
    assert engine.query_sessions("u", "kayak", 10) == []
    assert [s for s, _ in engine.query_sessions("u", "sailing", 10)] == ["boats"]
    assert [s for s, _ in engine.query_sessions("v", "kayak", 10)] == ["boats"]
    assert _states(engine, "u", ["food"]) == {}


def test_request_markers(engine: Engine) -> None:
    payload = (
        json.dumps({"digest": "e3b0c442", "session_id": "s ✓ 杭州", "n": 2}, ensure_ascii=False)
        + " \u0000\"'"
    )
    put(engine, [rec("u", "s", 0, "hello")], marker=Marker("u", "req-1", payload), commit=False)
    assert engine.request_marker("u", "req-1") is None  # only once committed
    engine.commit()
    assert engine.request_marker("u", "req-1") == payload  # exactly, byte for byte
    assert engine.request_marker("v", "req-1") is None and engine.request_marker("u", "req-2") is None
    put(engine, marker=Marker("v", "req-1", "bob's"))
    put(engine, marker=Marker("u", "req-1", "replaced"))
    assert (engine.request_marker("u", "req-1"), engine.request_marker("v", "req-1")) == ("replaced", "bob's")
    assert engine.count() == 1 and engine.users() == ["u"]  # markers are not messages


def test_session_info_is_kept_per_user_replaced_and_searchable_by_title(engine: Engine) -> None:
    alice = SessionInfo("alice", "s1", "Kayak trip to the harbour", "chatgpt", "/home/a/trips")
    put(engine, [rec("alice", "s1", 0, "paddle"), rec("alice", "s2", 0, "soup"), rec("bob", "s1", 0, "x")],
        [SessionDoc("alice", "s1", "paddle", True)])  # fmt: skip
    engine.write(WriteBatch(infos=[alice, SessionInfo("alice", "s2", None, "claude-code", "/repo ✓")]))
    assert engine.session_infos("alice") == {}  # only once committed
    engine.commit()
    engine.write(WriteBatch(infos=[SessionInfo("bob", "s1", "Secret kayak plans", "claude", None)]))
    engine.commit()
    got = engine.session_infos("alice")
    assert got == {"s1": alice, "s2": SessionInfo("alice", "s2", None, "claude-code", "/repo ✓")}
    assert engine.session_infos("alice", ["s2", "nope"]) == {"s2": got["s2"]}
    assert engine.session_infos("alice", []) == {} and engine.session_infos("carol") == {}
    assert engine.session_infos("bob") == {"s1": SessionInfo("bob", "s1", "Secret kayak plans", "claude")}
    ranked = engine.query_titles("alice", "kayaking harbours", 10)
    assert [s for s, _ in ranked] == ["s1"] and ranked[0][1] > 0  # stemmed, like messages; bob's not seen
    assert (
        engine.query_titles("alice", "kayak", 10, ["s2"]) == [] and engine.query_titles("alice", "", 5) == []
    )
    for injection in INJECTIONS:
        assert engine.query_titles("alice", injection, 10) == []
    engine.write(WriteBatch(infos=[SessionInfo("alice", "s1", "Soup recipes", "chatgpt")]))
    engine.commit()
    assert engine.query_titles("alice", "kayak", 10) == []  # replaced, not added
    assert [s for s, _ in engine.query_titles("alice", "soup", 10)] == ["s1"]
    assert engine.session_infos("alice", ["s1"])["s1"].project is None


def test_session_summaries_count_and_date_each_session(engine: Engine) -> None:
    put(engine, [rec("u", "a", 0, "one", ts=T0 + DAY), rec("u", "a", 1, "two", ts=T0),
                 rec("u", "a", 2, "three", ts=T0 + 3 * DAY), rec("u", "b", 0, "four", ts=T0 + 5 * DAY),
                 rec("v", "a", 0, "other user", ts=T0 - DAY)])  # fmt: skip
    got = sorted(engine.session_summaries("u"), key=lambda s: s.session_id)
    assert got == [
        SessionCounts("a", 3, T0, T0 + 3 * DAY),
        SessionCounts("b", 1, T0 + 5 * DAY, T0 + 5 * DAY),
    ]
    assert engine.session_summaries("nobody") == []
    put(engine, [rec("u", "a", 1, "two, replaced", ts=T0 + 2 * DAY)])  # a replacement counts once
    assert SessionCounts("a", 3, T0 + DAY, T0 + 3 * DAY) in engine.session_summaries("u")


# ---------------------------------------------------------------------------------------------- deletion


def test_delete_session_removes_one_session_of_one_user(engine: Engine) -> None:
    for user in ("alice", "bob"):
        put(engine, [rec(user, s, t, f"secret plan {t}") for s in ("s", "t") for t in range(2)],
            [SessionDoc(user, s, "secret plan", True) for s in ("s", "t")])  # fmt: skip
        engine.write(WriteBatch(infos=[SessionInfo(user, "s", "Secret title", "jsonl")]))
        engine.commit()
    engine.write(WriteBatch([rec("alice", "t", 5, "pending secret")]))  # written before: committed with it
    assert engine.delete_session("alice", "s") == 2
    assert engine.windows("alice", [("s", 0, 9)]) == [[]] and engine.session_infos("alice") == {}
    assert {h.session_id for h in engine.query("alice", "secret", 10)} == {"t"}
    assert [s for s, _ in engine.query_sessions("alice", "secret", 10)] == ["t"]
    assert engine.query_titles("alice", "secret", 10) == [] and _states(engine, "alice", ["s"]) == {}
    assert [s.session_id for s in engine.session_summaries("alice")] == ["t"] and engine.count("alice") == 3
    assert engine.session_infos("bob") == {"s": SessionInfo("bob", "s", "Secret title", "jsonl")}
    assert engine.count("bob") == 4 and [s for s, _ in engine.query_titles("bob", "secret", 9)] == ["s"]
    assert engine.delete_session("alice", "s") == 0 and engine.delete_session("alice", "nope") == 0


def test_session_info_goes_with_the_session_and_the_user(engine: Engine) -> None:
    put(engine, [rec("u", "s", 0, "hello"), rec("u", "k", 0, "kept")])
    engine.write(
        WriteBatch(infos=[SessionInfo("u", "s", "Greeting", "chatgpt"), SessionInfo("u", "k", "Kept")])
    )
    engine.commit()
    put(engine, sessions=[SessionDoc("u", "s", None)])  # the session's last message left: the write path
    assert set(engine.session_infos("u")) == {"k"}  # removes its document, and its info goes with it
    assert engine.delete_user("u") == 2 and engine.session_infos("u") == {}
    assert engine.query_titles("u", "kept", 10) == []


# ---------------------------------------------------------------------------------------------- deletion


def test_delete_user_removes_messages_sessions_and_markers(engine: Engine) -> None:
    for user in ("alice", "bob"):
        put(engine, [rec(user, "s", t, f"secret plan {t}") for t in range(3)],
            [SessionDoc(user, "s", "secret plan", True)], Marker(user, "r", "p"))  # fmt: skip
    assert engine.delete_user("alice") == 3
    assert engine.query("alice", "secret", 10) == [] and engine.count("alice") == 0
    assert engine.query_sessions("alice", "secret", 10) == [] and _states(engine, "alice", ["s"]) == {}
    assert engine.request_marker("alice", "r") is None and engine.windows("alice", [("s", 0, 9)]) == [[]]
    assert engine.users() == ["bob"] and engine.count() == 3
    assert len(engine.query("bob", "secret", 10)) == 3 and engine.request_marker("bob", "r") == "p"
    assert [s for s, _ in engine.query_sessions("bob", "secret", 10)] == ["s"]
    assert engine.delete_user("alice") == 0 and engine.delete_user("nobody") == 0


def test_tombstones_are_kept_per_user_outlive_deletions_and_are_forgotten_on_request(engine: Engine) -> None:
    """A deleted session's tombstone (what later imports leave out): recorded durably, per user, kept when
    the messages go (delete_session, delete_user, retention), forgotten only by remove_tombstones."""
    assert engine.tombstones() == {} and engine.tombstones("alice") == {}
    put(engine, [rec(user, s, 0, "secret plan") for user in ("alice", "bob") for s in ("s1", "s2")])
    engine.add_tombstones("alice", ["s1", "s2"], T0)
    engine.add_tombstones("bob", ["s1"], T0 + 1)
    engine.add_tombstones("bob", [], T0 + 2)  # nothing to record
    assert engine.tombstones("alice") == {"alice": {"s1": T0, "s2": T0}}
    assert engine.tombstones() == {"alice": {"s1": T0, "s2": T0}, "bob": {"s1": T0 + 1}}
    assert engine.tombstones("carol") == {}
    assert engine.count("alice") == 2  # a tombstone deletes nothing by itself
    assert engine.delete_session("alice", "s1") == 1 and engine.delete_user("alice") == 1
    engine.expire(int(time.time() * 1000) + 1000)
    engine.commit()
    assert engine.count() == 0 and engine.tombstones("alice") == {"alice": {"s1": T0, "s2": T0}}
    engine.add_tombstones("alice", ["s1"], T0 + 5)  # recorded again: the new time
    assert engine.tombstones("alice") == {"alice": {"s1": T0 + 5, "s2": T0}}
    assert engine.remove_tombstones("alice", ["s1", "never-deleted"]) == 1
    assert engine.tombstones("alice") == {"alice": {"s2": T0}}
    assert engine.remove_tombstones("alice") == 1 and engine.remove_tombstones("alice") == 0
    assert engine.tombstones() == {"bob": {"s1": T0 + 1}}  # another user's are untouched
    assert engine.remove_tombstones("bob", []) == 0 and engine.tombstones("bob") == {"bob": {"s1": T0 + 1}}


def test_expire_removes_what_was_added_before_the_cutoff(engine: Engine) -> None:
    put(engine, [rec("alice", "s1", 0, "old first"), rec("alice", "s1", 1, "old second"),
                 rec("bob", "s9", 0, "old only")], marker=Marker("alice", "r-old", "1"))  # fmt: skip
    time.sleep(0.01)
    cutoff = int(time.time() * 1000)
    time.sleep(0.01)
    put(engine, [rec("alice", "s1", 2, "new third"), rec("alice", "s1", 0, "old first, edited"),
                 rec("carol", "s2", 0, "new carol")], marker=Marker("alice", "r-new", "2"))  # fmt: skip
    expired = engine.expire(cutoff)
    assert expired.removed == 2  # s1:1 and s9:0; s1:0 counts from its replacement
    assert sorted(expired.sessions) == [
        ("alice", "s1", ["old first, edited", "new third"]),
        ("bob", "s9", []),
    ]
    assert engine.count() == 5 and engine.request_marker("alice", "r-old") == "1"  # nothing applied yet
    engine.commit()
    assert engine.count() == 3 and ids(engine.windows("alice", [("s1", 0, 9)])[0]) == ["s1:0", "s1:2"]
    assert engine.users() == ["alice", "carol"] and engine.query("bob", "old", 10) == []
    assert engine.request_marker("alice", "r-old") is None and engine.request_marker("alice", "r-new") == "2"
    assert engine.expire(cutoff).removed == 0 and engine.expire(cutoff).sessions == []


# ---------------------------------------------------------------------------------------------- standing


def stand(user: str, session: str, turn: int, content: str, **kw: Any) -> Record:
    """A record with what the write path's rule reads in it (refind.standing)."""
    r = rec(user, session, turn, content, **kw)
    return dataclasses.replace(r, standing=read_standing(r.role, r.content))


def test_standing_messages_are_stored_with_the_message_and_found_in_one_call(engine: Engine) -> None:
    put(engine, [
        stand("u", "s1", 0, "Plan my meals; keep in mind I'm on warfarin.", ts=T0),
        stand("u", "s1", 1, "I'm on warfarin too, said the assistant.", ts=T0 + 1, role="assistant"),
        stand("u", "s1", 2, "How do I bake bread?", ts=T0 + 2),
        stand("u", "s2", 0, "Always answer in British English.", ts=T0 + DAY),
        stand("u", "s2", 2, "I prefer short answers.", ts=T0 + DAY),
        stand("other", "s1", 0, "I'm allergic to shellfish.", ts=T0),
    ])  # fmt: skip
    found = engine.standing("u", 10)
    assert [(h.id, h.kind) for h in found] == [
        ("s2:2", "preference"),
        ("s2:0", "instruction"),
        ("s1:0", "fact"),
    ]  # newest first; equal times: the later turn first
    fact = found[-1]
    assert (fact.session_id, fact.turn, fact.timestamp, fact.role) == ("s1", 0, T0, "user")
    assert (fact.domain, fact.subject, fact.change) == ("medication", "warfarin", False)
    assert fact.sentence == "keep in mind I'm on warfarin."
    assert found[0].domain is None and found[0].sentence == "I prefer short answers."
    assert [h.id for h in engine.standing("u", 2)] == ["s2:2", "s2:0"] and engine.standing("u", 0) == []
    assert [h.id for h in engine.standing("other", 10)] == ["s1:0"] and engine.standing("nobody", 5) == []
    # replaced: what stands is the new message's; deleted, expired: gone with the message
    put(engine, [stand("u", "s2", 2, "Thanks, that helps.", ts=T0 + DAY)])
    put(engine, [stand("u", "s1", 2, "We're no longer vegan, by the way.", ts=T0 + 2)])
    assert [(h.id, h.change) for h in engine.standing("u", 10)] == [
        ("s2:0", False),
        ("s1:2", True),
        ("s1:0", False),
    ]
    assert engine.delete_session("u", "s2") == 2
    assert [h.id for h in engine.standing("u", 10)] == ["s1:2", "s1:0"]
    time.sleep(0.01)
    cutoff = int(time.time() * 1000)
    time.sleep(0.01)
    put(engine, [stand("u", "s3", 0, "I live in Anchorage.", ts=T0 + 3 * DAY)])
    engine.expire(cutoff)
    engine.commit()
    assert [h.id for h in engine.standing("u", 10)] == ["s3:0"] and engine.standing("other", 10) == []
    assert engine.delete_user("u") == 1 and engine.standing("u", 10) == []


def test_marks_are_kept_per_user_apart_from_the_messages_and_standing_applies_them(engine: Engine) -> None:
    """A person's marks (issue 37): kept by message id per user, durable on return; ``standing`` leaves out a
    hidden message and gives a pinned one (as its pin's kind, ``pinned``) whatever the rule reads in it; a
    replacement of the message (a re-import) or its deletion leaves the mark; delete_user takes it."""
    put(engine, [
        stand("u", "s1", 0, "I'm allergic to shellfish.", ts=T0),
        stand("u", "s1", 2, "What's a good pasta recipe?", ts=T0 + 1),
        stand("u", "s1", 3, "Sure: carbonara, always with guanciale.", ts=T0 + 2, role="assistant"),
        stand("u", "s2", 0, "Always answer in metric units.", ts=T0 + DAY),
        stand("u", "s2", 2, "I prefer short answers.", ts=T0 + DAY + 1),
        stand("bob", "s1", 0, "I'm vegan.", ts=T0),
    ])  # fmt: skip
    assert engine.marks("u") == {} and [h.id for h in engine.standing("u", 10)] == ["s2:2", "s2:0", "s1:0"]
    engine.set_marks("u", {
        "s2:0": StandingMark(None, T0 + 5),  # hidden: a standing instruction
        "s1:2": StandingMark("fact", T0 + 6),  # pinned: the rule reads nothing in it
        "s1:3": StandingMark("instruction", T0 + 7),  # pinned: the assistant's words
        "s2:2": StandingMark("instruction", T0 + 8),  # pinned as another kind than the rule's
        "s1:0": StandingMark("fact", T0 + 9),  # pinned as what the rule reads
    })  # fmt: skip
    assert engine.marks("u")["s2:0"] == StandingMark(None, T0 + 5) and engine.marks("u")["s2:0"].hidden
    assert len(engine.marks("u")) == 5 and engine.marks("bob") == {} and engine.marks("nobody") == {}
    found = engine.standing("u", 10)
    assert [(h.id, h.kind, h.pinned) for h in found] == [
        ("s2:2", "instruction", True),
        ("s1:3", "instruction", True),
        ("s1:2", "fact", True),
        ("s1:0", "fact", True),
    ]  # newest first, the hidden one left out
    assert found[2].sentence == "What's a good pasta recipe?" and found[2].subject is None
    assert (found[3].domain, found[3].subject, found[3].sentence) == (
        "diet",
        "allergic",
        "I'm allergic to shellfish.",
    )
    assert found[0].sentence == "I prefer short answers." and found[1].role == "assistant"
    assert [h.id for h in engine.standing("u", 2)] == ["s2:2", "s1:3"]
    # another user's marks are theirs: bob's pin of an id u has, u's hide of an id bob has
    engine.set_marks("bob", {"s1:2": StandingMark("fact", T0), "s1:0": StandingMark(None, T0)})
    engine.set_marks("u", {"s1:0": None})  # unpinned: what the rule reads again
    assert [(h.id, h.pinned) for h in engine.standing("bob", 10)] == []
    assert [(h.id, h.pinned) for h in engine.standing("u", 10)][-1] == ("s1:0", False)
    assert set(engine.marks("bob")) == {"s1:2", "s1:0"} and "s1:0" not in engine.marks("u")
    # a replacement (a re-import) keeps the mark; so does a deletion, which takes the message from standing
    put(engine, [stand("u", "s2", 0, "Always answer in metric units.", ts=T0 + DAY)])
    assert "s2:0" not in [h.id for h in engine.standing("u", 10)]
    assert engine.delete_session("u", "s1") == 3
    assert [h.id for h in engine.standing("u", 10)] == ["s2:2"] and len(engine.marks("u")) == 4
    put(engine, [stand("u", "s1", 2, "What's a good pasta recipe?", ts=T0 + 1)])  # back: pinned again
    assert [(h.id, h.pinned) for h in engine.standing("u", 10)] == [("s2:2", True), ("s1:2", True)]
    engine.set_marks("u", {})  # nothing to do
    assert engine.delete_user("u") == 3 and engine.marks("u") == {} and len(engine.marks("bob")) == 2


# ---------------------------------------------------------------------------------------------- analysis


def test_cjk_text_is_searchable(engine: Engine) -> None:
    put(engine, [rec("u", "zh", 0, "我上个月在杭州买了一只橘猫"), rec("u", "ja", 0, "東京タワーに行きました"),
                 rec("u", "ko", 0, "한국어 공부를 시작했어요"), rec("u", "wide", 0, "ＫＡＹＡＫ ｶﾀｶﾅ")])  # fmt: skip
    assert ids(engine.query("u", "杭州", 10)) == ["zh:0"] and ids(engine.query("u", "我在杭州", 10)) == [
        "zh:0"
    ]
    assert ids(engine.query("u", "橘猫", 10)) == ["zh:0"] and ids(engine.query("u", "タワー", 10)) == ["ja:0"]
    assert ids(engine.query("u", "한국어", 10)) == ["ko:0"] and ids(
        engine.query("u", "kayak カタカナ", 10)
    ) == ["wide:0"]
    assert engine.analyze("一只橘猫") == ["一只", "只橘", "橘猫"] and engine.analyze("猫") == ["猫"]
    assert engine.analyze("东京:大阪") == ["东京", "大阪"] and engine.analyze("ｶﾞｷﾞ") == ["ガギ"]
    assert engine.query("u", "猫", 10) == []  # a lone character is not a bigram of the text


def test_stemming_stop_words_and_word_splitting(engine: Engine) -> None:
    put(engine, [rec("u", "s", 0, "She was running to the harbour"), rec("u", "s", 1, "John's kayaks")])
    assert ids(engine.query("u", "runs", 10)) == ["s:0"] and ids(engine.query("u", "kayak john", 10)) == [
        "s:1"
    ]
    assert engine.query("u", "the of and was to", 10) == []
    assert engine.analyze(" ".join(sorted(ANALYZER_STOP_WORDS))) == []
    assert engine.analyze("title:kayak John's JOHN’S don't U.S.A.") == [
        "titl",
        "kayak",
        "john",
        "john",
        "don't",
        "u.s.a",
    ]
    # Porter as Lucene has it: "-logi" and "-bli" departures, words of two letters kept
    assert engine.analyze("aerology accessibly possibly ds ponies caresses") == [
        "aerolog", "access", "possibl", "ds", "poni", "caress"
    ]  # fmt: skip


def test_at_most_64_distinct_query_terms(engine: Engine) -> None:
    words = [f"w{i:02d}x" for i in range(MAX_QUERY_TERMS + 6)]
    put(engine, [rec("u", "s", 0, "w00x alone"), rec("u", "s", 1, f"{words[-1]} alone")])
    assert ids(engine.query("u", " ".join(words), 10)) == ["s:0"]  # the 70th term is dropped
    assert len(engine.term_counts("u", " ".join(words))) == MAX_QUERY_TERMS
    repeated = " ".join([*words, words[-1]])  # most frequent terms come first
    assert sorted(ids(engine.query("u", repeated, 10))) == ["s:0", "s:1"]
    assert words[-1] in engine.term_counts("u", repeated) and words[
        MAX_QUERY_TERMS - 1
    ] not in engine.term_counts("u", repeated)


def test_a_repeated_query_term_weighs_more(engine: Engine) -> None:
    put(engine, [rec("u", "s", 0, "alpha filler words"), rec("u", "s", 1, "beta filler words")])
    a, b = engine.query("u", "alpha beta", 10)
    assert a.score == pytest.approx(b.score)
    first, second = engine.query("u", "alpha beta beta", 10)
    assert (first.id, second.id) == ("s:1", "s:0") and first.score == pytest.approx(
        2 * second.score, rel=1e-5
    )
    assert ids(engine.query("u", "alpha alpha alpha beta", 10)) == ["s:0", "s:1"]


def test_count_and_users(engine: Engine) -> None:
    put(engine, [rec("b", "s", 0, "x"), rec("b", "s", 1, "y"), rec("a", "s", 0, "z"), rec("é", "s", 0, "w"),
                 rec("B", "s", 0, "v")], [SessionDoc("docs-only", "s", "text", True)],
        Marker("marker-only", "r", "p"))  # fmt: skip
    assert engine.users() == ["B", "a", "b", "é"]  # code point order; only users with messages
    assert [engine.count(u) for u in ("a", "b", "B", "é", "docs-only")] == [1, 2, 1, 1, 0]
    assert engine.count() == 5


# ---------------------------------------------------------------------------------------------- lifecycle


def test_a_closed_engine_refuses_calls(engine_kind: EngineKind, tmp_path: Path) -> None:
    e = engine_kind.make(tmp_path, Settings())
    put(e, [rec("u", "s", 0, "hello")])
    e.close()
    e.close()  # idempotent
    for call in (lambda: e.query("u", "hello", 10), lambda: e.count(), lambda: e.commit(),
                 lambda: e.write(WriteBatch([rec("u", "s", 1, "more")]))):  # fmt: skip
        with pytest.raises(StoreClosed):
            call()


@pytest.mark.slow
def test_concurrent_writes_and_reads(engine: Engine) -> None:
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for batch in range(10):
                put(engine, [rec("u", f"s{w}", batch * 5 + t, f"writer {w} zebra {t}") for t in range(5)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(40):
                for h in engine.query("u", "zebra", 20):
                    assert h.content.startswith("writer ")
                engine.browse("u", 5)
                engine.windows("u", [("s0", 0, 60)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert engine.count("u") == 200
    assert all(
        [h.turn for h in w] == list(range(50))
        for w in engine.windows("u", [(f"s{i}", 0, 99) for i in range(4)])
    )


# ---------------------------------------------------------------------------------------------- durability


def _reopen(k: EngineKind, directory: Path, read_only: bool = False) -> Engine:
    assert k.location is not None
    return open_engine(k.location(directory), settings=Settings(), read_only=read_only)


def test_committed_writes_survive_close_and_reopen(durable_kind: EngineKind, tmp_path: Path) -> None:
    e = durable_kind.make(tmp_path, Settings())
    put(e, [rec("u", "s", 0, "the red kayak"), rec("u", "s", 1, "kayaks are fun")],
        [SessionDoc("u", "s", "the red kayak\nkayaks are fun", True)], Marker("u", "r", "payload"))  # fmt: skip
    e.close()
    e = _reopen(durable_kind, tmp_path)
    try:
        assert sorted(ids(e.query("u", "kayak", 10))) == ["s:0", "s:1"]
        assert [s for s, _ in e.query_sessions("u", "kayak", 10)] == ["s"]
        assert e.request_marker("u", "r") == "payload" and _states(e, "u", ["s"])["s"].text is not None
    finally:
        e.close()


def test_tombstones_survive_close_and_reopen(durable_kind: EngineKind, tmp_path: Path) -> None:
    e = durable_kind.make(tmp_path, Settings())
    put(e, [rec("u", "s", 0, "the red kayak")])
    e.add_tombstones("u", ["s", "gone"], T0)
    e.delete_session("u", "s")
    e.close()
    e = _reopen(durable_kind, tmp_path)
    try:
        assert e.tombstones() == {"u": {"s": T0, "gone": T0}} and e.count() == 0
        if durable_kind.read_only:  # a reader beside the writer sees them, and may not change them
            reader = _reopen(durable_kind, tmp_path, read_only=True)
            try:
                assert reader.tombstones("u") == {"u": {"s": T0, "gone": T0}}
                with pytest.raises(ReadOnlyError):
                    reader.remove_tombstones("u")
            finally:
                reader.close()
        assert e.remove_tombstones("u", ["gone"]) == 1
    finally:
        e.close()
    e = _reopen(durable_kind, tmp_path)
    try:
        assert e.tombstones() == {"u": {"s": T0}}
    finally:
        e.close()


def test_marks_survive_close_and_reopen(durable_kind: EngineKind, tmp_path: Path) -> None:
    e = durable_kind.make(tmp_path, Settings())
    put(e, [stand("u", "s", 0, "I'm allergic to shellfish."), stand("u", "s", 2, "Call me Ishmael.")])
    e.set_marks("u", {"s:0": StandingMark(None, T0), "s:2": StandingMark("preference", T0 + 1)})
    e.close()
    e = _reopen(durable_kind, tmp_path)
    try:
        assert e.marks("u") == {"s:0": StandingMark(None, T0), "s:2": StandingMark("preference", T0 + 1)}
        assert [(h.id, h.kind) for h in e.standing("u", 10)] == [("s:2", "preference")]
        if durable_kind.read_only:  # a reader beside the writer sees each change, and may not make one
            reader = _reopen(durable_kind, tmp_path, read_only=True)
            try:
                assert len(reader.marks("u")) == 2
                e.set_marks("u", {"s:0": None})
                reader.refresh()
                assert list(reader.marks("u")) == ["s:2"]
                assert [h.id for h in reader.standing("u", 10)] == ["s:2", "s:0"]
                with pytest.raises(ReadOnlyError):
                    reader.set_marks("u", {"s:2": None})
            finally:
                reader.close()
    finally:
        e.close()


def test_close_commits_nothing(
    durable_kind: EngineKind, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    e = durable_kind.make(tmp_path, Settings())
    put(e, [rec("u", "s", 0, "committed")])
    put(e, [rec("u", "s", 1, "never committed")], marker=Marker("u", "r", "p"), commit=False)
    e.close()
    e = _reopen(durable_kind, tmp_path)
    try:
        assert ids(e.browse("u", 10)) == ["s:0"] and e.request_marker("u", "r") is None
    finally:
        e.close()


@pytest.mark.slow
def test_a_crash_keeps_exactly_what_was_committed(
    durable_kind: EngineKind, tmp_path: Path, child_env: dict[str, str]
) -> None:
    """A process that dies without closing: every acknowledged add (Memory.add returned) and every commit
    is there after a restart, with its marker; what was written and not committed is not."""
    assert durable_kind.location is not None
    where = durable_kind.location(tmp_path)
    code = textwrap.dedent(f"""
        import os, refind
        from refind.config import Settings
        from refind.store import open_engine
        from refind.store.base import Marker, Record, WriteBatch
        engine = open_engine({where!r}, settings=Settings())
        mem = refind.Memory(store=engine)
        mem.add("u", "s", [{{"role": "user", "content": "acknowledged kayak"}}], request_id="req-1")
        engine.write(WriteBatch([Record("u", "s", "s:1", 1, 0, "user", "committed kayak")]))
        engine.commit()
        engine.write(WriteBatch([Record("u", "s", "s:2", 2, 0, "user", "lost kayak")], marker=Marker("u", "r", "p")))
        os._exit(0)
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    e = _reopen(durable_kind, tmp_path)
    try:
        assert [h.content for h in e.windows("u", [("s", 0, 9)])[0]] == [
            "acknowledged kayak",
            "committed kayak",
        ]
        assert e.request_marker("u", "req-1") is not None and e.request_marker("u", "r") is None
        assert [s for s, _ in e.query_sessions("u", "kayak", 10)] == ["s"]
    finally:
        e.close()


@pytest.fixture(params=[name for name, k in ENGINES.items() if k.read_only])
def shared_kind(request: pytest.FixtureRequest) -> EngineKind:
    return kind(request.param)


def test_a_read_only_reader_sees_each_commit_of_the_writer(shared_kind: EngineKind, tmp_path: Path) -> None:
    engine_kind = shared_kind
    writer = engine_kind.make(tmp_path, Settings())
    put(writer, [rec("u", "s", 0, "first kayak")])
    reader = _reopen(engine_kind, tmp_path, read_only=True)
    try:
        assert reader.read_only and ids(reader.query("u", "kayak", 10)) == ["s:0"]
        put(writer, [rec("u", "s", 1, "second kayak")], marker=Marker("u", "r", "p"), commit=False)
        assert len(reader.query("u", "kayak", 10)) == 1 and reader.request_marker("u", "r") is None
        writer.commit()
        reader.refresh()  # the protocol's way to see another process's commits (Memory calls it per read)
        assert len(reader.query("u", "kayak", 10)) == 2 and reader.request_marker("u", "r") == "p"
        with pytest.raises(ReadOnlyError):
            reader.write(WriteBatch([rec("u", "s", 2, "no")]))
    finally:
        reader.close()
        writer.close()


# ---------------------------------------------------------------------------------------------- across engines


@pytest.fixture(scope="module")
def both(shared_data: Path) -> Iterator[tuple[refind.Memory, refind.Memory]]:
    """Two real LoCoMo conversations in the Lucene engine and in the reference engine."""
    from refind.loaders import iter_locomo
    from refind.store.lucene import LuceneStore
    from refind.store.reference import ReferenceStore

    mems = (refind.Memory(store=LuceneStore(None)), refind.Memory(store=ReferenceStore()))
    for m in mems:
        m.import_sessions(
            s for s in iter_locomo(shared_data / "locomo10_dev.json") if s.user_id in {"conv-26", "conv-30"}
        )
    yield mems
    for m in mems:
        m.close()


def test_the_reference_analyzer_gives_lucenes_terms_on_real_text(
    both: tuple[refind.Memory, refind.Memory], shared_data: Path
) -> None:
    lucene, reference = both
    data = json.loads((shared_data / "locomo10_dev.json").read_text())
    texts = [
        t["text"]
        for conv in data
        for k, v in conv["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for t in v
    ]
    texts += [qa["question"] for conv in data for qa in conv["qa"]]
    longmemeval = json.loads(gzip.decompress((shared_data / "longmemeval_s_dev.json.gz").read_bytes()))
    texts += [m["content"] for s in longmemeval[0]["haystack_sessions"] for m in s]  # long assistant answers
    coding = json.loads((shared_data / "coding-agent-life-v1" / "sessions.json").read_text())
    texts += [s["content"] for s in coding]
    texts += [
        "I love 🍕 and ❤️ 👍🏽 👨‍👩‍👧 #1 © 🇺🇸", "ภาษาไทย ok", "ｶﾞｷﾞ ｶﾀｶﾅ ＡＢＣ１２３ ｈｅｌｌｏ　ｗｏｒｌｄ",
        "東京:大阪 東京です カタカナ 한국어 한국어abc ひらがな 時々 〆切 〇〇 ラーメン", "ΟΔΟΣ İstanbul straße ǅ",
        "a_b 1,000 1.5k 10:30am v2.0 C++ C# .NET node.js co-op e-mail john@example.com http://x.com/a?b=c",
        "x" + "a" * 600, "x²  ½ ① ⅷ ñandú café naïve résumé", "it's it’s 's s", "𝐚s 𝐛𝐜ing 𠀀𠀁", "डिजिटल हिंदी مرحبا שלום Привет",
    ]  # fmt: skip
    assert len(texts) > 4000
    mismatched = [(t, lucene.store.analyze(t), reference.store.analyze(t)) for t in texts
                  if lucene.store.analyze(t) != reference.store.analyze(t)]  # fmt: skip
    assert mismatched == []


@pytest.mark.slow
def test_the_reference_engine_ranks_and_scores_as_lucene_on_real_data(
    both: tuple[refind.Memory, refind.Memory], shared_data: Path
) -> None:
    lucene, reference = both
    data = json.loads((shared_data / "locomo10_dev.json").read_text())
    questions = [
        (conv["sample_id"], qa["question"])
        for conv in data
        if conv["sample_id"] in {"conv-26", "conv-30"}
        for qa in conv["qa"]
    ]
    assert len(questions) > 300
    for user, q in questions:
        a, b = lucene.store.query(user, q, 50), reference.store.query(user, q, 50)
        assert ids(a) == ids(b), q
        assert [h.score for h in b] == pytest.approx([h.score for h in a], rel=1e-6), q
        sa, sb = lucene.store.query_sessions(user, q, 20), reference.store.query_sessions(user, q, 20)
        assert [s for s, _ in sa] == [s for s, _ in sb], q
        assert [x for _, x in sb] == pytest.approx([x for _, x in sa], rel=1e-6), q
        assert lucene.store.term_counts(user, q) == reference.store.term_counts(user, q)
    for user in ("conv-26", "conv-30"):
        assert lucene.count(user) == reference.count(user)
        assert lucene.store.browse(user, 30) == reference.store.browse(user, 30)
        for q in ("When did Caroline go to the LGBTQ support group?", "What does Jon do for a living?"):
            one, two = lucene.search(q, user, now="2023-11-01"), reference.search(q, user, now="2023-11-01")
            assert one.evidence == two.evidence and one.to_text() == two.to_text()


def test_write_side_lookups_are_batched_across_users(engine: Engine) -> None:
    for user in ("a", "b"):
        engine.write(
            WriteBatch(
                [rec(user, "s1", 0, f"{user} first", id=f"{user}:m0"), rec(user, "s1", 1, f"{user} second", id=f"{user}:m1"),
                 rec(user, "s2", 0, f"{user} other", id="shared-id")],
                [SessionDoc(user, "s1", f"{user} first\n{user} second", True), SessionDoc(user, "s2", f"{user} other", True)],
            )
        )  # fmt: skip
    engine.commit()
    states = engine.session_states({"a": ["s1", "nope"], "b": ["s2"], "c": ["s1"]})
    assert set(states) == {("a", "s1"), ("b", "s2")}
    assert states[("a", "s1")].tail is not None and states[("a", "s1")].tail.id == "a:m1"
    assert states[("b", "s2")].text == "b other"
    found = engine.existing({"a": ["a:m0", "shared-id", "b:m0"], "b": ["shared-id"], "c": ["a:m0"]})
    assert set(found) == {("a", "a:m0"), ("a", "shared-id"), ("b", "shared-id")}
    assert found[("a", "shared-id")].session_id == "s2" and found[("a", "a:m0")].turn == 0
    turns = engine.session_turns({"a": ["s1"], "b": ["s1", "s2", "nope"]})
    assert set(turns) == {("a", "s1"), ("b", "s1"), ("b", "s2")}
    assert [h.content for h in turns[("b", "s1")]] == ["b first", "b second"]
    assert (
        engine.session_states({}) == {}
        and engine.existing({"a": []}) == {}
        and engine.session_turns({}) == {}
    )
