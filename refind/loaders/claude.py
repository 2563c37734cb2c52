"""Claude.ai data export: ``conversations.json``, or the export ``.zip`` that holds it.

The file is a JSON list of conversations (``uuid``, ``name``, ``created_at``, ``chat_messages``). One
conversation becomes one session (id: its ``uuid``; date: its ``created_at``; title: its ``name``):

- each chat message becomes one message: ``sender`` ``human`` is role ``user``, ``assistant`` stays;
  its time is its ``created_at`` (ISO 8601);
- the text comes from the ``content`` blocks when there are any (``text`` verbatim; ``tool_use`` as
  ``[tool NAME: argument]``, an artifact as ``[artifact: title]`` with its content; ``tool_result`` as
  ``[NAME result]`` with its first lines; ``thinking`` is skipped and counted), else from ``text``;
- ``attachments`` and ``files`` become markers: ``[file: notes.txt]`` (the attachment's extracted text is
  not imported);
- when messages carry ``parent_message_uuid`` and the conversation branches (a retried answer, an edited
  question), the thread that ends at the newest message is imported and the others are counted as
  ``other_branch_messages``;
- message ids are ``{conversation uuid}/{message uuid}``.

A conversation that cannot be read is counted and named; the others are still imported.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from refind.errors import InvalidInput
from refind.loaders._base import (
    DEFAULT_USER,
    ImportedSession,
    Loader,
    Sample,
    clip,
    first_lines,
    frozen_heap,
    iso_to_ms,
    json_list,
    keys_of,
    make_message,
    obj,
    skip,
    text_of,
    unreadable,
)
from refind.models import Message

__all__ = ["LOADER", "iter_claude"]

EXPECTED = "a Claude.ai export (a JSON list of conversations, each with 'uuid' and 'chat_messages')"

_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}
_MAIN_ARGUMENT = ("command", "query", "url", "path", "file_path", "title", "description", "prompt")


def iter_claude(
    path: str | Path,
    skipped: Counter[str] | None = None,
    *,
    user_id: str = DEFAULT_USER,
    member: str | None = None,
) -> Iterator[ImportedSession]:
    """Sessions of a Claude.ai export (``conversations.json``, or the ``.zip``), one per conversation."""
    p = Path(path)
    if member is None and p.suffix.lower() == ".zip":
        member = "conversations.json"
    where = f"{p}:{member}" if member else str(p)
    seen = 0
    readable = 0
    first_problem: str | None = None
    with frozen_heap():  # the decoded file stays alive throughout: keep it out of GC passes
        for ci, conv in enumerate(json_list(p, member, EXPECTED)):
            seen += 1
            try:
                session = _conversation(conv, user_id, where, skipped)
            except _Unreadable as exc:
                uuid = conv.get("uuid") if isinstance(conv, dict) else None
                label = f" (uuid {uuid})" if isinstance(uuid, str) else ""
                description = f"{where}: conversation {ci}{label}: {exc}"
                first_problem = first_problem or description
                unreadable(skipped, "unreadable_conversations", description)
                continue
            readable += 1
            if session is None:
                skip(skipped, "empty_conversations")
                continue
            yield session
    if seen and not readable:
        raise InvalidInput(f"looks like a Claude.ai export but no conversation is readable: {first_problem}")


class _Claude(Loader):
    name = "claude"
    title = "Claude"
    about = "a Claude.ai export (conversations.json or the export .zip)"
    help = "a Claude.ai data export: conversations.json, or the export .zip"
    personal = True
    member = "conversations.json"
    expected = "a Claude.ai export (conversations with 'chat_messages')"

    def sniff(self, sample: Sample) -> bool:
        return '"chat_messages"' in sample.text

    def read(
        self, path: Path, skipped: Counter[str] | None = None, **options: Any
    ) -> Iterator[ImportedSession]:
        return iter_claude(path, skipped, **options)  # options: user_id, member


LOADER = _Claude()


class _Unreadable(Exception):
    """One conversation that cannot be read; the message says why."""


def _conversation(
    conv: Any, user_id: str, where: str, skipped: Counter[str] | None
) -> ImportedSession | None:
    if not isinstance(conv, dict):
        raise _Unreadable(f"expected a conversation object, found {keys_of(conv)}")
    uuid = conv.get("uuid")
    if not isinstance(uuid, str) or not uuid.strip():
        raise _Unreadable("no 'uuid'")
    chat = conv.get("chat_messages")
    if not isinstance(chat, list):
        raise _Unreadable("no 'chat_messages'" if chat is None else f"'chat_messages' is {keys_of(chat)}")
    thread = _thread([m for m in chat if isinstance(m, dict)], skipped)
    skip(skipped, "unreadable_messages", sum(1 for m in chat if not isinstance(m, dict)))
    messages: list[Message] = []
    seen: set[str] = set()
    for mi, raw in enumerate(thread):
        m = _message(uuid, mi, raw, skipped)
        if m is None:
            continue
        if m.id in seen:
            skip(skipped, "duplicate_messages")
            continue
        seen.add(m.id or "")
        messages.append(m)
    if not messages:
        return None
    name = conv.get("name")
    return ImportedSession(
        user_id=user_id,
        session_id=uuid,
        messages=messages,
        date=iso_to_ms(conv.get("created_at")),
        title=name if isinstance(name, str) and name.strip() else None,
        source="claude",
        file=where,
    )


def _thread(chat: list[dict[str, Any]], skipped: Counter[str] | None) -> list[dict[str, Any]]:
    """The messages in order; when parent links show branches, only the thread ending at the newest."""
    ids = {m.get("uuid") for m in chat if isinstance(m.get("uuid"), str)}
    parents = [m.get("parent_message_uuid") for m in chat]
    linked = [p for p in parents if isinstance(p, str) and p in ids]
    if len(set(linked)) == len(linked):  # no message has two children: one thread, keep the file's order
        return chat
    by_id = {m["uuid"]: m for m in chat if isinstance(m.get("uuid"), str)}
    newest = max(
        range(len(chat)), key=lambda i: (iso_to_ms(chat[i].get("created_at")) or 0, i)
    )  # the last-written leaf
    path: list[dict[str, Any]] = []
    node: dict[str, Any] | None = chat[newest]
    seen: set[int] = set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        path.append(node)
        parent = node.get("parent_message_uuid")
        node = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    skip(skipped, "other_branch_messages", len(chat) - len(path))
    return path


def _message(cid: str, mi: int, raw: dict[str, Any], skipped: Counter[str] | None) -> Message | None:
    sender = raw.get("sender")
    role = _ROLES.get(sender, sender) if isinstance(sender, str) and sender else "unknown"
    blocks = raw.get("content")
    if isinstance(blocks, list) and blocks:
        text = "\n".join(t for t in (_block(b, skipped) for b in blocks) if t)
    else:
        text = text_of(raw.get("text"))
    markers = []
    for key in ("attachments", "files"):
        for a in raw.get(key) or []:
            if isinstance(a, dict):
                markers.append(f"[file: {a.get('file_name') or a.get('file_uuid') or 'attachment'}]")
    if markers:
        text = "\n".join([text, *markers]) if text.strip() else "\n".join(markers)
    if not text.strip():
        thinking = isinstance(blocks, list) and any(
            isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in blocks
        )
        if not thinking:  # a message of thinking alone is counted as thinking
            skip(skipped, "empty_messages")
        return None
    mid = text_of(raw.get("uuid")) or str(mi)
    return make_message(role, text, iso_to_ms(raw.get("created_at")), f"{cid}/{mid}")


def _block(block: Any, skipped: Counter[str] | None) -> str:
    if not isinstance(block, dict):
        return ""
    btype = block.get("type")
    if btype == "text":
        return text_of(block.get("text"))
    if btype in ("thinking", "redacted_thinking"):
        skip(skipped, "thinking_blocks")
        return ""
    if btype == "tool_use":
        name = str(block.get("name") or "tool")
        args = obj(block.get("input"))
        if name == "artifacts":
            title = args.get("title") or args.get("id") or "artifact"
            body = args.get("content") if isinstance(args.get("content"), str) else ""
            return f"[artifact: {clip(str(title), 200)}]" + (f"\n{body}" if body else "")
        return f"[tool {name}: {_argument(args)}]"
    if btype == "tool_result":
        name = str(block.get("name") or "tool")
        label = f"[{name} error]" if block.get("is_error") else f"[{name} result]"
        body = first_lines(_result_text(block.get("content")))
        return f"{label}\n{body}" if body else label
    if btype == "voice_note" and isinstance(block.get("text"), str):
        return block["text"]
    if btype in ("image", "document"):
        return f"[{btype}]"
    skip(skipped, f"{btype or 'unknown'}_blocks")
    return ""


def _argument(args: dict[str, Any]) -> str:
    for key in _MAIN_ARGUMENT:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return clip(value, 300)
    return clip(json.dumps(args, ensure_ascii=False), 300) if args else ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for c in content:
            if isinstance(c, dict):
                text = c.get("text") or c.get("title") or c.get("url")
                if isinstance(text, str):
                    out.append(text)
            elif isinstance(c, str):
                out.append(c)
        return "\n".join(out)
    return ""
