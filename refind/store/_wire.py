"""What crosses the bridge between :class:`refind.store.lucene.LuceneStore` and its Java engine, named in one
place: the records both sides exchange (the Java side is ``io.refind.lucene.Wire``), and the functions that
encode the protocol's values into them and decode the engine's answers.

A record is a JSON array whose fields come in the order of its ``NamedTuple`` here (``LAYOUT``), the same
order ``Wire.LAYOUT`` lists in Java; ``tests/test_wire.py`` holds the two equal. Arrays, not objects, because
a batch of 20,000 messages or a round's hits cross on every call and field names would be most of the bytes;
a ``NamedTuple`` serializes as the same array, so naming the fields here changes no byte on the wire. Two
shapes are JSON objects, their keys their names: a hit (``id``, ``session_id``, ``turn``, ``ts``, ``role``,
``score``, and ``raw``, the stored message, when read with content) and the filters and round spec the reads
take. Large values cross as UTF-8 bytes (a write's batch ASCII-escaped; the results that carry messages): the
bridge copies a byte array whole (docs/store.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from refind.models import Hit
from refind.store.base import (
    Expired,
    Filters,
    PendingVector,
    Record,
    RoundFound,
    RoundSpec,
    SessionCounts,
    SessionInfo,
    SessionState,
    VectorCounts,
    VectorRecord,
    WriteBatch,
    standing_dict,
)

__all__ = [
    "LAYOUT",
    "ExpiredSession",
    "InfoRecord",
    "MarkerRecord",
    "MessageRecord",
    "PendingRecord",
    "RoundHit",
    "ScoredSession",
    "Selected",
    "SessionInfoRecord",
    "SessionRecord",
    "SessionSummary",
    "SpanRecord",
    "StandingChange",
    "VectorCountsRecord",
    "VectorWire",
    "Window",
]

# ------------------------------------------------------------------------------------------ Python to Java


class MessageRecord(NamedTuple):
    """A message to index (a write batch's ``records``): ``replace`` false only when the id is known to be
    new; ``standing``: what it says that stands, or None."""

    user_id: str
    session_id: str
    id: str
    turn: int
    ts: int
    role: str
    content: str
    speaker: str | None
    time_text: str | None
    replace: bool
    standing: dict[str, object] | None


class SessionRecord(NamedTuple):
    """A session's whole text (``text`` None: remove its documents); ``appended`` n >= 0: its first n
    characters are stored already and this batch's messages of it follow (-1: index the text whole)."""

    user_id: str
    session_id: str
    text: str | None
    new: bool
    appended: int


class InfoRecord(NamedTuple):
    """A session's title, source and project."""

    user_id: str
    session_id: str
    title: str | None
    source: str | None
    project: str | None


class MarkerRecord(NamedTuple):
    """An idempotent request's marker: the payload is stored and handed back as it is."""

    user_id: str
    request_id: str
    payload: str


class StandingChange(NamedTuple):
    """What a stored message says that stands, set anew (None: nothing)."""

    user_id: str
    id: str
    standing: dict[str, object] | None


class VectorWire(NamedTuple):
    """A message's vector, made from the content of ``token``."""

    user_id: str
    id: str
    token: str
    vector: list[float]


class Window(NamedTuple):
    """The turns ``first_turn`` to ``last_turn`` of a session."""

    session_id: str
    first_turn: int
    last_turn: int


# ------------------------------------------------------------------------------------------ Java to Python


class RoundHit(NamedTuple):
    """A round's hit, without content."""

    id: str
    session_id: str
    turn: int
    ts: int
    role: str
    score: float


class Selected(NamedTuple):
    """A round's chosen hit and its fused score."""

    id: str
    score: float


class SpanRecord(NamedTuple):
    """A span around a round's chosen hits, its best fused score and its turns (hit objects, with content)."""

    session_id: str
    first_turn: int
    last_turn: int
    best: float
    turns: list[dict[str, Any]]


class ScoredSession(NamedTuple):
    """A session ranked by BM25 (of its whole text, or of its title)."""

    session_id: str
    score: float


class SessionSummary(NamedTuple):
    """A session's messages and time range."""

    session_id: str
    messages: int
    first_ts: int
    last_ts: int


class SessionInfoRecord(NamedTuple):
    """A session's info as stored (a read of one person's)."""

    session_id: str
    title: str | None
    source: str | None
    project: str | None


class ExpiredSession(NamedTuple):
    """A session that lost messages to retention, and its remaining turns' contents in turn order."""

    user_id: str
    session_id: str
    contents: list[str]


class PendingRecord(NamedTuple):
    """A message awaiting its vector."""

    user_id: str
    id: str
    token: str
    content: str


class VectorCountsRecord(NamedTuple):
    """A person's (or everyone's) vectors and messages awaiting theirs."""

    vectors: int
    pending: int


LAYOUT: dict[str, tuple[str, ...]] = {
    "message": MessageRecord._fields,
    "session": SessionRecord._fields,
    "info": InfoRecord._fields,
    "marker": MarkerRecord._fields,
    "standing_change": StandingChange._fields,
    "vector": VectorWire._fields,
    "window": Window._fields,
    "round_hit": RoundHit._fields,
    "selected": Selected._fields,
    "span": SpanRecord._fields,
    "scored_session": ScoredSession._fields,
    "session_summary": SessionSummary._fields,
    "session_info": SessionInfoRecord._fields,
    "expired_session": ExpiredSession._fields,
    "pending": PendingRecord._fields,
    "vector_counts": VectorCountsRecord._fields,
}
"""Every positional record's fields in their order on the wire (``Wire.LAYOUT`` in Java)."""

# ------------------------------------------------------------------------------------------ encoding


def message(r: Record) -> MessageRecord:
    return MessageRecord(
        r.user_id, r.session_id, r.id, r.turn, r.timestamp, r.role, r.content, r.speaker, r.time_text,
        r.replace, standing_dict(r.standing),
    )  # fmt: skip


def write_batch(batch: WriteBatch, added: int) -> bytes:
    """A write batch (``added``: its ingestion time, for its messages and marker), as ASCII-escaped UTF-8
    JSON: one copy across the bridge."""
    m = batch.marker
    body: dict[str, Any] = {
        "added": added,
        "records": [message(r) for r in batch.records],
        "sessions": [
            SessionRecord(s.user_id, s.session_id, s.text, s.new, -1 if s.appended is None else s.appended)
            for s in batch.sessions
        ],
        "marker": None if m is None else MarkerRecord(m.user_id, m.request_id, m.payload),
        "infos": [InfoRecord(i.user_id, i.session_id, i.title, i.source, i.project) for i in batch.infos],
    }
    return json.dumps(body).encode("ascii")


def standing_changes(changes: Sequence[Sequence[Any]]) -> bytes:
    """``[user, id, standing or None]`` each (what ``refind.store._standing.classify_stored`` hands over)."""
    return json.dumps([StandingChange(*c) for c in changes]).encode("ascii")


def vectors(records: Sequence[VectorRecord]) -> bytes:
    body = [VectorWire(v.user_id, v.id, v.token, [float(x) for x in v.vector]) for v in records]
    return json.dumps(body).encode("ascii")


def windows(spans: Sequence[tuple[str, int, int]]) -> str:
    return json.dumps([Window(*s) for s in spans], ensure_ascii=False)


def ids(values: Sequence[str]) -> str:
    """A list of ids (messages or sessions)."""
    return json.dumps(list(values), ensure_ascii=False)


def optional_ids(values: Sequence[str] | None) -> str:
    """A list of ids, or "" for none given (no restriction)."""
    return ids(values) if values is not None else ""


def by_user(wanted: Mapping[str, Sequence[str]]) -> str:
    """user -> ids (sessions or messages), for the write side's batched lookups."""
    return json.dumps({u: list(v) for u, v in wanted.items()}, ensure_ascii=False)


def filter_fields(filters: Filters | None) -> dict[str, Any]:
    """The engine's JSON filter object of ``filters`` (only the fields set)."""
    f: dict[str, Any] = {}
    if filters is None:
        return f
    if filters.time_from is not None:
        f["time_from"] = int(filters.time_from)
    if filters.time_to is not None:
        f["time_to"] = int(filters.time_to)
    if filters.session_ids is not None:
        f["session_ids"] = list(filters.session_ids)
    if filters.roles is not None:
        f["roles"] = list(filters.roles)
    if filters.exclude_ids:
        f["exclude_ids"] = list(filters.exclude_ids)
    if filters.exclude_sessions:
        f["exclude_sessions"] = list(filters.exclude_sessions)
    if filters.any_terms is not None:
        f["any_terms"] = list(filters.any_terms)
    return f


def filters(f: Filters | None) -> str:
    """``filters`` as the engine's JSON object, or "" for none."""
    fields = filter_fields(f)
    return json.dumps(fields, ensure_ascii=False) if fields else ""


def round_spec(spec: RoundSpec) -> str:
    payload: dict[str, Any] = {
        "text": spec.text,
        "fetch": spec.fetch,
        "top_k": spec.top_k,
        "window": spec.window,
        "filters": filter_fields(spec.filters),
        "exclude_ids": list(spec.exclude_ids),
        "exclude_sessions": list(spec.exclude_sessions),
        "read": spec.read,
        "sessions": spec.sessions,
        "restrict": spec.restrict,
        "k0": spec.k0,
        "w_hit": spec.w_hit,
        "w_session": spec.w_session,
        "titles": spec.titles,
    }
    if spec.content_terms is not None:
        payload["content_terms"] = list(spec.content_terms)
    return json.dumps(payload, ensure_ascii=False)


# ------------------------------------------------------------------------------------------ decoding


def hit(d: Mapping[str, Any]) -> Hit:
    """A hit object: doc-value fields, plus the stored message when read with content."""
    raw = d.get("raw")
    if raw is None:
        return Hit.trusted(
            d["id"], d["session_id"], d["turn"], d["ts"], d["role"], None, "", d["score"], None
        )
    return Hit.trusted(
        raw["id"], raw["session_id"], raw["turn"], raw["ts"], raw["role"], raw.get("speaker"),
        raw["content"], d["score"], raw.get("time_text"),
    )  # fmt: skip


def hit_objects(data: Any) -> list[dict[str, Any]]:
    """A JSON list of hit objects (bytes from Java) as dicts."""
    out: list[dict[str, Any]] = json.loads(bytes(data))
    return out


def hits(data: Any) -> list[Hit]:
    """A JSON list of hit objects (bytes from Java) as hits."""
    return [hit(d) for d in hit_objects(data)]


def stored_standing(d: Mapping[str, Any]) -> dict[str, object] | None:
    """What a hit object read with content stores that its message says stands (None: nothing)."""
    standing: dict[str, object] | None = (d.get("raw") or {}).get("standing")
    return standing


def terms(text: Any) -> list[str]:
    """The analyzed terms, one per line."""
    out = str(text)
    return out.split("\n") if out else []


def round_found(data: Any) -> RoundFound:
    out = json.loads(bytes(data))
    spans = [SpanRecord(*s) for s in out.get("spans", [])]
    return RoundFound(
        hits=[
            Hit.trusted(h.id, h.session_id, h.turn, h.ts, h.role, None, "", h.score, None)
            for h in (RoundHit(*row) for row in out["hits"])
        ],
        orders=out.get("orders", []),
        selected={s.id: s.score for s in (Selected(*row) for row in out.get("selected", []))},
        spans=[(s.session_id, s.first_turn, s.last_turn, s.best) for s in spans],
        windows=[[hit(d) for d in s.turns] for s in spans],
        terms=out.get("terms", []),
        titled=out.get("titled", []),
    )


def windows_found(data: Any) -> list[list[Hit]]:
    """One list of hits per window asked for."""
    return [[hit(d) for d in group] for group in json.loads(bytes(data))]


def scored_sessions(text: Any) -> list[tuple[str, float]]:
    return [
        (str(s.session_id), float(s.score)) for s in (ScoredSession(*row) for row in json.loads(str(text)))
    ]


def term_counts(text: Any) -> dict[str, int]:
    return {str(t): int(n) for t, n in json.loads(str(text)).items()}


def users(text: Any) -> list[str]:
    return [str(u) for u in json.loads(str(text))]


def session_infos(user_id: str, text: Any) -> dict[str, SessionInfo]:
    infos = (SessionInfoRecord(*row) for row in json.loads(str(text)))
    return {
        str(i.session_id): SessionInfo(user_id, str(i.session_id), i.title, i.source, i.project)
        for i in infos
    }


def session_summaries(text: Any) -> list[SessionCounts]:
    return [
        SessionCounts(str(s.session_id), int(s.messages), int(s.first_ts), int(s.last_ts))
        for s in (SessionSummary(*row) for row in json.loads(str(text)))
    ]


def vector_counts(text: Any) -> VectorCounts:
    c = VectorCountsRecord(*json.loads(str(text)))
    return VectorCounts(int(c.vectors), int(c.pending))


def pending(data: Any) -> list[PendingVector]:
    return [
        PendingVector(str(p.user_id), str(p.id), str(p.token), str(p.content))
        for p in (PendingRecord(*row) for row in json.loads(bytes(data)))
    ]


def session_states(text: Any) -> dict[tuple[str, str], SessionState]:
    """user -> session -> {"tail": a hit object or None, "text": the stored text or None}."""
    states = {}
    for user, sessions in json.loads(str(text)).items():
        for sid, state in sessions.items():
            tail = hit(state["tail"]) if state["tail"] is not None else None
            states[(str(user), str(sid))] = SessionState(tail=tail, text=state["text"])
    return states


def existing(text: Any) -> dict[tuple[str, str], Hit]:
    """user -> [hit objects without content]."""
    return {(str(u), h["id"]): hit(h) for u, found in json.loads(str(text)).items() for h in found}


def session_turns(text: Any) -> dict[tuple[str, str], list[Hit]]:
    """user -> session -> [hit objects in turn order]."""
    return {
        (str(u), str(sid)): [hit(h) for h in turns]
        for u, sessions in json.loads(str(text)).items()
        for sid, turns in sessions.items()
    }


def expired(text: Any) -> Expired:
    """{"removed": n, "sessions": [expired_session, ...]}."""
    out = json.loads(str(text))
    sessions = (ExpiredSession(*row) for row in out["sessions"])
    return Expired(
        removed=int(out["removed"]),
        sessions=[(str(s.user_id), str(s.session_id), [str(c) for c in s.contents]) for s in sessions],
    )
