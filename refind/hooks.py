"""Capture without thinking about it: a Claude Code hook that imports each session as it ends.

:func:`install_claude_code` adds to Claude Code's settings file (``~/.claude/settings.json`` by default) a
``SessionEnd`` hook whose command is ``refind --data DIR import ~/.claude/projects --quiet``: an incremental
import, which reads only what the logs gained since the last one (docs/import.md, "Importing again"). The
file is edited safely: read as JSON (a file that is not JSON is refused, never overwritten), every other
setting and hook kept, written to a temporary file beside it and renamed over it. Installing again changes
nothing (the hook is recognised by its command); :func:`remove_claude_code` takes it out again."""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from refind.errors import InvalidInput

__all__ = ["HOOK_EVENT", "claude_code_command", "install_claude_code", "remove_claude_code"]

HOOK_EVENT = "SessionEnd"
"""The Claude Code hook event refind's import runs on."""
_MARK = "refind-hook"  # in the command, so refind finds its own hook again


def default_settings() -> Path:
    """Claude Code's user settings file."""
    return Path("~/.claude/settings.json").expanduser()


def default_log() -> Path:
    """Where the hook's import writes what it printed (a hook's output is not shown to anyone)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path("~/.local/state").expanduser())
    return Path(base) / "refind" / "claude-code-hook.log"


def claude_code_command(
    data: Path | None, projects: Path | None = None, executable: str | None = None, log: Path | None = None
) -> str:
    """The hook's shell command: this installation's ``refind``, importing the Claude Code logs into the
    index ``data`` (None: the default index, :func:`refind.config.default_data_dir`), its output appended
    to ``log``."""
    from refind.config import default_data_dir

    data = (data if data is not None else default_data_dir()).expanduser().resolve()
    beside = Path(sys.executable).parent / "refind"
    exe = executable or (str(beside) if beside.is_file() else "refind")
    logs = projects if projects is not None else Path("~/.claude/projects").expanduser()
    out = log if log is not None else default_log()
    return (
        f"{shlex.quote(exe)} --data {shlex.quote(str(data))} import {shlex.quote(str(logs))} "
        f"--format claude-code --quiet >> {shlex.quote(str(out))} 2>&1  # {_MARK}"
    )


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise InvalidInput(
            f"{path} is not readable JSON ({exc}); fix or move it, then install again"
        ) from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{path} holds {type(value).__name__}, not a JSON object; fix or move it")
    return value


def _write(path: Path, settings: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(settings, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _entries(settings: dict[str, Any], path: Path) -> list[Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: 'hooks' is not an object; fix it, then install again")
    entries = hooks.setdefault(HOOK_EVENT, [])
    if not isinstance(entries, list):
        raise InvalidInput(f"{path}: 'hooks.{HOOK_EVENT}' is not a list; fix it, then install again")
    return entries


def _ours(entry: Any) -> bool:
    return isinstance(entry, dict) and any(
        isinstance(h, dict) and _MARK in str(h.get("command", "")) for h in entry.get("hooks", []) or []
    )


def install_claude_code(command: str, settings: Path | None = None) -> bool:
    """Add (or update) refind's ``SessionEnd`` hook running ``command``; True when the file changed."""
    path = settings or default_settings()
    current = _read(path)
    entries = _entries(current, path)
    wanted = {"hooks": [{"type": "command", "command": command}]}
    kept = [e for e in entries if not _ours(e)]
    if entries == [*kept, wanted]:
        return False  # already installed as wanted
    current["hooks"][HOOK_EVENT] = [*kept, wanted]
    _write(path, current)
    return True


def remove_claude_code(settings: Path | None = None) -> bool:
    """Take refind's hook out of the settings file; True when it was there."""
    path = settings or default_settings()
    if not path.exists():
        return False
    current = _read(path)
    entries = _entries(current, path)
    kept = [e for e in entries if not _ours(e)]
    if len(kept) == len(entries):
        return False
    if kept:
        current["hooks"][HOOK_EVENT] = kept
    else:
        del current["hooks"][HOOK_EVENT]
        if not current["hooks"]:
            del current["hooks"]
    _write(path, current)
    return True
