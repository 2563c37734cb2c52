"""``refind profile``: what a person said that stands (instructions, preferences, lasting facts), with what
supersedes what (issue 37)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.markup import escape
from rich.table import Table

import refind
from refind.cli._app import _CONTEXT, _data_option, _open, main
from refind.cli._terminal import _plural, out


@main.command("profile", context_settings=_CONTEXT)
@_data_option
@click.argument("user")
@click.option("--all", "show_all", is_flag=True, help="Also list the facts a later one superseded.")
@click.option(
    "--limit", type=click.IntRange(min=0), default=1000, show_default=True, help="At most this many."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print them as JSON (one object each, superseded ones too)."
)
@click.pass_context
def profile(
    ctx: click.Context, data: Path | None, user: str, show_all: bool, limit: int, as_json: bool
) -> None:
    """What USER said that stands, newest first: standing instructions, preferences and lasting facts (a
    condition, a diet, the household, work rules, ...), read from their own messages when they were written.
    A fact that a later one changed ("I'm no longer vegan") is marked superseded (read-only)."""
    with _open(ctx, data, read_only=True) as mem:
        facts = mem.profile(user, limit=limit)
    if as_json:
        click.echo(json.dumps([f.model_dump() for f in facts], ensure_ascii=False, indent=2))
        return
    shown = [f for f in facts if show_all or f.current]
    if not shown:
        out.print(f"Nothing that stands for user {user!r}.")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("date", "kind", "what", "message"):
        table.add_column(column)
    for f in shown:
        kind = f.kind if f.domain is None else f"{f.kind} ({f.domain})"
        what = f.sentence if f.current else f"{f.sentence} [superseded by {f.superseded_by}]"
        table.add_row(refind.format_date(f.timestamp, "day"), kind, escape(what), escape(f.message_id))
    out.print(table)
    hidden = len(facts) - len(shown)
    if hidden:
        out.print(f"{_plural(hidden, 'superseded fact')} not shown (--all lists them).")
