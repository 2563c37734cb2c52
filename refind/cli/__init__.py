"""The ``refind`` command: a thin layer over :class:`refind.Memory` that prints (the library never does).

    refind demo                                  build a demo index from examples/data and ask it questions
    refind import chats.jsonl                    import LoCoMo, LongMemEval or JSONL chat logs
    refind search "what did I decide?" --user maya [--now 2024-06-20] [--json] [--trace]
    refind serve --port 8000 --auth bearer       the Add/Search HTTP service (refind.server)
    refind stats [--json]                        messages, users and vectors in the index (read-only)
    refind vectors reset [--yes]                 drop the vectors (a new model) and queue every message again
    refind sessions [--source chatgpt] [--json]  the sessions stored: title, source, dates, messages
    refind show SESSION                          one session, turn by turn
    refind export [-o history.jsonl]             every message as JSONL that `refind import` reads back
    refind delete-session SESSION [--yes]
    refind hooks install claude-code             import each Claude Code session as it ends
    refind ui [--port 8765]                      browse your history in a web browser (loopback)
    refind delete-user maya [--yes]
    refind daemon status | stop [--all]         the background search process that keeps search fast

``--data DIR`` (or ``$REFIND_DATA``) picks the index directory; ``--store URL`` (or ``$REFIND_STORE``) picks any
engine instead, e.g. ``opensearch://host:9200/prefix`` (docs/scale-out.md). Reading commands (search, stats) open it
read-only, so they work beside a running ``refind serve``. Results go to stdout; progress, warnings and
errors to stderr.

Exit codes: 0 success; 1 a refind error (bad input, no index, index locked, Java or LLM not set up), or a
declined confirmation; 2 a usage error; 3 an unexpected error; 130 ``refind serve`` stopped by Ctrl-C.
Errors are one line; ``REFIND_DEBUG=1`` re-raises them with the traceback.

The package: ``_app`` (the group, its options, exit codes, one-line errors), ``_terminal`` (all rich output),
and one module per command family: ``_import``, ``_search``, ``_admin`` (stats, delete-user), ``_serve``,
``_mcp``, ``_demo``, ``_profile`` (profile list/pin/hide/unpin), ``_sessions`` (sessions, show, export, delete-session), ``_hooks`` (hooks install/remove),
``_ui`` (the browsing page), ``_daemon`` (the background search process: client and server) and
``_daemon_commands`` (daemon status/stop). Each module registers its commands on :func:`main` when the command
is first looked up (``main.lazy``).
"""

from __future__ import annotations

from refind.cli._app import EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, main

# Each module registers its commands on ``main`` when imported; ``main`` imports it when its command runs (or
# for --help), so a command loads only its own module (a shell command's client stays small).
main.lazy = {
    "daemon": "refind.cli._daemon_commands",
    "delete-session": "refind.cli._sessions",
    "delete-user": "refind.cli._admin",
    "demo": "refind.cli._demo",
    "export": "refind.cli._sessions",
    "hooks": "refind.cli._hooks",
    "import": "refind.cli._import",
    "mcp": "refind.cli._mcp",
    "profile": "refind.cli._profile",
    "search": "refind.cli._search",
    "serve": "refind.cli._serve",
    "sessions": "refind.cli._sessions",
    "show": "refind.cli._sessions",
    "stats": "refind.cli._admin",
    "ui": "refind.cli._ui",
    "vectors": "refind.cli._admin",
}

__all__ = ["EXIT_ERROR", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_USAGE", "main"]
