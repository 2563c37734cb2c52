"""Claude Code session logs: ``~/.claude/projects/<project>/<session>.jsonl``, one JSON object a line.

One file is one session (id: the file's name without ``.jsonl``; a subagent's file, ``agent-*.jsonl``,
becomes ``{parent sessionId}/agent-...``). A directory imports every ``*.jsonl`` below it. Lines:

- ``type`` ``user`` / ``assistant``: one message per line, its ``timestamp`` (ISO 8601) kept, id
  ``{session}/{uuid}``. ``message.content`` is a string or a list of blocks: ``text`` verbatim;
  ``tool_use`` as one searchable line ``[Bash] pytest -q`` (the tool's name and its command, path,
  pattern, URL or query); ``tool_result`` as role ``tool``, ``[Bash result]`` (``[Bash error]``) and the
  first lines of the output; images as ``[image]``; ``thinking`` is skipped and counted;
- lines of a sidechain (``isSidechain``: a subagent's work logged in the main file) go to their own
  session ``{session}/sidechain`` (``{session}/agent-{agentId}`` when the line names its agent), so they
  never interleave with the main conversation;
- ``summary`` lines give the session its title; ``isMeta`` and compact-summary lines, ``system`` lines and
  bookkeeping (``file-history-snapshot``, ``queue-operation``, ...) are skipped and counted by type;
- a line that is not JSON, or not an object, is counted and named (``file:line``); the rest of the file is
  still read. The first line's ``cwd`` and ``gitBranch`` are kept as the session's metadata.

:func:`read_claude_code` reads from a byte offset and returns a :class:`ClaudeCodeCursor`, so a growing
log is read once: the next read starts where the last one stopped (a half-written last line waits).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refind.loaders._base import (
    DEFAULT_USER,
    Cursor,
    ImportedSession,
    Loader,
    Sample,
    clip,
    first_lines,
    iso_to_ms,
    line_files,
    loads_json,
    make_message,
    read_lines,
    skip,
    unreadable,
)
from refind.models import Message

__all__ = ["LOADER", "ClaudeCodeCursor", "iter_claude_code", "read_claude_code"]

_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
_ARGUMENTS = ("command", "file_path", "notebook_path", "path", "url", "query", "description", "prompt")
_MAX_PENDING_TOOLS = 500


@dataclass
class ClaudeCodeCursor:
    """Where a read of one session log stopped, and what a later read of the rest needs to know."""

    offset: int = 0
    """Byte offset just past the last complete line read."""
    line: int = 1
    """Number of the next line (for naming unreadable lines)."""
    session_id: str | None = None
    title: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)
    """Names of tool calls whose result has not been read yet (tool_use id -> name)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "line": self.line,
            "session_id": self.session_id,
            "title": self.title,
            "metadata": self.metadata,
            "tools": self.tools,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaudeCodeCursor:
        return cls(
            offset=int(data.get("offset", 0)),
            line=int(data.get("line", 1)),
            session_id=data.get("session_id"),
            title=data.get("title"),
            metadata=dict(data.get("metadata") or {}),
            tools=dict(data.get("tools") or {}),
        )


class _ClaudeCode(Loader):
    name = "claude-code"
    title = "Claude Code"
    about = "Claude Code session logs (a <session>.jsonl file or a directory of them)"
    help = "Claude Code session logs: ~/.claude/projects, a project directory or one\n<session>.jsonl"
    personal = True
    lines = True

    def sniff(self, sample: Sample) -> bool:
        rec = sample.record
        return rec is not None and (
            "sessionId" in rec or (rec.get("type") in _TYPES and ("uuid" in rec or "leafUuid" in rec))
        )

    def read_from(
        self, path: Path, cursor: Cursor | None, skipped: Counter[str] | None = None, **options: Any
    ) -> tuple[Sequence[ImportedSession], Cursor]:
        start = ClaudeCodeCursor.from_json(cursor) if cursor else None
        sessions, cur = read_claude_code(path, start, skipped=skipped, **options)  # options: user_id
        return sessions, cur.to_json()


LOADER = _ClaudeCode()


def iter_claude_code(
    path: str | Path, skipped: Counter[str] | None = None, *, user_id: str = DEFAULT_USER
) -> Iterator[ImportedSession]:
    """Sessions of one Claude Code session log, or of every ``*.jsonl`` below a directory."""
    for file in line_files(path):
        sessions, _ = read_claude_code(file, skipped=skipped, user_id=user_id)
        yield from sessions


