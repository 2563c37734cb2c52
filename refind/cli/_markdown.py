"""``refind export --format md``: stored sessions as Markdown for people, one section per session (its
title, source, project, dates, then each turn under a heading with its speaker and time)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import tzinfo
from typing import Any

import refind

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def text(value: str) -> str:
    """``value`` with its line ends made ``\\n`` and every other control character written out as
    ``\\xNN`` (a stored text never reaches a terminal or an editor raw)."""
    value = value.replace("\r\n", "\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def _inline(value: str) -> str:
    """``value`` on one line (headings and list items hold no line break)."""
    return " ".join(text(value).split())


def session(records: list[dict[str, Any]], tz: tzinfo | None, derived: str | None = None) -> str:
    """One session's records (as :meth:`refind.Memory.export` gives them, in turn order) as Markdown;
    ``derived``: the title derived from its first message when its import gave none."""
    first = records[0]
    sid = first["session_id"]
    title = first.get("title")
    heading = _inline(title) if title else (f"“{_inline(derived)}”" if derived else f"Session {_inline(sid)}")
    times = [int(r["timestamp"]) for r in records]
    lines = [f"# {heading}", "", f"- session: `{_inline(sid)}`", f"- user: {_inline(first['user_id'])}"]
    if not title and derived:
        lines.append("- title: its first message (the import gave it none)")
    for name in ("source", "project"):
        if first.get(name):
            lines.append(f"- {name}: {_inline(first[name])}")
    lines.append(f"- dates: {refind.format_range(min(times), max(times), tz=tz)}")
    lines.append(f"- messages: {len(records)}")
    for r in records:
        who = _inline(r.get("speaker") or r["role"])
        when = refind.format_date(int(r["timestamp"]), "minute", tz=tz)
        lines += ["", f"## {who} · {when} · turn {int(r['turn'])}", "", text(r["content"]).rstrip("\n")]
    return "\n".join(lines) + "\n"


def sessions(mem: refind.Memory, groups: Iterable[list[dict[str, Any]]], tz: tzinfo | None) -> Iterator[str]:
    """Each group of records (one session's) as Markdown, sessions separated by a rule."""
    for n, records in enumerate(groups):
        first = records[0]
        derived = None
        if not first.get("title"):
            derived = mem.derived_titles(first["user_id"], [first["session_id"]]).get(first["session_id"])
        yield ("\n---\n\n" if n else "") + session(records, tz, derived)
