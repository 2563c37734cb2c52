"""refind's own JSONL: one message per line (see :mod:`refind.loaders`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from refind.errors import InvalidInput
from refind.loaders._base import (
    Cursor,
    Loader,
    Sample,
    keys_of,
    loads_json,
    message,
    parse_date,
    read_lines,
    unreadable,
)
from refind.models import Message, SessionLog, id_problem, validation_message

__all__ = ["LOADER", "iter_jsonl", "read_jsonl"]


class _JSONL(Loader):
    name = "jsonl"
    title = "refind JSONL"
    about = "refind JSONL (one message per line with user_id and session_id)"
    help = 'one message per line: {"user_id", "session_id", "role", "content",\n"timestamp"?, "id"?}'
    lines = True

    def sniff(self, sample: Sample) -> bool:
        rec = sample.record
        return rec is not None and "user_id" in rec and "session_id" in rec

    def read_from(
        self, path: Path, cursor: Cursor | None, skipped: Counter[str] | None = None, **options: Any
    ) -> tuple[Sequence[SessionLog], Cursor]:
        start, line = (int(cursor["offset"]), int(cursor.get("line", 1))) if cursor else (0, 1)
        logs, end, next_line = read_jsonl(path, start, line, skipped=skipped)
        return logs, {"offset": end, "line": next_line}


LOADER = _JSONL()


def iter_jsonl(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[SessionLog]:
    """Sessions of a JSONL file of messages (see :mod:`refind.loaders` for the fields)."""
    logs, _, _ = read_jsonl(Path(path), skipped=skipped)
    yield from logs


_INFO = ("title", "source", "project")


def read_jsonl(
    path: Path, start: int = 0, first_line: int = 1, *, skipped: Counter[str] | None = None
) -> tuple[list[SessionLog], int, int]:
    """The sessions in the complete lines of ``path`` from byte ``start`` (line number ``first_line``), the
    offset after them and the next line number: what an incremental import needs to read only new lines.

    A line that cannot be read (not JSON, not an object, no user or session id, an invalid message or
    session field) is left out, counted in ``skipped`` under ``unreadable_lines`` and, when ``skipped`` is
    a :class:`~refind.loaders.Skipped`, named with its line number and why; the other lines are imported.
    A session's ``title``, ``source`` and ``project`` are the first its lines give (none when they give none:
    a source is the app a conversation came from, and a JSONL file is written by anything)."""
    lines, end = read_lines(path, start)
    logs: list[SessionLog] = []
    current: tuple[str, str] | None = None
    messages: list[Message] = []
    session_text: str | None = None
    info: dict[str, str] = {}

    def emit() -> None:
        assert current is not None
        logs.append(
            SessionLog(
                user_id=current[0],
                session_id=current[1],
                messages=list(messages),
                date=parse_date(session_text, f"{path}: session_time") if session_text else None,
                date_text=session_text,
                title=info.get("title"),
                source=info.get("source"),
                project=info.get("project"),
            )
        )

    for lineno, line in enumerate(lines, first_line):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec, m, labels = _record(line, where)
        except InvalidInput as exc:
            unreadable(skipped, "unreadable_lines", str(exc))
            continue
        user, session = rec["user_id"], rec["session_id"]
        if current != (user, session):
            if current is not None and messages:
                emit()
            current, messages, info = (user, session), [], {}
            session_text = None
        if session_text is None and rec.get("session_time") is not None:
            text = str(rec["session_time"])
            try:
                parse_date(text, f"{where}: session_time")
            except InvalidInput as exc:
                unreadable(skipped, "unreadable_session_times", str(exc))
            else:
                session_text = text
        for k, v in labels.items():
            info.setdefault(k, v)
        messages.append(m)
    if current is not None and messages:
        emit()
    return logs, end, first_line + len(lines)


def _record(line: bytes, where: str) -> tuple[dict[str, Any], Message, dict[str, str]]:
    """One line read: the record, its message and its session labels, or InvalidInput saying why not."""
    try:
        rec = loads_json(line)
    except ValueError as exc:
        raise InvalidInput(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(rec, dict):
        raise InvalidInput(f"{where}: expected a JSON object, found {keys_of(rec)}")
    user, session = rec.get("user_id"), rec.get("session_id")
    for name, value in (("user_id", user), ("session_id", session)):
        problem = id_problem(value)
        if problem is not None:
            raise InvalidInput(f"{where}: {name} {problem}")
    labels: dict[str, str] = {}
    for k in _INFO:
        if rec.get(k) is not None:
            try:
                value = SessionLog.model_validate(
                    {"user_id": user, "session_id": session, "messages": [], k: rec[k]}
                )
            except ValidationError as exc:
                raise InvalidInput(validation_message(exc, prefix=where)) from exc
            got = getattr(value, k)
            if got is not None:
                labels[k] = got
    return rec, message(rec, where), labels
