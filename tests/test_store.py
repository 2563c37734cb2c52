"""LuceneStore through Memory: durability, isolation, filters, replace-by-id, locking, concurrency, CJK."""

from __future__ import annotations

import subprocess
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refind
from tests.conftest import PYTHON
from tests.engines import write_without_standing

DAY = 86_400_000
T0 = 1_683_540_000_000  # 2023-05-08T10:00:00Z


def msgs(*texts: str, ts: int | None = None, step: int = 60_000) -> list[dict]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": t,
            **({"timestamp": ts + i * step} if ts else {}),
        }
        for i, t in enumerate(texts)
    ]


def test_add_is_durable_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    with refind.Memory(path) as m:
        res = m.add("alice", "s1", msgs("I bought a red kayak at the harbour", "Nice, kayaks are fun", ts=T0))
        assert (res.added, res.replaced) == (2, 0)
    with refind.Memory(path) as m:
        hits = sorted(m.query("alice", "kayak"), key=lambda h: h.turn)
        assert [h.id for h in hits] == ["s1:0", "s1:1"]
        assert hits[0].content == "I bought a red kayak at the harbour"
        assert hits[0].timestamp == T0 and hits[0].role == "user"
        assert m.count("alice") == 2 and m.count() == 2
    meta = (path / "refind.json").read_text()
    assert '"format": 4' in meta and "porterStem" in meta


def test_add_is_visible_to_the_next_search_without_reopen(mem: refind.Memory) -> None:
    for i in range(5):
        mem.add("u", "s", msgs(f"note number {i} about zebras"))
        assert len(mem.query("u", "zebras", k=50)) == i + 1


def test_users_never_see_each_other(mem: refind.Memory) -> None:
    text = "my passport number is in the blue folder"
    mem.add("alice", "s1", msgs(text))
    mem.add("bob", "s1", msgs(text))
    mem.add("alice:x", "s1", msgs(text))  # prefix-like ids are distinct users
    for user in ("alice", "bob", "alice:x"):
        hits = mem.query(user, "passport blue folder", k=100)
        assert len(hits) == 1
        assert mem.window(user, "s1", 0, 10)[0].content == text
    assert mem.query("carol", "passport") == []
    # the same message id under two users stays two messages
    mem.add("alice", "s2", [{"role": "user", "content": "alpha", "id": "m1"}])
    mem.add("bob", "s2", [{"role": "user", "content": "beta", "id": "m1"}])
    assert [h.content for h in mem.query("alice", "alpha beta")] == ["alpha"]
    assert [h.content for h in mem.query("bob", "alpha beta")] == ["beta"]


def test_time_filters_are_inclusive_at_both_ends(mem: refind.Memory) -> None:
    mem.add(
        "u",
        "s",
        [{"role": "user", "content": f"lunch with sam day {d}", "timestamp": T0 + d * DAY} for d in range(5)],
    )
    got = mem.query("u", "lunch sam", k=10, date_from=T0 + DAY, date_to=T0 + 3 * DAY)
    assert sorted(h.timestamp for h in got) == [T0 + DAY, T0 + 2 * DAY, T0 + 3 * DAY]
    assert len(mem.query("u", "lunch", date_from=T0 + 4 * DAY + 1)) == 0
    assert len(mem.query("u", "lunch", date_to=T0 - 1)) == 0
    assert len(mem.query("u", "lunch", date_to=T0)) == 1
    iso = mem.query("u", "lunch", date_from="2023-05-10T10:00:00Z", date_to="2023-05-10T10:00:00Z")
    assert [h.timestamp for h in iso] == [T0 + 2 * DAY]


def test_filters_apply_before_top_k(mem: refind.Memory) -> None:
    # 30 strong matches in one session, 1 weak match in another: the filter must find the weak one at k=1
    mem.add("u", "loud", msgs(*["tomato tomato tomato soup"] * 30))
    mem.add("u", "quiet", msgs("a long message that mentions tomato once among many other words here"))
    assert [h.session_id for h in mem.query("u", "tomato", k=1, session_ids=["quiet"])] == ["quiet"]
    excluded = [f"loud:{i}" for i in range(30)]
    assert [h.session_id for h in mem.query("u", "tomato", k=1, exclude=excluded)] == ["quiet"]
    assert {h.role for h in mem.query("u", "tomato", k=50, roles=["assistant"])} == {"assistant"}


