"""The write path: every add and import goes through here, over any engine (the ``Engine`` protocol).

:class:`refind.Memory` validates input and hands it to :class:`WritePath`; this module does the rest:

- **idempotency**: a request id already applied with the same body writes nothing; with another body it is
  a :class:`~refind.RequestConflict`;
- **resolution** (:func:`resolve`, pure): turns continue after the session's last one, ids default to
  ``{session}:{turn}``, a known id keeps its turn, missing timestamps follow the previous message, else the
  session's time, else the time of the add;
- **session documents**: each touched session's whole text, joined in one place (:func:`join_session`);
- **group commit**: concurrent adds write under one lock, then wait for a commit that covers their write,
  one waiting thread committing for all. Until then their writes are invisible to the engine's reads, so the
  lookups of later writes consult the overlay (:class:`_Overlay`) of what is written but not yet committed,
  one for adds and imports alike;
- **bulk import**: sessions in slices with one batched lookup per user and slice, commits every
  ``_COMMIT_EVERY`` messages (or ``_COMMIT_CHARS`` characters) and at the end. Slices are bounded by
  characters too (``_SLICE_CHARS``), so what an import holds in flight does not grow with message length.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Protocol, TypeVar

from refind._collector import collector_paused
from refind.errors import InvalidInput, RequestConflict, StoreError
from refind.models import MAX_MESSAGE_CHARS, AddResult, Hit, Message, SessionLog, check_id, parse_messages
from refind.standing import read_standing
from refind.store.base import (
    AlreadyApplied,
    Engine,
    Marker,
    Record,
    RequestTaken,
    SessionDoc,
    SessionInfo,
    SessionState,
    StandingMark,
    VectorRecord,
    WriteBatch,
    WriteRaced,
)

log = logging.getLogger(__name__)

__all__ = ["ImportResult", "WritePath", "join_session", "resolve"]

SESSION_JOIN = "\n"


def check_sizes(messages: list[Message], where: str = "messages") -> None:
    """Refuse a message whose content is over :data:`MAX_MESSAGE_CHARS`, naming it."""
    for i, m in enumerate(messages):
        if len(m.content) > MAX_MESSAGE_CHARS:
            raise InvalidInput(
                f"{where}[{i}].content: {len(m.content):,} characters, more than the {MAX_MESSAGE_CHARS:,} "
                "one message may hold; split it into several messages",
                field=f"{where}[{i}].content",
            )


_SLICE_MESSAGES = 20_000  # messages resolved with one batched lookup per user during an import
_COMMIT_EVERY = 200_000  # messages between commits of an import
# Long messages: a slice is copied a few times on its way into the engine (records, the batch's JSON, Java's
# parse of it) and up to four slices are alive at once (one resolved, two queued, one being indexed), and
# what was written since the last commit is kept for the next slices' lookups. Bounding both by characters
# keeps an import's memory flat whatever the messages' length (docs/store.md, docs/benchmarks/perf.md).
_SLICE_CHARS = 4_000_000  # characters of content in one slice
_COMMIT_CHARS = 32_000_000  # characters of content between commits of an import
_SENT_SLICE_MESSAGES = 5_000  # slices of an engine that commits each (Engine.commit_slices), sent while
# the next is resolved
_RACE_RETRIES = 8  # times an add is resolved again after another writer changed its session (WriteRaced)


def join_session(contents: Iterable[str]) -> str:
    """A session's whole text, as its session document holds it: its messages in turn order."""
    return SESSION_JOIN.join(contents)


class ImportResult(AddResult):
    """Totals of a bulk import. ``deleted`` counts the sessions left out because they had been deleted
    (their tombstones: :meth:`refind.Memory.delete_session`)."""

    sessions: int = 0
    users: int = 0
    deleted: int = 0


# ---------------------------------------------------------------------------------------------- resolution


@dataclass(slots=True)
class Resolved:
    records: list[Record]
    replaced: int
    text: str | None  # the session's new whole text, or None when it must be rebuilt from its turns
    new: bool  # the session had no document
    appended: int | None = None  # text is text[:appended] + the records' contents (see SessionDoc)


class _Known(Protocol):
    """What resolution needs to know of a stored (or just written) message."""

    @property
    def session_id(self) -> str: ...

    @property
    def turn(self) -> int: ...


