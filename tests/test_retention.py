"""Retention deletes by ingestion time, never by a message's own date, and takes a request's marker with its
messages, so nothing acknowledged becomes unrecoverable (the platform's retry writes it again)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import refind
from tests.server_helpers import add_body, client, count, running, search_body

T_PAST = 1_682_899_200_000  # 2023-05-01: every benchmark set and any imported history is dated like this
DAY = 86_400_000


def _now() -> int:
    return int(time.time() * 1000)


def _msgs(*texts: str, ts: int = T_PAST) -> list[dict]:
    return [{"role": "user", "content": t, "timestamp": ts + i * 60_000} for i, t in enumerate(texts)]


def test_a_sweep_keeps_what_was_added_after_the_cutoff_however_old_its_dates(tmp_path: Path) -> None:
    with refind.Memory(tmp_path / "idx") as m:
        m.add("a", "old", _msgs("ancient kayak story", "more ancient words"), request_id="r-old")
        cutoff = _now()
        time.sleep(0.01)
        m.add("a", "later", _msgs("a later canoe note", ts=T_PAST - 365 * DAY), request_id="r-later")
        # messages dated years ago, added after the cutoff: kept
        assert m.delete_added_before(cutoff - 60_000) == 0
        assert m.count("a") == 3
        assert m.delete_added_before(cutoff) == 2
        assert m.count("a") == 1 and m.query("a", "ancient") == []
        assert [h.content for h in m.session("a", "later")] == ["a later canoe note"]
        # the marker went with its messages: the same request again writes them again
        again = m.add("a", "old", _msgs("ancient kayak story", "more ancient words"), request_id="r-old")
        assert (again.added, again.duplicate_request) == (2, False)
        assert m.count("a") == 3
        # the surviving request's marker still makes its retry a no-op
        retry = m.add("a", "later", _msgs("a later canoe note", ts=T_PAST - 365 * DAY), request_id="r-later")
        assert retry.duplicate_request and m.count("a") == 3
    with refind.Memory(tmp_path / "idx") as m:  # durable
        assert m.count("a") == 3


def test_session_documents_follow_a_sweep(tmp_path: Path) -> None:
    with refind.Memory(tmp_path / "idx") as m:
        m.add("a", "old", _msgs("ancient kayak story", "more ancient words"))
        m.add("a", "mixed", [{"role": "user", "content": "old canoe note", "id": "c1"}])
        cutoff = _now()
        time.sleep(0.01)
        m.add("a", "mixed", [{"role": "user", "content": "new canoe note", "id": "c2"}])
        m.add("b", "new", _msgs("fresh kayak story"))
        assert m.delete_added_before(cutoff) == 3
        assert m.count() == 2 and m.count("a") == 1
        assert [h.content for h in m.session("a", "mixed")] == ["new canoe note"]
        # the emptied session is gone, the mixed one holds only what remains
        assert [sid for sid, _ in m.store.query_sessions("a", "canoe")] == ["mixed"]
        assert m.store.query_sessions("a", "ancient") == []
        assert m.delete_added_before("2000-01-01") == 0


def test_a_format_1_index_is_upgraded_and_its_messages_count_from_the_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    with refind.Memory(path) as m:
        store = m.store
        # write the way format 1 did: no "added" field on messages or request markers
        store._doc.doc.removeFields("added")
        write_marker = store._write_marker

        def format_1_marker(user_id: str, request_id: str, payload: str, *, added: int) -> None:
            write_marker(user_id, request_id, payload, added=added)
            key = store._j.Term("key", "\x1frequest\x1f" + user_id + "\x1f" + request_id)
            d = store._j.Document()
            d.add(store._j.StringField("key", key.text(), store._j.FieldStore.NO))
            d.add(store._j.StringField("kind", "r", store._j.FieldStore.NO))
            d.add(store._j.StringField("req_user", user_id, store._j.FieldStore.NO))
            d.add(store._j.StoredField("raw", payload, signature="(Ljava/lang/String;Ljava/lang/String;)V"))
            store._writer.updateDocument(key, d)

        store._write_marker = format_1_marker
        m.add("u", "s", _msgs("a message from an old refind"), request_id="r1")
    meta = json.loads((path / "refind.json").read_text())
    (path / "refind.json").write_text(json.dumps({**meta, "format": 1}))
    with refind.Memory(path, read_only=True) as ro:  # readable as it is
        assert ro.count("u") == 1
    assert json.loads((path / "refind.json").read_text())["format"] == 1
    before = _now()
    with refind.Memory(path) as m:
        meta = json.loads((path / "refind.json").read_text())
        assert meta["format"] == 2 and meta["upgraded_from"] == 1 and meta["legacy_added_ms"] >= before
        assert m.delete_added_before(before - 1) == 0  # counts as added at the upgrade, not never, not 1970
        assert m.add("u", "s", _msgs("a message from an old refind"), request_id="r1").duplicate_request
        assert m.delete_added_before(_now() + 1) == 1
        assert m.count("u") == 0
        assert not m.add("u", "s", _msgs("a message from an old refind"), request_id="r1").duplicate_request


def test_serve_retention_sweeps_by_ingestion_time_and_a_retry_restores(tmp_path: Path) -> None:
    days = 4 / 86_400  # four seconds
    with (
        running(tmp_path, "--retention-days", str(days), "--retention-interval", "0.2") as server,
        client(server) as http,
    ):
        body = add_body("old-dated", "ret-user", "s1", ["a memory of lighthouses from 2023"], ts=T_PAST)
        assert http.post("/add", json=body).status_code == 200
        time.sleep(2)  # several sweeps ran: the message is dated 2023, but it was added 2 s ago
        assert count(http) == 1
        found = http.post("/search", json=search_body("lighthouses", "ret-user")).json()["data"]
        assert len(found) == 1
        deadline = time.monotonic() + 20
        while count(http) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert count(http) == 0
        # the platform retries the same request: its marker went with the data, so it is written again
        assert http.post("/add", json=body).status_code == 200
        assert count(http) == 1
        assert http.post("/search", json=search_body("lighthouses", "ret-user")).json()["data"]
    log = server.log()
    assert "retention: removed 1 messages added more than" in log


def test_shutdown_with_retention_is_clean_and_closes_the_index(tmp_path: Path) -> None:
    with running(tmp_path, "--retention-days", "30", "--retention-interval", "0.2") as server:
        with client(server) as http:
            assert http.post("/add", json=add_body("r", "u", "s", ["hello there"])).status_code == 200
        time.sleep(0.5)
        code = server.stop()
    log = server.log()
    assert code in (0, -15), log  # uvicorn re-raises the SIGTERM it handled
    assert "Traceback" not in log and "shutdown failed" not in log.lower(), log
    index = tmp_path / "index"
    assert not (index / "writer.pid").exists()  # Memory.close() ran: the writer was released
    with refind.Memory(index) as m:  # and the lock with it
        assert m.count() == 1
