"""The engine protocol: exactly what the layers above an engine call, nothing more.

The design: docs/design.md § "Engines".

An engine stores one user-partitioned collection of chat messages and answers a handful of reads. Three
engines implement it and pass one contract suite (``tests/test_engine_contract.py``): the embedded
:class:`~refind.store.lucene.LuceneStore` (default), the pure-Python
:class:`~refind.store.reference.ReferenceStore` (in memory; lets search and agent logic be tested without
Java and proves the protocol complete) and, for scale-out, OpenSearch.

Who calls what:

- the search rounds and the agents' session (:mod:`refind.search`): :class:`Reader`;
- the write side (:mod:`refind.store.write`): :class:`Writer`, whose reads (:meth:`Writer.session_states`,
  :meth:`Writer.existing`, :meth:`Writer.session_turns`, :meth:`Writer.request_marker`) resolve turns, ids
  and session texts, batched across users;
- :class:`refind.Memory`: both, and the lifecycle of :class:`Engine`.

Rules every engine keeps (and the contract suite checks):

- every read takes the user id and never returns another user's data; there is no cross-user query;
- user, session, message and request ids are valid ids (:func:`refind.models.id_problem`: no control
  characters); the facade and the write path check them, so an engine may rely on it (the Lucene engine
  joins ids with U+001F in its keys);
- query text is analyzed into terms (lowercased, English stop words dropped, English stemming, CJK text
  as bigrams; at most 64 distinct terms, a repeated term weighing more), never parsed as query syntax;
- filters (:class:`Filters`) apply before the top ``k``; ``exclude_*`` are the caller's read-set;
- ties (equal scores, equal times in :meth:`Reader.browse`) come in insertion order, a replaced message
  counting as inserted when it was replaced (Lucene's doc-id order), so searches are deterministic;
- a record whose id exists (per user) replaces that message; ``write`` + ``commit`` is durable and visible
  to the next read once ``commit`` returns, and nothing written is visible before (a read never sees an
  add that a crash could still undo);
- request markers and messages written in one batch become durable together;
- tombstones (the sessions a person deleted, which the write path keeps out of later imports) are durable
  when :meth:`Writer.add_tombstones` returns and outlive the deletion of the messages;
- vectors (issue 36): every message written enters a durable queue (:meth:`Writer.pending_vectors`) unless
  its content is unchanged (its token, :func:`content_token`, is the same), in which case it keeps its
  vector; a vector is written for a message as of its token (:meth:`Writer.write_vectors`) and found only
  by :meth:`Reader.knn` over its own user's vectors; deletions, retention and replacements remove a
  message's vector and queue entry with it; the vectors' model is recorded once
  (:meth:`Writer.use_vector_model`) and another is refused; before a model is recorded the queue may be
  implicit (Lucene writes none: every stored message awaits its vector, in write order) but reads the same;
- standing (issue 37): a record's :attr:`Record.standing` (what the write path's rule,
  :func:`refind.standing.read_standing`, read in it) is stored with the message and goes with it (replaced,
  deleted, expired, re-imported as the message is); :meth:`Reader.standing` finds a person's standing
  messages in one query, not a scan; an index written before (or by another version of the rule,
  :data:`refind.standing.RULE_VERSION`) gets them on its first writable open, and a read-only open of such an
  index reads its messages with the rule instead;
- marks (issue 37): a person's corrections of what stands, by message id (:class:`StandingMark`: pinned as
  a kind, or hidden), are kept apart from the messages, so that nothing that writes messages (a re-import
  that replaces them, the rule's upgrade pass, a rewrite of the index) can change them:
  :meth:`Writer.set_marks` is durable on return, :meth:`Reader.marks` reads them (read-only too),
  :meth:`Writer.delete_user` removes them with the person; a mark whose message is gone stays (it applies
  again if the message comes back). :meth:`Reader.standing` applies them: a hidden message is never
  returned, a pinned one always (as its pin's kind, ``pinned``), in one place for every engine
  (:func:`refind.store._standing.with_marks`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from refind.errors import StoreError
from refind.models import MAX_QUERY_TERMS, Hit
from refind.standing import Standing, StandingKind

__all__ = [
    "ANALYZER_NAME",
    "query_bag",
    "standing_dict",
    "standing_of",
    "AlreadyApplied",
    "RequestTaken",
    "WriteRaced",
    "Engine",
    "Expired",
    "Filters",
    "Marker",
    "PendingVector",
    "Reader",
    "Record",
    "SessionDoc",
    "SessionInfo",
    "SessionState",
    "SessionCounts",
    "StandingHit",
    "StandingMark",
    "VectorCounts",
    "VectorRecord",
    "WriteBatch",
    "Writer",
    "content_token",
    "model_mismatch",
]

ANALYZER_NAME = "colonSplit+standard+cjkWidth+lowercase+cjkBigram+englishPossessive+stop+porterStem"
"""The analyzer chain every engine indexes with (Lucene's, OpenSearch's ``refind`` analyzer, and
:mod:`refind.store.analysis`), recorded in each index's metadata: an index written with another is refused."""


