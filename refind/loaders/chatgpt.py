"""ChatGPT data export: ``conversations.json``, or the export ``.zip`` that holds it.

The file is a JSON list of conversations. Each is a tree: ``mapping`` holds nodes (``id``, ``message``,
``parent``, ``children``); regenerating an answer or editing a question adds a branch, and ``current_node``
is the leaf of the thread the app shows. One conversation becomes one session (id: the conversation's
``conversation_id`` or ``id``; date: its ``create_time``, epoch seconds), holding the thread that ends at
``current_node``, root first:

- skipped (and counted): nodes without a message, ``system`` messages, messages flagged
  ``is_visually_hidden_from_conversation``, the model's reasoning (``thoughts``, ``reasoning_recap``),
  memory and custom-instruction context, and messages that render to nothing; nodes on other branches are
  counted as ``other_branch_messages``;
- text ``parts`` are joined verbatim; other parts become short markers: ``[image]``, ``[audio]``,
  ``[file: report.pdf]`` (attachments), ``[code output]`` with the first lines of a tool's output,
  ``[web: title url]`` for browsing results, ``[to dalle.text2im] ...`` for calls to a tool;
- ``author.role`` is kept (``user``, ``assistant``, ``tool``), the tool's name as ``speaker``;
- a message's time is its ``create_time``; without one it takes the previous message's (the session's
  for the first);
- message ids are ``{conversation id}/{message id}``, so importing a newer export of the same account
  replaces what is there and appends what is new.

A conversation that cannot be read (no ``mapping``, a broken tree) is counted and named, and the others
are still imported; a file that is not a list of conversations at all raises :class:`InvalidInput`
saying what it found.
"""

from __future__ import annotations

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
    json_list,
    keys_of,
    make_message,
    seconds_to_ms,
    skip,
    text_of,
    unreadable,
)
from refind.models import Message

__all__ = ["LOADER", "iter_chatgpt"]

EXPECTED = "a ChatGPT export (a JSON list of conversations, each with 'mapping' and 'current_node')"

_HIDDEN_TYPES = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}
_MARKERS = {
    "image_asset_pointer": "[image]",
    "audio_asset_pointer": "[audio]",
    "real_time_user_audio_video_asset_pointer": "[audio]",
    "video_container_asset_pointer": "[video]",
}


def iter_chatgpt(
    path: str | Path,
    skipped: Counter[str] | None = None,
    *,
    user_id: str = DEFAULT_USER,
    member: str | None = None,
) -> Iterator[ImportedSession]:
    """Sessions of a ChatGPT export (``conversations.json``, or the ``.zip``; ``member`` names the file
    inside an archive), one per conversation, in the file's order."""
    p = Path(path)
    if member is None and p.suffix.lower() == ".zip":
        member = "conversations.json"
    where = f"{p}:{member}" if member else str(p)
    conversations = json_list(p, member, EXPECTED, key="conversations")
    seen = 0
    readable = 0
    first_problem: str | None = None
    with frozen_heap():  # the decoded file stays alive throughout: keep it out of GC passes
        for ci, conv in enumerate(conversations):
            seen += 1
            try:
                session = _conversation(conv, ci, user_id, where, skipped)
            except _Unreadable as exc:
                description = f"{where}: conversation {ci}{_label(conv)}: {exc}"
                first_problem = first_problem or description
                unreadable(skipped, "unreadable_conversations", description)
                continue
            readable += 1
            if session is None:
                skip(skipped, "empty_conversations")
                continue
            yield session
    if seen and not readable:
        raise InvalidInput(f"looks like a ChatGPT export but no conversation is readable: {first_problem}")


class _ChatGPT(Loader):
    name = "chatgpt"
    title = "ChatGPT"
    about = "a ChatGPT export (conversations.json or the export .zip)"
    help = "a ChatGPT data export: conversations.json, or the export .zip"
    personal = True
    member = "conversations.json"
    expected = "a ChatGPT export (conversations with 'mapping')"

    def sniff(self, sample: Sample) -> bool:
        text = sample.text
        return '"mapping"' in text and ('"current_node"' in text or '"create_time"' in text)

    def read(
        self, path: Path, skipped: Counter[str] | None = None, **options: Any
    ) -> Iterator[ImportedSession]:
        return iter_chatgpt(path, skipped, **options)  # options: user_id, member


LOADER = _ChatGPT()


class _Unreadable(Exception):
    """One conversation that cannot be read; the message says why."""


def _label(conv: Any) -> str:
    if not isinstance(conv, dict):
        return ""
    cid = conv.get("conversation_id") or conv.get("id")
    title = conv.get("title")
    parts = [
        f"id {cid}" if isinstance(cid, str) else "",
        repr(clip(title, 60)) if isinstance(title, str) else "",
    ]
    text = ", ".join(x for x in parts if x)
    return f" ({text})" if text else ""


def _conversation(
    conv: Any, ci: int, user_id: str, where: str, skipped: Counter[str] | None
) -> ImportedSession | None:
    if not isinstance(conv, dict):
        raise _Unreadable(f"expected a conversation object, found {keys_of(conv)}")
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise _Unreadable("no 'mapping'" if mapping is None else f"'mapping' is {keys_of(mapping)}")
    cid = conv.get("conversation_id") or conv.get("id")
    if not isinstance(cid, str) or not cid.strip():
        raise _Unreadable("no 'conversation_id' or 'id'")
    thread = _thread(mapping, conv.get("current_node"), skipped)
    skip(skipped, "other_branch_messages", sum(1 for n in mapping.values() if _has_message(n)) - len(thread))
    messages: list[Message] = []
    seen: set[str] = set()
    for node_id, msg in thread:
        m = _message(cid, node_id, msg, skipped)
        if m is None:
            continue
        if m.id in seen:
            skip(skipped, "duplicate_messages")
            continue
        seen.add(m.id or "")
        messages.append(m)
    if not messages:
        return None
    title = conv.get("title")
    return ImportedSession(
        user_id=user_id,
        session_id=cid,
        messages=messages,
        date=seconds_to_ms(conv.get("create_time")),
        title=title if isinstance(title, str) and title.strip() else None,
        source="chatgpt",
        file=where,
    )


