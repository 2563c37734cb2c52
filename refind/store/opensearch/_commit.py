"""The multi-writer commit protocol: the write buffer, request claims, compare-and-set session documents,
the undo of a commit that failed halfway, and deletions.

Writes are buffered by :meth:`Commits.write` and sent by :meth:`Commits.commit`, so nothing is visible (or
durable) before the commit, and a process that dies before it leaves nothing behind. A commit:

1. writes the session documents, each with a compare-and-set on the version this process read
   (``if_seq_no``/``if_primary_term``; ``op_type=create`` for a new session): another worker's add to the
   same session in between makes the write fail for that session only (:class:`~refind.store.base.WriteRaced`),
   and the write path resolves that add again, so two workers never give two messages the same auto turn id;
2. writes the messages (``refresh=wait_for``: visible when the commit returns; translog durability
   ``request``: fsynced on every in-sync copy before the cluster acknowledges);
3. marks the batches' request markers done. A marker is *claimed* by :meth:`Commits.write`, before anything
   is written, with ``op_type=create`` on a deterministic id: of two workers given the same request id, one
   writes; the other waits for the first to finish and reports it applied
   (:class:`~refind.store.base.AlreadyApplied`), or :class:`~refind.store.base.RequestTaken` when the stored
   marker's payload differs (another body: the write path's conflict). Payloads are compared as they are,
   never read. A claim left by a writer that died is taken over after ``stale_after`` seconds.

A commit that fails after its session documents undoes itself (:meth:`Commits._undo`): it deletes the
messages it wrote under new ids and puts back the session documents it replaced, each only while it still
holds this commit's write; and its claims are released so a retry can write.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from refind.errors import StoreError
from refind.store.base import (
    AlreadyApplied,
    Expired,
    Record,
    RequestTaken,
    SessionDoc,
    SessionState,
    StandingMark,
    WriteBatch,
    WriteRaced,
    standing_dict,
)
from refind.store.opensearch._reads import Reads, hits, user_term
from refind.store.opensearch._schema import doc_id, hit_raw, raw
from refind.store.opensearch._transport import BULK_CHUNK, PAGE, Action, Transport
from refind.store.opensearch._vectors import Vectors

__all__ = ["Commits"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Claim:
    """A request marker this process created (pending until its commit marks it done)."""

    user_id: str
    request_id: str
    doc_id: str
    seq_no: int
    primary_term: int


@dataclass(slots=True)
class _Pending:
    """Buffered writes, in order: batches with their claims, and retention sweeps (cutoffs)."""

    ops: list[tuple[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Read:
    """A session document as this process last read it: the base of the compare-and-set of its next write."""

    seq_no: int | None  # None: absent when read
    primary_term: int | None
    tail: str | None  # the stored tail (raw JSON) or None
    text: str | None = None  # the stored text (to put back if the commit that replaced it fails)


_SPENT = _Read(None, None, None)
"""The read of a session a commit compared and set against, and did not write (it raced, or was undone):
a write of the session resolved from it meanwhile (this process's pending add) is raced too."""


class Commits:
    """The write side of one prefix's indexes: buffer, claims, commits, undo, deletions. Thread-safe."""

    def __init__(
        self, transport: Transport, reads: Reads, index: Mapping[str, str], stale_after: float
    ) -> None:
        self.t = transport
        self.reads = reads
        self.index = index
        self.stale_after = float(stale_after)
        self._lock = threading.RLock()  # the buffer and the read cache
        self._commit_lock = threading.Lock()
        self._pending = _Pending()
        self._reads: dict[tuple[str, str], _Read] = {}
        self._checked: set[tuple[str, str]] = set()  # request ids request_marker found unused
        self._seq = 0
        self._token = secrets.token_hex(8)
        self.vectors: Vectors | None = None  # set by the store: the vector index (queue entries, vectors)

    def buffer_vectors(self, actions: list[Action]) -> None:
        """Vector writes (:meth:`Vectors.write`), sent by the next commit after what was written before."""
        with self._lock:
            self.t.check()
            if actions:
                self._pending.ops.append(("vectors", actions))

    def unsettled(self) -> set[tuple[str, str]]:
        """The (user, id) of the messages written and not yet committed, and of every message when a
        retention sweep is buffered (which ones it takes is known only when it runs)."""
        with self._lock:
            out: set[tuple[str, str]] = set()
            for kind, value in self._pending.ops:
                if kind == "batch":
                    out.update((r.user_id, r.id) for r in value[0].records)
            return out

    def retention_pending(self) -> bool:
        with self._lock:
            return any(kind == "expire" for kind, _ in self._pending.ops)

    def _next_seq(self) -> int:
        """Insertion order: microseconds since the epoch, strictly increasing in this process."""
        with self._lock:
            self._seq = max(self._seq + 1, time.time_ns() // 1000)
            return self._seq

    # ------------------------------------------------------------------ the write side's reads

    def session_states(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], SessionState]:
        """Each stored session's last turn and whole text, from its session document (read in real time:
        the base of the compare-and-set of this process's next write of it), or from its messages when it
        has no document or the document holds no tail."""
        self.t.check()
        keys = [(u, s) for u, sids in wanted.items() for s in dict.fromkeys(sids)]
        if not keys:
            return {}
        docs = self.reads.mget(
            "sessions", [(u, doc_id(u, s)) for u, s in keys], ["user_id", "session_id", "contents", "tail"]
        )
        by_key = {(d["_source"]["user_id"], d["_source"]["session_id"]): d for d in docs}
        reads: dict[tuple[str, str], _Read] = {}
        out: dict[tuple[str, str], SessionState] = {}
        missing_tail: dict[str, list[str]] = {}
        for key in keys:
            d = by_key.get(key)
            if d is None:
                reads[key] = _Read(None, None, None)
                missing_tail.setdefault(key[0], []).append(key[1])
                continue
            src = d["_source"]
            reads[key] = _Read(
                int(d["_seq_no"]), int(d["_primary_term"]), src.get("tail"), src.get("contents")
            )
            tail = hit_raw(src["tail"]) if src.get("tail") else None
            out[key] = SessionState(tail=tail, text=src.get("contents"))
            if tail is None:
                missing_tail.setdefault(key[0], []).append(key[1])
        for (user, sid), tail in self.reads.tails(missing_tail).items() if missing_tail else ():
            prior = out.get((user, sid))
            out[(user, sid)] = SessionState(tail=tail, text=prior.text if prior else None)
        with self._lock:
            self._reads.update(reads)
        return {k: out[k] for k in keys if k in out}

    def request_marker(self, user_id: str, request_id: str) -> str | None:
        """The payload of a committed (done) marker, else None: a marker another writer claimed and has not
        committed yet is not one (the claim in :meth:`write` then waits for that writer)."""
        self.t.check()
        doc = self.reads.marker(user_id, request_id)
        if doc is None or doc["_source"]["state"] != "done":
            with self._lock:
                self._checked.add((user_id, request_id))
                if len(self._checked) > 100_000:
                    self._checked.clear()
            return None
        with self._lock:
            self._checked.discard((user_id, request_id))
        return str(doc["_source"]["payload"])

    def _stale(self, src: Mapping[str, Any]) -> bool:
        return time.time() * 1000 - float(src.get("claimed", 0)) > self.stale_after * 1000

    # ------------------------------------------------------------------ writing

    def write(self, batch: WriteBatch) -> None:
        """Buffer ``batch`` for the next commit; claim its request marker now (see the module docstring)."""
        claim = (
            self._claim(batch.marker.user_id, batch.marker.request_id, batch.marker.payload)
            if batch.marker
            else None
        )
        with self._lock:
            self.t.check()
            self._pending.ops.append(("batch", (batch, claim)))

    def _claim(self, user_id: str, request_id: str, payload: str) -> _Claim:
        from opensearchpy.exceptions import ConflictError

        did = doc_id(user_id, request_id)
        index = self.index["requests"]
        deadline = time.monotonic() + self.stale_after + 5
        with (
            self._lock
        ):  # whether this process found the id unused: then a marker now there is another writer's
            checked = (user_id, request_id) in self._checked
            self._checked.discard((user_id, request_id))
        while True:
            now = int(time.time() * 1000)
            body = {
                "user_id": user_id, "request_id": request_id, "payload": payload, "state": "pending",
                "owner": self._token, "claimed": now, "added": now,
            }  # fmt: skip
            try:
                got = self.t.call(
                    "request claim",
                    partial(
                        self.t.client.index, index=index, id=did, routing=user_id, body=body,
                        op_type="create", refresh="false",
                    ),
                )  # fmt: skip
                return _Claim(user_id, request_id, did, int(got["_seq_no"]), int(got["_primary_term"]))
            except ConflictError:
                pass
            doc = self.reads.marker(user_id, request_id)
            if doc is None:
                continue  # released meanwhile: claim again
            src = doc["_source"]
            if src.get("owner") == self._token and src["state"] == "pending" and src.get("claimed") == now:
                return _Claim(user_id, request_id, did, int(doc["_seq_no"]), int(doc["_primary_term"]))
            replace = not checked and src["state"] == "done"  # a plain write over a committed marker
            if not replace and src["payload"] != payload:
                raise RequestTaken(request_id)
            if src["state"] == "done" and not replace:
                raise AlreadyApplied(request_id)
            if replace or self._stale(src) or time.monotonic() > deadline:  # its writer died: take it over
                try:
                    got = self.t.call(
                        "request claim",
                        partial(
                            self.t.client.index,
                            index=index, id=did, routing=user_id, body=body, refresh="false",
                            if_seq_no=doc["_seq_no"], if_primary_term=doc["_primary_term"],
                        ),
                    )  # fmt: skip
                    if not replace:
                        log.warning(
                            "took over request %r of user %r, abandoned by its writer", request_id, user_id
                        )
                    return _Claim(user_id, request_id, did, int(got["_seq_no"]), int(got["_primary_term"]))
                except ConflictError:
                    continue
            time.sleep(0.05)

    def expire(self, cutoff_ms: int) -> Expired:
        """Retention (applied at the next commit): messages and markers added before ``cutoff_ms``."""
        cutoff = int(cutoff_ms)
        old = {"range": {"added": {"lt": cutoff}}}
        removed = 0
        affected: dict[tuple[str, str], None] = {}
        for h in self.reads.scan(
            "messages", {"bool": {"filter": [old]}}, None, _source=["user_id", "session_id"]
        ):
            removed += 1
            affected[(h["_source"]["user_id"], h["_source"]["session_id"])] = None
        sessions = []
        for user, sid in affected:
            query = {"bool": {"filter": [user_term(user), {"term": {"session_id": sid}}], "must_not": [old]}}
            left = hits(list(self.reads.scan("messages", query, user, _source=["raw"])), False, True)
            left.sort(key=lambda h: h.turn)
            sessions.append((user, sid, [h.content for h in left]))
        with self._lock:
            self._pending.ops.append(("expire", cutoff))
        return Expired(removed=removed, sessions=sessions)

    def commit(self) -> None:
        """Send everything written so far (see the module docstring); durable and visible on return."""
        with self._commit_lock:
            self._send_sealed(self._take())

    def seal(self) -> Callable[[], None]:
        """Take everything written so far; the function returned sends exactly that, as :meth:`commit`
        would have (what is written after the seal waits for the next commit)."""
        return partial(self._send_sealed_locked, self._take())

    def _take(self) -> list[tuple[str, Any]]:
        with self._lock:
            ops, self._pending.ops = self._pending.ops, []
            return ops

    def _send_sealed_locked(self, ops: list[tuple[str, Any]]) -> None:
        with self._commit_lock:
            self._send_sealed(ops)

    def _send_sealed(self, ops: list[tuple[str, Any]]) -> None:
        if not ops:
            return
        claims = [c for kind, v in ops if kind == "batch" for c in [v[1]] if c is not None]
        try:
            self._send(ops)
        except BaseException:
            self._release(claims)
            raise

    def _send(self, ops: list[tuple[str, Any]]) -> None:
        run: list[tuple[WriteBatch, _Claim | None]] = []
        for kind, value in ops:
            if kind == "expire":
                self._send_batches(run)
                run = []
                self._expire_now(int(value))
            elif kind == "vectors":
                self._send_batches(run)
                run = []
                assert self.vectors is not None
                self.vectors.send_vectors(value, "wait_for")
            else:
                run.append(value)
        self._send_batches(run)

    def _send_batches(self, run: list[tuple[WriteBatch, _Claim | None]]) -> None:
        if not run:
            return
        token = secrets.token_hex(8)
        # the session documents: the last written for each session wins; those whose batches carry messages
        # are written with a compare-and-set on the version this process read, and a new tail
        docs: dict[tuple[str, str], SessionDoc] = {}
        tails: dict[tuple[str, str], str | None] = {}
        unread: set[tuple[str, str]] = set()  # sessions resolved from a spent read: raced
        with self._lock:
            reads = dict(self._reads)
        for batch, _ in run:
            by_session: dict[tuple[str, str], list[Record]] = {}
            for r in batch.records:
                by_session.setdefault((r.user_id, r.session_id), []).append(r)
            for s in batch.sessions:
                key = (s.user_id, s.session_id)
                docs[key] = s
                records = by_session.get(key)
                if not records or s.text is None:  # tail: from the messages
                    tails[key] = None
                    continue
                if key not in reads:  # never read: a plain write
                    tails[key] = None
                    continue
                if reads[key] is _SPENT:
                    # resolved from an add of this process that a commit did not write (it raced, or failed
                    # and was undone): its turns may be another writer's now, and a plain write would
                    # overwrite that writer's messages (the same ids). Raced: resolved again
                    unread.add(key)
                    continue
                prior = tails.get(key, reads[key].tail)
                last = max(records, key=lambda r: r.turn)
                if prior is None or last.turn >= int(json.loads(prior)["turn"]):
                    prior = raw(last)
                tails[key] = prior
        actions: list[Action] = []
        cas: dict[int, tuple[str, str]] = {}
        for key, s in docs.items():
            if key in unread:
                continue
            user, sid = key
            meta: dict[str, Any] = {
                "_index": self.index["sessions"],
                "_id": doc_id(user, sid),
                "routing": user,
            }
            if s.text is None:  # the session is gone, and its info with it
                actions.append(({"delete": meta}, None))
                actions.append(({"delete": {**meta, "_index": self.index["infos"]}}, None))
                continue
            body: dict[str, Any] = {
                "user_id": user,
                "session_id": sid,
                "seq": self._next_seq(),
                "contents": s.text,
                "w": token,
            }
            if tails.get(key) is not None:
                body["tail"] = tails[key]
                read = reads.get(key)
                if read is not None:
                    cas[len(actions)] = key
                    if read.seq_no is None:
                        actions.append(({"create": meta}, body))
                        continue
                    meta = {**meta, "if_seq_no": read.seq_no, "if_primary_term": read.primary_term}
            actions.append(({"index": meta}, body))
        raced: set[tuple[str, str]] = set(unread)
        undo: list[
            tuple[tuple[str, str], int, int, _Read]
        ] = []  # CAS'd session documents: (key, seq, term, read)
        with self._lock:
            for key in docs:  # the next write of it reads it again, or is resolved from this one (below)
                if key in cas.values():
                    self._reads[key] = _SPENT
                else:
                    self._reads.pop(key, None)
        # a commit of more messages than one bulk request holds (an import's slice) sends everything
        # without waiting for refreshes, then refreshes the two indexes once (_send_messages)
        big = sum(len(batch.records) for batch, _ in run) > BULK_CHUNK
        if actions:
            results = self.t.bulk(actions, "false" if big else "wait_for")
            for i, (status, item) in enumerate(results):
                if status == 409 and i in cas:
                    if not self._written_by(cas[i], token):
                        raced.add(cas[i])
                elif status >= 300 and not (status == 404 and "delete" in actions[i][0]):
                    raise StoreError(f"OpenSearch at {self.t.location} refused a session document: {item}")
                elif i in cas and status < 300 and "_seq_no" in item:
                    key, seq_no, term = cas[i], int(item["_seq_no"]), int(item["_primary_term"])
                    undo.append((key, seq_no, term, reads[key]))
                    # the base of the next write of this session by this process, which may already be
                    # resolved from this one (written while this commit ran): a compare-and-set on it
                    sent = actions[i][1]
                    assert sent is not None
                    with self._lock:
                        self._reads[key] = _Read(seq_no, term, sent.get("tail"), sent.get("contents"))
        try:
            self._send_messages(run, raced, big)
        except WriteRaced:  # everything but the raced sessions was written, and stays
            raise
        except BaseException:
            self._undo(run, raced, undo)
            raise

    def _send_messages(
        self, run: list[tuple[WriteBatch, _Claim | None]], raced: set[tuple[str, str]], big: bool
    ) -> None:
        # the messages (not those of raced sessions), then the markers of the batches fully written
        writes: list[Action] = []
        added = int(time.time() * 1000)
        for batch, _ in run:
            for r in batch.records:
                if (r.user_id, r.session_id) in raced:
                    continue
                did = doc_id(r.user_id, r.id)
                meta = {"_index": self.index["messages"], "_id": did, "routing": r.user_id}
                doc = {
                    "user_id": r.user_id, "session_id": r.session_id, "id": r.id, "mid": did,
                    "role": r.role, "turn": int(r.turn), "ts": int(r.timestamp), "added": added,
                    "seq": self._next_seq(), "contents": r.content, "raw": raw(r),
                }  # fmt: skip
                if r.standing is not None:
                    doc["standing"] = r.standing.kind
                    doc["standing_raw"] = json.dumps(standing_dict(r.standing), ensure_ascii=False)
                writes.append(({"index": meta}, doc))
            for info in batch.infos:
                if (info.user_id, info.session_id) in raced:
                    continue
                text = json.dumps(
                    [info.session_id, info.title, info.source, info.project], ensure_ascii=False
                )
                where = {
                    "_index": self.index["infos"], "_id": doc_id(info.user_id, info.session_id),
                    "routing": info.user_id,
                }  # fmt: skip
                body: dict[str, Any] = {
                    "user_id": info.user_id, "session_id": info.session_id, "seq": self._next_seq(),
                    "source": info.source, "project": info.project, "raw": text,
                }  # fmt: skip
                if info.title is not None:
                    body["title"] = info.title
                writes.append(({"index": where}, body))
        if self.vectors is not None and not self.vectors.missing:
            # the messages' vector documents first (their queue entries): a crash before the messages land
            # leaves at worst an entry whose message never did, never a message without one
            queued = self.vectors.queue_actions(
                [r for batch, _ in run for r in batch.records if (r.user_id, r.session_id) not in raced],
                added,
                self._next_seq,
            )
            for status, item in self.t.bulk(queued, "false" if big else "wait_for") if queued else []:
                if status >= 300:
                    raise StoreError(f"OpenSearch at {self.t.location} refused a vector queue entry: {item}")
        if writes:
            # one request: it waits for the refresh that makes it searchable (and the session documents
            # sent before it). More (``big``: a bulk import's slice): they go two at a time without waiting
            # for refreshes, then one refresh of both indexes makes everything searchable. Durable either
            # way: each request is fsynced (translog durability "request") before the cluster answers
            results = self.t.bulk(writes, "false" if big else "wait_for", parallel=2 if big else 1)
            for status, item in results:
                if status >= 300:
                    raise StoreError(f"OpenSearch at {self.t.location} refused a message: {item}")
        if big:
            self.t.refresh(
                f"{self.index['messages']},{self.index['sessions']},{self.index['infos']},{self.index['vectors']}"
            )
        done: list[Action] = []
        dropped: list[_Claim] = []
        for batch, claim in run:
            if claim is None:
                continue
            keys = {(r.user_id, r.session_id) for r in batch.records} | {
                (s.user_id, s.session_id) for s in batch.sessions
            }
            if keys & raced:
                dropped.append(claim)
                continue
            meta = {"_index": self.index["requests"], "_id": claim.doc_id, "routing": claim.user_id}
            done.append(({"update": meta}, {"doc": {"state": "done", "added": added}}))
        if done:
            for status, item in self.t.bulk(done, "false"):
                if status >= 300:
                    raise StoreError(f"OpenSearch at {self.t.location} could not record a request id: {item}")
        if raced:
            self._release(dropped)
            raise WriteRaced(
                f"another writer changed session(s) {sorted(raced)} meanwhile; their adds were not written",
                frozenset(raced),
            )

    def _undo(
        self,
        run: list[tuple[WriteBatch, _Claim | None]],
        raced: set[tuple[str, str]],
        sessions: list[tuple[tuple[str, str], int, int, _Read]],
    ) -> None:
        """After a commit failed past its session documents: delete the messages it wrote under new ids and
        put back the session documents it replaced (each only while it still holds this commit's write),
        so a retry of the add resolves the same turns again. Best effort: what the cluster refuses now
        stays (docs/scale-out.md, "Failures")."""
        with self._lock:
            for key, *_ in sessions:
                self._reads[key] = _SPENT  # put back (or not): a later write of it reads it again
        actions: list[Action] = []
        for batch, _ in run:
            for r in batch.records:
                if not r.replace and (r.user_id, r.session_id) not in raced:
                    meta: dict[str, Any] = {
                        "_index": self.index["messages"],
                        "_id": doc_id(r.user_id, r.id),
                        "routing": r.user_id,
                    }
                    actions.append(({"delete": meta}, None))
        for (user, sid), seq_no, term, read in sessions:
            meta = {
                "_index": self.index["sessions"], "_id": doc_id(user, sid), "routing": user,
                "if_seq_no": seq_no, "if_primary_term": term,
            }  # fmt: skip
            if read.seq_no is None:
                actions.append(({"delete": meta}, None))
            elif read.text is not None:
                body: dict[str, Any] = {
                    "user_id": user,
                    "session_id": sid,
                    "seq": self._next_seq(),
                    "contents": read.text,
                    "w": "undo",
                }
                if read.tail is not None:
                    body["tail"] = read.tail
                actions.append(({"index": meta}, body))
        if not actions:
            return
        try:
            self.t.bulk_once(actions, "wait_for", timeout=10)
        except Exception as exc:
            log.warning(
                "could not undo a failed commit on %s (%s); its messages may stay", self.t.location, exc
            )

    def _written_by(self, key: tuple[str, str], token: str) -> bool:
        """Whether the session document of ``key`` holds this commit's write (a retried CAS that had landed)."""
        found = self.reads.mget("sessions", [(key[0], doc_id(*key))], ["w"])
        return bool(found) and found[0]["_source"].get("w") == token

    def _release(self, claims: Sequence[_Claim]) -> None:
        """Delete this process's pending claims (best effort), so a retry of their adds can write."""
        for c in claims:
            try:
                self.t.client.delete(
                    index=self.index["requests"], id=c.doc_id, routing=c.user_id,
                    if_seq_no=c.seq_no, if_primary_term=c.primary_term, refresh="false",
                )  # fmt: skip
            except Exception as exc:  # the claim goes stale and is taken over
                log.debug("could not release request claim %s: %s", c.request_id, exc)

    def drop_pending(self, release: bool) -> None:
        """Forget what was written and not committed (closing); ``release``: delete its claims too."""
        with self._lock:
            ops, self._pending.ops = self._pending.ops, []
        claims = [v[1] for kind, v in ops if kind == "batch" and v[1] is not None]
        if claims and release:
            self._release(claims)

    # ------------------------------------------------------------------ deletions

    def delete_user(self, user_id: str) -> int:
        before = self.reads.count(user_id)
        query = {"bool": {"filter": [user_term(user_id)]}}
        for name in ("messages", "sessions", "infos", "requests", "marks", *self._vector_index()):
            self._delete_matching(name, query, user_id)
        with self._lock:
            self._reads = {k: v for k, v in self._reads.items() if k[0] != user_id}
        return before

    def delete_session(self, user_id: str, session_id: str) -> int:
        query = {"bool": {"filter": [user_term(user_id), {"term": {"session_id": session_id}}]}}
        kw: dict[str, Any] = {"index": self.index["messages"], "body": {"query": query}, "routing": user_id}
        before = int(self.t.call("count", lambda: self.t.client.count(**kw))["count"])
        for name in ("messages", "sessions", "infos", *self._vector_index()):
            self._delete_matching(name, query, user_id)
        with self._lock:
            self._reads.pop((user_id, session_id), None)
        return before

    def add_tombstones(self, user_id: str, session_ids: Sequence[str], when: int) -> None:
        index = self.index["tombstones"]
        actions: list[Action] = [
            (
                {"index": {"_index": index, "_id": doc_id(user_id, sid), "routing": user_id}},
                {"user_id": user_id, "session_id": sid, "seq": int(when)},
            )
            for sid in dict.fromkeys(session_ids)
        ]
        for status, item in self.t.bulk(actions, "true") if actions else []:
            if status >= 300:
                raise StoreError(f"OpenSearch at {self.t.location} refused to record a deletion: {item}")

    def set_marks(self, user_id: str, marks: Mapping[str, StandingMark | None]) -> None:
        """Each mark written (None: deleted) by its (user, message id), refreshed: durable and visible on
        return."""
        index = self.index["marks"]
        actions: list[Action] = []
        for mid, mark in marks.items():
            meta = {"_index": index, "_id": doc_id(user_id, mid), "routing": user_id}
            if mark is None:
                actions.append(({"delete": meta}, None))
            else:
                doc: dict[str, Any] = {"user_id": user_id, "id": mid, "seq": int(mark.at)}
                if mark.kind is not None:
                    doc["kind"] = mark.kind
                actions.append(({"index": meta}, doc))
        for status, item in self.t.bulk(actions, "true") if actions else []:
            if status >= 300 and status != 404:
                raise StoreError(f"OpenSearch at {self.t.location} refused to record a pin or hide: {item}")

    def remove_tombstones(self, user_id: str, session_ids: Sequence[str] | None) -> int:
        if session_ids is not None and not session_ids:
            return 0
        flt: list[dict[str, Any]] = [user_term(user_id)]
        if session_ids is not None:
            flt.append({"terms": {"session_id": list(dict.fromkeys(session_ids))}})
        index = self.index["tombstones"]
        self.t.call("refresh", lambda: self.t.client.indices.refresh(index=index))
        found = list(self.reads.scan("tombstones", {"bool": {"filter": flt}}, user_id, _source=False))
        actions: list[Action] = [
            ({"delete": {"_index": index, "_id": h["_id"], "routing": user_id}}, None) for h in found
        ]
        removed = 0
        for status, item in self.t.bulk(actions, "true") if actions else []:
            if status >= 300 and status != 404:
                raise StoreError(f"OpenSearch at {self.t.location} refused a delete: {item}")
            removed += status < 300
        return removed

    def _delete_matching(self, name: str, query: dict[str, Any], routing: str | None) -> None:
        """Delete every document of index ``name`` matching ``query`` (found by a scan, deleted in bulk,
        refreshed: the node needs no reindex module for delete-by-query)."""
        index = self.index[name]
        if name != "messages":  # seq and a unique tiebreak are what scan pages by; these are small: one page
            self.t.call("refresh", lambda: self.t.client.indices.refresh(index=index))
        while True:
            body = {"query": query, "size": PAGE, "_source": ["user_id"], "track_total_hits": False}
            found = self.reads.search(name, body, routing)["hits"]["hits"]
            if not found:
                return
            actions: list[Action] = [
                ({"delete": {"_index": index, "_id": h["_id"], "routing": h["_source"]["user_id"]}}, None)
                for h in found
            ]
            for status, item in self.t.bulk(actions, "true"):
                if status >= 300 and status != 404:
                    raise StoreError(f"OpenSearch at {self.t.location} refused a delete: {item}")

    def _vector_index(self) -> tuple[str, ...]:
        return ("vectors",) if self.vectors is not None and not self.vectors.missing else ()

    def _expire_now(self, cutoff: int) -> None:
        for name in ("messages", "requests", *self._vector_index()):
            self._delete_matching(name, {"bool": {"filter": [{"range": {"added": {"lt": cutoff}}}]}}, None)
