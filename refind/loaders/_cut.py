"""Where an import cuts a message too long for the index (:data:`~refind.models.MAX_MESSAGE_CHARS`): the one
place of the import path that applies the limit. (The write path refuses such a message from any other caller,
``Memory.add`` or ``Memory.import_sessions``: ``refind.store.write.check_sizes``. An import cannot ask its
source to split a message, so it cuts it, with a mark, and names it; everything :func:`fit` returns passes
the write path's check.)

Two steps. While a file is read, every JSON string of it is cut (:class:`CutStrings`), so that a string of
gigabytes (a 2 MB zip can hold one of 2 GiB) never is in memory whole: what an import holds is bounded by
the longest message it keeps, not by its input. Then :func:`fit` cuts each message of a session to the limit,
with the mark a reader sees and the true length.

:class:`CutStrings` wraps a binary stream of JSON (a document or JSON lines) and passes it through
unchanged, except that a string longer than ``limit`` characters keeps its first ``limit`` characters (or
up to a piece more: the cut falls at the end of the piece of input where the limit was reached) and ends
with a mark that holds how many characters were left out. :func:`uncut` takes the marks out of a decoded
text and says how many characters they stand for, so :func:`fit` stores the message cut with its own mark
and the true length. A mark holds a secret made when this module
is loaded, so input cannot forge one.

The stream is scanned with regular expressions a piece (1 MiB) at a time: outside strings only quotes are
looked for; inside one, escapes are read whole (``\\"`` does not end it) and a raw newline ends it (JSON
allows none inside a string: a JSON line's broken string does not run into the next line). Characters are
counted as Python counts them (UTF-8 lead bytes; an escape, or an escaped surrogate pair, is one), and only
for strings longer than ``limit`` bytes or that span pieces.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import TYPE_CHECKING, Any, TypeVar

from refind.models import MAX_MESSAGE_CHARS, SessionLog

if TYPE_CHECKING:
    from refind.loaders._base import Skipped

__all__ = ["CutStrings", "fit", "uncut"]

_Log = TypeVar("_Log", bound=SessionLog)

PIECE = 1 << 20
"""Bytes of input scanned at a time (and at most how far past ``limit`` a cut string may run)."""

_SECRET = secrets.token_hex(8)
_MARK = re.compile(f"\x00refind-cut-{_SECRET}:([0-9]+)\x00")
_SKIP = re.compile(rb'(?:[^"]++|"(?:[^"\\\n]++|\\[^\n])*+")*+')
# the body of a string from where the scan stands: plain bytes and whole escapes, up to a quote, a newline
# or the end of the piece (a lone backslash at the end stays out: its escape continues in the next piece)
_BODY = re.compile(rb'(?:[^"\\\n]++|\\[^\n])*+')
_ESCAPE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.", re.DOTALL
)
_CONTINUATION = bytes(range(0x80, 0xC0))


def _chars(raw: bytes) -> int:
    """Characters of a string's raw JSON bytes (whole escapes and UTF-8 sequences), as Python counts them."""
    if b"\\" not in raw:
        return len(raw.translate(None, _CONTINUATION))
    try:  # json's decoder counts escapes fastest (a third of the time of a regular expression)
        return len(json.loads(b'"' + raw + b'"', strict=False))
    except ValueError:  # not UTF-8, or an escape JSON has not: counted as the decoder would
        return len(_ESCAPE.sub(b"x", raw).translate(None, _CONTINUATION))


def _mark(dropped: int) -> bytes:
    return b"\\u0000refind-cut-%s:%d\\u0000" % (_SECRET.encode(), dropped)


def uncut(text: str) -> tuple[str, int]:
    """``text`` without the marks :class:`CutStrings` left in it, and how many characters they stand for
    (0: nothing was cut)."""
    if "\x00refind-cut-" not in text:
        return text, 0
    dropped = 0

    def take(found: re.Match[str]) -> str:
        nonlocal dropped
        dropped += int(found.group(1))
        return ""

    return _MARK.sub(take, text), dropped


_HIGH = (b"d8", b"d9", b"da", b"db")
_HIGH_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


def _escapes(data: bytes, start: int, k: int) -> bool:
    """Whether the backslash at ``k`` starts an escape (an even number of backslashes before it, back to
    ``start``, where the string's bytes start at an escape's boundary)."""
    slashes = 0
    while k - slashes - 1 >= start and data[k - slashes - 1] == 0x5C:
        slashes += 1
    return slashes % 2 == 0


