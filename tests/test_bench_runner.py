"""``python -m benchmarks run`` end to end: outputs, summary schema, determinism, skips and errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import refind
from benchmarks import __main__ as entry
from benchmarks import adapters as registry
from benchmarks import runner

ADAPTER_KEYS = {
    "precision_at_k",
    "recall_at_k",
    "recall_all_at_k",
    "hit_rate",
    "ndcg_at_k",
    "latency_p50_ms",
    "latency_p95_ms",
    "evidence_tokens_mean",
    "turn_recall_at_budget",
    "packed_turn_recall_at_budget",
    "by_type",
}


@pytest.fixture(autouse=True)
def _no_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _run(
    out: Path, dataset: str, data: Path, *extra: str
) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    rc = runner.main(["--dataset", dataset, "--data", str(data), "--out", str(out), "--quiet", *extra])
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "scores.ndjson").read_text().splitlines()]
    return rc, summary, rows


def _without_latency(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_latency(v) for k, v in value.items() if "latency" not in k and k != "command"}
    if isinstance(value, list):
        return [_without_latency(v) for v in value]
    return value


def test_coding_life_smoke_schema_and_determinism(shared_data: Path, tmp_path: Path) -> None:
    data = shared_data / "coding-agent-life-v1"
    args = ("--adapters", "grep,bm25,refind,refind-llm,vector", "--k", "5")
    rc, summary, rows = _run(tmp_path / "a", "coding-life", data, *args)
    assert rc == 0
    for name in ("scores.ndjson", "summary.json", "scorecard.md", "plot.png"):
        assert (tmp_path / "a" / name).stat().st_size > 0
    assert (tmp_path / "a" / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    assert summary["dataset"] == "coding-life" and summary["k"] == 5 and summary["n_questions"] == 15
    ran = ["grep", "bm25"] + (["refind"] if hasattr(refind.Memory, "search") else [])
    assert list(summary["adapters"]) == ran
    assert set(summary["skipped_adapters"]) == {"refind-llm", "vector"} | (
        set() if "refind" in ran else {"refind"}
    )
    assert summary["skipped_questions"] == {"total": 0, "by_reason": {}}
    for stats in summary["adapters"].values():
        assert set(stats) >= ADAPTER_KEYS
        assert stats["turn_recall_at_budget"] is None  # coding-life has no turn gold
        assert stats["packed_turn_recall_at_budget"] is None
        assert sum(t["n"] for t in stats["by_type"].values()) == 15
        for t in stats["by_type"].values():
            assert set(t) >= ADAPTER_KEYS - {"by_type"}
    grep = summary["adapters"]["grep"]
    assert (round(grep["precision_at_k"], 3), round(grep["recall_at_k"], 3), grep["hit_rate"]) == (
        0.227,
        0.967,
        1.0,
    )
    assert len(rows) == 15 * len(ran) and all(r["status"] == "ok" for r in rows)
    assert [r["adapter"] for r in rows[: len(ran)]] == ran  # question order, then adapter order
    card = (tmp_path / "a" / "scorecard.md").read_text()
    assert "| `grep` | 15 | 0.227 | 0.967 |" in card
    assert "adapter skipped: `vector`" in card

    rc2, summary2, rows2 = _run(tmp_path / "b", "coding-life", data, *args)
    assert rc2 == 0
    assert _without_latency(summary2) == _without_latency(summary)
    assert _without_latency(rows2) == _without_latency(rows)


def test_locomo_smoke_has_turn_budgets(shared_data: Path, tmp_path: Path) -> None:
    rc, summary, rows = _run(
        tmp_path, "locomo", shared_data / "locomo10_dev.json", "--adapters", "grep,bm25", "--limit", "2"
    )
    assert rc == 0 and summary["n_questions"] == 2 and len(rows) == 4
    assert summary["skipped_questions"]["total"] == 4
    for stats in summary["adapters"].values():
        assert set(stats["turn_recall_at_budget"]) == {"1000", "2000", "4000"}
        budgets = [stats["turn_recall_at_budget"][b] for b in ("1000", "2000", "4000")]
        assert budgets == sorted(budgets)  # a larger budget never covers fewer turns
        assert set(stats["packed_turn_recall_at_budget"]) == {"1000", "2000", "4000"}
        assert stats["packed_over_budget"] == 0  # the first-fit packer stays within B
        for t in stats["by_type"].values():
            assert set(t["packed_turn_recall_at_budget"]) == {"1000", "2000", "4000"}
    assert all(r["n_gold_turns"] >= 1 for r in rows)
    for r in rows:
        assert set(r["packed_turn_recall_at_budget"]) == {"1000", "2000", "4000"}
        assert all(r["packed_tokens_at_budget"][b] <= int(b) for b in ("1000", "2000", "4000"))
    card = (tmp_path / "scorecard.md").read_text()
    assert "| turns@1000 | turns@2000 | turns@4000 | packed@1000 | packed@2000 | packed@4000 |" in card
    assert "packed tokens@1000" in card


@pytest.mark.slow
def test_longmemeval_smoke_reports_abstention_apart(shared_data: Path, tmp_path: Path) -> None:
    data = shared_data / "longmemeval_s_dev.json.gz"
    rc, summary, rows = _run(
        tmp_path, "longmemeval", data, "--adapters", "grep,bm25", "--stratify", "1", "--limit", "2"
    )
    assert rc == 0
    assert (summary["n_questions"], summary["n_answerable"], summary["n_abstention"]) == (2, 1, 1)
    for stats in summary["adapters"].values():
        assert stats["n"] == 1 and stats["abstention"]["n"] == 1
    abstention_rows = [r for r in rows if r["abstention"]]
    assert abstention_rows and all(r["recall_at_k"] is None for r in abstention_rows)


def test_adapter_errors_are_recorded_not_dropped(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Broken:
        name = "grep"

        @staticmethod
        def unavailable() -> None:
            return None

        def init(self, sessions, config):
            return None

        def query(self, question, state, k):
            raise RuntimeError("boom")

    monkeypatch.setitem(registry.ADAPTERS, "grep", Broken)
    rc, summary, rows = _run(
        tmp_path, "coding-life", shared_data / "coding-agent-life-v1", "--adapters", "grep", "--no-plot"
    )
    assert rc == 1
    assert summary["adapters"]["grep"]["errors"] == 15 and summary["adapters"]["grep"]["hit_rate"] == 0.0
    assert all(r["status"] == "error" and "boom" in r["error"] for r in rows)


def test_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        runner.main(["--dataset", "locomo", "--data", "x", "--out", str(tmp_path), "--adapters", "nope"])
    assert exc.value.code == 2
    assert (
        runner.main(["--dataset", "locomo", "--data", str(tmp_path / "missing.json"), "--out", str(tmp_path)])
        == 2
    )
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        entry.main(["run", "--help"])
    assert exc.value.code == 0


def test_llm_summary_counts_calls_tokens_and_empty_evidence() -> None:
    from benchmarks.runner import llm_summary

    def row(q: str, adapter: str, items: int, **llm: Any) -> dict[str, Any]:
        return {"question_id": q, "adapter": adapter, "n_items": items, "latency_ms": 1000.0, **llm}

    llm = {"llm_prompt_tokens": 100, "llm_completion_tokens": 10, "llm_fallback": False}
    rows = [
        row("a", "refind", 3),
        row("a", "refind-llm", 3, llm_calls=2, llm_usable=2, **llm),
        row("b", "refind", 2),
        row("b", "refind-llm", 0, llm_calls=2, llm_usable=1, **{**llm, "llm_fallback": True}),
        row("c", "refind", 0),
        row("c", "refind-llm", 0, llm_calls=0, llm_usable=0, **llm),
    ]
    out = llm_summary(rows, ["refind", "refind-llm"])
    assert list(out) == ["refind-llm"]
    s = out["refind-llm"]
    assert (s["questions"], s["calls"], s["usable_tool_call_replies"]) == (3, 4, 3)
    assert s["usable_share"] == 0.75 and s["fallbacks"] == 1
    assert s["prompt_tokens_per_question"] == 100 and s["wall_ms_per_question"] == 1000.0
    assert (s["empty_evidence"], s["empty_where_baseline_not"], s["baseline"]) == (2, 1, "refind")


def test_data_files_are_named_by_their_shortest_unique_path() -> None:
    files = [
        Path("/d/beam/100K/1/chat.json"),
        Path("/d/beam/500K/1/chat.json"),
        Path("/d/beam/100K/1/probing_questions/probing_questions.json"),
        Path("/d/locomo10_dev.json"),
    ]
    assert list(runner._file_names(files).values()) == [
        "100K/1/chat.json",
        "500K/1/chat.json",
        "probing_questions.json",
        "locomo10_dev.json",
    ]


def test_time_budget_scores_only_the_questions_every_adapter_was_asked(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a slow adapter on a clock the test drives: each of its questions costs 10 s, the budget is 15 s, so
    # it is asked two questions (started at 0 and 10 s) and no third one; bm25 was asked all of them first
    clock = [0.0]

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

        perf_counter = staticmethod(__import__("time").perf_counter)

    real = registry.ADAPTERS["grep"]

    class Slow(real):  # type: ignore[misc, valid-type]
        def query(self, question: Any, state: Any, k: int) -> Any:
            clock[0] += 10.0
            return super().query(question, state, k)

    monkeypatch.setitem(registry.ADAPTERS, "grep", Slow)
    monkeypatch.setattr(runner, "time", Clock)
    rc, summary, rows = _run(
        tmp_path,
        "locomo",
        shared_data / "locomo10_dev.json",
        "--adapters",
        "bm25,grep",
        "--limit",
        "5",
        "--time-budget",
        "15",
        "--no-plot",
    )
    assert rc == 0
    assert summary["n_questions"] == 2 and len(rows) == 4
    assert {r["adapter"] for r in rows} == {"bm25", "grep"}
    assert summary["selection"]["time_budget"] == 15 and summary["selection"]["selected"] == 5
    assert "time budget 15 s: 2 of 5 selected asked" in (tmp_path / "scorecard.md").read_text()