def test_same_id_replaces_instead_of_duplicating(mem: refind.Memory) -> None:
    mem.add(
        "u",
        "s",
        [
            {"role": "user", "content": "I live in Berlin", "id": "D1:1"},
            {"role": "user", "content": "ok", "id": "D1:2"},
        ],
    )
    res = mem.add("u", "s", [{"role": "user", "content": "I live in Lisbon now", "id": "D1:1"}])
    assert (res.added, res.replaced) == (0, 1)
    assert mem.count("u") == 2
    assert mem.query("u", "Berlin") == []
    window = mem.window("u", "s", 0, 5)
    assert [(h.id, h.turn) for h in window] == [("D1:1", 0), ("D1:2", 1)]  # replaced in place
    assert window[0].content == "I live in Lisbon now"


def test_turns_continue_across_adds_and_windows_are_ordered(mem: refind.Memory) -> None:
    mem.add("u", "s", msgs("one", "two", "three"))
    mem.add("u", "s", msgs("four", "five"))
    assert [h.turn for h in mem.session("u", "s")] == [0, 1, 2, 3, 4]
    assert [h.content for h in mem.window("u", "s", 1, 3)] == ["two", "three", "four"]
    assert mem.window("u", "s", 3, 1) == []
    assert mem.window("u", "other", 0, 9) == []


INJECTIONS = [
    'AND OR NOT "unbalanced ( ) : * ? ~ ^ \\ /',
    "title:kayak AND user_id:bob",
    "*:*",
    "kayak~2 OR k*",
    "",
    "   ",
    "the and of to a",
    "[1 TO 5]",
    "\\",
    "((((",
    "\x00\x1f",
]


@pytest.mark.parametrize("text", INJECTIONS)
def test_query_text_is_never_lucene_syntax(mem: refind.Memory, text: str) -> None:
    mem.add("alice", "s", msgs("the kayak is red"))
    mem.add("bob", "s", msgs("bob's secret kayak"))
    hits = mem.query("alice", text, k=10)
    assert all(h.content == "the kayak is red" for h in hits)


def test_syntax_words_are_matched_as_plain_words(mem: refind.Memory) -> None:
    mem.add("u", "s", msgs("user_id bob title kayak"))
    assert len(mem.query("u", "title:kayak AND user_id:bob")) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_any_query_text_returns_a_list(mem: refind.Memory, text: str) -> None:
    if mem.count("u") == 0:
        mem.add("u", "s", msgs("some ordinary message about kayaks"))
    assert isinstance(mem.query("u", text, k=5), list)


def test_cjk_text_is_searchable(mem: refind.Memory) -> None:
    mem.add(
        "u",
        "zh",
        msgs("我上个月在杭州买了一只橘猫。", "周末我们去西湖边散步了。", "明天要交季度报告。"),
    )
    mem.add("u", "ja", msgs("昨日は東京で美味しい寿司を食べました。", "来週、京都へ紅葉を見に行きます。"))
    assert [h.content for h in mem.query("u", "橘猫", k=1)] == ["我上个月在杭州买了一只橘猫。"]
    assert mem.query("u", "杭州的猫是什么颜色", k=1)[0].session_id == "zh"
    assert [h.content for h in mem.query("u", "寿司", k=1)] == ["昨日は東京で美味しい寿司を食べました。"]
    assert mem.query("u", "京都の紅葉", k=1)[0].content.startswith("来週")
    assert mem.query("u", "Kyoto") == []


def test_a_written_batch_is_not_kept_by_the_bridge(mem: refind.Memory) -> None:
    """Each write's bytes become a fresh Java array that nothing keeps once written (a cache on it held every
    batch of a process, Python's bytes and the Java copy, for good); Java classes are the ones cached."""
    from refind.store._jvm import java_bytes, jclass

    mem.add("u", "s", msgs("kayak trip"))  # the JVM is up
    first, second = java_bytes(b'{"a": 1}'), java_bytes(b'{"a": 1}')
    assert first is not second and bytes(first) == bytes(second) == b'{"a": 1}'
    assert not hasattr(java_bytes, "cache_info")
    assert jclass("java.lang.String") is jclass("java.lang.String")
    assert jclass.cache_info().hits >= 1  # type: ignore[attr-defined]


