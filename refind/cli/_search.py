"""``refind search``: one question against one user's history, printed as evidence (or JSON)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.text import Text

import refind
from refind.cli import _daemon
from refind.cli._app import (
    _AGENT_HELP,
    _AGENTS,
    _CONTEXT,
    DEFAULT_USER,
    _agent,
    _data_option,
    _location,
    _no_daemon_option,
    _open,
    _set_option,
    _zone,
    main,
)
from refind.cli._terminal import (
    _print_evidence,
    _print_header,
    _print_trace,
    err,
    json_text,
)

# ---------------------------------------------------------------------------------------------- search


@_daemon.op("search")
def _search_payload(
    mem: refind.Memory,
    question: str,
    user: str,
    now: str | None,
    top_k: int | None,
    window: int | None,
    max_tokens: int | None,
    source: str | None,
    project: str | None,
) -> dict[str, Any]:
    """What ``refind search`` shows, computed in this process or in the index's daemon (heuristic agent)."""
    when: str | datetime = now if now is not None else datetime.now(UTC)
    result = mem.search(
        question, user, now=when, top_k=top_k, window=window, max_tokens=max_tokens,
        source=source, project=project,
    )  # fmt: skip
    unknown_user = not result.evidence and mem.count(user) == 0
    return {
        "result": result.model_dump(mode="json"), "unknown_user": unknown_user, "index": str(mem.path),
        "tokens": result.tokens, "titles": _untitled(mem, user, result),
    }  # fmt: skip


def _untitled(mem: refind.Memory, user: str, result: refind.SearchResult) -> dict[str, str]:
    """Titles derived from their first message for the result's sessions that have none."""
    return mem.derived_titles(user, [e.session_id for e in result.evidence if not e.title])


@main.command(context_settings=_CONTEXT)
@_data_option
@click.argument("question")
@click.option(
    "--user",
    "-u",
    default=DEFAULT_USER,
    show_default=True,
    help="Whose history to search (every search is per user; imports of personal histories use 'me').",
)
@click.option(
    "--source", default=None, help="Only sessions from this app (chatgpt, claude, claude-code, jsonl, ...)."
)
@click.option(
    "--project", default=None, help="Only sessions of this project (a Claude Code working directory)."
)
@click.option(
    "--now",
    default=None,
    help="The date the question is asked, for time cues like 'last month' (e.g. 2024-06-20). "
    "Default: the current time.",
)
@click.option("--agent", type=click.Choice(_AGENTS), default="heuristic", show_default=True, help=_AGENT_HELP)
@click.option("--top-k", type=click.IntRange(1, 1000), default=None, help="Hits per round (default 5).")
@click.option(
    "--window", type=click.IntRange(0, 100), default=None, help="Turns shown each side of a hit (default 2)."
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1),
    default=None,
    help="Pack the evidence into this many tokens: every hit first (cut to its matched passage when "
    "long), then the turns around the hits, best sessions first.",
)
@click.option("--trace", is_flag=True, help="Also show the rounds: keywords, dates, hits, time.")
@click.option("--json", "as_json", is_flag=True, help="Print the SearchResult as JSON (for scripts).")
@_set_option
@_no_daemon_option
@click.pass_context
def search(
    ctx: click.Context,
    data: Path | None,
    question: str,
    user: str,
    source: str | None,
    project: str | None,
    now: str | None,
    agent: str,
    top_k: int | None,
    window: int | None,
    max_tokens: int | None,
    trace: bool,
    as_json: bool,
    no_daemon: bool,
) -> None:
    """Search USER's history for the evidence that answers QUESTION.

    Prints the evidence grouped by session, sessions in time order, with the session dates; the turns a
    search matched are marked with ▶ (the others are the context window around them). The index is
    opened read-only; with the heuristic agent, the index's background process answers (docs/cli.md).
    Every setting, the heuristic agent's knobs among them, can be changed for one search with --set
    (--set max_rounds=6 --set breadth_k=3 --set feedback=on).
    """
    params = {
        "question": question, "user": user, "now": now, "top_k": top_k, "window": window,
        "max_tokens": max_tokens, "source": source, "project": project,
    }  # fmt: skip
    tokens: int | None = None
    if agent == "heuristic":  # the index's daemon answers when it can, else this process
        payload = None if no_daemon else _daemon.ask(_location(ctx, data), "search", params)
        if payload is None:
            with _open(ctx, data, read_only=True) as mem:
                payload = _search_payload(mem, **params)
        result = refind.SearchResult.model_validate(payload["result"])
        unknown_user, index, tokens = bool(payload["unknown_user"]), str(payload["index"]), payload["tokens"]
        titles = dict(payload.get("titles") or {})
    else:
        when: str | datetime = now if now is not None else datetime.now(UTC)
        planner = _agent(agent)
        with _open(ctx, data, read_only=True) as mem:
            result = mem.search(
                question, user, now=when, top_k=top_k, window=window, agent=planner, max_tokens=max_tokens,
                source=source, project=project,
            )  # fmt: skip
            unknown_user = not result.evidence and mem.count(user) == 0
            index = str(mem.path)
            titles = _untitled(mem, user, result)
    if unknown_user and not as_json:
        err.print(
            Text(
                f"User {user!r} has no messages in {index}; `refind stats` lists the users it has.", "yellow"
            )
        )
    if as_json:
        click.echo(json_text(result.model_dump_json(indent=2)))
        return
    zone = _zone(ctx)
    _print_header(result, tokens, tz=zone)
    _print_evidence(result, now_given=now is not None, tz=zone, titles=titles)
    if trace:
        _print_trace(result)
