"""``refind sessions``, ``show``, ``export`` and ``delete-session``: what is stored, seen and managed."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import tzinfo
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.table import Table
from rich.text import Text

import refind
from refind.cli import _daemon, _markdown
from refind.cli._app import (
    _CONTEXT,
    DEFAULT_USER,
    _data_option,
    _Failure,
    _location,
    _no_daemon_option,
    _open,
    _zone,
    main,
)
from refind.cli._terminal import _plural, err, json_text, out

_USER_HELP = "Whose sessions (imports of personal histories use 'me')."


def _user_option(command: Any) -> Any:
    return click.option("--user", "-u", default=DEFAULT_USER, show_default=True, help=_USER_HELP)(command)


def _when(first: int, last: int, tz: tzinfo | None = None) -> str:
    """The days from ``first`` to ``last``, short: ``2024-05-01``, ``2024-05-01 - 05-03``."""
    a, b = refind.format_date(first, "day", tz=tz), refind.format_date(last, "day", tz=tz)
    if a == b:
        return a
    return f"{a} - {b[5:]}" if a[:4] == b[:4] else f"{a} - {b}"


def _table(names: list[str], cells: list[list[str]], width: int) -> Table:
    """The sessions table fitted to ``width`` columns: ids, dates and counts whole (never wrapped), the
    source cut at 11 characters (6 when narrow), the title taking what is left (cut with an ellipsis, at
    least 8)."""
    widths = [max(len(names[i]), *(len(row[i]) for row in cells)) for i in range(len(names))]
    widths[2] = min(widths[2], 11)
    gaps = 3 * (len(names) - 1)  # a column's padding on each side of the box's blank separator
    over = sum(widths) - widths[1] + 8 + gaps - width  # what does not fit beside an 8-character title
    if over > 0:
        widths[2] -= min(over, max(0, widths[2] - 6))
    widths[1] = max(8, min(widths[1], width - (sum(widths) - widths[1]) - gaps))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for i, name in enumerate(names):
        table.add_column(
            name, width=widths[i], no_wrap=True, overflow="ellipsis", justify="right" if i == 4 else "left"
        )
    for row in cells:
        table.add_row(*row)
    return table


def _title(title: str | None, derived: bool) -> str:
    """A session's title; one derived from its first message in quotes (it is what the person wrote)."""
    if not title:
        return ""
    return f"“{title}”" if derived else title


def _payload(
    ctx: click.Context, data: Path | None, no_daemon: bool, name: str, params: dict[str, Any]
) -> dict[str, Any]:
    """The daemon's answer to ``name`` when it has one, else the same computed in this process."""
    payload = None if no_daemon else _daemon.ask(_location(ctx, data), name, params)
    if payload is None:
        with _open(ctx, data, read_only=True) as mem:
            payload = _daemon.OPS[name](mem, **params)
    return payload


# ---------------------------------------------------------------------------------------------- sessions


@_daemon.op("sessions")
def _sessions_payload(
    mem: refind.Memory, user: str, source: str | None, project: str | None, limit: int, offset: int
) -> dict[str, Any]:
    rows = mem.sessions(user, source=source, project=project, limit=limit, offset=offset)
    short = mem.short_ids(user, [r.session_id for r in rows])
    return {"rows": [r.model_dump(mode="json") for r in rows], "short": short}


@main.command(context_settings=_CONTEXT)
@_data_option
@_user_option
@click.option(
    "--source", default=None, help="Only sessions from this app (chatgpt, claude, claude-code, jsonl)."
)
@click.option(
    "--project", default=None, help="Only sessions of this project (a Claude Code working directory)."
)
@click.option(
    "--limit", type=click.IntRange(1, 100_000), default=50, show_default=True, help="Sessions shown."
)
@click.option("--offset", type=click.IntRange(0), default=0, help="Sessions skipped (the next page).")
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as JSON lines (for scripts).")
@_no_daemon_option
@click.pass_context
def sessions(
    ctx: click.Context,
    data: Path | None,
    user: str,
    source: str | None,
    project: str | None,
    limit: int,
    offset: int,
    as_json: bool,
    no_daemon: bool,
) -> None:
    """List USER's stored sessions, the most recent first: id, title, source, dates, messages (read-only).

    An id is shown by its shortest unambiguous start (at least 8 characters), which every command that
    takes a session accepts; --json prints whole ids. A title in quotes is the session's first message:
    its import gave it none.

    \b
    Examples:
      refind sessions
      refind sessions --source claude-code --limit 20
      refind sessions --json --offset 50
    """
    params = {"user": user, "source": source, "project": project, "limit": limit + 1, "offset": offset}
    payload = _payload(ctx, data, no_daemon, "sessions", params)
    rows = [refind.SessionSummary.model_validate(r) for r in payload["rows"]]
    more = len(rows) > limit
    rows = rows[:limit]
    if as_json:
        for r in rows:
            click.echo(json_text(r.model_dump_json()))
    elif not rows:
        out.print("No sessions." if offset == 0 else f"No sessions after the first {offset}.")
    else:
        short: dict[str, str] = payload.get("short") or {}
        zone = _zone(ctx)
        cells = [
            [
                short.get(r.session_id, r.session_id), _title(r.title, r.title_derived), r.source or "",
                _when(r.first, r.last, zone), str(r.messages),
            ]
            for r in rows
        ]  # fmt: skip
        names = ["session", "title", "source", "dates", "msgs"]
        fixed = [max(len(names[i]), *(len(row[i]) for row in cells)) for i in (0, 3, 4)]
        if sum(fixed) + 8 + 6 + 12 <= out.width:
            out.print(_table(names, cells, out.width))
        else:  # too narrow for a table: a session on two lines, its id whole
            for sid, title, source, when, n in cells:
                out.print(Text.assemble((sid, "bold"), "  ", title), soft_wrap=True)
                out.print(Text(" · ".join(v for v in (source, when, f"{n} messages") if v), "dim"))
    if more:
        err.print(Text(f"More sessions follow: --offset {offset + limit}", style="dim"))


