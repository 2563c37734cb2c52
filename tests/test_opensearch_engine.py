"""What the OpenSearch engine guarantees beyond the engine contract: several writers at once, and failures.

Each ``refind.Memory`` below opens its own ``OpenSearchStore`` on one index prefix of the session's real
node, as separate ``refind serve --workers`` processes do: nothing is shared between them but the cluster.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import refind
from refind.store.opensearch import OpenSearchStore, parse_location
from tests.engines import write_without_standing
from tests.opensearch_helpers import DevCluster

pytestmark = pytest.mark.slow  # the OpenSearch dev node: make test, not make check


@pytest.fixture
def location(opensearch: DevCluster) -> Iterator[str]:
    where = f"opensearch://{opensearch.url.split('://', 1)[1]}/w-{uuid.uuid4().hex[:10]}"
    yield where
    with opensearch.client() as client:
        client.indices.delete(index=f"{where.rsplit('/', 1)[1]}-*", ignore_unavailable=True)


def _msg(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_two_writers_with_one_request_id_write_once(location: str) -> None:
    workers = [refind.Memory(location) for _ in range(4)]
    try:
        results: list[refind.AddResult] = []
        errors: list[BaseException] = []
        go = threading.Barrier(len(workers))

        def add(mem: refind.Memory) -> None:
            try:
                go.wait()
                results.append(mem.add("u", "s", _msg("the harbour kayak, once"), request_id="req-1"))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=add, args=(m,)) for m in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert sum(r.added for r in results) == 1 and sum(r.duplicate_request for r in results) == 3
        assert workers[0].count("u") == 1
        with pytest.raises(refind.RequestConflict):
            workers[1].add("u", "s", _msg("another body"), request_id="req-1")
        assert workers[2].count("u") == 1
    finally:
        for m in workers:
            m.close()


def test_concurrent_workers_never_share_an_auto_turn_id(location: str) -> None:
    workers = [refind.Memory(location) for _ in range(3)]
    try:
        errors: list[BaseException] = []

        def append(w: int, mem: refind.Memory) -> None:
            try:
                for i in range(12):
                    mem.add("u", "shared", _msg(f"writer{w} note{i} about zebras"))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=append, args=(w, m)) for w, m in enumerate(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        turns = workers[0].store.windows("u", [("shared", 0, 2**31 - 1)])[0]
        assert [h.turn for h in turns] == list(range(36))  # every add kept, turns distinct and dense
        assert sorted(h.content for h in turns) == sorted(
            f"writer{w} note{i} about zebras" for w in range(3) for i in range(12)
        )
        state = workers[1].store.session_states({"u": ["shared"]})[("u", "shared")]
        assert state.tail is not None and state.tail.turn == 35 and state.text is not None
        assert all(h.content in state.text for h in turns)
    finally:
        for m in workers:
            m.close()


def test_a_commit_under_the_write_lock_never_acknowledges_what_the_group_commit_in_flight_lost(
    location: str,
) -> None:
    """Two adds of one session in one group commit, whose compare-and-set loses to another process; a
    commit made under the write lock (the embedding worker's, here a deletion's) runs while that group commit
    is in flight. Both adds are resolved again and written: the commit under the lock waits for the one in
    flight, which settles its failure first (it used to find nothing left to send, report the raced adds
    committed, and one of them was acknowledged without being written)."""
    p, q = refind.Memory(location), refind.Memory(location)  # two worker processes of one service
    store = p.store
    assert isinstance(store, OpenSearchStore)
    commits = store._commits
    send, write = commits._send, store.write
    held = {1: threading.Event(), 2: threading.Event()}  # the first two commits of p wait for these
    entered = {1: threading.Event(), 2: threading.Event()}
    sends, writes = [0], [0]

    def held_send(ops: list[tuple[str, object]]) -> None:
        sends[0] += 1
        n = sends[0]
        if n in held:
            entered[n].set()
            assert held[n].wait(60)
        send(ops)

    def counted_write(batch: object) -> None:
        write(batch)  # type: ignore[arg-type]
        writes[0] += 1

    commits._send = held_send  # type: ignore[method-assign]
    store.write = counted_write  # type: ignore[method-assign]
    errors: list[BaseException] = []

    def run(fn: object, *args: object) -> threading.Thread:
        def target() -> None:
            try:
                fn(*args)  # type: ignore[operator]
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        t = threading.Thread(target=target)
        t.start()
        return t

    def wait_for(cond: object) -> None:
        deadline = time.monotonic() + 60
        while not cond():  # type: ignore[operator]
            assert time.monotonic() < deadline
            time.sleep(0.01)

    try:
        threads = [run(p.add, "u", "y", _msg("zero about otters"))]  # commit 1, held
        assert entered[1].wait(60)
        threads.append(run(p.add, "u", "x", _msg("first about otters")))  # both wait for commit 1, then
        wait_for(lambda: writes[0] == 2)  # go in commit 2 together
        threads.append(run(p.add, "u", "x", _msg("second about otters")))
        wait_for(lambda: writes[0] == 3)
        held[1].set()
        assert entered[2].wait(60)  # commit 2 has taken both adds of x
        q.add("u", "x", _msg("other worker about otters"))  # x changes: commit 2's compare-and-set fails
        threads.append(run(p.delete_session, "u", "nothing"))  # commits under the lock meanwhile
        time.sleep(1.0)
        held[2].set()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads) and not errors, errors
        stored = q.store.windows("u", [("x", 0, 99)])[0]
        assert sorted(h.content for h in stored) == sorted(
            ["first about otters", "second about otters", "other worker about otters"]
        )
        assert sorted(h.turn for h in stored) == [0, 1, 2]
        assert [h.content for h in q.store.windows("u", [("y", 0, 99)])[0]] == ["zero about otters"]
    finally:
        for h in held.values():
            h.set()
        p.close()
        q.close()


def test_a_failed_commit_is_not_acknowledged_and_a_retry_writes_once(
    location: str, opensearch: DevCluster
) -> None:
    mem = refind.Memory(location)
    prefix = location.rsplit("/", 1)[1]
    try:
        mem.add("u", "s", _msg("first kayak"), request_id="r0")
        with opensearch.client() as client:  # the cluster refuses message writes (403: not retried)
            client.indices.put_settings(index=f"{prefix}-messages", body={"index.blocks.write": True})
        try:
            with pytest.raises(refind.StoreError, match="refused a message"):
                mem.add("u", "s", _msg("second kayak"), request_id="r1")
            assert mem.count("u") == 1 and mem.store.request_marker("u", "r1") is None
            state = mem.store.session_states({"u": ["s"]})[("u", "s")]
            assert state.text == "first kayak" and state.tail is not None and state.tail.turn == 0  # put back
        finally:
            with opensearch.client() as client:
                client.indices.put_settings(index=f"{prefix}-messages", body={"index.blocks.write": False})
        result = mem.add("u", "s", _msg("second kayak"), request_id="r1")  # the client's retry
        assert result.added == 1 and not result.duplicate_request
        assert [(h.turn, h.content) for h in mem.store.windows("u", [("s", 0, 99)])[0]] == [
            (0, "first kayak"),
            (1, "second kayak"),
        ]
        assert mem.add("u", "s", _msg("second kayak"), request_id="r1").duplicate_request
    finally:
        mem.close()


def test_a_bulk_import_of_several_slices_commits_each_and_reimports_in_place(location: str) -> None:
    from refind.models import SessionLog

    def logs(word: str) -> list[SessionLog]:
        return [
            SessionLog(
                user_id=f"u{u}", session_id=f"s{s}",
                messages=[{"role": "user", "content": f"{word} {u} {s} {i}"} for i in range(60)],
            )
            for u in range(10) for s in range(20)
        ]  # fmt: skip

    mem = refind.Memory(location)
    try:
        first = mem.import_sessions(logs("kayak"))  # 12,000 messages: three slices, each sent and committed
        assert (first.added, first.sessions, mem.count()) == (12_000, 200, 12_000)
        again = mem.import_sessions(logs("canoe"))  # the same sessions given again: new turns after theirs
        assert again.added == 12_000 and mem.count() == 24_000
        turns = mem.store.windows("u3", [("s7", 0, 2**31 - 1)])[0]
        assert [h.turn for h in turns] == list(range(120))
        assert turns[0].content == "kayak 3 7 0" and turns[60].content == "canoe 3 7 0"
        state = mem.store.session_states({"u3": ["s7"]})[("u3", "s7")]
        assert state.tail is not None and state.tail.turn == 119
        assert state.text is not None and state.text.endswith("canoe 3 7 59")
        assert [h.session_id for h in mem.store.query("u9", "canoe 19", 1)] == ["s19"]
    finally:
        mem.close()


def test_an_unreachable_cluster_is_a_clear_store_error_after_bounded_retries() -> None:
    started = time.monotonic()
    with pytest.raises(
        refind.StoreError, match=r"OpenSearch at opensearch://127\.0\.0\.1:9/x failed during opening"
    ):
        OpenSearchStore("opensearch://127.0.0.1:9/x", retry_seconds=2)
    assert time.monotonic() - started < 30


def test_locations_parse_hosts_tls_credentials_and_options() -> None:
    loc = parse_location(
        "opensearchs://ann:p%40ss@a.example:9201,b.example/mem?shards=3&replicas=1&verify=false",
        env={"REFIND_OPENSEARCH_API_KEY": "k3y"},
    )
    assert loc.hosts == ["https://a.example:9201", "https://b.example:9200"] and loc.prefix == "mem"
    assert (loc.username, loc.password, loc.api_key) == ("ann", "p@ss", "k3y")
    assert (loc.shards, loc.replicas, loc.verify, loc.tls) == (3, 1, False, True)
    assert loc.redacted() == "opensearchs://a.example:9201,b.example:9200/mem"  # no secret in logs
    env = {"REFIND_OPENSEARCH_USER": "bob", "REFIND_OPENSEARCH_PASSWORD": "pw"}
    assert parse_location("opensearch://h/", env=env).prefix == "refind"
    assert parse_location("opensearch://h/", env=env).username == "bob"
    for bad in (
        "opensearch:///x",
        "opensearch://h/UPPER",
        "opensearch://h/x?nope=1",
        "opensearch://h/x?shards=a",
    ):
        with pytest.raises(refind.InvalidInput):
            parse_location(bad, env={})


def test_serve_workers_is_refused_on_the_embedded_engine(tmp_path: object) -> None:
    from refind.server import serve

    with pytest.raises(refind.SetupError, match="--workers 4 needs an engine that several processes write"):
        serve(":memory:", workers=4, port=0)


def test_the_cli_imports_searches_and_counts_on_a_store_url(location: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from refind.cli import main

    log = tmp_path / "chat.jsonl"
    log.write_text(
        '{"user_id": "maya", "session_id": "s1", "role": "user", "content": "I adopted a grey cat named Miso",'
        ' "timestamp": "2024-03-02T10:00:00Z"}\n'
    )
    runner = CliRunner()
    done = runner.invoke(main, ["--store", location, "import", str(log), "--quiet"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    found = runner.invoke(
        main, ["--store", location, "search", "what is my cat called?", "--user", "maya", "--json"]
    )
    assert found.exit_code == 0 and "Miso" in found.output, found.output
    stats = runner.invoke(
        main, ["stats", "--json"], env={"REFIND_STORE": location, "REFIND_DATA": str(tmp_path)}
    )
    assert stats.exit_code == 0 and json.loads(stats.output)["messages"] == 1, stats.output
    both = runner.invoke(main, ["--store", location, "--data", str(tmp_path), "stats"])
    assert both.exit_code == 2 and "not both" in both.output


def test_a_prefix_written_before_standing_gets_it_on_its_first_writable_open(
    location: str, opensearch: DevCluster
) -> None:
    """A prefix whose messages were stored without what stands in them (before issue 37, or by another
    version of the rule): a read-only open reads them with the rule, the first writable open stores it."""
    texts = [("user", "I'm allergic to shellfish."), ("assistant", "I'm allergic to nothing."),
             ("user", "Always answer in metric units."), ("user", "What's for dinner?")]  # fmt: skip
    with OpenSearchStore(location) as old:  # written as an older refind did: no standing on the records
        write_without_standing(old, texts)
    index = f"{location.rsplit('/', 1)[1]}-messages"
    with opensearch.client() as client:
        meta = next(iter(client.indices.get_mapping(index=index).values()))["mappings"]["_meta"]
        client.indices.put_mapping(index=index, body={"_meta": {**meta, "standing": None}})
    with OpenSearchStore(location, read_only=True) as reader:
        assert [(h.id, h.kind) for h in reader.standing("u", 10)] == [("s:2", "instruction"), ("s:0", "fact")]
    with OpenSearchStore(location) as store:
        assert [(h.id, h.kind, h.domain) for h in store.standing("u", 10)] == [
            ("s:2", "instruction", None),
            ("s:0", "fact", "diet"),
        ]
        assert [h.content for h in store.get("u", ["s:0"])] == [texts[0][1]]
    with OpenSearchStore(location, read_only=True) as reader:  # stored now: one query
        assert reader._standing_stored and len(reader.standing("u", 10)) == 2