def resolve(
    user_id: str,
    session_id: str,
    messages: Sequence[Message],
    *,
    state: SessionState | None,
    existing: Mapping[str, _Known],
    session_ms: int | None = None,
    session_text: str | None = None,
    now_ms: int | None = None,
) -> Resolved:
    """Assign turns, ids and timestamps to ``messages`` for ``user_id``'s ``session_id``.

    ``state`` is the stored session (its last turn and text), ``existing`` the stored messages among the
    ids these messages have or will get (a known id is a replacement: it keeps its turn when it is in this
    session). The session text is the old text plus the new messages when they all come after its last
    turn and replace nothing; else None (the caller rebuilds it from the stored turns)."""
    tail = state.tail if state is not None else None
    next_turn = tail.turn + 1 if tail is not None else 0
    fallback_ts = session_ms if session_ms is not None else (tail.timestamp if tail is not None else None)
    tail_text = tail.time_text if tail is not None else None
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    resolved: list[tuple[Message, str, int, int, str | None]] = []
    prev_ts: int | None = None
    prev_text: str | None = None
    for m in messages:
        if m.turn is not None:
            turn = m.turn
        elif m.id is not None and m.id in existing and existing[m.id].session_id == session_id:
            turn = existing[m.id].turn
        else:
            turn = next_turn
        next_turn = max(next_turn, turn + 1)
        time_text = m.time_text
        if m.timestamp is not None:
            ts = m.timestamp
        elif prev_ts is not None:
            ts, time_text = prev_ts, time_text or prev_text
        elif fallback_ts is not None:
            ts = fallback_ts
            time_text = time_text or (session_text if session_ms is not None else tail_text)
        else:
            ts = now_ms
        prev_ts, prev_text = ts, time_text
        resolved.append((m, m.id if m.id is not None else f"{session_id}:{turn}", turn, ts, time_text))
    seen: set[str] = set()
    records = []
    replaced = 0
    for m, msg_id, turn, ts, time_text in resolved:
        known = msg_id in existing
        if known and msg_id not in seen:
            replaced += 1
        records.append(
            Record(
                user_id=user_id,
                session_id=session_id,
                id=msg_id,
                turn=turn,
                timestamp=ts,
                role=m.role,
                content=m.content,
                speaker=m.speaker,
                time_text=time_text,
                replace=known or msg_id in seen,
                standing=read_standing(m.role, m.content) if m.role == "user" else None,
            )
        )
        seen.add(msg_id)
    last = tail.turn if tail is not None else -1
    appended = not replaced and all(r.turn > last for r in records) and _in_turn_order(records)
    if not appended:
        return Resolved(records, replaced, None, state is None or state.text is None)
    before = state.text if state is not None and state.text else None
    text = join_session(([before] if before else []) + [r.content for r in records])
    prefix = len(before) + len(SESSION_JOIN) if before else 0
    return Resolved(records, replaced, text, state is None or state.text is None, prefix)


def rebuilt_text(stored: Sequence[Hit], records: Sequence[Record]) -> str:
    """A session's text after ``records`` are written over its ``stored`` turns (by id), in turn order."""
    by_id: dict[str, tuple[int, int, str]] = {h.id: (h.turn, i, h.content) for i, h in enumerate(stored)}
    for i, r in enumerate(records):
        by_id[r.id] = (r.turn, len(stored) + i, r.content)
    return join_session(c for _, _, c in sorted(by_id.values()))


def moved_from(session_id: str, records: Sequence[Record], existing: Mapping[str, _Known]) -> list[str]:
    """Sessions that lose a message to a write of ``records`` (an id given again in another session)."""
    ids = {r.id for r in records}
    return sorted({h.session_id for i, h in existing.items() if i in ids and h.session_id != session_id})


def _in_turn_order(records: Sequence[Record]) -> bool:
    return all(a.turn < b.turn for a, b in zip(records, records[1:], strict=False))


def candidate_ids(session_id: str, messages: Sequence[Message], state: SessionState | None) -> list[str]:
    """Every id ``messages`` may end up with: their own, and ``{session}:{turn}`` for those without, from
    the session's next turn on (so one lookup finds what a write would replace)."""
    ids = [m.id for m in messages if m.id is not None]
    next_turn = state.tail.turn + 1 if state is not None and state.tail is not None else 0
    for m in messages:
        if m.id is None:
            turn = m.turn if m.turn is not None else next_turn
            ids.append(f"{session_id}:{turn}")
            next_turn = max(next_turn, turn + 1)
        elif m.turn is not None:
            next_turn = max(next_turn, m.turn + 1)
    return list(dict.fromkeys(ids))


def body_digest(
    session_id: str, messages: Sequence[Message], session_ms: int | None, info: SessionInfo | None = None
) -> str:
    body: dict[str, object] = {
        "session_id": session_id,
        "session_time": session_ms,
        "messages": [m.model_dump(exclude_none=True) for m in messages],
    }
    if info is not None:  # only then: the digests of adds without info stay what they were
        body["info"] = [info.title, info.source, info.project]
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def merged_info(given: SessionInfo | None, stored: SessionInfo | None) -> SessionInfo | None:
    """The info to write for a session: what is ``given`` over what is ``stored`` (a field left out keeps
    the stored one); None when nothing is given or nothing would change."""
    if given is None or (given.title is None and given.source is None and given.project is None):
        return None
    if stored is None:
        return given
    out = SessionInfo(
        given.user_id,
        given.session_id,
        given.title if given.title is not None else stored.title,
        given.source if given.source is not None else stored.source,
        given.project if given.project is not None else stored.project,
    )
    return None if out == stored else out


def info_of(log_: SessionLog) -> SessionInfo | None:
    """The session info a log gives, or None."""
    if log_.title is None and log_.source is None and log_.project is None:
        return None
    return SessionInfo(log_.user_id, log_.session_id, log_.title, log_.source, log_.project)


