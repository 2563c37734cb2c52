"""The personal-history importers (ChatGPT, Claude.ai, Claude Code) on hand-written fixtures in the published
formats, and incremental import (``refind.loaders.import_path``) into real Lucene indexes."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refind
from refind import loaders as io
from refind.loaders import sync
from refind.models import to_epoch_ms

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHATGPT = FIXTURES / "chatgpt" / "conversations.json"
CLAUDE = FIXTURES / "claude" / "conversations.json"
CODE_DIR = FIXTURES / "claude-code"
CODE_PROJECT = CODE_DIR / "-home-maya-projects-weather"
MAIN = "5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f"
CODE_LOG = CODE_PROJECT / f"{MAIN}.jsonl"


def ms(seconds: float) -> int:
    return int(round(seconds * 1000))


# ---------------------------------------------------------------------------------------------- ChatGPT


def test_chatgpt_threads_text_markers_and_times() -> None:
    skipped = io.Skipped()
    sessions = list(io.iter_chatgpt(CHATGPT, skipped))
    assert [s.session_id for s in sessions] == [
        "6612f0a1-1111-4c1e-9e0a-000000000001",
        "6612f0a1-2222-4c1e-9e0a-000000000002",
        "6612f0a1-3333-4c1e-9e0a-000000000003",
    ]
    assert [len(s.messages) for s in sessions] == [4, 4, 7]
    assert all(s.user_id == "me" for s in sessions)
    sourdough, lisbon, bills = sessions
    assert sourdough.title == "Sourdough starter smells like nail polish"
    assert sourdough.date == ms(1709390400.123456)
    # text parts joined verbatim; an image part and an attachment as markers
    assert sourdough.messages[1].content == (
        "Not dead, just hungry! An acetone smell means the yeast has run out of food.\n"
        "Feed it twice a day at a 1:1:1 ratio for a few days."
    )
    assert sourdough.messages[2].content == (
        "[image]\nHere it is after two feedings, with a rubber band at the starting level.\n"
        "[file: starter-day3.jpg]"
    )
    assert [m.timestamp for m in sourdough.messages] == [
        ms(1709390401.5),
        ms(1709390410.25),
        ms(1709390700.0),
        ms(1709390712.0),
    ]
    assert sourdough.messages[0].id == "6612f0a1-1111-4c1e-9e0a-000000000001/a1-u1"
    # the thread that ends at current_node: the regenerated answer, not the abandoned branch
    assert [m.id.rsplit("/", 1)[1] for m in lisbon.messages if m.id] == ["b-u1", "b-a1-new", "b-u2", "b-a2"]
    assert lisbon.messages[2].timestamp is None  # no create_time: takes the previous message's on import
    # tools: code verbatim, its output's first lines, a DALL-E call and its image; reasoning left out
    assert [m.role for m in bills.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert bills.messages[0].content.endswith("\n[file: bills-2023.csv]")
    assert bills.messages[1].content.startswith("[code]\nimport pandas as pd\n")
    assert bills.messages[2].content.startswith("[code output]\nmonth       January\nkwh             412")
    assert bills.messages[2].speaker == "python"
    assert bills.messages[5].content.startswith("[to dalle.text2im] {")
    assert bills.messages[6].content == "[image: a cozy cartoon heat pump with a scarf]"
    assert dict(skipped) == {
        "system_messages": 2,
        "hidden_messages": 1,
        "reasoning_and_context_messages": 1,
        "other_branch_messages": 2,
        "empty_messages": 1,
        "empty_conversations": 1,
        "unreadable_conversations": 1,
    }
    assert skipped.problems == [
        f"{CHATGPT}: conversation 3 (id 6612f0a1-4444-4c1e-9e0a-000000000004, 'Broken export entry'): no 'mapping'"
    ]


def test_chatgpt_zip_is_read_like_the_json(tmp_path: Path) -> None:
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(CHATGPT, "conversations.json")
        zf.writestr("chat.html", "<html></html>")
        zf.writestr("user.json", "{}")
    assert io.detect_format(archive) == "chatgpt"
    from_zip = [s.model_dump(exclude={"file"}) for s in io.iter_chatgpt(archive)]
    from_json = [s.model_dump(exclude={"file"}) for s in io.iter_chatgpt(CHATGPT)]
    assert from_zip == from_json


def test_chatgpt_import_search_reimport_and_a_newer_export(tmp_path: Path, mem: refind.Memory) -> None:
    export = tmp_path / "conversations.json"
    shutil.copy(CHATGPT, export)
    first = io.import_path(mem, export)
    assert (first.format, first.sessions, first.added, first.replaced) == ("chatgpt", 3, 15, 0)
    assert first.users == ["me"] and first.unchanged == 0 and first.files == 1
    assert first.skipped["unreadable_conversations"] == 1 and len(first.problems) == 1
    assert Path(first.state or "") == Path(mem.path or "") / sync.STATE_FILE
    assert mem.count("me") == 15
    result = mem.search("why does my sourdough starter smell like acetone?", "me", now="2024-03-10")
    assert "6612f0a1-1111-4c1e-9e0a-000000000001" in {e.session_id for e in result.evidence}
    lisbon = mem.session("me", "6612f0a1-2222-4c1e-9e0a-000000000002")
    assert lisbon[2].timestamp == lisbon[1].timestamp  # the message without create_time

    again = io.import_path(mem, export)  # unchanged file: not even parsed
    assert (again.sessions, again.added, again.replaced, again.unchanged) == (0, 0, 0, 3)
    assert (again.files, again.files_unchanged) == (0, 1)
    os.utime(export, ns=(1, 1))  # same content, another time: parsed, nothing written
    touched = io.import_path(mem, export)
    assert (touched.files, touched.sessions, touched.added, touched.unchanged) == (1, 0, 0, 3)

    # the same account exported a week later: Lisbon grew by one exchange, one conversation is new
    data = json.loads(export.read_text(encoding="utf-8"))
    conv = data[1]
    conv["mapping"]["b-a2"]["children"] = ["b-u3"]
    conv["mapping"]["b-u3"] = {
        "id": "b-u3",
        "parent": "b-a2",
        "children": [],
        "message": {
            "id": "b-u3",
            "author": {"role": "user"},
            "create_time": 1715000000.0,
            "content": {"content_type": "text", "parts": ["We booked the flat on Rua da Rosa."]},
            "metadata": {},
        },
    }
    conv["current_node"] = "b-u3"
    new_conv = json.loads(json.dumps(data[0]))
    new_conv["conversation_id"] = new_conv["id"] = "6612f0a1-6666-4c1e-9e0a-000000000006"
    data.append(new_conv)
    export.write_text(json.dumps(data), encoding="utf-8")
    newer = io.import_path(mem, export)
    assert (newer.sessions, newer.added, newer.replaced, newer.unchanged) == (2, 1 + 4, 0, 2)
    lisbon = mem.session("me", "6612f0a1-2222-4c1e-9e0a-000000000002")
    assert [h.turn for h in lisbon] == [0, 1, 2, 3, 4]  # the new message continues the session's turns
    assert lisbon[-1].content == "We booked the flat on Rua da Rosa."
    assert lisbon[-1].timestamp == ms(1715000000.0)


# ---------------------------------------------------------------------------------------------- Claude.ai


def test_claude_messages_blocks_attachments_and_branches() -> None:
    skipped = io.Skipped()
    sessions = list(io.iter_claude(CLAUDE, skipped))
    assert [(s.session_id, len(s.messages)) for s in sessions] == [
        ("0c1a2b3c-aaaa-4d5e-8f90-000000000001", 3),
        ("0c1a2b3c-bbbb-4d5e-8f90-000000000002", 3),
        ("0c1a2b3c-cccc-4d5e-8f90-000000000003", 3),
    ]
    bike, packing, kitten = sessions
    assert bike.title == "Bike commute: chain keeps slipping" and kitten.title is None
    assert bike.date == to_epoch_ms("2024-09-03T08:15:00.512Z")
    assert [m.role for m in bike.messages] == ["user", "assistant", "user"]
    assert bike.messages[0].timestamp == to_epoch_ms("2024-09-03T08:15:02.118Z")
    assert bike.messages[0].content == (
        "My chain keeps slipping on the smallest cog when I climb. Photo of the derailleur attached.\n"
        "[file: derailleur.jpg]"
    )
    assert bike.messages[2].content == "Here are my maintenance notes.\n[file: bike-log.txt]"
    assert packing.messages[1].content == (
        "[tool web_search: Chamonix weather this weekend]\n"
        "[web_search result]\nSaturday: sunny, 14°C\nSunday: rain from noon\n"
        "Saturday looks sunny, Sunday turns to rain from noon. Here is the script:\n"
        "[artifact: packing_list.py]\n"
        "items = ['rain jacket', 'headlamp', 'water filter']\nfor item in items:\n    print('-', item)"
    )
    assert packing.messages[2].content == "Thanks! Older export entries only have text, like this one."
    # the retried answer: the thread that ends at the newest message
    assert [m.content for m in kitten.messages] == [
        "Name for a grey kitten?",
        "How about Pebble, or Smoky?",
        "Pebble it is.",
    ]
    assert packing.messages[0].id == "0c1a2b3c-bbbb-4d5e-8f90-000000000002/m2-0001"
    assert dict(skipped) == {"thinking_blocks": 1, "other_branch_messages": 1, "unreadable_conversations": 1}
    assert skipped.problems == [
        f"{CLAUDE}: conversation 3 (uuid 0c1a2b3c-dddd-4d5e-8f90-000000000004): no 'chat_messages'"
    ]


def test_claude_import_and_reimport(tmp_path: Path, mem: refind.Memory) -> None:
    archive = tmp_path / "data-2024-12-01.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(CLAUDE, "conversations.json")
        zf.writestr("users.json", "[]")
    first = io.import_path(mem, archive, as_user="maya")
    assert (first.format, first.sessions, first.added, first.users) == ("claude", 3, 9, ["maya"])
    hits = mem.keyword_search("chain cassette wear", "maya")
    assert hits and hits[0].session_id == "0c1a2b3c-aaaa-4d5e-8f90-000000000001"
    again = io.import_path(mem, archive, as_user="maya")
    assert (again.added, again.replaced, again.unchanged, again.files_unchanged) == (0, 0, 3, 1)


# ---------------------------------------------------------------------------------------------- Claude Code


def test_claude_code_directory_sessions_tools_and_sidechains() -> None:
    skipped = io.Skipped()
    sessions = list(io.iter_claude_code(CODE_DIR, skipped))
    assert [(s.session_id, len(s.messages)) for s in sessions] == [
        (MAIN, 13),
        (f"{MAIN}/sidechain", 4),
        ("9a8b7c6d-0000-4e1f-8a2b-3c4d5e6f7a8b", 2),
        (f"{MAIN}/agent-3f2e1d0c", 2),
    ]
    main, side, _, agent = sessions
    assert main.title == "Fix flaky forecast cache test"
    assert main.metadata == {"cwd": "/home/maya/projects/weather", "gitBranch": "main"}
    assert main.date == to_epoch_ms("2025-06-20T09:00:05.120Z")
    contents = [m.content for m in main.messages]
    assert contents[0] == "The test_forecast_cache test fails about one run in five. Can you find out why?"
    assert contents[2] == "[Bash] pytest -q tests/test_cache.py -k forecast --count 5"
    assert contents[3] == (
        "[Bash result]\n..F..\nFAILED tests/test_cache.py::test_forecast_cache - AssertionError: expired entry "
        "returned\n1 failed, 4 passed in 3.21s"
    )
    assert contents[4] == "[Read] /home/maya/projects/weather/weather/cache.py"
    assert contents[5].startswith("[Read result]\n     1\timport time\n") and contents[5].endswith(
        "… (4 more lines)"
    )
    assert contents[6].endswith(
        "I'll switch the cache to time.monotonic().\n[Edit] /home/maya/projects/weather/weather/cache.py"
    )
    assert contents[7] == "[Edit error]\nString to replace not found in file.\nString: time.time()"
    assert contents[9] == "[Task] Find time.time() callers"
    assert contents[11] == "Here is the CI screenshot, it is green now.\n[image]"
    assert [m.role for m in main.messages][:4] == ["user", "assistant", "assistant", "tool"]
    assert main.messages[0].id == f"{MAIN}/u-0002"
    assert main.messages[0].timestamp == to_epoch_ms("2025-06-20T09:00:05.120Z")
    # the subagent's lines logged in the main file are a session of their own
    assert [m.content for m in side.messages][1:3] == [
        "[Grep] time\\.time\\(\\) in weather/",
        "[Grep result]\nweather/cache.py:9\nweather/alerts.py:31",
    ]
    assert agent.messages[1].content.startswith("Three open issues")
    assert dict(skipped) == {
        "meta_lines": 1,
        "thinking_blocks": 1,
        "file-history-snapshot_lines": 1,
        "system_lines": 1,
        "unreadable_lines": 2,
    }
    assert skipped.problems[0].startswith(f"{CODE_LOG}:11: not JSON (")
    assert skipped.problems[1] == f"{CODE_LOG}:23: expected a JSON object, found list"


def _append(path: Path, *records: dict[str, object], partial: str = "") -> None:
    with path.open("a", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
        fh.write(partial)


def _line(kind: str, uuid: str, ts: str, content: object) -> dict[str, object]:
    return {
        "type": kind,
        "uuid": uuid,
        "sessionId": MAIN,
        "timestamp": ts,
        "isSidechain": False,
        "message": {"role": "assistant" if kind == "assistant" else "user", "content": content},
    }


def test_claude_code_growing_log_is_read_once(tmp_path: Path, mem: refind.Memory) -> None:
    logs = tmp_path / "projects" / "-home-maya-projects-weather"
    logs.mkdir(parents=True)
    log = logs / f"{MAIN}.jsonl"
    shutil.copy(CODE_LOG, log)
    first = io.import_path(mem, tmp_path / "projects")
    assert (first.format, first.sessions, first.added, first.files) == ("claude-code", 2, 17, 1)
    assert first.skipped["unreadable_lines"] == 2

    # the agent goes on: a tool call, and half of its result's line (still being written)
    call = _line(
        "assistant",
        "u-0016",
        "2025-06-20T09:03:00.000Z",
        [
            {
                "type": "tool_use",
                "id": "toolu_09",
                "name": "Bash",
                "input": {"command": "git commit -am 'cache: monotonic clock'"},
            }
        ],
    )
    result = _line(
        "user",
        "u-0017",
        "2025-06-20T09:03:01.000Z",
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_09",
                "content": "[main 1a2b3c4] cache: monotonic clock\n 2 files changed",
            }
        ],
    )
    text = json.dumps(result)
    _append(log, call, partial=text[:40])
    grown = io.import_path(mem, tmp_path / "projects")
    assert (grown.sessions, grown.added, grown.replaced) == (1, 1, 0)
    assert grown.skipped == {}  # the old lines were not read again, the half line waits
    with log.open("a", encoding="utf-8") as fh:
        fh.write(text[40:] + "\n")
    done = io.import_path(mem, tmp_path / "projects")
    assert (done.sessions, done.added, done.unchanged) == (1, 1, 1)  # the sidechain is unchanged
    turns = mem.session("me", MAIN)
    assert [h.turn for h in turns] == list(range(15))
    assert turns[-2].content == "[Bash] git commit -am 'cache: monotonic clock'"
    assert turns[-1].content == "[Bash result]\n[main 1a2b3c4] cache: monotonic clock\n 2 files changed"
    assert turns[-1].timestamp == to_epoch_ms("2025-06-20T09:03:01Z")
    unchanged = io.import_path(mem, tmp_path / "projects")
    assert (unchanged.files, unchanged.files_unchanged, unchanged.added, unchanged.unchanged) == (0, 1, 0, 2)

    # a new session file appears beside it
    shutil.copy(CODE_PROJECT / "9a8b7c6d-0000-4e1f-8a2b-3c4d5e6f7a8b.jsonl", logs)
    more = io.import_path(mem, tmp_path / "projects")
    assert (more.files, more.files_unchanged, more.sessions, more.added) == (1, 1, 1, 2)


def test_a_rewritten_log_is_read_whole_and_ids_replace(tmp_path: Path, mem: refind.Memory) -> None:
    log = tmp_path / f"{MAIN}.jsonl"
    shutil.copy(CODE_LOG, log)
    io.import_path(mem, log)
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:5]), encoding="utf-8")  # two messages left: not an append
    again = io.import_path(mem, log)
    # read whole; the session no longer matches its digest, so it is written again: its ids replace
    assert (again.files, again.sessions, again.added, again.replaced) == (1, 1, 0, 2)
    assert mem.count("me") == 17  # nothing duplicated (the index has no way to delete the lines removed)


def test_state_that_no_longer_matches_the_index_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "index"
    with refind.Memory(path) as mem:
        first = io.import_path(mem, CODE_DIR)
        assert first.added == 21
        mem.delete_user("me", tombstone=False)  # gone without a trace, as from a rebuilt index
        again = io.import_path(mem, CODE_DIR)  # the state says all is imported; the index disagrees
        assert (again.added, again.files_unchanged) == (21, 0)
        mem.delete_user("me")  # a person's deletion: read again, and what they deleted left out
        kept_out = io.import_path(mem, CODE_DIR)
        assert (kept_out.added, kept_out.files_unchanged, kept_out.skipped["deleted_sessions"]) == (0, 0, 4)
    shutil.rmtree(path)
    with refind.Memory(path) as mem:  # a new index where the old one was
        assert io.import_path(mem, CODE_DIR).added == 21
        assert mem.count("me") == 21


def test_a_state_path_that_is_a_directory_is_refused_before_anything_is_imported(tmp_path: Path) -> None:
    with refind.Memory(tmp_path / "index") as mem:
        with pytest.raises(refind.InvalidInput, match="is a directory; give the path of a file"):
            io.import_path(mem, CODE_DIR, state=tmp_path)
        assert mem.count() == 0
        assert io.import_path(mem, CODE_DIR, state=tmp_path / "state.json").added == 21
        assert (tmp_path / "state.json").is_file()


def test_in_memory_state_lives_under_xdg_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with refind.Memory.in_memory() as mem:
        first = io.import_path(mem, CLAUDE)
        assert first.state == str(tmp_path / "state" / "refind" / "import-state-memory.json")
        assert Path(first.state).is_file()
        assert io.import_path(mem, CLAUDE).files_unchanged == 1
    with refind.Memory.in_memory() as fresh:  # the state file is there, this index is empty: read again
        assert io.import_path(fresh, CLAUDE).added == 9


def test_rescan_reads_everything_again_and_replaces(mem: refind.Memory) -> None:
    first = io.import_path(mem, CLAUDE)
    again = io.import_path(mem, CLAUDE, rescan=True)
    assert (again.files, again.sessions, again.added, again.replaced) == (1, 3, 0, first.added)


def test_watch_picks_up_new_lines(tmp_path: Path, mem: refind.Memory) -> None:
    log = tmp_path / f"{MAIN}.jsonl"
    shutil.copy(CODE_LOG, log)
    passes = io.watch(mem, tmp_path, interval=0.01)
    assert next(passes).added == 17
    assert next(passes).added == 0
    _append(log, _line("user", "u-0099", "2025-06-20T10:00:00Z", "Thanks, ship it."))
    assert next(passes).added == 1
    assert mem.session("me", MAIN)[-1].content == "Thanks, ship it."


# ---------------------------------------------------------------------------------------------- detection


def test_detect_format_of_each_fixture(tmp_path: Path) -> None:
    assert io.detect_format(CHATGPT) == "chatgpt"
    assert io.detect_format(CHATGPT.parent) == "chatgpt"  # an unpacked export
    assert io.detect_format(CLAUDE) == "claude"
    assert io.detect_format(CODE_DIR) == "claude-code"
    assert io.detect_format(CODE_LOG) == "claude-code"
    assert io.detect_format(FIXTURES.parent.parent / "examples" / "data" / "chat_history.jsonl") == "jsonl"


@pytest.mark.parametrize(
    ("name", "content", "found"),
    [
        ("notes.json", '{"notes": [], "owner": "maya"}', "found JSON, an object with keys notes, owner"),
        ("list.json", '[{"a": 1}]', "found a JSON list of 1 whose first item is an object with keys a"),
        ("notes.txt", "dear diary", "found text that is not JSON (it starts 'dear diary')"),
        ("empty.json", "", "found an empty file"),
        (
            "other.jsonl",
            '{"event": "click"}\n',
            "found JSON Lines whose first record is an object with keys event",
        ),
    ],
)
def test_unknown_files_say_what_was_found(tmp_path: Path, name: str, content: str, found: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(refind.InvalidInput) as info:
        io.detect_format(path)
    message = str(info.value)
    assert found in message and "cannot tell the format" in message
    assert "a ChatGPT export" in message and "Claude Code session logs" in message  # what was expected


def test_archives_and_directories_without_a_history(tmp_path: Path) -> None:
    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("IMG_0001.jpg", b"...")
    with pytest.raises(
        refind.InvalidInput, match=r"a zip archive without conversations.json \(it holds IMG_0001.jpg\)"
    ):
        io.detect_format(archive)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(
        refind.InvalidInput, match="a directory with no .jsonl file and no conversations.json"
    ):
        io.detect_format(empty)


def test_a_malformed_export_says_what_it_expected(tmp_path: Path, mem: refind.Memory) -> None:
    not_a_list = tmp_path / "conversations.json"
    not_a_list.write_text('{"mapping": {}, "create_time": 1}', encoding="utf-8")
    with pytest.raises(
        refind.InvalidInput,
        match=r"expected a ChatGPT export \(a JSON list of conversations.*found an object",
    ):
        list(io.iter_chatgpt(not_a_list))
    # a Claude export read as ChatGPT: no conversation has a tree; the error names the likely format
    with pytest.raises(refind.InvalidInput) as info:
        io.import_path(mem, CLAUDE, "chatgpt")
    message = str(info.value)
    assert "looks like a ChatGPT export but no conversation is readable" in message
    assert "conversation 0 (id" not in message and "conversation 0: no 'mapping'" in message
    assert "looks like a Claude.ai export" in message and "format 'claude'" in message
    assert mem.count() == 0


# ---------------------------------------------------------------------------------------------- properties

_LOG_BYTES = CODE_LOG.read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, len(_LOG_BYTES)), max_size=4))
def test_a_log_read_in_pieces_gives_what_one_read_gives(tmp_path: Path, cuts: list[int]) -> None:
    """However a growing log is cut (mid-line included), reading it piece by piece with the cursor yields
    the messages, sessions and tool names of one whole read, none twice."""
    whole, _ = io.read_claude_code(CODE_LOG)
    expected = [(s.session_id, m.id, m.content, m.timestamp) for s in whole for m in s.messages]
    log = tmp_path / f"{MAIN}.jsonl"
    log.write_bytes(b"")
    cursor = None
    got: list[tuple[str, str | None, str, int | None]] = []
    for end in [*sorted(cuts), len(_LOG_BYTES)]:
        log.write_bytes(_LOG_BYTES[:end])
        sessions, cursor = io.read_claude_code(log, cursor)
        got += [(s.session_id, m.id, m.content, m.timestamp) for s in sessions for m in s.messages]
    assert sorted(got, key=expected.index) == expected and len(got) == len(expected)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "mapping",
                    "current_node",
                    "message",
                    "parent",
                    "children",
                    "content",
                    "parts",
                    "author",
                    "role",
                    "create_time",
                    "id",
                    "conversation_id",
                    "title",
                    "chat_messages",
                    "uuid",
                    "sender",
                    "text",
                    "type",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_json)
def test_exports_of_any_shape_are_read_or_refused_with_invalid_input(tmp_path: Path, data: object) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    for reader in (io.iter_chatgpt, io.iter_claude):
        skipped = io.Skipped()
        try:
            sessions = list(reader(path, skipped))
        except refind.InvalidInput as exc:
            assert str(exc)
            continue
        for s in sessions:
            assert s.messages and all(m.content.strip() for m in s.messages)
