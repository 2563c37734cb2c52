"""The ``refind`` command: a thin layer over :class:`refind.Memory` that prints (the library never does).

    refind demo                                  build a demo index from examples/data and ask it questions
    refind import chats.jsonl                    import LoCoMo, LongMemEval or JSONL chat logs
    refind search "what did I decide?" --user maya [--now 2024-06-20] [--json] [--trace]
    refind serve --port 8000 --auth bearer       the Add/Search HTTP service (refind.server)
    refind stats [--json]                        messages and users in the index (read-only)
    refind sessions [--source chatgpt] [--json]  the sessions stored: title, source, dates, messages
    refind show SESSION                          one session, turn by turn
    refind export [-o history.jsonl]             every message as JSONL that `refind import` reads back
    refind delete-session SESSION [--yes]
    refind hooks install claude-code             import each Claude Code session as it ends
    refind ui [--port 8765]                      browse your history in a web browser (loopback)
    refind delete-user maya [--yes]

``--data DIR`` (or ``$REFIND_DATA``) picks the index directory; ``--store URL`` (or ``$REFIND_STORE``) picks any
engine instead, e.g. ``opensearch://host:9200/prefix`` (docs/scale-out.md). Reading commands (search, stats) open it
read-only, so they work beside a running ``refind serve``. Results go to stdout; progress, warnings and
errors to stderr.

Exit codes: 0 success; 1 a refind error (bad input, no index, index locked, Java or LLM not set up), or a
declined confirmation; 2 a usage error; 3 an unexpected error; 130 ``refind serve`` stopped by Ctrl-C.
Errors are one line; ``REFIND_DEBUG=1`` re-raises them with the traceback.

The package: ``_app`` (the group, its options, exit codes, one-line errors), ``_terminal`` (all rich output),
and one module per command family: ``_import``, ``_search``, ``_admin`` (stats, delete-user), ``_serve``,
``_mcp``, ``_demo``, ``_sessions`` (sessions, show, export, delete-session), ``_hooks`` (hooks install/remove), ``_ui`` (the browsing page). Importing the package registers every command on :func:`main`.
"""

from __future__ import annotations

from refind.cli import _admin, _demo, _hooks, _import, _mcp, _search, _serve, _sessions, _ui  # noqa: F401 - each registers its commands
from refind.cli._app import EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, main

__all__ = ["EXIT_ERROR", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_USAGE", "main"]
