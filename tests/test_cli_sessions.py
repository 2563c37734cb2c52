"""``refind sessions``, ``show``, ``export``, ``delete-session`` and ``search --source`` through click's
CliRunner, in-process, over a real Lucene index of the fixture exports."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import EXIT_ERROR, main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LISBON = "6612f0a1-2222-4c1e-9e0a-000000000002"
CODE_MAIN = "5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f"


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=True)


def flat(text: str) -> str:
    """``text`` with its line wraps undone (rich wraps at the runner's 80 columns)."""
    return " ".join(text.split())


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    logger = logging.getLogger("refind")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


@pytest.fixture
def data(tmp_path: Path) -> str:
    path = str(tmp_path / "index")
    for source in (FIXTURES / "chatgpt" / "conversations.json", FIXTURES / "claude-code"):
        done = run("--data", path, "import", str(source), "--quiet")
        assert done.exit_code == 0, done.output
    return path


def test_sessions_lists_titles_sources_dates_and_pages(data: str) -> None:
    table = run("--data", data, "sessions")
    assert table.exit_code == 0, table.output
    assert "Lisbon in May" in table.stdout and "claude-code" in table.stdout and "chatgpt" in table.stdout
    rows = [json.loads(line) for line in run("--data", data, "sessions", "--json").stdout.splitlines()]
    assert len(rows) == 7 and {r["source"] for r in rows} == {"chatgpt", "claude-code"}
    assert rows[0]["last"] >= rows[-1]["last"]
    page = run("--data", data, "sessions", "--json", "--limit", "2", "--offset", "1")
    assert [json.loads(line) for line in page.stdout.splitlines()] == rows[1:3]
    assert "More sessions follow: --offset 3" in page.stderr
    code = run("--data", data, "sessions", "--json", "--source", "claude-code").stdout.splitlines()
    assert len(code) == 4 and all(
        json.loads(line)["project"] == "/home/maya/projects/weather" for line in code
    )
    assert run("--data", data, "sessions", "--user", "nobody").stdout.strip() == "No sessions."


def test_show_prints_a_whole_session_paged(data: str) -> None:
    shown = run("--data", data, "show", LISBON)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines()[0] == "Lisbon in May"
    assert "4 messages · chatgpt" in shown.stdout and "Where should we stay in Lisbon" in shown.stdout
    body = json.loads(run("--data", data, "show", CODE_MAIN, "--json", "--from", "2", "--limit", "3").stdout)
    assert body["session"]["title"] == "Fix flaky forecast cache test"
    assert [t["turn"] for t in body["turns"]] == [2, 3, 4]
    paged = run("--data", data, "show", CODE_MAIN, "--limit", "3")
    assert "More turns follow: --from 3" in paged.stderr
    missing = run("--data", data, "show", "no-such-session")
    assert missing.exit_code == EXIT_ERROR
    assert (
        missing.stderr.strip()
        == "Error: user 'me' has no session 'no-such-session'; `refind sessions` lists them"
    )


def test_export_then_import_gives_the_same_index(data: str, tmp_path: Path) -> None:
    out = tmp_path / "history.jsonl"
    done = run("--data", data, "export", "-o", str(out))
    assert done.exit_code == 0, done.output
    with refind.Memory(data, read_only=True) as mem:
        total = mem.count("me")
    assert f"Exported {total} messages to" in flat(done.stderr)
    copy = str(tmp_path / "copy")
    back = run("--data", copy, "import", str(out), "--quiet")
    assert back.exit_code == 0, back.output
    with refind.Memory(data, read_only=True) as a, refind.Memory(copy, read_only=True) as b:
        assert a.sessions("me") == b.sessions("me")
        assert all(a.session("me", s.session_id) == b.session("me", s.session_id) for s in a.sessions("me"))
    assert run("--data", data, "export").stdout == out.read_text(encoding="utf-8")  # stdout: the same lines


def test_delete_session_is_confirmed_durable_and_idempotent(data: str) -> None:
    with refind.Memory(data, read_only=True) as mem:
        before = mem.count("me")
    declined = run("--data", data, "delete-session", LISBON, input="n\n")
    assert declined.exit_code == EXIT_ERROR and "Lisbon in May" in flat(declined.stderr)
    with refind.Memory(data, read_only=True) as mem:
        assert len(mem.session("me", LISBON)) == 4
    done = run("--data", data, "delete-session", LISBON, "--yes")
    assert done.exit_code == 0 and f"Deleted session '{LISBON}' of user 'me' (4 messages)." in flat(
        done.stdout
    )
    with refind.Memory(data, read_only=True) as mem:
        assert mem.session("me", LISBON) == [] and mem.count("me") == before - 4
    again = run("--data", data, "delete-session", LISBON, "--yes")
    assert again.exit_code == 0 and "nothing to delete" in flat(again.stdout)


def test_search_defaults_to_me_and_filters_by_source(data: str) -> None:
    found = run("--data", data, "search", "lisbon stroller", "--json")
    assert found.exit_code == 0, found.output
    result = json.loads(found.stdout)
    assert result["user_id"] == "me" and result["evidence"][0]["title"] == "Lisbon in May"
    text = flat(run("--data", data, "search", "lisbon stroller").stdout)
    assert "chatgpt · Lisbon in May" in text
    only_code = json.loads(
        run("--data", data, "search", "lisbon", "--source", "claude-code", "--json").stdout
    )
    assert {e["source"] for e in only_code["evidence"]} <= {"claude-code"}
    nothing = flat(run("--data", data, "search", "zzzz qqqq").stdout)
    assert "Try other words." in nothing and "--now" not in nothing
    assert "or a later --now" in flat(run("--data", data, "search", "zzzz", "--now", "2024-01-01").stdout)


def _examples(command: str) -> list[str]:
    """The example command lines in the help of ``refind COMMAND``, as docs/cli.md shows them."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split(f"## refind {command}\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("Examples:\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("refind ")]


def test_the_examples_in_docs_cli_md_run(data: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REFIND_DATA", data)
    ran = 0
    for command in ("sessions", "show", "export", "delete-session"):
        examples = _examples(command)
        assert examples, command
        for line in examples:
            args = shlex.split(line.split("|", 1)[0])[1:]  # a pipe's left side: what refind prints
            done = run(*args, input="y\n")
            assert done.exit_code == 0, (line, done.output)
            ran += 1
    assert ran >= 10 and (tmp_path / "history.jsonl").is_file()
    with refind.Memory(tmp_path / "copy", read_only=True) as copy:  # the export example read back
        assert copy.count("me") == len((tmp_path / "history.jsonl").read_text(encoding="utf-8").splitlines())


def test_a_block_header_shows_the_date_of_a_later_hit(tmp_path: Path) -> None:
    """A session that starts on Tue 10 Mar and whose hit is on Sat 14 Mar: the header runs from its first
    shown turn's day (Thu 12 Mar, the window) to the hit's, so the hit does not sit under an earlier date
    alone (issue 23)."""
    day = 86_400_000
    start = 1_773_100_800_000  # Tue 10 Mar 2026 00:00 UTC
    texts = ["planning the week", "sure", "groceries on Wednesday", "ok", "the plumber came", "good",
             "Saturday: the marmalade recipe worked", "great"]  # fmt: skip
    msgs = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": t,
            "timestamp": start + (i // 2) * day + 36e5 * 9,
        }
        for i, t in enumerate(texts)
    ]
    msgs[6]["timestamp"] = msgs[7]["timestamp"] = start + 4 * day + 36e5 * 9  # Sat 14 Mar
    with refind.Memory(tmp_path / "index") as mem:
        mem.add("me", "week", msgs)
    done = run("--data", str(tmp_path / "index"), "search", "marmalade recipe")
    assert done.exit_code == 0, done.output
    header = next(line for line in done.stdout.splitlines() if "session week" in line)
    assert header.startswith("Thu 12 Mar 2026, 09:00 UTC - Sat 14 Mar 2026, 09:00 UTC"), header


# ---------------------------------------------------------------------------------------------- issue 38

SUBAGENT = CODE_MAIN + "/agent-3f2e1d0c"
UNTITLED = "9a8b7c6d-0000-4e1f-8a2b-3c4d5e6f7a8b"  # a Claude Code log without a summary line


def test_a_unique_start_of_a_session_id_works_everywhere_and_an_ambiguous_one_lists_them(data: str) -> None:
    shown = run("--data", data, "show", "6612f0a1-2")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines()[0] == "Lisbon in May" and f"session {LISBON}" in flat(shown.stdout)
    ambiguous = run("--data", data, "show", "6612f0a1")
    assert ambiguous.exit_code == EXIT_ERROR and len(ambiguous.stderr.strip().splitlines()) == 1
    message = ambiguous.stderr
    assert "'6612f0a1' is ambiguous: 3 sessions of user 'me' match it" in message, message
    assert all(f"6612f0a1-{n}-4c1e-9e0a-00000000000{n[0]}" in message for n in ("1111", "2222", "3333"))
    by_parts = run("--data", data, "show", "5f0c2d4e/agent-3f", "--json")  # each part of a subagent's id
    assert json.loads(by_parts.stdout)["session"]["session_id"] == SUBAGENT
    assert json.loads(run("--data", data, "show", "5f0c2d4e", "--json").stdout)["session"]["session_id"] == (
        CODE_MAIN
    )
    md = run("--data", data, "export", "--session", "6612f0a1-2", "--format", "md")
    assert md.exit_code == 0 and md.stdout.startswith("# Lisbon in May\n"), md.output
    deleted = run("--data", data, "delete-session", "6612f0a1-1", "--yes")
    assert (
        deleted.exit_code == 0 and "Deleted session '6612f0a1-1111-4c1e-9e0a-000000000001'" in deleted.stdout
    )
    assert run("--data", data, "show", "6612f0a1", "--json").exit_code == EXIT_ERROR  # 2 left: still two


@pytest.mark.parametrize("columns", [80, 100])
def test_sessions_prints_one_line_a_session_its_id_whole_at_any_width(
    data: str, columns: int, child_env: dict[str, str]
) -> None:
    import subprocess
    import sys

    env = {**child_env, "COLUMNS": str(columns)}
    done = subprocess.run(
        [sys.executable, "-m", "refind.cli", "--data", data, "sessions"], env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"})
    rows = [line for line in lines[rule + 1 :] if line.strip()]
    assert len(rows) == 7, done.stdout  # one line each: nothing wrapped
    assert lines[rule - 1].split() == ["session", "title", "source", "dates", "msgs"]
    assert all(len(line) <= columns for line in lines)
    named = set()
    for line in rows:
        short = line.split()[0]
        body = json.loads(run("--data", data, "show", short, "--json").stdout)
        named.add(body["session"]["session_id"])
    with refind.Memory(data, read_only=True) as mem:
        assert named == {s.session_id for s in mem.sessions("me")}  # each shown id names its session


def test_an_untitled_session_is_titled_by_its_first_message_marked_as_derived(data: str) -> None:
    rows = {
        r["session_id"]: r
        for r in map(json.loads, run("--data", data, "sessions", "--json").stdout.split("\n")[:-1])
    }
    assert rows[UNTITLED]["title"] == "Add a --units flag to the CLI (metric or imperial)."
    assert rows[UNTITLED]["title_derived"] is True
    assert rows[LISBON]["title"] == "Lisbon in May" and rows[LISBON]["title_derived"] is False
    assert UNTITLED not in run("--data", data, "sessions").stdout  # a short id, and the quoted title
    assert "“Add a --units flag" in run("--data", data, "sessions").stdout
    assert run("--data", data, "show", UNTITLED).stdout.startswith("“Add a --units flag to the CLI")
    exported = [json.loads(line) for line in run("--data", data, "export").stdout.splitlines()]
    assert not any(r.get("title") for r in exported if r["session_id"] == UNTITLED)  # never stored
    found = flat(run("--data", data, "search", "units flag metric imperial").stdout)
    assert "claude-code · “Add a --units flag to the CLI (metric or imperial).”" in found


def test_an_unknown_source_or_project_is_an_error_that_lists_the_known_ones(data: str) -> None:
    bogus = run("--data", data, "search", "lisbon", "--source", "bogus")
    assert bogus.exit_code == EXIT_ERROR and bogus.stderr.strip() == (
        "Error: source 'bogus': no session has it; the sources of the sessions of user 'me' are: chatgpt, "
        "claude-code"
    )
    cased = run("--data", data, "sessions", "--source", "Claude-Code")
    assert cased.exit_code == EXIT_ERROR and "did you mean 'claude-code'?" in cased.stderr
    project = run("--data", data, "sessions", "--project", "/nowhere")
    assert project.exit_code == EXIT_ERROR
    assert "the projects of the sessions of user 'me' are: /home/maya/projects/weather" in project.stderr


def test_export_as_markdown_reads_as_the_session_and_jsonl_still_round_trips(
    data: str, tmp_path: Path
) -> None:
    out = tmp_path / "lisbon.md"
    done = run("--data", data, "export", "--session", LISBON, "--format", "md", "-o", str(out))
    assert done.exit_code == 0, done.output
    assert "Exported 1 session to" in flat(done.stderr)
    text = out.read_text(encoding="utf-8")
    assert text.startswith(
        "# Lisbon in May\n\n- session: `6612f0a1-2222-4c1e-9e0a-000000000002`\n- user: me\n"
    )
    assert "- source: chatgpt\n" in text and "- messages: 4\n" in text
    assert (
        "\n## user · 2024-05-01 08:00 UTC · turn 0\n\nWhere should we stay in Lisbon for four nights in May?\n"
        in text
    )
    assert text.count("\n## ") == 4
    every = run("--data", data, "export", "--format", "md").stdout
    assert every.count("\n---\n") == 6 and "# “Add a --units flag" in every  # 7 sessions, untitled quoted
    jsonl = run("--data", data, "export", "--session", "6612f0a1-2").stdout.splitlines()
    assert len(jsonl) == 4 and json.loads(jsonl[0])["title"] == "Lisbon in May"
    missing = run(
        "--data", data, "export", "--session", "nope", "--format", "md", "-o", str(tmp_path / "x.md")
    )
    assert missing.exit_code == EXIT_ERROR and not (tmp_path / "x.md").exists()
    assert not list(tmp_path.glob("*.part"))


def test_dates_are_shown_in_the_persons_time_zone(data: str) -> None:
    utc = run("--data", data, "show", LISBON)
    assert "2024-05-01 08:00 UTC" in utc.stdout
    la = run("--data", data, "show", LISBON, env={"TZ": "America/Los_Angeles"})
    assert "2024-05-01 01:00 PDT" in la.stdout and "UTC" not in la.stdout, la.output
    paris = run("--data", data, "--tz", "Europe/Paris", "show", LISBON)
    assert "2024-05-01 10:00 CEST" in paris.stdout
    tokyo = run("--data", data, "show", LISBON, env={"REFIND_TZ": "Asia/Tokyo", "TZ": "America/Los_Angeles"})
    assert "2024-05-01 17:00 JST" in tokyo.stdout  # the setting wins over TZ
    found = flat(run("--data", data, "search", "lisbon stroller", env={"TZ": "America/Los_Angeles"}).stdout)
    assert "Wed 1 May 2024, 01:00 PDT" in found
    tokyo = run("--data", data, "search", "lisbon", "--json", env={"TZ": "Asia/Tokyo"})
    plain = run("--data", data, "search", "lisbon", "--json")
    assert (
        json.loads(tokyo.stdout)["evidence"] == json.loads(plain.stdout)["evidence"]
    )  # stored UTC, as always
    bad = run("--data", data, "--tz", "Mars/Olympus", "show", LISBON)
    assert bad.exit_code == EXIT_ERROR and "time zone 'Mars/Olympus' is unknown" in bad.stderr
    with refind.Memory(data, read_only=True) as mem:  # the library's evidence text stays UTC whatever TZ
        import os

        before = os.environ.get("TZ")
        os.environ["TZ"] = "America/Los_Angeles"
        try:
            text = mem.search("lisbon stroller", "me").to_text()
        finally:
            if before is None:
                del os.environ["TZ"]
            else:
                os.environ["TZ"] = before
    assert "| 1 May 2024, 08:00 UTC | chatgpt | Lisbon in May]" in text