def read_claude_code(
    path: str | Path,
    cursor: ClaudeCodeCursor | None = None,
    *,
    skipped: Counter[str] | None = None,
    user_id: str = DEFAULT_USER,
) -> tuple[list[ImportedSession], ClaudeCodeCursor]:
    """The sessions in the lines of one log after ``cursor`` (from the start without one), and the cursor
    after them. Sessions hold only the messages of the lines read."""
    p = Path(path)
    cur = ClaudeCodeCursor(**cursor.to_json()) if cursor is not None else ClaudeCodeCursor()
    cur.tools = dict(cur.tools)
    lines, end = read_lines(p, cur.offset)
    agent_file = p.stem.startswith("agent-")
    groups: dict[str, list[Message]] = {}
    first_ts: dict[str, int | None] = {}
    seen: set[str] = set()
    for lineno, raw in enumerate(lines, cur.line):
        if not raw.strip():
            continue
        where = f"{p}:{lineno}"
        try:
            rec = loads_json(raw)
        except ValueError as exc:
            unreadable(skipped, "unreadable_lines", f"{where}: not JSON ({exc})")
            continue
        if not isinstance(rec, dict):
            unreadable(
                skipped, "unreadable_lines", f"{where}: expected a JSON object, found {type(rec).__name__}"
            )
            continue
        if cur.session_id is None:
            sid = rec.get("sessionId")
            cur.session_id = f"{sid}/{p.stem}" if agent_file and isinstance(sid, str) and sid else p.stem
        if not cur.metadata:
            cur.metadata = {k: v for k in ("cwd", "gitBranch") if isinstance(v := rec.get(k), str) and v}
        kind = rec.get("type")
        if kind == "summary":
            if isinstance(rec.get("summary"), str) and rec["summary"].strip():
                cur.title = rec["summary"]
            continue
        if kind not in ("user", "assistant"):
            skip(skipped, f"{kind if isinstance(kind, str) and kind else 'untyped'}_lines")
            continue
        if rec.get("isMeta") or rec.get("isCompactSummary"):
            skip(skipped, "meta_lines" if rec.get("isMeta") else "compact_summaries")
            continue
        try:
            m = _message(rec, cur, skipped)
        except _Unreadable as exc:
            unreadable(skipped, "unreadable_lines", f"{where}: {exc}")
            continue
        if m is None:
            continue
        if m.id in seen:
            skip(skipped, "duplicate_lines")
            continue
        seen.add(m.id or "")
        if rec.get("isSidechain") and not agent_file:
            agent = rec.get("agentId")
            target = (
                f"{cur.session_id}/agent-{agent}"
                if isinstance(agent, str) and agent
                else f"{cur.session_id}/sidechain"
            )
        else:
            target = cur.session_id
        groups.setdefault(target, []).append(m)
        first_ts.setdefault(target, m.timestamp)
    if len(cur.tools) > _MAX_PENDING_TOOLS:  # calls that never got a result: keep the newest
        cur.tools = dict(list(cur.tools.items())[-_MAX_PENDING_TOOLS:])
    cur.offset, cur.line = end, cur.line + len(lines)
    sessions = [
        ImportedSession(
            user_id=user_id,
            session_id=sid,
            messages=messages,
            date=first_ts.get(sid) if cursor is None else None,
            title=cur.title if sid == cur.session_id else None,
            source="claude-code",
            project=cur.metadata.get("cwd"),
            file=str(p),
            metadata=dict(cur.metadata),
        )
        for sid, messages in groups.items()
    ]
    return sessions, cur


class _Unreadable(Exception):
    """A line that is JSON but not a readable message; the message says why."""


def _message(rec: dict[str, Any], cur: ClaudeCodeCursor, skipped: Counter[str] | None) -> Message | None:
    msg = rec.get("message")
    if not isinstance(msg, dict):
        raise _Unreadable(f"a {rec.get('type')} line without a 'message' object")
    uuid = rec.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise _Unreadable(f"a {rec.get('type')} line without 'uuid'")
    content = msg.get("content")
    role = "assistant" if rec.get("type") == "assistant" else "user"
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts: list[str] = []
        results: list[str] = []
        for block in content:
            rendered = _block(block, cur, skipped)
            if rendered is None:
                continue
            (results if isinstance(block, dict) and block.get("type") == "tool_result" else texts).append(
                rendered
            )
        if role == "user" and results and not texts:
            role = "tool"
        text = "\n".join(texts + results)
    else:
        raise _Unreadable("'message.content' is neither text nor a list of blocks")
    if not text.strip():
        if not _only_thinking(content):  # a line of thinking alone is counted as thinking
            skip(skipped, "empty_lines")
        return None
    return make_message(role, text, iso_to_ms(rec.get("timestamp")), f"{cur.session_id}/{uuid}")


def _only_thinking(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in content
    )


def _block(block: Any, cur: ClaudeCodeCursor, skipped: Counter[str] | None) -> str | None:
    if isinstance(block, str):
        return block or None
    if not isinstance(block, dict):
        return None
    btype = block.get("type")
    if btype == "text":
        text = block.get("text")
        return text if isinstance(text, str) and text else None
    if btype in ("thinking", "redacted_thinking"):
        skip(skipped, "thinking_blocks")
        return None
    if btype == "tool_use":
        name = str(block.get("name") or "tool")
        if isinstance(block.get("id"), str):
            cur.tools[block["id"]] = name
        return f"[{name}] {_argument(name, block.get('input'))}".rstrip()
    if btype == "tool_result":
        name = cur.tools.pop(str(block.get("tool_use_id")), "tool")
        label = f"[{name} error]" if block.get("is_error") else f"[{name} result]"
        body = first_lines(_result_text(block.get("content")))
        return f"{label}\n{body}" if body else label
    if btype == "image":
        return "[image]"
    if btype == "document":
        return "[document]"
    skip(skipped, f"{btype or 'unknown'}_blocks")
    return None


def _argument(name: str, args: Any) -> str:
    """The one argument that says what a call did: the command, path, pattern (and where), URL or query."""
    if not isinstance(args, dict):
        return ""
    if name == "TodoWrite" and isinstance(args.get("todos"), list):
        items = [str(t.get("content")) for t in args["todos"] if isinstance(t, dict) and t.get("content")]
        return clip("; ".join(items), 300)
    pattern = args.get("pattern")
    if isinstance(pattern, str) and pattern:
        where = args.get("path")
        return clip(f"{pattern} in {where}" if isinstance(where, str) and where else pattern, 300)
    for key in _ARGUMENTS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return clip(value, 300)
    return clip(json.dumps(args, ensure_ascii=False), 200) if args else ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for c in content:
            if isinstance(c, dict):
                if c.get("type") == "image":
                    out.append("[image]")
                elif isinstance(c.get("text"), str):
                    out.append(c["text"])
            elif isinstance(c, str):
                out.append(c)
        return "\n".join(out)
    return ""