def test_text_of_every_plane_is_stored_and_searched_exactly_through_both_write_paths(
    mem: refind.Memory,
) -> None:
    """A batch crosses to the engine as ASCII-escaped UTF-8 JSON bytes: accents, combining marks, CJK, emoji
    outside the basic plane (surrogate pairs in Java) and joiners come back exactly, by add and by import,
    and the session's stored text (which an append re-analyzes) is the same text."""
    from refind.models import Message, SessionLog

    texts = [
        "kayak trip 😀 naïve café 東京 e\u0301 🧑\u200d🚀 done",
        "kayak again: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 «quotes» — dash, Ω, ß, 한국어",
    ]
    mem.add("u", "added", msgs(*texts))
    log = SessionLog(
        user_id="u",
        session_id="imported",
        messages=[
            Message(role="user", content=t, timestamp=1_700_000_000_000 + i) for i, t in enumerate(texts)
        ],
    )
    assert mem.import_sessions([log]).added == 2
    for sid in ("added", "imported"):
        assert [h.content for h in mem.session("u", sid)] == texts
    assert {h.session_id for h in mem.query("u", "東京", k=5)} == {"added", "imported"}
    assert {h.session_id for h in mem.query("u", "한국어", k=5)} == {"added", "imported"}
    mem.add("u", "imported", msgs("kayak third 😀"))  # an append re-analyzes the stored session text
    assert [h.content for h in mem.session("u", "imported")] == [*texts, "kayak third 😀"]


def test_english_stemming_and_stopwords(mem: refind.Memory) -> None:
    mem.add("u", "s", msgs("The runners were running to John's houses"))
    assert len(mem.query("u", "run")) == 1
    assert len(mem.query("u", "house john")) == 1
    assert mem.store.analyze("The runners were running to John's houses") == [
        "runner",
        "were",
        "run",
        "john",
        "hous",
    ]


