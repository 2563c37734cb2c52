"""ReferenceStore: the engine protocol (:mod:`refind.store.base`) in pure Python, in memory.

The design: docs/design.md § "Engines".

What it is for: search, agent and evidence logic tested without Java, and a second engine that keeps the
protocol honest (``tests/test_engine_contract.py`` runs the same suite over it and the Lucene engine). It
never starts a JVM: it imports nothing from :mod:`refind.store.lucene` or :mod:`refind.store._jvm`.

It follows ``io.refind.lucene.Engine`` wherever the protocol leaves a choice open:

- **analysis**: :func:`refind.store.analysis.analyze`, the terms of Lucene's chain;
- **queries**: the analyzed terms as a bag of words (the 64 most frequent distinct terms, ties by first
  occurrence; a term given n times weighs n times), filters before the top ``k``;
- **BM25**: Lucene's ``BM25Similarity`` (``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``, ``tf / (tf + k1 (1 - b +
  b dl / avgdl))`` with its float32 arithmetic and its one-byte length norms), statistics index-wide: N,
  n and the average length over every user's messages, and separately over session documents;
- **order**: equal scores by insertion order (Lucene's doc ids); a replaced message counts as inserted
  when it was replaced; browse by time, then insertion order;
- **visibility**: writes are buffered until :meth:`commit`, which applies them in order (a retention
  sweep's deletes apply to what was written before it, as Lucene's delete-by-query does).

What differs, and why (docs/store.md): statistics count live messages only, where Lucene's also count
replaced or deleted documents until their segment is merged; nothing is durable past the process; there is
no read-only mode (no directory to share).
"""

from __future__ import annotations

import heapq
import math
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path

from refind.config import Settings
from refind.errors import IndexFormatError, InvalidInput, StoreClosed, StoreError
from refind.models import Hit
from refind.standing import Standing
from refind.store._standing import sort_standing, with_marks
from refind.store.analysis import analyze as _analyze
from refind.store.base import (
    Expired,
    Filters,
    PendingVector,
    Record,
    SessionCounts,
    SessionInfo,
    SessionState,
    StandingHit,
    StandingMark,
    VectorCounts,
    VectorRecord,
    WriteBatch,
    content_token,
    model_mismatch,
    query_bag,
)

__all__ = ["ReferenceStore"]

_MAX_TURN = 2**31 - 1
_F32 = struct.Struct("f")


def _f32(x: float) -> float:
    """``x`` rounded to the nearest float32 (Java's ``float``)."""
    return float(_F32.unpack(_F32.pack(x))[0])


