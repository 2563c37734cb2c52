"""Which format a path holds, decided from its name and first bytes; when none fits, an error that says
what was found."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path
from typing import Literal, get_args

from refind.errors import InvalidInput
from refind.loaders._base import keys_of, loads_json
from refind.loaders.claude_code import session_files

__all__ = ["FORMAT_NAMES", "Format", "conversations_file", "detect_format"]

Format = Literal["chatgpt", "claude", "claude-code", "jsonl", "locomo", "longmemeval"]

FORMAT_NAMES: dict[str, str] = {
    "chatgpt": "a ChatGPT export (conversations.json or the export .zip)",
    "claude": "a Claude.ai export (conversations.json or the export .zip)",
    "claude-code": "Claude Code session logs (a <session>.jsonl file or a directory of them)",
    "jsonl": "refind JSONL (one message per line with user_id and session_id)",
    "locomo": "a LoCoMo file",
    "longmemeval": "a LongMemEval file (.json or .json.gz)",
}
FORMATS: tuple[str, ...] = get_args(Format)

_HEAD = 200_000
_CLAUDE_CODE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}


def _expected() -> str:
    return "; ".join(f"{name} ({fmt})" for fmt, name in FORMAT_NAMES.items())


def _unknown(path: Path, found: str) -> InvalidInput:
    return InvalidInput(
        f"{path}: cannot tell the format: found {found}. Expected one of: {_expected()}; or name the format"
    )


def conversations_file(path: Path) -> tuple[Path, str | None] | None:
    """Where an export's conversations.json is: (the file, or the archive and its member), or None."""
    if path.is_dir():
        candidate = path / "conversations.json"
        return (candidate, None) if candidate.is_file() else None
    if path.suffix.lower() == ".zip":
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except zipfile.BadZipFile as exc:
            raise InvalidInput(f"{path}: not a readable zip archive ({exc})") from exc
        members = sorted((n for n in names if n.rsplit("/", 1)[-1] == "conversations.json"), key=len)
        return (path, members[0]) if members else None
    return None


def detect_format(path: str | Path) -> Format:
    """Guess the format of ``path``: a ChatGPT or Claude.ai export (``conversations.json`` with ``mapping``
    or ``chat_messages``; the export ``.zip``; a directory holding ``conversations.json``), Claude Code
    session logs (``.jsonl`` lines with ``sessionId``; a directory of them), refind JSONL (``.jsonl`` lines
    with ``user_id``), LoCoMo (``conversation``) or LongMemEval (``haystack_sessions``).

    Raises :class:`InvalidInput` saying what was found when it is none of them."""
    p = Path(path)
    if not p.exists():
        raise InvalidInput(f"{p}: no such file or directory")
    export = conversations_file(p)
    if export is not None:
        file, member = export
        head = _head(file, member)
        fmt = _sniff_json(head)
        if fmt in ("chatgpt", "claude"):
            return fmt
        where = f"{file}:{member}" if member else str(file)
        raise InvalidInput(
            f"{where}: expected a ChatGPT export (conversations with 'mapping') or a Claude.ai export "
            f"(conversations with 'chat_messages'), found {_describe(head)}"
        )
    if p.is_dir():
        files = session_files(p)
        if not files:
            raise _unknown(p, "a directory with no .jsonl file and no conversations.json")
        for f in files:
            fmt = _sniff_lines(f)
            if fmt is not None:
                return fmt
        raise _unknown(
            p, f"a directory of {len(files)} .jsonl files whose lines are neither format ({files[0]})"
        )
    if p.suffix.lower() == ".zip":
        with zipfile.ZipFile(p) as zf:
            names = zf.namelist()
        shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
        raise _unknown(p, f"a zip archive without conversations.json (it holds {shown or 'nothing'})")
    if p.name.endswith((".jsonl", ".jsonl.gz")):
        fmt = _sniff_lines(p)
        if fmt is not None:
            return fmt
        raise _unknown(p, _describe_lines(p))
    head = _head(p)
    fmt = _sniff_json(head)
    if fmt is not None:
        return fmt
    fmt = _sniff_lines(p)  # JSON Lines under another name (.log, .json)
    if fmt is not None:
        return fmt
    raise _unknown(p, _describe(head))


def _head(path: Path, member: str | None = None) -> str:
    try:
        if member is not None:
            with zipfile.ZipFile(path) as zf, zf.open(member) as fh:
                return fh.read(_HEAD).decode("utf-8", errors="replace")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as fh:
            return fh.read(_HEAD).decode("utf-8", errors="replace")
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc})") from exc


def _sniff_json(head: str) -> Format | None:
    start = head.lstrip()[:1]
    if start not in ("[", "{"):
        return None
    if '"mapping"' in head and ('"current_node"' in head or '"create_time"' in head):
        return "chatgpt"
    if '"chat_messages"' in head:
        return "claude"
    if '"haystack_sessions"' in head:
        return "longmemeval"
    if '"conversation"' in head and start == "[":
        return "locomo"
    return None


_SNIFF_BYTES = 16 * 1024 * 1024  # of the lines read to tell a line format (one line of gigabytes is not read)


def _records(path: Path, limit: int = 20) -> list[object]:
    out: list[object] = []
    opener = gzip.open if path.suffix == ".gz" else open
    budget = _SNIFF_BYTES
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            for _ in range(201):
                if len(out) >= limit or budget <= 0:
                    break
                line = fh.readline(budget)
                if not line:
                    break
                budget -= len(line)
                if line.strip():
                    try:
                        out.append(loads_json(line))
                    except ValueError:
                        out.append(None)
    except (OSError, EOFError):
        return out
    return out


def _sniff_lines(path: Path) -> Format | None:
    for rec in _records(path):
        if not isinstance(rec, dict):
            continue
        if "sessionId" in rec or (
            rec.get("type") in _CLAUDE_CODE_TYPES and ("uuid" in rec or "leafUuid" in rec)
        ):
            return "claude-code"
        if "user_id" in rec and "session_id" in rec:
            return "jsonl"
    return None


def _describe_lines(path: Path) -> str:
    records = _records(path, 1)
    if not records:
        return "an empty file"
    first = records[0]
    if first is None:
        return "a first line that is not JSON"
    return f"JSON Lines whose first record is {keys_of(first)}"


def _describe(head: str) -> str:
    text = head.lstrip()
    if not text:
        return "an empty file"
    if text[0] not in "[{":
        return f"text that is not JSON (it starts {clip_start(text)!r})"
    try:
        value = loads_json(head) if len(head) < _HEAD else None
    except ValueError:
        value = None
    if value is None:
        decoder = json.JSONDecoder()
        body = text[1:].lstrip() if text[0] == "[" else text
        try:
            first, _ = decoder.raw_decode(body)
        except (ValueError, RecursionError):
            return "JSON whose first record cannot be read in its first 200 kB"
        return (
            f"a JSON list whose first item is {keys_of(first)}"
            if text[0] == "["
            else f"JSON, {keys_of(first)}"
        )
    if isinstance(value, list):
        return (
            f"a JSON list of {len(value)} whose first item is {keys_of(value[0])}"
            if value
            else "an empty JSON list"
        )
    return f"JSON, {keys_of(value)}"


def clip_start(text: str, n: int = 40) -> str:
    line = " ".join(text[:200].split())
    return line[:n] + ("…" if len(line) > n else "")
