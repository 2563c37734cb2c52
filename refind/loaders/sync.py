"""Importing a source again reads and writes only what is new: the import state.

:func:`import_path` imports a file or directory in any format and remembers, in a small JSON file beside
the index (``import-state.json`` in :attr:`refind.Memory.path`; ``$XDG_STATE_HOME/refind/`` for an
in-memory index), what it imported:

- per file: its size and modification time (a file that has neither changed is not read at all) and, for
  line formats (Claude Code logs, refind JSONL), the byte offset read so far, so a growing log is read
  from where the last import stopped;
- per session: how many messages were imported and a digest of them, so an export downloaded again
  writes only the conversations that are new or grew (new messages are appended; a conversation whose
  earlier messages changed is written again whole: its ids replace the stored messages);
- per user: how many messages the index held after the import. When it holds fewer (the index was
  deleted or rebuilt, the user deleted, messages expired), the state is not trusted and everything is
  read again (ids replace, so nothing is duplicated).

:func:`watch` runs :func:`import_path` again every few seconds: what ``refind import --watch`` does.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from refind.errors import InvalidInput
from refind.loaders._base import DEFAULT_USER, Loader, Skipped
from refind.loaders._cut import fit
from refind.loaders._registry import LOADERS
from refind.loaders.detect import Format, detect_format, sources
from refind.models import Message, SessionLog

if TYPE_CHECKING:
    from refind.memory import Memory

__all__ = ["STATE_FILE", "ImportSummary", "default_state_path", "import_path", "watch"]

log = logging.getLogger(__name__)

STATE_FILE = "import-state.json"
_STATE_VERSION = 2  # 2: sessions record their info digest; a state of 1 means: read every source again
_TAIL = 4096  # bytes before a log's offset whose digest proves the file was only appended to


class ImportSummary(BaseModel):
    """What one :func:`import_path` did. ``sessions`` were written (new, grown or changed), ``unchanged``
    were as imported before and not written; ``added``/``replaced`` count messages; ``files`` were read,
    ``files_unchanged`` were not (same size and time as at the last import). ``skipped`` counts what was
    left out by reason (``deleted_sessions``: sessions deleted earlier, whose tombstones keep them out);
    ``problems`` names the first records that could not be read."""

    path: str
    format: str
    index: str
    sessions: int = 0
    unchanged: int = 0
    added: int = 0
    replaced: int = 0
    users: list[str] = Field(default_factory=list)
    files: int = 0
    files_unchanged: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    state: str | None = None
    interrupted: bool = False


def default_state_path(mem: Memory) -> Path:
    """Where ``mem``'s import state lives: in its index directory, or under ``$XDG_STATE_HOME/refind``
    (``~/.local/state/refind``): ``import-state-memory.json`` for an in-memory index, one file per location
    for a remote store (``import-state-<digest>.json``: two clusters never share a state)."""
    if mem.path is not None:
        return Path(mem.path) / STATE_FILE
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    where = mem.location
    if where in (":memory:", "reference://"):
        return Path(base) / "refind" / "import-state-memory.json"
    import hashlib

    return Path(base) / "refind" / f"import-state-{hashlib.sha256(where.encode()).hexdigest()[:16]}.json"


# ---------------------------------------------------------------------------------------------- the state


def _info_digest(log_: SessionLog) -> str:
    """What a session's info was at its last import (compared, never stored in the index)."""
    return json.dumps([log_.title, log_.source, log_.project], ensure_ascii=False)


_NO_INFO = json.dumps([None, None, None])


