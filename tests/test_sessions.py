"""Sessions as a product: titles, sources and projects kept from the exports, searched, shown and filtered;
a user's sessions listed, one shown, exported and read back, one deleted. Real Lucene indexes in tmp_path,
the hand-written exports in tests/fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import refind
from refind import loaders as io
from refind.loaders import Skipped, iter_jsonl

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHATGPT = FIXTURES / "chatgpt" / "conversations.json"
CLAUDE = FIXTURES / "claude" / "conversations.json"
CODE_DIR = FIXTURES / "claude-code"
SOURDOUGH = "6612f0a1-1111-4c1e-9e0a-000000000001"
BIKE = "0c1a2b3c-aaaa-4d5e-8f90-000000000001"
CODE_MAIN = "5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f"
WEATHER = "/home/maya/projects/weather"


@pytest.fixture
def history(tmp_path: Path) -> refind.Memory:
    """An index holding the three personal exports, as `refind import` writes them."""
    mem = refind.Memory(tmp_path / "index")
    for source in (CHATGPT, CLAUDE, CODE_DIR):
        io.import_path(mem, source)
    yield mem
    mem.close()


def test_importers_keep_title_source_and_project(history: refind.Memory) -> None:
    rows = {s.session_id: s for s in history.sessions("me")}
    assert len(rows) == 10 and sum(s.messages for s in rows.values()) == history.count("me")
    assert (rows[SOURDOUGH].title, rows[SOURDOUGH].source, rows[SOURDOUGH].project) == (
        "Sourdough starter smells like nail polish", "chatgpt", None,
    )  # fmt: skip
    assert (rows[BIKE].title, rows[BIKE].source) == ("Bike commute: chain keeps slipping", "claude")
    code = rows[CODE_MAIN]
    assert (code.title, code.source, code.project) == (
        "Fix flaky forecast cache test",
        "claude-code",
        WEATHER,
    )
    assert {s.source for s in rows.values()} == {"chatgpt", "claude", "claude-code"}
    assert all(s.first <= s.last for s in rows.values())
    listed = history.sessions("me")
    assert [s.last for s in listed] == sorted((s.last for s in listed), reverse=True)  # newest first


def test_evidence_carries_the_session_info_in_json_and_text(history: refind.Memory) -> None:
    result = history.search("why does my sourdough starter smell like acetone?", "me", now="2024-03-10")
    block = next(e for e in result.evidence if e.session_id == SOURDOUGH)
    assert (block.title, block.source) == ("Sourdough starter smells like nail polish", "chatgpt")
    assert json.loads(result.model_dump_json())["evidence"][0]["source"] in {
        "chatgpt",
        "claude",
        "claude-code",
    }
    header = result.to_text().splitlines()[0]
    assert header.startswith(f"[session {SOURDOUGH} | ") and header.endswith(
        " | chatgpt | Sourdough starter smells like nail polish]"
    )
    packed = result.to_text(max_tokens=150)  # the header's words count in the budget, and are shown
    assert "Sourdough starter smells like nail polish" in packed
    blocks = history.keyword_search("sourdough", "me")
    assert blocks and blocks[0].source == "chatgpt"


def test_source_and_project_filter_search_and_listing(history: refind.Memory) -> None:
    question = "what did we change in the test and the script?"
    everything = {e.source for e in history.search(question, "me").evidence}
    assert len(everything) > 1
    for source in ("chatgpt", "claude", "claude-code"):
        found = history.search(question, "me", source=source).evidence
        assert {e.source for e in found} <= {source}
        assert {s.source for s in history.sessions("me", source=source)} == {source}
    coded = history.search("forecast cache", "me", project=WEATHER)
    assert coded.evidence and {e.project for e in coded.evidence} == {WEATHER}
    with pytest.raises(refind.InvalidInput, match="project '/elsewhere': no session has it; the projects of"):
        history.search("forecast cache", "me", project="/elsewhere")
    with pytest.raises(refind.InvalidInput, match="are: chatgpt, claude, claude-code"):
        history.sessions("me", source="nothing-imported-from-here")
    assert {b.source for b in history.keyword_search("the", "me", source="claude")} <= {"claude"}
    with pytest.raises(refind.InvalidInput, match="source: expected a non-empty string"):
        history.search("x", "me", source=" ")


def test_title_words_count_for_the_session() -> None:
    mem = refind.Memory("reference://")
    words = [{"role": "user", "content": "the invoice numbers for the quarter"}]
    for sid in ("a", "b", "c"):
        mem.add("u", sid, words, session_time="2024-01-01", title="Lunch menu" if sid != "b" else None)
    mem.add("u", "b", [{"role": "assistant", "content": "ok"}], title="Quarterly invoice reconciliation")
    plain = refind.Memory("reference://")
    for sid in ("a", "b", "c"):
        plain.add("u", sid, words, session_time="2024-01-01")
        if sid == "b":
            plain.add("u", "b", [{"role": "assistant", "content": "ok"}])
    question = "invoice numbers"
    assert plain.search(question, "u").sessions()[0] == "a"  # without titles: insertion order decides
    assert mem.search(question, "u").sessions()[0] == "b"  # its title holds "invoice"


def test_session_info_given_again_keeps_what_is_left_out() -> None:
    mem = refind.Memory("reference://")
    mem.add("u", "s", [{"role": "user", "content": "hello"}], title="First", source="jsonl", project="/p")
    mem.add("u", "s", [{"role": "user", "content": "again"}], title="Renamed")
    mem.add("u", "s", [{"role": "user", "content": "third"}])
    info = mem.session_info("u", "s")
    assert info is not None and (info.title, info.source, info.project, info.messages) == (
        "Renamed", "jsonl", "/p", 3,
    )  # fmt: skip
    with pytest.raises(refind.InvalidInput, match="title"):
        mem.add("u", "s", [{"role": "user", "content": "x"}], title=5)  # type: ignore[arg-type]
    long = mem.add("u", "t", [{"role": "user", "content": "x"}], title="word " * 300)
    assert long.added == 1 and len(mem.session_info("u", "t").title or "") == refind.models.MAX_TITLE


def test_a_renamed_conversation_is_written_on_the_next_import(tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    data = json.loads(CHATGPT.read_text())
    export.write_text(json.dumps(data))
    with refind.Memory(tmp_path / "index") as mem:
        io.import_path(mem, export)
        for conv in data:
            if conv.get("id") == SOURDOUGH or conv.get("conversation_id") == SOURDOUGH:
                conv["title"] = "Starter rescue"
        export.write_text(json.dumps(data))
        again = io.import_path(mem, export)
        assert again.added == 0 and again.sessions == 1  # only the renamed one, its messages unchanged
        info = mem.session_info("me", SOURDOUGH)
        assert info is not None and info.title == "Starter rescue" and info.messages == 4


def test_sessions_are_paged_and_one_is_shown(history: refind.Memory) -> None:
    listed = history.sessions("me")
    assert history.sessions("me", limit=3) == listed[:3]
    assert history.sessions("me", offset=3, limit=3) == listed[3:6]
    assert history.sessions("me", offset=50) == [] and history.sessions("nobody") == []
    turns = history.session("me", CODE_MAIN)
    assert [t.turn for t in turns] == sorted(t.turn for t in turns) and len(turns) == 13
    assert history.session_info("me", "no-such-session") is None
    with pytest.raises(refind.InvalidInput, match="limit"):
        history.sessions("me", limit=-1)


def test_delete_session_is_durable_idempotent_and_touches_one_session(tmp_path: Path) -> None:
    path = tmp_path / "index"
    with refind.Memory(path) as mem:
        io.import_path(mem, CHATGPT)
        mem.add("other", SOURDOUGH, [{"role": "user", "content": "my own sourdough"}], title="Mine")
        before = mem.count("me")
        assert mem.delete_session("me", SOURDOUGH) == 4
        assert mem.delete_session("me", SOURDOUGH) == 0  # again: nothing left, nothing done
    with refind.Memory(path, read_only=True) as mem:
        assert mem.count("me") == before - 4 and mem.session("me", SOURDOUGH) == []
        assert SOURDOUGH not in {s.session_id for s in mem.sessions("me")}
        assert SOURDOUGH not in mem.search("sourdough starter acetone", "me").sessions()
        assert [s.title for s in mem.sessions("other")] == ["Mine"]  # another user's session of that id


def test_export_reads_back_into_the_same_messages_and_info(history: refind.Memory, tmp_path: Path) -> None:
    out = tmp_path / "export.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for record in history.export():
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    with refind.Memory(tmp_path / "copy") as copy:
        result = io.import_path(copy, out)
        assert result.format == "jsonl" and result.added == history.count("me")
        assert copy.sessions("me") == history.sessions("me")
        for s in history.sessions("me"):
            assert copy.session("me", s.session_id) == history.session("me", s.session_id)
    assert sum(1 for _ in history.export("me")) == history.count("me")
    assert list(history.export("nobody")) == []


def test_a_bad_jsonl_line_is_counted_and_named_and_the_rest_imported(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(
        '{"user_id":"u","session_id":"s","role":"user","content":"a"}\n'
        "not json\n"
        '["a list"]\n'
        '{"user_id":"u","session_id":"s","role":"user","content":""}\n'
        '{"user_id":"","session_id":"s","role":"user","content":"b"}\n'
        '{"user_id":"u","session_id":"s","role":"user","content":"c","title":"Notes"}\n'
    )
    skipped = Skipped()
    logs = list(iter_jsonl(path, skipped))
    assert [m.content for log_ in logs for m in log_.messages] == ["a", "c"]
    assert logs[0].title == "Notes" and logs[0].source is None
    assert skipped["unreadable_lines"] == 4
    lines = [re.match(rf"{re.escape(str(path))}:(\d+)", p) for p in skipped.problems]
    assert [int(m.group(1)) for m in lines if m] == [2, 3, 4, 5]
    with refind.Memory(tmp_path / "index") as mem:
        result = io.import_path(mem, path)
        assert result.added == 2 and result.skipped == {"unreadable_lines": 4} and len(result.problems) == 4


@pytest.mark.slow
def test_import_progress_covers_the_writing() -> None:
    from refind.models import SessionLog

    mem = refind.Memory("reference://")
    logs = [
        SessionLog(
            user_id="u",
            session_id=f"s{i}",
            messages=[{"role": "user", "content": f"message {j} of session {i}"} for j in range(100)],
            title=f"Session {i}",
        )
        for i in range(50)
    ]
    read: list[int] = []
    written: list[int] = []
    result = mem.import_sessions(logs, progress=read.append, written=written.append)
    assert result.added == sum(read) == sum(written) == 5000
    assert len(written) >= 2  # in steps while the slice is indexed, not once at the end
    assert all(n <= 2100 for n in written)
    assert mem.session_info("u", "s49") is not None and mem.session_info("u", "s49").title == "Session 49"
