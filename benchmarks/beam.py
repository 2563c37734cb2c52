"""BEAM ("Beyond a Million Tokens", ICLR 2026) in its own layout, for ``python -m benchmarks run --dataset beam``.

``--data`` is a folder holding conversations at any depth: the root of the release (``<bucket>/<n>/``), one
bucket (``100K/``) or one conversation (``100K/1/``). A conversation is a folder with ``chat.json`` (or
``chat.json.gz``) and ``probing_questions/probing_questions.json``; its key is ``<bucket>/<n>`` (its parent
folder's name and its own), whatever folder was passed. Conversations are read in bucket order by size
(100K, 500K, 1M, 10M; other names after, by name), then by number.

How a conversation becomes a haystack (one per conversation):

- **Sessions**: one per BEAM batch (a dated block of 60-170 messages, as a chat app holds it), id
  ``batch-<batch_number>``, in file order. Its messages are the batch's turns flattened in order, each
  message keeping BEAM's ``role`` and ``content`` verbatim (the ``->-> b,t`` markers included) with id
  ``str(id)`` (BEAM numbers messages 0..N across the conversation) and ``turn`` its position in the batch.
  Blank messages are dropped (``messages_empty_content``); a message without an id gets
  ``b<batch>:<turn>`` (``messages_without_id``); an id seen before in the conversation is dropped
  (``duplicate_message_ids``), since an id names one message.
- **Dates**: a batch's date is its ``time_anchor`` ("March-15-2024"; in the release it sits on the batch's
  first user message, which is where it is looked for when the batch has none). Messages are spread in turn
  order from 09:00 UTC of that day, one minute apart, the step shrinking when a batch would run past
  midnight (``min(60 s, 15 h / messages)``), so every message lies on its batch's day, a batch's messages keep
  their order, and a time filter on the day finds the whole batch. A batch whose anchor is missing or
  unreadable (``batch_anchor_missing``, ``batch_anchor_unparsed``) is dated a day after the batch before it
  (or a day before the batch after it, for leading batches); a conversation with no readable anchor is
  undated. Anchors that go back in time are kept as written and counted (``batch_anchor_out_of_order``).
- ``now`` of every question of a conversation is 12:00 UTC on the day after its last batch's day.

How a probing question becomes a question: ``type`` is the BEAM type it is filed under (the key of
``probing_questions.json``), ``bucket`` the conversation's bucket, id ``<bucket>/<n>/<type>/<i>``. Turn gold is
every id in ``source_chat_ids``: a list, or a dict of lists (``first_statement``/``second_statement``,
``original_info``/``updated_info``, ``first_event``/``second_event``), in order, repeats kept once
(``gold_ids_repeated``). Gold sessions are the batches holding them. ``abstention`` questions have no gold and
are reported apart. A question is skipped and counted when it has no text (``no_question_text``), when it is
not an abstention question and names no gold id (``no_gold``), or when one of its ids names no message of the
conversation (``unresolved_gold``; the missing ids are counted under ``gold_ids_unresolved``): scored against
the ids that resolve, its gold would be incomplete. The answer is ``answer``, ``ideal_answer``,
``ideal_response`` or ``ideal_summary``, whichever the type uses (none for instruction and preference
following).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.datasets import ABSTENTION, Dataset, Question, Session
from refind import Message
from refind.errors import InvalidInput
from refind.loaders import read_json

__all__ = ["Conversation", "find_conversations", "load_beam", "parse_anchor", "read_conversation"]

DAY_MS = 86_400_000
_START_MS = 9 * 3_600_000  # a batch's first message: 09:00 UTC of its day
_SPAN_MS = 15 * 3_600_000  # ... and its last before midnight
_STEP_MS = 60_000  # one minute apart when the day has room
_NOW_MS = 12 * 3_600_000  # now: noon of the day after the last batch
_ANCHOR_FORMATS = ("%B-%d-%Y", "%b-%d-%Y", "%B %d, %Y", "%B %d %Y", "%Y-%m-%d")
_ANSWER_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")
_BUCKET = re.compile(r"(\d+)\s*([KMG]?)", re.IGNORECASE)
_QUESTIONS = Path("probing_questions") / "probing_questions.json"


def parse_anchor(text: Any) -> int | None:
    """A BEAM ``time_anchor`` ("March-15-2024", also "Mar-15-2024", "March 15, 2024", "2024-03-15") as the
    epoch ms of that day's midnight, UTC; None when it is not one of those spellings."""
    if not isinstance(text, str) or not text.strip():
        return None
    for fmt in _ANCHOR_FORMATS:
        try:
            day = datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
        return int(day.timestamp() * 1000)
    return None


def _day_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _bucket_order(name: str) -> tuple[int, float, str]:
    m = _BUCKET.fullmatch(name.strip())
    if m is None:
        return (1, 0.0, name)
    scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2).upper()]
    return (0, int(m.group(1)) * scale, name)


