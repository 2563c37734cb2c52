"""Pydantic models shared by every layer."""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime
from typing import Any, Literal, TypeVar

from dateutil import parser as _dateparser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from refind.errors import InvalidInput

__all__ = [
    "AddResult",
    "Evidence",
    "Hit",
    "MAX_QUERY_TERMS",
    "Message",
    "ROUND_ACTIONS",
    "Round",
    "RoundTrace",
    "SessionLog",
    "SessionSummary",
    "Shape",
    "StandingFact",
    "TraceAction",
    "StoreStats",
    "parse_messages",
    "TIME_FORMS",
    "Turn",
    "check_id",
    "derive_title",
    "id_problem",
    "to_epoch_ms",
    "validation_message",
]

MAX_QUERY_TERMS = 64
"""Distinct query terms an engine uses (the most frequent in the query first, ties by first occurrence): a
longer query costs no more than this."""

# Epoch ms outside 1900..2200 is almost surely seconds or garbage: refuse it instead of guessing. The same
# bounds hold for every spelling (numbers, digits, ISO 8601, chat-log dates, datetime objects).
_MIN_MS = -2_208_988_800_000  # 1900-01-01T00:00:00Z
_MAX_MS = 7_258_118_400_000  # 2200-01-01T00:00:00Z
_MAX_TIME_TEXT = 64  # a date written out is short; longer text is not a timestamp
_WEEKDAY = re.compile(r"\((mon|tue|wed|thu|fri|sat|sun)[a-z]*\)", re.IGNORECASE)
_DIGITS = re.compile(r"[0-9]+")
_FOUR_DIGITS = re.compile(r"(?<![0-9])[0-9]{4}(?![0-9])")
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]+")
_WEEKDAYS = {name: i for i, name in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))}
_WEEKDAY_NAME = re.compile(
    r"(?<![a-z])(mon(?:day)?|tue(?:s|sday)?|wed(?:nesday)?|thu(?:r|rs|rsday)?|fri(?:day)?|sat(?:urday)?"
    r"|sun(?:day)?)(?![a-z])",
    re.IGNORECASE,
)
TIME_FORMS = (
    "epoch milliseconds between 1900 and 2200 (a number, or its digits as text), ISO 8601 "
    "('2024-05-08', '2024-05-08T14:30:00Z'), or a date as chat logs write it "
    "('1:56 pm on 8 May, 2023', '2023/05/30 (Tue) 23:40', 'May 2023')"
)
"""What :func:`to_epoch_ms` accepts, for error messages."""


def _in_range(ms: int) -> int:
    if not _MIN_MS <= ms < _MAX_MS:
        raise ValueError(f"the time is outside the years 1900-2199; accepted: {TIME_FORMS}")
    return ms


