"""``refind sessions``, ``show``, ``export`` and ``delete-session``: what is stored, seen and managed."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.table import Table
from rich.text import Text

import refind
from refind.cli import _daemon
from refind.cli._app import (
    _CONTEXT,
    DEFAULT_USER,
    _data_option,
    _Failure,
    _location,
    _no_daemon_option,
    _open,
    main,
)
from refind.cli._terminal import _plural, err, json_text, out

_USER_HELP = "Whose sessions (imports of personal histories use 'me')."


def _user_option(command: Any) -> Any:
    return click.option("--user", "-u", default=DEFAULT_USER, show_default=True, help=_USER_HELP)(command)


def _when(first: int, last: int) -> str:
    a, b = refind.format_date(first, "day"), refind.format_date(last, "day")
    return a if a == b else f"{a} - {b}"


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
    return {"rows": [r.model_dump(mode="json") for r in rows]}


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
    """List USER's stored sessions, the most recent first: title, source, dates, messages (read-only).

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
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for name in ("session", "title", "source", "dates", "messages"):
            table.add_column(name, justify="right" if name == "messages" else "left", overflow="fold")
        for r in rows:
            table.add_row(
                r.session_id, r.title or "", r.source or "", _when(r.first, r.last), str(r.messages)
            )
        out.print(table)
    if more:
        err.print(Text(f"More sessions follow: --offset {offset + limit}", style="dim"))


# ---------------------------------------------------------------------------------------------- show


@_daemon.op("show")
def _show_payload(mem: refind.Memory, user: str, session: str, turn_from: int, limit: int) -> dict[str, Any]:
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

    \b
    Examples:
      refind show 6612f0a1-2222-4c1e-9e0a-000000000002
      refind show 5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f --from 4 --limit 3 --json
    """
    params = {"user": user, "session": session, "turn_from": turn_from, "limit": limit}
    payload = _payload(ctx, data, no_daemon, "show", params)
    if payload["info"] is None:
        raise _Failure(f"user {user!r} has no session {session!r}; `refind sessions` lists them")
    info = refind.SessionSummary.model_validate(payload["info"])
    turns = [refind.Hit.model_validate(t) for t in payload["turns"]]
    more = len(turns) > limit
    turns = turns[:limit]
    if as_json:
        body = {"session": info.model_dump(), "turns": [t.model_dump(exclude={"score"}) for t in turns]}
        click.echo(json_text(json.dumps(body, ensure_ascii=False, indent=2)))
    else:
        title = Text(info.title or session, style="bold")
        out.print(title)
        details = [f"session {session}", _when(info.first, info.last), _plural(info.messages, "message")]
        details += [v for v in (info.source, info.project) if v]
        out.print(Text(" · ".join(details), style="dim"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(justify="right", style="dim", no_wrap=True, min_width=3)
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for t in turns:
            who = Text(t.speaker or t.role, style="magenta" if t.role == "user" else "blue")
            grid.add_row(str(t.turn), refind.format_date(t.timestamp, "minute"), who, Text(t.content))
        out.print(grid)
        if not turns:
            out.print(Text(f"No turns from {turn_from} on.", style="yellow"))
    if more:
        err.print(Text(f"More turns follow: --from {turns[-1].turn + 1}", style="dim"))


# ---------------------------------------------------------------------------------------------- export


def _write(records: Iterable[dict[str, Any]], write: Callable[[str], object]) -> int:
    """Write ``records`` as JSON lines; how many."""
    n = 0
    for record in records:
        write(json.dumps(record, ensure_ascii=False) + "\n")
        n += 1  # noqa: SIM113 - the records are a generator
    return n


@main.command(context_settings=_CONTEXT)
@_data_option
@click.option("--user", "-u", default=None, help="Only this user's messages (default: every user's).")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file (replaced only once complete). Default: stdout.",
)
@click.pass_context
def export(ctx: click.Context, data: Path | None, user: str | None, output: Path | None) -> None:
    """Export the stored messages as JSONL, one message per line with its session's title, source and
    project: `refind import` reads it back into the same messages (read-only).

    \b
    Examples:
      refind export -o history.jsonl
      refind export --user me | head -3
      refind --data copy import history.jsonl
    """
    n = 0
    with _open(ctx, data, read_only=True) as mem:
        if output is None:
            try:
                n = _write(mem.export(user), lambda line: sys.stdout.write(json_text(line)))
                sys.stdout.flush()
            except BrokenPipeError:  # `refind export | head`: the reader had enough
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return
        else:
            tmp = output.with_name(output.name + ".part")
            try:
                with tmp.open("w", encoding="utf-8") as fh:
                    n = _write(mem.export(user), fh.write)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, output)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise _Failure(f"cannot write {output}: {exc.strerror or exc}") from None
    err.print(Text(f"Exported {_plural(n, 'message')}" + (f" to {output}" if output else ""), style="dim"))


# ---------------------------------------------------------------------------------------------- delete-session


@main.command("delete-session", context_settings=_CONTEXT)
@_data_option
@click.argument("session")
@_user_option
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete_session(ctx: click.Context, data: Path | None, session: str, user: str, yes: bool) -> None:
    """Delete one SESSION of USER from the index: its messages, title and source (durably; it cannot be
    undone). A later import of a source that still holds it imports it again.

    \b
    Examples:
      refind delete-session 6612f0a1-2222-4c1e-9e0a-000000000002
      refind delete-session 6612f0a1-2222-4c1e-9e0a-000000000002 --yes
    """
    with _open(ctx, data, read_only=False) as mem:
        info = mem.session_info(user, session)
        if info is None:
            out.print(f"User {user!r} has no session {session!r} in {mem.path}; nothing to delete.")
            return
        named = f"{session!r}" + (f" ({info.title})" if info.title else "")
        if not yes and not click.confirm(
            f"Delete session {named} of user {user!r}, {_plural(info.messages, 'message')}, from {mem.path}? "
            "This cannot be undone",
            err=True,
        ):
            raise _Failure("nothing was deleted")
        deleted = mem.delete_session(user, session)
    out.print(f"Deleted session {session!r} of user {user!r} ({_plural(deleted, 'message')}).")