def test_delete_user_removes_only_that_user(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    with refind.Memory(path) as m:
        m.add("a", "s", msgs("apples and pears"), request_id="r1")
        m.add("b", "s", msgs("apples and plums"))
        assert m.delete_user("a") == 1
        assert m.query("a", "apples") == []
        assert len(m.query("b", "apples")) == 1
        stats = m.stats()
        assert (stats.messages, stats.users, stats.per_user) == (1, 1, {"b": 1})
        # the request marker went with the user: the same request id is new again
        assert m.add("a", "s", msgs("apples again"), request_id="r1").added == 1
    with refind.Memory(path) as m:
        assert m.count("a") == 1 and m.count("b") == 1


def test_request_id_makes_add_idempotent(mem: refind.Memory) -> None:
    body = msgs("hello there", "general kenobi")
    first = mem.add("u", "s", body, request_id="req-1")
    again = mem.add("u", "s", body, request_id="req-1")
    assert (first.added, first.duplicate_request) == (2, False)
    assert (again.added, again.duplicate_request) == (0, True)
    assert mem.count("u") == 2
    with pytest.raises(refind.RequestConflict, match="req-1"):
        mem.add("u", "s", msgs("something else"), request_id="req-1")
    assert mem.count("u") == 2
    # request ids are per user
    assert mem.add("v", "s", body, request_id="req-1").added == 2


@pytest.mark.slow
def test_concurrent_searches_while_writing(tmp_path: Path) -> None:
    with refind.Memory(tmp_path / "idx") as m:
        m.add("u", "seed", msgs("river stones and river fish"))
        errors: list[BaseException] = []
        counts: list[int] = []
        stop = threading.Event()

        def reader() -> None:
            try:
                while not stop.is_set():
                    hits = m.query("u", "river", k=1000)
                    counts.append(len(hits))
                    assert all("river" in h.content for h in hits)
            except BaseException as exc:  # noqa: BLE001 - surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for i in range(40):
            m.add("u", f"s{i % 5}", msgs(f"river note {i}", "and another line"))
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert not errors
        assert counts and max(counts) <= 41 and len(m.query("u", "river", k=1000)) == 41


def test_second_writer_process_gets_a_clear_lock_error(tmp_path: Path, child_env: dict[str, str]) -> None:
    path = tmp_path / "idx"
    with refind.Memory(path) as m:
        m.add("u", "s", msgs("held by the parent"))
        code = textwrap.dedent(
            f"""
            import refind
            try:
                refind.Memory({str(path)!r})
            except refind.IndexLocked as exc:
                print("LOCKED:", exc)
            ro = refind.Memory({str(path)!r}, read_only=True)
            print("READ:", len(ro.query("u", "parent")))
            try:
                ro.add("u", "s", [{{"role": "user", "content": "x"}}])
            except refind.ReadOnlyError as exc:
                print("RO:", type(exc).__name__)
            """
        )
        out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=child_env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "LOCKED:" in out.stdout and "write.lock" in out.stdout and "Exception" not in out.stdout
        assert "READ: 1" in out.stdout and "RO: ReadOnlyError" in out.stdout
        assert out.stderr == ""
        # a second writer in the same process is refused the same way
        with pytest.raises(refind.IndexLocked, match="locked"):
            refind.Memory(path)


def test_read_only_sees_commits_of_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    with refind.Memory(path) as writer:
        writer.add("u", "s", msgs("first apple"))
        reader = refind.Memory(path, read_only=True)
        try:
            assert len(reader.query("u", "apple")) == 1
            writer.add("u", "s", msgs("second apple"))
            assert len(reader.query("u", "apple")) == 2
        finally:
            reader.close()


def test_read_only_on_missing_index_and_foreign_directories(tmp_path: Path) -> None:
    with pytest.raises(refind.IndexFormatError, match="no refind index"):
        refind.Memory(tmp_path / "nothing", read_only=True)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(refind.IndexFormatError, match="is a file"):
        refind.Memory(f)
    path = tmp_path / "idx"
    refind.Memory(path).close()
    meta = path / "refind.json"
    meta.write_text(meta.read_text().replace('"format": 4', '"format": 99'))
    with pytest.raises(refind.IndexFormatError, match="re-import"):
        refind.Memory(path)


def test_closed_memory_raises_store_closed(tmp_path: Path) -> None:
    m = refind.Memory(tmp_path / "idx")
    m.close()
    m.close()  # idempotent
    with pytest.raises(refind.StoreClosed):
        m.query("u", "x")
    with pytest.raises(refind.StoreClosed):
        m.add("u", "s", msgs("x"))


def test_in_memory_variant() -> None:
    with refind.Memory.in_memory() as m:
        assert m.path is None
        m.add("u", "s", msgs("ephemeral notebook note"))
        assert len(m.query("u", "notebook")) == 1
        assert m.stats().path == ":memory:"


def test_default_path_comes_from_refind_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFIND_DATA", str(tmp_path / "from-env"))
    with refind.Memory() as m:
        assert m.path == (tmp_path / "from-env").resolve()
        m.add("u", "s", msgs("x marks the spot"))
    assert (tmp_path / "from-env" / "refind.json").exists()


def test_bm25_parameters_are_settings(tmp_path: Path) -> None:
    texts = ["kayak kayak kayak trip", "kayak trip with a very long description of many unrelated words here"]
    scores = {}
    for k1, b in [(1.2, 0.75), (0.9, 0.4)]:
        with refind.Memory(tmp_path / f"idx-{k1}", bm25_k1=k1, bm25_b=b) as m:
            m.add("u", "s", msgs(*texts))
            scores[(k1, b)] = [h.score for h in m.query("u", "kayak")]
    assert scores[(1.2, 0.75)] != scores[(0.9, 0.4)]
    with pytest.raises(refind.InvalidInput, match="bm25_b"):
        refind.Memory(tmp_path / "bad", bm25_b=3.0)


def test_session_documents_follow_appends_replacements_and_deletes(mem: refind.Memory) -> None:
    mem.add("u", "trip", [{"role": "user", "content": "planning a trip to Porto", "id": "m1"}])
    mem.add("u", "trip", msgs("we booked the ferry"))  # append
    mem.add("u", "other", msgs("grocery list: apples"))
    assert [sid for sid, _ in mem.store.query_sessions("u", "Porto ferry")] == ["trip"]
    mem.add("u", "trip", [{"role": "user", "content": "planning a trip to Lisbon", "id": "m1"}])  # rebuild
    assert mem.store.query_sessions("u", "Porto") == []
    assert [sid for sid, _ in mem.store.query_sessions("u", "Lisbon ferry")] == ["trip"]
    # session documents never count as messages, and never leak to another user
    assert mem.count("u") == 3 and mem.count() == 3
    assert mem.store.query_sessions("v", "Lisbon") == []
    assert mem.query("u", "Lisbon ferry", k=10) and all(
        h.session_id == "trip" for h in mem.query("u", "Lisbon ferry")
    )
    mem.delete_user("u")
    assert mem.store.query_sessions("u", "Lisbon") == [] and mem.stats().messages == 0


def test_concurrent_adds_share_commits_without_losing_or_mixing_turns(tmp_path: Path) -> None:
    """Group commit: 16 threads add to the same sessions at once; every turn lands once, in order per
    call, session documents hold every message, and duplicate request ids still write once."""
    path = tmp_path / "idx"
    errors: list[BaseException] = []
    results: list[refind.AddResult] = []

    def worker(w: int) -> None:
        try:
            for i in range(6):
                res = m.add("u", f"s{i % 2}", msgs(f"worker{w} item{i} first", f"worker{w} item{i} second"))
                results.append(res)
                results.append(m.add("u", "dup", msgs("same body"), request_id=f"r{i}"))
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    with refind.Memory(path) as m:
        threads = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors
        assert m.count("u") == 16 * 6 * 2 + 6
        for sid in ("s0", "s1"):
            turns = m.session("u", sid)
            assert [h.turn for h in turns] == list(range(16 * 3 * 2))  # no turn lost or written twice
            for a, b in zip(turns[::2], turns[1::2], strict=True):  # each add's two messages stay adjacent
                assert a.content.replace("first", "") == b.content.replace("second", "")
            text = m.store.session_states({"u": [sid]})[("u", sid)].text or ""
            assert all(h.content in text for h in turns)  # the session document kept every message
            assert len(text.split("\n")) == len(turns)
        assert len(m.session("u", "dup")) == 6
        assert sum(r.duplicate_request for r in results) == 16 * 6 - 6
    with refind.Memory(path) as m:  # all of it durable
        assert m.count("u") == 16 * 6 * 2 + 6


def test_an_index_written_before_standing_gets_it_on_its_first_writable_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index whose messages were stored without what stands in them (before issue 37, or by another
    version of the rule): a read-only open reads them with the rule, the first writable open stores it
    (keeping each message's add time), and from then on one query finds them."""
    import json
    import logging
    import time

    from refind.standing import RULE_VERSION
    from refind.store.lucene import LuceneStore

    path = tmp_path / "index"
    texts = [
        ("user", "I'm allergic to shellfish."),
        ("assistant", "Noted: I'm allergic to nothing, being software."),
        ("user", "What's a good pasta recipe?"),
        ("user", "Always answer in metric units."),
    ]
    with LuceneStore(path) as old:  # written as an older refind did: no standing on the records
        write_without_standing(old, texts)
    time.sleep(0.01)
    written = int(time.time() * 1000)  # after the messages were added, before the upgrade rewrites two
    time.sleep(0.01)
    meta = json.loads((path / "refind.json").read_text())
    del meta["standing"]
    (path / "refind.json").write_text(json.dumps(meta))

    with LuceneStore(path, read_only=True) as reader:  # read with the rule on the fly
        assert [(h.id, h.kind) for h in reader.standing("u", 10)] == [("s:3", "instruction"), ("s:0", "fact")]
    with caplog.at_level(logging.INFO, logger="refind.store._standing"):
        store = LuceneStore(path)
    assert "read what stands in the 3 messages of 1 people" in caplog.text
    assert json.loads((path / "refind.json").read_text())["standing"] == RULE_VERSION
    with store:
        found = store.standing("u", 10)
        assert [(h.id, h.kind, h.domain) for h in found] == [
            ("s:3", "instruction", None),
            ("s:0", "fact", "diet"),
        ]
        assert store.count("u") == 4 and [h.content for h in store.get("u", ["s:0"])] == [texts[0][1]]
        assert store.expire(written).removed == 4  # the rewritten messages keep their add times
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="refind.store._standing"), LuceneStore(path):
        pass
    assert "read what stands" not in caplog.text  # once


def test_memory_add_stores_what_stands(mem: refind.Memory) -> None:
    mem.add("me", "s1", [
        {"role": "user", "content": "Can you plan my week? I work night shifts, so mornings are for sleep."},
        {"role": "assistant", "content": "Sure. Always check with your doctor."},
    ])  # fmt: skip
    (hit,) = mem.store.standing("me", 10)
    assert (hit.id, hit.kind, hit.domain, hit.sentence) == (
        "s1:0",
        "fact",
        "work",
        "I work night shifts, so mornings are for sleep.",
    )


@pytest.mark.parametrize("engine", ["reference", "lucene"])
def test_an_import_that_fails_midway_leaves_what_it_wrote_visible_to_the_next_add(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adds and imports share one overlay of uncommitted writes: the slices an import wrote before its source
    failed are not committed, yet the next add to their session continues after them (before, the add read
    only the engine, gave its message the id and turn of the import's first one, and the session held two
    messages with one id)."""
    from refind.models import SessionLog
    from refind.store import write
    from tests.engines import engine_memory

    monkeypatch.setattr(write, "_SLICE_MESSAGES", 2)  # the first session is a slice, written, not committed

    def broken() -> Iterator[SessionLog]:
        yield SessionLog(user_id="u", session_id="a", messages=[{"role": "user", "content": "kayak trip"},
                                                                {"role": "user", "content": "paddles"}])  # fmt: skip
        yield SessionLog(user_id="u", session_id="b", messages=[{"role": "user", "content": "other"}])
        raise refind.InvalidInput("the source broke")

    with engine_memory(engine, tmp_path) as mem:
        with pytest.raises(refind.InvalidInput, match="the source broke"):
            mem.import_sessions(broken())
        mem.add("u", "a", [{"role": "user", "content": "life jackets"}])
        assert [(t.id, t.turn) for t in mem.session("u", "a")] == [("a:0", 0), ("a:1", 1), ("a:2", 2)]
        assert [h.id for h in mem.query("u", "kayak")] == ["a:0"]


def test_an_import_pauses_the_cyclic_collector_and_gives_it_back(
    mem: refind.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk import runs without automatic full collections (refind._collector.collector_paused):
    it collects the young generations after each slice, so the cycles it makes do not pile up, and the
    collector's state after it is the state before it, whether the import ends, fails, or runs beside
    another, and whether the process had the collector on or off."""
    import gc
    import weakref

    from refind._collector import collector_paused
    from refind.models import SessionLog
    from refind.store import write

    class Cyclic:
        def __init__(self) -> None:
            self.me = self

    seen: list[bool] = []
    made: list[weakref.ref[Cyclic]] = []

    def logs(n: int, fail: bool = False) -> Iterator[SessionLog]:
        for i in range(n):
            seen.append(gc.isenabled())
            c = Cyclic()  # garbage as soon as the next session is asked for: only a collection frees it
            made.append(weakref.ref(c))
            del c
            yield SessionLog(
                user_id="u", session_id=f"s{i}", messages=[{"role": "user", "content": f"kayak {i}"}]
            )
        if fail:
            raise refind.InvalidInput("the source broke")

    assert gc.isenabled()
    monkeypatch.setattr(write, "_SLICE_MESSAGES", 2)  # a slice every two sessions
    assert mem.import_sessions(logs(6)).added == 6
    assert seen and not any(seen)  # paused throughout
    assert gc.isenabled()
    assert sum(r() is None for r in made[:-2]) >= 4  # collected slice by slice, during the import
    with pytest.raises(refind.InvalidInput, match="the source broke"):
        mem.import_sessions(logs(3, fail=True))
    assert gc.isenabled()
    gc.disable()
    try:
        mem.import_sessions(logs(2))
        assert not gc.isenabled()  # a process that turned it off keeps it off
    finally:
        gc.enable()
    # nested: the outer pause outlives the inner one
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
