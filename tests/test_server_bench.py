"""The service from the benchmarks' side: the ``refind-http`` adapter scores what the in-process ``refind``
adapter scores (through the runner), tears its sandbox down (also on Ctrl-C), and ``python -m benchmarks
load`` runs standalone and stays on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import runner
from benchmarks.adapters.http import chunk_messages, is_loopback_url
from tests.server_helpers import ROOT, children, clean_env

pytestmark = pytest.mark.slow  # benchmarks through a spawned service: make test, not make check


def _without_latency(value: Any) -> Any:
    """Everything but latencies and the packed-evidence metrics, which differ by design: refind packs its
    own evidence for a budget (``Memory.search(..., max_tokens=B)``), while the leaderboard sends ``/search`` no
    budget, so refind-http's blocks are packed like a hit list (see ``test_http_adapter_packs_like_a_hit_list``)."""
    if isinstance(value, dict):
        return {
            k: _without_latency(v)
            for k, v in value.items()
            if "latency" not in k and not k.startswith("packed_")
        }
    return value


def _run(tmp: Path, *args: str) -> dict[str, Any]:
    out = tmp / "out"
    code = runner.main([*args, "--adapters", "refind,refind-http", "--out", str(out), "--no-plot", "--quiet"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "scores.ndjson").read_text().splitlines()]
    assert summary["adapters"]["refind-http"]["errors"] == 0
    by_adapter: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_adapter.setdefault(row.pop("adapter"), []).append(_without_latency(row))
    assert by_adapter["refind"] == by_adapter["refind-http"], "per-question scores differ"
    return summary


def _same_numbers(summary: dict[str, Any]) -> None:
    ours, theirs = (_without_latency(summary["adapters"][n]) for n in ("refind", "refind-http"))
    assert ours == theirs


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("REFIND_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("REFIND_DATA", str(tmp_path / "default-data"))
    monkeypatch.setenv("REFIND_EMBEDDER", "off")  # both sides by words (tests/test_meaning.py: by meaning)


def _leftover_sandboxes() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("refind-http-*")}


def test_http_adapter_equals_in_process_on_coding_life(
    shared_data: Path, tmp_path: Path, quiet_env: None
) -> None:
    before = _leftover_sandboxes()
    summary = _run(tmp_path, "--dataset", "coding-life", "--data", str(shared_data / "coding-agent-life-v1"))
    _same_numbers(summary)
    assert summary["adapters"]["refind"]["n"] == 15
    assert _leftover_sandboxes() <= before, "the sandbox is removed after the run"


def test_http_adapter_equals_in_process_on_locomo(shared_data: Path, tmp_path: Path, quiet_env: None) -> None:
    summary = _run(
        tmp_path, "--dataset", "locomo", "--data", str(shared_data / "locomo10_dev.json"), "--limit", "3"
    )
    _same_numbers(summary)


def test_http_adapter_packs_like_a_hit_list(shared_data: Path, tmp_path: Path, quiet_env: None) -> None:
    """The leaderboard sends ``/search`` no budget: refind-http's packed evidence is its blocks in rank order, first fit,
    i.e. what :func:`benchmarks.packing.pack_in_order` makes of the in-process adapter's blocks."""
    from benchmarks import adapters as registry
    from benchmarks import metrics
    from benchmarks.adapters.base import AdapterConfig
    from benchmarks.catalog import load_dataset
    from benchmarks.packing import pack_in_order
    from refind.tokens import count_tokens

    data = shared_data / "locomo10_dev.json"
    out = tmp_path / "out"
    args = ["--dataset", "locomo", "--data", str(data), "--limit", "3", "--adapters", "refind-http"]
    assert runner.main([*args, "--out", str(out), "--no-plot", "--quiet"]) == 0
    rows = [json.loads(line) for line in (out / "scores.ndjson").read_text().splitlines()]
    ds = load_dataset("locomo", data)
    questions = ds.questions[:3]
    assert {q.haystack for q in questions} == {questions[0].haystack}  # one conversation
    sessions = dict(ds.haystacks({q.haystack for q in questions}))
    adapter = registry.create("refind")
    state = adapter.init(sessions[questions[0].haystack], AdapterConfig("locomo", 5, turn_level=True))
    try:
        for q, row in zip(questions, rows, strict=True):
            items = adapter.query(q, state, 5)
            tokens = [count_tokens(i.text) for i in items]
            for b in metrics.BUDGETS:
                packed = pack_in_order(items, tokens, b)
                assert row["packed_tokens_at_budget"][str(b)] == packed.tokens <= b
                assert row["packed_turn_recall_at_budget"][str(b)] == pytest.approx(
                    metrics.packed_turn_recall(packed.turn_ids, q.gold_turns), abs=1e-6
                )
    finally:
        adapter.teardown(state)


