"""refind's own JSONL: one message per line (see :mod:`refind.loaders`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from refind.errors import InvalidInput
from refind.loaders._base import message, parse_date, read_lines
from refind.models import Message, SessionLog

__all__ = ["iter_jsonl", "read_jsonl"]


def iter_jsonl(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[SessionLog]:
    """Sessions of a JSONL file of messages (see :mod:`refind.loaders` for the fields)."""
    logs, _, _ = read_jsonl(Path(path))
    yield from logs


def read_jsonl(path: Path, start: int = 0, first_line: int = 1) -> tuple[list[SessionLog], int, int]:
    """The sessions in the complete lines of ``path`` from byte ``start`` (line number ``first_line``), the
    offset after them and the next line number: what an incremental import needs to read only new lines.
    A malformed record raises :class:`InvalidInput` naming its line (this is a format you write)."""
    lines, end = read_lines(path, start)
    logs: list[SessionLog] = []
    current: tuple[str, str] | None = None
    messages: list[Message] = []
    session_text: str | None = None

    def emit() -> None:
        assert current is not None
        logs.append(
            SessionLog(
                user_id=current[0],
                session_id=current[1],
                messages=list(messages),
                date=parse_date(session_text, f"{path}: session_time"),
                date_text=session_text,
            )
        )

    for lineno, line in enumerate(lines, first_line):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"{where}: not valid JSON ({exc})") from exc
        if not isinstance(rec, dict):
            raise InvalidInput(f"{where}: expected a JSON object")
        user, session = rec.get("user_id"), rec.get("session_id")
        if not isinstance(user, str) or not user or not isinstance(session, str) or not session:
            raise InvalidInput(f"{where}: user_id and session_id must be non-empty strings")
        if current != (user, session):
            if current is not None and messages:
                emit()
            current, messages = (user, session), []
            session_text = rec.get("session_time")
            if session_text is not None:
                session_text = str(session_text)
        messages.append(message(rec, where))
    if current is not None and messages:
        emit()
    return logs, end, first_line + len(lines)
