"""``python -m benchmarks planner`` on real LongMemEval questions through the fake OpenAI server: every
request within the conversation budget, the evidence no larger than what the model was shown plus the
documented remainder, no request the script did not expect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.planner import main


def test_planner_report_on_real_questions(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "planner"
    assert main(["--data", str(shared_data / "longmemeval_s_dev.json.gz"), "--questions", "3",
                 "--conversation-tokens", "2500", "--out", str(out)]) == 0  # fmt: skip
    report = json.loads((out / "planner.json").read_text())
    assert report["questions"] == 3 and report["unexpected_requests"] == 0
    assert report["calls"]["min"] >= 4 and report["calls"]["max"] <= 5
    assert report["largest_request_tokens"]["max"] <= 2500
    for row in report["rows"]:
        assert row["evidence_tokens"] <= row["shown_tokens"] + 500 + 50  # shown + unseen_tokens, packed
        assert row["evidence_blocks"] >= 1


def test_unreadable_data_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data", str(tmp_path / "none.json.gz"), "--out", str(tmp_path / "out")]) == 2
    assert "none.json.gz: no such file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
