"""``python -m benchmarks import --store``: refind's import against ``helpers.bulk``, on the real dev cluster."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from benchmarks.import_speed import main
from benchmarks.import_store import generate_jsonl
from tests.opensearch_helpers import DevCluster


def test_the_file_is_deterministic_and_holds_what_was_asked(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert generate_jsonl(a, 250, 5, 3, seed=1) == 250 == generate_jsonl(b, 250, 5, 3, seed=1)
    assert a.read_bytes() == b.read_bytes()
    rows = [json.loads(line) for line in a.read_text().splitlines()]
    assert len({r["user_id"] for r in rows}) == 5 and len({r["session_id"] for r in rows}) == 15
    assert all(8 <= len(r["content"].split()) <= 40 for r in rows)


def test_a_store_that_is_not_opensearch_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--store", "/some/dir", "--out", str(tmp_path)])
    assert exc.value.code == 2


def test_one_pair_against_the_dev_cluster(opensearch: DevCluster, tmp_path: Path) -> None:
    prefix = f"ib-{uuid.uuid4().hex[:8]}"
    store = f"opensearch://{opensearch.url.split('://', 1)[1]}/{prefix}"
    args = ["--store", store, "--messages", "300", "--users", "3", "--sessions", "2", "--pairs", "1"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "import-store.json").read_text())
    (pair,) = result["pairs"]
    assert pair["refind"]["added"] == pair["refind"]["stored"] == 300  # every message, durable and searchable
    assert pair["bulk"]["added"] == pair["bulk"]["stored"] == 300
    assert result["median_ratio"] == pair["ratio"] > 0
    with opensearch.client() as client:  # the pair's indexes are gone
        assert not client.indices.get(index=f"{prefix}-*", ignore_unavailable=True)
