"""``refind profile``: what a person said that stands (instructions, preferences, lasting facts), with what
supersedes what, and their corrections: ``pin``, ``hide``, ``unpin`` (issue 37)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.markup import escape
from rich.table import Table

import refind
from refind.cli._app import _CONTEXT, _data_option, _Failure, _open, main
from refind.cli._terminal import _plural, out

_KINDS = ("fact", "instruction", "preference")


class _ProfileGroup(click.Group):
    """``refind profile USER`` lists (the ``list`` command); ``refind profile pin|hide|unpin USER ID``
    corrects. A first argument that is not a command's name is the USER of ``list`` (a person called
    ``pin``: ``refind profile list pin``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in ("list", "pin", "hide", "unpin") if name in self.commands]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["list", *args]
        return super().parse_args(ctx, args)


@main.group(
    "profile", cls=_ProfileGroup, context_settings=_CONTEXT, subcommand_metavar="USER | COMMAND [ARGS]..."
)
def profile() -> None:
    """What USER said that stands, and their corrections of it.

    `refind profile USER` lists their standing instructions, preferences and lasting facts (a condition, a
    diet, the household, work rules, ...), read from their own messages when they were written, newest
    first (read-only). `pin` makes any message stand (as a fact, or --kind instruction|preference), `hide`
    makes one never stand (not listed, never beside a search's evidence), `unpin` takes either mark off
    (back to what the rule reads). Marks are kept in the index apart from the messages: re-imports and
    upgrades keep them.

    \b
    Examples:
      refind profile me
      refind profile me --all --hidden
      refind profile pin me 6612f0a1-2222-4c1e-9e0a-000000000002:4 --kind preference
      refind profile hide me 6612f0a1-2222-4c1e-9e0a-000000000002:7
      refind profile unpin me 6612f0a1-2222-4c1e-9e0a-000000000002:7
    """


@profile.command("list", context_settings=_CONTEXT)
@_data_option
@click.argument("user")
@click.option("--all", "show_all", is_flag=True, help="Also list the facts a later one superseded.")
@click.option("--hidden", is_flag=True, help="Also list the messages USER hid (`unpin` brings one back).")
@click.option(
    "--limit", type=click.IntRange(min=0), default=1000, show_default=True, help="At most this many."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print them as JSON (one object each, superseded ones too; with --hidden, an object with "
    '"standing" and "hidden").',
)
@click.pass_context
def list_profile(
    ctx: click.Context,
    data: Path | None,
    user: str,
    show_all: bool,
    hidden: bool,
    limit: int,
    as_json: bool,
) -> None:
    """What USER said that stands, newest first: standing instructions, preferences and lasting facts, each
    with its message id. A fact that a later one changed ("I'm no longer vegan") is marked superseded;
    a pinned one is marked pinned (read-only)."""
    with _open(ctx, data, read_only=True) as mem:
        facts = mem.profile(user, limit=limit)
        hid = [m for m in mem.marks(user) if m.mark == "hidden"] if hidden else []
    if as_json:
        listed: Any = [f.model_dump() for f in facts]
        if hidden:
            listed = {"standing": listed, "hidden": [m.model_dump() for m in hid]}
        click.echo(json.dumps(listed, ensure_ascii=False, indent=2))
        return
    shown = [f for f in facts if show_all or f.current]
    if not shown and not hid:
        out.print(f"Nothing that stands for user {user!r}.")
    if shown:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("date", "kind", "what", "message"):
            table.add_column(column)
        for f in shown:
            kind = f.kind if f.domain is None else f"{f.kind} ({f.domain})"
            what = f.sentence if f.current else f"{f.sentence} [superseded by {f.superseded_by}]"
            if f.pinned:
                kind += ", pinned"
            table.add_row(refind.format_date(f.timestamp, "day"), kind, escape(what), escape(f.message_id))
        out.print(table)
    left = len(facts) - len(shown)
    if left:
        out.print(f"{_plural(left, 'superseded fact')} not shown (--all lists them).")
    if hid:
        table = Table(title="Hidden (never stand)", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
        for column in ("date", "what", "message"):
            table.add_column(column)
        for m in hid:
            table.add_row(refind.format_date(m.timestamp, "day"), escape(m.sentence), escape(m.message_id))
        out.print(table)


def _correction(name: str) -> Callable[[Callable[..., None]], click.Command]:
    """The command ``refind profile NAME USER MESSAGE_ID`` (``--data`` too) of the function it decorates."""

    def command(f: Callable[..., None]) -> click.Command:
        f = click.argument("user")(click.argument("message_id")(click.pass_context(f)))
        return profile.command(name, context_settings=_CONTEXT)(_data_option(f))

    return command


@_correction("pin")
@click.option(
    "--kind",
    type=click.Choice(_KINDS),
    default="fact",
    show_default=True,
    help="What the message stands as.",
)
def pin(ctx: click.Context, data: Path | None, user: str, message_id: str, kind: str) -> None:
    """Make USER's message MESSAGE_ID stand, whatever the rule reads in it: it is listed by `refind profile`
    (pinned) and offered beside the evidence of searches. MESSAGE_ID is as `refind profile` or
    `refind show SESSION --json` shows it."""
    with _open(ctx, data, read_only=False, embedder=None) as mem:
        marked = mem.pin(user, message_id, kind)  # type: ignore[arg-type]  # click.Choice checked it
    article = "an" if kind == "instruction" else "a"
    out.print(
        f"Pinned {escape(message_id)} of user {escape(user)} as {article} {kind}: {escape(marked.sentence)}",
        soft_wrap=True,
    )


@_correction("hide")
def hide(ctx: click.Context, data: Path | None, user: str, message_id: str) -> None:
    """Make USER's message MESSAGE_ID never stand, whatever the rule reads in it: not listed by
    `refind profile`, never beside a search's evidence (searches still find it as any message).
    `refind profile unpin USER MESSAGE_ID` undoes it."""
    with _open(ctx, data, read_only=False, embedder=None) as mem:
        marked = mem.hide(user, message_id)
    out.print(f"Hid {escape(message_id)} of user {escape(user)}: {escape(marked.sentence)}", soft_wrap=True)


@_correction("unpin")
def unpin(ctx: click.Context, data: Path | None, user: str, message_id: str) -> None:
    """Take the pin or hide off USER's message MESSAGE_ID: what stands in it is again what the rule reads.
    A message that was not marked is an error (exit 1)."""
    with _open(ctx, data, read_only=False, embedder=None) as mem:
        undone = mem.unpin(user, message_id)
    if not undone:
        raise _Failure(
            f"message {message_id!r} of user {user!r} is neither pinned nor hidden; nothing to undo "
            "(`refind profile USER --hidden` lists the marked ones)"
        )
    out.print(
        f"Unpinned {escape(message_id)} of user {escape(user)}: what stands in it is the rule's again.",
        soft_wrap=True,
    )