def query_bag(terms: Sequence[str]) -> list[tuple[str, int]]:
    """A query's analyzed ``terms`` as the engines search them: each distinct term with its count (its
    boost), the most frequent first (ties: first seen), at most :data:`MAX_QUERY_TERMS`. The Java engine
    keeps the same rule (``Engine.bag``)."""
    counts = Counter(terms)  # insertion-ordered: first occurrence
    return sorted(counts.items(), key=lambda e: -e[1])[:MAX_QUERY_TERMS]


def content_token(content: str) -> str:
    """A message's vector token: a digest of its content (the same content, the same token), so a message
    replaced by the same text (a re-import of the same export) keeps its vector. The Java engine computes the
    same (``Engine.token``): the first 32 hex digits of the SHA-256 of the UTF-8 content."""
    return hashlib.sha256(content.encode("utf-8", "replace")).hexdigest()[:32]


def model_mismatch(where: str, stored: tuple[str, int], given: tuple[str, int]) -> str:
    """The message of the :class:`~refind.errors.IndexFormatError` raised when a memory whose embedder is
    ``given`` (name, dimensions) opens an index whose vectors are of another model ``stored``."""
    (have, have_dims), (want, want_dims) = stored, given
    return (
        f"index at {where} holds vectors of model {have!r} ({have_dims} dims); this memory uses {want!r} "
        f"({want_dims} dims): use {have!r} (REFIND_EMBED_MODEL={have}), or drop the vectors with "
        "`refind vectors reset` and let them be rebuilt with the new model"
    )


@dataclass(frozen=True, slots=True)
class PendingVector:
    """A message that awaits its vector: who, which, its content and the token (:func:`content_token`) of
    that content, which :meth:`Writer.write_vectors` is given back with the vector."""

    user_id: str
    id: str
    token: str
    content: str


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """A vector for a message, as of the message's ``token`` (unit length, the recorded model's
    dimensions)."""

    user_id: str
    id: str
    token: str
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class VectorCounts:
    """Messages with a vector, and messages awaiting one."""

    vectors: int
    pending: int


class AlreadyApplied(Exception):
    """Raised by :meth:`Writer.write` of an engine shared by several writing processes (OpenSearch) when
    the batch's request marker was already created, with the same body, by another writer whose write is
    now committed: the write path reports the add as a duplicate and writes nothing."""


class RequestTaken(Exception):
    """Raised by :meth:`Writer.write` of an engine shared by several writing processes (OpenSearch) when
    the batch's request id already holds another writer's marker with another payload: nothing was written.
    The write path decides what that means (a :class:`~refind.RequestConflict`)."""

    def __init__(self, request_id: str) -> None:
        super().__init__(request_id)
        self.request_id = request_id


class WriteRaced(StoreError):
    """Raised by :meth:`Writer.commit` of an engine shared by several writing processes when another writer
    changed a session between this writer's read of it (:meth:`Writer.session_states`) and the commit:
    nothing of the batches touching ``keys`` ((user, session) pairs) was written; everything else was. The
    write path resolves those adds again (new turns after the other writer's)."""

    def __init__(self, message: str, keys: frozenset[tuple[str, str]]) -> None:
        super().__init__(message)
        self.keys = keys


@dataclass(frozen=True, slots=True)
class Record:
    """One message ready to be written: every field resolved (turn, timestamp, id)."""

    user_id: str
    session_id: str
    id: str
    turn: int
    timestamp: int
    role: str
    content: str
    speaker: str | None = None
    time_text: str | None = None
    replace: bool = True  # False only when the writer knows the id is new (skips the delete-by-id)
    standing: Standing | None = (
        None  # what the message says that stands (refind.standing), user messages only
    )