class _State:
    """The import-state file: sources (files) and sessions already imported, and per-user counts."""

    def __init__(self, path: Path, data: dict[str, Any] | None = None) -> None:
        self.path = path
        data = data or {}
        self.files: dict[str, dict[str, Any]] = data.get("files", {})
        self.sessions: dict[str, list[Any]] = data.get("sessions", {})
        self.users: dict[str, int] = data.get("users", {})

    @classmethod
    def load(cls, path: Path, mem: Memory) -> _State:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            log.warning("import state %s is unreadable (%s); reading every source again", path, exc)
            return cls(path)
        if not isinstance(data, dict) or data.get("version") != _STATE_VERSION:
            log.info("import state %s has another version; reading every source again", path)
            return cls(path)
        state = cls(path, data)
        for user, expected in state.users.items():
            have = mem.count(user)
            if have < expected:
                log.info(
                    "the index holds %d messages of %r, fewer than the %d after the last import (deleted or "
                    "a new index); reading every source again",
                    have,
                    user,
                    expected,
                )
                return cls(path)
        return state

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        body = {
            "version": _STATE_VERSION,
            "files": self.files,
            "sessions": self.sessions,
            "users": self.users,
        }
        tmp.write_text(json.dumps(body, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, self.path)


def _chain(digest: str, messages: Iterable[Message]) -> str:
    """Extend a session's digest with ``messages`` (resumable: the digest of n messages, then more)."""
    d = bytes.fromhex(digest)
    for m in messages:
        body = f"{m.id}\x1f{m.role}\x1f{m.timestamp}\x1f{m.turn}\x1f{m.speaker}\x1f{m.content}"
        d = hashlib.blake2b(d + body.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return d.hex()


_EMPTY = _chain("", [])


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _tail_digest(path: Path, offset: int) -> str:
    with path.open("rb") as fh:
        fh.seek(max(0, offset - _TAIL))
        return hashlib.blake2b(fh.read(min(offset, _TAIL)), digest_size=16).hexdigest()


# ---------------------------------------------------------------------------------------------- importing


class _Run:
    """One import: turns sources into the sessions to write, and records what it saw in the state."""

    def __init__(
        self, state: _State, *, user: str | None, as_user: str | None, rescan: bool, skipped: Skipped
    ) -> None:
        self.state = state
        self.user = user
        self.as_user = as_user
        self.rescan = rescan
        self.skipped = skipped
        self.unchanged = 0
        self.files = 0
        self.files_unchanged = 0
        self.users: set[str] = set()
        self.written_users: set[str] = set()
        self.seen: set[str] = set()  # session keys selected from the current file

    def select(self, logs: Iterable[SessionLog], *, appended: bool = False) -> Iterator[SessionLog]:
        """The sessions to write: ``user``'s only, renamed to ``as_user``, without what was imported before.
        ``appended`` means the messages come from lines read after the recorded offset (all new)."""
        for log_ in logs:
            if self.user is not None and log_.user_id != self.user:
                self.skipped["sessions_of_other_users"] += 1
                continue
            if self.as_user is not None and log_.user_id != self.as_user:
                log_ = log_.model_copy(update={"user_id": self.as_user})
            log_ = fit(log_, self.skipped)
            self.users.add(log_.user_id)
            key = f"{log_.user_id}\x1f{log_.session_id}"
            self.seen.add(key)
            before = None if self.rescan and not appended else self.state.sessions.get(key)
            messages = log_.messages
            new = messages
            info = _info_digest(log_)
            if appended:
                n, digest = before[:2] if before is not None else (0, _EMPTY)
                self.state.sessions[key] = [n + len(messages), _chain(digest, messages), info]
            else:
                if (
                    before is not None
                    and len(messages) >= before[0]
                    and _chain(_EMPTY, messages[: before[0]]) == before[1]
                ):
                    new = messages[before[0] :]
                if new is messages and before is not None:
                    log.info("session %r changed since the last import; writing it whole", log_.session_id)
                self.state.sessions[key] = [len(messages), _chain(_EMPTY, messages), info]
            if not new and messages and (before is None or before[2:] != [info]) and info != _NO_INFO:
                new = messages[-1:]  # only the info changed (a conversation renamed): it is written with
                # the last message again (same id: replaced in place)
            if not new:
                self.unchanged += 1
                continue
            self.written_users.add(log_.user_id)
            yield log_ if new is messages else log_.model_copy(update={"messages": list(new)})

    def _as_recorded(self, recorded: dict[str, Any] | None, size: int, mtime: int) -> bool:
        """True (and counted as unchanged) when the file has the size and time of the last import."""
        if self.rescan or not recorded or recorded.get("size") != size or recorded.get("mtime_ns") != mtime:
            return False
        self.files_unchanged += 1
        self.unchanged += int(recorded.get("sessions", 0))
        self.users.update(recorded.get("users", []))
        return True

    def document(self, path: Path, loader: Loader, member: str | None, file_key: str) -> Iterator[SessionLog]:
        """A whole-file format: skipped when the file is as recorded, else parsed and selected."""
        size, mtime = _stat(path)
        if self._as_recorded(self.state.files.get(file_key), size, mtime):
            return
        self.files += 1
        self.seen = set()
        logs = loader.read(path, self.skipped, user_id=self.as_user or DEFAULT_USER, member=member)
        yield from self.select(logs)
        self.state.files[file_key] = {
            "size": size,
            "mtime_ns": mtime,
            "sessions": len(self.seen),
            "users": sorted({k.split("\x1f", 1)[0] for k in self.seen}),
        }

    def lines(self, path: Path, loader: Loader, file_key: str) -> Iterator[SessionLog]:
        """A line format: skipped when unchanged, read from the recorded offset when it was only appended
        to, else read whole."""
        size, mtime = _stat(path)
        recorded = None if self.rescan else self.state.files.get(file_key)
        if self._as_recorded(recorded, size, mtime):
            return
        offset = int(recorded.get("offset", 0)) if recorded else 0
        if offset and (offset > size or _tail_digest(path, offset) != recorded.get("tail")):  # type: ignore[union-attr]
            log.info("%s was rewritten since the last import; reading it whole", path)
            offset = 0
        appended = offset > 0
        earlier: dict[str, Any] = recorded if appended and recorded else {}
        self.files += 1
        self.seen = set()
        # the loader's cursor: recorded whole when it holds more than where to go on (the offset and line)
        where = {"offset": offset, "line": int(earlier.get("line", 1))}
        cursor = (earlier.get("cursor") or where) if appended else None
        logs, after = loader.read_from(path, cursor, self.skipped, user_id=self.as_user or DEFAULT_USER)
        end, next_line = int(after["offset"]), int(after["line"])
        cursor_data = after if set(after) - {"offset", "line"} else {}
        yield from self.select(logs, appended=appended)
        keys_before = set(earlier.get("keys", []))
        self.unchanged += len(keys_before - self.seen)
        keys = sorted(keys_before | self.seen)
        self.state.files[file_key] = {
            "size": size,
            "mtime_ns": mtime,
            "offset": end,
            "line": next_line,
            "tail": _tail_digest(path, end),
            "sessions": len(keys),
            "keys": keys,
            "users": sorted({k.split("\x1f", 1)[0] for k in keys}),
            **({"cursor": cursor_data} if cursor_data else {}),
        }


def import_path(
    mem: Memory,
    path: str | os.PathLike[str],
    format: Format | None = None,
    *,
    user: str | None = None,
    as_user: str | None = None,
    rescan: bool = False,
    state: str | os.PathLike[str] | None = None,
    progress: Callable[[int], None] | None = None,
    stop: Callable[[], bool] | None = None,
    written: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import the file or directory at ``path`` into ``mem``, writing only what the last import of it did
    not (see the module docstring). Returns what was done.

    ``format`` is detected when omitted (:func:`~refind.loaders.detect_format`). ``user`` imports only that
    user's sessions (benchmark files hold many); ``as_user`` stores them under another user id, and is the
    user id of a personal history (ChatGPT, Claude, Claude Code; default ``"me"``). ``rescan`` reads every
    source whole again, ignoring the state (ids replace: nothing is duplicated). ``state`` overrides where
    the import state is kept (:func:`default_state_path`). ``progress`` is called with the number of
    messages read after each session, ``written`` with the number the index took in (every few thousand,
    from the thread that writes). ``stop`` is asked before each session is read: once it says
    True, what was read so far is saved and the import ends (``interrupted``); the state is then left as
    it was, so the next import reads again what this one did not finish (ids replace: nothing doubles)."""
    started = time.perf_counter()
    p = Path(path).expanduser()
    if not p.exists():
        raise InvalidInput(f"{p}: no such file or directory")
    loader = LOADERS.get(format if format is not None else detect_format(p))
    fmt = loader.name
    state_file = Path(state).expanduser() if state is not None else default_state_path(mem)
    if state_file.is_dir():  # refused before anything is read: the state is written after the import
        raise InvalidInput(f"state: {state_file} is a directory; give the path of a file (it need not exist)")
    st = _State.load(state_file, mem)
    skipped = Skipped()
    run = _Run(st, user=user, as_user=as_user, rescan=rescan, skipped=skipped)
    selection = f"{fmt}|{user or '*'}|{as_user or ''}"
    interrupted = False

    def until_stopped(logs: Iterator[SessionLog]) -> Iterator[SessionLog]:
        nonlocal interrupted
        for log_ in logs:
            if stop is not None and stop():
                interrupted = True
                return
            yield log_

    try:
        result = mem.import_sessions(
            until_stopped(_sources(run, p, loader, selection)), progress=progress, written=written
        )
    except InvalidInput as exc:
        raise _with_hint(exc, p, format) from exc
    if result.deleted:  # sessions deleted earlier (their tombstones): left out, never brought back
        skipped["deleted_sessions"] += result.deleted
    if not interrupted:
        for u in run.written_users | {u for u in run.users if u in st.users}:
            st.users[u] = mem.count(u)
        st.save()
    return ImportSummary(
        path=str(p),
        format=fmt,
        index=str(mem.path) if mem.path is not None else ":memory:",
        sessions=result.sessions,
        unchanged=run.unchanged,
        added=result.added,
        replaced=result.replaced,
        users=sorted(run.users),
        files=run.files,
        files_unchanged=run.files_unchanged,
        skipped=dict(sorted(skipped.items())),
        problems=list(skipped.problems),
        seconds=round(time.perf_counter() - started, 3),
        state=str(state_file),
        interrupted=interrupted,
    )


def _sources(run: _Run, p: Path, loader: Loader, selection: str) -> Iterator[SessionLog]:
    for file, member in sources(loader, p):
        key = f"{selection}|{file.resolve()}" + (f"|{member}" if member else "")
        if loader.lines:
            yield from run.lines(file, loader, key)
        else:
            yield from run.document(file, loader, member, key)


def _with_hint(exc: InvalidInput, path: Path, given: str | None) -> InvalidInput:
    """When the format was given and the file looks like another one, say so."""
    if given is None:
        return exc
    try:
        detected = detect_format(path)
    except InvalidInput:
        return exc
    if detected == given:
        return exc
    return InvalidInput(f"{exc}; {path} looks like {LOADERS.get(detected).about} (format '{detected}')")


def watch(
    mem: Memory,
    path: str | os.PathLike[str],
    format: Format | None = None,
    *,
    interval: float = 5.0,
    stop: threading.Event | None = None,
    **options: Any,
) -> Iterator[ImportSummary]:
    """Import ``path`` now and then again every ``interval`` seconds, yielding each pass's summary, until
    ``stop`` is set (or the caller stops iterating). Unchanged files cost a ``stat`` each; growing logs are
    read from where the last pass stopped. ``options`` are those of :func:`import_path` (``rescan``
    applies to the first pass only)."""
    if interval <= 0:
        raise InvalidInput("interval: must be a positive number of seconds")
    fmt = format or detect_format(Path(path).expanduser())
    while True:
        yield import_path(mem, path, fmt, **options)  # type: ignore[arg-type]
        options["rescan"] = False
        if stop is None:
            time.sleep(interval)
        elif stop.wait(interval):
            return
