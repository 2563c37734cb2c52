"""``refind stats`` and ``refind delete-user``: what the index holds, and forgetting a person (and undoing
that for later imports, ``--restore``)."""

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
    """Messages and users in the index, messages per user, and the deleted sessions that imports leave
    out (read-only)."""
    with _open(ctx, data, read_only=True) as mem:
        counts = mem.stats()
    if as_json:
        click.echo(counts.model_dump_json(indent=2))
        return
    out.print(Text.assemble(("Index ", ""), (counts.path, "bold")))
    line = f"{_plural(counts.messages, 'message')}, {_plural(counts.users, 'user')}"
    if counts.deleted_sessions:
        line += f", {_plural(counts.deleted_sessions, 'deleted session')} that imports leave out"
    out.print(line)
    if counts.vectors or counts.pending_vectors:
        model = f" of {counts.vector_model}" if counts.vector_model else ""
        out.print(
            f"{_plural(counts.vectors, 'vector')}{model}; "
            f"{_plural(counts.pending_vectors, 'message')} awaiting {'its' if counts.pending_vectors == 1 else 'their'} vector"
            + (
                " (a writable refind with a model fills them in: `refind serve`, `refind import`)"
                if counts.pending_vectors
                else ""
            ),
            soft_wrap=True,
        )
    users = sorted(set(counts.per_user) | set(counts.deleted_per_user))
    if users:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("user")
        table.add_column("messages", justify="right")
        if counts.deleted_sessions:
            table.add_column("deleted sessions", justify="right")
        for name in sorted(users, key=lambda u: (-counts.per_user.get(u, 0), u)):
            row = [name, str(counts.per_user.get(name, 0))]
            if counts.deleted_sessions:
                row.append(str(counts.deleted_per_user.get(name, 0)))
            table.add_row(*row)
        out.print(table)


@main.group("vectors", context_settings=_CONTEXT)
def vectors() -> None:
    """The vectors of the messages (their meaning, one each), made by the embedding model."""


@vectors.command("reset", context_settings=_CONTEXT)
@_data_option
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def vectors_reset(ctx: click.Context, data: Path | None, yes: bool) -> None:
    """Drop every vector and the model they were made by, and queue every message again.

    For a change of embedding model: the index refuses to be opened with another model than its vectors'.
    The messages stay searchable by words meanwhile; the next writable refind with a model (`refind serve`,
    `refind import`) makes the vectors again, in the background.
    """
    if not yes:
        click.confirm(
            "Drop every vector of this index (they are rebuilt from the messages)?", abort=True, err=True
        )
    with _open(ctx, data, read_only=False, embedder=None) as mem:
        n = mem.reset_vectors()
    out.print(f"Dropped the vectors; {_plural(n, 'message')} queued for new ones.")


@main.command("delete-user", context_settings=_CONTEXT)
@_data_option
@click.argument("user")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--restore",
    is_flag=True,
    help="Undo the deletions of USER's sessions: a later import that holds them writes them again.",
)
@click.pass_context
def delete_user(ctx: click.Context, data: Path | None, user: str, yes: bool, restore: bool) -> None:
    """Delete every message of USER from the index, durably.

    The ids of USER's sessions are kept (tombstones, counted by `refind stats`), so importing an export
    that holds them leaves them out; --restore forgets them (the next `refind import PATH --rescan` writes
    those sessions again, and nothing of USER is left in the index before that).
    """
    with _open(ctx, data, read_only=False) as mem:
        if restore:
            n = mem.forget_deletions(user)
            if not n:
                raise _Failure(f"user {user!r} has no deleted sessions in {mem.path}; nothing to restore")
            out.print(
                f"Restored {_plural(n, 'deleted session')} of user {user!r}: the next "
                "`refind import PATH --rescan` of a source that holds them writes them again."
            )
            return
        n = mem.count(user)
        if n == 0:
            out.print(f"User {user!r} has no messages in {mem.path}; nothing to delete.")
            return
        if not yes and not click.confirm(
            f"Delete all {n} messages of user {user!r} from {mem.path}? Imports will leave their sessions out "
            "(--restore undoes that)",
            err=True,
        ):
            raise _Failure("nothing was deleted")
        deleted = mem.delete_user(user)
    out.print(
        f"Deleted {deleted} messages of user {user!r}. Imports will leave their sessions out "
        f"(`refind delete-user {user} --restore` undoes that)."
    )
