"""Loaders for chat histories: each yields :class:`refind.models.SessionLog` (user, session, messages with
their timestamps) in source order, ready for :meth:`refind.Memory.import_sessions`; :func:`import_path`
does the whole import and, importing the same source again, writes only what is new.

Personal histories (stored under the user id ``"me"`` unless told otherwise; sessions are
:class:`ImportedSession`, with the conversation's title):

- ``chatgpt``: a ChatGPT data export, ``conversations.json`` or the export ``.zip``
  (:mod:`refind.loaders.chatgpt`): one session per conversation, the thread that ends at ``current_node``.
- ``claude``: a Claude.ai data export, ``conversations.json`` or the ``.zip`` (:mod:`refind.loaders.claude`).
- ``claude-code``: Claude Code session logs, ``~/.claude/projects/<project>/<session>.jsonl`` or a
  directory of them (:mod:`refind.loaders.claude_code`): text verbatim, tool calls and results as compact
  lines, sidechains in sessions of their own.

Benchmarks and your own data:

- ``locomo``: LoCoMo JSON (a list of conversations). One user per conversation (``sample_id``), sessions
  ``session_N`` dated like "1:56 pm on 8 May, 2023"; each turn keeps its ``dia_id`` ("D1:3") as message id;
  ``speaker_a`` is role ``user``, ``speaker_b`` role ``assistant``, the names are kept as ``speaker``; a
  shared image becomes ``[image: <caption>]`` so it is searchable.
- ``longmemeval``: LongMemEval JSON or .json.gz (a list of questions). One user per question
  (``question_id``); sessions from ``haystack_session_ids`` / ``haystack_dates`` ("2023/05/30 (Tue) 23:40") /
  ``haystack_sessions``.
- ``jsonl``: one message per line, ``{"user_id", "session_id", "role", "content"}`` plus optional
  ``timestamp`` (epoch ms or date text), ``speaker``, ``id``, ``session_time``. Consecutive lines of the same
  user and session form one session; blank lines are ignored.

What is left out is counted in the ``skipped`` Counter when one is passed (a :class:`Skipped` also names
the records that could not be read). In the personal formats a record that cannot be read (a line that
is not JSON, a conversation without its tree) is counted and named and the rest is still imported; in
the benchmark formats and JSONL a malformed record raises :class:`~refind.InvalidInput` with its position.
Empty messages are skipped and counted (LoCoMo and LongMemEval keep their turn numbers, so later turns stay
aligned).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from refind.errors import InvalidInput
from refind.loaders._base import DEFAULT_USER, ImportedSession, Skipped, read_json
from refind.loaders.chatgpt import iter_chatgpt
from refind.loaders.claude import iter_claude
from refind.loaders.claude_code import ClaudeCodeCursor, iter_claude_code, read_claude_code
from refind.loaders.datasets import iter_locomo, iter_longmemeval
from refind.loaders.detect import FORMAT_NAMES, FORMATS, Format, detect_format
from refind.loaders.jsonl import iter_jsonl
from refind.loaders.sync import ImportSummary, default_state_path, import_path, watch
from refind.models import SessionLog

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


def iter_sessions(
    path: str | Path,
    format: Format | None = None,
    skipped: Counter[str] | None = None,
    *,
    user_id: str = DEFAULT_USER,
) -> Iterator[SessionLog]:
    """Sessions of ``path`` in the given (or detected) format; ``user_id`` is the user of a personal
    history (the benchmark formats and JSONL name their own users)."""
    fmt = format or detect_format(path)
    if fmt == "chatgpt":
        return iter_chatgpt(path, skipped, user_id=user_id)
    if fmt == "claude":
        return iter_claude(path, skipped, user_id=user_id)
    if fmt == "claude-code":
        return iter_claude_code(path, skipped, user_id=user_id)
    loaders = {"locomo": iter_locomo, "longmemeval": iter_longmemeval, "jsonl": iter_jsonl}
    if fmt not in loaders:
        raise InvalidInput(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    return loaders[fmt](path, skipped)
