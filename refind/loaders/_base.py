"""What every loader shares: what a loader is (:class:`Loader`, the protocol every format implements, and the
:class:`Sample` detection shows it), reading JSON (plain, gzipped or inside a zip), the session type importers
yield, the counter of skipped records, and small text helpers for markers."""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
import zipfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from refind._collector import collector_paused
from refind.errors import InvalidInput
from refind.loaders._cut import CutStrings
from refind.models import Message, SessionLog, to_epoch_ms, validation_message

__all__ = [
    "DEFAULT_USER",
    "Cursor",
    "ImportedSession",
    "Loader",
    "Sample",
    "Skipped",
    "json_list",
    "loads_json",
    "read_json",
]

DEFAULT_USER = "me"
"""The user id personal histories (ChatGPT, Claude, Claude Code) are stored under unless told otherwise."""

# epoch seconds outside 1973..2200 are not a chat timestamp (epoch ms would be, and is refused)
_MIN_S, _MAX_S = 100_000_000, 7_258_118_400


class ImportedSession(SessionLog):
    """A :class:`~refind.models.SessionLog` with what the source says about the session besides its
    messages and info (``title``: a ChatGPT or Claude conversation's title, a Claude Code session's summary;
    ``source``: the app; ``project``: a Claude Code session's ``cwd``): ``file``, the file it came from, and
    ``metadata`` (e.g. a Claude Code session's ``cwd`` and ``gitBranch``).

    :meth:`refind.Memory.import_sessions` takes it like any SessionLog; the index keeps the messages, the
    title, the source and the project (not ``file`` or ``metadata``)."""

    file: str | None = None
    metadata: dict[str, str] = {}


class Skipped(Counter[str]):
    """What a loader skipped, counted by reason (it is a ``Counter``), plus the records it could not read,
    each named with where it is and why (``problems``, the first :attr:`MAX_NAMED` of them).

    Loaders take any ``Counter[str]``; pass a ``Skipped`` to also learn which records were unreadable."""

    MAX_NAMED = 20

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def problem(self, reason: str, description: str) -> None:
        """Count one unreadable record under ``reason`` and name it (``description`` says where and why)."""
        self[reason] += 1
        if len(self.problems) < self.MAX_NAMED:
            self.problems.append(description)


Cursor = dict[str, Any]
"""Where a line format's read stopped (:meth:`Loader.read_from`): a JSON object with ``offset`` and ``line``."""


@dataclass(frozen=True, slots=True)
class Sample:
    """What detection shows a loader so it can tell whether a file is of its format (:meth:`Loader.sniff`).

    ``text``: the first 200 kB of a file read whole, decoded (a document format looks at it; it starts with
    ``[`` or ``{``). ``record``: one line of a JSON Lines file, decoded (a line format looks at it; detection
    asks about each of the first 20 lines in turn, and the first line a format claims decides)."""

    text: str = ""
    record: dict[str, Any] | None = None


