"""The embedded engine at scale: one file holding thousands of users (each lookup by (user, session) pairs
used to be one query clause per user, past Lucene's 1,024-clause limit), and the index format that drops
positions (format 4) beside the one that has them (format 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import main
from refind.store._jvm import jclass
from refind.store.lucene import FORMAT_VERSION
from tests.conftest import lucene_reader

USERS = 5_000


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def _many_users(path: Path) -> None:
    """Two sessions of one message each for every user; session and message ids repeat across users, as
    they do in exports that number conversations per person."""
    lines = (
        json.dumps(
            {
                "user_id": f"u{u}",
                "session_id": f"s{s}",
                "id": f"m{s}",
                "role": "user",
                "content": f"note {s} topic t{u}",
            }
        )
        for u in range(USERS)
        for s in range(2)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_a_file_of_5000_users_imports_and_reimports(tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    _many_users(source)
    data = str(tmp_path / "index")
    first = run("--data", data, "import", str(source), "--json")
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert (summary["added"], summary["replaced"], summary["sessions"]) == (2 * USERS, 0, 2 * USERS)
    assert len(summary["users"]) == USERS
    same = run("--data", data, "import", str(source), "--json")  # the file is as imported: nothing read
    assert same.exit_code == 0, same.output
    assert (json.loads(same.stdout)["added"], json.loads(same.stdout)["unchanged"]) == (0, 2 * USERS)
    # --rescan reads it again: every session and id is looked up in the index (the lookups that failed),
    # and each message replaces itself
    again = run("--data", data, "import", str(source), "--rescan", "--json")
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert (summary["added"], summary["replaced"], summary["sessions"]) == (0, 2 * USERS, 2 * USERS)
    with refind.Memory(data, read_only=True) as mem:
        assert mem.stats().messages == 2 * USERS
        hits = mem.keyword_search("topic t4321", user_id="u4321", window=0)
        assert {t.content for block in hits for t in block.turns} == {
            "note 0 topic t4321",
            "note 1 topic t4321",
        }
        assert mem.keyword_search("t4321", user_id="u1234", window=0) == []  # never another user's


def _index_options(path: Path) -> dict[str, str]:
    """How the analyzed fields of the index at ``path`` are indexed, read from Lucene's own field infos."""
    with lucene_reader(path) as reader:
        infos = jclass("org.apache.lucene.index.FieldInfos").getMergedFieldInfos(reader)
        return {f: str(infos.fieldInfo(f).getIndexOptions()) for f in ("contents", "s_contents")}


def _history(m: refind.Memory) -> None:
    m.add("u", "s1", [{"role": "user", "content": "I bought a red kayak at the harbour in Porto"}])
    m.add("u", "s1", [{"role": "assistant", "content": "Kayaks in Porto harbour sound fun"}])
    m.add("u", "s2", [{"role": "user", "content": "The harbour master sold me a kayak paddle"}])


def test_a_format_3_index_keeps_its_positions_and_its_scores(tmp_path: Path) -> None:
    """Format 4 drops positions from the analyzed fields; an index written with them (format 3) is read
    and written as it is (Lucene cannot drop a field's positions in place), with the same BM25 scores."""
    new, old = tmp_path / "new", tmp_path / "old"
    with refind.Memory(new) as m:
        _history(m)
    old.mkdir()
    meta = json.loads((new / "refind.json").read_text())
    assert meta["format"] == FORMAT_VERSION == 4
    (old / "refind.json").write_text(json.dumps({**meta, "format": 3}))  # as refind wrote format 3
    with refind.Memory(old) as m:
        _history(m)
    assert _index_options(new) == {"contents": "DOCS_AND_FREQS", "s_contents": "DOCS_AND_FREQS"}
    positioned = {"contents": "DOCS_AND_FREQS_AND_POSITIONS", "s_contents": "DOCS_AND_FREQS_AND_POSITIONS"}
    assert _index_options(old) == positioned
    with refind.Memory(old) as m:  # reopened for writing: still format 3, still writable
        m.add("u", "s3", [{"role": "user", "content": "one more kayak"}])
        assert m.count("u") == 4
    assert json.loads((old / "refind.json").read_text())["format"] == 3
    assert _index_options(old) == positioned
    with refind.Memory(new) as m:
        m.add("u", "s3", [{"role": "user", "content": "one more kayak"}])
    with refind.Memory(new, read_only=True) as a, refind.Memory(old, read_only=True) as b:
        for words in ("kayak harbour", "porto paddle", "red kayak"):
            assert [(h.id, h.score) for h in a.query("u", words)] == [
                (h.id, h.score) for h in b.query("u", words)
            ]
            assert a.store.query_sessions("u", words) == b.store.query_sessions("u", words)


def test_long_messages_are_imported_in_slices_bounded_by_characters() -> None:
    """What an import holds in flight is bounded by characters, not only by messages: 300 sessions of ten
    10,000-character messages (30M characters) go in slices of at most _SLICE_CHARS characters plus one
    session, every session once and in order."""
    from refind.models import SessionLog
    from refind.store.write import _SLICE_CHARS, _SLICE_MESSAGES, _slices

    text = "kayak " * 1_666 + "tail"  # 10,000 characters
    logs = [
        SessionLog(user_id=f"u{i % 7}", session_id=f"s{i}", messages=[{"role": "user", "content": text}] * 10)
        for i in range(300)
    ]
    slices = list(_slices(logs, _SLICE_MESSAGES))
    sizes = [sum(len(m.content) for _, messages in chunk for m in messages) for chunk in slices]
    assert len(slices) > 1 and max(sizes) <= _SLICE_CHARS + 10 * len(text)
    assert [log_.session_id for chunk in slices for log_, _ in chunk] == [f"s{i}" for i in range(300)]
