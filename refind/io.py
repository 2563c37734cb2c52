"""Loaders for real chat-log formats. Each yields :class:`refind.SessionLog` (user, session, messages
with parsed timestamps) in source order, ready for :meth:`refind.Memory.import_sessions`.

Formats:

- ``locomo``: LoCoMo JSON (a list of conversations). One user per conversation (``sample_id``), sessions
  ``session_N`` dated like "1:56 pm on 8 May, 2023"; each turn keeps its ``dia_id`` ("D1:3") as message id;
  ``speaker_a`` is role ``user``, ``speaker_b`` role ``assistant``, the names are kept as ``speaker``; a
  shared image becomes ``[image: <caption>]`` so it is searchable.
- ``longmemeval``: LongMemEval JSON or .json.gz (a list of questions). One user per question
  (``question_id``); sessions from ``haystack_session_ids`` / ``haystack_dates`` ("2023/05/30 (Tue) 23:40") /
  ``haystack_sessions``.
- ``jsonl``: one message per line, ``{"user_id", "session_id", "role", "content"}`` plus optional
  ``timestamp`` (epoch ms or date text), ``speaker``, ``id``, ``session_time``. Consecutive lines of the same
  user and session form one session; blank lines are ignored.

Messages with empty content are skipped (their turn numbers are kept, so later turns stay aligned) and
counted in the ``skipped`` Counter when one is passed; malformed records raise :class:`InvalidInput` with
the file position.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from refind.errors import InvalidInput
from refind.models import Message, SessionLog, to_epoch_ms, validation_message

__all__ = [
    "Format",
    "detect_format",
    "iter_jsonl",
    "iter_locomo",
    "iter_longmemeval",
    "iter_sessions",
    "read_json",
]

Format = Literal["locomo", "longmemeval", "jsonl"]


def read_json(path: str | Path) -> Any:
    """Read a .json or .json.gz file, raising InvalidInput with the reason when it is not JSON."""
    p = Path(path)
    try:
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError as exc:
        raise InvalidInput(f"{p}: no such file") from exc
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{p}: not readable as JSON ({exc})") from exc


def _parse_date(text: str | None, where: str) -> int | None:
    if not text:
        return None
    try:
        return to_epoch_ms(text)
    except ValueError as exc:
        raise InvalidInput(f"{where}: {exc}") from exc


def _message(raw: dict[str, Any], where: str) -> Message:
    try:
        return Message.parse(raw)
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc, prefix=where)) from exc


def _session_number(key: str) -> int:
    return int(key.split("_")[1])


def iter_locomo(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[SessionLog]:
    """Sessions of a LoCoMo file, conversation by conversation, session by session."""
    data = read_json(path)
    if not isinstance(data, list):
        raise InvalidInput(f"{path}: a LoCoMo file is a JSON list of conversations")
    for ci, sample in enumerate(data):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict):
            raise InvalidInput(f"{path}[{ci}]: missing 'conversation'")
        user = str(sample.get("sample_id") or f"conv-{ci}")
        roles = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
        keys = sorted(
            (k for k in conv if k.startswith("session_") and k.split("_")[1].isdigit() and k.count("_") == 1),
            key=_session_number,
        )
        for key in keys:
            turns = conv[key]
            if not isinstance(turns, list) or not turns:
                continue
            date_text = conv.get(f"{key}_date_time")
            where = f"{path}[{ci}].conversation.{key}"
            messages = []
            for ti, t in enumerate(turns):
                text = str(t.get("text") or "").strip()
                caption = t.get("blip_caption")
                if caption:
                    text = f"{text} [image: {caption}]".strip()
                if not text:
                    if skipped is not None:
                        skipped["empty_content"] += 1
                    continue
                speaker = t.get("speaker")
                messages.append(
                    _message(
                        {
                            "role": roles.get(speaker, "user"),
                            "speaker": speaker,
                            "content": text,
                            "id": t.get("dia_id") or f"{key}:{ti}",
                            "turn": ti,
                        },
                        f"{where}[{ti}]",
                    )
                )
            if messages:
                yield SessionLog(
                    user_id=user,
                    session_id=key,
                    messages=messages,
                    date=_parse_date(date_text, f"{where}_date_time"),
                    date_text=date_text,
                )


def iter_longmemeval(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[SessionLog]:
    """Haystack sessions of a LongMemEval file; each question's haystack is its own user."""
    data = read_json(path)
    if not isinstance(data, list):
        raise InvalidInput(f"{path}: a LongMemEval file is a JSON list of questions")
    for qi, item in enumerate(data):
        try:
            user = str(item["question_id"])
            sids, dates, sessions = (
                item["haystack_session_ids"],
                item["haystack_dates"],
                item["haystack_sessions"],
            )
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"{path}[{qi}]: missing LongMemEval field {exc}") from exc
        if not len(sids) == len(dates) == len(sessions):
            raise InvalidInput(f"{path}[{qi}]: haystack ids, dates and sessions differ in length")
        for si, (sid, date_text, turns) in enumerate(zip(sids, dates, sessions, strict=True)):
            where = f"{path}[{qi}].haystack_sessions[{si}]"
            messages = []
            for ti, t in enumerate(turns):
                if not str(t.get("content") or "").strip():
                    if skipped is not None:
                        skipped["empty_content"] += 1
                    continue
                messages.append(
                    _message({"role": t.get("role"), "content": t["content"], "turn": ti}, f"{where}[{ti}]")
                )
            if messages:
                yield SessionLog(
                    user_id=user,
                    session_id=str(sid),
                    messages=messages,
                    date=_parse_date(date_text, f"{path}[{qi}].haystack_dates[{si}]"),
                    date_text=date_text,
                )
            elif skipped is not None:
                skipped["empty_session"] += 1


