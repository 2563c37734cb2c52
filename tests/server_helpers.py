"""Helpers for the HTTP service tests: a real ``python -m refind.server`` child on loopback, request bodies."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.adapters.http import SpawnedServer, auth_headers

ROOT = Path(__file__).resolve().parents[1]
T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def clean_env(tmp: Path) -> dict[str, str]:
    """This environment without REFIND_* and OPENAI_* (no inherited surprises); servers search by words, as
    memories in tests do (tests/conftest.py; tests/test_meaning.py turns the model on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REFIND_", "OPENAI_"))}
    env["REFIND_DATA"] = str(tmp / "default-data")
    env["REFIND_EMBEDDER"] = "off"
    return env


@contextmanager
def running(
    tmp: Path,
    *args: str,
    api_key: str | None = None,
    env: dict[str, str] | None = None,
    data: Path | None = None,
) -> Iterator[SpawnedServer]:
    """A server on ``data`` (default ``tmp/index``), stopped on exit whatever happens."""
    server = SpawnedServer(
        data or tmp / "index",
        args=list(args),
        env=env,
        base_env=clean_env(tmp),
        api_key=api_key,
        log_path=tmp / f"server-{os.urandom(3).hex()}.log",
        startup_timeout=90,
    )
    try:
        yield server.start()
    finally:
        server.stop()


def client(server: SpawnedServer, key: str | None = None, scheme: str = "bearer") -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=auth_headers(key, scheme), timeout=60.0)


def messages(*texts: str, ts: int | None = T0, role: str = "user") -> list[dict[str, Any]]:
    out = []
    for i, text in enumerate(texts):
        m: dict[str, Any] = {"role": role if i % 2 == 0 else "assistant", "content": text}
        if ts is not None:
            m["timestamp"] = ts + i * 60_000
        out.append(m)
    return out


def add_body(request_id: str, user: str, session: str, texts: Sequence[str], **kw: Any) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "user_id": user,
        "session_id": session,
        "messages": messages(*texts, **kw),
    }


def search_body(query: str, user: str, top_k: int = 10, **extra: Any) -> dict[str, Any]:
    return {"query": query, "user_id": user, "top_k": top_k, **extra}


def count(c: httpx.Client) -> int:
    """Messages stored (``GET /v1/stats``, with the client's key)."""
    r = c.get("/v1/stats")
    assert r.status_code == 200, r.text
    return int(r.json()["messages"])


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out
