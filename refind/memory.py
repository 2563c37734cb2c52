"""Memory: the facade users hold. Everything above the store (CLI, HTTP service, benchmarks) goes through it."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from refind.agent.base import Agent
from refind.agent.heuristic import HeuristicAgent
from refind.config import Settings, default_data_dir
from refind.errors import InvalidInput, RequestConflict
from refind.models import (
    AddResult,
    Evidence,
    Hit,
    Message,
    SearchResult,
    SessionLog,
    StoreStats,
    check_id,
    parse_messages,
    to_epoch_ms,
)
from refind.search.round import Fusion, search_round
from refind.search.session import SearchSession
from refind.store.base import Filters, Record, SessionUpdate

__all__ = ["ImportResult", "Memory"]

log = logging.getLogger(__name__)

TimeLike = int | float | str | datetime | date
_SESSION_JOIN = "\n"  # as the store joins a session's messages into its document
_IMPORT_CHUNK = 50_000  # messages per commit during a bulk import


_check_id = check_id


def _bounded_int(name: str, value: int | None, default: int, lo: int, hi: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InvalidInput(f"{name}: expected an integer between {lo} and {hi}", field=name)
    return value


def _time_arg(name: str, value: TimeLike | None) -> int | None:
    if value is None:
        return None
    try:
        return to_epoch_ms(value)
    except ValueError as exc:
        raise InvalidInput(f"{name}: {exc}", field=name) from exc


class ImportResult(AddResult):
    """Totals of a bulk import."""

    sessions: int = 0
    users: int = 0


class Memory:
    """A user-partitioned memory of raw chat messages.

    ``Memory()`` opens the index in ``$REFIND_DATA`` (else the per-user data directory); ``Memory(path)``
    opens or creates one there; ``Memory(":memory:")`` or :meth:`in_memory` keeps it in RAM.
    ``read_only=True`` opens an existing index without taking the write lock (for readers beside a server).
    Setting overrides (``bm25_k1``, ``jvm_heap``, ...) are passed as keywords.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> None:
        from refind.store.lucene import LuceneStore  # the JVM starts here, not at import refind

        if settings is not None and overrides:
            settings = settings.model_copy(update=overrides)
        elif settings is None:
            try:
                settings = Settings.from_env(**overrides)
            except Exception as exc:
                raise InvalidInput(f"settings: {exc}") from exc
        self.settings = settings
        in_memory = path is not None and str(path) == ":memory:"
        resolved: Path | None = None if in_memory else Path(path) if path is not None else default_data_dir()
        self.store = LuceneStore(resolved, settings=settings, read_only=read_only)
        self._lock = threading.Lock()
        # Group commit: adds write under self._lock, then wait for a commit that covers their write; one
        # waiting thread commits for all. Until then, what they wrote is invisible to the index's readers,
        # so the lookups of later adds consult these overlays (each entry tagged with its write generation).
        self._gen = 0
        self._committed = 0
        self._committing = False
        self._commit_cv = threading.Condition()
        self._pending_tail: dict[tuple[str, str], tuple[int, Record]] = {}
        self._pending_ids: dict[tuple[str, str], tuple[int, Record]] = {}
        self._pending_markers: dict[tuple[str, str], tuple[int, str]] = {}
        self._pending_text: dict[tuple[str, str], tuple[int, str]] = {}

    @classmethod
    def in_memory(cls, **overrides: Any) -> Memory:
        """A Memory whose index lives in RAM and disappears on close (notebooks, tests)."""
        return cls(":memory:", **overrides)

    @property
    def path(self) -> Path | None:
        """The index directory, or None for an in-memory Memory."""
        return self.store.path

    # ------------------------------------------------------------------ writing

    def add(
        self,
        user_id: str,
        session_id: str,
        messages: Sequence[Message | dict[str, Any]],
        request_id: str | None = None,
        *,
        session_time: TimeLike | None = None,
    ) -> AddResult:
        """Store ``messages`` (in order) for ``user_id`` in ``session_id``; durable and searchable on return.

        Messages without an ``id`` get ``"{session_id}:{turn}"`` and are appended after the session's last
        turn; a message whose ``id`` exists replaces it in place. ``request_id`` makes the call idempotent:
        the same id with the same body again writes nothing (``duplicate_request=True``); with a different
        body it raises :class:`RequestConflict`. Invalid input raises :class:`InvalidInput` naming the field.
        """
        user_id = _check_id("user_id", user_id)
        session_id = _check_id("session_id", session_id)
        if request_id is not None:
            request_id = _check_id("request_id", request_id)
        parsed = parse_messages(messages)
        session_ms = _time_arg("session_time", session_time)
        session_text = session_time if isinstance(session_time, str) else None
        with self._lock:
            digest = _body_digest(session_id, parsed, session_ms) if request_id is not None else None
            duplicate_of = (
                self._duplicate_of(user_id, request_id, digest)
                if request_id is not None and digest is not None
                else None
            )
            if duplicate_of is None:
                gen, added, replaced = self._write(
                    user_id, session_id, parsed, session_ms, session_text, request_id, digest
                )
            else:
                gen, added, replaced = duplicate_of, 0, 0
        # durable and visible before we answer (a duplicate of a pending add waits for that add's commit)
        self._await_commit(gen)
        return AddResult(
            user_id=user_id,
            session_id=session_id,
            request_id=request_id,
            added=added,
            replaced=replaced,
            duplicate_request=duplicate_of is not None,
        )

    def _duplicate_of(self, user_id: str, request_id: str, digest: str) -> int | None:
        """None when ``request_id`` is new for this user; else the write generation to wait for (0: already
        committed). Raises RequestConflict when it was used with a different body. Holds self._lock."""
        pending = self._pending_markers.get((user_id, request_id))
        stored = pending[1] if pending is not None else self.store.request_marker(user_id, request_id)
        if stored is None:
            return None
        if json.loads(stored).get("digest") != digest:
            raise RequestConflict(
                f"request_id {request_id!r} was already used with a different body; "
                "nothing was written. Use a new request_id for new content"
            )
        return pending[0] if pending is not None else 0

    def _write(
        self,
        user_id: str,
        session_id: str,
        parsed: list[Message],
        session_ms: int | None,
        session_text: str | None,
        request_id: str | None,
        digest: str | None,
    ) -> tuple[int, int, int]:
        """Resolve and write one add without committing; returns (write generation, added, replaced).
        Holds self._lock; the overlays keep the write visible to later adds until its commit lands."""
        records, replaced, mode = self._resolve(user_id, session_id, parsed, session_ms, session_text)
        if mode == "rebuild" and self._gen != self._committed:
            # a replacement rebuilds the session's text from its stored turns: commit what is pending
            # first so those turns are all there
            self._commit_now()
            records, replaced, mode = self._resolve(user_id, session_id, parsed, session_ms, session_text)
        key = (user_id, session_id)
        payload = None
        if request_id is not None:
            payload = json.dumps({"digest": digest, "session_id": session_id, "messages": len(records)})
        text = None
        if mode != "rebuild":
            pending_text = self._pending_text.get(key)
            if pending_text is not None:
                before: str | None = pending_text[1]
            else:
                before = self.store.session_text(user_id, session_id) if mode == "append" else None
            text = _SESSION_JOIN.join(([before] if before else []) + [r.content for r in records])
        self.store.add_batches(
            [records],
            marker=(user_id, request_id, payload) if request_id is not None and payload is not None else None,
            sessions={key: mode},
            session_texts={key: text} if text is not None else None,
            commit=False,
        )
        self._gen += 1
        gen = self._gen
        self._pending_tail[key] = (gen, max(records, key=lambda r: r.turn))
        for r in records:
            self._pending_ids[(user_id, r.id)] = (gen, r)
        if request_id is not None and payload is not None:
            self._pending_markers[(user_id, request_id)] = (gen, payload)
        if text is not None:
            self._pending_text[key] = (gen, text)
        return gen, len({r.id for r in records}) - replaced, replaced

    def _await_commit(self, gen: int) -> None:
        """Return once a commit covers write generation ``gen``; one waiting thread commits for all."""
        while True:
            with self._commit_cv:
                while self._committing and self._committed < gen:
                    self._commit_cv.wait()
                if self._committed >= gen:
                    return
                self._committing = True
            snap = gen
            try:
                with self._lock:
                    snap = self._gen
                self.store.commit()
            except BaseException:
                with self._commit_cv:
                    self._committing = False
                    self._commit_cv.notify_all()
                raise
            with self._commit_cv:
                self._committing = False
                self._committed = max(self._committed, snap)
                self._commit_cv.notify_all()
            with self._lock:
                self._drop_pending(snap)

    def _commit_now(self) -> None:
        """Commit everything written so far (caller holds self._lock)."""
        if self._gen == self._committed:
            return
        snap = self._gen
        self.store.commit()
        with self._commit_cv:
            self._committed = max(self._committed, snap)
            self._commit_cv.notify_all()
        self._drop_pending(snap)

    def _overlay_pending_ids(self, user_id: str, ids: Iterable[str], existing: dict[str, Hit]) -> None:
        """Add to ``existing`` the ids written by adds whose commit is still pending."""
        for msg_id in ids:
            written = self._pending_ids.get((user_id, msg_id))
            if written is not None:
                existing[msg_id] = _as_hit(written[1])

    def _drop_pending(self, upto: int) -> None:
        for overlay in (self._pending_tail, self._pending_ids, self._pending_markers, self._pending_text):
            for k in [k for k, (g, _) in overlay.items() if g <= upto]:
                del overlay[k]

    def _resolve(
        self,
        user_id: str,
        session_id: str,
        messages: list[Message],
        session_ms: int | None,
        session_text: str | None = None,
        *,
        new_user: bool = False,
        pending: set[tuple[str, str]] | None = None,
    ) -> tuple[list[Record], int, SessionUpdate]:
        """Assign turns, ids and timestamps; count how many ids already exist (replacements); say how the
        session's own document changes (``new``, ``append``, ``rebuild``).

        ``new_user`` means the caller knows the user has nothing stored (no lookups needed); ``pending`` holds
        (user, id) pairs written but not yet committed in the same bulk import.
        """
        tail = None if new_user else self.store.session_tail(user_id, session_id)
        pending_tail = self._pending_tail.get((user_id, session_id))
        if pending_tail is not None and (tail is None or pending_tail[1].turn >= tail.turn):
            tail = _as_hit(pending_tail[1])
        next_turn = tail.turn + 1 if tail is not None else 0
        explicit_ids = [m.id for m in messages if m.id is not None]
        existing = (
            {h.id: h for h in self.store.get(user_id, explicit_ids)} if explicit_ids and not new_user else {}
        )
        self._overlay_pending_ids(user_id, explicit_ids, existing)
        fallback_ts = session_ms if session_ms is not None else (tail.timestamp if tail is not None else None)
        tail_text = tail.time_text if tail is not None else None
        now_ms = int(time.time() * 1000)
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
        ids = {r[1] for r in resolved}
        if not new_user:
            missing = [i for i in ids if i not in existing]
            if missing and (tail is not None or explicit_ids):
                existing.update({h.id: h for h in self.store.get(user_id, missing)})
        pending = pending if pending is not None else set()
        self._overlay_pending_ids(user_id, ids, existing)
        seen: set[str] = set()
        records = []
        replaced = 0
        for m, msg_id, turn, ts, time_text in resolved:
            known = msg_id in existing or (user_id, msg_id) in pending
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
                )
            )
            seen.add(msg_id)
        mode: SessionUpdate = (
            "new" if tail is None and not replaced else ("rebuild" if replaced else "append")
        )
        return records, replaced, mode

    def import_sessions(
        self, logs: Iterable[SessionLog], *, progress: Callable[[int], None] | None = None
    ) -> ImportResult:
        """Bulk-add many sessions with few commits (every ~50,000 messages and at the end).

        Same semantics as :meth:`add` per session (ids replace, turns continue). ``progress`` is called
        with the number of messages written after each session.
        """
        total = ImportResult(user_id="*", session_id="*")
        users: set[str] = set()
        pending: list[list[Record]] = []
        modes: dict[tuple[str, str], SessionUpdate] = {}
        pending_keys: set[tuple[str, str]] = set()
        touched: set[tuple[str, str]] = set()
        empty_users: dict[str, bool] = {}
        seen_sessions: set[tuple[str, str]] = set()
        pending_n = 0

        def flush() -> None:
            nonlocal pending_n
            if pending:
                self.store.add_batches(pending, sessions=modes)
            pending.clear()
            modes.clear()
            pending_keys.clear()
            touched.clear()
            pending_n = 0

        with self._lock:
            self._commit_now()
            for log_ in logs:
                user_id = _check_id("user_id", log_.user_id)
                session_id = _check_id("session_id", log_.session_id)
                if (user_id, session_id) in touched:
                    flush()  # the session's tail must be committed before more turns are appended
                messages = parse_messages(log_.messages)
                if user_id not in empty_users:  # a user with nothing stored needs no per-session lookups
                    empty_users[user_id] = self.store.count(user_id) == 0
                records, replaced, mode = self._resolve(
                    user_id,
                    session_id,
                    messages,
                    log_.date,
                    log_.date_text,
                    new_user=empty_users[user_id] and (user_id, session_id) not in seen_sessions,
                    pending=pending_keys,
                )
                seen_sessions.add((user_id, session_id))
                modes[(user_id, session_id)] = mode
                pending_keys.update((user_id, r.id) for r in records)
                pending.append(records)
                touched.add((user_id, session_id))
                pending_n += len(records)
                unique = len({r.id for r in records})
                total.added += unique - replaced
                total.replaced += replaced
                total.sessions += 1
                users.add(user_id)
                if pending_n >= _IMPORT_CHUNK:
                    flush()
                if progress is not None:
                    progress(len(records))
            flush()
        total.users = len(users)
        return total

    def delete_added_before(self, cutoff: TimeLike) -> int:
        """Retention: delete everything *added* (acknowledged) before ``cutoff`` (epoch ms, ISO string or
        datetime), for all users: messages and the request markers of the adds that wrote them, in one
        durable commit. The messages' own timestamps play no part, so imported or back-dated history is kept
        as long as anything else. Messages replaced later count from their replacement. Returns how many
        messages were removed (``refind serve --retention-days``)."""
        cutoff_ms = _time_arg("cutoff", cutoff)
        assert cutoff_ms is not None
        with self._lock:
            self._commit_now()
            return self.store.delete_added_before(cutoff_ms)

    def delete_user(self, user_id: str) -> int:
        """Delete all of ``user_id``'s messages (durably); returns how many were removed."""
        user_id = _check_id("user_id", user_id)
        with self._lock:
            self._commit_now()
            return self.store.delete_user(user_id)

    # ------------------------------------------------------------------ reading

    def query(
        self,
        user_id: str,
        text: str,
        k: int = 10,
        *,
        date_from: TimeLike | None = None,
        date_to: TimeLike | None = None,
        session_ids: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
    ) -> list[Hit]:
        """One raw BM25 query over ``user_id``'s messages (the primitive later layers build on).

        ``text`` is analyzed into terms and never parsed as Lucene syntax. ``date_from``/``date_to`` are
        inclusive; ``exclude`` lists message ids to skip. Filters apply before the top ``k``.
        """
        user_id = _check_id("user_id", user_id)
        self._check_text("text", text)
        if not isinstance(k, int) or isinstance(k, bool) or k < 0 or k > 100_000:
            raise InvalidInput("k: expected an integer between 0 and 100000", field="k")
        filters = Filters(
            time_from=_time_arg("date_from", date_from),
            time_to=_time_arg("date_to", date_to),
            session_ids=list(session_ids) if session_ids is not None else None,
            roles=list(roles) if roles is not None else None,
            exclude_ids=list(exclude) if exclude else None,
        )
        return self.store.query(user_id, text, k, filters)

    def keyword_search(
        self,
        keywords: str,
        user_id: str,
        date_from: TimeLike | None = None,
        date_to: TimeLike | None = None,
        top_k: int | None = None,
        window: int | None = None,
        exclude: Sequence[str] | None = None,
        *,
        exclude_sessions: Sequence[str] | None = None,
    ) -> list[Evidence]:
        """One search round (DESIGN §4): filtered BM25 with over-fetch, session fusion, the ``top_k`` hits
        expanded to ±``window`` turns (overlapping windows merged). Returns evidence blocks, best first.
        ``exclude`` skips message ids, ``exclude_sessions`` whole sessions (a caller-held read-set)."""
        user_id = _check_id("user_id", user_id)
        self._check_text("keywords", keywords)
        s = self.settings
        top_k = _bounded_int("top_k", top_k, s.top_k, 1, 1000)
        window = _bounded_int("window", window, s.window, 0, 100)
        filters = Filters(
            time_from=_time_arg("date_from", date_from),
            time_to=_time_arg("date_to", date_to),
            exclude_ids=list(exclude) if exclude else None,
            exclude_sessions=list(exclude_sessions) if exclude_sessions else None,
        )
        blocks, _, _ = search_round(
            self.store,
            user_id,
            keywords,
            top_k=top_k,
            window=window,
            filters=filters,
            fusion=self._fusion(),
            overfetch=s.overfetch,
            window_tokens=s.window_tokens,
            context_tokens=s.context_tokens,
        )
        return blocks

    def _check_text(self, name: str, text: object, extra: Sequence[str] = ()) -> None:
        """A query text must be a string, and with ``extra`` (options) at most ``max_query_chars`` long:
        the work a search does grows with its words, and no question needs more."""
        if not isinstance(text, str):
            raise InvalidInput(f"{name}: expected a string, got {type(text).__name__}", field=name)
        limit = self.settings.max_query_chars
        size = len(text) + sum(len(o) for o in extra)
        if size > limit:
            what = f"{name} and its options" if extra else name
            raise InvalidInput(
                f"{what}: {size} characters, more than the {limit} a search accepts (max_query_chars, "
                "REFIND_MAX_QUERY_CHARS); ask a shorter question",
                field=name,
            )

    def search(
        self,
        question: str,
        user_id: str,
        now: TimeLike | None = None,
        top_k: int | None = None,
        agent: Agent | None = None,
        max_tokens: int | None = None,
        *,
        options: Sequence[str] | None = None,
        window: int | None = None,
    ) -> SearchResult:
        """Find the evidence for ``question`` in ``user_id``'s history.

        The agent (default: the offline :class:`HeuristicAgent`) runs a few keyword rounds, with a time
        filter when the question has a time cue relative to ``now``, each round skipping what earlier ones
        returned. ``top_k`` is the hits per round (each expanded to ±``window`` turns). The result holds the
        evidence grouped by session in time order, trimmed to ``max_tokens`` when given, and a trace.
        """
        user_id = _check_id("user_id", user_id)
        if options is not None and (isinstance(options, str) or not all(isinstance(o, str) for o in options)):
            raise InvalidInput("options: expected a list of strings", field="options")
        self._check_text("question", question, options or ())
        if max_tokens is not None and (
            not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
        ):
            raise InvalidInput("max_tokens: expected a positive integer", field="max_tokens")
        s = self.settings
        if agent is None:
            agent = HeuristicAgent(s.max_rounds, time_filters=s.time_filters)
        elif not isinstance(agent, Agent):
            raise InvalidInput(
                f"agent: expected an Agent (HeuristicAgent, LLMAgent), got {type(agent).__name__}"
            )
        session = self.open_session(question, user_id, now=now, top_k=top_k, window=window, agent=agent.name)
        agent.run(session, question, options=list(options) if options else None)
        return session.result(max_tokens=max_tokens)

    def open_session(
        self,
        question: str,
        user_id: str,
        *,
        now: TimeLike | None = None,
        top_k: int | None = None,
        window: int | None = None,
        agent: str = "tool",
    ) -> SearchSession:
        """A :class:`SearchSession` with this memory's settings: what agents (and :mod:`refind.tools`) run
        rounds on. Its read-set spans every search made through it."""
        user_id = _check_id("user_id", user_id)
        s = self.settings
        return SearchSession(
            self.store,
            user_id,
            question,
            now=_time_arg("now", now),
            top_k=_bounded_int("top_k", top_k, s.top_k, 1, 1000),
            window=_bounded_int("window", window, s.window, 0, 100),
            readset=s.readset,
            fusion=self._fusion(),
            overfetch=s.overfetch,
            agent=agent,
            context_tokens=s.context_tokens,
            window_tokens=s.window_tokens,
            hit_tokens=s.hit_tokens,
        )

    def _fusion(self) -> Fusion:
        s = self.settings
        return Fusion(
            k0=s.fusion_k0, w_hit=s.fusion_w_hit, w_session=s.fusion_w_session, sessions=s.fusion_sessions
        )

    def window(self, user_id: str, session_id: str, turn_from: int, turn_to: int) -> list[Hit]:
        """Turns ``turn_from..turn_to`` (inclusive) of one session, in order."""
        return self.store.window(
            _check_id("user_id", user_id), _check_id("session_id", session_id), turn_from, turn_to
        )

    def session(self, user_id: str, session_id: str) -> list[Hit]:
        """Every stored turn of one session, in order."""
        return self.store.session(_check_id("user_id", user_id), _check_id("session_id", session_id))

    def count(self, user_id: str | None = None) -> int:
        """Messages stored for ``user_id``, or in all."""
        return self.store.count(_check_id("user_id", user_id) if user_id is not None else None)

    def stats(self) -> StoreStats:
        """Message and user counts of the index."""
        users = self.store.users()
        per_user = {u: self.store.count(u) for u in users}
        return StoreStats(
            path=str(self.path) if self.path else ":memory:",
            messages=self.store.count(),
            users=len(users),
            per_user=per_user,
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Release the index (and its write lock). Idempotent."""
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({str(self.path) if self.path else ':memory:'!r})"


def _as_hit(r: Record) -> Hit:
    """A written-but-uncommitted record, seen the way the store would return it."""
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


def _body_digest(session_id: str, messages: list[Message], session_ms: int | None) -> str:
    body = {
        "session_id": session_id,
        "session_time": session_ms,
        "messages": [m.model_dump(exclude_none=True) for m in messages],
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