def to_epoch_ms(value: int | float | str | datetime | date) -> int:
    """Normalize a timestamp to epoch milliseconds, UTC. One rule for every spelling:

    - a number: epoch **milliseconds** (a float is truncated); below 10^11 it looks like epoch seconds and is
      refused; NaN and infinities are refused;
    - a ``datetime`` (naive means UTC) or a ``date`` (its midnight, UTC);
    - a string of at most 64 printable ASCII characters (no control characters, no other scripts' digits),
      without surrounding spaces: unsigned digits only are epoch milliseconds as above; otherwise ISO 8601
      ("2024-01-01", "2024-01-01T12:00:00Z") or a chat-log spelling with a four-digit year ("1:56 pm on 8
      May, 2023", "2023/05/30 (Tue) 23:40", "May 2023"). The whole string must be the date: trailing
      text, a sign before a date, a date without a year, or a weekday that is not the date's is refused
      (nothing is guessed).

    Every result lies in the years 1900-2199. Raises ``ValueError`` naming the rule broken and the accepted
    forms, never quoting the value (it may be anything a client sent).
    """
    if isinstance(value, bool):
        raise ValueError(f"a timestamp cannot be a boolean; accepted: {TIME_FORMS}")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"a timestamp must be a finite number; accepted: {TIME_FORMS}")
        ms = int(value)
        if abs(ms) < 100_000_000_000:
            raise ValueError(
                "a timestamp below 10^11 looks like epoch seconds (before 1973 as milliseconds); "
                "pass milliseconds"
            )
        return _in_range(ms)
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        parsed = _parse_time_text(value)
        if isinstance(parsed, int):
            return parsed
        dt = parsed
    else:
        raise ValueError(f"unsupported timestamp type {type(value).__name__}; accepted: {TIME_FORMS}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    if not 1900 <= dt.year <= 2199 or not 1900 <= dt.astimezone(UTC).year <= 2199:
        raise ValueError(f"the time is outside the years 1900-2199; accepted: {TIME_FORMS}")
    return _in_range(int(dt.timestamp() * 1000))


def _parse_time_text(text: str) -> datetime | int:
    """A datetime, or epoch ms for digits (exact: no float round trip)."""
    if not text:
        raise ValueError(f"empty timestamp string; accepted: {TIME_FORMS}")
    if len(text) > _MAX_TIME_TEXT:
        raise ValueError(f"a timestamp string is at most {_MAX_TIME_TEXT} characters; accepted: {TIME_FORMS}")
    if not _PRINTABLE_ASCII.fullmatch(text) or text != text.strip():
        raise ValueError(
            "a timestamp string holds printable ASCII characters only (ASCII digits, no control "
            f"characters), without surrounding spaces; accepted: {TIME_FORMS}"
        )
    if _DIGITS.fullmatch(text):  # unsigned digits only: epoch ms as text
        return to_epoch_ms(int(text))
    if text[0] in "+-" or not any(1900 <= int(y) <= 2199 for y in _FOUR_DIGITS.findall(text)):
        raise ValueError(f"not a date with a year from 1900 to 2199 (and no sign); accepted: {TIME_FORMS}")
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        cleaned = _WEEKDAY.sub(" ", text).replace(" on ", " ")
        try:
            dt = _dateparser.parse(cleaned, fuzzy=False, default=datetime(2000, 1, 1))
        except (ValueError, OverflowError):
            raise ValueError(f"not a timestamp; accepted: {TIME_FORMS}") from None
    for name in _WEEKDAY_NAME.findall(text):
        if _WEEKDAYS[name.lower()[:3]] != dt.weekday():
            raise ValueError(f"the weekday is not the date's; accepted: {TIME_FORMS}")
    return dt


_M = TypeVar("_M", bound=BaseModel)


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """An instance of ``cls`` from ``values`` that already hold every field, valid, without validation:
    what pydantic's ``model_construct`` does, in a fifth of its time. The search path builds hundreds of
    hits and turns per question from what an engine returned."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


MAX_ID = 1000
"""Longest user, session, request or message id (characters)."""
MAX_MESSAGE_CHARS = 1_000_000
"""Longest message content an add or import takes (characters); a longer one is refused with
:class:`InvalidInput` naming it (``refind import`` cuts it with a mark instead). It bounds what one message
costs the engine (a document's text is analyzed and stored in one piece)."""
# C0 controls, DEL, C1 controls, line/paragraph separators, bidirectional controls, the byte-order mark and
# lone surrogates: invisible or reordering characters that make one id look like another in logs and UIs.
_ID_FORBIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)


def id_problem(value: object) -> str | None:
    """Why ``value`` cannot be an id (a user, session, request or message id), or None when it can.

    An id is a non-blank string of at most 1,000 characters without control characters (C0, DEL, C1),
    line or paragraph separators (U+2028, U+2029), bidirectional controls (U+061C, U+200E, U+200F,
    U+202A-U+202E, U+2066-U+2069), a byte-order mark (U+FEFF) or lone surrogates. Other characters,
    emoji and zero-width joiners among them, are fine."""
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    if not value.strip():
        return "must not be empty or blank"
    if len(value) > MAX_ID:
        return f"longer than {MAX_ID} characters"
    bad = _ID_FORBIDDEN.search(value)
    if bad is not None:
        return (
            f"contains the character U+{ord(bad.group()):04X}; ids may not hold control characters (C0, "
            "DEL, C1), line or paragraph separators, bidirectional controls or a byte-order mark"
        )
    return None


def check_id(name: str, value: object) -> str:
    """``value`` when it is a valid id (see :func:`id_problem`), else :class:`InvalidInput` naming ``name``."""
    problem = id_problem(value)
    if problem is not None:
        raise InvalidInput(f"{name}: {problem}", field=name)
    return value  # type: ignore[return-value]


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

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None:
            problem = id_problem(value)
            if problem is not None:
                raise ValueError(problem)
        return value

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

    @classmethod
    def trusted(
        cls,
        id: str,
        session_id: str,
        turn: int,
        timestamp: int,
        role: str,
        speaker: str | None,
        content: str,
        score: float,
        time_text: str | None,
    ) -> Hit:
        """A hit from values an engine already checked, without validation (see :func:`trusted`)."""
        return trusted(
            cls,
            {
                "id": id,
                "session_id": session_id,
                "turn": turn,
                "timestamp": timestamp,
                "role": role,
                "speaker": speaker,
                "content": content,
                "score": score,
                "time_text": time_text,
            },
        )

    id: str
    session_id: str
    turn: int
    timestamp: int
    role: str
    speaker: str | None = None
    content: str
    score: float = 0.0
    time_text: str | None = None


MAX_TITLE = 500
"""Longest session title kept (characters); a longer one is cut."""
MAX_LABEL = 1000
"""Longest session source or project kept (characters)."""


def _label(value: Any, limit: int, fold: bool = False) -> str | None:
    """A session label: stripped (with ``fold``, on one line: whitespace runs made one space), at most
    ``limit`` characters; None when blank. Control characters are refused like an id's."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    text = " ".join(value.split()) if fold else value.strip()
    if not text:
        return None
    bad = _ID_FORBIDDEN.search(text)
    if bad is not None:
        raise ValueError(f"contains the character U+{ord(bad.group()):04X}")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SessionLog(BaseModel):
    """One session of one user, as the loaders in :mod:`refind.loaders` yield it and
    :meth:`refind.Memory.import_sessions` takes it. ``date`` is the session's epoch ms (messages without a
    timestamp take it), ``date_text`` the date as the source wrote it.

    ``title``, ``source`` (the app: ``chatgpt``, ``claude``, ``claude-code``, ``jsonl``, ...) and ``project``
    (a Claude Code working directory) are kept with the session when given (title words count for it in
    search; source and project filter); one left out keeps what the session already had."""

    user_id: str
    session_id: str
    messages: list[Message]
    date: int | None = None
    date_text: str | None = None
    title: str | None = None
    source: str | None = None
    project: str | None = None

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, value: Any) -> str | None:
        return _label(value, MAX_TITLE, fold=True)

    @field_validator("source", "project", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> str | None:
        return _label(value, MAX_LABEL)


class SessionSummary(BaseModel):
    """One stored session, as :meth:`refind.Memory.sessions` lists it: its info (``title``, ``source``,
    ``project``: None when the import gave none), how many messages it holds and the times (epoch ms) of its
    first and last. A session whose import gave no title is titled by its first user message, shortened
    (:func:`derive_title`), and ``title_derived`` says so; its stored info stays without one."""

    session_id: str
    title: str | None = None
    source: str | None = None
    project: str | None = None
    messages: int
    first: int
    last: int
    title_derived: bool = False


class StandingFact(BaseModel):
    """One thing a person said that stands, as :meth:`refind.Memory.profile` lists it (issue 37): what
    (``kind``: an instruction, a preference or a fact; the ``sentence`` verbatim; for a fact its ``domain``
    and ``subject``, and ``change`` when it says a fact changed), where (``message_id``, ``session_id``,
    ``turn``) and when (``timestamp``, epoch ms); ``superseded_by``: the id of the later standing fact that
    supersedes it (same subject, or a change in the same domain: :func:`refind.profile.supersede`), and
    ``current`` when none does; ``pinned`` when the person pinned the message (:meth:`refind.Memory.pin`:
    it stands as ``kind`` whatever the rule reads in it, and stays current until they unpin it)."""

    model_config = ConfigDict(frozen=True)

    message_id: str
    session_id: str
    turn: int
    timestamp: int
    kind: Literal["instruction", "preference", "fact"]
    sentence: str
    domain: str | None = None
    subject: str | None = None
    change: bool = False
    superseded_by: str | None = None
    current: bool = True
    pinned: bool = False


class MarkedMessage(BaseModel):
    """A message a person marked (issue 37), as :meth:`refind.Memory.pin` and :meth:`~refind.Memory.hide`
    return it and :meth:`~refind.Memory.marks` lists it: ``mark`` ``pinned`` (it stands as ``kind``, whatever
    the rule reads in it) or ``hidden`` (it never stands: not in the profile, not beside any search's
    evidence); where it is (``message_id``, ``session_id``, ``turn``), when it was written (``timestamp``) and
    marked (``marked_at``), both epoch ms; ``sentence``: what it is shown by (the sentence the rule reads in
    it, else its text)."""

    model_config = ConfigDict(frozen=True)

    message_id: str
    session_id: str
    turn: int
    timestamp: int
    role: str
    mark: Literal["pinned", "hidden"]
    kind: Literal["instruction", "preference", "fact"] | None = None
    sentence: str
    marked_at: int


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
    """Counts of an index: messages in all, users, and messages per user; ``deleted_sessions`` (and per
    user) counts the tombstones of deleted sessions that later imports leave out; ``vectors`` the messages
    with a vector (of ``vector_model``), ``pending_vectors`` those awaiting one."""

    path: str
    messages: int
    users: int
    per_user: dict[str, int] = Field(default_factory=dict)
    deleted_sessions: int = 0
    deleted_per_user: dict[str, int] = Field(default_factory=dict)
    vectors: int = 0
    pending_vectors: int = 0
    vector_model: str | None = None


DERIVED_TITLE_CHARS = 60
"""A title derived from a session's first user message is cut to about this many characters."""


