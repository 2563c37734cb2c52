"""Retention deletes by ingestion time, never by a message's own date, and takes a request's marker with its
messages, so nothing acknowledged becomes unrecoverable (the platform's retry writes it again)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import refind
from refind.models import parse_messages
from refind.store.write import body_digest
from tests.legacy_index import write_legacy_index
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


@pytest.mark.parametrize("fmt", [1, 2])
def test_an_older_index_is_upgraded_in_place_and_keeps_everything(tmp_path: Path, fmt: int) -> None:
    path = tmp_path / "idx"
    path.mkdir()
    body = _msgs("a message from an old refind about kayaks")
    digest = body_digest("s", parse_messages(body), None)
    payload = json.dumps({"digest": digest, "session_id": "s", "messages": 1})
    old = [
        {"user_id": "u", "session_id": "s", "id": "s:0", "turn": 0, "ts": T_PAST, "role": "user",
         "content": "a message from an old refind about kayaks"},
        {"user_id": "v", "session_id": "t", "id": "x1", "turn": 0, "ts": T_PAST, "role": "assistant",
         "content": "someone else's canoe", "speaker": "Bot"},
    ]  # fmt: skip
    added_then = _now() - 5 * DAY
    write_legacy_index(path, fmt, old, markers=[("u", "r1", payload)], added=added_then)
    with pytest.raises(refind.IndexFormatError, match="open it once for writing"):
        refind.Memory(path, read_only=True)
    before = _now()
    with refind.Memory(path) as m:
        meta = json.loads((path / "refind.json").read_text())
        assert meta["format"] == 3 and meta["upgraded_from"] == fmt
        assert m.count() == 2 and m.count("u") == 1
        hit = m.query("u", "kayaks")[0]
        assert (hit.id, hit.session_id, hit.turn, hit.timestamp, hit.role) == ("s:0", "s", 0, T_PAST, "user")
        assert m.query("v", "canoe")[0].speaker == "Bot"
        assert [sid for sid, _ in m.store.query_sessions("u", "kayaks")] == ["s"]
        assert m.add("u", "s", body, request_id="r1").duplicate_request  # its marker survived
        m.add("u", "s", _msgs("and a new one about kayaks"))  # appends after the old turn
        assert [h.turn for h in m.session("u", "s")] == [0, 1]
        if fmt == 1:  # no add times: they count as added at the upgrade, not never, not 1970
            assert m.delete_added_before(before - 1) == 0
        else:  # format 2 recorded them
            assert m.delete_added_before(added_then + 1) == 2
            assert m.count() == 1
            assert not m.add("u", "s", body, request_id="r1").duplicate_request
    with refind.Memory(path, read_only=True) as ro:  # upgraded for good
        assert ro.count() == (3 if fmt == 1 else 2)


@pytest.mark.slow
def test_serve_retention_sweeps_by_ingestion_time_and_a_retry_restores(tmp_path: Path) -> None:
    days = 6 / 86_400  # six seconds
    with (
        running(tmp_path, "--retention-days", str(days), "--retention-interval", "0.2") as server,
        client(server) as http,
    ):
        # a first search warms the search workers (a cold one on a busy machine can take seconds, and the
        # sweep must not come between the add and the search below)
        assert http.post("/search", json=search_body("warm up", "nobody")).status_code == 200
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


@pytest.mark.slow
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