@pytest.mark.parametrize("moment", ["starting", "serving"])
def test_http_adapter_sandbox_goes_away_on_ctrl_c(shared_data: Path, tmp_path: Path, moment: str) -> None:

    before = _leftover_sandboxes()
    cmd = [sys.executable, "-m", "benchmarks", "run", "--dataset", "locomo",
           "--data", str(shared_data / "locomo10_dev.json"), "--adapters", "refind-http",
           "--out", str(tmp_path / "out"), "--no-plot", "--quiet"]  # fmt: skip
    env = {**clean_env(tmp_path), "PYTHONPATH": str(ROOT)}
    with (tmp_path / "run.log").open("wb") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        servers: list[int] = []
        while not servers and time.monotonic() < deadline and proc.poll() is None:
            servers = [
                c for c in children(proc.pid) if b"refind.server" in Path(f"/proc/{c}/cmdline").read_bytes()
            ]
            time.sleep(0.02)
        assert servers, "the adapter started no server"
        if moment == "serving":  # the sessions are going in through /add
            sandbox = next(iter(_leftover_sandboxes() - before))
            port_file = Path(tempfile.gettempdir()) / sandbox / "index.server.port"
            while time.monotonic() < deadline and not port_file.exists():
                time.sleep(0.02)
            index = Path(tempfile.gettempdir()) / sandbox / "index"
            while time.monotonic() < deadline:  # an add has been committed: a segment is on disk
                if any(index.glob("*.si")):
                    break
                time.sleep(0.02)
        os.kill(proc.pid, signal.SIGINT)  # the runner only; its adapter must stop the server
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    for pid in servers:
        assert not Path(f"/proc/{pid}").exists(), "the server outlived the run"
    assert _leftover_sandboxes() <= before, "the sandbox directory is removed"


def test_chunks_respect_the_platform_limits() -> None:
    msgs = [{"content": "w " * n} for n in [5] * 45 + [1500, 700, 2500, 3]]
    chunks = list(chunk_messages(msgs))
    assert [len(c) for c in chunks] == [20, 20, 6, 1, 1, 1]
    assert all(
        len(c) <= 20 and (len(c) == 1 or sum(len(m["content"].split()) for m in c) <= 2000) for c in chunks
    )
    assert [m for c in chunks for m in c] == msgs


def test_loopback_urls() -> None:
    assert all(map(is_loopback_url, ["http://127.0.0.1:8000", "http://localhost", "http://[::1]:9"]))
    assert not any(
        map(is_loopback_url, ["http://10.0.0.1", "https://example.com", "http://127.0.0.1.nip.io"])
    )


def test_load_benchmark_runs_standalone(shared_data: Path, tmp_path: Path) -> None:
    env = {**clean_env(tmp_path), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "benchmarks", "load", "--spawn", "--clients", "4", "--requests", "16",
           "--locomo", str(shared_data / "locomo10_dev.json"), "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "load.json").read_text())
    assert report["errors"] == 0
    for phase in (report["add"], report["search"], report["mixed"]["add"], report["mixed"]["search"]):
        assert phase["ok"] == phase["requests"] > 0
        assert 0 < phase["p50_ms"] <= phase["p95_ms"] <= phase["max_ms"]
    assert report["add"]["requests"] == 16 and report["add"]["messages_per_request"] == 20
    assert report["corpus"]["conversation"] == "conv-26" and report["corpus"]["messages"] > 300


def test_load_benchmark_refuses_other_hosts(tmp_path: Path) -> None:
    env = {**clean_env(tmp_path), "PYTHONPATH": str(ROOT)}
    for url in ("http://192.0.2.1:8000", "https://example.com"):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks", "load", "--url", url, "--requests", "1"],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2 and "loopback only" in done.stderr