def _conflict(request_id: str) -> RequestConflict:
    return RequestConflict(
        f"request_id {request_id!r} was already used with a different body; "
        "nothing was written. Use a new request_id for new content"
    )


def _as_hit(r: Record) -> Hit:
    """A written-but-uncommitted record, seen the way the engine would return it."""
    return Hit.model_construct(
        id=r.id,
        session_id=r.session_id,
        turn=r.turn,
        timestamp=r.timestamp,
        role=r.role,
        speaker=r.speaker,
        content=r.content,
        score=0.0,
        time_text=r.time_text,
    )


# ---------------------------------------------------------------------------------------------- the path


_Key = tuple[str, str]
_V = TypeVar("_V")


@dataclass(slots=True)
class _Layer:
    """What the writes of one generation put in the :class:`_Overlay`, keyed by ``(user, session)``, or
    ``(user, message id)`` / ``(user, request id)``."""

    sessions: dict[_Key, SessionState] = field(default_factory=dict)
    messages: dict[_Key, Record] = field(default_factory=dict)
    markers: dict[_Key, str] = field(default_factory=dict)  # the marker's payload, by (user, request id)
    infos: dict[_Key, SessionInfo] = field(default_factory=dict)


_SESSIONS: Callable[[_Layer], dict[_Key, SessionState]] = attrgetter("sessions")
_MESSAGES: Callable[[_Layer], dict[_Key, Record]] = attrgetter("messages")
_MARKERS: Callable[[_Layer], dict[_Key, str]] = attrgetter("markers")
_INFOS: Callable[[_Layer], dict[_Key, SessionInfo]] = attrgetter("infos")


class _Overlay:
    """What was written and no commit covers yet, in one layer per write generation: an engine's reads show
    only committed writes, so every lookup a write makes (an add's, an import slice's) reads this first, newest
    layer first, then the engine. A commit drops the layers it covered: a group commit the generations it
    sealed (later adds' layers stay), an import's commit its own. Touched under the write path's lock."""

    def __init__(self) -> None:
        self._layers: dict[int, _Layer] = {}  # by generation, oldest first (generations only grow)

    def at(self, gen: int) -> _Layer:
        """The layer of generation ``gen`` (made on first use)."""
        layer = self._layers.get(gen)
        if layer is None:
            layer = self._layers[gen] = _Layer()
        return layer

    def find(self, table: Callable[[_Layer], Mapping[_Key, _V]], key: _Key) -> tuple[int, _V] | None:
        """The newest value under ``key`` in ``table`` of the layers (:data:`_SESSIONS`, :data:`_MESSAGES`,
        :data:`_MARKERS` or :data:`_INFOS`), with its generation; None when no layer has one."""
        for gen, layer in reversed(self._layers.items()):
            value = table(layer).get(key)
            if value is not None:
                return gen, value
        return None

    def drop(self, upto: int) -> None:
        """Forget the layers of generations up to ``upto`` (a commit covered them, or they failed)."""
        for gen in [g for g in self._layers if g <= upto]:
            del self._layers[gen]


def _newest(found: tuple[int, _V] | None) -> _V | None:
    """The value of an :meth:`_Overlay.find`, or None."""
    return found[1] if found is not None else None