def derive_title(text: str, limit: int = DERIVED_TITLE_CHARS) -> str | None:
    """A title for an untitled session from its first user message: the message's start with its spaces
    and line breaks collapsed and control characters dropped, cut at a word boundary near ``limit``
    characters (``…`` marks the cut); None when nothing printable is left."""
    head = text[: limit * 4]
    clean = " ".join("".join(c if c.isprintable() else " " for c in head).split())
    if not clean:
        return None
    if len(clean) <= limit and len(text) <= len(head):
        return clean
    room = clean[: limit + 1]
    cut = (room.rsplit(" ", 1)[0] if " " in room else clean[:limit]).rstrip(" ,;:.-")
    return (cut or clean[:limit]) + "…"


def validation_message(exc: ValidationError, prefix: str = "") -> str:
    """Render a pydantic error as ``field.path: problem; ...`` so the message names each bad field."""
    parts = []
    for err in exc.errors():
        loc = prefix
        for item in err["loc"]:
            loc += f"[{item}]" if isinstance(item, int) else (f".{item}" if loc else str(item))
        parts.append(f"{loc or 'value'}: {str(err['msg']).removeprefix('Value error, ')}")
    return "; ".join(parts)


def _first_field(exc: ValidationError, prefix: str = "") -> str | None:
    errors = exc.errors()
    if not errors:
        return None
    loc = prefix
    for item in errors[0]["loc"]:
        loc += f"[{item}]" if isinstance(item, int) else (f".{item}" if loc else str(item))
    return loc or None