def iter_jsonl(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[SessionLog]:
    """Sessions of a JSONL file of messages (see the module docstring for the fields)."""
    p = Path(path)
    current: tuple[str, str] | None = None
    messages: list[Message] = []
    session_text: str | None = None

    def emit() -> SessionLog:
        assert current is not None
        return SessionLog(
            user_id=current[0],
            session_id=current[1],
            messages=list(messages),
            date=_parse_date(session_text, f"{p}: session_time"),
            date_text=session_text,
        )

    try:
        fh = p.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{p}: {exc.strerror or exc}") from exc
    with fh:
        for lineno, line in _lines(fh, p):
            if not line.strip():
                continue
            where = f"{p}:{lineno}"
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
                    yield emit()
                current, messages = (user, session), []
                session_text = rec.get("session_time")
                if session_text is not None:
                    session_text = str(session_text)
            messages.append(_message(rec, where))
    if current is not None and messages:
        yield emit()


def _lines(fh: Any, path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of a text file; a byte that is not UTF-8 is an InvalidInput naming the line."""
    lineno = 0
    try:
        for lineno, line in enumerate(fh, 1):  # noqa: B007 (lineno is read after the loop on error)
            yield lineno, line
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}:{lineno + 1}: not UTF-8 text (a binary file?)") from None


def detect_format(path: str | Path) -> Format:
    """Guess the format from the file name and first bytes (``.jsonl`` → jsonl; a JSON list whose first
    item has ``conversation`` → locomo, ``haystack_sessions`` → longmemeval)."""
    p = Path(path)
    if p.suffix == ".jsonl" or p.name.endswith(".jsonl.gz"):
        return "jsonl"
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt", encoding="utf-8") as fh:
            head = fh.read(200_000)
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{p}: not UTF-8 text (a binary file?); refind imports LoCoMo or LongMemEval JSON (.json, "
            ".json.gz) and JSONL chat logs"
        ) from None
    except OSError as exc:  # unreadable, or a .gz that is not gzip
        raise InvalidInput(f"{p}: cannot be read ({exc})") from exc
    if '"haystack_sessions"' in head:
        return "longmemeval"
    if '"conversation"' in head:
        return "locomo"
    raise InvalidInput(f"{p}: cannot tell the format; pass one of locomo, longmemeval, jsonl")


def iter_sessions(
    path: str | Path, format: Format | None = None, skipped: Counter[str] | None = None
) -> Iterator[SessionLog]:
    """Sessions of ``path`` in the given (or detected) format."""
    fmt = format or detect_format(path)
    loaders = {"locomo": iter_locomo, "longmemeval": iter_longmemeval, "jsonl": iter_jsonl}
    if fmt not in loaders:
        raise InvalidInput(f"format: {fmt!r} is not one of {', '.join(loaders)}")
    return loaders[fmt](path, skipped)