@dataclass(frozen=True, slots=True)
class SessionDoc:
    """A session's whole text (its messages joined in turn order), indexed as one document for
    session-level BM25. ``new``: the engine holds none for it yet. ``text=None`` removes it.

    ``appended`` (a hint an engine may use to analyze each message once): when not None, ``text`` is its
    first ``appended`` characters followed by the contents of this batch's records of this session, in
    batch order, joined as :func:`refind.store.write.join_session` joins them."""

    user_id: str
    session_id: str
    text: str | None
    new: bool = False
    appended: int | None = None


@dataclass(frozen=True, slots=True)
class Marker:
    """The record that a request id was applied. ``payload`` is the write path's, opaque to engines: they
    store it and hand it back (:meth:`Writer.request_marker`) byte for byte, never reading inside it. The
    write path makes it a function of the request's body alone (it holds the body's digest), so an engine
    that claims request ids atomically across processes (OpenSearch) compares payloads as they are: an
    equal one is the same request, another is :class:`RequestTaken`."""

    user_id: str
    request_id: str
    payload: str


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What an export says about a session: its ``title`` (searchable: title words count for the session),
    the ``source`` app it came from (``chatgpt``, ``claude``, ``claude-code``, ``jsonl``, ...) and its
    ``project`` (a Claude Code working directory, a ChatGPT or Claude project). Written with a batch, it
    replaces the session's stored info; it goes with the session (deleted with its last message)."""

    user_id: str
    session_id: str
    title: str | None = None
    source: str | None = None
    project: str | None = None