class WritePath:
    """Adds, imports and deletions over ``engine``, serialized by one lock, committed in groups."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._gen = 0
        self._committed = (
            0  # every write generation up to this one is settled: committed, or its commit failed
        )
        self._failed: list[tuple[int, int, BaseException]] = []  # (after, upto, error) of failed commits
        self._committing = False
        self._commit_cv = threading.Condition()
        # held from a group commit's seal (under the lock) until its outcome is settled: commits settle in
        # the order they took their writes, and a commit made under the lock (_commit_now) waits for the one
        # in flight, so that it never reports as committed a generation an earlier commit took and lost
        self._gate = threading.Lock()
        self._overlay = _Overlay()

    # ------------------------------------------------------------------ one add

    def add(
        self,
        user_id: str,
        session_id: str,
        messages: list[Message],
        request_id: str | None,
        session_ms: int | None,
        session_text: str | None,
        info: SessionInfo | None = None,
    ) -> AddResult:
        """Write one add and return once it is durable and visible (see :meth:`refind.Memory.add`).

        With an engine that several processes write (OpenSearch), an add whose session another writer
        changed between this add's read and its commit (:class:`~refind.store.base.WriteRaced`) is resolved
        again, after the other writer's turns, a bounded number of times."""
        for attempt in range(_RACE_RETRIES + 1):
            try:
                return self._add_once(
                    user_id, session_id, messages, request_id, session_ms, session_text, info
                )
            except WriteRaced as exc:
                if (user_id, session_id) not in exc.keys or attempt == _RACE_RETRIES:
                    raise
                time.sleep(random.uniform(0, 0.02 * (attempt + 1)))
        raise AssertionError("unreachable")  # pragma: no cover

    def _add_once(
        self,
        user_id: str,
        session_id: str,
        messages: list[Message],
        request_id: str | None,
        session_ms: int | None,
        session_text: str | None,
        info: SessionInfo | None = None,
    ) -> AddResult:
        check_sizes(messages)
        digest = body_digest(session_id, messages, session_ms, info) if request_id is not None else None
        with self._lock:
            duplicate_of = self._duplicate_of(user_id, request_id, digest) if request_id and digest else None
            if duplicate_of is None:
                try:
                    gen, added, replaced = self._write_add(
                        user_id, session_id, messages, session_ms, session_text, request_id, digest, info
                    )
                except AlreadyApplied:  # another process applied this request id meanwhile
                    duplicate_of, gen, added, replaced = 0, 0, 0, 0
                except RequestTaken:  # another process holds this request id with another body
                    raise _conflict(str(request_id)) from None
                except StoreError as exc:  # e.g. a full disk while Lucene flushed: start clean next time
                    self._recover_locked(exc)
                    raise
            else:
                gen, added, replaced = duplicate_of, 0, 0
        self._await_commit(
            gen, (user_id, session_id)
        )  # a duplicate of a pending add waits for that add's commit
        return AddResult(
            user_id=user_id,
            session_id=session_id,
            request_id=request_id,
            added=added,
            replaced=replaced,
            duplicate_request=duplicate_of is not None,
        )

    def _duplicate_of(self, user_id: str, request_id: str, digest: str) -> int | None:
        """None when ``request_id`` is new for this user; else the write generation to wait for (0:
        committed). RequestConflict when it came with another body. Holds the lock."""
        pending = self._overlay.find(_MARKERS, (user_id, request_id))
        stored = pending[1] if pending is not None else self.engine.request_marker(user_id, request_id)
        if stored is None:
            return None
        if json.loads(stored).get("digest") != digest:
            raise _conflict(request_id)
        return pending[0] if pending is not None else 0

    def _state(self, user_id: str, session_id: str) -> SessionState | None:
        pending = _newest(self._overlay.find(_SESSIONS, (user_id, session_id)))
        if pending is not None:
            return pending
        return self.engine.session_states({user_id: [session_id]}).get((user_id, session_id))

    def _existing(self, user_id: str, ids: Sequence[str]) -> dict[str, _Known]:
        found: dict[str, _Known] = (
            {i: h for (_, i), h in self.engine.existing({user_id: ids}).items()} if ids else {}
        )
        for i in ids:
            written = _newest(self._overlay.find(_MESSAGES, (user_id, i)))
            if written is not None:
                found[i] = written
        return found

    def _resolved(
        self,
        user_id: str,
        session_id: str,
        messages: list[Message],
        session_ms: int | None,
        session_text: str | None,
    ) -> tuple[Resolved, SessionState | None, dict[str, _Known], str]:
        """Resolve one add against what is stored and pending; the session's new text included (rebuilt
        from its committed turns when the add replaces or inserts: pending writes of the session are
        committed first)."""
        state = self._state(user_id, session_id)
        existing = self._existing(user_id, candidate_ids(session_id, messages, state))
        res = resolve(
            user_id, session_id, messages, state=state, existing=existing,
            session_ms=session_ms, session_text=session_text,
        )  # fmt: skip
        if res.text is not None:
            return res, state, existing, res.text
        if self._overlay.find(_SESSIONS, (user_id, session_id)) is not None:
            self._commit_now()
            return self._resolved(user_id, session_id, messages, session_ms, session_text)
        turns = self.engine.session_turns({user_id: [session_id]}).get((user_id, session_id), [])
        return res, state, existing, rebuilt_text(turns, res.records)

    def _write_add(
        self,
        user_id: str,
        session_id: str,
        messages: list[Message],
        session_ms: int | None,
        session_text: str | None,
        request_id: str | None,
        digest: str | None,
        info: SessionInfo | None = None,
    ) -> tuple[int, int, int]:
        """Resolve and write one add without committing; (write generation, added, replaced). Holds the
        lock; the overlay keeps the write visible to later writes until its commit lands."""
        res, state, existing, text = self._resolved(user_id, session_id, messages, session_ms, session_text)
        marker = None
        if request_id is not None:
            # a function of the body alone: an engine that claims request ids compares payloads (base.Marker)
            payload = json.dumps({"digest": digest, "session_id": session_id, "messages": len(res.records)})
            marker = Marker(user_id, request_id, payload)
        doc = SessionDoc(user_id, session_id, text, res.new, res.appended if text is res.text else None)
        infos = []
        if info is not None:
            prior = _newest(self._overlay.find(_INFOS, (user_id, session_id)))
            if prior is None:
                prior = self.engine.session_infos(user_id, [session_id]).get(session_id)
            new_info = merged_info(info, prior)
            if new_info is not None:
                infos.append(new_info)
        self.engine.write(WriteBatch(res.records, [doc], marker, infos))
        self._gen += 1
        moved = moved_from(session_id, res.records, existing)
        if moved:  # the sessions it left: their documents from their turns, once the move is committed
            self._commit_now()
            self._rewrite_sessions(user_id, moved)
            self._gen += 1
        gen = self._gen
        last = max(res.records, key=lambda r: r.turn)
        tail = state.tail if state is not None else None
        new_tail = _as_hit(last) if tail is None or last.turn >= tail.turn else tail
        layer = self._overlay.at(gen)
        layer.sessions[(user_id, session_id)] = SessionState(new_tail, text)
        for r in res.records:
            layer.messages[(user_id, r.id)] = r
        if marker is not None:
            layer.markers[(user_id, marker.request_id)] = marker.payload
        for written in infos:
            layer.infos[(user_id, session_id)] = written
        unique = len({r.id for r in res.records})
        return gen, unique - res.replaced, res.replaced

    def _rewrite_sessions(self, user_id: str, session_ids: Sequence[str]) -> None:
        """Write the documents of ``session_ids`` anew from their committed turns."""
        turns = self.engine.session_turns({user_id: list(session_ids)})
        docs = []
        for sid in session_ids:
            left = turns.get((user_id, sid), [])
            docs.append(SessionDoc(user_id, sid, join_session(h.content for h in left) if left else None))
        if docs:
            self.engine.write(WriteBatch(sessions=docs))

    # ------------------------------------------------------------------ commits

    def _await_commit(self, gen: int, key: tuple[str, str] | None = None) -> None:
        """Return once a commit covers write generation ``gen``; one waiting thread commits for all. When
        the commit that covered it failed, raise its error (a :class:`WriteRaced` only to the adds of the
        sessions it names: the others were written)."""
        while True:
            with self._commit_cv:
                while self._committing and self._committed < gen:
                    self._commit_cv.wait()
                if self._committed >= gen:
                    self._raise_failure(gen, key)
                    return
                self._committing = True
            snap = gen
            gated = False
            try:
                with self._lock:  # no write between the snapshot and the seal: the commit covers up to snap
                    self._gate.acquire()
                    gated = True
                    snap = self._gen
                    send = self._seal()
                send()
            except BaseException as exc:
                with self._commit_cv:
                    self._settle(snap, exc)
                    self._committing = False
                    self._commit_cv.notify_all()
                if gated:
                    self._gate.release()
                with self._lock:
                    self._overlay.drop(snap)
                    if isinstance(exc, StoreError):
                        self._recover_locked(exc)
                if isinstance(exc, WriteRaced) and key not in exc.keys:
                    return
                raise
            with self._commit_cv:
                self._committing = False
                self._committed = max(self._committed, snap)
                self._commit_cv.notify_all()
            self._gate.release()
            with self._lock:
                self._overlay.drop(snap)

    def _seal(self) -> Callable[[], None]:
        """What commits exactly the writes made so far (the caller holds the lock): an engine that buffers
        writes hands them over now (``seal``), so writes made while they are sent wait for the next commit;
        else its commit, which takes what is written when it runs (an engine that then fails recovers by
        discarding every write no commit covers: ``_recover_locked``)."""
        seal = getattr(self.engine, "seal", None)
        return seal() if seal is not None else self.engine.commit  # type: ignore[no-any-return]

    def _settle(self, snap: int, exc: BaseException) -> None:
        """Record that the commit of the generations after the last settled one up to ``snap`` failed
        (holding the condition)."""
        if snap > self._committed:
            self._failed.append((self._committed, snap, exc))
            del self._failed[:-64]
            self._committed = snap

    def _raise_failure(self, gen: int, key: tuple[str, str] | None) -> None:
        for after, upto, exc in self._failed:
            if after < gen <= upto:
                if isinstance(exc, WriteRaced) and key not in exc.keys:
                    return
                raise exc

    def _recover_locked(self, exc: BaseException) -> None:
        """After a write or commit failed with a StoreError (a full disk): every generation written so far
        fails with it (a rollback discards them all, also those written while the commit ran), and the
        engine reopens at its last commit (:meth:`refind.store.lucene.LuceneStore.recover`), so writes heal
        once the disk takes them again. Holds the lock."""
        recover = getattr(self.engine, "recover", None)
        if recover is None:
            return
        with self._commit_cv:
            self._settle(self._gen, exc)
            self._commit_cv.notify_all()
        self._overlay.drop(self._gen)
        try:
            recover()
        except Exception as again:  # still failing: the next failed write tries again
            log.warning(
                "the index could not be reopened yet (%s); the next write tries again", type(again).__name__
            )

    def _commit_now(self, *, recover: bool = True) -> None:
        """Commit everything written so far (the caller holds the lock), after the group commit in flight
        (if any) has settled: what that one took and failed to write is its failure, never covered by
        this commit (which would find nothing of it left to send). A failed commit settles what it covered as
        failed; with ``recover``, a StoreError reopens the engine too (a bulk import recovers once, in
        :meth:`import_sessions`)."""
        with self._gate:
            self._overlay.drop(self._committed)  # settled, maybe not yet dropped by the group commit's thread
            if self._gen == self._committed:
                return
            snap = self._gen
            try:
                self.engine.commit()
            except BaseException as exc:
                with self._commit_cv:
                    self._settle(snap, exc)
                    self._commit_cv.notify_all()
                self._overlay.drop(snap)
                if recover and isinstance(exc, StoreError):
                    self._recover_locked(exc)
                raise
            with self._commit_cv:
                self._committed = max(self._committed, snap)
                self._commit_cv.notify_all()
            self._overlay.drop(snap)

    # ------------------------------------------------------------------ vectors

    def write_vectors(self, records: Sequence[VectorRecord]) -> int:
        """Write vectors (the embedding worker's batch) and commit them, under the lock: what adds wrote
        before is committed first (their own commit settles them, so a failure reaches the adds it concerns,
        and the engine checks each vector against what is committed), and no add writes meanwhile. Returns
        the vectors written (those whose message changed since it was queued are left out)."""
        with self._lock:
            with contextlib.suppress(WriteRaced):  # the raced sessions' adds were told; they resolve again
                self._commit_now()
            try:
                written = self.engine.write_vectors(records)
                self.engine.commit()
            except StoreError as exc:
                self._recover_locked(exc)
                raise
            return written

    def reset_vectors(self) -> int:
        """Every vector dropped and every message queued again (what adds wrote is committed first)."""
        with self._lock:
            self._commit_now()
            return self.engine.reset_vectors()

    # ------------------------------------------------------------------ bulk import

    def import_sessions(
        self,
        logs: Iterable[SessionLog],
        *,
        progress: Callable[[int], None] | None = None,
        written: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """Write many sessions: resolved in slices (one batched lookup per user and slice), committed every
        ``_COMMIT_EVERY`` messages or ``_COMMIT_CHARS`` characters and at the end. Same semantics as
        :meth:`add` per session. ``progress`` is called with the messages of each session resolved,
        ``written`` (from the writing thread) with the messages the engine has indexed, every
        ``_WRITE_STEP`` or so."""
        total = ImportResult(user_id="*", session_id="*")
        users: set[str] = set()
        with self._lock:
            self._commit_now()
            buried = self.engine.tombstones()
            run = _Import(self, total, users, progress, written)
            try:
                size = _SENT_SLICE_MESSAGES if self.engine.commit_slices else _SLICE_MESSAGES
                with collector_paused():  # full collections would re-read all the process holds
                    for chunk in _slices(_not_deleted(logs, buried, total, progress), size):
                        run.slice(chunk)
                        gc.collect(1)  # the slice's cycles, if any: the young objects only
                    run.finish()
            except StoreError as exc:
                run.writer.close()
                self._recover_locked(exc)  # what no commit covered is discarded, the engine reopened
                raise
            finally:
                run.writer.close()
        total.users = len(users)
        return total

    # ------------------------------------------------------------------ deletion

    def delete_user(self, user_id: str, *, tombstone: bool = True) -> int:
        """Delete every message of ``user_id``; with ``tombstone``, first record each of their sessions as
        deleted (durably), so that no later import brings it back."""
        with self._lock:
            self._commit_now()
            if tombstone:
                sessions = [s.session_id for s in self.engine.session_summaries(user_id)]
                self.engine.add_tombstones(user_id, sessions, int(time.time() * 1000))
            return self.engine.delete_user(user_id)

    def delete_session(self, user_id: str, session_id: str, *, tombstone: bool = True) -> int:
        """Delete one session; with ``tombstone`` (and when it is stored), first record it as deleted
        (durably): a crash between the two leaves it stored and kept out of imports, never back."""
        with self._lock:
            self._commit_now()
            if tombstone and self.engine.session_states({user_id: [session_id]}):
                self.engine.add_tombstones(user_id, [session_id], int(time.time() * 1000))
            return self.engine.delete_session(user_id, session_id)

    def forget_deletions(self, user_id: str, session_ids: Sequence[str] | None = None) -> int:
        """Remove the tombstones of ``session_ids`` (None: all of ``user_id``'s): a later import writes
        those sessions again. Returns how many were removed."""
        with self._lock:
            return self.engine.remove_tombstones(user_id, session_ids)

    def set_marks(self, user_id: str, marks: Mapping[str, StandingMark | None]) -> None:
        """Pin or hide ``user_id``'s messages (None: unmark), durably, between other writes."""
        with self._lock:
            self.engine.set_marks(user_id, marks)

    def delete_added_before(self, cutoff_ms: int) -> int:
        """Retention: everything added before ``cutoff_ms`` (messages with their requests' markers), and
        the documents of the sessions that lost messages rewritten from what remains, in one commit."""
        with self._lock:
            self._commit_now()
            expired = self.engine.expire(cutoff_ms)
            if expired.sessions:
                docs = [
                    SessionDoc(user, sid, join_session(turns) if turns else None)
                    for user, sid, turns in expired.sessions
                ]
                self.engine.write(WriteBatch(sessions=docs))
            self.engine.commit()
            return expired.removed


def _not_deleted(
    logs: Iterable[SessionLog],
    buried: Mapping[str, Mapping[str, int]],
    total: ImportResult,
    progress: Callable[[int], None] | None,
) -> Iterator[SessionLog]:
    """The sessions of ``logs`` that have no tombstone; the others are counted in ``total.deleted`` (and
    their messages reported to ``progress`` as read)."""
    for log_ in logs:
        if log_.session_id in buried.get(log_.user_id, ()):
            total.deleted += 1
            if progress is not None:
                progress(len(log_.messages))
            continue
        yield log_


def _slices(logs: Iterable[SessionLog], size: int) -> Iterator[list[tuple[SessionLog, list[Message]]]]:
    """The sessions (validated) in slices of about ``size`` messages or ``_SLICE_CHARS`` characters of
    content, whichever comes first; a session given twice starts a new slice, so a slice holds each session
    once."""
    chunk: list[tuple[SessionLog, list[Message]]] = []
    keys: set[tuple[str, str]] = set()
    n = chars = 0
    for log_ in logs:
        check_id("user_id", log_.user_id)
        check_id("session_id", log_.session_id)
        messages = parse_messages(log_.messages)
        check_sizes(messages, f"session {log_.session_id!r}: messages")
        key = (log_.user_id, log_.session_id)
        if key in keys:
            yield chunk
            chunk, keys, n, chars = [], set(), 0, 0
        chunk.append((log_, messages))
        keys.add(key)
        n += len(messages)
        chars += sum(len(m.content) for m in messages)
        if n >= size or chars >= _SLICE_CHARS:
            yield chunk
            chunk, keys, n, chars = [], set(), 0, 0
    if chunk:
        yield chunk


class _Import:
    """One bulk import, holding the write path's lock throughout: what it wrote since its last commit is in
    the write path's overlay, in a generation of its own (a new one after each commit), so its lookups, and
    those of any write after it, see it until a commit covers it."""

    def __init__(
        self,
        path: WritePath,
        total: ImportResult,
        users: set[str],
        progress: Callable[[int], None] | None,
        written: Callable[[int], None] | None = None,
    ) -> None:
        self.path = path
        self.engine = path.engine
        self.total = total
        self.users = users
        self.progress = progress
        self.overlay = path._overlay
        self.gen = path._committed  # its writes' generation: a new one is taken at the first write
        self.uncommitted = 0
        self.uncommitted_chars = 0
        self.writer = _Pipeline(self.engine, written)

    def slice(self, chunk: list[tuple[SessionLog, list[Message]]]) -> None:
        """Resolve and write one slice with two batched lookups (stored sessions, then the ids its
        messages may replace), and one more for the turns of sessions it rewrites."""
        overlay = self.overlay
        overlaid = {  # the sessions' states this import wrote and no commit covers yet
            (log_.user_id, log_.session_id): _newest(overlay.find(_SESSIONS, (log_.user_id, log_.session_id)))
            for log_, _ in chunk
        }
        wanted: dict[str, list[str]] = {}
        for (u, sid), state in overlaid.items():
            if state is None:
                wanted.setdefault(u, []).append(sid)
        stored = self.engine.session_states(wanted)

        def state_of(key: tuple[str, str]) -> SessionState | None:
            return overlaid[key] or stored.get(key)

        candidates: dict[str, list[str]] = {}
        for log_, messages in chunk:
            key = (log_.user_id, log_.session_id)
            candidates.setdefault(log_.user_id, []).extend(
                candidate_ids(log_.session_id, messages, state_of(key))
            )
        found = self.engine.existing(candidates)
        given: dict[str, list[str]] = {}
        for log_, _ in chunk:
            if info_of(log_) is not None:
                given.setdefault(log_.user_id, []).append(log_.session_id)
        stored_infos = {
            (u, sid): i for u, sids in given.items() for sid, i in self.engine.session_infos(u, sids).items()
        }
        prior_infos = {  # looked up now: a commit below drops what the overlay holds of earlier slices
            (u, sid): _newest(overlay.find(_INFOS, (u, sid))) or stored_infos.get((u, sid))
            for u, sids in given.items()
            for sid in sids
        }
        states = {
            (log_.user_id, log_.session_id): state_of((log_.user_id, log_.session_id)) for log_, _ in chunk
        }
        resolved: list[tuple[SessionLog, Resolved, dict[str, _Known]]] = []
        rebuild: dict[str, list[str]] = {}
        for log_, messages in chunk:
            u, sid = log_.user_id, log_.session_id
            key = (u, sid)
            known: dict[str, _Known] = {}
            for i in candidate_ids(sid, messages, states[key]):
                mine = _newest(overlay.find(_MESSAGES, (u, i)))  # written earlier in this import
                if mine is not None:
                    known[i] = mine
                elif (u, i) in found:
                    known[i] = found[(u, i)]
            res = resolve(
                u, sid, messages, state=states[key], existing=known,
                session_ms=log_.date, session_text=log_.date_text,
            )  # fmt: skip
            resolved.append((log_, res, known))
            if res.text is None or moved_from(sid, res.records, known):
                rebuild.setdefault(u, []).append(sid)
        turns: dict[tuple[str, str], list[Hit]] = {}
        if rebuild:  # rewritten sessions: from their stored turns, all of them committed
            if any(overlaid[(u, sid)] is not None for u, sids in rebuild.items() for sid in sids) or any(
                overlay.find(_MESSAGES, (log_.user_id, i)) is not None
                for log_, res, known in resolved
                for i in known
            ):
                self._commit(WriteBatch())
            turns = self.engine.session_turns(rebuild)
        batch = WriteBatch()
        layer = self._layer()
        moved: list[tuple[str, list[str]]] = []
        for log_, res, known in resolved:
            u, sid = log_.user_id, log_.session_id
            key = (u, sid)
            state = states[key]
            text = res.text if res.text is not None else rebuilt_text(turns.get(key, []), res.records)
            batch.records.extend(res.records)
            batch.sessions.append(
                SessionDoc(u, sid, text, res.new, res.appended if text is res.text else None)
            )
            info = merged_info(info_of(log_), prior_infos.get(key))
            if info is not None:
                batch.infos.append(info)
                layer.infos[key] = info
            left = moved_from(sid, res.records, known)
            if left:
                moved.append((u, left))
            last = max(res.records, key=lambda r: r.turn)
            prior = state.tail if state is not None else None
            tail = _as_hit(last) if prior is None or last.turn >= prior.turn else prior
            layer.sessions[key] = SessionState(tail, text)
            for r in res.records:
                layer.messages[(u, r.id)] = r
            unique = len({r.id for r in res.records})
            self.total.added += unique - res.replaced
            self.total.replaced += res.replaced
            self.total.sessions += 1
            self.users.add(u)
            self.uncommitted += len(res.records)
            self.uncommitted_chars += sum(len(r.content) for r in res.records)
            if self.progress is not None:
                self.progress(len(res.records))
        self.writer.put(batch)
        if moved:  # the sessions that lost a message: rewritten once the move is committed
            self._commit(WriteBatch())
            for u, left in moved:
                self.path._rewrite_sessions(u, left)
            self.path._gen += 1  # the rewrites' own generation: the next commit covers them
            self.gen = self.path._gen
        if self.uncommitted >= _COMMIT_EVERY or self.uncommitted_chars >= _COMMIT_CHARS:
            self._commit(WriteBatch())

    def _layer(self) -> _Layer:
        """The overlay's layer this import writes to now: a new generation after each commit."""
        if self.gen <= self.path._committed:
            self.path._gen += 1
            self.gen = self.path._gen
        return self.overlay.at(self.gen)

    def _commit(self, batch: WriteBatch) -> None:
        if batch.records or batch.sessions:
            self.writer.put(batch)
        self.writer.drain()
        self.path._commit_now(recover=False)  # import_sessions recovers from a StoreError, once
        self.uncommitted = 0
        self.uncommitted_chars = 0

    def finish(self) -> None:
        self._commit(WriteBatch())


_WRITE_STEP = 2_000  # messages per engine write when an import reports what is written


def _parts(batch: WriteBatch) -> Iterator[WriteBatch]:
    """``batch`` as consecutive batches of whole sessions (records, session document, info together: an
    engine's ``appended`` hint refers to the records of its own batch), about ``_WRITE_STEP`` messages each;
    the marker goes with the last."""
    by_session: dict[tuple[str, str], list[Record]] = {}
    for r in batch.records:
        by_session.setdefault((r.user_id, r.session_id), []).append(r)
    infos = {(i.user_id, i.session_id): i for i in batch.infos}
    part = WriteBatch()
    for doc in batch.sessions:
        key = (doc.user_id, doc.session_id)
        part.records.extend(by_session.pop(key, []))
        part.sessions.append(doc)
        if key in infos:
            part.infos.append(infos.pop(key))
        if len(part.records) >= _WRITE_STEP:
            yield part
            part = WriteBatch()
    for records in by_session.values():  # records without a session document (none today)
        part.records.extend(records)
    part.infos.extend(infos.values())
    part.marker = batch.marker
    if part.records or part.sessions or part.infos or part.marker is not None:
        yield part


class _Pipeline:
    """Writes an import's batches on a thread of its own, so the engine indexes one slice while the next
    is resolved (the engine's Java calls release the GIL; a remote engine's requests wait on the network),
    committing each where the engine asks for it (:attr:`~refind.store.base.Engine.commit_slices`: what
    the import wrote stays in the overlay until the import's own commit, so lookups stay right whether a
    slice's commit has landed or not). ``drain`` waits until all are written and raises what a write
    raised."""

    def __init__(self, engine: Engine, written: Callable[[int], None] | None = None) -> None:
        import queue

        self.engine = engine
        self.written = written
        self.queue: queue.Queue[WriteBatch | None] = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="refind-import-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            batch = self.queue.get()
            try:
                if batch is not None and self.error is None:
                    if self.written is None:
                        self.engine.write(batch)
                    else:  # in steps of whole sessions, so a progress bar moves while a slice is indexed
                        for part in _parts(batch):
                            self.engine.write(part)
                            if part.records:
                                self.written(len(part.records))
                    if self.engine.commit_slices:
                        self.engine.commit()
            except BaseException as exc:  # handed to the importing thread at its next put or drain
                self.error = exc
            finally:
                self.queue.task_done()
            if batch is None:
                return

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def put(self, batch: WriteBatch) -> None:
        self._raise()
        if batch.records or batch.sessions or batch.marker is not None:
            self.queue.put(batch)

    def drain(self) -> None:
        self.queue.join()
        self._raise()

    def close(self) -> None:
        """Stop the thread once what is queued is written (a failed import may leave batches queued:
        they are written, not committed)."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