class Loader:
    """One format of chat history: what ``refind import`` dispatches on. Subclass it, set the attributes, write
    :meth:`sniff` and :meth:`read` (and :meth:`read_from` for a line format), and add an instance to the table
    in ``refind/loaders/_registry.py`` (or :meth:`refind.loaders.Loaders.register` it at run time). The
    import state, the skipping of unchanged files and sessions, the cut of over-long messages, ``--user`` and
    ``--as-user`` are the registry's and :func:`refind.loaders.import_path`'s, the same for every format.

    Two shapes: a *document* format (``lines`` false) is one JSON value per file, read whole (an import skips
    the conversations it already has); a *line* format (``lines`` true) is JSON Lines, read from the byte
    where the last import stopped (:meth:`read_from`), and a directory means every ``*.jsonl`` below it."""

    name: str = ""
    """The ``--format`` value (``"claude-code"``), and the ``format`` of an import's summary."""
    title: str = ""
    """The app or data set (``"Claude Code"``), in help text."""
    about: str = ""
    """What a file of the format is, in errors: ``"a ChatGPT export (conversations.json or the export .zip)"``."""
    help: str = ""
    """Its line in ``refind import --help`` (a newline continues it on the next line)."""
    personal: bool = False
    """One person's history: its sessions are stored under the ``user_id`` :meth:`read` is given
    (:data:`DEFAULT_USER` or ``--as-user``); else the file names its users."""
    lines: bool = False
    """JSON Lines, read from a byte offset (:meth:`read_from`); else one JSON document read whole."""
    member: str | None = None
    """The file an export's folder or ``.zip`` holds the format in (``"conversations.json"``), or None."""
    expected: str = ""
    """What the data inside :attr:`member` must look like, in the error when it is none of the formats that
    use that member (defaults to :attr:`about`)."""

    def sniff(self, sample: Sample) -> bool:
        """Whether ``sample`` (the head of a document, or one line of a line format) is of this format."""
        return False

    def read(
        self,
        path: Path,
        skipped: Counter[str] | None = None,
        *,
        user_id: str = DEFAULT_USER,
        member: str | None = None,
    ) -> Iterator[SessionLog]:
        """The sessions of one file (``member`` of it when it is an archive holding :attr:`member`), in
        source order; ``user_id`` is the user of a personal history. What is left out is counted in
        ``skipped`` (a :class:`Skipped` also names the records that could not be read). A line format reads
        the whole file through :meth:`read_from`."""
        if not self.lines:
            raise NotImplementedError(f"format {self.name!r} has no read")
        sessions, _ = self.read_from(path, None, skipped, user_id=user_id)
        yield from sessions

    def read_from(
        self,
        path: Path,
        cursor: Cursor | None,
        skipped: Counter[str] | None = None,
        *,
        user_id: str = DEFAULT_USER,
    ) -> tuple[Sequence[SessionLog], Cursor]:
        """A line format's incremental read: the sessions in the complete lines of ``path`` after ``cursor``
        (from the start when None), and the cursor after them. A cursor is a JSON object holding at least
        ``offset`` (the byte after the last complete line read) and ``line`` (the next line's number); a
        format may keep more in it (what a later read of the rest needs to know). Sessions hold only the
        messages of the lines read."""
        raise NotImplementedError(f"format {self.name!r} is not read line by line")

    def __repr__(self) -> str:
        return f"<loader {self.name}>"


def skip(skipped: Counter[str] | None, reason: str, n: int = 1) -> None:
    """Count ``n`` deliberately skipped records (system messages, empty ones, ...)."""
    if skipped is not None and n:
        skipped[reason] += n


def unreadable(skipped: Counter[str] | None, reason: str, description: str) -> None:
    """Count one record that could not be read and, when ``skipped`` is a :class:`Skipped`, name it."""
    if isinstance(skipped, Skipped):
        skipped.problem(reason, description)
    elif skipped is not None:
        skipped[reason] += 1


def read_json(path: str | Path, member: str | None = None) -> Any:
    """Read a .json or .json.gz file (or ``member`` of a .zip archive), raising InvalidInput with the reason
    when it is not JSON. What is unpacked (and a file over :data:`STREAM_BYTES`) is read through
    :class:`~refind.loaders._cut.CutStrings`: a string over a message's limit is cut while it is read."""
    p = Path(path)
    try:
        if member is not None:
            with zipfile.ZipFile(p) as zf, zf.open(member) as fh:
                raw = CutStrings(fh).read()
        elif p.suffix == ".gz":
            with gzip.open(p, "rb") as fh:
                raw = CutStrings(fh).read()
        elif p.stat().st_size > STREAM_BYTES:
            with p.open("rb") as fh:
                raw = CutStrings(fh).read()
        else:
            raw = p.read_bytes()
        return _loads(raw)
    except FileNotFoundError as exc:
        raise InvalidInput(f"{p}: no such file") from exc
    except KeyError as exc:
        raise InvalidInput(f"{p}: the archive has no {member}") from exc
    except zipfile.BadZipFile as exc:
        raise InvalidInput(f"{p}: not a readable zip archive ({exc})") from exc
    except (OSError, ValueError) as exc:
        where = f"{p}:{member}" if member else str(p)
        raise InvalidInput(f"{where}: not readable as JSON ({exc})") from exc


