"""refind as a Model Context Protocol server (``refind mcp``): the search tools of one user's history for
any MCP host (Claude Desktop, Claude Code, Cursor, your own agent).

Tools: ``search`` (a question; several keyword rounds with time filters, evidence by conversation and
time), ``keyword_search`` (one round: words, optional dates), ``read_turns`` (the turns of one session
around a hit) and, only when started with ``allow_add``, ``add_messages``. Needs the ``mcp`` extra:
``pip install 'refind[mcp]'``.
"""

from __future__ import annotations

from refind.mcp.server import MAX_READ_TURNS, NewMessage, build_server, serve

__all__ = ["MAX_READ_TURNS", "NewMessage", "build_server", "serve"]
