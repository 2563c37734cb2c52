"""The ``refind`` command against real Lucene indexes in tmp dirs.

Most checks run the CLI in-process with click's CliRunner (the JVM of the test process is reused); the
end-to-end ones (the demo, errors without a traceback, reading beside a writer) run ``python -m refind.cli``
in a subprocess, each with its own JVM, as a user would.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import EXIT_ERROR, EXIT_INTERNAL, EXIT_USAGE, main
from refind.loaders import iter_locomo

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "examples" / "data" / "chat_history.jsonl"
QUESTIONS = json.loads((ROOT / "examples" / "data" / "demo_questions.json").read_text(encoding="utf-8"))
N_MESSAGES = sum(1 for line in HISTORY.read_text(encoding="utf-8").splitlines() if line.strip())


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=True)


def cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``refind ARGS`` in a fresh process (its own JVM)."""
    return subprocess.run(
        [sys.executable, "-m", "refind.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], stderr
    assert "Traceback" not in stderr and "java." not in stderr and "jpype" not in stderr.lower()


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """The CLI sets up the 'refind' logger for its process; undo that for the other tests in this one."""
    logger = logging.getLogger("refind")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An index holding the example history (imported through the CLI), shared by the reading tests."""
    path = tmp_path_factory.mktemp("cli") / "index"
    result = run("--data", str(path), "import", str(HISTORY), "--quiet")
    assert result.exit_code == 0, result.output
    yield path


# ---------------------------------------------------------------------------------------------- usage


def test_help_lists_the_commands_in_order() -> None:
    result = run("--help")
    assert result.exit_code == 0
    commands = result.stdout.split("Commands:")[1].split()
    assert [c for c in commands if c in {"demo", "import", "search", "serve", "stats", "delete-user"}] == [
        "demo",
        "import",
        "search",
        "serve",
        "stats",
        "delete-user",
    ]
    assert "REFIND_DATA" in result.stdout
    assert run("--version").stdout.strip() == f"refind, version {refind.__version__}"


def test_usage_errors_exit_2() -> None:
    result = run("search")
    assert result.exit_code == EXIT_USAGE
    assert "Missing argument 'QUESTION'" in result.stderr
    assert run("sessions", "--limit", "0").exit_code == EXIT_USAGE
    result = run("import", "/no/such/file.jsonl")
    assert result.exit_code == EXIT_USAGE
    assert "does not exist" in result.stderr
    assert run("search", "x", "--user", "u", "--agent", "gpt").exit_code == EXIT_USAGE


# ---------------------------------------------------------------------------------------------- import


def test_import_reports_a_second_import_skips_and_a_rescan_replaces(tmp_path: Path) -> None:
    data = str(tmp_path / "index")
    first = run("--data", data, "import", str(HISTORY), "--quiet")
    assert first.exit_code == 0, first.output
    assert "chat_history.jsonl (jsonl)" in first.stdout
    assert f"{N_MESSAGES} added, 0 replaced" in first.stdout
    assert "16 written, 0 unchanged" in first.stdout
    assert "1 (maya)" in first.stdout
    assert "nothing" in first.stdout  # skipped
    second = run("--data", data, "import", str(HISTORY), "--json")
    assert second.exit_code == 0, second.output
    summary = json.loads(second.stdout)
    assert summary["format"] == "jsonl"
    assert (summary["sessions"], summary["unchanged"], summary["files_unchanged"]) == (0, 16, 1)
    assert (summary["added"], summary["replaced"]) == (0, 0)
    assert summary["users"] == ["maya"]
    assert summary["index"] == str(Path(data).resolve())
    rescan = json.loads(run("--data", data, "import", str(HISTORY), "--rescan", "--json").stdout)
    assert rescan["sessions"] == 16
    assert (rescan["added"], rescan["replaced"]) == (0, N_MESSAGES)
    stats = json.loads(run("--data", data, "stats", "--json").stdout)
    assert stats["per_user"] == {"maya": N_MESSAGES}


def test_import_one_locomo_conversation_under_another_name(tmp_path: Path, shared_data: Path) -> None:
    locomo = shared_data / "locomo10_dev.json"
    sessions = [s for s in iter_locomo(locomo) if s.user_id == "conv-26"]
    others = sum(1 for s in iter_locomo(locomo) if s.user_id != "conv-26")
    data = str(tmp_path / "index")
    result = run(
        "--data", data, "import", str(locomo), "--user", "conv-26", "--as-user", "caroline", "--json"
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["format"] == "locomo"  # detected
    assert summary["users"] == ["caroline"]
    assert summary["sessions"] == len(sessions)
    assert summary["added"] == sum(len(s.messages) for s in sessions)
    assert summary["skipped"]["sessions_of_other_users"] == others
    stats = json.loads(run("--data", data, "stats", "--json").stdout)
    assert stats["per_user"] == {"caroline": summary["added"]}


def test_import_of_an_unknown_user_is_one_line_and_a_bad_line_is_named(tmp_path: Path) -> None:
    data = str(tmp_path / "index")
    result = run("--data", data, "import", str(HISTORY), "--user", "nobody")
    assert result.exit_code == EXIT_ERROR
    assert_one_line_error(result.stderr, "no sessions of user 'nobody'")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"user_id": "u", "session_id": "s", "role": "user", "content": "fine"}\n{"user_id": "u", "role": 3}\n'
    )
    result = run("--data", data, "import", str(bad))  # a bad line is counted and named, never fatal
    assert result.exit_code == 0, result.output
    assert "1 added" in result.stdout and "1 unreadable line" in result.stdout
    assert f"{bad.name}:2: " in result.stdout and "Traceback" not in result.output


# ---------------------------------------------------------------------------------------------- search


def test_search_shows_sessions_in_time_order_with_matches_marked(index: Path) -> None:
    question = QUESTIONS["questions"][1]  # Priya's restaurant: the name is in the turn after the hit
    result = run(
        "--data",
        str(index),
        "search",
        question["question"],
        "--user",
        "maya",
        "--now",
        "2024-06-20",
        "--trace",
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith(question["question"])
    assert "user maya · asked Thu 20 Jun 2024 · heuristic agent" in out
    assert "Sun 18 Feb 2024, 18:40 UTC  session 2024-02-18" in out
    assert "Sabai Sabai" in out
    matched = [line for line in out.splitlines() if line.startswith("▶")]
    assert any("Tom's birthday is on Saturday 16 March" in line for line in matched)
    assert not any("Sabai Sabai" in line for line in matched)  # shown by the window, not matched
    dates = [  # the evidence's sessions (standing facts and instructions are offered apart, first)
        line.split("  session ")[0]
        for line in out.splitlines()
        if "  session " in line and not line.startswith("standing ")
    ]
    stamps = [time.strptime(d.split(",")[0], "%a %d %b %Y") for d in dates]
    assert stamps == sorted(stamps) and len(stamps) >= 2
    assert "keywords" in out and "broad" in out and "hits" in out  # the trace table


def test_search_json_is_the_search_result(index: Path) -> None:
    result = run(
        "--data",
        str(index),
        "search",
        "What did I decide last month about the Northwind job offer?",
        "--user",
        "maya",
        "--now",
        "2024-06-20",
        "--json",
        "--max-tokens",
        "800",
        "--top-k",
        "3",
    )
    assert result.exit_code == 0, result.output
    parsed = refind.SearchResult.model_validate_json(result.stdout)
    assert parsed.user_id == "maya" and parsed.agent == "heuristic"
    assert parsed.now == refind.models.to_epoch_ms("2024-06-20")
    assert any(t.id == "2024-05-08:0" for e in parsed.evidence for t in e.turns)
    assert parsed.tokens <= 800
    assert [e.session_date for e in parsed.evidence] == sorted(e.session_date for e in parsed.evidence)
    timed = [s for s in parsed.trace if s.date_from is not None]
    assert timed and refind.models.to_epoch_ms("2024-05-01") == timed[0].date_from


def test_search_without_a_date_uses_the_current_time(index: Path) -> None:
    result = run("--data", str(index), "search", "Sabai Sabai", "--user", "maya", "--json")
    assert result.exit_code == 0, result.output
    parsed = refind.SearchResult.model_validate_json(result.stdout)
    assert parsed.now is not None and abs(parsed.now - time.time() * 1000) < 600_000
    assert parsed.evidence


def test_search_with_the_llm_agent_and_no_endpoint_says_what_to_set(index: Path) -> None:
    env = {
        k: None for k in ("REFIND_LLM_API_KEY", "OPENAI_API_KEY", "REFIND_LLM_BASE_URL", "OPENAI_BASE_URL")
    }
    result = CliRunner().invoke(
        main, ["--data", str(index), "search", "x", "--user", "maya", "--agent", "llm"], env=env
    )
    assert result.exit_code == EXIT_ERROR
    assert_one_line_error(result.stderr, "REFIND_LLM_API_KEY", "OPENAI_API_KEY")


def test_unexpected_errors_are_one_line_and_debug_reraises(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(refind.Memory, "search", broken)
    result = run("--data", str(index), "search", "x", "--user", "maya", env={"REFIND_DEBUG": None})
    assert result.exit_code == EXIT_INTERNAL
    assert_one_line_error(result.stderr, "unexpected RuntimeError: boom second line", "REFIND_DEBUG=1")
    result = run("--data", str(index), "search", "x", "--user", "maya", env={"REFIND_DEBUG": "1"})
    assert isinstance(result.exception, RuntimeError)


def test_debug_reraises_refind_errors(tmp_path: Path) -> None:
    args = ["--data", str(tmp_path / "none"), "stats"]
    result = run(*args, env={"REFIND_DEBUG": "1"})
    assert isinstance(result.exception, refind.IndexFormatError)
    result = run(*args, env={"REFIND_DEBUG": None})
    assert result.exit_code == EXIT_ERROR
    assert_one_line_error(result.stderr, "no refind index at")


# ---------------------------------------------------------------------------------------------- stats, delete


def test_stats(index: Path) -> None:
    result = run("--data", str(index), "stats", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "path": str(index.resolve()),
        "messages": N_MESSAGES,
        "users": 1,
        "per_user": {"maya": N_MESSAGES},
        "deleted_sessions": 0,
        "deleted_per_user": {},
        "vectors": 0,  # no embedding model here: every message awaits its vector
        "pending_vectors": N_MESSAGES,
        "vector_model": None,
    }
    table = run("--data", str(index), "stats").stdout
    assert f"{N_MESSAGES} messages, 1 user" in table
    assert f"0 vectors; {N_MESSAGES} messages awaiting their vector" in " ".join(table.split())
    assert any(line.split() == ["maya", str(N_MESSAGES)] for line in table.splitlines())


def test_delete_user_asks_first(tmp_path: Path) -> None:
    data = str(tmp_path / "index")
    assert run("--data", data, "import", str(HISTORY), "--quiet").exit_code == 0
    declined = run("--data", data, "delete-user", "maya", input="n\n")
    assert declined.exit_code == EXIT_ERROR
    assert f"Delete all {N_MESSAGES} messages of user 'maya'" in declined.stderr
    assert "nothing was deleted" in declined.stderr
    with refind.Memory(data, read_only=True) as mem:
        assert mem.count("maya") == N_MESSAGES
    confirmed = run("--data", data, "delete-user", "maya", input="y\n")
    assert confirmed.exit_code == 0, confirmed.output
    assert f"Deleted {N_MESSAGES} messages of user 'maya'." in confirmed.stdout
    again = run("--data", data, "delete-user", "maya", "--yes")
    assert again.exit_code == 0
    assert "has no messages" in again.stdout
    with refind.Memory(data, read_only=True) as mem:
        assert mem.count() == 0


# ---------------------------------------------------------------------------------------------- serve


def test_serve_help() -> None:
    result = run("serve", "--help")
    assert result.exit_code == 0
    for option in ("--host", "--port", "--auth", "--agent", "--retention-days", "--api-key"):
        assert option in result.stdout
    assert "[none|token|bearer|x-api-key]" in result.stdout


def test_serve_without_the_service_module_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "refind.server", None)  # makes `import refind.server` fail
    result = run("serve")
    assert result.exit_code == EXIT_ERROR
    assert_one_line_error(result.stderr, "refind.server")


# ---------------------------------------------------------------------------------------------- end to end


def test_errors_in_a_real_process_are_one_line(tmp_path: Path, child_env: dict[str, str]) -> None:
    done = cli(child_env, "--data", str(tmp_path / "nothing-here"), "search", "where?", "--user", "u")
    assert done.returncode == EXIT_ERROR, done.stderr
    assert_one_line_error(done.stderr, "no refind index at")
    assert done.stdout == ""


@pytest.mark.slow
def test_search_and_stats_work_beside_a_writer(tmp_path: Path, child_env: dict[str, str]) -> None:
    path = tmp_path / "index"
    with refind.Memory(path) as writer:  # holds the write lock, as `refind serve` does
        writer.import_sessions(refind.loaders.iter_sessions(HISTORY, "jsonl"))
        found = cli(child_env, "--data", str(path), "search", "Sabai Sabai", "--user", "maya", "--json")
        assert found.returncode == 0, found.stderr
        assert refind.SearchResult.model_validate_json(found.stdout).evidence
        stats = cli(child_env, "--data", str(path), "stats", "--json")
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["messages"] == N_MESSAGES
        locked = cli(child_env, "--data", str(path), "delete-user", "maya", "--yes")
        assert locked.returncode == EXIT_ERROR
        assert_one_line_error(locked.stderr, "is locked by process", "read-only")


def demo_checks(stdout: str) -> None:
    for i, q in enumerate(QUESTIONS["questions"], 1):
        assert f"Question {i} of {len(QUESTIONS['questions'])}" in stdout
        assert q["question"] in stdout
    assert stdout.count("★ in the evidence") == len(QUESTIONS["questions"]), stdout
    assert (
        f"{len(QUESTIONS['questions'])} of {len(QUESTIONS['questions'])} answers are in the evidence"
        in stdout
    )
    assert "2024-05-01 → 05-31" in stdout  # the 'last month' round
    assert "2024-06-15 → 06-16" in stdout  # the 'last weekend' browse
    assert "Sun 4 Feb 2024, 10:30 UTC  session 2024-02-04" in stdout  # the Portugal plan ...
    assert stdout.index("session 2024-02-04") < stdout.index("session 2024-05-26")  # ... before the switch


@pytest.mark.slow
def test_demo_in_a_temporary_index_leaves_nothing_behind(tmp_path: Path, child_env: dict[str, str]) -> None:
    env = {k: v for k, v in child_env.items() if k != "REFIND_DATA"}
    env.update(TMPDIR=str(tmp_path / "tmp"), XDG_DATA_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
    (tmp_path / "tmp").mkdir()
    started = time.perf_counter()
    done = cli(env, "demo")
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert elapsed < 60
    demo_checks(done.stdout)
    assert "The demo index was temporary" in done.stdout
    assert "refind import ~/Downloads/chatgpt-export.zip" in done.stdout  # then the newcomer's own history
    assert "refind import ~/.claude/projects --watch" in done.stdout and "refind mcp" in done.stdout
    assert f"Imported {N_MESSAGES} messages in 16 sessions" in done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


@pytest.mark.slow
def test_demo_under_data_is_built_once_and_never_touches_the_real_index(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    data = tmp_path / "data"
    with refind.Memory(data) as mem:  # the user's own index, which the demo must not touch
        mem.add("me", "s1", [{"role": "user", "content": "my own message"}])
    first = cli(child_env, "--data", str(data), "demo")
    assert first.returncode == 0, first.stderr
    demo_checks(first.stdout)
    assert f"kept in {data / 'demo'}" in first.stdout
    second = cli({**child_env, "REFIND_DATA": str(data)}, "demo", "--max-tokens", "2000")
    assert second.returncode == 0, second.stderr
    assert f"Using the demo index at {data / 'demo'} ({N_MESSAGES} messages" in second.stderr
    assert "Imported" not in second.stderr
    with refind.Memory(data, read_only=True) as mem:
        assert mem.stats().per_user == {"me": 1}
    with refind.Memory(data / "demo", read_only=True) as mem:
        assert mem.stats().per_user == {"maya": N_MESSAGES}


def test_demo_refuses_an_index_with_other_users(tmp_path: Path) -> None:
    path = tmp_path / "real"
    with refind.Memory(path) as mem:
        mem.add("me", "s1", [{"role": "user", "content": "my own message"}])
    result = run("demo", "--index", str(path))
    assert result.exit_code == EXIT_ERROR
    assert_one_line_error(result.stderr, "not a demo index")
    with refind.Memory(path, read_only=True) as mem:
        assert mem.stats().per_user == {"me": 1}


def test_the_cli_module_only_uses_public_names() -> None:
    sources = sorted((ROOT / "refind" / "cli").glob("*.py"))
    assert len(sources) > 2
    source = "\n".join(p.read_text(encoding="utf-8") for p in sources)
    imports = [line.strip() for line in source.splitlines() if line.strip().startswith(("import ", "from "))]
    ours = [line for line in imports if "refind" in line and not line.startswith("from refind.cli")]
    allowed = (
        "import refind",
        "from refind.loaders import",
        "from refind.tools import",
        "from refind.server import",
        "from refind.mcp import",
        "from refind.hooks import",
        "from refind.ui import",
    )
    assert ours and all(line.startswith(allowed) for line in ours), ours


# ---------------------------------------------------------------------------------------------- newcomers


def test_data_is_accepted_after_any_subcommand(tmp_path: Path) -> None:
    data = str(tmp_path / "index")
    assert run("import", str(HISTORY), "--quiet", "--data", data).exit_code == 0
    stats = json.loads(run("stats", "--json", "--data", data).stdout)
    assert stats["messages"] == N_MESSAGES
    found = run("search", "Sabai Sabai", "--user", "maya", "--json", "--data", data)
    assert refind.SearchResult.model_validate_json(found.stdout).evidence
    # the subcommand's --data wins over the global one
    assert (
        json.loads(run("--data", str(tmp_path / "other"), "stats", "--json", "--data", data).stdout)[
            "messages"
        ]
        == N_MESSAGES
    )
    for command in ("serve", "import", "search", "stats", "delete-user", "demo"):
        assert "--data" in run(command, "--help").stdout, command


def test_python_m_refind_server_is_refind_serve(child_env: dict[str, str]) -> None:
    module = subprocess.run(
        [sys.executable, "-m", "refind.server", "--help"], env=child_env, capture_output=True, text=True
    )
    command = run("serve", "--help")
    assert module.returncode == 0 and command.exit_code == 0
    options = lambda text: sorted(set(re.findall(r"(--[a-z][a-z-]+)", text)))  # noqa: E731
    assert options(module.stdout) == options(command.stdout)
    assert "--retention-interval" in options(module.stdout) and "--port-file" in options(module.stdout)


def test_search_says_when_the_user_has_no_messages(index: Path) -> None:
    result = run("--data", str(index), "search", "anything", "--user", "nobody-at-all")
    assert result.exit_code == 0
    assert "'nobody-at-all' has no messages" in result.stderr and "refind stats" in result.stderr


def test_import_beside_a_server_says_to_stop_it_or_use_add(tmp_path: Path) -> None:
    path = tmp_path / "index"
    with refind.Memory(path):  # holds the write lock, as `refind serve` does
        result = run("--data", str(path), "import", str(HISTORY), "--quiet")
    assert result.exit_code == EXIT_ERROR
    assert_one_line_error(result.stderr, "stop the server", "/add")
    assert "read-only" not in result.stderr


def test_a_binary_file_is_a_one_line_error_not_a_bug(tmp_path: Path) -> None:
    for name in ("blob.bin", "blob.jsonl", "blob.json.gz"):
        blob = tmp_path / name
        blob.write_bytes(bytes(range(256)) * 40)
        result = run("--data", str(tmp_path / "index"), "import", str(blob))
        assert result.exit_code == EXIT_ERROR, (name, result.output)
        assert "bug" not in result.stderr


@pytest.mark.slow
def test_ctrl_c_during_an_import_saves_what_was_read_and_says_so(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("w") as fh:
        for s in range(40_000):
            for t in range(10):
                line = {
                    "user_id": f"u{s % 7}",
                    "session_id": f"s{s}",
                    "role": "user",
                    "content": f"note {s} {t} about kayaks",
                }
                fh.write(json.dumps(line) + "\n")
    index = tmp_path / "index"
    proc = subprocess.Popen(
        [sys.executable, "-m", "refind.cli", "--data", str(index), "import", str(big), "--json"],
        env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    # wait for the import's first commit (segments_1 is the empty index's), then interrupt it
    while not list(index.glob("segments_[2-9]*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["interrupted"] is True and 0 < summary["added"] < 400_000
    assert "Traceback" not in err and "Aborted" not in err
    with refind.Memory(index, read_only=True) as m:  # everything the summary counts is saved
        assert m.count() == summary["added"]