def _number_order(name: str) -> tuple[int, int, str]:
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


def _chat_file(folder: Path) -> Path | None:
    for name in ("chat.json", "chat.json.gz"):
        if (folder / name).is_file():
            return folder / name
    return None


def find_conversations(path: str | Path) -> list[Path]:
    """The conversation folders at or under ``path`` (a folder with ``chat.json``), in bucket order by size,
    then by number. Raises InvalidInput when there is none."""
    p = Path(path)
    if p.is_file() and p.name in {"chat.json", "chat.json.gz"}:
        p = p.parent
    if not p.is_dir():
        raise InvalidInput(f"{p}: no such folder (BEAM's layout: <bucket>/<n>/chat.json)")
    found = {f.parent for name in ("chat.json", "chat.json.gz") for f in p.rglob(name)}
    if not found:
        raise InvalidInput(
            f"{p}: no BEAM conversation here (a folder with chat.json, as <bucket>/<n>/chat.json)"
        )
    return sorted(found, key=lambda d: (_bucket_order(d.parent.name), _number_order(d.name)))


@dataclass
class Conversation:
    """One BEAM conversation read: its key (``<bucket>/<n>``), bucket, sessions (one per batch, dated) and
    ``now`` (noon UTC of the day after the last batch; None when no batch is dated)."""

    key: str
    bucket: str
    sessions: list[Session]
    now: int | None
    files: tuple[Path, ...]

    @property
    def session_of(self) -> dict[str, str]:
        return {t: s.id for s in self.sessions for t in s.turn_ids}


def _anchor_of(batch: dict[str, Any]) -> Any:
    if batch.get("time_anchor"):
        return batch["time_anchor"]
    for turn in batch.get("turns") or []:
        for m in turn if isinstance(turn, list) else []:
            if isinstance(m, dict) and m.get("time_anchor"):
                return m["time_anchor"]
    return None


def _batch_days(anchors: list[Any], notes: Counter[str]) -> list[int | None]:
    days: list[int | None] = []
    for a in anchors:
        day = parse_anchor(a)
        if day is None:
            notes["batch_anchor_missing" if not a else "batch_anchor_unparsed"] += 1
        days.append(day)
    known_days = [d for d in days if d is not None]
    if not known_days:
        return days
    notes["batch_anchor_out_of_order"] += sum(
        1 for a, b in zip(known_days, known_days[1:], strict=False) if b < a
    )
    first = next(i for i, d in enumerate(days) if d is not None)
    for i in range(first - 1, -1, -1):  # leading undated batches: a day before the next
        days[i] = days[i + 1] - DAY_MS  # type: ignore[operator]
    for i in range(first + 1, len(days)):  # later undated batches: a day after the previous
        if days[i] is None:
            days[i] = days[i - 1] + DAY_MS  # type: ignore[operator]
    return days