STREAM_BYTES = 64 * 1024 * 1024
"""A JSON list file larger than this (uncompressed) is streamed one item at a time instead of decoded
whole, so an import's memory does not grow with the export's size (docs/import.md)."""


# ijson's buffer: a string that spans many buffers costs time quadratic in their number (20 MB of text took
# 7.7 s with ijson's default 64 KiB, 0.22 s with 16 MiB)
_STREAM_BUFFER = 16 * 1024 * 1024


def _json_size(p: Path, member: str | None) -> int:
    try:
        if member is not None:
            with zipfile.ZipFile(p) as zf:
                return zf.getinfo(member).file_size
        return p.stat().st_size
    except (OSError, KeyError, zipfile.BadZipFile):
        return 0  # read_json says what is wrong


def json_list(path: str | Path, member: str | None, expected: str, key: str | None = None) -> Iterator[Any]:
    """The items of a JSON list in ``path`` (or ``member`` of a .zip), or of the list under ``key`` of a
    top-level object. Decoded whole when at most :data:`STREAM_BYTES`; larger, streamed item by item
    (ijson), so only one item is decoded at a time, its strings cut while read (:class:`CutStrings`). Raises InvalidInput naming the file and ``expected``
    when the JSON is not such a list, or is not JSON."""
    p = Path(path)
    where = f"{p}:{member}" if member else str(p)
    if _json_size(p, member) <= STREAM_BYTES:
        data = read_json(p, member)
        if key is not None and isinstance(data, dict) and isinstance(data.get(key), list):
            data = data[key]
        if not isinstance(data, list):
            raise InvalidInput(f"{where}: expected {expected}, found {keys_of(data)}")
        yield from data
        return
    import ijson

    with contextlib.ExitStack() as stack:
        try:
            if member is not None:
                raw: Any = stack.enter_context(stack.enter_context(zipfile.ZipFile(p)).open(member))
            else:
                raw = stack.enter_context(p.open("rb"))
            fh = CutStrings(raw)  # a string of gigabytes is cut as it streams, never held whole
            head = fh.read(1)
            while head and head in b" \t\r\n":
                head = fh.read(1)
        except OSError as exc:
            raise InvalidInput(f"{where}: {exc.strerror or exc}") from exc
        if head not in (b"[", b"{") or (head == b"{" and key is None):
            raise InvalidInput(f"{where}: expected {expected}, found JSON that is not a list")
        prefix = "item" if head == b"[" else f"{key}.item"
        n = 0
        items = ijson.items(_Prepend(head, fh), prefix, use_float=True, buf_size=_STREAM_BUFFER)
        try:
            for item in items:
                n += 1
                yield item
        except (ijson.JSONError, OSError, ValueError, RecursionError) as exc:
            raise InvalidInput(f"{where}: not readable as JSON ({clip(str(exc), 200)})") from exc
        if n == 0 and head == b"{":
            raise InvalidInput(f"{where}: expected {expected}, found an object without a {key!r} list")


class _Prepend:
    """A binary stream with ``head`` put back in front (what was read to see the JSON's first byte)."""

    def __init__(self, head: bytes, fh: Any) -> None:
        self._head = head
        self._fh = fh

    def read(self, n: int = -1) -> bytes:
        if n == 0:
            return b""  # ijson probes the stream's type with read(0)
        if self._head:
            head, self._head = self._head, b""
            return head + (
                bytes(self._fh.read(n - 1)) if n > 1 else b"" if n == 1 else bytes(self._fh.read())
            )
        return bytes(self._fh.read(n))