def parse_messages(messages: Any) -> list[Message]:
    """Validate a list of messages (dicts or Message), raising InvalidInput that names the bad field."""
    if isinstance(messages, str | bytes) or not hasattr(messages, "__iter__"):
        raise InvalidInput("messages: expected a list of messages", field="messages")
    out: list[Message] = []
    for i, raw in enumerate(messages):
        try:
            out.append(Message.parse(raw))
        except ValidationError as exc:
            raise InvalidInput(
                validation_message(exc, prefix=f"messages[{i}]"), field=_first_field(exc, f"messages[{i}]")
            ) from exc
        except ValueError as exc:  # dict() of something odd
            raise InvalidInput(f"messages[{i}]: {exc}", field=f"messages[{i}]") from exc
    if not out:
        raise InvalidInput("messages: at least one message is required", field="messages")
    return out


class Turn(BaseModel):
    """One message inside an evidence block; ``matched`` when a search hit it (not just its window).
    ``score`` is a hit's own relevance: its best fused score over the rounds that hit it (0 for context);
    packing for a budget orders the hits of every block by it."""

    id: str
    turn: int
    role: str
    content: str
    timestamp: int
    speaker: str | None = None
    time_text: str | None = None
    matched: bool = False
    score: float = 0.0
    nearness: float | None = None
    """Its cosine similarity to the question when the round by meaning found it among the nearest messages
    (refind.search.session.SearchSession.meaning), else None: a budget offers such turns in a reserved share
    when the word evidence it packs does not show them."""


