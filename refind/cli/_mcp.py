"""``refind mcp``: the MCP server (:mod:`refind.mcp`) for agent hosts, over stdio or HTTP."""

from __future__ import annotations

from pathlib import Path

import click

from refind.cli._app import (
    _CONTEXT,
    EXIT_INTERRUPTED,
    _data_option,
    _Failure,
    _location,
    main,
)
from refind.loaders import DEFAULT_USER

MCP_PORT = 8766
"""The default port of ``refind mcp --transport http`` (refind.mcp.server.DEFAULT_PORT): beside ``refind ui``'s
8765, so both can run at once."""
# ---------------------------------------------------------------------------------------------- mcp


@main.command("mcp", context_settings=_CONTEXT)
@click.option(
    "--user",
    default=DEFAULT_USER,
    show_default=True,
    help="Whose history the tools search (imports of ChatGPT, Claude and Claude Code histories use 'me').",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: the host starts `refind mcp` itself; http: streamable HTTP at http://HOST:PORT/mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (http).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=MCP_PORT,
    show_default=True,
    help="Port (http; not refind ui's 8765, so both can run).",
)
@click.option(
    "--allow-add",
    is_flag=True,
    help="Also offer add_messages, so the model can save messages, and pin_fact / hide_fact / unpin_fact, "
    "so it can correct what stands when the user asks (opens the index for writing).",
)
@_data_option
@click.pass_context
def mcp(
    ctx: click.Context, data: Path | None, user: str, transport: str, host: str, port: int, allow_add: bool
) -> None:
    """Serve the index to an AI agent over the Model Context Protocol.

    Tools: search (a question; several keyword rounds with time filters), keyword_search (words and
    optional dates), read_turns (the turns around a hit), list_sessions (what is stored: titles, sources,
    dates), about_user (what the user said that stands) and, with --allow-add, add_messages, pin_fact,
    hide_fact and unpin_fact. Read-only by
    default, so it runs beside `refind import --watch`. Over stdio nothing but the protocol is written to
    stdout; logs go to stderr. Needs the mcp extra: pip install 'refind[mcp]'. Configuration for Claude
    Desktop, Claude Code and other hosts: docs/mcp.md.
    """
    try:
        from refind.mcp import serve as run_mcp
    except ImportError as exc:
        if exc.name is not None and (exc.name == "mcp" or exc.name.startswith("mcp.")):
            raise _Failure("the MCP server needs the mcp SDK: pip install 'refind[mcp]'") from None
        raise
    try:
        where = _location(ctx, data)
        run_mcp(where, user_id=user, transport=transport, host=host, port=port, allow_add=allow_add)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        ctx.exit(EXIT_INTERRUPTED)