def _has_message(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("message"), dict)


def _thread(mapping: dict[str, Any], current: Any, skipped: Counter[str] | None) -> list[tuple[str, Any]]:
    """(node id, message) from the root to ``current`` (the newest leaf when ``current`` is missing)."""
    if not isinstance(current, str) or current not in mapping:
        current = _newest_leaf(mapping)
        if current is None:
            raise _Unreadable("'mapping' has no nodes")
        skip(skipped, "conversations_without_current_node")
    path: list[tuple[str, Any]] = []
    seen: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            raise _Unreadable(f"the tree has a cycle at node {node_id}")
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            raise _Unreadable(f"node {node_id} is {keys_of(node)}, not a node object")
        if isinstance(node.get("message"), dict):
            path.append((node_id, node["message"]))
        node_id = node.get("parent")
    path.reverse()
    return path


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    best: tuple[float, str] | None = None
    for node_id, node in mapping.items():
        if not isinstance(node, dict) or node.get("children"):
            continue
        msg = node.get("message")
        t = msg.get("create_time") if isinstance(msg, dict) else None
        key = (float(t) if isinstance(t, int | float) else 0.0, str(node_id))
        if best is None or key > best:
            best = key
    return best[1] if best is not None else None


def _message(cid: str, node_id: str, msg: dict[str, Any], skipped: Counter[str] | None) -> Message | None:
    # the hot path of a large export: plain isinstance checks, nothing built before it is needed
    author = msg.get("author")
    if not isinstance(author, dict):
        author = {}
    role = author.get("role")
    if not isinstance(role, str):
        role = ""
    if role == "system":
        skip(skipped, "system_messages")
        return None
    metadata = msg.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    if metadata.get("is_visually_hidden_from_conversation"):
        skip(skipped, "hidden_messages")
        return None
    content = msg.get("content")
    if not isinstance(content, dict):
        content = {}
    if content.get("content_type") in _HIDDEN_TYPES:
        skip(skipped, "reasoning_and_context_messages")
        return None
    name = author.get("name")
    if not isinstance(name, str) or not name:
        name = None
    text = _render(content, role, name, msg.get("recipient"))
    if metadata.get("attachments"):
        attachments = [
            f"[file: {a.get('name') or a.get('id') or 'attachment'}]"
            for a in metadata["attachments"]
            if isinstance(a, dict)
        ]
        text = "\n".join([text, *attachments]) if text else "\n".join(attachments)
    if not text or text.isspace():
        skip(skipped, "empty_messages")
        return None
    msg_id = msg.get("id")
    if not isinstance(msg_id, str) or not msg_id:
        msg_id = node_id
    return make_message(
        role or "unknown", text, seconds_to_ms(msg.get("create_time")), f"{cid}/{msg_id}", name
    )


def _render(content: dict[str, Any], role: str, name: str | None, recipient: Any) -> str:
    ctype = content.get("content_type")
    if ctype == "text" and role != "tool" and recipient in ("all", None):
        parts = content.get("parts")
        if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], str):
            return parts[0].strip("\n")  # the common case: one text part
    if ctype in ("text", "multimodal_text"):
        text = _parts(content.get("parts"))
    elif ctype == "code":
        text = f"[code]\n{content.get('text') or ''}".rstrip()
    elif ctype == "execution_output":
        text = f"[code output]\n{first_lines(str(content.get('text') or ''))}".rstrip()
    elif ctype == "tether_browsing_display":
        text = f"[web results]\n{first_lines(str(content.get('result') or content.get('summary') or ''))}"
    elif ctype in ("tether_quote", "sonic_webpage"):
        title, url = content.get("title") or "", content.get("url") or content.get("domain") or ""
        text = f"[web: {clip(f'{title} {url}', 200)}]\n{first_lines(str(content.get('text') or ''))}"
    elif ctype == "system_error":
        text = f"[error: {content.get('name') or 'error'}] {clip(str(content.get('text') or ''), 300)}"
    elif ctype == "computer_output":
        text = "[screenshot]"
    else:
        body = text_of(content.get("text")) or _parts(content.get("parts"))
        text = f"[{ctype or 'content'}] {clip(body, 300)}".rstrip()
    text = text.strip("\n")
    if role == "tool" and ctype in ("text", "multimodal_text") and text:
        text = f"[{name or 'tool'}]\n{first_lines(text)}" if not text.startswith("[image") else text
    if (
        role == "assistant"
        and isinstance(recipient, str)
        and recipient not in ("all", "")
        and ctype != "code"
    ):
        text = f"[to {recipient}] {clip(text, 300)}"
    return text


def _parts(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            if part:
                out.append(part)
        elif isinstance(part, dict):
            ptype = part.get("content_type")
            text = part.get("text")
            if isinstance(text, str) and ptype in (None, "text", "audio_transcription"):
                out.append(text)
                continue
            marker = _MARKERS.get(str(ptype), f"[{ptype or 'attachment'}]")
            meta = part.get("metadata")
            dalle = meta.get("dalle") if isinstance(meta, dict) else None
            if isinstance(dalle, dict) and isinstance(dalle.get("prompt"), str):
                marker = f"[image: {clip(dalle['prompt'], 200)}]"
            out.append(marker)
    return "\n".join(out)
