"""Which format a path holds, decided from its name and first bytes by asking each registered format
(:data:`~refind.loaders.LOADERS`, in order) about a :class:`~refind.loaders.Sample` of it; when none claims
it, an error that says what was found. And which files of a path a format reads (:func:`sources`)."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

from refind.errors import InvalidInput
from refind.loaders._base import Loader, Sample, keys_of, line_files, loads_json
from refind.loaders._registry import LOADERS

__all__ = ["FORMATS", "FORMAT_NAMES", "Format", "detect_format", "member_file", "sources"]

Format = str
"""A format's name: one of :data:`FORMATS` (a registered :class:`~refind.loaders.Loader`'s ``name``)."""

FORMATS: tuple[str, ...] = tuple(LOADERS.names())
"""The names of the formats registered when refind was imported, sorted."""
FORMAT_NAMES: dict[str, str] = {name: LOADERS.get(name).about for name in FORMATS}
"""What each of :data:`FORMATS` is, in words."""

_HEAD = 200_000


def _expected() -> str:
    return "; ".join(f"{LOADERS.get(name).about} ({name})" for name in LOADERS.names())


def _unknown(path: Path, found: str) -> InvalidInput:
    return InvalidInput(
        f"{path}: cannot tell the format: found {found}. Expected one of: {_expected()}; or name the format"
    )


def _members() -> dict[str, list[Loader]]:
    """The files exports hold their history in (``conversations.json``), each with the formats it may be."""
    out: dict[str, list[Loader]] = {}
    for loader in LOADERS:
        if loader.member is not None and not loader.lines:
            out.setdefault(loader.member, []).append(loader)
    return out


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def member_file(path: Path, name: str) -> tuple[Path, str | None] | None:
    """Where an export's ``name`` (``conversations.json``) is: the file in the directory ``path``, or the
    archive ``path`` and its member (the shortest path ending in ``name``), or None."""
    if path.is_dir():
        candidate = path / name
        return (candidate, None) if candidate.is_file() else None
    if path.suffix.lower() == ".zip":
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except zipfile.BadZipFile as exc:
            raise InvalidInput(f"{path}: not a readable zip archive ({exc})") from exc
        members = sorted((n for n in names if n.rsplit("/", 1)[-1] == name), key=len)
        return (path, members[0]) if members else None
    return None


def sources(loader: Loader, path: Path) -> list[tuple[Path, str | None]]:
    """The files ``loader`` reads at ``path``, each with the archive member to read (None: the file itself):
    every ``*.jsonl`` below a directory for a line format, the :attr:`~refind.loaders.Loader.member` of an
    export's directory or ``.zip``, else ``path``. A directory that holds nothing of the format is an
    :class:`~refind.InvalidInput`."""
    if loader.lines:
        return [(file, None) for file in line_files(path)]
    if loader.member is not None:
        found = member_file(path, loader.member)
        if found is not None:
            return [found]
        if path.is_dir():
            raise InvalidInput(f"{path}: a directory without {loader.member}; expected {loader.about}")
    elif path.is_dir():
        raise InvalidInput(f"{path}: is a directory; expected {loader.about}")
    return [(path, None)]


def detect_format(path: str | Path) -> Format:
    """Guess the format of ``path``: the first registered format that claims its sample. An export's
    directory or ``.zip`` is judged by the file it holds (``conversations.json``: a ChatGPT or Claude.ai
    export); a directory of ``.jsonl`` files, or a ``.jsonl`` file, by its lines (Claude Code session logs
    have ``sessionId``, refind JSONL ``user_id``); any other file by its first 200 kB (LoCoMo has
    ``conversation``, LongMemEval ``haystack_sessions``), then by its lines.

    Raises :class:`InvalidInput` saying what was found when it is none of them."""
    p = Path(path)
    if not p.exists():
        raise InvalidInput(f"{p}: no such file or directory")
    members = _members()
    for name, loaders in members.items():
        export = member_file(p, name)
        if export is None:
            continue
        file, member = export
        head = _head(file, member)
        found = _sniff_text(head, loaders)
        if found is not None:
            return found
        where = f"{file}:{member}" if member else str(file)
        expected = _or([loader.expected or loader.about for loader in loaders])
        raise InvalidInput(f"{where}: expected {expected}, found {_describe(head)}")
    held = _or(list(members)) if members else ""
    if p.is_dir():
        files = line_files(p)
        if not files:
            raise _unknown(p, "a directory with no .jsonl file" + (f" and no {held}" if held else ""))
        for f in files:
            fmt = _sniff_lines(f)
            if fmt is not None:
                return fmt
        line_formats = [loader for loader in LOADERS if loader.lines]
        none = "neither format" if len(line_formats) == 2 else "none of the line formats"
        raise _unknown(p, f"a directory of {len(files)} .jsonl files whose lines are {none} ({files[0]})")
    if p.suffix.lower() == ".zip":
        with zipfile.ZipFile(p) as zf:
            names = zf.namelist()
        shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
        raise _unknown(p, f"a zip archive without {held or 'a history'} (it holds {shown or 'nothing'})")
    if p.name.endswith((".jsonl", ".jsonl.gz")):
        fmt = _sniff_lines(p)
        if fmt is not None:
            return fmt
        raise _unknown(p, _describe_lines(p))
    head = _head(p)
    fmt = _sniff_text(head, [loader for loader in LOADERS if not loader.lines])
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


def _sniff_text(head: str, loaders: list[Loader]) -> Format | None:
    """The first of ``loaders`` (document formats) that claims the JSON document that starts with ``head``."""
    if head.lstrip()[:1] not in ("[", "{"):
        return None
    sample = Sample(text=head)
    for loader in loaders:
        if loader.sniff(sample):
            return loader.name
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
    """The line format that claims the first of ``path``'s first lines any claims."""
    loaders = [loader for loader in LOADERS if loader.lines]
    for rec in _records(path):
        if not isinstance(rec, dict):
            continue
        sample = Sample(record=rec)
        for loader in loaders:
            if loader.sniff(sample):
                return loader.name
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
