"""``python -m benchmarks load``: latency and throughput of the HTTP service under concurrent clients.

    python -m benchmarks load --spawn --clients 16 --requests 800 --out out/load
    python -m benchmarks load --url http://127.0.0.1:8000 --clients 16 --requests 800 --out out/load

Phases, each with ``--clients`` threads in a closed loop (a client sends its next request when the last
one answered), one keep-alive connection per client:

0. with ``--warmup S``: S seconds of adds and searches, not timed, so every JVM's JIT has compiled both
   paths first (steady state; without it the first phases measure a cold server).
1. ``add``: ``--requests`` Add requests of 20 messages of realistic chat text (the ``perf`` generator),
   each client writing its own user and sessions.
2. corpus: one LoCoMo dev conversation (``--conversation``) is added through ``/add`` in chunks of at most
   20 messages or 2,000 words, as the leaderboard sends it (not timed).
3. ``search``: ``--requests`` Search requests (``top_k=100``, the formal value) cycling over that
   conversation's questions; ``search_beside_idle_connections`` the same beside ``--idle-connections``
   (64) hostile connections that send an Add's headers and never its body (``idle_search_p50_ratio``
   compares the two p50s); ``search_beside_largest_query`` the same with ``--clients - 1`` clients
   while one more client sends the largest query the service accepts (``max_query_chars`` characters)
   again and again (compare its ``others.p50_ms`` with ``search.p50_ms``); ``search_1_client`` the
   questions with one client (no queueing).
4. ``mixed``: half the clients add while the other half search (searches served while adding).

Reported per phase: p50/p95/mean/max latency in ms, requests per second, and errors (any status but 200,
or a transport error). Loopback only: a non-loopback ``--url`` is refused. ``--spawn`` starts a server of
its own on a temporary index (``--threads``/``--max-in-flight`` go to it) and removes it afterwards; with
``--url`` the users written are deleted at the end. Every phase stops issuing requests after
``--max-seconds``. Writes ``OUT/load.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.adapters.http import (
    SpawnedServer,
    auth_headers,
    chunk_messages,
    is_loopback_url,
    session_messages,
)
from benchmarks.metrics import percentile

__all__ = ["main", "run"]

_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LOCOMO = _ROOT.parent / "shared" / "data" / "locomo10_dev.json"
MESSAGES_PER_ADD = 20


@dataclass
class _Phase:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    samples: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, ms: float, error: str | None) -> None:
        with self.lock:
            if error is None:
                self.latencies.append(ms)
            else:
                self.errors += 1
                if len(self.samples) < 5:
                    self.samples.append(error)

    def summary(self, wall_s: float, clients: int) -> dict[str, Any]:
        lat = self.latencies
        n = len(lat) + self.errors

        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 2)

        return {
            "clients": clients,
            "requests": n,
            "ok": len(lat),
            "errors": self.errors,
            "error_samples": self.samples,
            "p50_ms": r(percentile(lat, 50)),
            "p95_ms": r(percentile(lat, 95)),
            "mean_ms": r(sum(lat) / len(lat)) if lat else None,
            "max_ms": r(max(lat)) if lat else None,
            "wall_s": round(wall_s, 3),
            "throughput_rps": round(n / wall_s, 1) if wall_s > 0 else None,
        }


class _IdleConnections:
    """``n`` hostile connections held open for the duration of a ``with``: each sends the headers of an Add
    with ``Content-Length: 100`` and never the body; one the server closes (its 408 after
    ``--read-timeout``) is opened again at once, so ``n`` are always waiting."""

    def __init__(self, url: str, n: int) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.head = (
            f"POST /add HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n"
        ).encode()
        self.n = n
        self.reopened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._hold, name="idle-connections", daemon=True)

    def _open(self) -> Any:
        import socket

        sock = socket.create_connection(self.address, timeout=10)
        sock.sendall(self.head)
        sock.setblocking(False)
        return sock

    def _hold(self) -> None:
        import select

        socks = [self._open() for _ in range(self.n)]
        self._ready.set()
        while not self._stop.is_set():
            readable, _, _ = select.select(socks, [], [], 0.2)
            for sock in readable:  # an answer (408) or a close: open another in its place
                socks.remove(sock)
                sock.close()
                socks.append(self._open())
                self.reopened += 1
        for sock in socks:
            sock.close()

    def __enter__(self) -> _IdleConnections:
        self._ready = threading.Event()
        self._thread.start()
        self._ready.wait(30)
        time.sleep(0.5)  # the server has accepted them all
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


def _drive(
    make_client: Callable[[], Any],
    clients: int,
    jobs: Iterator[tuple[str, dict[str, Any]]],
    max_seconds: float,
    phase: _Phase,
) -> float:
    """Run ``jobs`` (path, body) on ``clients`` threads until exhausted or ``max_seconds``; wall time."""
    lock = threading.Lock()
    deadline = time.monotonic() + max_seconds

    def worker() -> None:
        with make_client() as client:
            while time.monotonic() < deadline:
                with lock:
                    job = next(jobs, None)
                if job is None:
                    return
                path, body = job
                t0 = time.perf_counter()
                try:
                    resp = client.post(path, json=body)
                    error = None if resp.status_code == 200 else f"HTTP {resp.status_code}: {resp.text[:200]}"
                except Exception as exc:  # a transport error counts, then the client goes on
                    error = f"{type(exc).__name__}: {exc}"[:200]
                phase.record((time.perf_counter() - t0) * 1000.0, error)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def _add_jobs(run_id: str, clients: int, requests: int, seed: int) -> Iterator[tuple[str, dict[str, Any]]]:
    from benchmarks.corpus import corpus

    messages = (m for log in corpus(requests * MESSAGES_PER_ADD, 1, seed) for m in log.messages)
    for i in range(requests):
        batch = list(itertools.islice(messages, MESSAGES_PER_ADD))
        yield (
            "/add",
            {
                "request_id": f"{run_id}:add:{i}",
                "user_id": f"{run_id}:user-{i % clients}",
                "session_id": f"s{i // clients // 5}",  # a session grows over a few adds, as in a chat
                "messages": [{"role": m.role, "content": m.content, "timestamp": m.timestamp} for m in batch],
            },
        )


def _search_jobs(user: str, questions: list[str], requests: int) -> Iterator[tuple[str, dict[str, Any]]]:
    for i in range(requests):
        yield "/search", {"query": questions[i % len(questions)], "user_id": user, "top_k": 100}


def _largest_query(sessions: list[Any], limit: int) -> str:
    """A query of exactly ``limit`` characters of the conversation's own words (all distinct where it has
    enough): the most a search accepts, and the most it can cost."""
    words = list(
        dict.fromkeys(w for s in sessions for m in session_messages(s) for w in str(m["content"]).split())
    )
    text = ""
    i = 0
    while len(text) < limit and words:
        text += words[i % len(words)] + " "
        i += 1
    return text[:limit]


def _beside_largest_query(
    make_client: Callable[[], Any],
    clients: int,
    user: str,
    questions: list[str],
    sessions: list[Any],
    requests: int,
    max_seconds: float,
) -> dict[str, Any]:
    """``clients - 1`` clients search as in ``search`` while one more sends the largest query the service
    accepts (``max_query_chars``), over and over until they are done: how much one client sending the
    costliest accepted request slows everyone else. Compare ``others.p50_ms`` with ``search.p50_ms``."""
    import refind

    limit = refind.Settings.from_env().max_query_chars
    largest = _largest_query(sessions, limit)
    done = threading.Event()

    def heavy_jobs() -> Iterator[tuple[str, dict[str, Any]]]:
        while not done.is_set():
            yield "/search", {"query": largest, "user_id": user, "top_k": 100}

    others, heavy = _Phase(), _Phase()
    walls: dict[str, float] = {}

    def run_others() -> None:
        try:
            n = max(clients - 1, 1)
            walls["others"] = _drive(
                make_client, n, _search_jobs(user, questions, requests), max_seconds, others
            )
        finally:
            done.set()

    threads = [
        threading.Thread(target=run_others),
        threading.Thread(
            target=lambda: walls.__setitem__(
                "heavy", _drive(make_client, 1, heavy_jobs(), max_seconds, heavy)
            )
        ),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "largest_query_chars": len(largest),
        "others": {"top_k": 100, **others.summary(walls["others"], max(clients - 1, 1))},
        "largest_query_client": {"top_k": 100, **heavy.summary(walls["heavy"], 1)},
    }


def _load_conversation(path: Path, index: int) -> tuple[str, list[Any], list[str]]:
    from benchmarks.catalog import load_dataset

    ds = load_dataset("locomo", path)
    keys = list(dict.fromkeys(q.haystack for q in ds.questions))
    if not 0 <= index < len(keys):
        raise SystemExit(f"benchmarks load: --conversation must be between 0 and {len(keys) - 1}")
    key = keys[index]
    ((_, sessions),) = list(ds.haystacks({key}))
    return key, sessions, [q.text for q in ds.questions if q.haystack == key]


def run(
    url: str,
    *,
    clients: int,
    requests: int,
    headers: dict[str, str],
    locomo: Path,
    conversation: int = 0,
    max_seconds: float = 300.0,
    seed: int = 7,
    warmup: float = 0.0,
    idle_connections: int = 64,
) -> dict[str, Any]:
    """All phases against ``url``; returns the report (also what ``load.json`` holds)."""
    import httpx

    run_id = f"load-{uuid.uuid4().hex[:8]}"
    users: list[str] = [f"{run_id}:user-{i}" for i in range(clients)]

    def make_client() -> httpx.Client:
        return httpx.Client(base_url=url, headers=headers, timeout=httpx.Timeout(120.0, connect=10.0))

    report: dict[str, Any] = {
        "url": url,
        "clients": clients,
        "requests": requests,
        "loadavg_before": [round(x, 2) for x in os.getloadavg()],  # other work on the machine skews it all
    }
    try:
        key, sessions, questions = _load_conversation(locomo, conversation)
        corpus_user = f"{run_id}:{key}"
        users.append(corpus_user)
        n_messages = 0
        t0 = time.perf_counter()
        with make_client() as client:
            for s in sessions:
                for n, chunk in enumerate(chunk_messages(session_messages(s))):
                    body = {
                        "request_id": f"{corpus_user}:{s.id}:{n}",
                        "user_id": corpus_user,
                        "session_id": s.id,
                        "messages": chunk,
                    }
                    resp = client.post("/add", json=body)
                    if resp.status_code != 200:
                        raise SystemExit(f"benchmarks load: corpus add failed: HTTP {resp.status_code}")
                    n_messages += len(chunk)
        report["corpus"] = {
            "conversation": key,
            "sessions": len(sessions),
            "messages": n_messages,
            "questions": len(questions),
            "load_s": round(time.perf_counter() - t0, 2),
            "source": str(locomo),
        }

        if warmup > 0:  # steady state: the JVMs' JIT compilers warm up on both paths first, untimed
            t0 = time.perf_counter()
            warm_users = [f"{run_id}:warm-{i}" for i in range(max(1, clients // 2))]
            users.extend(warm_users)
            wall_add, wall_search = _Phase(), _Phase()
            side = [
                threading.Thread(
                    target=_drive,
                    args=(make_client, max(1, clients // 2), _add_jobs(f"{run_id}:warm", max(1, clients // 2), 100_000, seed + 2), warmup, wall_add),
                ),
                threading.Thread(
                    target=_drive,
                    args=(make_client, max(1, clients - clients // 2), _search_jobs(corpus_user, questions, 1_000_000), warmup, wall_search),
                ),
            ]  # fmt: skip
            for t in side:
                t.start()
            for t in side:
                t.join()
            report["warmup"] = {
                "seconds": round(time.perf_counter() - t0, 1),
                "adds": len(wall_add.latencies),
                "searches": len(wall_search.latencies),
                "errors": wall_add.errors + wall_search.errors,
            }

        phase = _Phase()
        wall = _drive(make_client, clients, _add_jobs(run_id, clients, requests, seed), max_seconds, phase)
        report["add"] = {"messages_per_request": MESSAGES_PER_ADD, **phase.summary(wall, clients)}

        if warmup > 0:  # the adds merged segments: let the searchers settle again before comparing
            _drive(
                make_client, clients, _search_jobs(corpus_user, questions, 1_000_000), warmup / 4, _Phase()
            )

        # one client, then many, back to back under the same conditions: the throughput ratio is the
        # figure of merit (searches in parallel on the cores)
        phase = _Phase()
        n_single = min(requests, len(questions))
        wall = _drive(make_client, 1, _search_jobs(corpus_user, questions, n_single), max_seconds, phase)
        report["search_1_client"] = {"top_k": 100, **phase.summary(wall, 1)}

        phase = _Phase()
        wall = _drive(
            make_client, clients, _search_jobs(corpus_user, questions, requests), max_seconds, phase
        )
        report["search"] = {"top_k": 100, **phase.summary(wall, clients)}
        one, many = report["search_1_client"]["throughput_rps"], report["search"]["throughput_rps"]
        report["search_throughput_ratio"] = round(many / one, 2) if one and many else None

        if idle_connections > 0:  # the same searches beside connections that send headers and no body
            phase = _Phase()
            with _IdleConnections(url, idle_connections) as idle:
                wall = _drive(
                    make_client, clients, _search_jobs(corpus_user, questions, requests), max_seconds, phase
                )
            report["search_beside_idle_connections"] = {
                "top_k": 100,
                "idle_connections": idle_connections,
                "idle_reopened": idle.reopened,
                **phase.summary(wall, clients),
            }
            base, beside = report["search"]["p50_ms"], report["search_beside_idle_connections"]["p50_ms"]
            report["idle_search_p50_ratio"] = round(beside / base, 2) if base and beside else None

        report["search_beside_largest_query"] = _beside_largest_query(
            make_client, clients, corpus_user, questions, sessions, requests, max_seconds
        )

        adders, searchers = max(1, clients // 2), max(1, clients - clients // 2)
        add_phase, search_phase = _Phase(), _Phase()
        mixed_add = _add_jobs(f"{run_id}:mixed", adders, requests // 2, seed + 1)
        users += [f"{run_id}:mixed:user-{i}" for i in range(adders)]
        mixed_search = _search_jobs(corpus_user, questions, requests // 2)
        walls: dict[str, float] = {}
        side = [
            threading.Thread(
                target=lambda: walls.__setitem__(
                    "add", _drive(make_client, adders, mixed_add, max_seconds, add_phase)
                )
            ),
            threading.Thread(
                target=lambda: walls.__setitem__(
                    "search", _drive(make_client, searchers, mixed_search, max_seconds, search_phase)
                )
            ),
        ]
        for t in side:
            t.start()
        for t in side:
            t.join()
        report["mixed"] = {
            "add": {"messages_per_request": MESSAGES_PER_ADD, **add_phase.summary(walls["add"], adders)},
            "search": {"top_k": 100, **search_phase.summary(walls["search"], searchers)},
        }
    finally:
        with make_client() as client:
            for user in users:
                try:
                    client.delete(f"/v1/users/{user}")
                except Exception:  # best effort: the server may be gone
                    break
    report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    report["errors"] = sum(
        p.get("errors", 0)
        for p in (
            report.get("add", {}),
            report.get("search", {}),
            report.get("search_1_client", {}),
            report.get("search_beside_idle_connections", {}),
            *(v for k, v in report.get("search_beside_largest_query", {}).items() if isinstance(v, dict)),
            *report.get("mixed", {}).values(),
        )
    )
    return report


def _environment() -> dict[str, Any]:
    import refind

    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "refind": refind.__version__,
    }


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks load",
        description="Add/Search latency and throughput of a refind HTTP service on loopback (load.json).",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a running service on loopback, e.g. http://127.0.0.1:8000")
    where.add_argument("--spawn", action="store_true", help="start a temporary server on a temporary index")
    p.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    p.add_argument("--requests", type=int, default=400, help="requests per timed phase (default 400)")
    p.add_argument("--max-seconds", type=float, default=300.0, help="time bound per phase (default 300)")
    p.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON for the search corpus")
    p.add_argument("--conversation", type=int, default=0, help="which LoCoMo conversation (default 0)")
    p.add_argument(
        "--auth", choices=["bearer", "token", "x-api-key"], default="bearer", help="--url's scheme"
    )
    p.add_argument(
        "--idle-connections",
        type=int,
        default=64,
        help="connections that send an Add's headers and never its body, held open during the phase "
        "search_beside_idle_connections (compare its p50 with search's: idle_search_p50_ratio); 0: skip it",
    )
    p.add_argument("--threads", type=int, default=None, help="--spawn: the server's thread pool")
    p.add_argument("--max-in-flight", type=int, default=None, help="--spawn: the server's in-flight bound")
    p.add_argument("--search-workers", type=int, default=None, help="--spawn: the server's search processes")
    p.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        help="seconds of untimed adds and searches before the timed phases, so the JVMs' JIT has compiled "
        "both paths (steady state); default 0",
    )
    p.add_argument("--out", type=Path, default=None, help="directory for load.json")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = _parser()
    args = p.parse_args(argv)
    if not 1 <= args.clients <= 256:
        p.error("--clients must be between 1 and 256")
    if not 1 <= args.requests <= 100_000:
        p.error("--requests must be between 1 and 100000")
    if not 0 < args.max_seconds <= 3600:
        p.error("--max-seconds must be in (0, 3600]")
    if args.url and not is_loopback_url(args.url):
        p.error(
            f"--url {args.url}: loopback only (127.0.0.1, ::1, localhost); this tool must not load others"
        )
    if not args.locomo.exists():
        p.error(f"--locomo {args.locomo}: not found")

    server: SpawnedServer | None = None
    tmp: Path | None = None
    try:
        if args.spawn:
            import secrets

            tmp = Path(tempfile.mkdtemp(prefix="refind-load-"))
            key = secrets.token_urlsafe(24)
            extra = ["--auth", "bearer", "--no-access-log", "--log-level", "warning"]
            if args.threads is not None:
                extra += ["--threads", str(args.threads)]
            if args.max_in_flight is not None:
                extra += ["--max-in-flight", str(args.max_in_flight)]
            if args.search_workers is not None:
                extra += ["--search-workers", str(args.search_workers)]
            server = SpawnedServer(tmp / "index", args=extra, api_key=key).start()
            url, headers = server.url, auth_headers(key, "bearer")
        else:
            url, headers = args.url, auth_headers(os.environ.get("REFIND_API_KEY"), args.auth)
        report = run(
            url,
            clients=args.clients,
            requests=args.requests,
            headers=headers,
            locomo=args.locomo,
            conversation=args.conversation,
            max_seconds=args.max_seconds,
            warmup=args.warmup,
            idle_connections=args.idle_connections,
        )
    finally:
        if server is not None:
            server.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    report["server"] = "spawned (temporary index)" if args.spawn else "given --url"
    report["environment"] = _environment()
    report["command"] = "python -m benchmarks load " + shlex.join(argv)
    text = json.dumps(report, indent=2)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "load.json").write_text(text + "\n")
    print(text)
    return 1 if report["errors"] else 0
