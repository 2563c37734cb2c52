"""Readers of chat histories (the Loaders): the public face of :mod:`refind.loaders`, one module per format
family there (``chatgpt``, ``claude``, ``claude_code``, ``datasets`` for LoCoMo and LongMemEval, ``jsonl``,
``detect``, and ``sync`` for incremental imports). Every name of :mod:`refind.loaders` is importable from
here; see that package's docstring for the formats."""

from __future__ import annotations

from refind.loaders import (
    DEFAULT_USER,
    FORMAT_NAMES,
    FORMATS,
    ClaudeCodeCursor,
    Format,
    ImportedSession,
    ImportSummary,
    Skipped,
    default_state_path,
    detect_format,
    import_path,
    iter_chatgpt,
    iter_claude,
    iter_claude_code,
    iter_jsonl,
    iter_locomo,
    iter_longmemeval,
    iter_sessions,
    read_claude_code,
    read_json,
    watch,
)

__all__ = [
    "DEFAULT_USER",
    "FORMATS",
    "FORMAT_NAMES",
    "ClaudeCodeCursor",
    "Format",
    "ImportSummary",
    "ImportedSession",
    "Skipped",
    "default_state_path",
    "detect_format",
    "import_path",
    "iter_chatgpt",
    "iter_claude",
    "iter_claude_code",
    "iter_jsonl",
    "iter_locomo",
    "iter_longmemeval",
    "iter_sessions",
    "read_claude_code",
    "read_json",
    "watch",
]
