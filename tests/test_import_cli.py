"""``refind import`` on personal histories: detection, the summary of what was skipped and why, errors that
say what was expected and found, and ``--watch`` in a real process."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from refind.cli import EXIT_ERROR, main

from .conftest import ROOT

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MAIN = "5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def test_import_a_chatgpt_export_names_what_it_could_not_read(tmp_path: Path) -> None:
    data = str(tmp_path / "index")
    result = run("--data", data, "import", str(FIXTURES / "chatgpt" / "conversations.json"), "--quiet")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())  # the table wraps at the terminal's width
    assert "conversations.json (chatgpt)" in out
    assert "3 written, 0 unchanged" in out and "15 added, 0 replaced" in out and "1 (me)" in out
    assert "2 other branch messages" in out and re.search(r"\b1 unreadable conversation\b(?!s)", out)
    assert "Could not read:" in out and "conversation 3 (id 6612f0a1-4444-4c1e-9e0a-000000000004" in out
    again = json.loads(run("--data", data, "import", str(FIXTURES / "chatgpt"), "--json").stdout)
    assert (again["format"], again["added"], again["unchanged"]) == ("chatgpt", 0, 3)


def test_import_claude_code_logs_under_a_name(tmp_path: Path) -> None:
    data = str(tmp_path / "index")
    result = run("--data", data, "import", str(FIXTURES / "claude-code"), "--as-user", "maya", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["format"], summary["files"], summary["sessions"], summary["added"]) == (
        "claude-code",
        3,
        4,
        21,
    )
    assert summary["users"] == ["maya"]
    assert summary["skipped"]["unreadable_lines"] == 2 and len(summary["problems"]) == 2


def test_unknown_or_mismatched_files_are_one_line_that_says_what_was_found(tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text('{"notes": []}', encoding="utf-8")
    result = run("--data", str(tmp_path / "index"), "import", str(notes))
    assert result.exit_code == EXIT_ERROR
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "cannot tell the format: found JSON, an object with keys notes" in lines[0]
    assert "a ChatGPT export (conversations.json or the export .zip) (chatgpt)" in lines[0]
    claude = str(FIXTURES / "claude" / "conversations.json")
    result = run("--data", str(tmp_path / "index"), "import", claude, "--format", "chatgpt")
    assert result.exit_code == EXIT_ERROR
    assert "looks like a ChatGPT export but no conversation is readable" in result.stderr
    assert "conversation 0: no 'mapping'" in result.stderr and "format 'claude'" in result.stderr


@pytest.mark.slow
def test_watch_imports_new_lines_of_a_growing_log(tmp_path: Path, child_env: dict[str, str]) -> None:
    logs = tmp_path / "projects"
    logs.mkdir()
    log = logs / f"{MAIN}.jsonl"
    shutil.copy(FIXTURES / "claude-code" / "-home-maya-projects-weather" / log.name, log)
    data = tmp_path / "index"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "refind.cli",
            "--data",
            str(data),
            "import",
            str(logs),
            "--watch",
            "--interval",
            "0.2",
            "--json",
            "--quiet",
        ],
        env=child_env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert (first["format"], first["added"]) == ("claude-code", 17)
        record = {
            "type": "user",
            "uuid": "u-0100",
            "sessionId": MAIN,
            "timestamp": "2025-06-20T11:00:00Z",
            "message": {"role": "user", "content": "One more thing: bump the version to 0.4.1."},
        }
        with log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        deadline = time.monotonic() + 60
        second: dict[str, object] = {}
        while time.monotonic() < deadline and not second:
            second = json.loads(proc.stdout.readline())  # only passes that wrote print
        assert (second["sessions"], second["added"]) == (1, 1)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "Watching" in stderr and "Traceback" not in stderr
    done = subprocess.run(
        [sys.executable, "-m", "refind.cli", "--data", str(data), "stats", "--json"],
        env=child_env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(done.stdout)["per_user"] == {"me": 18}


def test_a_deleted_session_stays_deleted_when_the_same_export_is_imported_again(tmp_path: Path) -> None:
    """Issue 38: a delete stays deleted. delete-session and delete-user record what they deleted (durably,
    beside the index), so importing the same export again leaves it out and says so; `refind stats` counts
    it; --restore undoes it for the next `import --rescan`."""
    data = str(tmp_path / "index")
    export = str(FIXTURES / "chatgpt" / "conversations.json")
    lisbon = "6612f0a1-2222-4c1e-9e0a-000000000002"
    assert run("--data", data, "import", export, "--quiet").exit_code == 0
    deleted = run("--data", data, "delete-session", lisbon, "--yes")
    assert deleted.exit_code == 0, deleted.output
    assert "--restore" in deleted.stdout
    again = json.loads(run("--data", data, "import", export, "--json").stdout)
    assert (again["added"], again["skipped"]["deleted_sessions"]) == (0, 1), again
    table = " ".join(run("--data", data, "import", export, "--rescan").stdout.split())
    assert "1 deleted session" in table
    assert run("--data", data, "show", lisbon).exit_code == EXIT_ERROR  # still gone
    stats = json.loads(run("--data", data, "stats", "--json").stdout)
    assert (stats["messages"], stats["deleted_sessions"], stats["deleted_per_user"]) == (11, 1, {"me": 1})
    assert "1 deleted session that imports leave out" in run("--data", data, "stats").stdout

    restored = run("--data", data, "delete-session", "6612f0a1-2", "--restore")  # a start of the id will do
    assert restored.exit_code == 0 and f"Restored session '{lisbon}'" in restored.stdout
    assert run("--data", data, "delete-session", lisbon, "--restore").exit_code == EXIT_ERROR  # nothing left
    back = json.loads(run("--data", data, "import", export, "--rescan", "--json").stdout)
    assert back["added"] == 4 and "deleted_sessions" not in back["skipped"]
    assert run("--data", data, "show", lisbon).exit_code == 0

    assert run("--data", data, "delete-user", "me", "--yes").exit_code == 0
    gone = json.loads(run("--data", data, "import", export, "--json").stdout)
    assert (gone["added"], gone["skipped"]["deleted_sessions"]) == (0, 3)
    assert json.loads(run("--data", data, "stats", "--json").stdout)["deleted_per_user"] == {"me": 3}
    undo = run("--data", data, "delete-user", "me", "--restore")
    assert undo.exit_code == 0 and "Restored 3 deleted sessions of user 'me'" in undo.stdout
    assert json.loads(run("--data", data, "import", export, "--rescan", "--json").stdout)["added"] == 15