# ---------------------------------------------------------------------------------------------- show


@_daemon.op("show")
def _show_payload(mem: refind.Memory, user: str, session: str, turn_from: int, limit: int) -> dict[str, Any]:
    session = mem.resolve_session(user, session)
    info = mem.session_info(user, session)
    turns = mem.window(user, session, turn_from, turn_from + limit) if info is not None else []
    return {
        "info": info.model_dump(mode="json") if info is not None else None,
        "turns": [t.model_dump(mode="json") for t in turns],
    }


@main.command(context_settings=_CONTEXT)
@_data_option
@click.argument("session")
@_user_option
@click.option("--from", "turn_from", type=click.IntRange(0), default=0, help="First turn shown.")
@click.option("--limit", type=click.IntRange(1, 100_000), default=200, show_default=True, help="Turns shown.")
@click.option("--json", "as_json", is_flag=True, help="Print the session and its turns as JSON.")
@_no_daemon_option
@click.pass_context
def show(
    ctx: click.Context,
    data: Path | None,
    session: str,
    user: str,
    turn_from: int,
    limit: int,
    as_json: bool,
    no_daemon: bool,
) -> None:
    """Show one stored SESSION of USER, turn by turn (read-only; --from and --limit page a long one).
    SESSION is its id or a unique start of it (as `refind sessions` shows it).

    \b
    Examples:
      refind show 6612f0a1-2222-4c1e-9e0a-000000000002
      refind show 6612f0a1-2
      refind show 5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f --from 4 --limit 3 --json
    """
    params = {"user": user, "session": session, "turn_from": turn_from, "limit": limit}
    payload = _payload(ctx, data, no_daemon, "show", params)
    if payload["info"] is None:
        raise _Failure(f"user {user!r} has no session {session!r}; `refind sessions` lists them")
    info = refind.SessionSummary.model_validate(payload["info"])
    session = info.session_id
    turns = [refind.Hit.model_validate(t) for t in payload["turns"]]
    more = len(turns) > limit
    turns = turns[:limit]
    zone = _zone(ctx)
    if as_json:
        body = {"session": info.model_dump(), "turns": [t.model_dump(exclude={"score"}) for t in turns]}
        click.echo(json_text(json.dumps(body, ensure_ascii=False, indent=2)))
    else:
        title = Text(_title(info.title, info.title_derived) or session, style="bold")
        out.print(title)
        details = [
            f"session {session}",
            _when(info.first, info.last, zone),
            _plural(info.messages, "message"),
        ]
        details += [v for v in (info.source, info.project) if v]
        out.print(Text(" · ".join(details), style="dim"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(justify="right", style="dim", no_wrap=True, min_width=3)
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for t in turns:
            who = Text(t.speaker or t.role, style="magenta" if t.role == "user" else "blue")
            grid.add_row(
                str(t.turn), refind.format_date(t.timestamp, "minute", tz=zone), who, Text(t.content)
            )
        out.print(grid)
        if not turns:
            out.print(Text(f"No turns from {turn_from} on.", style="yellow"))
    if more:
        err.print(Text(f"More turns follow: --from {turns[-1].turn + 1}", style="dim"))


# ---------------------------------------------------------------------------------------------- export


def _write(chunks: Iterable[str], write: Callable[[str], object]) -> int:
    """Write ``chunks`` (JSON lines, or a session's Markdown each); how many."""
    n = 0
    for chunk in chunks:
        write(chunk)
        n += 1  # noqa: SIM113 - the chunks are a generator
    return n


@main.command(context_settings=_CONTEXT)
@_data_option
@click.option("--user", "-u", default=None, help="Only this user's messages (default: every user's).")
@click.option(
    "--session",
    "-s",
    default=None,
    help="Only this session (its id or a unique start of it; --user defaults to me then).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "md"]),
    default="jsonl",
    show_default=True,
    help="jsonl: refind's records, which `refind import` reads back; md: Markdown to read, a session a "
    "section, dates in --tz.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file (replaced only once complete). Default: stdout.",
)
@click.pass_context
def export(
    ctx: click.Context,
    data: Path | None,
    user: str | None,
    session: str | None,
    fmt: str,
    output: Path | None,
) -> None:
    """Export the stored messages as JSONL, one message per line with its session's title, source and
    project: `refind import` reads it back into the same messages (read-only). --format md writes them as
    Markdown instead, for people: each session with its title, dates and turns.

    \b
    Examples:
      refind export -o history.jsonl
      refind export --user me | head -3
      refind --data copy import history.jsonl
      refind export --session 6612f0a1-2 --format md -o lisbon.md
    """
    n = 0
    with _open(ctx, data, read_only=True) as mem:
        if session is not None:
            user = user or DEFAULT_USER
            session = mem.resolve_session(user, session)
            if mem.session_info(user, session) is None:
                raise _Failure(f"user {user!r} has no session {session!r}; `refind sessions` lists them")
        records = mem.export(user, session)
        chunks: Iterable[str]
        if fmt == "md":
            chunks = _markdown.sessions(mem, _grouped(records), _zone(ctx))
        else:
            chunks = (json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        if output is None:
            try:
                n = _write(chunks, lambda line: sys.stdout.write(json_text(line) if fmt != "md" else line))
                sys.stdout.flush()
            except BrokenPipeError:  # `refind export | head`: the reader had enough
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return
        else:
            tmp = output.with_name(output.name + ".part")
            try:
                with tmp.open("w", encoding="utf-8") as fh:
                    n = _write(chunks, fh.write)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, output)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise _Failure(f"cannot write {output}: {exc.strerror or exc}") from None
    what = _plural(n, "session") if fmt == "md" else _plural(n, "message")
    err.print(Text(f"Exported {what}" + (f" to {output}" if output else ""), style="dim"))


def _grouped(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Consecutive records of one (user, session): a session's records, as :meth:`Memory.export` gives them."""
    group: list[dict[str, Any]] = []
    for r in records:
        if group and (group[0]["user_id"], group[0]["session_id"]) != (r["user_id"], r["session_id"]):
            yield group
            group = []
        group.append(r)
    if group:
        yield group


# ---------------------------------------------------------------------------------------------- delete-session


@main.command("delete-session", context_settings=_CONTEXT)
@_data_option
@click.argument("session")
@_user_option
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--restore",
    is_flag=True,
    help="Undo a deletion: forget that SESSION was deleted, so a later import that holds it writes it again.",
)
@click.pass_context
def delete_session(
    ctx: click.Context, data: Path | None, session: str, user: str, yes: bool, restore: bool
) -> None:
    """Delete one SESSION of USER from the index: its messages, title and source, durably. SESSION is its
    id or a unique start of it.

    The deleted session's id is kept (a tombstone, counted by `refind stats`), so importing an export that
    still holds it leaves it out instead of bringing it back. --restore undoes that: the next
    `refind import PATH --rescan` of such an export writes the session again.

    \b
    Examples:
      refind delete-session 6612f0a1-2222-4c1e-9e0a-000000000002
      refind delete-session 6612f0a1-2 --yes
      refind delete-session 6612f0a1-2 --restore
    """
    with _open(ctx, data, read_only=False) as mem:
        if restore:
            sid = mem.resolve_session(user, session, deleted=True)
            if not mem.forget_deletions(user, [sid]):
                raise _Failure(
                    f"user {user!r} has no deleted session {session!r} in {mem.path}; "
                    "`refind stats` counts the deleted sessions"
                )
            out.print(
                f"Restored session {sid!r} of user {user!r}: the next `refind import PATH --rescan` of a "
                "source that holds it writes it again."
            )
            return
        sid = mem.resolve_session(user, session)
        info = mem.session_info(user, sid)
        if info is None:
            out.print(f"User {user!r} has no session {session!r} in {mem.path}; nothing to delete.")
            return
        named = f"{sid!r}" + (f" ({info.title})" if info.title and not info.title_derived else "")
        if not yes and not click.confirm(
            f"Delete session {named} of user {user!r}, {_plural(info.messages, 'message')}, from {mem.path}? "
            "Imports will leave it out (--restore undoes that)",
            err=True,
        ):
            raise _Failure("nothing was deleted")
        deleted = mem.delete_session(user, sid)
    out.print(
        f"Deleted session {sid!r} of user {user!r} ({_plural(deleted, 'message')}). Imports will leave it "
        f"out (`refind delete-session {sid} --restore` undoes that)."
    )
