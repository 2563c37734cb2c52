"""``refind stats`` and ``refind delete-user``: what the index holds, and forgetting a person."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.table import Table
from rich.text import Text

from refind.cli._app import (
    _CONTEXT,
    _data_option,
    _Failure,
    _open,
    main,
)
from refind.cli._terminal import (
    _plural,
    out,
)

# ---------------------------------------------------------------------------------------------- stats, delete


@main.command(context_settings=_CONTEXT)
@_data_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def stats(ctx: click.Context, data: Path | None, as_json: bool) -> None:
    """Messages and users in the index, and messages per user (read-only)."""
    with _open(ctx, data, read_only=True) as mem:
        counts = mem.stats()
    if as_json:
        click.echo(counts.model_dump_json(indent=2))
        return
    out.print(Text.assemble(("Index ", ""), (counts.path, "bold")))
    out.print(f"{_plural(counts.messages, 'message')}, {_plural(counts.users, 'user')}")
    if counts.per_user:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("user")
        table.add_column("messages", justify="right")
        for name, n in sorted(counts.per_user.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(name, str(n))
        out.print(table)


@main.command("delete-user", context_settings=_CONTEXT)
@_data_option
@click.argument("user")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete_user(ctx: click.Context, data: Path | None, user: str, yes: bool) -> None:
    """Delete every message of USER from the index (durably; it cannot be undone)."""
    with _open(ctx, data, read_only=False) as mem:
        n = mem.count(user)
        if n == 0:
            out.print(f"User {user!r} has no messages in {mem.path}; nothing to delete.")
            return
        if not yes and not click.confirm(
            f"Delete all {n} messages of user {user!r} from {mem.path}? This cannot be undone", err=True
        ):
            raise _Failure("nothing was deleted")
        deleted = mem.delete_user(user)
    out.print(f"Deleted {deleted} messages of user {user!r}.")
