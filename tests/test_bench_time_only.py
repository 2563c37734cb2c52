"""The time-only question set: its file checked against the dev data, the loader's rules, and a scored run."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from benchmarks import runner
from benchmarks.catalog import load_dataset
from benchmarks.time_only import load_time_only
from refind.errors import InvalidInput
from refind.query.timeparse import parse_time_range

SET = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "time_only.json"
_WORD = re.compile(r"[a-z]+")
# words that ask about a conversation without naming what it was about
_CHAT_WORDS = set(
    [
        "what",
        "which",
        "how",
        "did",
        "do",
        "does",
        "we",
        "i",
        "me",
        "you",
        "us",
        "our",
        "my",
        "the",
        "a",
        "an",
        "that",
        "this",
        "about",
        "from",
        "in",
        "on",
        "of",
        "over",
        "at",
        "to",
        "up",
        "was",
        "is",
        "go",
        "went",
        "talk",
        "talked",
        "chat",
        "chatted",
        "discuss",
        "discussed",
        "remind",
        "tell",
        "ask",
        "asked",
        "happen",
        "happened",
        "work",
        "worked",
        "catch",
        "look",
        "looked",
        "decide",
        "decided",
        "thing",
    ]
)


def _raw() -> list[dict]:
    return json.loads(SET.read_text())["questions"]


def _day(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_the_set_matches_the_dev_data(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFIND_SHARED_DATA", str(shared_data))
    ds = load_time_only(SET)
    raw = {q["id"]: q for q in _raw()}
    assert len(ds.questions) == len(raw) >= 20 and not ds.skipped  # every question kept, none repaired
    assert Counter(q.bucket for q in ds.questions) == {"locomo": 11, "longmemeval": 7, "beam": 9}
    assert set(Counter(q.type for q in ds.questions)) == {"period", "weak-words"}
    haystacks = dict(ds.haystacks({q.haystack for q in ds.questions}))
    for q in ds.questions:
        item = raw[q.id]
        sessions = {s.id: s for s in haystacks[q.haystack]}
        assert q.now is not None and all(s.date is None or s.date <= q.now for s in sessions.values())
        start, end = (_day(d) for d in item["period"])
        end += 86_400_000 - 1
        inside = [s.id for s in sessions.values() if s.date is not None and start <= s.date <= end]
        assert inside == item["sessions"], q.id  # the period's sessions, as written in the file
        turns = {t: m for s in sessions.values() for t, m in zip(s.turn_ids, s.messages, strict=True)}
        assert q.gold_turns and all(t in turns for t in q.gold_turns)
        assert set(q.gold_sessions) <= set(item["sessions"])
        if q.type == "period":  # every message of the period's sessions
            assert list(q.gold_turns) == [t for sid in item["sessions"] for t in sessions[sid].turn_ids]
        # the cue is a time expression the question holds; the period it names is the file's
        assert item["cue"] in q.text
        assert q.now < _day(item["period"][1]) + 86_400_000 * 60  # a recent period, as asked
        if item["cue"] == "last week":  # the previous calendar week, Monday to Sunday
            today = datetime.fromtimestamp(q.now / 1000, UTC).date()
            monday = today - timedelta(days=today.weekday() + 7)
            assert item["period"] == [monday.isoformat(), (monday + timedelta(days=6)).isoformat()]
            # and the rolling reading (the past 7 days) holds gold turns too
            gold_days = {sessions[sid].date for sid in q.gold_sessions}
            assert any(d is not None and d >= q.now - 7 * 86_400_000 for d in gold_days), q.id
        # besides the cue, a period question names nothing; a weak-words question one or two things
        words = _WORD.findall(q.text.lower().replace(item["cue"].lower(), " "))
        content = [w for w in words if w not in _CHAT_WORDS]
        assert len(content) == 0 if q.type == "period" else 1 <= len(content) <= 2, (q.id, content)
        if q.type == "weak-words":  # literal: every gold turn names the thing; else none does
            stems = [re.compile(rf"\b{w.rstrip('s')}", re.IGNORECASE) for w in content]
            named = [any(x.search(turns[t].content) for x in stems) for t in q.gold_turns]
            assert named == [item["literal"]] * len(named), q.id


def test_the_cues_are_time_expressions(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every question's cue reads as a period with refind's own parser, containing the gold sessions' days
    (the set is written in ordinary English, so this also checks the parser covers what people say)."""
    monkeypatch.setenv("REFIND_SHARED_DATA", str(shared_data))
    ds = load_time_only(SET)
    haystacks = dict(ds.haystacks({q.haystack for q in ds.questions}))
    for q in ds.questions:
        found = parse_time_range(q.text, q.now)
        assert found is not None, q.id
        dates = {s.id: s.date for s in haystacks[q.haystack]}
        assert any(found.start <= dates[sid] <= found.end for sid in q.gold_sessions), q.id  # type: ignore[operator]


