"""Loaders on the real shared data, counted against the raw JSON independently."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest

import refind
from refind import loaders as io
from refind.loaders import Skipped


def test_locomo_loader_counts_and_evidence(shared_data: Path) -> None:
    path = shared_data / "locomo10_dev.json"
    raw = json.loads(path.read_text())
    skipped: Counter[str] = Counter()
    logs = list(io.iter_locomo(path, skipped))
    expected_sessions = sum(
        1
        for c in raw
        for k, v in c["conversation"].items()
        if k.count("_") == 1 and k.split("_")[1].isdigit() and v
    )
    expected_turns = sum(
        len(v)
        for c in raw
        for k, v in c["conversation"].items()
        if k.count("_") == 1 and k.split("_")[1].isdigit()
    )
    assert len(logs) == expected_sessions
    assert sum(len(s.messages) for s in logs) + skipped["empty_content"] == expected_turns
    assert {s.user_id for s in logs} == {c["sample_id"] for c in raw}
    first = logs[0]
    assert first.date_text == raw[0]["conversation"]["session_1_date_time"]
    assert first.date == refind.models.to_epoch_ms("2023-05-08T13:56:00Z")  # "1:56 pm on 8 May, 2023"
    assert first.messages[0].id == "D1:1" and first.messages[0].turn == 0
    assert {m.role for s in logs for m in s.messages} == {"user", "assistant"}
    # QA evidence resolves to message ids; the few that do not are counted, not guessed
    ids = {(s.user_id, m.id) for s in logs for m in s.messages}
    evidence = [(c["sample_id"], e) for c in raw for q in c["qa"] for e in q.get("evidence") or []]
    resolved = sum((u, e) in ids for u, e in evidence)
    assert resolved / len(evidence) > 0.99
    assert any(m.content.endswith("]") and "[image: " in m.content for s in logs for m in s.messages)


def test_longmemeval_loader_counts(shared_data: Path) -> None:
    path = shared_data / "longmemeval_s_dev.json.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))
    logs = list(io.iter_longmemeval(path))
    assert len(logs) == sum(len(q["haystack_session_ids"]) for q in raw)
    assert sum(len(s.messages) for s in logs) == sum(
        1 for q in raw for sess in q["haystack_sessions"] for t in sess if t["content"].strip()
    )
    q0 = raw[0]
    first = logs[0]
    assert (first.user_id, first.session_id, first.date_text) == (
        q0["question_id"],
        q0["haystack_session_ids"][0],
        q0["haystack_dates"][0],
    )
    assert first.date == refind.models.to_epoch_ms(q0["haystack_dates"][0].replace("(", "").replace(")", ""))
    # gold answer sessions are among each question's sessions
    by_user: dict[str, set[str]] = {}
    for s in logs:
        by_user.setdefault(s.user_id, set()).add(s.session_id)
    for q in raw:
        assert set(q["answer_session_ids"]) <= by_user[q["question_id"]]


def test_import_is_idempotent_and_windows_follow_dialogue(shared_data: Path, mem: refind.Memory) -> None:
    path = shared_data / "locomo10_dev.json"
    first = mem.import_sessions(io.iter_sessions(path, "locomo"))
    again = mem.import_sessions(io.iter_sessions(path))  # detected format, same ids
    assert first.added == mem.count() and first.replaced == 0
    assert (again.added, again.replaced) == (0, first.added)
    raw = json.loads(path.read_text())
    conv = raw[0]["conversation"]
    user = raw[0]["sample_id"]
    window = mem.window(user, "session_1", 2, 4)
    assert [h.id for h in window] == [t["dia_id"] for t in conv["session_1"][2:5]]
    assert [h.speaker for h in window] == [t["speaker"] for t in conv["session_1"][2:5]]
    assert window[0].time_text == conv["session_1_date_time"]


def test_jsonl_loader(tmp_path: Path, mem: refind.Memory) -> None:
    path = tmp_path / "log.jsonl"
    lines = [
        {
            "user_id": "u1",
            "session_id": "a",
            "role": "user",
            "content": "book the dentist",
            "timestamp": "2024-02-01T09:00:00Z",
        },
        {"user_id": "u1", "session_id": "a", "role": "assistant", "content": "done, Tuesday 10am"},
        {
            "user_id": "u2",
            "session_id": "a",
            "role": "user",
            "content": "other user",
            "timestamp": 1706778000000,
        },
        {
            "user_id": "u1",
            "session_id": "b",
            "role": "user",
            "content": "cancel the dentist",
            "id": "x9",
            "session_time": "2024-02-03",
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    logs = list(io.iter_sessions(path))
    assert [(s.user_id, s.session_id, len(s.messages)) for s in logs] == [
        ("u1", "a", 2),
        ("u2", "a", 1),
        ("u1", "b", 1),
    ]
    result = mem.import_sessions(logs)
    assert (result.added, result.sessions, result.users) == (4, 3, 2)
    assert [h.id for h in mem.query("u1", "dentist")] != []
    assert mem.session("u1", "b")[0].id == "x9"
    assert mem.session("u1", "a")[1].timestamp == mem.session("u1", "a")[0].timestamp


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (
            '{"user_id": "u", "session_id": "s", "role": "user", "content": "ok"}\n{not json\n',
            r"log\.jsonl:2: not valid JSON",
        ),
        ('{"user_id": "u", "session_id": "s", "role": "user"}\n', r"log\.jsonl:1\.content"),
        ('{"session_id": "s", "role": "user", "content": "x"}\n', r"log\.jsonl:1: user_id expected a string"),
        ("[1, 2]\n", r"log\.jsonl:1: expected a JSON object, found a list of 2"),
    ],
)
def test_jsonl_errors_name_the_line_and_are_not_fatal(tmp_path: Path, content: str, pattern: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(content)
    skipped = Skipped()
    logs = list(io.iter_jsonl(path, skipped))
    assert skipped["unreadable_lines"] == 1 and len(skipped.problems) == 1
    assert re.search(pattern, skipped.problems[0]), skipped.problems
    assert [m.content for log_ in logs for m in log_.messages] == (["ok"] if "ok" in content else [])


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(refind.InvalidInput, match="no such file"):
        list(io.iter_locomo(tmp_path / "missing.json"))
    odd = tmp_path / "odd.json"
    odd.write_text('{"hello": 1}')
    with pytest.raises(refind.InvalidInput, match="cannot tell the format"):
        io.detect_format(odd)
    with pytest.raises(refind.InvalidInput, match="format"):
        list(io.iter_sessions(odd, "csv"))  # type: ignore[arg-type]


def test_refind_io_is_the_deprecated_name_of_refind_loaders() -> None:
    import refind.io

    with pytest.warns(DeprecationWarning, match="import iter_locomo from refind.loaders"):
        assert refind.io.iter_locomo is io.iter_locomo
    with pytest.warns(DeprecationWarning):
        from refind.io import import_path
    assert import_path is io.import_path
    with pytest.raises(AttributeError):
        refind.io.no_such_name  # noqa: B018
    assert "iter_sessions" in dir(refind.io)