def loads_json(raw: str | bytes) -> Any:
    """``json.loads``, with JSON nested too deeply to decode (``[[[[...`` 100,000 levels) a ``ValueError``
    like any other undecodable input, not a ``RecursionError``."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError(
            "nested too deeply to decode (arrays or objects more than about 1,000 levels deep)"
        ) from None


def _loads(raw: bytes) -> Any:
    """JSON decoding by pydantic-core's parser (a third faster than ``json.loads``), with the cyclic garbage
    collector paused: decoding builds millions of objects, none of them in a cycle, and the collections
    their allocation triggers took half the time of a 50 MB export."""
    with collector_paused():
        return pydantic_core.from_json(raw)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects alive now (a whole decoded export) out of the garbage collector's passes while
    converting them: with a 50 MB tree alive, each full collection walks all of it, which cost a quarter of
    the conversion time. ``gc.freeze`` moves them to the permanent generation; they return at the end."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def parse_date(text: str | None, where: str) -> int | None:
    if not text:
        return None
    try:
        return to_epoch_ms(text)
    except ValueError as exc:
        raise InvalidInput(f"{where}: {exc}") from exc


def message(raw: dict[str, Any], where: str) -> Message:
    try:
        return Message.parse(raw)
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc, prefix=where)) from exc


def make_message(
    role: str, content: str, timestamp: int | None, message_id: str, speaker: str | None = None
) -> Message:
    """A validated :class:`Message` (an invalid value raises pydantic's ValidationError naming the field)."""
    return Message.model_validate(
        {"role": role, "content": content, "timestamp": timestamp, "speaker": speaker, "id": message_id}
    )


def seconds_to_ms(value: Any) -> int | None:
    """Epoch seconds (int or float, as ChatGPT writes them) to epoch ms; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not _MIN_S <= value <= _MAX_S:
        return None
    return int(round(value * 1000))


def iso_to_ms(value: Any) -> int | None:
    """An ISO 8601 timestamp (``2025-06-20T10:00:00.000Z``) to epoch ms; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return to_epoch_ms(value)
    except ValueError:
        return None


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def first_lines(text: str, lines: int = 5, width: int = 200) -> str:
    """The first ``lines`` non-blank lines of ``text`` (each cut to ``width``), and how many more there were."""
    rows = [row.rstrip() for row in text.splitlines() if row.strip()]
    shown = [row if len(row) <= width else row[: width - 1] + "…" for row in rows[:lines]]
    if len(rows) > lines:
        shown.append(f"… ({len(rows) - lines} more lines)")
    return "\n".join(shown)


def keys_of(value: Any, limit: int = 8) -> str:
    """A short description of a JSON value, for errors that say what was found."""
    if isinstance(value, dict):
        keys = sorted(str(k) for k in value)
        more = f", … ({len(keys)} keys)" if len(keys) > limit else ""
        return "an object with keys " + (", ".join(keys[:limit]) + more if keys else "(none)")
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def line_files(path: str | Path) -> list[Path]:
    """The files a line format reads at ``path``: ``path`` itself, or every ``*.jsonl`` file below the
    directory ``path``, in name order."""
    p = Path(path)
    if p.is_dir():
        return sorted(f for f in p.rglob("*.jsonl") if f.is_file())
    return [p]


class _Offsets:
    """A binary file read from ``start`` that remembers the offset after the last newline it read."""

    def __init__(self, fh: Any, start: int) -> None:
        self._fh = fh
        self.offset = start
        self.after_newline = start

    def read(self, n: int = -1) -> bytes:
        data: bytes = self._fh.read(n)
        newline = data.rfind(b"\n")
        if newline >= 0:
            self.after_newline = self.offset + newline + 1
        self.offset += len(data)
        return data


def read_lines(path: Path, start: int = 0) -> tuple[list[bytes], int]:
    """The complete lines of ``path`` from byte offset ``start`` and the offset just past the last of them.

    A last line without its newline counts as complete only when it parses as JSON: a log being written
    may end in half a line, which the next read picks up whole. The file is read in pieces through
    :class:`CutStrings`, so a line holding a string of gigabytes is never held whole (the newlines, and so
    the offsets, are the file's)."""
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            read = _Offsets(fh, start)
            data = CutStrings(read).read()
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror or exc}") from exc
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the data ends with a newline
    end = read.after_newline
    if tail.strip():
        try:
            loads_json(tail)
        except ValueError:
            pass  # half a line: leave it for the next read
        else:
            lines.append(tail)
            end = read.offset
    return lines, end


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (sources omit or null what they like)."""
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str:
    """``value`` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""