def _write(tmp_path: Path, questions: list[dict]) -> Path:
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"data_root": ".", "questions": questions}))
    return path


def _question(**kw: object) -> dict:
    base = {
        "id": "q",
        "question": "What did we talk about yesterday?",
        "kind": "period",
        "dataset": "beam",
        "data": "beam",
        "haystack": "100K/1",
        "now": "2024-03-20T12:00:00Z",
        "gold_turns": ["4"],
    }
    return base | kw


def test_loader_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixture = Path(__file__).parent / "fixtures"  # tests/fixtures/beam: batches on March 1, 20, 21
    monkeypatch.setenv("REFIND_SHARED_DATA", str(fixture))
    path = _write(
        tmp_path,
        [
            _question(id="ok"),
            _question(id="later", gold_turns=["8"]),  # batch 3 (March 21) is after now: not in the history
            _question(id="nowhere", haystack="100K/9"),
            _question(id="weak", kind="weak-words", gold_turns=["0", "4", "0"], now="2024-03-20T09:01:00Z"),
        ],
    )
    ds = load_dataset("time-only", path)
    assert [q.id for q in ds.questions] == ["ok", "weak"]
    assert dict(ds.skipped) == {"unresolved_gold": 1, "unknown_haystack": 1}
    assert ds.notes["gold_ids_unresolved"] == 1
    ok, weak = ds.questions
    assert (ok.type, ok.bucket, ok.gold_sessions, ok.now) == (
        "period",
        "beam",
        ("batch-2",),
        _day("2024-03-20T12:00"),
    )
    assert weak.gold_turns == ("0", "4")
    haystacks = dict(ds.haystacks({ok.haystack, weak.haystack}))
    assert [s.id for s in haystacks[ok.haystack]] == ["batch-1", "batch-2"]  # as of now: batch 3 left out
    assert [s.id for s in haystacks[weak.haystack]] == ["batch-1", "batch-2"]
    assert [m.id for m in haystacks[weak.haystack][1].messages] == ["4", "6"]  # 09:02 is after 09:01
    assert ds.notes["sessions_after_now_dropped"] == 2 and ds.notes["messages_after_now_dropped"] == 1

    for bad, message in [
        ({"questions": "x"}, "list of questions"),
        ({"questions": [_question(now="")]}, "lacks now"),
        ({"questions": [_question(dataset="time-only")]}, "dataset must be one of"),
        ({"questions": [_question(), _question()]}, "unique"),
        ({"questions": [_question(now="someday")]}, "now:"),
    ]:
        path.write_text(json.dumps(bad))
        with pytest.raises(InvalidInput, match=message):
            load_dataset("time-only", path)


def test_scored_run(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness scores the set: the share with evidence and the share whose evidence holds a gold turn,
    overall, per kind and per source dataset (here bm25 only; the figures with refind are in the docs)."""
    monkeypatch.setenv("REFIND_SHARED_DATA", str(shared_data))
    args = ["--dataset", "time-only", "--data", str(SET), "--adapters", "bm25", "--limit", "6"]
    assert runner.main([*args, "--out", str(tmp_path), "--quiet", "--no-plot"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "scores.ndjson").read_text().splitlines()]
    bm25 = summary["adapters"]["bm25"]
    assert summary["dataset"] == "time-only" and bm25["n"] == 6
    assert bm25["nonempty_rate"] == sum(r["nonempty"] for r in rows) / 6
    assert bm25["turn_hit_rate"] == sum(r["turn_hit"] for r in rows) / 6
    assert set(bm25["by_type"]) <= {"period", "weak-words"} and set(bm25["by_bucket"]) == {"locomo"}
    card = (tmp_path / "scorecard.md").read_text()
    assert "| non-empty | holds a gold turn | gold@1000 | gold@2000 | gold@4000 |" in card
    assert "| locomo | `bm25` | 6 |" in card
    assert bm25["packed_hit_at_budget"]["4000"] == sum(r["packed_hit_at_budget"]["4000"] for r in rows) / 6