def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits = i & 0x07
    shift = (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_NUM_FREE_VALUES = 255 - _long_to_int4(2**31 - 1)


def _int_to_byte4(i: int) -> int:
    """Lucene's ``SmallFloat.intToByte4``: the one-byte norm BM25 stores for a field of ``i`` terms."""
    return i if i < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _long_to_int4(i - _NUM_FREE_VALUES)


def _byte4_to_int(b: int) -> int:
    return b if b < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _int4_to_long(b - _NUM_FREE_VALUES)


_LENGTH_TABLE = [float(_byte4_to_int(i)) for i in range(256)]


@dataclass(slots=True)
class _Doc:
    """One message document: the record, its add time, its analyzed contents."""

    seq: int
    user_id: str
    session_id: str
    id: str
    turn: int
    ts: int
    role: str
    content: str
    speaker: str | None
    time_text: str | None
    added: int
    tf: dict[str, int]
    norm: int  # the length norm byte, as Lucene encodes it
    standing: Standing | None = None  # what the message says that stands (refind.standing)

    def hit(self, score: float = 0.0, content: bool = True) -> Hit:
        if not content:
            return Hit.model_construct(
                id=self.id, session_id=self.session_id, turn=self.turn, timestamp=self.ts, role=self.role,
                speaker=None, content="", score=score, time_text=None,
            )  # fmt: skip
        return Hit.model_construct(
            id=self.id, session_id=self.session_id, turn=self.turn, timestamp=self.ts, role=self.role,
            speaker=self.speaker or None, content=self.content, score=score, time_text=self.time_text,
        )  # fmt: skip


@dataclass(slots=True)
class _SessionDoc:
    seq: int
    text: str
    tf: dict[str, int]
    norm: int


@dataclass(slots=True)
class _Field:
    """One scored field's postings and index-wide statistics (messages' contents, or session texts)."""

    postings: dict[str, set[int]] = field(default_factory=dict)  # term -> seqs (index-wide)
    doc_count: int = 0  # documents with at least one term
    total_terms: int = 0

    def add(self, seq: int, tf: dict[str, int]) -> None:
        if not tf:
            return
        for term in tf:
            self.postings.setdefault(term, set()).add(seq)
        self.doc_count += 1
        self.total_terms += sum(tf.values())

    def remove(self, seq: int, tf: dict[str, int]) -> None:
        if not tf:
            return
        for term in tf:
            seqs = self.postings[term]
            seqs.discard(seq)
            if not seqs:
                del self.postings[term]
        self.doc_count -= 1
        self.total_terms -= sum(tf.values())

    @staticmethod
    @lru_cache(maxsize=64)
    def _norm_cache(k1: float, b: float, avgdl: float) -> list[float]:
        """BM25Similarity's table: 1 / (k1 (1 - b + b dl / avgdl)) for each length norm byte."""
        return [
            _f32(1.0 / _f32(k1 * _f32(_f32(1.0 - b) + _f32(_f32(b * length) / avgdl))))
            for length in _LENGTH_TABLE
        ]

    def scorers(
        self, bag: Sequence[tuple[str, int]], k1: float, b: float
    ) -> list[tuple[str, float, list[float]]]:
        """For each bag term held by some document: (term, weight, 1/norm cache), as BM25Similarity
        computes them (in float32)."""
        if self.doc_count == 0:
            return []
        cache = self._norm_cache(_f32(k1), _f32(b), _f32(self.total_terms / self.doc_count))
        out = []
        for term, boost in bag:
            n = len(self.postings.get(term, ()))
            if n == 0:
                continue
            idf = _f32(math.log(1 + (self.doc_count - n + 0.5) / (n + 0.5)))
            out.append((term, _f32(boost * idf), cache))
        return out


def _score(tf: dict[str, int], norm: int, scorers: Sequence[tuple[str, float, list[float]]]) -> float:
    total = 0.0
    for term, weight, cache in scorers:
        freq = tf.get(term)
        if freq:
            total += _f32(weight - _f32(weight / _f32(1.0 + _f32(freq * cache[norm]))))
    return _f32(total)


def _within(seqs: set[int], mine: dict[int, None]) -> set[int]:
    """The documents of ``seqs`` that are also in ``mine`` (walking the smaller of the two)."""
    if len(seqs) <= len(mine):
        return {s for s in seqs if s in mine}
    return {s for s in mine if s in seqs}


def _norm(tf: dict[str, int]) -> int:
    return _int_to_byte4(sum(tf.values()))


class ReferenceStore:
    """The pure-Python, in-memory engine (the :class:`~refind.store.base.Engine` protocol).

    ``ReferenceStore()`` is empty; ``settings`` gives BM25's ``k1`` and ``b``. Safe to use from many threads
    (one lock). ``refind.Memory("reference://")`` opens one.
    """

    location = "reference://"
    shared_writers = False
    commit_slices = False  # writes are indexed as they come; an import commits every 200,000 messages

    def __init__(self, *, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self.path: Path | None = None
        self.read_only = False
        self._k1 = float(self.settings.bm25_k1)
        self._b = float(self.settings.bm25_b)
        self._lock = threading.RLock()
        self._closed = False
        self._seq = 0
        self._pending: list[Callable[[], None]] = []  # buffered writes, applied in order by commit
        # committed state
        self._docs: dict[int, _Doc] = {}  # seq -> message, in insertion order
        self._by_key: dict[tuple[str, str], list[int]] = {}  # (user, id) -> seqs
        self._by_user: dict[str, dict[int, None]] = {}  # user -> seqs (an ordered set)
        self._standing: dict[str, dict[int, None]] = {}  # user -> seqs of their standing messages
        self._contents = _Field()
        self._sessions: dict[tuple[str, str], _SessionDoc] = {}
        self._session_field = _Field()
        self._session_seqs: dict[int, tuple[str, str]] = {}
        self._markers: dict[tuple[str, str], tuple[str, int]] = {}  # (user, request) -> (payload, added)
        self._infos: dict[
            tuple[str, str], tuple[SessionInfo, int, dict[str, int]]
        ] = {}  # info, seq, title tf
        self._title_field = _Field()
        self._title_seqs: dict[int, tuple[str, str]] = {}
        self._tombstones: dict[str, dict[str, int]] = {}  # user -> session -> when deleted (epoch ms)
        self._marks: dict[str, dict[str, StandingMark]] = {}  # user -> message id -> pinned or hidden
        # vectors (issue 36): by (user, id), with the token of the content they were made from; the queue
        # of messages awaiting theirs, in write order (an ordered set); what was written since the last
        # commit (the token each message will have, None: deleted), for write_vectors' check
        self._vectors: dict[tuple[str, str], tuple[str, tuple[float, ...]]] = {}
        self._queue: dict[tuple[str, str], None] = {}
        self._model: tuple[str, int] | None = None
        self._written: dict[tuple[str, str], str | None] = {}

    # ------------------------------------------------------------------ helpers

    def _check(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _filter(self, f: Filters | None) -> Callable[[_Doc], bool]:
        """A fast predicate for ``f`` (its sets built once)."""
        if f is None:
            return lambda d: True
        lo = int(f.time_from) if f.time_from is not None else None
        hi = int(f.time_to) if f.time_to is not None else None
        sessions = set(f.session_ids) if f.session_ids is not None else None
        roles = {r.lower() for r in f.roles} if f.roles is not None else None
        ex_ids = set(f.exclude_ids) if f.exclude_ids else None
        ex_sessions = set(f.exclude_sessions) if f.exclude_sessions else None
        any_terms = set(f.any_terms) if f.any_terms is not None else None

        def keep(d: _Doc) -> bool:
            return (
                (lo is None or d.ts >= lo)
                and (hi is None or d.ts <= hi)
                and (sessions is None or d.session_id in sessions)
                and (roles is None or d.role in roles)
                and (ex_ids is None or d.id not in ex_ids)
                and (ex_sessions is None or d.session_id not in ex_sessions)
                and (any_terms is None or not any_terms.isdisjoint(d.tf))
            )

        return keep

    def _user_docs(self, user_id: str) -> Iterable[_Doc]:
        return (self._docs[s] for s in self._by_user.get(user_id, ()))

    # ------------------------------------------------------------------ reading

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text`` (see :mod:`refind.store.analysis`)."""
        self._check()
        if not text or not text.strip():
            return []
        return _analyze(text)

    def query(
        self, user_id: str, text: str, k: int = 10, filters: Filters | None = None, *, content: bool = True
    ) -> list[Hit]:
        """BM25 over ``user_id``'s messages, filters before the top ``k`` (ties in insertion order)."""
        self._check()
        if k <= 0 or not text or not text.strip():
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        keep = self._filter(filters)
        with self._lock:
            self._check()
            mine = self._by_user.get(user_id)
            if not mine:
                return []
            scorers = self._contents.scorers(bag, self._k1, self._b)
            candidates: set[int] = set()
            for term, _, _ in scorers:
                candidates |= _within(self._contents.postings[term], mine)
            scored = []
            for seq in candidates:
                d = self._docs[seq]
                if keep(d):
                    scored.append((-_score(d.tf, d.norm, scorers), seq))
            top = heapq.nsmallest(int(k), scored)
            return [self._docs[seq].hit(-neg, content) for neg, seq in top]

    def query_sessions(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over ``user_id``'s session documents (restricted to ``session_ids`` when given)."""
        self._check()
        if k <= 0 or not text or not text.strip():
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        allowed = set(session_ids) if session_ids is not None else None
        with self._lock:
            self._check()
            scorers = self._session_field.scorers(bag, self._k1, self._b)
            candidates: set[int] = set()
            for term, _, _ in scorers:
                candidates |= self._session_field.postings[term]
            scored = []
            for seq in candidates:
                user, sid = self._session_seqs[seq]
                if user != user_id or (allowed is not None and sid not in allowed):
                    continue
                doc = self._sessions[(user, sid)]
                scored.append((-_score(doc.tf, doc.norm, scorers), seq, sid))
            return [(sid, -neg) for neg, _, sid in heapq.nsmallest(int(k), scored)]

    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]:
        """For each ``(session, first turn, last turn)``: the stored turns in range, in turn order."""
        self._check()
        if not spans:
            return []
        with self._lock:
            self._check()
            by_session: dict[str, list[_Doc]] = {}
            wanted = {sid for sid, _, _ in spans}
            for d in self._user_docs(user_id):
                if d.session_id in wanted:
                    by_session.setdefault(d.session_id, []).append(d)
            out = []
            for sid, first, last in spans:
                lo, hi = max(int(first), 0), min(int(last), _MAX_TURN)
                group = [d for d in by_session.get(sid, ()) if lo <= d.turn <= hi] if lo <= hi else []
                group.sort(key=lambda d: d.turn)  # stable: equal turns in insertion order
                out.append([d.hit() for d in group])
            return out

    def browse(
        self, user_id: str, k: int, filters: Filters | None = None, newest_first: bool = True
    ) -> list[Hit]:
        """``user_id``'s messages matching ``filters``, newest (or oldest) first; equal times in insertion
        order."""
        self._check()
        if k <= 0:
            return []
        keep = self._filter(filters)
        sign = -1 if newest_first else 1
        with self._lock:
            self._check()
            chosen = heapq.nsmallest(
                int(k), ((sign * d.ts, d.seq) for d in self._user_docs(user_id) if keep(d))
            )
            return [self._docs[seq].hit() for _, seq in chosen]

    def standing(self, user_id: str, k: int) -> list[StandingHit]:
        """``user_id``'s standing messages (kept apart as they are written: no scan), newest first, ties by
        session id then the later turn first."""
        self._check()
        if k <= 0:
            return []
        with self._lock:
            self._check()
            marks = dict(self._marks.get(user_id, {}))
            found = []
            for seq in self._standing.get(user_id, ()):
                d = self._docs[seq]
                assert d.standing is not None
                found.append(StandingHit.of(d.hit(), d.standing))
        return with_marks(self, user_id, sort_standing(found)[: k + len(marks)], marks, k)

    def marks(self, user_id: str) -> dict[str, StandingMark]:
        self._check()
        with self._lock:
            return dict(self._marks.get(user_id, {}))

    def term_counts(self, user_id: str, text: str) -> dict[str, int]:
        """For each distinct query term (those :meth:`query` uses, in first-occurrence order): how many of
        ``user_id``'s messages hold it."""
        self._check()
        if not text or not text.strip():
            return {}
        terms = _analyze(text)
        kept = {t for t, _ in query_bag(terms)}
        with self._lock:
            self._check()
            mine = self._by_user.get(user_id, {})
            out = {}
            for term in dict.fromkeys(terms):
                if term in kept:
                    out[term] = len(_within(self._contents.postings.get(term, set()), mine))
            return out

    def get(self, user_id: str, ids: Sequence[str]) -> list[Hit]:
        """``user_id``'s messages by id, in insertion order (missing ids are absent)."""
        self._check()
        with self._lock:
            self._check()
            seqs = sorted(s for i in dict.fromkeys(ids) for s in self._by_key.get((user_id, i), ()))
            return [self._docs[s].hit() for s in seqs]

    def count(self, user_id: str | None = None) -> int:
        self._check()
        with self._lock:
            self._check()
            return len(self._docs) if user_id is None else len(self._by_user.get(user_id, ()))

    def users(self) -> list[str]:
        self._check()
        with self._lock:
            self._check()
            return sorted(u for u, seqs in self._by_user.items() if seqs)

    def session_infos(self, user_id: str, session_ids: Sequence[str] | None = None) -> dict[str, SessionInfo]:
        self._check()
        with self._lock:
            self._check()
            if session_ids is None:
                return {sid: i for (u, sid), (i, _, _) in self._infos.items() if u == user_id}
            out = {}
            for sid in session_ids:
                found = self._infos.get((user_id, sid))
                if found is not None:
                    out[sid] = found[0]
            return out

    def query_titles(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over ``user_id``'s session titles (restricted to ``session_ids`` when given)."""
        self._check()
        if k <= 0 or not text or not text.strip():
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        allowed = set(session_ids) if session_ids is not None else None
        with self._lock:
            self._check()
            scorers = self._title_field.scorers(bag, self._k1, self._b)
            candidates: set[int] = set()
            for term, _, _ in scorers:
                candidates |= self._title_field.postings[term]
            scored = []
            for seq in candidates:
                user, sid = self._title_seqs[seq]
                if user != user_id or (allowed is not None and sid not in allowed):
                    continue
                tf = self._infos[(user, sid)][2]
                scored.append((-_score(tf, _norm(tf), scorers), seq, sid))
            return [(sid, -neg) for neg, _, sid in heapq.nsmallest(int(k), scored)]

    def session_summaries(self, user_id: str) -> list[SessionCounts]:
        self._check()
        with self._lock:
            self._check()
            acc: dict[str, list[int]] = {}
            for d in self._user_docs(user_id):
                a = acc.get(d.session_id)
                if a is None:
                    acc[d.session_id] = [1, d.ts, d.ts]
                else:
                    a[0] += 1
                    a[1] = min(a[1], d.ts)
                    a[2] = max(a[2], d.ts)
            return [SessionCounts(sid, n, lo, hi) for sid, (n, lo, hi) in acc.items()]

    # ------------------------------------------------------------------ writing

    def _session_states(self, user_id: str, session_ids: Sequence[str]) -> dict[str, SessionState]:
        """Each stored session's last turn (the first stored at the highest turn) and whole text, as of the
        last commit. Holds the lock."""
        wanted = set(session_ids)
        tails: dict[str, _Doc] = {}
        for d in self._user_docs(user_id):
            if d.session_id in wanted:
                best = tails.get(d.session_id)
                if best is None or d.turn > best.turn:
                    tails[d.session_id] = d
        states = {}
        for sid in dict.fromkeys(session_ids):
            tail = tails.get(sid)
            doc = self._sessions.get((user_id, sid))
            if tail is not None or doc is not None:
                states[sid] = SessionState(
                    tail=tail.hit() if tail is not None else None, text=doc.text if doc else None
                )
        return states

    def session_states(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], SessionState]:
        self._check()
        with self._lock:
            self._check()
            return {
                (user, sid): state
                for user, sids in wanted.items()
                if sids
                for sid, state in self._session_states(user, sids).items()
            }

    def existing(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Hit]:
        self._check()
        out: dict[tuple[str, str], Hit] = {}
        for user, ids in wanted.items():
            for h in self.get(user, list(ids)):
                out[(user, h.id)] = h.model_copy(update={"content": "", "speaker": None, "time_text": None})
        return out

    def session_turns(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], list[Hit]]:
        self._check()
        out: dict[tuple[str, str], list[Hit]] = {}
        for user, sids in wanted.items():
            sids = list(dict.fromkeys(sids))
            for sid, turns in zip(
                sids, self.windows(user, [(sid, 0, 2**31 - 1) for sid in sids]), strict=True
            ):
                if turns:
                    out[(user, sid)] = turns
        return out

    def refresh(self) -> None:
        """Reads are always current (one process, in memory)."""
        self._check()

    def request_marker(self, user_id: str, request_id: str) -> str | None:
        self._check()
        with self._lock:
            self._check()
            found = self._markers.get((user_id, request_id))
            return found[0] if found is not None else None

    def write(self, batch: WriteBatch) -> None:
        """Buffer a batch (analyzed now, applied by :meth:`commit`)."""
        self._check()
        added = int(time.time() * 1000)  # one ingestion time for the batch and its marker
        ops: list[Callable[[], None]] = [
            partial(self._apply_record, r, added, Counter(_analyze(r.content))) for r in batch.records
        ]
        for s in batch.sessions:
            tf = Counter(_analyze(s.text)) if s.text is not None else None
            ops.append(partial(self._apply_session, s.user_id, s.session_id, s.text, tf))
        for info in batch.infos:
            ops.append(partial(self._apply_info, info, Counter(_analyze(info.title or ""))))
        if batch.marker is not None:
            m = batch.marker
            ops.append(partial(self._apply_marker, m.user_id, m.request_id, m.payload, added))
        with self._lock:
            self._check()
            self._pending.extend(ops)
            for r in batch.records:
                self._written[(r.user_id, r.id)] = content_token(r.content)

    def commit(self) -> None:
        """Apply everything written so far, in order: visible to the next read."""
        self._check()
        with self._lock:
            self._check()
            pending, self._pending = self._pending, []
            self._written.clear()
            for apply in pending:
                apply()

    def delete_user(self, user_id: str) -> int:
        """Delete every message, session document, request marker and mark of ``user_id`` (with everything
        written before, committed); returns the messages removed."""
        self._check()
        with self._lock:
            self._check()
            before = len(self._by_user.get(user_id, ()))
            self._pending.append(partial(self._apply_delete_user, user_id))
            self.commit()
            return before

    def delete_session(self, user_id: str, session_id: str) -> int:
        """Delete one session's messages, document and info (with everything written before, committed);
        returns the messages removed."""
        self._check()
        with self._lock:
            self._check()
            before = sum(1 for d in self._user_docs(user_id) if d.session_id == session_id)
            self._pending.append(partial(self._apply_delete_session, user_id, session_id))
            self.commit()
            return before

    def expire(self, cutoff_ms: int) -> Expired:
        """Retention (applied at the next commit): messages and request markers added before
        ``cutoff_ms``; says which sessions lose messages, with their remaining turns (as committed)."""
        self._check()
        cutoff = int(cutoff_ms)
        with self._lock:
            self._check()
            old = [d for d in self._docs.values() if d.added < cutoff]
            affected = dict.fromkeys((d.user_id, d.session_id) for d in old)
            sessions = []
            for user, sid in affected:
                left = [d for d in self._user_docs(user) if d.session_id == sid and d.added >= cutoff]
                left.sort(key=lambda d: d.turn)
                sessions.append((user, sid, [d.content for d in left]))
            self._pending.append(partial(self._apply_expire, cutoff))
            for d in old:
                self._written[(d.user_id, d.id)] = None
            return Expired(removed=len(old), sessions=sessions)

    def tombstones(self, user_id: str | None = None) -> dict[str, dict[str, int]]:
        self._check()
        with self._lock:
            users = [user_id] if user_id is not None else sorted(self._tombstones)
            return {u: dict(self._tombstones[u]) for u in users if self._tombstones.get(u)}

    def add_tombstones(self, user_id: str, session_ids: Sequence[str], when: int) -> None:
        self._check()
        with self._lock:
            self._check()
            if session_ids:
                self._tombstones.setdefault(user_id, {}).update(dict.fromkeys(session_ids, int(when)))

    def remove_tombstones(self, user_id: str, session_ids: Sequence[str] | None = None) -> int:
        self._check()
        with self._lock:
            self._check()
            mine = self._tombstones.get(user_id, {})
            gone = list(mine) if session_ids is None else [s for s in dict.fromkeys(session_ids) if s in mine]
            for sid in gone:
                del mine[sid]
            if not mine:
                self._tombstones.pop(user_id, None)
            return len(gone)

    def set_marks(self, user_id: str, marks: Mapping[str, StandingMark | None]) -> None:
        self._check()
        with self._lock:
            self._check()
            mine = self._marks.setdefault(user_id, {})
            for mid, mark in marks.items():
                if mark is None:
                    mine.pop(mid, None)
                else:
                    mine[mid] = mark
            if not mine:
                del self._marks[user_id]

    # ------------------------------------------------------------------ vectors (issue 36)

    def knn(self, user_id: str, vector: Sequence[float], k: int, filters: Filters | None = None) -> list[Hit]:
        """Exact cosine (the dot product of unit vectors) over ``user_id``'s vectors within ``filters``,
        best first; equal scores in insertion order."""
        self._check()
        if filters is not None and filters.any_terms is not None:
            raise InvalidInput("knn: any_terms is not a filter of a vector search", field="any_terms")
        if k <= 0:
            return []
        query = [float(x) for x in vector]
        keep = self._filter(filters)
        with self._lock:
            self._check()
            if self._model is not None and len(query) != self._model[1]:
                raise InvalidInput(
                    f"knn: a vector of {len(query)} dimensions; this index's vectors have {self._model[1]}",
                    field="vector",
                )
            scored = []
            for d in self._user_docs(user_id):
                found = self._vectors.get((user_id, d.id))
                if found is None or not keep(d):
                    continue
                score = _f32(sum(a * b for a, b in zip(found[1], query, strict=True)))
                scored.append((-score, d.seq))
            return [self._docs[seq].hit(-neg, False) for neg, seq in heapq.nsmallest(int(k), scored)]

    def vector_counts(self, user_id: str | None = None) -> VectorCounts:
        self._check()
        with self._lock:
            if user_id is None:
                return VectorCounts(len(self._vectors), len(self._queue))
            return VectorCounts(
                sum(1 for u, _ in self._vectors if u == user_id),
                sum(1 for u, _ in self._queue if u == user_id),
            )

    def vector_model(self) -> tuple[str, int] | None:
        self._check()
        return self._model

    def use_vector_model(self, name: str, dimensions: int) -> None:
        self._check()
        with self._lock:
            if self._model is not None and self._model != (name, int(dimensions)):
                raise IndexFormatError(model_mismatch(self.location, self._model, (name, int(dimensions))))
            self._model = (name, int(dimensions))

    def reset_vectors(self) -> int:
        self._check()
        with self._lock:
            self.commit()
            self._vectors.clear()
            self._model = None
            self._queue = {(d.user_id, d.id): None for d in self._docs.values()}
            return len(self._queue)

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        self._check()
        out: list[PendingVector] = []
        if limit <= 0:
            return out
        with self._lock:
            for user, mid in self._queue:
                seqs = self._by_key.get((user, mid))
                if not seqs:
                    continue
                content = self._docs[seqs[-1]].content
                out.append(PendingVector(user, mid, content_token(content), content))
                if len(out) >= limit:
                    break
        return out

    def write_vectors(self, vectors: Sequence[VectorRecord]) -> int:
        """Buffer the vectors whose token is still their message's (as written so far); applied by
        :meth:`commit`, where the check is made again in order."""
        self._check()
        with self._lock:
            self._check()
            if self._model is None:
                raise StoreError("no vector model recorded for this index: call use_vector_model first")
            dims = self._model[1]
            written = 0
            for v in vectors:
                if len(v.vector) != dims:
                    raise InvalidInput(
                        f"vector of {v.user_id!r}/{v.id!r}: {len(v.vector)} dimensions, the model has {dims}",
                        field="vector",
                    )
                key = (v.user_id, v.id)
                if key in self._written:
                    current = self._written[key]
                else:
                    seqs = self._by_key.get(key)
                    current = content_token(self._docs[seqs[-1]].content) if seqs else None
                if current != v.token:
                    continue
                self._pending.append(partial(self._apply_vector, key, v.token, tuple(map(float, v.vector))))
                written += 1
            return written

    def _apply_vector(self, key: tuple[str, str], token: str, vector: tuple[float, ...]) -> None:
        seqs = self._by_key.get(key)
        if not seqs or content_token(self._docs[seqs[-1]].content) != token:
            return  # replaced or deleted in between (cannot happen: write_vectors checked in order)
        self._vectors[key] = (token, vector)
        self._queue.pop(key, None)

    # ------------------------------------------------------------------ applying writes (lock held)

    def _remove_doc(self, seq: int) -> None:
        d = self._docs.pop(seq)
        self._vectors.pop((d.user_id, d.id), None)
        self._queue.pop((d.user_id, d.id), None)
        self._contents.remove(seq, d.tf)
        seqs = self._by_key[(d.user_id, d.id)]
        seqs.remove(seq)
        if not seqs:
            del self._by_key[(d.user_id, d.id)]
        mine = self._by_user[d.user_id]
        del mine[seq]
        if not mine:
            del self._by_user[d.user_id]
        if d.standing is not None:
            stands = self._standing[d.user_id]
            del stands[seq]
            if not stands:
                del self._standing[d.user_id]

    def _apply_record(self, r: Record, added: int, tf: dict[str, int]) -> None:
        key = (r.user_id, r.id)
        kept = self._vectors.get(key) if r.replace else None
        if kept is not None and kept[0] != content_token(r.content):
            kept = None  # new content: a new vector
        if r.replace:
            for old in list(self._by_key.get(key, ())):
                self._remove_doc(old)
        if kept is not None:
            self._vectors[key] = kept
        else:
            self._queue[key] = None  # at the end: the newest write
        seq = self._next_seq()
        self._docs[seq] = _Doc(
            seq, r.user_id, r.session_id, r.id, int(r.turn), int(r.timestamp), r.role, r.content,
            r.speaker, r.time_text, added, dict(tf), _norm(tf), r.standing,
        )  # fmt: skip
        if r.standing is not None:
            self._standing.setdefault(r.user_id, {})[seq] = None
        self._contents.add(seq, tf)
        self._by_key.setdefault(key, []).append(seq)
        self._by_user.setdefault(r.user_id, {})[seq] = None

    def _apply_session(
        self, user_id: str, session_id: str, text: str | None, tf: dict[str, int] | None
    ) -> None:
        key = (user_id, session_id)
        old = self._sessions.pop(key, None)
        if old is not None:
            self._session_field.remove(old.seq, old.tf)
            del self._session_seqs[old.seq]
        if text is None or tf is None:
            self._drop_info(key)  # the session is gone, and its info with it
            return
        seq = self._next_seq()
        self._sessions[key] = _SessionDoc(seq, text, dict(tf), _norm(tf))
        self._session_field.add(seq, tf)
        self._session_seqs[seq] = key

    def _drop_info(self, key: tuple[str, str]) -> None:
        old = self._infos.pop(key, None)
        if old is not None:
            self._title_field.remove(old[1], old[2])
            del self._title_seqs[old[1]]

    def _apply_info(self, info: SessionInfo, tf: dict[str, int]) -> None:
        key = (info.user_id, info.session_id)
        self._drop_info(key)
        seq = self._next_seq()
        self._infos[key] = (info, seq, dict(tf))
        self._title_field.add(seq, tf)
        self._title_seqs[seq] = key

    def _apply_delete_session(self, user_id: str, session_id: str) -> None:
        for seq in [s for s in self._by_user.get(user_id, ()) if self._docs[s].session_id == session_id]:
            self._remove_doc(seq)
        self._apply_session(user_id, session_id, None, None)

    def _apply_marker(self, user_id: str, request_id: str, payload: str, added: int) -> None:
        self._markers[(user_id, request_id)] = (payload, added)

    def _apply_expire(self, cutoff: int) -> None:
        for seq in [s for s, d in self._docs.items() if d.added < cutoff]:
            self._remove_doc(seq)
        for key in [k for k, (_, added) in self._markers.items() if added < cutoff]:
            del self._markers[key]

    def _apply_delete_user(self, user_id: str) -> None:
        for seq in list(self._by_user.get(user_id, ())):
            self._remove_doc(seq)
        for key in [k for k in self._sessions if k[0] == user_id]:
            self._apply_session(key[0], key[1], None, None)
        for key in [k for k in self._markers if k[0] == user_id]:
            del self._markers[key]
        for key in [k for k in self._infos if k[0] == user_id]:
            self._drop_info(key)
        self._marks.pop(user_id, None)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Drop everything (nothing outlives the process). Safe to call twice."""
        with self._lock:
            self._closed = True
            self._pending = []

    def drop(self) -> None:
        """Delete everything and close (the same as :meth:`close`: nothing outlives the process)."""
        self.close()

    def __enter__(self) -> ReferenceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ReferenceStore({self.location!r}, {self.count() if not self._closed else 'closed'} messages)"