def _stamps(day: int | None, n: int) -> list[int | None]:
    if day is None:
        return [None] * n
    step = min(_STEP_MS, _SPAN_MS // max(n, 1))
    return [day + _START_MS + i * step for i in range(n)]


def read_conversation(folder: Path, notes: Counter[str]) -> Conversation:
    """One conversation folder as sessions (see the module docstring); repairs counted in ``notes``."""
    chat_path = _chat_file(folder)
    if chat_path is None:
        raise InvalidInput(f"{folder}: no chat.json here")
    chat = read_json(chat_path)
    if not isinstance(chat, list):
        raise InvalidInput(f"{chat_path}: a BEAM chat.json is a JSON list of batches")
    key = f"{folder.parent.name}/{folder.name}"
    batches = []
    for bi, batch in enumerate(chat):
        if not isinstance(batch, dict) or not isinstance(batch.get("turns"), list):
            raise InvalidInput(f"{chat_path}[{bi}]: a batch is an object with a list of turns")
        batches.append(batch)
    days = _batch_days([_anchor_of(b) for b in batches], notes)
    seen: set[str] = set()
    sessions: list[Session] = []
    for bi, (batch, day) in enumerate(zip(batches, days, strict=True)):
        number = batch.get("batch_number", bi + 1)
        sid = f"batch-{number}"
        raw: list[dict[str, Any]] = []
        for ti, turn in enumerate(batch["turns"]):
            if not isinstance(turn, list):
                raise InvalidInput(f"{chat_path}[{bi}].turns[{ti}]: a turn is a list of messages")
            raw += [m for m in turn if isinstance(m, dict)]
        kept: list[tuple[str, str, str]] = []
        for m in raw:
            content = m.get("content")
            if not isinstance(content, str) or not content.strip():
                notes["messages_empty_content"] += 1
                continue
            if m.get("id") is None or str(m["id"]).strip() == "":
                mid = f"b{number}:{len(kept)}"
                notes["messages_without_id"] += 1
            else:
                mid = str(m["id"])
            if mid in seen:
                notes["duplicate_message_ids"] += 1
                continue
            seen.add(mid)
            kept.append((mid, str(m.get("role") or "user"), content))
        if not kept:
            notes["empty_batches"] += 1
            continue
        messages = tuple(
            Message(role=role, content=content, id=mid, turn=i, timestamp=ts, speaker=None, time_text=None)
            for i, ((mid, role, content), ts) in enumerate(zip(kept, _stamps(day, len(kept)), strict=True))
        )
        sessions.append(
            Session(
                id=sid,
                text="\n".join(f"[{m.role}] {m.content}" for m in messages),
                messages=messages,
                date=None if day is None else day + _START_MS,
                date_text=None if day is None else _day_text(day),
            )
        )
    dated = [d for d in days if d is not None]
    now = max(dated) + DAY_MS + _NOW_MS if dated else None
    questions_path = folder / _QUESTIONS
    files = (chat_path, questions_path) if questions_path.exists() else (chat_path,)
    return Conversation(key=key, bucket=folder.parent.name, sessions=sessions, now=now, files=files)


def _gold_ids(source: Any) -> list[Any]:
    """``source_chat_ids`` flattened in order: a list, a dict of lists (or of single ids), or one id."""
    if source is None:
        return []
    if isinstance(source, dict):
        return [i for v in source.values() for i in _gold_ids(v)]
    if isinstance(source, list):
        return [i for v in source for i in _gold_ids(v)]
    return [source]


def _id_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _questions(
    conv: Conversation, raw: Any, where: Path, skipped: Counter[str], notes: Counter[str]
) -> list[Question]:
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where}: probing_questions.json maps each question type to a list of questions")
    session_of = conv.session_of
    out: list[Question] = []
    for qtype, items in raw.items():
        if not isinstance(items, list):
            raise InvalidInput(f"{where}: {qtype!r} must be a list of questions")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InvalidInput(f"{where}: {qtype}[{i}] must be an object")
            text = str(item.get("question") or "").strip()
            if not text:
                skipped["no_question_text"] += 1
                continue
            answer = next((item[k] for k in _ANSWER_KEYS if item.get(k) is not None), None)
            abstention = qtype == ABSTENTION
            gold: list[str] = []
            if not abstention:
                ids = [_id_text(v) for v in _gold_ids(item.get("source_chat_ids"))]
                if not ids:
                    skipped["no_gold"] += 1
                    continue
                missing = sum(1 for t in ids if t is None or t not in session_of)
                if missing:
                    skipped["unresolved_gold"] += 1
                    notes["gold_ids_unresolved"] += missing
                    continue
                gold = list(dict.fromkeys(t for t in ids if t is not None))
                notes["gold_ids_repeated"] += len(ids) - len(gold)
            out.append(
                Question(
                    id=f"{conv.key}/{qtype}/{i}",
                    type=str(qtype),
                    text=text,
                    haystack=conv.key,
                    gold_sessions=tuple(dict.fromkeys(session_of[t] for t in gold)),
                    gold_turns=None if abstention else tuple(gold),
                    now=conv.now,
                    now_text=None if conv.now is None else _day_text(conv.now) + "T12:00:00Z",
                    abstention=abstention,
                    answer=None if answer is None else str(answer),
                    bucket=conv.bucket,
                )
            )
    return out


def load_beam(path: str | Path) -> Dataset:
    """BEAM conversations at or under ``path`` (see the module docstring): one haystack per conversation."""
    base = Path(path)
    if base.is_file():
        base = base.parent
    notes: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    conversations: dict[str, Conversation] = {}
    questions: list[Question] = []
    files: list[Path] = []
    for folder in find_conversations(base):
        conv = read_conversation(folder, notes)
        if conv.key in conversations:
            raise InvalidInput(f"{folder}: a second conversation {conv.key} under {base}; pass one of them")
        conversations[conv.key] = conv
        files += conv.files
        questions_path = folder / _QUESTIONS
        if not questions_path.exists():
            notes["conversations_without_questions"] += 1
            continue
        questions += _questions(conv, read_json(questions_path), questions_path, skipped, notes)
    notes["conversations"] = len(conversations)
    notes["batches"] = sum(len(c.sessions) for c in conversations.values())
    notes["messages"] = sum(len(s.messages) for c in conversations.values() for s in c.sessions)
    notes.update(dict.fromkeys(("gold_ids_repeated", "gold_ids_unresolved"), 0))

    def haystacks() -> Iterator[tuple[str, list[Session]]]:
        for key, conv in conversations.items():
            yield key, conv.sessions

    return Dataset(
        name="beam",
        path=base,
        questions=questions,
        turn_level=True,
        skipped=skipped,
        notes=notes,
        files=tuple(files),
        _haystacks=haystacks,
    )
