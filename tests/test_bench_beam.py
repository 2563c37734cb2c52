"""BEAM in the harness: the loader on the dev split and on a small hand-made conversation, and a run end to end."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks import runner
from benchmarks.beam import find_conversations, parse_anchor
from benchmarks.catalog import load_dataset
from refind.errors import InvalidInput
from refind.loaders import read_json

FIXTURE = Path(__file__).parent / "fixtures" / "beam"
TYPES = (
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _haystacks(ds: Any) -> dict:
    return dict(ds.haystacks({q.haystack for q in ds.questions}))


def test_dev_split(shared_data: Path) -> None:
    root = shared_data / "beam"
    ds = load_dataset("beam", root)
    assert ds.name == "beam" and ds.turn_level
    assert [f"{d.parent.name}/{d.name}" for d in find_conversations(root)] == [
        "100K/1",
        "100K/2",
        "100K/3",
        "500K/1",
        "500K/2",
        "500K/3",
        "1M/3",
    ]
    # 140 probing questions: 14 abstention, 124 with gold, 2 without (a knowledge_update question with no
    # source_chat_ids, a preference_following one with an empty list)
    assert len(ds.questions) == 138 and dict(ds.skipped) == {"no_gold": 2}
    abstention = [q for q in ds.questions if q.abstention]
    answerable = [q for q in ds.questions if not q.abstention]
    assert len(abstention) == 14 and len(answerable) == 124
    assert all(q.type == "abstention" and q.gold_turns is None and q.gold_sessions == () for q in abstention)
    types = Counter(q.type for q in answerable)
    assert types == {t: 14 for t in TYPES} | {"knowledge_update": 13, "preference_following": 13}
    assert Counter(q.bucket for q in answerable) == {"100K": 54, "500K": 53, "1M": 17}
    assert ds.notes["conversations"] == 7 and ds.notes["batches"] == 49 and ds.notes["messages"] == 4586
    assert ds.notes["gold_ids_unresolved"] == 0 and ds.notes["gold_ids_repeated"] == 8
    assert not any(
        k.startswith(("messages_", "batch_anchor_missing", "batch_anchor_unparsed")) for k in ds.notes
    )

    haystacks = _haystacks(ds)
    assert list(haystacks) == ["100K/1", "100K/2", "100K/3", "500K/1", "500K/2", "500K/3", "1M/3"]
    for key, sessions in haystacks.items():
        chat = read_json(root / key / "chat.json")
        # one session per batch, every message kept with BEAM's id, role and content, in turn order
        assert [s.id for s in sessions] == [f"batch-{b['batch_number']}" for b in chat]
        for s, batch in zip(sessions, chat, strict=True):
            raw = [m for turn in batch["turns"] for m in turn]
            assert [(m.id, m.role, m.content) for m in s.messages] == [
                (str(r["id"]), r["role"], r["content"]) for r in raw
            ]
            assert [m.turn for m in s.messages] == list(range(len(raw)))
            anchor = next(r["time_anchor"] for r in raw if r.get("time_anchor"))
            day = parse_anchor(anchor)
            assert day is not None and s.date_text == datetime.fromtimestamp(day / 1000, UTC).strftime(
                "%Y-%m-%d"
            )
            stamps = [m.timestamp for m in s.messages]
            assert stamps == sorted(set(stamps))  # strictly increasing in turn order
            assert all(day <= t < day + 86_400_000 for t in stamps)  # all on the batch's day
        last_day = max(s.date for s in sessions) // 86_400_000 * 86_400_000
        for q in (q for q in ds.questions if q.haystack == key):
            assert q.now == last_day + 86_400_000 + 12 * 3_600_000  # noon of the day after the last batch
            assert q.id.startswith(f"{key}/{q.type}/")
    for q in answerable:  # every gold id resolves; gold sessions are the batches holding them
        session_of = {t: s.id for s in haystacks[q.haystack] for t in s.turn_ids}
        assert q.gold_turns and all(t in session_of for t in q.gold_turns)
        assert set(q.gold_sessions) == {session_of[t] for t in q.gold_turns}
        assert len(set(q.gold_turns)) == len(q.gold_turns)
    # dict gold is every id of every part: knowledge_update's original and updated statements
    raw = read_json(root / "100K" / "1" / "probing_questions" / "probing_questions.json")
    source = raw["knowledge_update"][0]["source_chat_ids"]
    ku = next(q for q in ds.questions if q.id == "100K/1/knowledge_update/0")
    assert list(ku.gold_turns or ()) == [str(i) for part in source.values() for i in part]


def test_one_bucket_and_one_conversation(shared_data: Path) -> None:
    root = shared_data / "beam"
    bucket = load_dataset("beam", root / "500K")
    assert {q.haystack for q in bucket.questions} == {"500K/1", "500K/2", "500K/3"}
    one = load_dataset("beam", root / "500K" / "2")
    assert {q.haystack for q in one.questions} == {"500K/2"} and len(one.questions) == 20
    full = {q.id: q for q in load_dataset("beam", root).questions}
    assert all(full[q.id] == q for q in one.questions)  # the same questions, whatever folder was passed
    assert [f.relative_to(root / "500K" / "2").as_posix() for f in one.files] == [
        "chat.json",
        "probing_questions/probing_questions.json",
    ]


def test_fixture_rules() -> None:
    ds = load_dataset("beam", FIXTURE)
    assert [q.id for q in ds.questions] == [
        "100K/1/abstention/0",
        "100K/1/information_extraction/0",
        "100K/1/knowledge_update/0",
        "100K/1/instruction_following/0",
        "100K/1/event_ordering/0",
    ]
    # a missing gold id (99) skips its question and is counted; no ids, or no text, skip too
    assert dict(ds.skipped) == {"unresolved_gold": 1, "no_gold": 1, "no_question_text": 1}
    assert ds.notes["gold_ids_unresolved"] == 1
    assert ds.notes["gold_ids_repeated"] == 1  # [0, 1, 1]
    assert ds.notes["messages_empty_content"] == 1  # the blank assistant message 5
    assert ds.notes["batch_anchor_unparsed"] == 1  # "not a date"
    assert (ds.notes["conversations"], ds.notes["batches"], ds.notes["messages"]) == (1, 3, 9)
    q = {x.type: x for x in ds.questions}
    assert q["abstention"].abstention and q["abstention"].gold_turns is None
    assert q["abstention"].answer and "no information" in q["abstention"].answer
    assert q["information_extraction"].gold_turns == ("0", "1")  # a list, the repeat kept once
    assert q["information_extraction"].gold_sessions == ("batch-1",)
    assert q["knowledge_update"].gold_turns == ("2", "6")  # a dict of lists: every part, in order
    assert q["knowledge_update"].gold_sessions == ("batch-1", "batch-2")
    assert q["event_ordering"].gold_turns == ("0", "4", "8")  # a dict whose last part is one id
    assert q["instruction_following"].answer is None
    assert {x.bucket for x in ds.questions} == {"100K"}

    (sessions,) = _haystacks(ds).values()
    assert [s.id for s in sessions] == ["batch-1", "batch-2", "batch-3"]
    assert [s.date_text for s in sessions] == ["2024-03-01", "2024-03-20", "2024-03-21"]  # unparsed: +1 day
    assert [m.id for m in sessions[1].messages] == ["4", "6", "7"]
    assert [m.timestamp for m in sessions[0].messages] == [
        _ms("2024-03-01T09:00:00"),
        _ms("2024-03-01T09:01:00"),
        _ms("2024-03-01T09:02:00"),
        _ms("2024-03-01T09:03:00"),
    ]
    assert all(x.now == _ms("2024-03-22T12:00:00") for x in ds.questions)


def test_fixture_edge_cases(tmp_path: Path) -> None:
    conv = tmp_path / "1M" / "7"
    shutil.copytree(FIXTURE / "100K" / "1", conv)
    chat = json.loads((conv / "chat.json").read_text())
    chat[0]["turns"][0][0].pop("time_anchor")  # a leading batch with no anchor: a day before the next
    chat[1]["turns"][1][0]["id"] = 0  # a repeated id: the later message is dropped
    chat[2]["turns"][0][1].pop("id")  # no id: one is made
    (conv / "chat.json").write_text(json.dumps(chat))
    ds = load_dataset("beam", conv / "chat.json")
    assert ds.notes["batch_anchor_missing"] == 1
    assert ds.notes["duplicate_message_ids"] == 1 and ds.notes["messages_without_id"] == 1
    (sessions,) = _haystacks(ds).values()
    assert [s.date_text for s in sessions] == ["2024-03-19", "2024-03-20", "2024-03-21"]
    assert [m.id for m in sessions[2].messages] == ["8", "b3:1"]
    assert {q.bucket for q in ds.questions} == {"1M"} and ds.questions[0].id.startswith("1M/7/")
    with pytest.raises(InvalidInput, match="no BEAM conversation"):
        load_dataset("beam", tmp_path / "1M" / "7" / "probing_questions")
    (conv / "chat.json").write_text('{"not": "a list"}')
    with pytest.raises(InvalidInput, match="list of batches"):
        load_dataset("beam", conv)


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("March-15-2024", "2024-03-15"),
        ("Mar-15-2024", "2024-03-15"),
        ("March 15, 2024", "2024-03-15"),
        ("2024-03-15", "2024-03-15"),
        ("March-32-2024", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_anchor(text: Any, day: str | None) -> None:
    assert parse_anchor(text) == (None if day is None else _ms(day))


def test_harness_end_to_end_on_one_conversation(shared_data: Path, tmp_path: Path) -> None:
    data = shared_data / "beam" / "100K" / "1"
    args = ["--dataset", "beam", "--data", str(data), "--adapters", "bm25,refind", "--stratify", "1"]
    rc = runner.main([*args, "--out", str(tmp_path), "--quiet", "--no-plot"])
    assert rc == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "scores.ndjson").read_text().splitlines()]
    assert (summary["n_questions"], summary["n_answerable"], summary["n_abstention"]) == (10, 9, 1)
    assert set(summary["data"]["sha256"]) == {"chat.json", "probing_questions.json"}
    assert list(summary["adapters"]) == ["bm25", "refind"]
    for stats in summary["adapters"].values():
        assert set(stats["by_type"]) == set(TYPES) and stats["abstention"]["n"] == 1
        assert set(stats["by_bucket"]) == {"100K"} and stats["by_bucket"]["100K"]["n"] == 9
        for key in ("packed_turn_recall_at_budget", "packed_all_at_budget"):
            assert set(stats[key]) == {"1000", "2000", "4000"}
            assert stats["by_bucket"]["100K"][key] == stats[key]  # one bucket: the same figures
        # all gold inside the packed evidence never exceeds the share of gold packed
        assert all(
            stats["packed_all_at_budget"][b] <= stats["packed_turn_recall_at_budget"][b] for b in ("4000",)
        )
        assert stats["packed_over_budget"] == 0 and stats["errors"] == 0
    for r in rows:
        assert r["bucket"] == "100K"
        if r["abstention"]:
            assert r["packed_all_at_budget"] is None and r["recall_all_at_k"] is None
            continue
        for b in ("1000", "2000", "4000"):
            full = r["packed_turn_recall_at_budget"][b] == 1.0
            assert r["packed_all_at_budget"][b] == (1.0 if full else 0.0)
    card = (tmp_path / "scorecard.md").read_text()
    assert "## By bucket" in card and "| 100K | `refind` | 9 |" in card
    assert "packed@4000 | all@4000 |" in card and "## Evidence that holds a gold turn" in card
