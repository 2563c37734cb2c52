"""Hostile clients against a real ``refind serve`` on loopback: connections that send headers and never
the body, or half their headers, cannot take the service from the others; protocol errors, timeouts and
shed requests are all answered with a status and the one JSON error shape; a 422 never quotes the input."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from benchmarks.adapters.http import SpawnedServer
from tests.server_helpers import add_body, client, count, running, search_body

pytestmark = pytest.mark.slow  # a spawned service pushed over capacity: make test, not make check

READ_TIMEOUT = 2  # seconds the server gives a request to arrive whole (headers, then body)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedServer]:
    """Few slots (8 in flight) so that a handful of hostile connections would fill them."""
    tmp = tmp_path_factory.mktemp("hostile")
    args = [
        "--threads",
        "2",
        "--max-in-flight",
        "8",
        "--read-timeout",
        str(READ_TIMEOUT),
        "--search-workers",
        "0",
    ]
    with running(tmp, *args) as server:
        yield server


def _address(server: SpawnedServer) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _connect(server: SpawnedServer, payload: bytes) -> socket.socket:
    sock = socket.create_connection(_address(server), timeout=30)
    sock.sendall(payload)
    return sock


def _response(sock: socket.socket, limit: float = 30.0) -> bytes:
    """Everything the server sends until it closes the connection (or ``limit`` seconds)."""
    sock.settimeout(limit)
    data = b""
    with contextlib.suppress(TimeoutError, ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _status_and_json(raw: bytes) -> tuple[int, dict]:  # type: ignore[type-arg]
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = dict(
        line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line
    )  # fmt: skip
    assert headers.get(b"content-type", b"").strip() == b"application/json", head
    return status, json.loads(body)


def _headers_without_body(server: SpawnedServer, path: str = "/add") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: {server.url.removeprefix('http://')}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    ).encode()


def test_64_idle_connections_without_their_body_do_not_block_the_others(srv: SpawnedServer) -> None:
    idle = [_connect(srv, _headers_without_body(srv)) for _ in range(64)]
    half = [_connect(srv, b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Le") for _ in range(16)]
    try:
        time.sleep(0.3)  # the server has seen every one of them
        with client(srv) as http:
            r = http.post("/add", json=add_body("idle-1", "idle", "s", ["the lighthouse keeper's notebook"]))
            assert r.status_code == 200, r.text
            for _ in range(10):
                r = http.post("/search", json=search_body("lighthouse notebook", "idle"))
                assert r.status_code == 200, r.text
                assert r.json()["data"]
        # each idle one gets a 408 in the JSON shape once its time is up, and its connection is closed
        for sock in idle[:4] + half[:4]:
            status, body = _status_and_json(_response(sock))
            assert status == 408 and "seconds" in body["detail"]["reason"], body
    finally:
        for sock in idle + half:
            sock.close()


def test_a_body_that_trickles_in_past_the_read_timeout_is_408(srv: SpawnedServer) -> None:
    body = json.dumps(add_body("slow-1", "slow", "s", ["arrives one byte at a time"])).encode()
    head = (
        f"POST /add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = _connect(srv, head)
    try:
        started = time.monotonic()
        with contextlib.suppress(OSError):
            for b in body:
                sock.sendall(bytes([b]))
                time.sleep(0.25)
                if time.monotonic() - started > READ_TIMEOUT + 3:
                    break
        status, reply = _status_and_json(_response(sock))
        assert status == 408, reply
    finally:
        sock.close()
    with client(srv) as http:
        assert http.post("/search", json=search_body("byte at a time", "slow")).json()["data"] == []


@pytest.mark.parametrize(
    "raw",
    [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
        b"POST /add HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET /health HTTP/1.1\r\nBad Header Name: 1\r\n\r\n",
    ],
)
def test_protocol_errors_are_400_in_the_json_shape(srv: SpawnedServer, raw: bytes) -> None:
    sock = _connect(srv, raw)
    try:
        status, body = _status_and_json(_response(sock))
    finally:
        sock.close()
    assert status == 400 and body["detail"]["reason"], body


def test_a_422_for_a_bad_timestamp_never_quotes_it(srv: SpawnedServer) -> None:
    marker = "2024-05-08 secret-words-here"
    body = add_body("ts-1", "ts", "s", ["hello"])
    body["messages"][0]["timestamp"] = marker
    with client(srv) as http:
        r = http.post("/add", json=body)
        now = http.post("/search", json=search_body("hello", "ts", now="Tuesday 8 May 2024 leak"))
    assert r.status_code == 422 and now.status_code == 422
    for reply in (r, now):
        assert "secret" not in reply.text and "leak" not in reply.text, reply.text
        assert reply.json()["detail"]["errors"][0]["field"] in {"messages[0].timestamp", "now"}


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedServer]:
    tmp = tmp_path_factory.mktemp("tight-hostile")
    with running(tmp, "--threads", "1", "--max-in-flight", "2", "--search-workers", "0") as server:
        yield server


def test_shed_requests_always_get_a_status_even_mid_body(tight: SpawnedServer) -> None:
    """Overload with clients that close after each request and send large bodies: every one of them gets
    a status (200 or 503 with Retry-After), none a reset connection."""
    n = 32
    barrier = threading.Barrier(n)
    texts = [f"overload word{i} " * 400 for i in range(40)]  # ~600 KB per add

    def one(i: int) -> int | str:
        body = add_body(f"over-{i}", "over", f"s{i}", texts)
        with httpx.Client(base_url=tight.url, timeout=60, headers={"connection": "close"}) as http:
            barrier.wait()
            try:
                r = http.post("/add", json=body)
            except httpx.TransportError as exc:
                return type(exc).__name__
            if r.status_code == 503:
                assert r.headers["retry-after"] and r.json()["detail"]["reason"]
            return r.status_code

    with ThreadPoolExecutor(n) as pool:
        outcomes = list(pool.map(one, range(n)))
    assert all(isinstance(o, int) for o in outcomes), outcomes
    assert set(outcomes) == {200, 503}, outcomes
    with client(tight) as http:
        assert count(http) == 40 * outcomes.count(200)


def test_a_client_that_leaves_mid_body_frees_its_place(tight: SpawnedServer) -> None:
    socks = [_connect(tight, _headers_without_body(tight)) for _ in range(8)]
    for sock in socks:
        sock.close()
    with client(tight) as http:
        assert http.get("/v1/stats").status_code == 200


def test_the_read_timeout_is_a_setting_and_checked(tmp_path: Path) -> None:
    from refind.server import ServerConfig

    assert ServerConfig.build().read_timeout_s == 30
    with pytest.raises(Exception, match="read_timeout_s"):
        ServerConfig.build(read_timeout_s=0)


@pytest.fixture
def busy(tmp_path: Path) -> Iterator[SpawnedServer]:
    """One place in flight, taken for several seconds by the first search (it waits for the search
    worker's warm-up)."""
    args = ["--max-in-flight", "1", "--search-workers", "1", "--warm-up", "6"]
    with running(tmp_path, *args) as server:
        yield server


def test_over_capacity_the_answer_comes_after_the_whole_request(busy: SpawnedServer) -> None:
    """A shed request is read to its end before its 503: a client still writing its body never meets an
    answer and a closed connection (which many HTTP clients report as a reset, with no status)."""
    holder = threading.Thread(
        target=lambda: httpx.post(f"{busy.url}/search", json=search_body("anything", "u"), timeout=120)
    )
    holder.start()
    try:
        time.sleep(1.0)  # the search holds the one place until the worker has warmed up
        body = json.dumps(add_body("late-1", "u", "s", ["x" * 200_000])).encode()
        head = (
            "POST /add HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        sock = _connect(busy, head + body[: len(body) // 2])
        try:
            time.sleep(0.5)
            sock.settimeout(0.5)
            with pytest.raises(TimeoutError):
                sock.recv(1)  # no answer while the body is still coming
            sock.sendall(body[len(body) // 2 :])
            status, reply = _status_and_json(_response(sock))
        finally:
            sock.close()
        assert status == 503, reply
        assert "capacity" in reply["detail"]["reason"] and "nothing was stored" in reply["detail"]["reason"]
    finally:
        holder.join(timeout=120)


def test_retention_counts_from_the_first_acknowledgement_not_from_a_retry(tmp_path: Path) -> None:
    """docs/service.md: a retry acknowledged as a duplicate writes nothing, so it does not restart the
    retention clock; the data goes a window after its first acknowledgement."""
    window = 10.0
    with (
        running(tmp_path, "--retention-days", str(window / 86_400), "--retention-interval", "0.2") as server,
        client(server) as http,
    ):
        assert http.post("/search", json=search_body("warm up", "nobody")).status_code == 200
        body = add_body("kept-1", "ret", "s", ["the ferry timetable for the islands"])
        first = time.monotonic()
        assert http.post("/add", json=body).status_code == 200
        time.sleep(window / 2)
        assert http.post("/add", json=body).status_code == 200  # the platform's retry: a duplicate
        assert count(http) == 1
        while count(http) > 0 and time.monotonic() - first < window * 1.4:
            time.sleep(0.1)
        gone_after = time.monotonic() - first
        # gone about one window after the first add; a clock restarted by the retry would keep it 1.5 windows
        assert count(http) == 0 and gone_after < window * 1.4, gone_after
