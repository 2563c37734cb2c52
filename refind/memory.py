"""Memory: the facade users hold. Everything above the store (CLI, HTTP service, benchmarks) goes through it."""

from __future__ import annotations

import bisect
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from refind.agent.base import Agent
from refind.agent.heuristic import HeuristicAgent
from refind.config import Settings
from refind.embed.base import Embedder
from refind.embed.choose import default_embedder
from refind.embed.worker import VectorWorker
from refind.errors import EmbedderUnavailable, IndexFormatError, InvalidInput
from refind.fusion import Fusion
from refind.models import (
    AddResult,
    Evidence,
    Hit,
    MarkedMessage,
    Message,
    SessionLog,
    SessionSummary,
    StandingFact,
    StoreStats,
    check_id,
    derive_title,
    parse_messages,
    to_epoch_ms,
    validation_message,
)
from refind.query import ReadingRules, read_question
from refind.result import SearchResult
from refind.search.round import search_round
from refind.search.session import SearchSession, with_info
from refind.standing import StandingKind
from refind.store import open_engine
from refind.store.base import Engine, Filters, SessionInfo, StandingMark, VectorCounts, model_mismatch
from refind.store.write import ImportResult, WritePath

__all__ = ["ImportResult", "Memory"]

log = logging.getLogger(__name__)

TimeLike = int | float | str | datetime | date
_check_id = check_id
_KINDS = ("fact", "instruction", "preference")  # the kinds a message can be pinned as (refind.standing)


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


def _session_info(
    user_id: str, session_id: str, title: str | None, source: str | None, project: str | None
) -> SessionInfo | None:
    """The info an add gives its session (validated as a :class:`SessionLog`'s), or None."""
    if title is None and source is None and project is None:
        return None
    try:
        log_ = SessionLog(
            user_id=user_id, session_id=session_id, messages=[], title=title, source=source, project=project
        )
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc), field=_first_error(exc)) from exc
    return SessionInfo(user_id, session_id, log_.title, log_.source, log_.project)


def _first_error(exc: ValidationError) -> str | None:
    errors = exc.errors()
    return str(errors[0]["loc"][0]) if errors and errors[0]["loc"] else None


def _check_label(user_id: str, name: str, value: str, known: set[str | None]) -> None:
    """Refuse a ``source`` or ``project`` filter that none of ``user_id``'s sessions has (``known``): it
    would only ever find nothing. The message lists the ones there are, and the near miss of a typo."""
    have = sorted(k for k in known if k)
    if value in have:
        return
    near = [k for k in have if k.casefold() == value.casefold()]
    hint = f"; did you mean {near[0]!r}?" if near else ""
    listed = ", ".join(have[:20]) + (f" (and {len(have) - 20} more)" if len(have) > 20 else "")
    shown = value if len(value) <= 200 else value[:199] + "…"
    where = f"the {name}s of the sessions of user {user_id!r} are: {listed}" if have else (
        f"no session of user {user_id!r} has a {name}"
    )  # fmt: skip
    raise InvalidInput(f"{name} {shown!r}: no session has it; {where}{hint}", field=name)


def _starts(given: str, sid: str) -> bool:
    """Whether ``given`` names ``sid`` by a start of each of its /-separated parts (as many parts as it has:
    ``5f0c2d4e/agent-3f`` names ``5f0c2d4e-...-0a1b2c3d4e5f/agent-3f2e1d0c``)."""
    parts, have = given.split("/"), sid.split("/")
    return len(parts) == len(have) and all(h.startswith(p) for p, h in zip(parts, have, strict=True))


def _matches(given: str, ids: Sequence[str]) -> list[str]:
    """The ids of ``ids`` (sorted) that ``given`` names: the id itself; else those whose parts start with
    its parts (:func:`_starts`), when that is one; else those that start with it."""
    lo = bisect.bisect_left(ids, given)
    if lo < len(ids) and ids[lo] == given:
        return [given]
    head = given.split("/", 1)[0]
    start, stop = bisect.bisect_left(ids, head), bisect.bisect_right(ids, head + "\U0010ffff")
    by_parts = [sid for sid in ids[start:stop] if _starts(given, sid)]
    if len(by_parts) == 1:
        return by_parts
    by_start = list(ids[lo : bisect.bisect_right(ids, given + "\U0010ffff")])
    return by_start if len(by_start) == 1 or not by_parts else by_parts


def _by_prefix(user_id: str, given: str, ids: Sequence[str], what: str = "session") -> str | None:
    """The one id of ``ids`` (sorted) that ``given`` names (:func:`_matches`, as git takes a commit's
    prefix); None when none does; an :class:`InvalidInput` listing the candidates when several do."""
    found = _matches(given, ids)
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    shown = ", ".join(found[:10]) + (f" (and {len(found) - 10} more)" if len(found) > 10 else "")
    raise InvalidInput(
        f"session_id {given!r} is ambiguous: {len(found)} {what}s of user {user_id!r} match it: {shown}; "
        "give more of the id",
        field="session_id",
    )