@dataclass(frozen=True, slots=True)
class StandingHit:
    """A stored message that states something standing (:meth:`Reader.standing`): where it is, and what the
    rule read in it (:class:`refind.standing.Standing`)."""

    id: str
    session_id: str
    turn: int
    timestamp: int
    role: str
    kind: StandingKind
    domain: str | None
    subject: str | None
    change: bool
    sentence: str
    pinned: bool = False
    """The person pinned this message (:class:`StandingMark`): it stands as ``kind``, whatever the rule reads
    in it."""

    @classmethod
    def of(cls, hit: Hit, standing: Standing, pinned: bool = False) -> StandingHit:
        """The standing message ``hit`` with what the rule read in it (or what its pin says)."""
        return cls(
            hit.id, hit.session_id, hit.turn, hit.timestamp, hit.role, standing.kind, standing.domain,
            standing.subject, standing.change, standing.sentence, pinned,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class StandingMark:
    """A person's correction of what one of their messages says that stands (issue 37): pinned as ``kind``
    (it stands, whatever the rule reads in it), or hidden (``kind`` None: it never stands). ``at``: when it
    was marked (epoch ms)."""

    kind: StandingKind | None
    at: int

    @property
    def hidden(self) -> bool:
        return self.kind is None


def standing_of(raw: Mapping[str, object] | None) -> Standing | None:
    """A stored standing object (``{"kind", "sentence", "domain", "subject", "change"}``, as the engines keep
    it beside a message) as a :class:`~refind.standing.Standing`, or None."""
    if not raw or not isinstance(raw.get("kind"), str):
        return None
    domain, subject = raw.get("domain"), raw.get("subject")
    return Standing(
        raw["kind"],  # type: ignore[arg-type]
        str(raw.get("sentence") or ""),
        domain if isinstance(domain, str) else None,
        subject if isinstance(subject, str) else None,
        bool(raw.get("change")),
    )


def standing_dict(standing: Standing | None) -> dict[str, object] | None:
    """``standing`` as the engines store it beside a message (None: nothing stands)."""
    if standing is None:
        return None
    return {
        "kind": standing.kind,
        "sentence": standing.sentence,
        "domain": standing.domain,
        "subject": standing.subject,
        "change": standing.change,
    }


@dataclass(frozen=True, slots=True)
class SessionCounts:
    """One stored session of a user, from its messages: how many, and the first and last message times
    (epoch ms)."""

    session_id: str
    messages: int
    first: int
    last: int


@dataclass(slots=True)
class WriteBatch:
    """What one add (or one slice of a bulk import) writes: messages, session documents, session info,
    a marker."""

    records: list[Record] = field(default_factory=list)
    sessions: list[SessionDoc] = field(default_factory=list)
    marker: Marker | None = None
    infos: list[SessionInfo] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SessionState:
    """What the write side needs of a stored session: its last turn (with content) and whole text."""

    tail: Hit | None
    text: str | None


@dataclass(frozen=True, slots=True)
class Expired:
    """What a retention sweep removed: the message count, and for each session that lost messages the
    contents of its remaining turns in turn order (empty: the session is gone), for its new document."""

    removed: int
    sessions: list[tuple[str, str, list[str]]]


@dataclass(frozen=True, slots=True)
class Filters:
    """Constraints applied before ranking. Times are inclusive epoch ms; ``exclude_ids`` are message ids.
    ``session_ids`` and ``roles`` restrict to the ones listed (an empty list admits nothing; roles match
    in any case, stored roles being lowercase); empty ``exclude_*`` exclude nothing. ``any_terms``: index
    terms (analyzed) of which a message must hold at least one (an empty list admits nothing): a round whose
    words include function words needs a hit to match one of its others."""

    time_from: int | None = None
    time_to: int | None = None
    session_ids: Sequence[str] | None = None
    roles: Sequence[str] | None = None
    exclude_ids: Sequence[str] | None = None
    exclude_sessions: Sequence[str] | None = None
    any_terms: Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class RoundSpec:
    """One search round (:func:`refind.search.round.search_round`) for an engine that runs a round in one
    call (:class:`RoundRunner`). ``filters`` hold no exclusions: the read-set is ``exclude_ids`` /
    ``exclude_sessions``; with ``read`` the round queries without it first (the session ranking reflects the
    query, not what happens to be unread), drops read hits and queries again with it only when fewer than
    ``top_k`` unread hits remain. ``sessions``, ``k0``, ``w_hit``, ``w_session``: the fusion; ``restrict``:
    rank session documents among the sessions with hits only; ``titles``: also rank those sessions' titles;
    ``content_terms``: when not None, the round's words hold function words, and its hits are chosen among
    the messages holding one of these terms (a second query, with the read-set and ``any_terms``), while
    its session ranking still comes from every match."""

    text: str
    fetch: int
    top_k: int
    window: int
    filters: Filters | None
    exclude_ids: Sequence[str] = ()
    exclude_sessions: Sequence[str] = ()
    read: bool = False
    sessions: str = "hits"
    restrict: bool = False
    k0: float = 60.0
    w_hit: float = 1.0
    w_session: float = 1.0
    titles: bool = False
    content_terms: Sequence[str] | None = None


@dataclass(slots=True)
class RoundFound:
    """What a round found, before its evidence blocks are built: the unread hits (BM25 order, doc-value
    fields only), the round's session orders, the chosen hits' fused scores (by id, best first), the merged
    spans around them (session, first turn, last turn, best fused score) with their turns (content, turn
    order), the analyzed terms, and the sessions with hits ranked by title (when asked)."""

    hits: list[Hit]
    orders: list[list[str]]
    selected: dict[str, float]
    spans: list[tuple[str, int, int, float]]
    windows: list[list[Hit]]
    terms: list[str]
    titled: list[str]


@runtime_checkable
class RoundRunner(Protocol):
    """An engine that runs a whole round in one call (the Lucene engine: one crossing of the bridge). The
    result must equal :func:`refind.search.round.round_by_calls` on the same engine; others get that."""

    def round(self, user_id: str, spec: RoundSpec) -> RoundFound: ...


@runtime_checkable
class Reader(Protocol):
    """The reads of the search rounds, the agents' session and the facade."""

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text``, in order (repeats kept)."""
        ...

    def query(
        self, user_id: str, text: str, k: int, filters: Filters | None = None, *, content: bool = True
    ) -> list[Hit]:
        """BM25 over ``user_id``'s messages, best first. Without ``content`` the hits carry only id,
        session, turn, time, role and score (``content == ""``): for ranking passes that never show them."""
        ...

    def query_sessions(
        self, user_id: str, text: str, k: int, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over ``user_id``'s whole sessions (their joined text): (session id, score), best first."""
        ...

    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]:
        """For each ``(session_id, first_turn, last_turn)`` (any number of spans) the stored turns in that
        range, in turn order; a range is clamped to turns ``0 .. 2**31 - 1``, an empty one gives ``[]``."""
        ...

    def browse(
        self, user_id: str, k: int, filters: Filters | None = None, newest_first: bool = True
    ) -> list[Hit]:
        """``user_id``'s messages matching only ``filters``, newest (or oldest) first, with content."""
        ...

    def term_counts(self, user_id: str, text: str) -> dict[str, int]:
        """For each distinct analyzed term of ``text`` (as :meth:`query` uses them), how many of
        ``user_id``'s messages contain it."""
        ...

    def get(self, user_id: str, ids: Sequence[str]) -> list[Hit]:
        """``user_id``'s messages by id, with content (missing ids are simply absent)."""
        ...

    def count(self, user_id: str | None = None) -> int:
        """Messages stored for ``user_id``, or in all."""
        ...

    def refresh(self) -> None:
        """Make the next reads see what another process committed (an engine opened read-only beside a
        writer); a no-op where reads are always current. Called once per read the facade serves."""
        ...

    def users(self) -> list[str]:
        """User ids with at least one message, sorted."""
        ...

    def session_infos(self, user_id: str, session_ids: Sequence[str] | None = None) -> dict[str, SessionInfo]:
        """The stored info of ``user_id``'s sessions (those listed, or all), by session id; sessions without
        info are absent."""
        ...

    def query_titles(
        self, user_id: str, text: str, k: int, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over the titles of ``user_id``'s sessions (restricted to ``session_ids`` when given):
        (session id, score), best first."""
        ...

    def session_summaries(self, user_id: str) -> list[SessionCounts]:
        """Every session of ``user_id`` that holds messages: its message count and first and last times
        (in no particular order)."""
        ...

    def knn(self, user_id: str, vector: Sequence[float], k: int, filters: Filters | None = None) -> list[Hit]:
        """``user_id``'s messages whose vectors are nearest ``vector`` (cosine, vectors unit length), best
        first, at most ``k``; the filters (time_from/time_to, session_ids, roles, exclude_ids,
        exclude_sessions; ``any_terms`` must be None) applied inside the search, before the top k, never
        another user's vectors, no cross-user statistics. Hits carry id, session_id, turn, timestamp, role
        and score (the cosine); content ``""`` (as ``query(content=False)``). Messages still awaiting their
        vector are not found. An index without vectors returns []."""
        ...

    def vector_counts(self, user_id: str | None = None) -> VectorCounts:
        """How many of ``user_id``'s messages (or all) have a vector, and how many await one."""
        ...

    def vector_model(self) -> tuple[str, int] | None:
        """The model (name, dimensions) the index's vectors are of, or None before any is recorded."""
        ...

    def standing(self, user_id: str, k: int) -> list[StandingHit]:
        """``user_id``'s messages that state something standing (an instruction, a preference or a fact:
        :func:`refind.standing.read_standing`, read at write time and stored with the message), newest first
        (ties: by session id, then the later turn first), at most ``k``. One query over what was stored, not a scan of the person's
        messages (but for a read-only open of an index written before issue 37, which reads them with the
        rule), with the person's marks applied (:meth:`marks`): a hidden message never, a pinned one always
        (``pinned``, as its pin's kind; sorted among the others by its time)."""
        ...

    def marks(self, user_id: str) -> dict[str, StandingMark]:
        """``user_id``'s marks (:class:`StandingMark`), by message id, as of the last
        :meth:`Writer.set_marks` (also in a reader beside the writer); marks of messages no longer stored
        included."""
        ...


@runtime_checkable
class Writer(Protocol):
    """The write side's calls. ``write`` then ``commit``: durable and visible when ``commit`` returns."""

    def session_states(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], SessionState]:
        """For ``wanted`` (user -> session ids): each stored session's last turn (with content) and whole
        text, by (user, session); sessions not stored are absent. As of the last commit. One call for
        many users: a bulk import asks once per slice."""
        ...

    def existing(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Hit]:
        """For ``wanted`` (user -> message ids): the stored ones, by (user, id), without content."""
        ...

    def session_turns(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], list[Hit]]:
        """For ``wanted`` (user -> session ids): every stored turn with content, in turn order."""
        ...

    def request_marker(self, user_id: str, request_id: str) -> str | None:
        """The payload of a committed request marker, or None."""
        ...

    def write(self, batch: WriteBatch) -> None:
        """Write a batch, not yet durable nor visible."""
        ...

    def commit(self) -> None:
        """Make everything written so far durable and visible."""
        ...

    def delete_user(self, user_id: str) -> int:
        """Delete every message, session document, request marker and mark of ``user_id``, durably; returns
        the messages removed."""
        ...

    def delete_session(self, user_id: str, session_id: str) -> int:
        """Delete one session of ``user_id`` (its messages, session document and info) durably, with
        everything written before; returns the messages removed (0: nothing stored, nothing done)."""
        ...

    def expire(self, cutoff_ms: int) -> Expired:
        """Delete (not yet committed) every message and request marker added before ``cutoff_ms``, for
        all users, and say which sessions lost messages (the caller rewrites their documents, commits)."""
        ...

    def tombstones(self, user_id: str | None = None) -> dict[str, dict[str, int]]:
        """The sessions recorded as deleted (:meth:`add_tombstones`), by user then session id, each with
        the time it was recorded (epoch ms): ``user_id``'s, or every user's. Readable read-only too."""
        ...

    def add_tombstones(self, user_id: str, session_ids: Sequence[str], when: int) -> None:
        """Record ``session_ids`` of ``user_id`` as deleted at ``when`` (epoch ms), durably on return; one
        recorded before takes the new time. Tombstones outlive the messages (:meth:`delete_session`,
        :meth:`delete_user` and retention leave them) until :meth:`remove_tombstones` or a drop."""
        ...

    def remove_tombstones(self, user_id: str, session_ids: Sequence[str] | None = None) -> int:
        """Forget the tombstones of ``session_ids`` of ``user_id`` (None: all of the user's), durably on
        return; returns how many there were."""
        ...

    def set_marks(self, user_id: str, marks: Mapping[str, StandingMark | None]) -> None:
        """Mark ``user_id``'s messages by id (a :class:`StandingMark` replaces the one before; None removes
        it), durably on return, apart from the messages: writes of messages (replacements, the standing pass)
        never change a mark. The caller checks that the messages are the user's."""
        ...

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Up to ``limit`` messages awaiting their vector, oldest write first (a durable queue: what a crash
        left pending is pending after restart), with their content. As of the last commit."""
        ...

    def write_vectors(self, vectors: Sequence[VectorRecord]) -> int:
        """Write vectors (not yet durable nor visible: :meth:`commit` makes them so, as for messages). A
        vector whose token is no longer its message's (the message was replaced or deleted since it was read
        from the queue) is skipped: returns how many were written. Each written message leaves the queue.
        The model must have been recorded (:meth:`use_vector_model`); a vector of other dimensions is an
        :class:`~refind.errors.InvalidInput`."""
        ...

    def use_vector_model(self, name: str, dimensions: int) -> None:
        """Record that this index's vectors are of model ``name`` with ``dimensions``, durably; a no-op when
        it already records that one; an :class:`~refind.errors.IndexFormatError` naming the fix
        (:func:`model_mismatch`) when it records another."""
        ...

    def reset_vectors(self) -> int:
        """Drop every vector and the recorded model, and queue every message again, durably (``refind
        vectors reset``: the vectors are rebuilt, by another model if need be). Returns the messages queued."""
        ...


@runtime_checkable
class Engine(Reader, Writer, Protocol):
    """A store: the reads, the writes and a lifecycle."""

    path: Path | None
    read_only: bool
    location: str
    """Where the data lives, for people: the index directory, ``:memory:``, ``reference://`` or a remote
    location with its credentials left out."""
    shared_writers: bool
    """Whether several processes may open this location and write at once (a remote engine)."""
    commit_slices: bool
    """Whether a bulk import commits each slice as it is written, on the import's writer thread while the
    next slice is resolved: true where a commit is what sends the writes (a remote engine, whose writes
    are buffered until then), false where writes are indexed as they come and a commit is a flush (Lucene:
    every 200,000 messages)."""

    def close(self) -> None:
        """Release the engine (and any lock it holds). Idempotent. Commits nothing: what was written and not
        committed is dropped, never made durable."""
        ...

    def drop(self) -> None:
        """Delete everything this store holds, irreversibly, and close it: a remote engine's indexes, an index
        directory on disk, an in-memory engine's contents (tests and benchmarks)."""
        ...
