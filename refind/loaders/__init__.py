"""Loaders for chat histories: each yields :class:`refind.models.SessionLog` (user, session, messages with
their timestamps) in source order, ready for :meth:`refind.Memory.import_sessions`; :func:`import_path`
does the whole import and, importing the same source again, writes only what is new.

Each format is a :class:`Loader` (a name, ``sniff``, ``read`` and, for a line format, ``read_from``) in one
table, :data:`LOADERS`: detection, ``refind import --format`` and its help, reading and the incremental
import all dispatch through it. A new format is one module and one line in the table (docs/import.md,
"Adding a format").

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
the records that could not be read). In the personal formats and JSONL a record that cannot be read (a
line that is not JSON, a conversation without its tree) is counted and named and the rest is still
imported; in the benchmark formats a malformed record raises :class:`~refind.InvalidInput` with its position.
Empty messages are skipped and counted (LoCoMo and LongMemEval keep their turn numbers, so later turns stay
aligned).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from refind.loaders._base import DEFAULT_USER, ImportedSession, Loader, Sample, Skipped, read_json
from refind.loaders._registry import LOADERS, Loaders
from refind.loaders.chatgpt import iter_chatgpt
from refind.loaders.claude import iter_claude
from refind.loaders.claude_code import ClaudeCodeCursor, iter_claude_code, read_claude_code
from refind.loaders.detect import FORMAT_NAMES, FORMATS, Format, detect_format, sources
from refind.loaders.jsonl import iter_jsonl
from refind.loaders.locomo import iter_locomo
from refind.loaders.longmemeval import iter_longmemeval
from refind.loaders.sync import ImportSummary, default_state_path, import_path, watch
from refind.models import SessionLog

__all__ = [
    "DEFAULT_USER",
    "FORMATS",
    "FORMAT_NAMES",
    "LOADERS",
    "ClaudeCodeCursor",
    "Format",
    "ImportSummary",
    "ImportedSession",
    "Loader",
    "Loaders",
    "Sample",
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
    "sources",
    "watch",
]


def iter_sessions(
    path: str | Path,
    format: Format | None = None,
    skipped: Counter[str] | None = None,
    *,
    user_id: str = DEFAULT_USER,
) -> Iterator[SessionLog]:
    """Sessions of ``path`` in the given (or detected) format, every file of it the format reads (an
    export's folder or ``.zip``, a directory of logs); ``user_id`` is the user of a personal history (the
    benchmark formats and JSONL name their own users)."""
    p = Path(path)
    loader = LOADERS.get(format or detect_format(p))
    files = sources(loader, p)
    return (
        log_ for file, member in files for log_ in loader.read(file, skipped, user_id=user_id, member=member)
    )