SHORT_ID = 8
"""The fewest characters of each part of a short session id (:meth:`Memory.short_ids`)."""


def _short_id(sid: str, ids: Sequence[str], least: int = SHORT_ID) -> str:
    """The shortest form of ``sid`` that names it alone among ``ids`` (sorted): each /-separated part cut
    to the same length, at least ``least`` characters; ``sid`` itself when it is short or nothing shorter
    does."""
    if len(sid) <= least + 4:
        return sid
    parts = sid.split("/")
    for n in range(least, max(len(p) for p in parts)):
        form = "/".join(p[:n] for p in parts)
        if len(form) < len(sid) and _matches(form, ids) == [sid]:
            return form
    return sid


class Memory:
    """A user-partitioned memory of raw chat messages.

    ``Memory()`` opens the index in ``$REFIND_DATA`` (else the per-user data directory); ``Memory(path)``
    opens or creates one there; ``Memory(":memory:")`` or :meth:`in_memory` keeps it in RAM.
    ``read_only=True`` opens an existing index without taking the write lock (for readers beside a server).
    Setting overrides (``bm25_k1``, ``jvm_heap``, ...) are passed as keywords.

    ``embedder`` (an :class:`~refind.embed.Embedder`; by default the ``embedder`` setting's, the local model;
    None: words only) gives messages vectors, for search by meaning: its
    model is recorded in the index (another model's index is an :class:`IndexFormatError` naming the fix),
    and a writable memory runs a background worker that embeds what awaits its vector
    (:mod:`refind.embed.worker`; ``embed_in_background=False``: only :meth:`embed_pending` does). Every
    message written awaits its vector in the index's queue whether or not an embedder is given, so a memory
    opened later with one fills in what was written without (docs/store.md, "Vectors").
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        settings: Settings | None = None,
        store: Engine | None = None,
        embedder: Embedder | None | str = "default",
        embed_in_background: bool = True,
        **overrides: Any,
    ) -> None:
        try:
            if settings is None:
                settings = Settings.from_env(**overrides)
            elif overrides:
                settings = settings.with_values(**overrides)
        except Exception as exc:
            raise InvalidInput(f"settings: {exc}") from exc
        self.settings = settings
        if store is not None:
            if path is not None:
                raise InvalidInput("path: give a path or a store, not both")
            self.store: Engine = store
        else:  # the JVM starts here (for the Lucene engine), not at import refind
            self.store = open_engine(path, settings=settings, read_only=read_only)
        self._writes = WritePath(self.store)
        if isinstance(embedder, str):
            if embedder != "default":
                self.store.close()
                raise InvalidInput("embedder: expected an Embedder, None (words only) or 'default'")
            embedder = default_embedder(settings.embedder)
        self.embedder: Embedder | None = embedder
        self._query_pool: ThreadPoolExecutor | None = None
        self._worker: VectorWorker | None = None
        self._background = embed_in_background
        if embedder is not None:
            try:
                self._use_embedder(embedder, embed_in_background)
            except BaseException:
                self.store.close()
                raise

    def _use_embedder(self, embedder: Embedder, background: bool) -> None:
        if not isinstance(embedder, Embedder):
            raise InvalidInput(
                f"embedder: expected an Embedder (name, dimensions, embed), got {type(embedder).__name__}"
            )
        given = (str(embedder.name), int(embedder.dimensions))
        if self.store.read_only:  # a reader embeds nothing; its questions' vectors must match the index's
            stored = self.store.vector_model()
            if stored is not None and stored != given:
                raise IndexFormatError(model_mismatch(self.location, stored, given))
            return
        self.store.use_vector_model(*given)
        self._worker = VectorWorker(self._writes, embedder)
        if background:
            self._worker.start()

    @classmethod
    def in_memory(cls, **overrides: Any) -> Memory:
        """A Memory whose index lives in RAM and disappears on close (notebooks, tests)."""
        return cls(":memory:", **overrides)

    @property
    def read_only(self) -> bool:
        """Whether this memory was opened read-only (``read_only=True``): it reads, and every write is a
        :class:`~refind.errors.ReadOnlyError`."""
        return self.store.read_only

    @property
    def shared(self) -> bool:
        """Whether several processes may open this store's location and write at once (a remote engine,
        such as OpenSearch: ``refind serve --workers N`` needs one)."""
        return self.store.shared_writers

    @property
    def location(self) -> str:
        """Where the messages are: the index directory, or the engine's location (credentials left out)."""
        return self._where()

    @property
    def path(self) -> Path | None:
        """The index directory, or None for an index that has none (in memory, or a remote engine)."""
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
        title: str | None = None,
        source: str | None = None,
        project: str | None = None,
    ) -> AddResult:
        """Store ``messages`` (in order) for ``user_id`` in ``session_id``; durable and searchable on return.

        Messages without an ``id`` get ``"{session_id}:{turn}"`` and are appended after the session's last
        turn; a message whose ``id`` exists replaces it in place. ``request_id`` makes the call idempotent:
        the same id with the same body again writes nothing (``duplicate_request=True``); with a different
        body it raises :class:`RequestConflict`. Invalid input raises :class:`InvalidInput` naming the field.
        ``title``, ``source`` and ``project`` set the session's info (each left out keeps what it had).
        """
        user_id = _check_id("user_id", user_id)
        session_id = _check_id("session_id", session_id)
        if request_id is not None:
            request_id = _check_id("request_id", request_id)
        parsed = parse_messages(messages)
        session_ms = _time_arg("session_time", session_time)
        session_text = session_time if isinstance(session_time, str) else None
        info = _session_info(user_id, session_id, title, source, project)
        result = self._writes.add(user_id, session_id, parsed, request_id, session_ms, session_text, info)
        if self._worker is not None:
            self._worker.wake()
        return result

    def import_sessions(
        self,
        logs: Iterable[SessionLog],
        *,
        progress: Callable[[int], None] | None = None,
        written: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """Bulk-add many sessions with few commits (every 200,000 messages and at the end).

        Same semantics as :meth:`add` per session (ids replace, turns continue). ``progress`` is called
        with the number of messages read after each session; ``written`` (from the thread that writes) with
        the number the index has taken in, every few thousand, so a progress bar covers the writing too.
        The messages await their vectors (:meth:`embed_pending` embeds them now)."""
        try:
            return self._writes.import_sessions(logs, progress=progress, written=written)
        finally:
            if self._worker is not None:
                self._worker.wake()

    def delete_added_before(self, cutoff: TimeLike) -> int:
        """Retention: delete everything *added* (acknowledged) before ``cutoff`` (epoch ms, ISO string or
        datetime), for all users: messages and the request markers of the adds that wrote them, in one
        durable commit. The messages' own timestamps play no part, so imported or back-dated history is kept
        as long as anything else. Messages replaced later count from their replacement. Returns how many
        messages were removed (``refind serve --retention-days``)."""
        cutoff_ms = _time_arg("cutoff", cutoff)
        assert cutoff_ms is not None
        return self._writes.delete_added_before(cutoff_ms)

    def delete_user(self, user_id: str, *, tombstone: bool = True) -> int:
        """Delete all of ``user_id``'s messages (durably); returns how many were removed.

        With ``tombstone`` (the default) each of their sessions is recorded as deleted first, so a later
        :meth:`import_sessions` (``refind import``) of the same sessions leaves them out instead of bringing
        them back; :meth:`forget_deletions` undoes that. ``tombstone=False`` forgets the user entirely."""
        return self._writes.delete_user(_check_id("user_id", user_id), tombstone=tombstone)

    def delete_session(self, user_id: str, session_id: str, *, tombstone: bool = True) -> int:
        """Delete one session of ``user_id``: its messages and its info, durably. Returns how many messages
        were removed (0 when there was no such session: deleting twice is harmless).

        With ``tombstone`` (the default) the session is recorded as deleted first (durably): a later
        :meth:`import_sessions` of an export that still holds it leaves it out (counted in the import's
        ``deleted``); :meth:`forget_deletions` undoes that. An explicit :meth:`add` writes it regardless."""
        user_id, session_id = _check_id("user_id", user_id), _check_id("session_id", session_id)
        return self._writes.delete_session(user_id, session_id, tombstone=tombstone)

    def deleted_sessions(self, user_id: str) -> dict[str, int]:
        """``user_id``'s deleted sessions that imports leave out (their tombstones): session id -> when it
        was deleted (epoch ms)."""
        user_id = _check_id("user_id", user_id)
        self.store.refresh()
        return self.store.tombstones(user_id).get(user_id, {})

    def forget_deletions(self, user_id: str, session_ids: Sequence[str] | None = None) -> int:
        """Undo the tombstones of ``user_id``'s deleted sessions (those listed, or all of them): a later
        import writes those sessions again (``refind import PATH --rescan`` reads a source whole again).
        The messages themselves were deleted: this brings nothing back by itself. Returns how many
        tombstones were removed (durably)."""
        user_id = _check_id("user_id", user_id)
        if session_ids is not None:
            if isinstance(session_ids, str):
                raise InvalidInput("session_ids: expected a list of session ids", field="session_ids")
            session_ids = [_check_id("session_id", sid) for sid in session_ids]
        return self._writes.forget_deletions(user_id, session_ids)

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
        self.store.refresh()
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
        source: str | None = None,
        project: str | None = None,
    ) -> list[Evidence]:
        """One search round (docs/design.md § "One round"): filtered BM25 with over-fetch, session fusion,
        the ``top_k`` hits expanded to ±``window`` turns (overlapping windows merged). Returns evidence
        blocks, best first.
        ``exclude`` skips message ids, ``exclude_sessions`` whole sessions (a caller-held read-set);
        ``source`` and ``project`` keep only the sessions with that source or project."""
        user_id = _check_id("user_id", user_id)
        self._check_text("keywords", keywords)
        s = self.settings
        top_k = _bounded_int("top_k", top_k, s.top_k, 1, 1000)
        window = _bounded_int("window", window, s.window, 0, 100)
        self.store.refresh()
        filters = Filters(
            time_from=_time_arg("date_from", date_from),
            time_to=_time_arg("date_to", date_to),
            session_ids=self._scope(user_id, source, project),
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
        return with_info(self.store, user_id, blocks)

    def _scope(
        self,
        user_id: str,
        source: str | None,
        project: str | None,
        date_from: TimeLike | None = None,
        date_to: TimeLike | None = None,
    ) -> list[str] | None:
        """The sessions of ``user_id`` with that source and project, and with messages between
        ``date_from`` and ``date_to`` (inclusive); None: no such filter given. A source or project that
        none of the user's sessions has is an :class:`InvalidInput` naming the ones they have."""
        lo, hi = _time_arg("date_from", date_from), _time_arg("date_to", date_to)
        if lo is not None and hi is not None and lo > hi:
            raise InvalidInput("date_from: after date_to; give the earlier date first", field="date_from")
        if source is None and project is None and lo is None and hi is None:
            return None
        for name, value in (("source", source), ("project", project)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInput(f"{name}: expected a non-empty string", field=name)
        scope: list[str] | None = None
        if source is not None or project is not None:
            infos = self.store.session_infos(user_id)
            for name, value in (("source", source), ("project", project)):
                if value is not None:
                    _check_label(user_id, name, value.strip(), {getattr(i, name) for i in infos.values()})
            scope = [
                sid
                for sid, i in infos.items()
                if (source is None or i.source == source.strip())
                and (project is None or i.project == project.strip())
            ]
        if lo is not None or hi is not None:
            within = {
                s.session_id
                for s in self.store.session_summaries(user_id)
                if (lo is None or s.last >= lo) and (hi is None or s.first <= hi)
            }
            scope = sorted(within) if scope is None else [sid for sid in scope if sid in within]
        return scope

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
        source: str | None = None,
        project: str | None = None,
        date_from: TimeLike | None = None,
        date_to: TimeLike | None = None,
    ) -> SearchResult:
        """Find the evidence for ``question`` in ``user_id``'s history.

        The agent (default: the offline :class:`HeuristicAgent`) runs a few keyword rounds, with a time
        filter when the question has a time cue relative to ``now``, each round skipping what earlier ones
        returned. ``top_k`` is the hits per round (each expanded to ±``window`` turns). The result holds the
        evidence grouped by session in time order, trimmed to ``max_tokens`` when given, and a trace.
        ``source`` and ``project`` search only the sessions with that source (``chatgpt``, ``claude``,
        ``claude-code``, ``jsonl``, ...) or project (see :meth:`sessions`); one that no session has is an
        :class:`InvalidInput` naming those there are. ``date_from`` and ``date_to`` (inclusive) search only
        the sessions with messages in that period.
        """
        user_id = _check_id("user_id", user_id)
        if options is not None and (isinstance(options, str) or not all(isinstance(o, str) for o in options)):
            raise InvalidInput("options: expected a list of strings", field="options")
        self._check_text("question", question, options or ())
        if max_tokens is not None and (
            not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
        ):
            raise InvalidInput("max_tokens: expected a positive integer", field="max_tokens")
        if agent is None:
            agent = self.default_agent()
        elif not isinstance(agent, Agent):
            raise InvalidInput(
                f"agent: expected an Agent (HeuristicAgent, LLMAgent), got {type(agent).__name__}"
            )
        session = self.open_session(
            question, user_id, now=now, top_k=top_k, window=window, agent=agent.name, source=source,
            project=project, date_from=date_from, date_to=date_to, options=options,
            rules=getattr(agent, "reading_rules", None),
        )  # fmt: skip
        agent.run(session)
        return session.result(max_tokens=max_tokens)

    def default_agent(self) -> HeuristicAgent:
        """The agent :meth:`search` runs when given none: a :class:`HeuristicAgent` with this memory's agent
        settings (:class:`refind.config.AgentSettings`: ``max_rounds``, ``time_filters``, ``shapes``,
        ``breadth_k``, ...)."""
        return HeuristicAgent.from_settings(self.settings)

    def open_session(
        self,
        question: str,
        user_id: str,
        *,
        now: TimeLike | None = None,
        top_k: int | None = None,
        window: int | None = None,
        agent: str = "tool",
        source: str | None = None,
        project: str | None = None,
        date_from: TimeLike | None = None,
        date_to: TimeLike | None = None,
        options: Sequence[str] | None = None,
        rules: ReadingRules | None = None,
    ) -> SearchSession:
        """A :class:`SearchSession` with this memory's settings: what agents (and :mod:`refind.tools`) run
        rounds on. The question (with its multiple-choice ``options``) is read here, once
        (:func:`refind.query.read_question`, under the agent's ``rules``); the session's read-set spans every
        search made through it; ``source`` and ``project`` restrict it to the sessions with them,
        ``date_from`` and ``date_to`` to the sessions with messages then."""
        user_id = _check_id("user_id", user_id)
        s = self.settings
        self.store.refresh()  # a read-only memory beside a writer: its latest commit
        scope = self._scope(user_id, source, project, date_from, date_to)
        reading = read_question(question, now=_time_arg("now", now), options=options, rules=rules)
        session = SearchSession(
            self.store,
            user_id,
            reading,
            top_k=_bounded_int("top_k", top_k, s.top_k, 1, 1000),
            window=_bounded_int("window", window, s.window, 0, 100),
            readset=s.readset,
            fusion=self._fusion(),
            overfetch=s.overfetch,
            agent=agent,
            context_tokens=s.context_tokens,
            window_tokens=s.window_tokens,
            hit_tokens=s.hit_tokens,
            latest_boost=s.latest_boost,
            standing=s.standing,
            standing_facts=s.standing_facts,
            scope=scope,
            segment_turns=s.segment_turns,
            embedder=self._search_embedder(),
        )
        if session.can_embed:
            session.start_meaning(self._meaning_pool())
        return session

    def _search_embedder(self) -> Embedder | None:
        """The embedder a search uses for its question; None when the index holds no vectors of this
        memory's embedder (then no round by meaning)."""
        if self.embedder is None or self.store.vector_model() is None:
            return None
        return self.embedder

    def _meaning_pool(self) -> ThreadPoolExecutor:
        """The threads searches' questions are embedded and their nearest messages found in, beside their
        word rounds (:meth:`SearchSession.start_meaning`; the model and the engine release the GIL): two, as
        the searches of a server may come together (the local model runs one batch at a time)."""
        if self._query_pool is None:
            self._query_pool = ThreadPoolExecutor(2, thread_name_prefix="refind-question")
        return self._query_pool

    def _fusion(self) -> Fusion:
        s = self.settings
        return Fusion(
            k0=s.fusion_k0, w_hit=s.fusion_w_hit, w_session=s.fusion_w_session, sessions=s.fusion_sessions
        )

    def window(self, user_id: str, session_id: str, turn_from: int, turn_to: int) -> list[Hit]:
        """Turns ``turn_from..turn_to`` (inclusive) of one session, in order."""
        for name, value in (("turn_from", turn_from), ("turn_to", turn_to)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInput(f"{name}: expected a non-negative integer", field=name)
        user_id, session_id = _check_id("user_id", user_id), _check_id("session_id", session_id)
        self.store.refresh()
        return self.store.windows(user_id, [(session_id, turn_from, turn_to)])[0]

    def session(self, user_id: str, session_id: str) -> list[Hit]:
        """Every stored turn of one session, in order."""
        user_id, session_id = _check_id("user_id", user_id), _check_id("session_id", session_id)
        self.store.refresh()
        return self.store.windows(user_id, [(session_id, 0, 2**31 - 1)])[0]

    def sessions(
        self,
        user_id: str,
        *,
        source: str | None = None,
        project: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        date_from: TimeLike | None = None,
        date_to: TimeLike | None = None,
    ) -> list[SessionSummary]:
        """``user_id``'s stored sessions, the most recent first (by their last message; ties by session
        id): title, source, project, message count, first and last message times. ``source`` and
        ``project`` keep the sessions that have them (one that none has is an :class:`InvalidInput` naming
        those there are), ``date_from`` and ``date_to`` those with messages in that period (inclusive);
        ``offset`` and ``limit`` page the list. An untitled session's title is derived from its first user
        message (``title_derived``)."""
        user_id = _check_id("user_id", user_id)
        offset = _bounded_int("offset", offset, 0, 0, 10**9)
        if limit is not None:
            limit = _bounded_int("limit", limit, 0, 0, 10**6)
        self.store.refresh()
        scope = self._scope(user_id, source, project, date_from, date_to)
        infos = self.store.session_infos(user_id)
        rows = []
        for s in self.store.session_summaries(user_id):
            if scope is not None and s.session_id not in scope:
                continue
            i = infos.get(s.session_id)
            rows.append(
                SessionSummary(
                    session_id=s.session_id, title=i.title if i else None, source=i.source if i else None,
                    project=i.project if i else None, messages=s.messages, first=s.first, last=s.last,
                )
            )  # fmt: skip
        rows.sort(key=lambda r: r.session_id)
        rows.sort(key=lambda r: -r.last)
        return self._with_titles(user_id, rows[offset : offset + limit if limit is not None else None])

    def _with_titles(self, user_id: str, rows: list[SessionSummary]) -> list[SessionSummary]:
        """``rows`` with a title derived for each one without (:meth:`derived_titles`)."""
        derived = self.derived_titles(user_id, [r.session_id for r in rows if not r.title])
        return [
            r.model_copy(update={"title": derived[r.session_id], "title_derived": True})
            if not r.title and r.session_id in derived
            else r
            for r in rows
        ]

    _TITLE_TURNS = 20  # a derived title comes from the first user message among a session's first turns

    def derived_titles(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        """Titles for sessions whose import gave none (a Claude Code log without a summary line): the
        first user message among each session's first 20 turns (else its first turn), shortened
        (:func:`refind.models.derive_title`). Sessions with nothing to derive from are absent. Nothing is
        stored: a later import that brings a title wins, and exports carry none."""
        user_id = _check_id("user_id", user_id)
        wanted = list(dict.fromkeys(session_ids))
        if not wanted:
            return {}
        out: dict[str, str] = {}
        spans = [(sid, 0, self._TITLE_TURNS - 1) for sid in wanted]
        for sid, turns in zip(wanted, self.store.windows(user_id, spans), strict=True):
            first = next((t for t in turns if t.role == "user"), turns[0] if turns else None)
            title = derive_title(first.content) if first is not None else None
            if title:
                out[sid] = title
        return out

    def labels(self, user_id: str) -> tuple[list[str], list[str]]:
        """The sources and the projects of ``user_id``'s sessions, each sorted (what ``source`` and
        ``project`` filters accept): from their stored info alone, without listing the sessions."""
        user_id = _check_id("user_id", user_id)
        self.store.refresh()
        infos = self.store.session_infos(user_id).values()
        return sorted({i.source for i in infos if i.source}), sorted({i.project for i in infos if i.project})

    def session_ids(self, user_id: str) -> list[str]:
        """The ids of ``user_id``'s stored sessions, sorted (what a prefix is resolved against)."""
        user_id = _check_id("user_id", user_id)
        self.store.refresh()
        return sorted(s.session_id for s in self.store.session_summaries(user_id))

    def short_ids(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        """For each of ``session_ids``, the shortest form that names it alone among ``user_id``'s sessions
        (:meth:`resolve_session` takes it): each /-separated part of the id cut to the same length, at
        least 8 characters (``6612f0a1-3``, ``5f0c2d4e/agent-3f``); an id of 12 characters or fewer whole."""
        ids = self.session_ids(user_id)
        return {sid: _short_id(sid, ids) for sid in dict.fromkeys(session_ids)}

    def resolve_session(self, user_id: str, session_id: str, *, deleted: bool = False) -> str:
        """The id of ``user_id``'s stored session that ``session_id`` names, as git takes a commit's prefix:
        itself when a session has that id; else the one session each of whose /-separated parts starts with
        the matching part of ``session_id`` (``5f0c2d4e/agent-3f``); else the one session whose id starts
        with it. ``session_id`` unchanged when none does (the caller says it is missing); several is an
        :class:`InvalidInput` listing them. ``deleted`` resolves among the deleted sessions' tombstones
        (:meth:`deleted_sessions`) instead."""
        user_id, session_id = _check_id("user_id", user_id), _check_id("session_id", session_id)
        if deleted:
            found = _by_prefix(user_id, session_id, sorted(self.deleted_sessions(user_id)), "deleted session")
        else:
            found = _by_prefix(user_id, session_id, self.session_ids(user_id))
        return found if found is not None else session_id

    def session_info(self, user_id: str, session_id: str) -> SessionSummary | None:
        """One stored session's summary (as :meth:`sessions` lists it), or None when it holds no message."""
        user_id, session_id = _check_id("user_id", user_id), _check_id("session_id", session_id)
        self.store.refresh()
        turns = self.store.windows(user_id, [(session_id, 0, 2**31 - 1)])[0]
        if not turns:
            return None
        i = self.store.session_infos(user_id, [session_id]).get(session_id)
        times = [t.timestamp for t in turns]
        title, derived = (i.title if i else None), False
        if not title:
            first = next((t for t in turns[: self._TITLE_TURNS] if t.role == "user"), turns[0])
            title = derive_title(first.content)
            derived = title is not None
        return SessionSummary(
            session_id=session_id, title=title, source=i.source if i else None,
            project=i.project if i else None, messages=len(turns), first=min(times), last=max(times),
            title_derived=derived,
        )  # fmt: skip

    def export(self, user_id: str | None = None, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every stored message (of ``user_id``, or of every user; of one session with ``session_id``) as
        refind's JSONL records, session by session in turn order, each session's first record carrying its
        title, source and project: what ``refind import`` reads back into the same messages and info
        (``refind export``)."""
        users = [_check_id("user_id", user_id)] if user_id is not None else None
        if session_id is not None:
            session_id = _check_id("session_id", session_id)
            if users is None:
                raise InvalidInput("session_id: give the user_id of the session too", field="user_id")
        self.store.refresh()
        for user in users if users is not None else self.store.users():
            infos = self.store.session_infos(user, [session_id] if session_id is not None else None)
            summaries = sorted(
                (s for s in self.store.session_summaries(user) if session_id in (None, s.session_id)),
                key=lambda s: (s.first, s.session_id),
            )
            for summary in summaries:
                turns = self.store.windows(user, [(summary.session_id, 0, 2**31 - 1)])[0]
                info = infos.get(summary.session_id)
                for n, t in enumerate(turns):
                    rec: dict[str, Any] = {
                        "user_id": user, "session_id": summary.session_id, "id": t.id, "turn": t.turn,
                        "role": t.role, "content": t.content, "timestamp": t.timestamp,
                    }  # fmt: skip
                    if t.speaker is not None:
                        rec["speaker"] = t.speaker
                    if t.time_text is not None:
                        rec["time_text"] = t.time_text
                    if n == 0 and info is not None:
                        rec.update({k: v for k, v in (("title", info.title), ("source", info.source),
                                    ("project", info.project)) if v is not None})  # fmt: skip
                    yield rec

    # ------------------------------------------------------------------ vectors

    def vector_counts(self, user_id: str | None = None) -> VectorCounts:
        """How many of ``user_id``'s messages (or all) have a vector, and how many await one."""
        self.store.refresh()
        return self.store.vector_counts(_check_id("user_id", user_id) if user_id is not None else None)

    def embed_pending(
        self,
        limit: int | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Embed what awaits its vector now, in the calling thread, batch by batch, until nothing does (or
        ``limit`` vectors are written, or ``should_stop()`` says so): ``refind import`` and benchmarks.
        ``progress(written, still queued)`` is called after each batch. Returns the vectors written; what is
        left stays queued (the background worker, or the next call, goes on with it)."""
        if limit is not None:
            limit = _bounded_int("limit", limit, 0, 0, 10**9)
        worker = self._require_worker()
        return worker.drain(limit, progress, should_stop)

    def wait_for_vectors(self, timeout: float | None = None) -> bool:
        """Block until no message awaits its vector (True), or ``timeout`` seconds pass (False). False at
        once when nothing would fill the queue: a read-only memory, or one without an embedder or without its
        background worker (:meth:`embed_pending` then)."""
        if self._worker is None:
            return self.store.vector_counts().pending == 0
        return self._worker.wait_idle(timeout)

    def reset_vectors(self) -> int:
        """Drop every vector and the model they are of, and queue every message again (``refind vectors
        reset``: after a change of model). With an embedder, its model is recorded and the worker rebuilds
        them. Returns the messages queued."""
        if self._worker is not None:
            self._worker.stop()
        n = self._writes.reset_vectors()
        if self.embedder is not None:
            self._use_embedder(self.embedder, self._background)
        return n

    def _require_worker(self) -> VectorWorker:
        if self._worker is not None:
            return self._worker
        if self.store.read_only:
            raise InvalidInput("a read-only memory embeds nothing; open it writable to fill in vectors")
        raise EmbedderUnavailable(
            "this memory has no embedder: open it with embedder=... (the local model, or an "
            "EndpointEmbedder) to give messages vectors"
        )

    def profile(self, user_id: str, *, limit: int = 1000) -> list[StandingFact]:
        """What ``user_id`` said that stands (:mod:`refind.standing`: instructions, preferences and lasting
        facts, read at write time and stored with each message), newest first, at most ``limit``; each says
        which later fact supersedes it, if any, and whether it is current (:mod:`refind.profile`)."""
        from refind.profile import profile_facts

        user_id = _check_id("user_id", user_id)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise InvalidInput("limit: expected a non-negative integer", field="limit")
        self.store.refresh()
        return profile_facts(self.store.standing(user_id, limit))

    def pin(self, user_id: str, message_id: str, kind: StandingKind = "fact") -> MarkedMessage:
        """Make ``user_id``'s message ``message_id`` stand, as ``kind`` (``fact``, ``instruction`` or
        ``preference``), whatever the rule reads in it: it is listed by :meth:`profile` (``pinned``, current
        until unpinned) and offered beside the evidence of searches as a standing message of that kind. The
        mark is durable and kept apart from the messages: a re-import, the rule's upgrade pass and any
        rewrite of the index leave it (docs/store.md, "What stands"). An unknown id (or another user's) is
        an :class:`InvalidInput`."""
        if kind not in _KINDS:
            raise InvalidInput(
                f"kind: {str(kind)[:40]!r} is not a kind of standing message; "
                f"expected one of {', '.join(_KINDS)}",
                field="kind",
            )
        return self._mark(user_id, message_id, kind)

    def hide(self, user_id: str, message_id: str) -> MarkedMessage:
        """Make ``user_id``'s message ``message_id`` never stand, whatever the rule reads in it: not in
        :meth:`profile`, never beside a search's evidence (it is still found by searches as any message).
        Durable as :meth:`pin`; :meth:`unpin` undoes it."""
        return self._mark(user_id, message_id, None)

    def unpin(self, user_id: str, message_id: str) -> bool:
        """Take the pin or hide off ``user_id``'s message ``message_id``: what stands in it is again what
        the rule reads. Returns whether it was marked (False: nothing to undo); an id that is neither marked
        nor a message of ``user_id`` is an :class:`InvalidInput`."""
        user_id, message_id = _check_id("user_id", user_id), _check_id("message_id", message_id)
        self.store.refresh()
        if message_id in self.store.marks(user_id):
            self._writes.set_marks(user_id, {message_id: None})
            return True
        self._message(user_id, message_id)
        return False

    def marks(self, user_id: str) -> list[MarkedMessage]:
        """``user_id``'s pinned and hidden messages, the most recently marked first (the marks of messages
        no longer stored are kept, not listed: they apply again if the message comes back)."""
        from refind.profile import marked_message

        user_id = _check_id("user_id", user_id)
        self.store.refresh()
        marks = self.store.marks(user_id)
        hits = self.store.get(user_id, list(marks)) if marks else []
        listed = [marked_message(h, marks[h.id]) for h in hits if h.id in marks]
        return sorted(listed, key=lambda m: (-m.marked_at, m.message_id))

    def _mark(self, user_id: str, message_id: str, kind: StandingKind | None) -> MarkedMessage:
        from refind.profile import marked_message

        user_id, message_id = _check_id("user_id", user_id), _check_id("message_id", message_id)
        self.store.refresh()
        hit = self._message(user_id, message_id)
        mark = StandingMark(kind, int(time.time() * 1000))
        self._writes.set_marks(user_id, {message_id: mark})
        return marked_message(hit, mark)

    def _message(self, user_id: str, message_id: str) -> Hit:
        """``user_id``'s message ``message_id``, or an :class:`InvalidInput` that says where ids are."""
        found = self.store.get(user_id, [message_id])
        if not found:
            raise InvalidInput(
                f"user {user_id!r} has no message {message_id!r} in {self._where()}; message ids are in "
                "`refind profile USER` and `refind show SESSION --json`",
                field="message_id",
            )
        return found[0]

    def count(self, user_id: str | None = None) -> int:
        """Messages stored for ``user_id``, or in all."""
        self.store.refresh()
        return self.store.count(_check_id("user_id", user_id) if user_id is not None else None)

    def stats(self) -> StoreStats:
        """Message and user counts of the index, and the deleted sessions that imports leave out."""
        self.store.refresh()
        users = self.store.users()
        per_user = {u: self.store.count(u) for u in users}
        deleted = {u: len(s) for u, s in self.store.tombstones().items() if s}
        vectors = self.store.vector_counts()
        model = self.store.vector_model()
        return StoreStats(
            path=self._where(),
            messages=self.store.count(),
            users=len(users),
            per_user=per_user,
            deleted_sessions=sum(deleted.values()),
            deleted_per_user=deleted,
            vectors=vectors.vectors,
            pending_vectors=vectors.pending,
            vector_model=f"{model[0]} ({model[1]} dims)" if model is not None else None,
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop the embedding worker (after its current batch), release the index (and its write lock).
        Idempotent. What awaits its vector stays queued in the index."""
        if self._worker is not None:
            self._worker.stop()
        if self._query_pool is not None:
            self._query_pool.shutdown(wait=True)
        self.store.close()

    def drop(self) -> None:
        """Delete everything this memory holds, irreversibly, and close it: the index directory on disk, a
        remote engine's indexes, an in-memory index's contents. For tests and benchmarks; to forget one person
        use :meth:`delete_user`."""
        if self._worker is not None:
            self._worker.stop()
        self.store.drop()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _where(self) -> str:
        return self.store.location

    def __repr__(self) -> str:
        return f"Memory({self._where()!r})"
