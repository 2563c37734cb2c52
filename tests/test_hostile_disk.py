"""A full disk under a real ``refind serve``: on a 40 MiB tmpfs filled up, adds get 503 with Retry-After
that says the outcome is unknown, searches keep working, ``/v1/stats`` counts only what is stored; once the
filesystem is enlarged (``mount -o remount,size=400m``) adds succeed again without a restart, retries of the
503s with their request ids store each add exactly once, and all of it survives a restart.

Needs root (mounting a tmpfs), as this project's CI runs; without it the test fails and says so."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server_helpers import add_body, client, count, running, search_body

pytestmark = pytest.mark.slow  # a small filesystem filled up: make test, not make check

PER_ADD = 5  # messages per add


def _text() -> str:
    """~36 KB of words that do not compress: a few adds fill what is left of the disk."""
    return " ".join(os.urandom(4).hex() for _ in range(4_000))


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.fail(
            f"this test needs to mount a small tmpfs (run the tests as root, as CI does): mount {' '.join(args)}: "
            f"{(done.stderr or done.stdout).strip()}"
        )


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "disk"
    where.mkdir()
    _mount("-t", "tmpfs", "-o", "size=40m", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` but ``leave`` bytes."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with (disk / "filler").open("wb") as fh:
        fh.write(b"\0" * max(0, free - leave))


def test_a_full_disk_heals_without_a_restart_and_loses_or_doubles_nothing(
    small_disk: Path, tmp_path: Path
) -> None:
    index = small_disk / "index"
    args = ["--threads", "2", "--search-workers", "0"]
    acked: dict[str, dict] = {}  # type: ignore[type-arg]
    failed: dict[str, dict] = {}  # type: ignore[type-arg]
    with running(tmp_path, *args, data=index) as server, client(server) as http:
        first = add_body("r-0", "u", "s0", ["the first lighthouse note"] * PER_ADD)
        assert http.post("/add", json=first).status_code == 200
        acked["r-0"] = first
        _fill(small_disk, leave=1 << 20)
        for i in range(1, 60):
            body = add_body(f"r-{i}", "u", f"s{i}", [_text() for _ in range(PER_ADD)])
            r = http.post("/add", json=body)
            assert r.status_code in (200, 503), r.text
            if r.status_code == 200:
                acked[body["request_id"]] = body
                continue
            failed[body["request_id"]] = body
            assert r.headers["retry-after"]
            assert "outcome unknown: retry with the same request_id" in r.json()["detail"]["reason"]
            if len(failed) >= 3:
                break
        assert len(failed) >= 3, "the filled disk never refused an add"
        # reads go on, and the stats count what is stored: the acknowledged adds, nothing of the refused
        assert http.post("/search", json=search_body("first lighthouse note", "u")).status_code == 200
        stored = count(http)
        assert PER_ADD * len(acked) <= stored <= PER_ADD * (len(acked) + len(failed))
        assert stored == PER_ADD * len(acked), "a refused add is counted"

        _mount("-o", "remount,size=400m", str(small_disk))
        # healed without a restart: the next adds succeed (the first may still meet the old writer's failure)
        fresh = [add_body(f"n-{i}", "u", f"n{i}", [f"after the disk grew {i}"] * PER_ADD) for i in range(3)]
        outcomes = [http.post("/add", json=b).status_code for b in fresh]
        assert outcomes[1:] == [200, 200], outcomes
        for b, status in zip(fresh, outcomes, strict=True):
            if status != 200:
                assert http.post("/add", json=b).status_code == 200
            acked[b["request_id"]] = b
        # the platform retries the 503s with their request ids: each is stored once
        for rid, body in failed.items():
            r = http.post("/add", json=body)
            assert r.status_code == 200, r.text
            acked[rid] = body
        assert count(http) == PER_ADD * len(acked)
    with running(tmp_path, *args, data=index) as server, client(server) as http:
        assert count(http) == PER_ADD * len(acked)
        for rid, body in acked.items():  # replaying everything writes nothing new
            assert http.post("/add", json=body).status_code == 200, rid
        assert count(http) == PER_ADD * len(acked)
