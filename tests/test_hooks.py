"""``refind hooks install claude-code``: the settings file edited safely and idempotently, and the hook's
command, run by a real shell as Claude Code runs it, importing the fixture logs into a real index."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import EXIT_ERROR, main

from .conftest import ROOT

CODE_DIR = Path(__file__).resolve().parent / "fixtures" / "claude-code"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=True)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    logger = logging.getLogger("refind")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_install_keeps_other_settings_is_idempotent_and_removable(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"model": "opus", "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "echo bye"}]}],
                                         "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}  # fmt: skip
    settings.write_text(json.dumps(theirs))
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    data = str(tmp_path / "index")
    first = run("--data", data, "hooks", "install", "claude-code", "--settings", str(settings), env=env)
    assert first.exit_code == 0, first.output
    after = json.loads(settings.read_text())
    assert after["model"] == "opus" and after["hooks"]["Stop"] == theirs["hooks"]["Stop"]
    ends = after["hooks"]["SessionEnd"]
    assert ends[0] == theirs["hooks"]["SessionEnd"][0] and len(ends) == 2
    assert f"--data {tmp_path / 'index'} import" in ends[1]["hooks"][0]["command"]
    again = run("--data", data, "hooks", "install", "claude-code", "--settings", str(settings), env=env)
    assert again.exit_code == 0 and "Already installed" in again.stdout
    assert json.loads(settings.read_text()) == after  # nothing changed
    removed = run("hooks", "remove", "claude-code", "--settings", str(settings))
    assert removed.exit_code == 0 and json.loads(settings.read_text()) == theirs


def test_a_settings_file_that_is_not_json_is_refused_not_overwritten(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text("{ not json")
    done = run("--data", str(tmp_path / "i"), "hooks", "install", "claude-code", "--settings", str(settings),
               env={"XDG_STATE_HOME": str(tmp_path / "state")})  # fmt: skip
    assert done.exit_code == EXIT_ERROR and "is not readable JSON" in done.stderr
    assert settings.read_text() == "{ not json"


@pytest.mark.slow
def test_the_installed_hook_imports_the_sessions_when_claude_code_runs_it(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    projects = tmp_path / "projects"
    (projects / "-home-maya-projects-weather").mkdir(parents=True)
    log = next((CODE_DIR / "-home-maya-projects-weather").glob("5f0c*.jsonl"))
    target = projects / "-home-maya-projects-weather" / log.name
    target.write_bytes(log.read_bytes()[: len(log.read_bytes()) // 2].rsplit(b"\n", 1)[0] + b"\n")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    data = tmp_path / "index"
    done = run("--data", str(data), "hooks", "install", "claude-code", "--settings", str(settings),
               "--projects", str(projects), env=env)  # fmt: skip
    assert done.exit_code == 0, done.output
    command = json.loads(settings.read_text())["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    child = {**{k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}, **env}
    child["PYTHONPATH"] = str(ROOT)
    hook_input = json.dumps({"hook_event_name": "SessionEnd", "transcript_path": str(target)})

    def fire() -> None:  # as Claude Code does: the command in a shell, the event's JSON on stdin
        subprocess.run(
            ["/bin/sh", "-c", command], input=hook_input, text=True, env=child, timeout=180, check=True
        )

    fire()
    with refind.Memory(data, read_only=True) as mem:
        half = mem.count("me")
    assert half > 0
    target.write_bytes(log.read_bytes())  # the session went on, then ended again
    fire()
    with refind.Memory(data, read_only=True) as mem:
        assert mem.count("me") > half
        assert "Fix flaky forecast cache test" in {s.title for s in mem.sessions("me")}
    assert (tmp_path / "state" / "refind" / "claude-code-hook.log").is_file()
