"""The lifecycle: :class:`OpenSearchStore` opens a location (the indexes created or checked), ties the
transport, the reads and the commit protocol together behind the engine protocol, and closes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from refind.config import Settings
from refind.errors import IndexFormatError, InvalidInput, ReadOnlyError, StoreError
from refind.models import Hit
from refind.standing import RULE_VERSION
from refind.store._standing import classify_stored, read_standing_now, sort_standing, with_marks
from refind.store.base import (
    Expired,
    Filters,
    PendingVector,
    SessionCounts,
    SessionInfo,
    SessionState,
    StandingHit,
    StandingMark,
    VectorCounts,
    VectorRecord,
    WriteBatch,
    standing_of,
)
from refind.store.opensearch._commit import Commits
from refind.store.opensearch._location import parse_location
from refind.store.opensearch._reads import Reads, user_term
from refind.store.opensearch._schema import MAPPINGS, doc_id, format_problem, hit_raw, index_body
from refind.store.opensearch._transport import PAGE, Transport, connect
from refind.store.opensearch._vectors import Vectors

__all__ = ["OpenSearchStore"]

log = logging.getLogger(__name__)


class OpenSearchStore:
    """Chat messages in an OpenSearch cluster (the :class:`~refind.store.base.Engine` protocol).

    ``OpenSearchStore("opensearch://127.0.0.1:9200/refind")`` connects (see
    :func:`~refind.store.opensearch.parse_location` for options, TLS and credentials) and creates the
    prefix's indexes when they are missing. Any number of processes may open the same location and write at
    once (docs/scale-out.md, "Guarantees"). Safe to use from many threads.

    ``client``: an ``opensearchpy.OpenSearch`` (or anything with its methods) to use instead of one built
    from the location, e.g. one over a test connection that fails on cue."""

    path: Path | None = None
    shared_writers = True  # any number of processes may write at once (docs/scale-out.md, "Guarantees")
    commit_slices = True  # writes are buffered until a commit sends them: an import sends slice by slice

    def __init__(
        self,
        location: str,
        *,
        settings: Settings | None = None,
        read_only: bool = False,
        retry_seconds: float = 30.0,
        stale_after: float = 60.0,
        client: Any = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.loc = parse_location(location)
        self.location = self.loc.redacted()
        self.read_only = read_only
        self.retry_seconds = float(retry_seconds)
        self.stale_after = float(stale_after)
        self.index = {name: f"{self.loc.prefix}-{name}" for name in MAPPINGS}
        self._client = client if client is not None else connect(self.loc)
        self._t = Transport(self._client, self.location, self.retry_seconds)
        self._reads = Reads(self._t, self.index)
        self._commits = Commits(self._t, self._reads, self.index, self.stale_after)
        self._vectors = Vectors(self._t, self._reads, self.index, self.stale_after)
        self._commits.vectors = self._vectors
        self._close_lock = threading.Lock()
        self._standing_stored = True  # the messages index stores what stands, by this rule (issue 37)
        self._ensure_indexes()

    # ------------------------------------------------------------------ opening

    def _ensure_indexes(self) -> None:
        created: set[str] = set()
        for name, mapping in MAPPINGS.items():
            index = self.index[name]
            exists = self._t.call("opening", partial(self._client.indices.exists, index=index))
            if not exists:
                if self.read_only and name == "infos":  # a prefix written before session info
                    self._reads.no_infos = True
                    continue
                if self.read_only and name == "tombstones":  # a prefix written before tombstones
                    self._reads.no_tombstones = True
                    continue
                if self.read_only and name == "marks":  # a prefix written before marks (issue 37)
                    self._reads.no_marks = True
                    continue
                if self.read_only and name == "vectors":  # a prefix written before vectors
                    self._vectors.missing = True
                    continue
                if self.read_only:
                    raise IndexFormatError(
                        f"no refind index {index} at {self.location}; create one by adding messages"
                    )
                # the vectors of a prefix created now: nothing to queue (one written before vectors is
                # queued below, once)
                fresh = name == "vectors" and "messages" in created
                first: dict[str, Any] | None = {"queued": True} if fresh else None
                if name == "messages":
                    first = {"standing": RULE_VERSION}
                self._create(index, mapping, first)
                created.add(name)
            got = self._t.call("opening", partial(self._client.indices.get_mapping, index=index))
            meta = next(iter(got.values()))["mappings"].get("_meta", {})
            problem = format_problem(meta)
            if problem is not None:
                raise IndexFormatError(f"index {index} at {self.location} {problem}")
            if name == "vectors" and not self.read_only and not meta.get("queued"):
                self._queue_all(meta)
            if name == "messages" and meta.get("standing") != RULE_VERSION:
                self._standing_stored = False
                props = next(iter(got.values()))["mappings"].get("properties", {})
                if not self.read_only and "standing" not in props:  # a prefix written before issue 37
                    fields = {"standing": MAPPINGS["messages"]["properties"]["standing"],
                              "standing_raw": MAPPINGS["messages"]["properties"]["standing_raw"]}  # fmt: skip
                    put = partial(self._client.indices.put_mapping, index=index, body={"properties": fields})
                    self._t.call("opening", put)
        if not self.read_only and not self._standing_stored:
            self._classify_stored()

    # ------------------------------------------------------------------ standing (issue 37)

    def _classify_stored(self) -> None:
        """A prefix written before standing messages were stored (or by another version of the rule): every
        person's own messages read with the rule once, what stands stored beside them (their ``raw`` is
        left as it is: only the two standing fields are updated), then the index marked."""
        classify_stored(self, self._set_standing, self._stored_standing, self.location)
        index = self.index["messages"]
        self._t.call("opening", lambda: self._client.indices.refresh(index=index))
        got = self._t.call("opening", partial(self._client.indices.get_mapping, index=index))
        meta = next(iter(got.values()))["mappings"].get("_meta", {})
        body = {"_meta": {**meta, "standing": RULE_VERSION}}
        self._t.call("opening", lambda: self._client.indices.put_mapping(index=index, body=body))
        self._standing_stored = True

    def _stored_standing(self, user_id: str) -> dict[str, dict[str, object] | None]:
        query = {"bool": {"filter": [user_term(user_id), {"exists": {"field": "standing"}}]}}
        found = self._reads.scan("messages", query, user_id, _source=["id", "standing_raw"])
        return {d["_source"]["id"]: json.loads(d["_source"]["standing_raw"]) for d in found}

    def _set_standing(self, records: list[list[Any]]) -> int:
        actions = []
        for user_id, mid, standing in records:
            meta = {"_index": self.index["messages"], "_id": doc_id(user_id, mid), "routing": user_id}
            fields = {
                "standing": standing["kind"] if standing else None,
                "standing_raw": json.dumps(standing, ensure_ascii=False) if standing else None,
            }
            actions.append(({"update": meta}, {"doc": fields}))
        done = self._t.bulk(actions, "false")
        return sum(1 for status, _ in done if 200 <= status < 300)

    def standing(self, user_id: str, k: int) -> list[StandingHit]:
        self._t.check()
        if k <= 0:
            return []
        marks = self.marks(user_id)
        found = self._standing(user_id, k + len(marks))  # enough left once the marked ones are taken out
        return with_marks(self, user_id, found, marks, k)

    def _standing(self, user_id: str, k: int) -> list[StandingHit]:
        """What the rule read: ``user_id``'s standing messages, newest first, at most ``k``."""
        if not self._standing_stored:
            return read_standing_now(self, user_id, k)
        query = {"bool": {"filter": [user_term(user_id), {"exists": {"field": "standing"}}]}}
        if k <= PAGE:
            body = {
                "query": query, "size": int(k), "_source": ["raw", "standing_raw"], "track_total_hits": False,
                "sort": [{"ts": "desc"}, {"session_id": "asc"}, {"turn": "desc"}],
            }  # fmt: skip
            docs = self._reads.search("messages", body, user_id)["hits"]["hits"]
        else:
            docs = list(self._reads.scan("messages", query, user_id, _source=["raw", "standing_raw"]))
        found = []
        for d in docs:
            s = standing_of(json.loads(d["_source"]["standing_raw"]))
            if s is not None:
                found.append(StandingHit.of(hit_raw(d["_source"]["raw"]), s))
        return sort_standing(found)[:k]

    def _queue_all(self, meta: dict[str, Any]) -> int:
        """A prefix written before vectors (or a reset): every message queued for its vector, then the
        index marked as queued (a crash before that queues again: the same documents)."""
        scan = self._reads.scan("messages", {"match_all": {}}, None, _source=["raw", "user_id", "added"])
        n = self._vectors.queue_all(scan)
        if n:
            log.info("queued the %d messages of %s for their vectors", n, self.location)
        body = {"_meta": {**meta, "queued": True}}
        index = self.index["vectors"]
        self._t.call("opening", lambda: self._client.indices.put_mapping(index=index, body=body))
        return n

    def _create(self, index: str, mapping: dict[str, Any], meta: dict[str, Any] | None = None) -> None:
        from opensearchpy.exceptions import RequestError

        body = index_body(self.loc, self.settings, mapping, meta)
        try:
            self._t.call("creating indexes", lambda: self._client.indices.create(index=index, body=body))
        except StoreError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, RequestError) and "already_exists" in str(cause)):
                raise
        except RequestError as exc:  # another worker created it first
            if "already_exists" not in str(exc):
                raise StoreError(f"cannot create index {index} at {self.location}: {exc}") from exc
        self._t.call(
            "creating indexes",
            lambda: self._client.cluster.health(
                index=index, wait_for_status="yellow", params={"timeout": "60s"}, request_timeout=70
            ),
        )

    def _writable(self) -> None:
        self._t.check()
        if self.read_only:
            raise ReadOnlyError(f"{self.location} was opened read-only; open it without read_only to write")

    # ------------------------------------------------------------------ reading (refind/store/opensearch/_reads.py)

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text`` (the chain the indexes' ``refind`` analyzer runs)."""
        return self._reads.analyze(text)

    def query(
        self, user_id: str, text: str, k: int = 10, filters: Filters | None = None, *, content: bool = True
    ) -> list[Hit]:
        return self._reads.query(user_id, text, k, filters, content)

    def query_sessions(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        return self._reads.query_sessions(user_id, text, k, session_ids)

    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]:
        return self._reads.windows(user_id, spans)

    def browse(
        self, user_id: str, k: int, filters: Filters | None = None, newest_first: bool = True
    ) -> list[Hit]:
        return self._reads.browse(user_id, k, filters, newest_first)

    def term_counts(self, user_id: str, text: str) -> dict[str, int]:
        return self._reads.term_counts(user_id, text)

    def get(self, user_id: str, ids: Sequence[str]) -> list[Hit]:
        return self._reads.get(user_id, ids)

    def count(self, user_id: str | None = None) -> int:
        return self._reads.count(user_id)

    def refresh(self) -> None:
        """Reads are always current: every commit (of any worker) waits for its refresh."""
        self._t.check()

    def session_infos(self, user_id: str, session_ids: Sequence[str] | None = None) -> dict[str, SessionInfo]:
        self._t.check()
        return self._reads.session_infos(user_id, session_ids)

    def query_titles(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        self._t.check()
        return self._reads.query_titles(user_id, text, k, session_ids)

    def session_summaries(self, user_id: str) -> list[SessionCounts]:
        self._t.check()
        return self._reads.session_summaries(user_id)

    def users(self) -> list[str]:
        return self._reads.users()

    def existing(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Hit]:
        return self._reads.existing(wanted)

    def session_turns(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], list[Hit]]:
        return self._reads.session_turns(wanted)

    # ------------------------------------------------------------------ writing (refind/store/opensearch/_commit.py)

    def session_states(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], SessionState]:
        """Each stored session's last turn and whole text, read in real time: the base of the
        compare-and-set of this process's next write of it."""
        return self._commits.session_states(wanted)

    def request_marker(self, user_id: str, request_id: str) -> str | None:
        """The payload of a committed (done) marker, else None (a claim not yet committed is not one)."""
        return self._commits.request_marker(user_id, request_id)

    def write(self, batch: WriteBatch) -> None:
        """Buffer ``batch`` for the next commit; claim its request marker now:
        :class:`~refind.store.base.RequestTaken` when another writer used the request id with another
        payload, :class:`~refind.store.base.AlreadyApplied` when it applied the same one."""
        self._writable()
        self._commits.write(batch)

    def commit(self) -> None:
        """Send everything written so far; durable and visible on return."""
        self._writable()
        self._commits.commit()

    def seal(self) -> Callable[[], None]:
        """Take everything written so far out of the buffer; the function returned sends exactly that (the
        write path seals under its lock, so it knows which adds a commit covers, and sends without it)."""
        self._writable()
        return self._commits.seal()

    def delete_user(self, user_id: str) -> int:
        self._writable()
        return self._commits.delete_user(user_id)

    def delete_session(self, user_id: str, session_id: str) -> int:
        """Delete one session (its messages, document and info), after committing what was written."""
        self._writable()
        self.commit()
        return self._commits.delete_session(user_id, session_id)

    def expire(self, cutoff_ms: int) -> Expired:
        """Retention (applied at the next commit): messages and markers added before ``cutoff_ms``."""
        self._writable()
        return self._commits.expire(cutoff_ms)

    def tombstones(self, user_id: str | None = None) -> dict[str, dict[str, int]]:
        self._t.check()
        return self._reads.tombstones(user_id)

    def marks(self, user_id: str) -> dict[str, StandingMark]:
        self._t.check()
        return self._reads.marks(user_id)

    def set_marks(self, user_id: str, marks: Mapping[str, StandingMark | None]) -> None:
        """Record marks (``{prefix}-marks``), refreshed: durable and visible on return."""
        self._writable()
        self._commits.set_marks(user_id, marks)

    def add_tombstones(self, user_id: str, session_ids: Sequence[str], when: int) -> None:
        """Record deleted sessions (``{prefix}-tombstones``), refreshed: durable and visible on return."""
        self._writable()
        self._commits.add_tombstones(user_id, session_ids, when)

    def remove_tombstones(self, user_id: str, session_ids: Sequence[str] | None = None) -> int:
        self._writable()
        return self._commits.remove_tombstones(user_id, session_ids)

    # ------------------------------------------------------------------ vectors (refind/store/opensearch/_vectors.py)

    def knn(self, user_id: str, vector: Sequence[float], k: int, filters: Filters | None = None) -> list[Hit]:
        self._t.check()
        if filters is not None and filters.any_terms is not None:
            raise InvalidInput("knn: any_terms is not a filter of a vector search", field="any_terms")
        model = self.vector_model()
        if k <= 0 or model is None:
            return []
        if len(vector) != model[1]:
            raise InvalidInput(
                f"knn: a vector of {len(vector)} dimensions; this index's vectors have {model[1]}",
                field="vector",
            )
        return self._vectors.knn(user_id, vector, k, filters)

    def vector_counts(self, user_id: str | None = None) -> VectorCounts:
        self._t.check()
        return self._vectors.counts(user_id)

    def vector_model(self) -> tuple[str, int] | None:
        self._t.check()
        return self._vectors.model()

    def use_vector_model(self, name: str, dimensions: int) -> None:
        self._writable()
        self._vectors.use_model(name, dimensions, self.location)

    def reset_vectors(self) -> int:
        """Drop and re-create the vectors index (a field's dimensions cannot change), queue every message."""
        self._writable()
        self.commit()
        index = self.index["vectors"]
        self._t.call(
            "dropping vectors", lambda: self._client.indices.delete(index=index, ignore_unavailable=True)
        )
        self._create(index, MAPPINGS["vectors"])
        return self._queue_all(self._vectors._meta())

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        self._writable()
        return self._vectors.pending(limit)

    def write_vectors(self, vectors: Sequence[VectorRecord]) -> int:
        """Checked now (the token of each message's vector document), sent by the next commit."""
        self._writable()
        model = self.vector_model()
        if model is None:
            raise StoreError("no vector model recorded for this index: call use_vector_model first")
        unsettled = self._commits.unsettled()
        if self._commits.retention_pending():
            return 0  # which messages the buffered sweep takes is known when it runs: after the commit
        actions = self._vectors.write(vectors, model[1], unsettled)
        self._commits.buffer_vectors(actions)
        return len(actions)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Drop what was written and not committed, close the connections. Safe to call twice."""
        with self._close_lock:
            if self._t.closed:
                return
            self._t.closed = True
        self._commits.drop_pending(release=not self.read_only)
        with contextlib.suppress(Exception):  # closing sockets
            self._client.close()

    def drop(self) -> None:
        """Delete this prefix's indexes, then close (tests and benchmarks)."""
        if self.read_only:
            raise ReadOnlyError(f"{self.location} was opened read-only; open it without read_only to drop it")
        self._t.call(
            "dropping indexes",
            lambda: self._client.indices.delete(index=",".join(self.index.values()), ignore_unavailable=True),
        )
        self.close()

    def __enter__(self) -> OpenSearchStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenSearchStore({self.location!r}{', read-only' if self.read_only else ''})"
