"""Memory: the facade users hold. Everything above the store (CLI, HTTP service, benchmarks) goes through it."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from refind.agent.base import Agent
from refind.agent.heuristic import HeuristicAgent
from refind.config import Settings
from refind.errors import InvalidInput
from refind.fusion import Fusion
from refind.models import (
    AddResult,
    Evidence,
    Hit,
    Message,
    SessionLog,
    SessionSummary,
    StoreStats,
    check_id,
    parse_messages,
    to_epoch_ms,
    validation_message,
)
from refind.query import ReadingRules, read_question
from refind.result import SearchResult
from refind.search.round import search_round
from refind.search.session import SearchSession, with_info
from refind.store import open_engine
from refind.store.base import Engine, Filters, SessionInfo
from refind.store.write import ImportResult, WritePath

__all__ = ["ImportResult", "Memory"]

log = logging.getLogger(__name__)

TimeLike = int | float | str | datetime | date
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
        store: Engine | None = None,
        **overrides: Any,
    ) -> None:
        if settings is not None and overrides:
            settings = settings.model_copy(update=overrides)
        elif settings is None:
            try:
                settings = Settings.from_env(**overrides)
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

    @classmethod
    def in_memory(cls, **overrides: Any) -> Memory:
        """A Memory whose index lives in RAM and disappears on close (notebooks, tests)."""
        return cls(":memory:", **overrides)

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
        return self._writes.add(user_id, session_id, parsed, request_id, session_ms, session_text, info)

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
        the number the index has taken in, every few thousand, so a progress bar covers the writing too."""
        return self._writes.import_sessions(logs, progress=progress, written=written)

    def delete_added_before(self, cutoff: TimeLike) -> int:
        """Retention: delete everything *added* (acknowledged) before ``cutoff`` (epoch ms, ISO string or
        datetime), for all users: messages and the request markers of the adds that wrote them, in one
        durable commit. The messages' own timestamps play no part, so imported or back-dated history is kept
        as long as anything else. Messages replaced later count from their replacement. Returns how many
        messages were removed (``refind serve --retention-days``)."""
        cutoff_ms = _time_arg("cutoff", cutoff)
        assert cutoff_ms is not None
        return self._writes.delete_added_before(cutoff_ms)

    def delete_user(self, user_id: str) -> int:
        """Delete all of ``user_id``'s messages (durably); returns how many were removed."""
        return self._writes.delete_user(_check_id("user_id", user_id))

    def delete_session(self, user_id: str, session_id: str) -> int:
        """Delete one session of ``user_id``: its messages and its info, durably. Returns how many messages
        were removed (0 when there was no such session: deleting twice is harmless)."""
        user_id, session_id = _check_id("user_id", user_id), _check_id("session_id", session_id)
        return self._writes.delete_session(user_id, session_id)

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
        """One search round (DESIGN §4): filtered BM25 with over-fetch, session fusion, the ``top_k`` hits
        expanded to ±``window`` turns (overlapping windows merged). Returns evidence blocks, best first.
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

    def _scope(self, user_id: str, source: str | None, project: str | None) -> list[str] | None:
        """The sessions of ``user_id`` with that source and project (None: no such filter given)."""
        if source is None and project is None:
            return None
        for name, value in (("source", source), ("project", project)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInput(f"{name}: expected a non-empty string", field=name)
        return [
            sid
            for sid, i in self.store.session_infos(user_id).items()
            if (source is None or i.source == source.strip())
            and (project is None or i.project == project.strip())
        ]

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
    ) -> SearchResult:
        """Find the evidence for ``question`` in ``user_id``'s history.

        The agent (default: the offline :class:`HeuristicAgent`) runs a few keyword rounds, with a time
        filter when the question has a time cue relative to ``now``, each round skipping what earlier ones
        returned. ``top_k`` is the hits per round (each expanded to ±``window`` turns). The result holds the
        evidence grouped by session in time order, trimmed to ``max_tokens`` when given, and a trace.
        ``source`` and ``project`` search only the sessions with that source (``chatgpt``, ``claude``,
        ``claude-code``, ``jsonl``, ...) or project (see :meth:`sessions`).
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
            project=project, options=options, rules=getattr(agent, "reading_rules", None),
        )  # fmt: skip
        agent.run(session)
        return session.result(max_tokens=max_tokens)

    def default_agent(self) -> HeuristicAgent:
        """The agent :meth:`search` runs when given none: a :class:`HeuristicAgent` with this memory's
        ``max_rounds``, ``time_filters`` and ``feedback`` settings."""
        s = self.settings
        return HeuristicAgent(s.max_rounds, time_filters=s.time_filters, feedback=s.feedback, shapes=s.shapes)

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
        options: Sequence[str] | None = None,
        rules: ReadingRules | None = None,
    ) -> SearchSession:
        """A :class:`SearchSession` with this memory's settings: what agents (and :mod:`refind.tools`) run
        rounds on. The question (with its multiple-choice ``options``) is read here, once
        (:func:`refind.query.read_question`, under the agent's ``rules``); the session's read-set spans every
        search made through it; ``source`` and ``project`` restrict it to the sessions with them."""
        user_id = _check_id("user_id", user_id)
        s = self.settings
        self.store.refresh()  # a read-only memory beside a writer: its latest commit
        scope = self._scope(user_id, source, project)
        reading = read_question(question, now=_time_arg("now", now), options=options, rules=rules)
        return SearchSession(
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
            scope=scope,
            segment_turns=s.segment_turns,
        )

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
    ) -> list[SessionSummary]:
        """``user_id``'s stored sessions, the most recent first (by their last message; ties by session
        id): title, source, project, message count, first and last message times. ``source`` and
        ``project`` keep the sessions that have them; ``offset`` and ``limit`` page the list."""
        user_id = _check_id("user_id", user_id)
        offset = _bounded_int("offset", offset, 0, 0, 10**9)
        if limit is not None:
            limit = _bounded_int("limit", limit, 0, 0, 10**6)
        self.store.refresh()
        scope = self._scope(user_id, source, project)
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
        return rows[offset : offset + limit if limit is not None else None]

    def session_info(self, user_id: str, session_id: str) -> SessionSummary | None:
        """One stored session's summary (as :meth:`sessions` lists it), or None when it holds no message."""
        user_id, session_id = _check_id("user_id", user_id), _check_id("session_id", session_id)
        self.store.refresh()
        turns = self.store.windows(user_id, [(session_id, 0, 2**31 - 1)])[0]
        if not turns:
            return None
        i = self.store.session_infos(user_id, [session_id]).get(session_id)
        times = [t.timestamp for t in turns]
        return SessionSummary(
            session_id=session_id, title=i.title if i else None, source=i.source if i else None,
            project=i.project if i else None, messages=len(turns), first=min(times), last=max(times),
        )  # fmt: skip

    def export(self, user_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every stored message (of ``user_id``, or of every user) as refind's JSONL records, session by
        session in turn order, each session's first record carrying its title, source and project:
        what ``refind import`` reads back into the same messages and info (``refind export``)."""
        users = [_check_id("user_id", user_id)] if user_id is not None else None
        self.store.refresh()
        for user in users if users is not None else self.store.users():
            infos = self.store.session_infos(user)
            summaries = sorted(self.store.session_summaries(user), key=lambda s: (s.first, s.session_id))
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

    def count(self, user_id: str | None = None) -> int:
        """Messages stored for ``user_id``, or in all."""
        self.store.refresh()
        return self.store.count(_check_id("user_id", user_id) if user_id is not None else None)

    def stats(self) -> StoreStats:
        """Message and user counts of the index."""
        self.store.refresh()
        users = self.store.users()
        per_user = {u: self.store.count(u) for u in users}
        return StoreStats(
            path=self._where(),
            messages=self.store.count(),
            users=len(users),
            per_user=per_user,
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Release the index (and its write lock). Idempotent."""
        self.store.close()

    def drop(self) -> None:
        """Delete everything this memory holds, irreversibly, and close it: the index directory on disk, a
        remote engine's indexes, an in-memory index's contents. For tests and benchmarks; to forget one person
        use :meth:`delete_user`."""
        self.store.drop()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _where(self) -> str:
        return self.store.location

    def __repr__(self) -> str:
        return f"Memory({self._where()!r})"