class Evidence(BaseModel):
    """Consecutive turns of one session found by a search: the hits and the turns around them.

    ``id`` is stable for the same span (``session#first-last``); ``score`` is the best fused score of its
    hits (higher is more relevant); ``rounds`` lists the search rounds (1-based) that found it; ``terms``
    are the analyzed query terms of those rounds (a long hit is cut to the passage around them).
    ``title``, ``source`` and ``project`` are the session's, when its import gave them.
    """

    id: str
    session_id: str
    session_date: int
    session_date_text: str | None = None
    title: str | None = None
    source: str | None = None
    project: str | None = None
    turns: list[Turn]
    score: float = 0.0
    rounds: list[int] = Field(default_factory=list)
    noted: bool = False
    terms: list[str] = Field(default_factory=list)
    standing: bool = False
    """A standing instruction or preference the person gave, or a lasting fact they told about themselves
    (refind.standing), offered beside the evidence in a small reserved share of the budget and rendered under
    its own header."""
    standing_kind: str | None = None
    """For a standing block: ``fact`` for a lasting fact about the person (issue 37), ``earlier fact`` for the
    one a later fact on the same subject changed (shown after it), else None (an instruction or preference)."""
    meaning: bool = False
    """Found by the round by meaning alone (no word round returned its turns): its hits carry their
    ``nearness``; a budget shows them only in the share it reserves for what meaning found
    (refind.evidence.pack)."""

    @property
    def first_turn(self) -> int:
        return self.turns[0].turn

    @property
    def last_turn(self) -> int:
        return self.turns[-1].turn

    @property
    def matched_ids(self) -> list[str]:
        return [t.id for t in self.turns if t.matched]


Shape = Literal["lookup", "breadth", "period"]
"""A question's shape (docs/design.md § "Shapes"): one fact (``lookup``), many places (``breadth``: ordering,
summaries, counts, "all", "so far"), or a period with no topic words of its own (``period``)."""


TraceAction = Literal[
    "search", "browse", "complete", "shape", "note", "finish", "llm", "retry", "error", "fallback", "dates"
]
"""What a trace entry records: a round that searched by words (``search``) or scrolled without them
(``browse``), the result's completion of the top sessions (``complete``), or a step that searched nothing
(the question's ``shape``, a ``note``, ``finish``; an LLM agent's ``llm`` call, ``retry``, ``error``,
``fallback`` and a ``dates`` correction)."""

ROUND_ACTIONS: frozenset[str] = frozenset({"search", "browse"})
"""The actions that are rounds (:attr:`RoundTrace.is_round`): the ones a plan's budget counts."""


class Round(BaseModel):
    """One round of a plan: the one value a plan makes, the session runs and the trace records.

    ``kind`` names how it runs (a kind registered in :mod:`refind.agent.kinds`: ``broad``, ``time``,
    ``period``, ``feedback``, a tool's ``tool`` search...); ``keywords`` are its words (None for a round
    that scrolls instead, or whose words are found when it runs, such as ``feedback``); ``date_from`` /
    ``date_to`` its time filter (inclusive epoch ms); ``weight`` how much its session ranking counts in the
    final one (:data:`refind.policy.POLICY`); ``roles`` keeps its hits to messages of those roles; ``label``
    is what the trace says of it."""

    model_config = ConfigDict(frozen=True)

    kind: str
    keywords: str | None = None
    date_from: int | None = None
    date_to: int | None = None
    weight: float = 1.0
    roles: tuple[str, ...] | None = None
    label: str = ""


class RoundTrace(BaseModel):
    """What one step of the agent did: a round (its :class:`Round`'s fields, then hits, new evidence, tokens
    and time) or a step that searched nothing (a note, finish, an LLM call...)."""

    round: int
    action: TraceAction
    kind: str | None = None
    keywords: str | None = None
    date_from: int | None = None
    date_to: int | None = None
    weight: float | None = None
    roles: list[str] | None = None
    content_terms: list[str] | None = None
    """For a round whose words hold function words ("what", "did", "about"): the terms of its other words, one
    of which each of its hits holds (a message matching only function words is no hit); None otherwise."""
    hits: int = 0
    new_evidence: int = 0
    new_turns: int = 0
    tokens: int = 0
    ms: float = 0.0
    note: str | None = None

    @property
    def is_round(self) -> bool:
        """Whether this entry is a round (a search or a browse), as a plan's budget counts them."""
        return self.action in ROUND_ACTIONS

    def as_round(self) -> Round | None:
        """The :class:`Round` this entry recorded (None for a step that was not a round of a plan)."""
        if self.kind is None:
            return None
        return Round(
            kind=self.kind,
            keywords=self.keywords,
            date_from=self.date_from,
            date_to=self.date_to,
            weight=1.0 if self.weight is None else self.weight,
            roles=tuple(self.roles) if self.roles is not None else None,
            label=self.note or "",
        )
