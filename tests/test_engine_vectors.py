"""The engine contract for vectors (issue 36; refind/store/base.py): run over every engine in tests/engines.py.

The queue (``pending_vectors``), ``write_vectors`` with its token check, ``knn`` with its filters inside the
search and its isolation by user, ``vector_counts``, the recorded model and its mismatch, and how deletions,
retention and replacements keep vectors in step with their messages. Vectors here are explicit (a few
dimensions, unit length), so every expected order is computed, not guessed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from refind.config import Settings
from refind.errors import IndexFormatError, InvalidInput
from refind.store import open_engine
from refind.store.base import (
    Engine,
    Filters,
    PendingVector,
    VectorCounts,
    VectorRecord,
    content_token,
)
from tests.engines import EngineKind, kind
from tests.test_engine_contract import DAY, T0, put, rec

MODEL = ("test-model", 4)


def unit(*xs: float) -> list[float]:
    n = math.sqrt(sum(x * x for x in xs))
    return [x / n for x in xs]


def cos(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def vectors_for(engine: Engine, vectors: dict[str, list[float]], user: str = "u") -> int:
    """Write the vectors of the queued messages of ``user`` named in ``vectors`` (by id), then commit."""
    queued = [p for p in engine.pending_vectors(10_000) if p.user_id == user and p.id in vectors]
    n = engine.write_vectors([VectorRecord(p.user_id, p.id, p.token, vectors[p.id]) for p in queued])
    engine.commit()
    return n


def knn_ids(
    engine: Engine, user: str, q: Sequence[float], k: int = 10, f: Filters | None = None
) -> list[str]:
    return [h.id for h in engine.knn(user, q, k, f)]


# ---------------------------------------------------------------------------------------------- the queue


def test_written_messages_are_queued_oldest_first_with_their_content(engine: Engine) -> None:
    assert engine.pending_vectors(10) == [] and engine.vector_counts() == VectorCounts(0, 0)
    assert engine.knn("u", unit(1, 0, 0, 0), 10) == []  # an index without vectors
    put(engine, [rec("u", "s1", 0, "first words"), rec("u", "s1", 1, "second words")])
    put(engine, [rec("u", "s2", 0, "third words"), rec("w", "s9", 0, "someone else")], commit=False)
    assert [p.id for p in engine.pending_vectors(10)] == ["s1:0", "s1:1"]  # as of the last commit
    engine.commit()
    pending = engine.pending_vectors(10)
    assert [(p.user_id, p.id) for p in pending] == [
        ("u", "s1:0"),
        ("u", "s1:1"),
        ("u", "s2:0"),
        ("w", "s9:0"),
    ]
    assert pending[0] == PendingVector("u", "s1:0", content_token("first words"), "first words")
    assert [p.id for p in engine.pending_vectors(2)] == ["s1:0", "s1:1"]
    assert engine.vector_counts() == VectorCounts(0, 4)
    assert engine.vector_counts("u") == VectorCounts(0, 3) and engine.vector_counts("w") == VectorCounts(0, 1)
    assert engine.vector_counts("nobody") == VectorCounts(0, 0)


def test_before_a_model_every_message_awaits_its_vector_and_the_model_queues_them_in_write_order(
    engine: Engine,
) -> None:
    """Without a model recorded the queue may be implicit (the Lucene engine writes none: issue 37), but it
    reads the same: every stored message awaits its vector, a replaced one as its newest write; recording a
    model keeps that order, and forgetting it (reset) then recording another queues what came between."""
    put(engine, [rec("u", "s", t, f"words {t}") for t in range(3)] + [rec("w", "x", 0, "other")])
    put(engine, [rec("u", "s", 0, "words 0, changed")])  # replaced: its newest write is the latest
    assert engine.delete_session("w", "x") == 1
    order = ["s:1", "s:2", "s:0"]
    assert [p.id for p in engine.pending_vectors(10)] == order
    assert engine.pending_vectors(10)[-1] == PendingVector(
        "u", "s:0", content_token("words 0, changed"), "words 0, changed"
    )
    assert engine.vector_counts() == VectorCounts(0, 3) and engine.vector_counts("w") == VectorCounts(0, 0)
    engine.use_vector_model(*MODEL)
    assert [p.id for p in engine.pending_vectors(10)] == order
    put(engine, [rec("u", "t", 0, "after the model")])
    assert [p.id for p in engine.pending_vectors(10)] == [*order, "t:0"]
    vectors_for(engine, {i: unit(1, 0, 0, 0) for i in [*order, "t:0"]})
    assert engine.vector_counts() == VectorCounts(4, 0)
    assert engine.reset_vectors() == 4
    put(engine, [rec("u", "t", 1, "after the reset")])
    assert engine.vector_counts() == VectorCounts(0, 5) and len(engine.pending_vectors(10)) == 5
    engine.use_vector_model("another-model", 8)
    assert sorted(p.id for p in engine.pending_vectors(10)) == sorted([*order, "t:0", "t:1"])
    assert vectors_for(engine, {"t:1": unit(0, 0, 0, 0, 0, 0, 0, 1)}) == 1
    assert [h.id for h in engine.knn("u", unit(0, 0, 0, 0, 0, 0, 0, 1), 5)] == ["t:1"]


def test_vectors_are_written_visible_at_commit_and_leave_the_queue(engine: Engine) -> None:
    put(engine, [rec("u", "s", t, f"message {t}") for t in range(3)])
    engine.use_vector_model(*MODEL)
    pending = engine.pending_vectors(10)
    vecs = {"s:0": unit(1, 0, 0, 0), "s:1": unit(1, 1, 0, 0), "s:2": unit(0, 0, 1, 0)}
    written = engine.write_vectors([VectorRecord(p.user_id, p.id, p.token, vecs[p.id]) for p in pending])
    assert written == 3
    assert engine.knn("u", unit(1, 0, 0, 0), 10) == []  # not before the commit
    assert engine.vector_counts("u") == VectorCounts(0, 3)
    engine.commit()
    assert engine.vector_counts("u") == VectorCounts(3, 0) and engine.pending_vectors(10) == []
    q = unit(1, 0.2, 0, 0)
    hits = engine.knn("u", q, 10)
    assert [h.id for h in hits] == ["s:0", "s:1", "s:2"]
    for h in hits:
        assert h.score == pytest.approx(cos(q, vecs[h.id]), abs=1e-5)
        assert h.content == "" and h.session_id == "s" and h.role in {"user", "assistant"}
    assert (hits[1].turn, hits[1].timestamp) == (1, T0 + 60_000)
    assert knn_ids(engine, "u", q, 2) == ["s:0", "s:1"] and engine.knn("u", q, 0) == []


def test_knn_filters_apply_inside_the_search_before_the_top_k(engine: Engine) -> None:
    records = [
        rec("u", "near", t, f"near {t}", ts=T0 + t * DAY, role="user" if t % 2 == 0 else "assistant")
        for t in range(8)
    ] + [rec("u", "far", t, f"far {t}", ts=T0 + 30 * DAY + t) for t in range(4)]
    put(engine, records)
    engine.use_vector_model(*MODEL)
    vecs = {f"near:{t}": unit(1, 0.01 * t, 0, 0) for t in range(8)}
    vecs |= {f"far:{t}": unit(0, 1, 0.1 * t, 0) for t in range(4)}
    vectors_for(engine, vecs)
    q = unit(1, 0, 0, 0)
    # the 8 near ones outrank the far ones; each filter keeps some of them out before the top k is taken
    assert knn_ids(engine, "u", q, 3) == ["near:0", "near:1", "near:2"]
    assert knn_ids(engine, "u", q, 3, Filters(time_from=T0 + 30 * DAY)) == ["far:0", "far:1", "far:2"]
    assert knn_ids(engine, "u", q, 3, Filters(time_from=T0 + 2 * DAY, time_to=T0 + 3 * DAY)) == [
        "near:2", "near:3"
    ]  # fmt: skip
    assert knn_ids(engine, "u", q, 2, Filters(session_ids=["far"])) == ["far:0", "far:1"]
    assert knn_ids(engine, "u", q, 2, Filters(session_ids=[])) == []
    assert knn_ids(engine, "u", q, 3, Filters(roles=["assistant"])) == ["near:1", "near:3", "near:5"]
    assert knn_ids(engine, "u", q, 2, Filters(roles=["USER"])) == ["near:0", "near:2"]
    excluded = [f"near:{t}" for t in range(7)]
    assert knn_ids(engine, "u", q, 2, Filters(exclude_ids=excluded)) == ["near:7", "far:0"]
    assert knn_ids(engine, "u", q, 2, Filters(exclude_sessions=["near"])) == ["far:0", "far:1"]
    with pytest.raises(InvalidInput):
        engine.knn("u", q, 2, Filters(any_terms=["near"]))


def test_knn_never_finds_another_users_vectors(engine: Engine) -> None:
    """The same session and message ids for two people; the other person's vectors are the query itself.
    (Checked: with the user filter dropped from each engine's KNN, this test fails.)"""
    put(engine, [rec("alice", "s", t, f"alice {t}", ts=T0 + t) for t in range(3)])
    put(engine, [rec("bob", "s", t, f"bob {t}", ts=T0 + 1000 + t) for t in range(3)])
    engine.use_vector_model(*MODEL)
    q = unit(0, 0, 0, 1)
    vectors_for(engine, {f"s:{t}": unit(1, t, 0, 0) for t in range(3)}, "alice")
    vectors_for(engine, {f"s:{t}": q for t in range(3)}, "bob")
    hits = engine.knn("alice", q, 10)
    assert sorted(h.id for h in hits) == ["s:0", "s:1", "s:2"]
    assert all(h.timestamp < T0 + 1000 and h.score < 0.01 for h in hits)
    assert engine.knn("carol", q, 10) == []
    assert all(h.score == pytest.approx(1.0, abs=1e-5) for h in engine.knn("bob", q, 10))
    assert engine.vector_counts("alice") == VectorCounts(3, 0) and engine.vector_counts() == VectorCounts(
        6, 0
    )


def test_a_vector_of_replaced_or_deleted_content_is_skipped(engine: Engine) -> None:
    put(engine, [rec("u", "s", 0, "old words"), rec("u", "s", 1, "kept words"), rec("u", "t", 0, "gone")])
    engine.use_vector_model(*MODEL)
    stale = {p.id: p for p in engine.pending_vectors(10)}
    put(engine, [rec("u", "s", 0, "new words")])  # replaced since it was read from the queue
    assert engine.delete_session("u", "t") == 1
    put(engine, [rec("u", "s", 1, "kept words, then changed")], commit=False)  # replaced, not yet committed
    v = unit(1, 0, 0, 0)
    assert engine.write_vectors([VectorRecord("u", i, p.token, v) for i, p in stale.items()]) == 0
    engine.commit()
    assert engine.knn("u", v, 10) == []
    pending = engine.pending_vectors(10)
    assert {p.id: p.content for p in pending} == {"s:0": "new words", "s:1": "kept words, then changed"}
    assert all(p.token == content_token(p.content) for p in pending)
    assert engine.write_vectors([VectorRecord("u", p.id, p.token, v) for p in pending]) == 2
    engine.commit()
    assert sorted(knn_ids(engine, "u", v)) == ["s:0", "s:1"] and engine.pending_vectors(10) == []


def test_the_same_content_keeps_its_vector_and_new_content_needs_a_new_one(engine: Engine) -> None:
    put(engine, [rec("u", "s", 0, "same words", ts=T0), rec("u", "s", 1, "other words", ts=T0)])
    engine.use_vector_model(*MODEL)
    v0, v1 = unit(1, 0, 0, 0), unit(0.9, 0.1, 0, 0)
    vectors_for(engine, {"s:0": v0, "s:1": v1})
    # a re-import of the same export: the same content (with a new time and role) keeps its vector, and
    # the vector follows the message's new fields in filters
    put(engine, [rec("u", "s", 0, "same words", ts=T0 + 5 * DAY, role="assistant")])
    assert engine.vector_counts("u") == VectorCounts(2, 0) and engine.pending_vectors(10) == []
    hits = engine.knn("u", v0, 10, Filters(time_from=T0 + DAY))
    assert [(h.id, h.timestamp, h.role) for h in hits] == [("s:0", T0 + 5 * DAY, "assistant")]
    # new content: its old vector is gone at once (never found for words it no longer holds)
    put(engine, [rec("u", "s", 1, "different words now")])
    assert knn_ids(engine, "u", v1) == ["s:0"]
    assert [(p.id, p.content) for p in engine.pending_vectors(10)] == [("s:1", "different words now")]
    assert engine.vector_counts("u") == VectorCounts(1, 1)


def test_deletions_and_retention_take_vectors_and_queue_entries_with_their_messages(engine: Engine) -> None:
    put(
        engine,
        [rec("u", "a", t, f"a {t}") for t in range(2)] + [rec("u", "b", t, f"b {t}") for t in range(2)],
    )
    put(engine, [rec("w", "c", t, f"c {t}") for t in range(2)])
    engine.use_vector_model(*MODEL)
    v = unit(1, 1, 1, 1)
    vectors_for(engine, {"a:0": v, "b:0": v})
    vectors_for(engine, {"c:0": v}, "w")
    assert engine.vector_counts() == VectorCounts(3, 3)
    assert engine.delete_session("u", "a") == 2
    assert engine.vector_counts("u") == VectorCounts(1, 1) and knn_ids(engine, "u", v) == ["b:0"]
    assert engine.delete_user("w") == 2
    assert engine.vector_counts("w") == VectorCounts(0, 0) and engine.knn("w", v, 10) == []
    assert [p.id for p in engine.pending_vectors(10)] == ["b:1"]
    expired = engine.expire(2**62)
    engine.commit()
    assert expired.removed == 2
    assert engine.vector_counts() == VectorCounts(0, 0) and engine.knn("u", v, 10) == []
    assert engine.pending_vectors(10) == []


def test_the_model_is_recorded_once_and_another_is_refused(engine: Engine) -> None:
    assert engine.vector_model() is None
    put(engine, [rec("u", "s", 0, "words")])
    with pytest.raises(Exception, match="use_vector_model"):
        engine.write_vectors([VectorRecord("u", "s:0", content_token("words"), unit(1, 0, 0, 0))])
    engine.use_vector_model(*MODEL)
    engine.use_vector_model(*MODEL)  # the same: nothing to do
    assert engine.vector_model() == MODEL
    for other in (("another-model", 4), ("test-model", 8)):
        with pytest.raises(IndexFormatError) as err:
            engine.use_vector_model(*other)
        text = str(err.value)
        assert "test-model" in text and other[0] in text and "refind vectors reset" in text
    with pytest.raises(InvalidInput):
        engine.write_vectors([VectorRecord("u", "s:0", content_token("words"), [1.0, 0.0])])
    vectors_for(engine, {"s:0": unit(1, 0, 0, 0)})
    assert engine.vector_counts() == VectorCounts(1, 0)
    assert engine.reset_vectors() == 1
    assert engine.vector_model() is None and engine.vector_counts() == VectorCounts(0, 1)
    assert engine.knn("u", unit(1, 0, 0, 0), 10) == []
    engine.use_vector_model("another-model", 8)
    p = engine.pending_vectors(10)
    assert engine.write_vectors([VectorRecord("u", "s:0", p[0].token, unit(1, 0, 0, 0, 0, 0, 0, 1))]) == 1
    engine.commit()
    assert [h.id for h in engine.knn("u", unit(0, 0, 0, 0, 0, 0, 0, 1), 5)] == ["s:0"]


def test_the_queue_vectors_and_model_outlive_a_reopen(durable_kind: EngineKind, tmp_path: Path) -> None:
    assert durable_kind.location is not None
    e = durable_kind.make(tmp_path, Settings())
    put(e, [rec("u", "s", t, f"words {t}") for t in range(3)])
    e.use_vector_model(*MODEL)
    vectors_for(e, {"s:0": unit(1, 0, 0, 0)})
    e.close()
    again = open_engine(durable_kind.location(tmp_path), settings=Settings())
    try:
        assert again.vector_model() == MODEL
        with pytest.raises(IndexFormatError, match="refind vectors reset"):
            again.use_vector_model("another-model", 4)
        assert [p.id for p in again.pending_vectors(10)] == ["s:1", "s:2"]
        assert knn_ids(again, "u", unit(1, 0, 0, 0)) == ["s:0"]
        put(again, [rec("u", "s", 3, "words 3")])  # a write after the reopen is queued as before it
        assert [p.id for p in again.pending_vectors(10)] == ["s:1", "s:2", "s:3"]
        if durable_kind.read_only:
            reader = open_engine(durable_kind.location(tmp_path), settings=Settings(), read_only=True)
            try:
                assert reader.vector_counts("u") == VectorCounts(1, 3)
                vectors_for(again, {"s:1": unit(0, 1, 0, 0)})
                reader.refresh()
                assert knn_ids(reader, "u", unit(0, 1, 0, 0), 1) == ["s:1"]
            finally:
                reader.close()
    finally:
        again.close()


@pytest.fixture(params=["exact", "graph"])
def lucene_knn_path(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """The Lucene engine with its KNN compared one by one (a person's few vectors) or searched in the HNSW
    graph (many): both must keep the contract."""
    e = kind("lucene").make(tmp_path, Settings())
    from refind.store._jvm import jclass

    engine_class = jclass("io.refind.lucene.Engine")
    old = int(engine_class.knnExactMax(20_000 if request.param == "exact" else 0))
    yield e
    engine_class.knnExactMax(old)
    e.close()


def test_lucene_knn_filters_by_graph_and_by_comparison(lucene_knn_path: Engine) -> None:
    test_knn_filters_apply_inside_the_search_before_the_top_k(lucene_knn_path)


def test_lucene_knn_isolation_by_graph_and_by_comparison(lucene_knn_path: Engine) -> None:
    test_knn_never_finds_another_users_vectors(lucene_knn_path)


def test_lucene_writes_no_queue_before_a_model_and_queues_everything_when_one_is_recorded(
    tmp_path: Path,
) -> None:
    """Issue 37: an index without a model writes nothing to its vector index (a second index's work and a
    second fsync per add, for vectors no one makes); recording a model queues every message first, those
    written and not yet committed included, and durably before the model is recorded."""
    import json

    e = kind("lucene-disk").make(tmp_path, Settings())
    try:
        written_queue = lambda: json.loads(str(e._engine.vectorCounts(None, False)))  # noqa: E731
        put(e, [rec("u", "s", t, f"words {t}") for t in range(3)])
        put(e, [rec("u", "s", 3, "not yet committed")], commit=False)
        assert written_queue() == [0, 0] and e.vector_counts() == VectorCounts(0, 3)
        e.use_vector_model(*MODEL)
        assert written_queue() == [0, 4]
        assert [p.id for p in e.pending_vectors(10)] == ["s:0", "s:1", "s:2", "s:3"]
        e.reset_vectors()
        put(e, [rec("u", "s", 4, "after the reset")])
        assert e.vector_counts() == VectorCounts(0, 5) and written_queue() == [0, 4]
    finally:
        e.close()
    again = open_engine(tmp_path / "index", settings=Settings())
    try:  # reopened without a model: still no queue written; with one recorded, every message is queued
        put(again, [rec("u", "s", 5, "after the reopen")])
        assert json.loads(str(again._engine.vectorCounts(None, False)))[1] == 4  # type: ignore[attr-defined]
        again.use_vector_model(*MODEL)
        assert [p.id for p in again.pending_vectors(10)] == [f"s:{t}" for t in range(6)]
    finally:
        again.close()


@pytest.mark.slow
def test_an_opensearch_prefix_from_before_vectors_queues_its_messages(tmp_path: Path) -> None:
    """The mapping change is an index of its own: a prefix written before it gets it on its first writable
    open, with every message queued; a reader before that counts them as awaiting and finds nothing."""
    found = kind("opensearch")
    assert found.location is not None
    e = found.make(tmp_path, Settings())
    put(e, [rec("u", "s", t, f"words {t}") for t in range(5)] + [rec("w", "s", 0, "other")])
    client, index = e._client, e.index["vectors"]  # type: ignore[attr-defined]
    e.close()
    client.indices.delete(index=index)  # what a prefix written before vectors lacks
    reader = open_engine(found.location(tmp_path), settings=Settings(), read_only=True)
    try:
        assert reader.vector_counts("u") == VectorCounts(0, 5) and reader.vector_model() is None
        assert reader.knn("u", unit(1, 0, 0, 0), 5) == []
    finally:
        reader.close()
    again = open_engine(found.location(tmp_path), settings=Settings())
    try:
        assert again.vector_counts() == VectorCounts(0, 6)
        assert {p.id for p in again.pending_vectors(10) if p.user_id == "u"} == {f"s:{t}" for t in range(5)}
        again.use_vector_model(*MODEL)
        assert vectors_for(again, {"s:3": unit(0, 0, 1, 0)}) == 1
        assert knn_ids(again, "u", unit(0, 0, 1, 0), 1) == ["s:3"]
    finally:
        again.close()
