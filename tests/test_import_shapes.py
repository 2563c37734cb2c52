"""Import shapes that once broke the embedded engine: one file holding thousands of users (each lookup by
(user, session) pairs used to be one query clause per user, past Lucene's 1,024-clause limit)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

import refind
from refind.cli import main

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
