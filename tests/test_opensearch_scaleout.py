"""refind on a real 3-node OpenSearch cluster (3 primary shards, 1 replica) behind ``refind serve --workers 4``.

- kill -9 one node while 8 concurrent writers add through the service (two writers per session, so the
  workers race for the same sessions' auto turn ids): every acknowledged add is searchable afterwards and
  no message is stored twice;
- the Add/Search contract (../shared/docs/aml-contract.md) holds against the same service: the harness's
  HTTP client (benchmarks/adapters/http.py, what the leaderboard runs) and the contract's answers to
  duplicates, conflicts and bad input.

Real JVMs on loopback started by scripts/opensearch-dev, a real ``python -m refind.server`` parent with four
forked workers; no mocks. Skips without Java or mvn unless REFIND_REQUIRE_OPENSEARCH=1.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks.adapters.http import SpawnedServer
from refind.store.opensearch import OpenSearchStore
from tests.opensearch_helpers import DevCluster, start_cluster
from tests.server_helpers import add_body, clean_env, search_body

pytestmark = pytest.mark.slow  # OpenSearch clusters of their own: make test, not make check

WRITERS = 8
ADDS = 30  # per writer
KILL_AFTER = 60  # acknowledged adds before a node is killed


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    with start_cluster(tmp_path_factory.mktemp("os3-scaleout"), nodes=3) as cluster:
        yield cluster


def _location(cluster: DevCluster, prefix: str) -> str:
    hosts = ",".join(u.split("://", 1)[1] for u in cluster.urls)
    return f"opensearch://{hosts}/{prefix}?shards=3&replicas=1"


@pytest.fixture(scope="module")
def service(cluster3: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedServer]:
    tmp = tmp_path_factory.mktemp("serve-workers")
    server = SpawnedServer(
        _location(cluster3, "scaleout"),
        args=["--workers", "4", "--no-access-log", "--log-level", "warning"],
        base_env=clean_env(tmp),
        log_path=tmp / "server.log",
        startup_timeout=120,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_add_search_contract_holds_against_serve_workers_4(service: SpawnedServer) -> None:
    with httpx.Client(base_url=service.url, timeout=60) as http:
        body = add_body("c-1", "contract", "s1", ["I moved to Lisbon in May", "Nice, how is it?"])
        r = http.post("/add", json=body)
        assert r.status_code == 200 and r.json() == {
            "success": True, "request_id": "c-1", "user_id": "contract", "session_id": "s1"
        }  # fmt: skip
        assert http.post("/v1/memories/add", json=body).status_code == 200  # a duplicate: written once
        other = add_body("c-1", "contract", "s1", ["something else entirely"])
        assert http.post("/add", json=other).status_code == 409
        assert http.post("/add", json={"user_id": "contract"}).status_code in (400, 422)
        for path in ("/search", "/v1/memories/search"):
            r = http.post(path, json=search_body("where did I move?", "contract", top_k=3))
            assert r.status_code == 200, r.text
            data = r.json()["data"]
            assert 1 <= len(data) <= 3 and "Lisbon" in data[0]["content"]
            assert data[0]["id"].startswith("s1#")
        assert http.post("/search", json=search_body("Lisbon", "nobody")).json()["data"] == []
        assert http.get("/v1/stats").json()["messages"] == 2


def test_the_harness_http_client_runs_against_serve_workers_4(
    service: SpawnedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.adapters.base import AdapterConfig
    from benchmarks.adapters.http import RefindHTTPAdapter
    from benchmarks.datasets import Question, Session
    from refind import Message

    monkeypatch.setenv("REFIND_BASE_URL", service.url)
    sessions = [
        Session(
            id=f"h{i}",
            text=f"On day {i} I fed the {animal}\nThe {animal} must be happy",
            messages=(
                Message(role="user", content=f"On day {i} I fed the {animal}", id=f"h{i}:0"),
                Message(role="assistant", content=f"The {animal} must be happy", id=f"h{i}:1"),
            ),
        )
        for i, animal in enumerate(["cat", "parrot", "goldfish"])
    ]
    adapter = RefindHTTPAdapter()
    state = adapter.init(sessions, AdapterConfig(dataset="tiny", k=5, turn_level=True))
    try:
        question = Question(id="q", type="single-hop", text="when did I feed the parrot?", haystack="h",
                            gold_sessions=("h1",))  # fmt: skip
        items = adapter.query(question, state, 5)
        assert items and items[0].session_id == "h1" and "h1:0" in items[0].turn_ids
    finally:
        adapter.teardown(state)


def test_kill_9_a_node_during_8_concurrent_writers(
    service: SpawnedServer, cluster3: DevCluster, tmp_path: Path
) -> None:
    acknowledged: list[tuple[str, str, str]] = []  # (user, session, token)
    failures: list[str] = []
    lock = threading.Lock()
    started = threading.Event()

    def writer(w: int) -> None:
        user, session = f"user{w % 2}", f"s{w % 4}"  # writers w and w + 4 share a session
        with httpx.Client(base_url=service.url, timeout=120) as http:
            for i in range(ADDS):
                token = f"tok{w}x{i}"
                body = add_body(f"w{w}-{i}", user, session, [f"{token} kayak trip note"], ts=None)
                for attempt in range(20):  # a client retries with the same request id until acknowledged
                    try:
                        r = http.post("/add", json=body)
                        if r.status_code == 200:
                            with lock:
                                acknowledged.append((user, session, token))
                                if len(acknowledged) >= KILL_AFTER:
                                    started.set()
                            break
                        with lock:
                            failures.append(f"{token}: {r.status_code} {r.text[:200]}")
                    except httpx.HTTPError as exc:
                        with lock:
                            failures.append(f"{token}: {exc!r}")
                    time.sleep(0.5 * (attempt + 1))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    assert started.wait(300), (
        f"only {len(acknowledged)} adds acknowledged; {failures[:5]}\n{service.log()[-3000:]}"
    )
    victim = 2
    cluster3.kill(victim, "KILL")
    for t in threads:
        t.join(600)
    assert not any(t.is_alive() for t in threads)
    assert len(acknowledged) == WRITERS * ADDS, (len(acknowledged), failures[:10])

    survivors = [u.split("://", 1)[1] for i, u in enumerate(cluster3.urls) if i != victim]
    store = OpenSearchStore(f"opensearch://{','.join(survivors)}/scaleout", read_only=True)
    try:
        seen: dict[str, int] = {}
        turns: dict[tuple[str, str], list[int]] = {}
        for user in ("user0", "user1"):
            for sid in ("s0", "s1", "s2", "s3"):
                for h in store.windows(user, [(sid, 0, 2**31 - 1)])[0]:
                    seen[h.content.split()[0]] = seen.get(h.content.split()[0], 0) + 1
                    turns.setdefault((user, sid), []).append(h.turn)
        duplicated = {tok: n for tok, n in seen.items() if n > 1}
        assert duplicated == {}, duplicated
        missing = [tok for _, _, tok in acknowledged if tok not in seen]
        assert missing == [], missing
        for (user, sid), got in turns.items():  # auto turn ids: distinct in each session, none lost
            assert len(got) == len(set(got)), (user, sid)
        for user, _, token in acknowledged[:: max(1, len(acknowledged) // 40)]:  # searchable, not just stored
            hits = store.query(user, token, 5)
            assert [h.content.split()[0] for h in hits[:1]] == [token]
        assert store.count("user0") + store.count("user1") == len(seen) == WRITERS * ADDS
    finally:
        store.close()
    with httpx.Client(base_url=service.url, timeout=60) as http:  # the service still answers searches
        r = http.post("/search", json=search_body(acknowledged[0][2], acknowledged[0][0], top_k=3))
        assert r.status_code == 200 and acknowledged[0][2] in r.json()["data"][0]["content"]
