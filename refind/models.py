"""Pydantic models shared by every layer."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

from dateutil import parser as _dateparser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from refind.errors import InvalidInput

__all__ = [
    "AddResult",
    "Evidence",
    "Hit",
    "Message",
    "RoundTrace",
    "SearchResult",
    "SessionLog",
    "StoreStats",
    "parse_messages",
    "Turn",
    "to_epoch_ms",
    "validation_message",
]

# Epoch ms outside 1900..2200 is almost surely seconds or garbage: refuse it instead of guessing.
_MIN_MS = -2_208_988_800_000
_MAX_MS = 7_258_118_400_000
_WEEKDAY = re.compile(r"\((mon|tue|wed|thu|fri|sat|sun)[a-z]*\)", re.IGNORECASE)


def to_epoch_ms(value: int | float | str | datetime | date) -> int:
    """Normalize a timestamp to epoch milliseconds, UTC.

    Accepts epoch ms (int/float), ``datetime``/``date`` (naive means UTC) and strings in ISO 8601 or the
    spellings chat logs use ("1:56 pm on 8 May, 2023", "2023/05/30 (Tue) 23:40", "2024-01-01T12:00:00Z").
    Raises ``ValueError`` with the offending value otherwise.
    """
    if isinstance(value, bool):
        raise ValueError("a timestamp cannot be a boolean")
    if isinstance(value, int | float):
        ms = int(value)
        if abs(ms) < 100_000_000_000:
            raise ValueError(
                f"timestamp {value} looks like epoch seconds (before 1973 as milliseconds); pass milliseconds"
            )
        if not _MIN_MS <= ms <= _MAX_MS:
            raise ValueError(f"timestamp {value} is not epoch milliseconds between 1900 and 2200")
        return ms
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("empty timestamp string")
        if re.fullmatch(r"-?\d{9,14}", text):  # digits only: epoch ms as text
            return to_epoch_ms(int(text))
        cleaned = _WEEKDAY.sub(" ", text).replace(" on ", " ")
        try:
            dt = _dateparser.parse(cleaned, fuzzy=True, default=datetime(2000, 1, 1))
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"unrecognized timestamp {value!r}") from exc
    else:
        raise ValueError(f"unsupported timestamp type {type(value).__name__}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


class Message(BaseModel):
    """One chat message as given to :meth:`refind.Memory.add`.

    ``timestamp`` may be epoch ms, an ISO string, a chat-log date string or a datetime; it is normalized to
    epoch ms UTC (naive times are taken as UTC). Messages without one take the previous message's, else the
    session's, else the time of the add. ``id`` is the caller's message id (unique per user); re-adding an id
    replaces that message. ``turn`` is the position in the session, assigned in order when omitted.
    """

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    role: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1)
    timestamp: int | None = None
    speaker: str | None = Field(None, max_length=256)
    id: str | None = Field(None, min_length=1, max_length=512)
    turn: int | None = Field(None, ge=0, le=2_000_000_000)
    time_text: str | None = Field(None, description="the timestamp as originally written, when it was text")

    @field_validator("timestamp", mode="before")
    @classmethod
    def _normalize_ts(cls, value: Any, info: Any) -> int | None:
        if value is None:
            return None
        return to_epoch_ms(value)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content is blank")
        return value

    @field_validator("role")
    @classmethod
    def _role(cls, value: str) -> str:
        value = value.strip().lower()
        if not value:
            raise ValueError("role is blank")
        return value

    @classmethod
    def parse(cls, raw: Message | dict[str, Any]) -> Message:
        """Validate a dict (keeping the original text of a string timestamp) or pass a Message through."""
        if isinstance(raw, Message):
            return raw
        if isinstance(raw, dict) and isinstance(raw.get("timestamp"), str) and not raw.get("time_text"):
            raw = {**raw, "time_text": raw["timestamp"]}
        return cls.model_validate(raw)


class Hit(BaseModel):
    """One stored message returned by a query, with its BM25 score (0 for non-scored lookups)."""

    model_config = ConfigDict(frozen=True)

    id: str
    session_id: str
    turn: int
    timestamp: int
    role: str
    speaker: str | None = None
    content: str
    score: float = 0.0
    time_text: str | None = None


class SessionLog(BaseModel):
    """One session of one user, as the loaders in :mod:`refind.io` yield it and
    :meth:`refind.Memory.import_sessions` takes it. ``date`` is the session's epoch ms (messages without a
    timestamp take it), ``date_text`` the date as the source wrote it."""

    user_id: str
    session_id: str
    messages: list[Message]
    date: int | None = None
    date_text: str | None = None


class AddResult(BaseModel):
    """What an add did: ``added`` new messages, ``replaced`` existing ids; ``duplicate_request`` when the
    request_id had been applied before with the same body (nothing was written then)."""

    user_id: str
    session_id: str
    request_id: str | None = None
    added: int = 0
    replaced: int = 0
    duplicate_request: bool = False


class StoreStats(BaseModel):
    """Counts of an index: messages in all, users, and messages per user."""

    path: str
    messages: int
    users: int
    per_user: dict[str, int] = Field(default_factory=dict)


def validation_message(exc: ValidationError, prefix: str = "") -> str:
    """Render a pydantic error as ``field.path: problem; ...`` so the message names each bad field."""
    parts = []
    for err in exc.errors():
        loc = prefix
        for item in err["loc"]:
            loc += f"[{item}]" if isinstance(item, int) else (f".{item}" if loc else str(item))
        parts.append(f"{loc or 'value'}: {err['msg']}")
    return "; ".join(parts)


def parse_messages(messages: Any) -> list[Message]:
    """Validate a list of messages (dicts or Message), raising InvalidInput that names the bad field."""
    if isinstance(messages, str | bytes) or not hasattr(messages, "__iter__"):
        raise InvalidInput("messages: expected a list of messages")
    out: list[Message] = []
    for i, raw in enumerate(messages):
        try:
            out.append(Message.parse(raw))
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc, prefix=f"messages[{i}]")) from exc
        except ValueError as exc:  # dict() of something odd
            raise InvalidInput(f"messages[{i}]: {exc}") from exc
    if not out:
        raise InvalidInput("messages: at least one message is required")
    return out


class Turn(BaseModel):
    """One message inside an evidence block; ``matched`` when a search hit it (not just its window)."""

    id: str
    turn: int
    role: str
    content: str
    timestamp: int
    speaker: str | None = None
    time_text: str | None = None
    matched: bool = False


class Evidence(BaseModel):
    """Consecutive turns of one session found by a search: the hits and the turns around them.

    ``id`` is stable for the same span (``session#first-last``); ``score`` is the best fused score of its
    hits (higher is more relevant); ``rounds`` lists the search rounds (1-based) that found it.
    """

    id: str
    session_id: str
    session_date: int
    session_date_text: str | None = None
    turns: list[Turn]
    score: float = 0.0
    rounds: list[int] = Field(default_factory=list)
    noted: bool = False

    @property
    def first_turn(self) -> int:
        return self.turns[0].turn

    @property
    def last_turn(self) -> int:
        return self.turns[-1].turn

    @property
    def matched_ids(self) -> list[str]:
        return [t.id for t in self.turns if t.matched]


class RoundTrace(BaseModel):
    """What one step of the agent did: a search (keywords, dates, hits, new evidence) or a note/finish."""

    round: int
    action: str
    keywords: str | None = None
    date_from: int | None = None
    date_to: int | None = None
    hits: int = 0
    new_evidence: int = 0
    new_turns: int = 0
    tokens: int = 0
    ms: float = 0.0
    note: str | None = None


class SearchResult(BaseModel):
    """The evidence for one question: blocks grouped by session, sessions in time order, turns in order.

    ``by_relevance()`` gives the blocks best first; ``to_text(max_tokens)`` renders them for a prompt,
    dropping the least relevant blocks first when over budget. ``trace`` records every round.
    """

    question: str
    user_id: str
    now: int | None = None
    agent: str
    evidence: list[Evidence] = Field(default_factory=list)
    trace: list[RoundTrace] = Field(default_factory=list)
    context_tokens: int | None = 150

    def by_relevance(self) -> list[Evidence]:
        """Blocks, most relevant first (ties: earlier round, then time)."""
        from refind.evidence import by_relevance

        return by_relevance(self.evidence)

    def sessions(self) -> list[str]:
        """Session ids, most relevant first (each session ranked by its best block)."""
        return list(dict.fromkeys(e.session_id for e in self.by_relevance()))

    def to_text(self, max_tokens: int | None = None) -> str:
        """Evidence rendered for a prompt (context turns cut to ``context_tokens``); see
        :func:`refind.evidence.render`."""
        from refind.evidence import render

        return render(self.evidence, max_tokens=max_tokens, context_tokens=self.context_tokens)

    @property
    def tokens(self) -> int:
        """Tokens of the full rendered evidence."""
        from refind.tokens import count_tokens

        return count_tokens(self.to_text())