def _safe_end(data: bytes, start: int, end: int) -> int:
    """Where the string bytes ``data[start:end]`` (``start`` at an escape's boundary) may stop so that no
    escape, escaped surrogate pair or UTF-8 sequence is split: the rest waits for the next piece."""
    low = max(start, end - 11)
    k = data.rfind(b"\\u", low, end)
    while k >= 0:
        if _escapes(data, start, k):
            whole = 6 if end - k >= 4 and data[k + 2 : k + 4].lower() not in _HIGH else 12
            if end - k < whole:
                if k - 6 >= start and _HIGH_ESCAPE.fullmatch(data, k - 6, k) and _escapes(data, start, k - 6):
                    return k - 6  # a surrogate pair's first half goes with its second
                return k
            break
        k = data.rfind(b"\\u", low, k)
    for back in range(1, min(3, end - start) + 1):
        byte = data[end - back]
        if byte >= 0xC0:  # a lead byte: whole only with all of its continuation bytes
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return end - back if back < need else end
        if byte < 0x80:
            break
    return end


class CutStrings:
    """A binary stream (``read``) of the JSON in ``raw``, with every string over ``limit`` characters cut
    (module docstring); ``cut`` counts the strings cut so far."""

    def __init__(self, raw: Any, limit: int = MAX_MESSAGE_CHARS, piece: int = PIECE) -> None:
        self._raw = raw
        self._limit = limit
        self._piece = piece
        self._carry = b""
        self._out = bytearray()
        self._eof = False
        self._in_string = False
        self._bytes = 0  # of the current string, so far
        self._count = 0  # its characters so far (counted only once it may pass the limit)
        self._cutting = False  # its characters from here on are left out
        self._dropped = 0  # how many were
        self.cut = 0

    def read(self, n: int = -1) -> bytes:
        if n == 0:
            return b""  # ijson probes a stream's type with read(0)
        while not self._eof and (n < 0 or len(self._out) < n):
            data = self._raw.read(self._piece)
            if not data:
                self._eof = True
                self._scan(b"", final=True)
            else:
                self._scan(bytes(data), final=False)
        if n < 0 or n >= len(self._out):
            taken = bytes(self._out)
            self._out.clear()
            return taken
        taken = bytes(self._out[:n])
        del self._out[:n]
        return taken

    def _scan(self, piece: bytes, final: bool) -> None:
        data = self._carry + piece if self._carry else piece
        self._carry = b""
        n, pos, emit = len(data), 0, 0
        out = self._out
        while pos < n:
            if not self._in_string:
                # what lies between strings, and every string that ends in this piece (it is at most a
                # piece long: kept whole), in one match; it stops at a string that does not end here
                pos = _SKIP.match(data, pos).end()  # type: ignore[union-attr]
                if pos >= n:
                    break
                pos += 1  # past the opening quote
                self._in_string, self._bytes, self._count = True, 0, 0
                self._cutting, self._dropped = False, 0
                continue
            end = _BODY.match(data, pos).end()  # type: ignore[union-attr]  # (it matches the empty string)
            lone = end == n - 1 and data[end] == 0x5C  # a backslash whose escape is in the next piece
            stop = end < n and not lone  # a quote, a raw newline, or a backslash before one: the string ends
            if not stop and not final:
                safe = _safe_end(data, pos, end)
                self._carry = data[safe:]
                end = n = safe
            size = end - pos
            if self._cutting:  # left out, counted
                out += data[emit:pos]
                emit = end
                self._dropped += _chars(data[pos:end])
            elif self._bytes + size > self._limit or not stop:
                self._count += _chars(data[pos:end])
                if self._count > self._limit and not stop:
                    self._cutting = True  # kept up to here; what follows is left out
            self._bytes += size
            pos = end
            if stop or final:
                if self._dropped:  # (a string cut just before its closing quote lost nothing: no mark)
                    out += data[emit:pos]
                    out += _mark(self._dropped)
                    emit = pos
                    self.cut += 1
                self._in_string = False
                if stop and data[pos] != 0x0A:
                    pos += 1  # past the closing quote (or a broken escape's backslash)
        out += data[emit:n]


def fit(log_: _Log, skipped: Skipped) -> _Log:
    """``log_`` with each message over :data:`~refind.models.MAX_MESSAGE_CHARS` cut to it, with a mark saying
    how much was left out (``[… cut by refind import: N more characters]``), each one counted and named in
    ``skipped`` (``cut_messages``). A message cut while it was read (:class:`CutStrings`) counts at its true
    length."""
    if all(len(m.content) <= MAX_MESSAGE_CHARS for m in log_.messages):
        return log_
    messages = []
    for i, m in enumerate(log_.messages):
        text, dropped = uncut(m.content)
        n = len(text) + dropped
        if n > MAX_MESSAGE_CHARS:
            mark = f"\n[… cut by refind import: {n - MAX_MESSAGE_CHARS:,} more characters]"
            m = m.model_copy(update={"content": text[: MAX_MESSAGE_CHARS - len(mark)] + mark})
            where = getattr(log_, "source", None) or "the input"
            skipped.problem(
                "cut_messages",
                f"{where}: session {log_.session_id}: message {m.id or i} has {n:,} characters; kept "
                f"its first {MAX_MESSAGE_CHARS:,} (a message holds at most that)",
            )
        messages.append(m)
    return log_.model_copy(update={"messages": messages})
