"""OpenSearchStore: the engine protocol (:mod:`refind.store.base`) over an OpenSearch cluster (docs/scale-out.md).

``refind.Memory("opensearch://host:9200/prefix")`` (``opensearchs://`` for TLS) opens one. Three indexes per
prefix, created on first use with explicit mappings and the embedded engine's analyzer chain:

- ``{prefix}-messages``: one document per message, ``_id`` a digest of (user, message id); keyword
  ``user_id``/``session_id``/``id``/``role``, integer ``turn``, long ``ts`` (epoch ms), ``added`` (ingestion
  time, for retention), ``seq`` (insertion order: ties and paging), text ``contents`` (analyzed, not kept in
  ``_source``) and ``raw``, the verbatim message as JSON, stored and not indexed;
- ``{prefix}-sessions``: one document per session, its whole text (``contents``, for session-level BM25),
  its last turn (``tail``, stored only) and ``w``, the token of the commit that wrote it;
- ``{prefix}-requests``: one request marker per (user, request id) (``payload``, ``state``, ``owner``).

Every document is routed by ``user_id``: one user's reads and writes touch one shard. Every query is a
``bool`` of ``term``/``terms``/``range`` clauses (``filter``; the read-set in ``must_not``) around a ``should``
of the query's analyzed terms, each a ``term`` query boosted by its count: query text is analyzed here,
by :func:`refind.store.analysis.analyze` (the terms of Lucene's chain, checked against the Java engine by the
contract suite), and never reaches OpenSearch as query syntax.

Writes are buffered by :meth:`OpenSearchStore.write` and sent by :meth:`OpenSearchStore.commit`, so nothing is
visible (or durable) before the commit, and a process that dies before it leaves nothing behind. A commit:

1. writes the session documents, each with a compare-and-set on the version this process read
   (``if_seq_no``/``if_primary_term``; ``op_type=create`` for a new session): another worker's add to the
   same session in between makes the write fail for that session only (:class:`~refind.store.base.WriteRaced`),
   and the write path resolves that add again, so two workers never give two messages the same auto turn id;
2. writes the messages (``refresh=wait_for``: visible when the commit returns; translog durability
   ``request``: fsynced on every in-sync copy before the cluster acknowledges);
3. marks the batches' request markers done. A marker is *claimed* by :meth:`OpenSearchStore.write`, before
   anything is written, with ``op_type=create`` on a deterministic id: of two workers given the same request
   id, one writes; the other waits for the first to finish and reports a duplicate (or a
   :class:`~refind.RequestConflict` for another body). A claim left by a writer that died is taken over after
   ``stale_after`` seconds.

Connection errors, timeouts, 429 and 5xx answers are retried with backoff for a bounded time
(``retry_seconds``); then the call fails with a :class:`~refind.StoreError` naming the cluster, and an add whose
commit failed is not acknowledged (its claim is released so a retry can write).

BM25 statistics are per shard (OpenSearch scores each shard with its own document counts); with one primary
shard they are index-wide, as in the embedded engine (docs/scale-out.md, "Same answers").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from refind.config import Settings
from refind.errors import (
    IndexFormatError,
    InvalidInput,
    ReadOnlyError,
    RequestConflict,
    SetupError,
    StoreClosed,
    StoreError,
)
from refind.models import Hit
from refind.store.analysis import ENGLISH_STOP_WORDS
from refind.store.analysis import analyze as _analyze
from refind.store.base import (
    AlreadyApplied,
    Expired,
    Filters,
    Record,
    SessionCounts,
    SessionDoc,
    SessionInfo,
    SessionState,
    WriteBatch,
    WriteRaced,
    query_bag,
)

__all__ = ["INDEX_FORMAT", "OpenSearchStore", "parse_location"]

log = logging.getLogger(__name__)

INDEX_FORMAT = 1
"""Recorded in each index's mapping ``_meta``; an index with another format or analyzer is refused."""
ANALYZER_NAME = "colonSplit+standard+cjkWidth+lowercase+cjkBigram+englishPossessive+stop+porterStem"
_MAX_TURN = 2**31 - 1
_PAGE = 5000  # documents per page of a scan (search_after)
_CLAUSES = 900  # clauses per query, under OpenSearch's default limit of 1024
_T = TypeVar("_T")

ANALYSIS: dict[str, Any] = {
    # the embedded engine's chain (io.refind.lucene.Engine): ':' to a space, then the standard tokenizer,
    # cjkWidth, lowercase, cjkBigram, englishPossessive, Lucene's English stop set, porterStem
    "char_filter": {"refind_colon": {"type": "pattern_replace", "pattern": ":", "replacement": " "}},
    "filter": {
        "refind_possessive": {"type": "stemmer", "language": "possessive_english"},
        "refind_stop": {"type": "stop", "stopwords": sorted(ENGLISH_STOP_WORDS)},
    },
    "analyzer": {
        "refind": {
            "type": "custom",
            "char_filter": ["refind_colon"],
            "tokenizer": "standard",
            "filter": [
                "cjk_width",
                "lowercase",
                "cjk_bigram",
                "refind_possessive",
                "refind_stop",
                "porter_stem",
            ],
        }
    },
}

_KEYWORD = {"type": "keyword"}
_STORED = {"type": "keyword", "index": False, "doc_values": False}
_TEXT = {"type": "text", "analyzer": "refind", "index_options": "freqs"}


def _meta() -> dict[str, Any]:
    return {"refind_format": INDEX_FORMAT, "analyzer": ANALYZER_NAME}


MAPPINGS: dict[str, dict[str, Any]] = {
    "messages": {
        "dynamic": "strict",
        "_source": {"excludes": ["contents"]},  # the content is kept once, in raw
        "properties": {
            "user_id": _KEYWORD, "session_id": _KEYWORD, "id": _KEYWORD, "mid": _KEYWORD, "role": _KEYWORD,
            "turn": {"type": "integer"}, "ts": {"type": "long"}, "added": {"type": "long"},
            "seq": {"type": "long"}, "contents": _TEXT, "raw": _STORED,
        },
    },
    "sessions": {
        "dynamic": "strict",
        "properties": {
            "user_id": _KEYWORD, "session_id": _KEYWORD, "seq": {"type": "long"}, "contents": _TEXT,
            "tail": _STORED, "w": _STORED,
        },
    },
    "infos": {
        "dynamic": "strict",
        "properties": {
            "user_id": _KEYWORD, "session_id": _KEYWORD, "seq": {"type": "long"}, "title": _TEXT,
            "source": _KEYWORD, "project": _KEYWORD, "raw": _STORED,
        },
    },
    "requests": {
        "dynamic": "strict",
        "properties": {
            "user_id": _KEYWORD, "request_id": _KEYWORD, "payload": _STORED, "state": _KEYWORD,
            "owner": _STORED, "claimed": {"type": "long"}, "added": {"type": "long"},
        },
    },
}  # fmt: skip


# ---------------------------------------------------------------------------------------------- the location


@dataclass(frozen=True)
class Location:
    """What an ``opensearch://`` location says: hosts, index prefix, TLS, credentials and index options."""

    hosts: list[str]
    prefix: str
    tls: bool
    username: str | None = None
    password: str | None = None
    api_key: str | None = None
    verify: bool = True
    ca_certs: str | None = None
    shards: int = 1
    replicas: int | None = None  # None: 0-1 (auto-expanded)
    refresh_interval: str = "200ms"
    options: dict[str, str] = field(default_factory=dict)

    def redacted(self) -> str:
        scheme = "opensearchs" if self.tls else "opensearch"
        return f"{scheme}://{','.join(h.split('://', 1)[-1] for h in self.hosts)}/{self.prefix}"


def parse_location(text: str, env: Mapping[str, str] | None = None) -> Location:
    """Parse ``opensearch[s]://[user:password@]host[:port][,host2:port2...]/prefix?options``.

    Options: ``shards`` (primary shards of a new index, default 1), ``replicas`` (default 0-1, auto-expanded),
    ``refresh_interval`` (default 200ms), ``verify=false`` (skip TLS certificate checks), ``ca_certs=PATH``.
    Secrets may instead come from the environment: ``REFIND_OPENSEARCH_USER``,
    ``REFIND_OPENSEARCH_PASSWORD``, ``REFIND_OPENSEARCH_API_KEY`` (sent as ``Authorization: ApiKey ...``),
    ``REFIND_OPENSEARCH_CA_CERTS``, ``REFIND_OPENSEARCH_VERIFY=0``; the URL wins when it has them."""
    env = os.environ if env is None else env
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in {"opensearch", "opensearchs"}:
        raise InvalidInput(f"store: {text!r} is not an opensearch:// or opensearchs:// location")
    netloc = parts.netloc
    username = password = None
    if "@" in netloc:
        auth, netloc = netloc.rsplit("@", 1)
        username, _, pw = auth.partition(":")
        username, password = unquote(username), unquote(pw) if pw else None
    if not netloc:
        raise InvalidInput(f"store: {text!r} names no host; use opensearch://host:9200/prefix")
    tls = scheme == "opensearchs"
    hosts = []
    for host in netloc.split(","):
        host = host.strip()
        if not host:
            continue
        if ":" not in host.rsplit("]", 1)[-1]:
            host += ":9200"
        hosts.append(f"{'https' if tls else 'http'}://{host}")
    prefix = parts.path.strip("/") or "refind"
    if not all(c.isalnum() or c in "-_." for c in prefix) or prefix != prefix.lower() or prefix[0] in "-_.":
        raise InvalidInput(
            f"store: index prefix {prefix!r} must be lowercase letters, digits, '-', '_' or '.', not first"
        )
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    known = {"shards", "replicas", "refresh_interval", "verify", "ca_certs"}
    unknown = sorted(set(query) - known)
    if unknown:
        raise InvalidInput(
            f"store: unknown option(s) {', '.join(unknown)} in {text!r}; known: {sorted(known)}"
        )
    try:
        shards = int(query.get("shards", "1"))
        replicas = int(query["replicas"]) if "replicas" in query else None
    except ValueError:
        raise InvalidInput(f"store: shards and replicas must be integers in {text!r}") from None
    verify_text = query.get("verify", env.get("REFIND_OPENSEARCH_VERIFY", "1")).lower()
    return Location(
        hosts=hosts,
        prefix=prefix,
        tls=tls,
        username=username or env.get("REFIND_OPENSEARCH_USER") or None,
        password=password or env.get("REFIND_OPENSEARCH_PASSWORD") or None,
        api_key=env.get("REFIND_OPENSEARCH_API_KEY") or None,
        verify=verify_text not in {"0", "false", "no", "off"},
        ca_certs=query.get("ca_certs") or env.get("REFIND_OPENSEARCH_CA_CERTS") or None,
        shards=max(1, shards),
        replicas=replicas,
        refresh_interval=query.get("refresh_interval", "200ms"),
    )


# ---------------------------------------------------------------------------------------------- helpers


def _doc_id(*parts: str) -> str:
    """A deterministic ``_id`` (ids may be 1,000 characters; ``_id`` holds 512 bytes)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]


def _should(bag: Sequence[tuple[str, int]], name: str = "contents") -> dict[str, Any]:
    return {
        "bool": {
            "should": [
                {"term": {name: {"value": t, "boost": n}}} if n > 1 else {"term": {name: t}} for t, n in bag
            ]
        }
    }


def _raw(r: Record) -> str:
    d: dict[str, Any] = {
        "id": r.id, "session_id": r.session_id, "turn": int(r.turn), "ts": int(r.timestamp), "role": r.role,
        "content": r.content,
    }  # fmt: skip
    if r.speaker:
        d["speaker"] = r.speaker
    if r.time_text is not None:
        d["time_text"] = r.time_text
    return json.dumps(d, ensure_ascii=False)


def _hit_raw(raw: str, score: float = 0.0) -> Hit:
    d = json.loads(raw)
    return Hit.trusted(
        d["id"], d["session_id"], int(d["turn"]), int(d["ts"]), d["role"], d.get("speaker") or None,
        d["content"], score, d.get("time_text"),
    )  # fmt: skip


def _hit_fields(fields: Mapping[str, list[Any]], score: float = 0.0) -> Hit:
    return Hit.trusted(
        fields["id"][0], fields["session_id"][0], int(fields["turn"][0]), int(fields["ts"][0]),
        fields["role"][0], None, "", score, None,
    )  # fmt: skip


_HIT_FIELDS = ["id", "session_id", "turn", "ts", "role"]


def _float32(x: Any) -> float:
    import struct

    return float(struct.unpack("f", struct.pack("f", float(x)))[0])


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


class OpenSearchStore:
    """Chat messages in an OpenSearch cluster (the :class:`~refind.store.base.Engine` protocol).

    ``OpenSearchStore("opensearch://127.0.0.1:9200/refind")`` connects (see :func:`parse_location` for
    options, TLS and credentials) and creates the prefix's indexes when they are missing. Any number of
    processes may open the same location and write at once (docs/scale-out.md, "Guarantees"). Safe to use from
    many threads."""

    path: Path | None = None
    shared_writers = True  # any number of processes may write at once (docs/scale-out.md, "Guarantees")

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
        self._closed = False
        self._lock = threading.RLock()  # the buffer and the read cache
        self._commit_lock = threading.Lock()
        self._pending = _Pending()
        self._reads: dict[tuple[str, str], _Read] = {}
        self._checked: set[tuple[str, str]] = set()  # request ids request_marker found unused
        self._seq = 0
        self._token = secrets.token_hex(8)
        self._client = client if client is not None else self._connect()
        self._no_infos = False  # a reader of a prefix that predates session info: it has none
        self._ensure_indexes()

    # ------------------------------------------------------------------ connection

    def _connect(self) -> Any:
        try:
            from opensearchpy import OpenSearch
        except ImportError:
            raise SetupError(
                "the OpenSearch engine needs opensearch-py: pip install 'refind[opensearch]'"
            ) from None
        loc = self.loc
        kwargs: dict[str, Any] = {
            "hosts": loc.hosts,
            "timeout": 30,
            "max_retries": 2,  # the client tries other nodes at once; _call retries with backoff after
            "retry_on_timeout": True,
            "http_compress": False,
            "pool_maxsize": 32,  # per node: the service's thread pool calls from 16 threads
        }
        if loc.username is not None:
            kwargs["http_auth"] = (loc.username, loc.password or "")
        if loc.api_key is not None:
            kwargs["headers"] = {"Authorization": f"ApiKey {loc.api_key}"}
        if loc.tls:
            kwargs["use_ssl"] = True
            kwargs["verify_certs"] = loc.verify
            kwargs["ssl_show_warn"] = loc.verify
            if loc.ca_certs:
                kwargs["ca_certs"] = loc.ca_certs
        return OpenSearch(**kwargs)

    def _retryable(self, exc: BaseException) -> bool:
        from opensearchpy.exceptions import ConnectionError as OSConnectionError
        from opensearchpy.exceptions import TransportError

        if isinstance(exc, OSConnectionError):  # includes timeouts
            return True
        if isinstance(exc, TransportError):
            status = exc.status_code
            return isinstance(status, int) and (status == 429 or status >= 500)
        return False

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        """``fn()`` with bounded retries (backoff) on connection errors, 429 and 5xx; then a StoreError."""
        from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        try:
            for attempt in Retrying(
                retry=retry_if_exception(self._retryable),
                stop=stop_after_delay(self.retry_seconds),
                wait=wait_exponential(multiplier=0.1, max=2.0),
                reraise=True,
            ):
                with attempt:
                    return fn()
        except (StoreError, InvalidInput, AlreadyApplied):
            raise
        except Exception as exc:
            from opensearchpy.exceptions import ConflictError, NotFoundError, TransportError

            if isinstance(exc, (ConflictError, NotFoundError)):  # answers the caller handles
                raise
            if isinstance(exc, TransportError) or self._retryable(exc):
                raise StoreError(
                    f"OpenSearch at {self.location} failed during {what}: {exc} (retried for up to "
                    f"{self.retry_seconds:.0f} s; check the cluster's health)"
                ) from exc
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _ensure_indexes(self) -> None:
        for name, mapping in MAPPINGS.items():
            index = self.index[name]
            exists = self._call("opening", partial(self._client.indices.exists, index=index))
            if not exists:
                if self.read_only and name == "infos":  # written by a refind before session info
                    self._no_infos = True
                    continue
                if self.read_only:
                    raise IndexFormatError(
                        f"no refind index {index} at {self.location}; create one by adding messages"
                    )
                self._create(index, mapping)
            got = self._call("opening", partial(self._client.indices.get_mapping, index=index))
            meta = next(iter(got.values()))["mappings"].get("_meta", {})
            if meta.get("refind_format") != INDEX_FORMAT or meta.get("analyzer") != ANALYZER_NAME:
                raise IndexFormatError(
                    f"index {index} at {self.location} has refind format {meta.get('refind_format')} / "
                    f"analyzer {meta.get('analyzer')!r}; this refind writes format {INDEX_FORMAT} / "
                    f"{ANALYZER_NAME!r}: use another prefix, or the refind version that wrote it"
                )

    def _create(self, index: str, mapping: dict[str, Any]) -> None:
        from opensearchpy.exceptions import RequestError

        loc = self.loc
        settings: dict[str, Any] = {
            "number_of_shards": loc.shards,
            "refresh_interval": loc.refresh_interval,
            "translog.durability": "request",
            "merge.policy": "log_byte_size",  # adjacent segments only: ties keep insertion order
            "similarity": {
                "default": {
                    "type": "BM25",
                    "k1": float(self.settings.bm25_k1),
                    "b": float(self.settings.bm25_b),
                }
            },
        }
        if loc.replicas is None:
            settings["auto_expand_replicas"] = "0-1"
        else:
            settings["number_of_replicas"] = loc.replicas
        body = {
            "settings": {"index": settings, "analysis": ANALYSIS},
            "mappings": {**mapping, "_meta": _meta()},
        }
        try:
            self._call("creating indexes", lambda: self._client.indices.create(index=index, body=body))
        except StoreError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, RequestError) and "already_exists" in str(cause)):
                raise
        except RequestError as exc:  # another worker created it first
            if "already_exists" not in str(exc):
                raise StoreError(f"cannot create index {index} at {self.location}: {exc}") from exc
        self._call(
            "creating indexes",
            lambda: self._client.cluster.health(
                index=index, wait_for_status="yellow", params={"timeout": "60s"}, request_timeout=70
            ),
        )

    def _check(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")

    def _writable(self) -> None:
        self._check()
        if self.read_only:
            raise ReadOnlyError(f"{self.location} was opened read-only; open it without read_only to write")

    def _next_seq(self) -> int:
        """Insertion order: microseconds since the epoch, strictly increasing in this process."""
        with self._lock:
            self._seq = max(self._seq + 1, time.time_ns() // 1000)
            return self._seq

    def _search(self, index: str, body: dict[str, Any], routing: str | None) -> dict[str, Any]:
        kw: dict[str, Any] = {"index": self.index[index], "body": body}
        if routing is not None:
            kw["routing"] = routing
        return self._call("search", lambda: self._client.search(**kw))  # type: ignore[no-any-return]

    def _scan(
        self, index: str, query: dict[str, Any], routing: str | None, page: int = _PAGE, **extra: Any
    ) -> Iterator[dict[str, Any]]:
        """Every document matching ``query``, in insertion order (``seq``), paged with search_after
        (``page``: documents per request; a good guess of the total saves the shard a large queue)."""
        page = max(1, min(page, _PAGE))
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "query": query,
                "size": page,
                "sort": [{"seq": "asc"}, {"mid" if index == "messages" else "session_id": "asc"}],
                "track_total_hits": False,
                **extra,
            }
            if after is not None:
                body["search_after"] = after
            hits = self._search(index, body, routing)["hits"]["hits"]
            yield from hits
            if len(hits) < page:
                return
            after = hits[-1]["sort"]

    @staticmethod
    def _user(user_id: str) -> dict[str, Any]:
        return {"term": {"user_id": user_id}}

    def _filtered(self, user_id: str, filters: Filters | None, main: dict[str, Any] | None) -> dict[str, Any]:
        must = [main] if main is not None else []
        flt: list[dict[str, Any]] = [self._user(user_id)]
        must_not: list[dict[str, Any]] = []
        f = filters
        if f is not None:
            if f.time_from is not None or f.time_to is not None:
                rng: dict[str, int] = {}
                if f.time_from is not None:
                    rng["gte"] = int(f.time_from)
                if f.time_to is not None:
                    rng["lte"] = int(f.time_to)
                flt.append({"range": {"ts": rng}})
            if f.session_ids is not None:
                flt.append({"terms": {"session_id": list(f.session_ids)}})
            if f.roles is not None:
                flt.append({"terms": {"role": [r.lower() for r in f.roles]}})
            if f.exclude_ids:
                must_not.append({"terms": {"id": list(f.exclude_ids)}})
            if f.exclude_sessions:
                must_not.append({"terms": {"session_id": list(f.exclude_sessions)}})
        q: dict[str, Any] = {"filter": flt}
        if must:
            q["must"] = must
        if must_not:
            q["must_not"] = must_not
        return {"bool": q}

    def _hits(self, raw_hits: Sequence[dict[str, Any]], scored: bool, content: bool) -> list[Hit]:
        out = []
        for h in raw_hits:
            score = _float32(h["_score"]) if scored and h.get("_score") is not None else 0.0
            out.append(_hit_raw(h["_source"]["raw"], score) if content else _hit_fields(h["fields"], score))
        return out

    @staticmethod
    def _source(content: bool) -> dict[str, Any]:
        if content:
            return {"_source": ["raw"]}
        return {"_source": False, "docvalue_fields": _HIT_FIELDS}

    # ------------------------------------------------------------------ reading

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text`` (the chain the indexes' ``refind`` analyzer runs)."""
        self._check()
        if not text or not text.strip():
            return []
        return _analyze(text)

    def query(
        self, user_id: str, text: str, k: int = 10, filters: Filters | None = None, *, content: bool = True
    ) -> list[Hit]:
        self._check()
        if k <= 0 or not text or not text.strip():
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        body = {
            "query": self._filtered(user_id, filters, _should(bag)),
            "size": int(k),
            "sort": [{"_score": "desc"}, {"seq": "asc"}],
            "track_total_hits": False,
            **self._source(content),
        }
        return self._hits(self._search("messages", body, user_id)["hits"]["hits"], True, content)

    def query_sessions(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        self._check()
        if k <= 0 or not text or not text.strip():
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        flt: list[dict[str, Any]] = [self._user(user_id)]
        if session_ids is not None:
            flt.append({"terms": {"session_id": list(session_ids)}})
        body = {
            "query": {"bool": {"must": [_should(bag)], "filter": flt}},
            "size": int(k),
            "sort": [{"_score": "desc"}, {"seq": "asc"}],
            "track_total_hits": False,
            "_source": False,
            "docvalue_fields": ["session_id"],
        }
        hits = self._search("sessions", body, user_id)["hits"]["hits"]
        return [(h["fields"]["session_id"][0], _float32(h["_score"])) for h in hits]

    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]:
        self._check()
        if not spans:
            return []
        out: list[list[Hit]] = [[] for _ in spans]
        by_session: dict[str, list[int]] = {}
        for i, (sid, first, last) in enumerate(spans):
            if min(int(last), _MAX_TURN) >= max(int(first), 0):
                by_session.setdefault(sid, []).append(i)
        chunks: list[list[str]] = []
        used = _CLAUSES
        for sid, idx in by_session.items():
            cost = 2 + min(len(idx), 64)
            if used + cost > _CLAUSES:
                chunks.append([])
                used = 0
            chunks[-1].append(sid)
            used += cost
        for chunk in chunks:
            should = []
            expected = 0  # turns the chunk's spans can hold: the first page's size
            for sid in chunk:
                idx = by_session[sid]
                expected += (
                    _PAGE
                    if len(idx) > 64
                    else sum(min(int(spans[i][2]), _MAX_TURN) - max(int(spans[i][1]), 0) + 1 for i in idx)
                )
                idx = by_session[sid]
                one: list[dict[str, Any]] = [{"term": {"session_id": sid}}]
                if len(idx) <= 64:
                    ranges = [
                        {"range": {"turn": {"gte": max(int(spans[i][1]), 0),
                                            "lte": min(int(spans[i][2]), _MAX_TURN)}}}
                        for i in idx
                    ]  # fmt: skip
                    one.append({"bool": {"should": ranges}})
                should.append({"bool": {"filter": one}})
            query = {"bool": {"filter": [self._user(user_id), {"bool": {"should": should}}]}}
            scan = self._scan("messages", query, user_id, page=expected + 1, _source=["raw"])
            for h in self._hits(list(scan), False, True):
                for i in by_session.get(h.session_id, ()):
                    if spans[i][1] <= h.turn <= spans[i][2]:
                        out[i].append(h)
        for group in out:
            group.sort(key=lambda h: h.turn)  # stable: equal turns in insertion order
        return out

    def browse(
        self, user_id: str, k: int, filters: Filters | None = None, newest_first: bool = True
    ) -> list[Hit]:
        self._check()
        if k <= 0:
            return []
        body = {
            "query": self._filtered(user_id, filters, None),
            "size": int(k),
            "sort": [{"ts": "desc" if newest_first else "asc"}, {"seq": "asc"}],
            "track_total_hits": False,
            "_source": ["raw"],
        }
        return self._hits(self._search("messages", body, user_id)["hits"]["hits"], False, True)

    def term_counts(self, user_id: str, text: str) -> dict[str, int]:
        self._check()
        if not text or not text.strip():
            return {}
        kept = {t for t, _ in query_bag(_analyze(text))}
        terms = [t for t in dict.fromkeys(_analyze(text)) if t in kept]
        if not terms:
            return {}
        aggs = {f"t{i}": {"filter": {"term": {"contents": t}}} for i, t in enumerate(terms)}
        body = {"query": {"bool": {"filter": [self._user(user_id)]}}, "size": 0, "aggs": aggs}
        got = self._search("messages", body, user_id)["aggregations"]
        return {t: int(got[f"t{i}"]["doc_count"]) for i, t in enumerate(terms)}

    def _mget(self, index: str, docs: list[tuple[str, str]], source: Any) -> list[dict[str, Any]]:
        """Documents by (routing, _id), realtime (what is committed, refreshed or not); found ones only."""
        out: list[dict[str, Any]] = []
        for i in range(0, len(docs), _PAGE):
            part = [{"_id": d, "routing": r} for r, d in docs[i : i + _PAGE]]
            got = self._call(
                "lookup",
                partial(self._client.mget, index=self.index[index], body={"docs": part}, _source=source),
            )
            out.extend(d for d in got["docs"] if d.get("found"))
        return out

    def get(self, user_id: str, ids: Sequence[str]) -> list[Hit]:
        self._check()
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        found = self._mget(
            "messages", [(user_id, _doc_id(user_id, i)) for i in ids], ["raw", "seq", "user_id"]
        )
        found = [d for d in found if d["_source"].get("user_id") == user_id]
        found.sort(key=lambda d: d["_source"]["seq"])
        return [_hit_raw(d["_source"]["raw"]) for d in found]

    def count(self, user_id: str | None = None) -> int:
        self._check()
        kw: dict[str, Any] = {"index": self.index["messages"]}
        if user_id is not None:
            kw["body"] = {"query": {"bool": {"filter": [self._user(user_id)]}}}
            kw["routing"] = user_id
        return int(self._call("count", lambda: self._client.count(**kw))["count"])

    def refresh(self) -> None:
        """Reads are always current: every commit (of any worker) waits for its refresh."""
        self._check()

    def users(self) -> list[str]:
        self._check()
        users: list[str] = []
        after: dict[str, Any] | None = None
        while True:
            comp: dict[str, Any] = {"size": 1000, "sources": [{"u": {"terms": {"field": "user_id"}}}]}
            if after is not None:
                comp["after"] = after
            body = {"size": 0, "aggs": {"users": {"composite": comp}}}
            got = self._search("messages", body, None)["aggregations"]["users"]
            users.extend(b["key"]["u"] for b in got["buckets"])
            after = got.get("after_key")
            if not got["buckets"] or after is None:
                return sorted(users)

    def session_infos(self, user_id: str, session_ids: Sequence[str] | None = None) -> dict[str, SessionInfo]:
        self._check()
        if self._no_infos or (session_ids is not None and not session_ids):
            return {}
        flt: list[dict[str, Any]] = [self._user(user_id)]
        if session_ids is not None:
            flt.append({"terms": {"session_id": list(dict.fromkeys(session_ids))}})
        out = {}
        for h in self._scan("infos", {"bool": {"filter": flt}}, user_id, _source=["raw"]):
            sid, title, source, project = json.loads(h["_source"]["raw"])
            out[sid] = SessionInfo(user_id, sid, title, source, project)
        return out

    def query_titles(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        self._check()
        if self._no_infos or k <= 0 or not text or not text.strip():
            return []
        if session_ids is not None and not session_ids:
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        flt: list[dict[str, Any]] = [self._user(user_id)]
        if session_ids is not None:
            flt.append({"terms": {"session_id": list(session_ids)}})
        body = {
            "query": {"bool": {"must": [_should(bag, "title")], "filter": flt}},
            "size": int(k),
            "sort": [{"_score": "desc"}, {"seq": "asc"}],
            "track_total_hits": False,
            "_source": False,
            "docvalue_fields": ["session_id"],
        }
        hits = self._search("infos", body, user_id)["hits"]["hits"]
        return [(h["fields"]["session_id"][0], _float32(h["_score"])) for h in hits]

    def session_summaries(self, user_id: str) -> list[SessionCounts]:
        self._check()
        out: list[SessionCounts] = []
        after: dict[str, Any] | None = None
        while True:
            comp: dict[str, Any] = {"size": 1000, "sources": [{"s": {"terms": {"field": "session_id"}}}]}
            if after is not None:
                comp["after"] = after
            body = {
                "size": 0,
                "query": {"bool": {"filter": [self._user(user_id)]}},
                "aggs": {
                    "sessions": {
                        "composite": comp,
                        "aggs": {"first": {"min": {"field": "ts"}}, "last": {"max": {"field": "ts"}}},
                    }
                },
            }
            got = self._search("messages", body, user_id)["aggregations"]["sessions"]
            out.extend(
                SessionCounts(
                    b["key"]["s"], int(b["doc_count"]), int(b["first"]["value"]), int(b["last"]["value"])
                )
                for b in got["buckets"]
            )
            after = got.get("after_key")
            if not got["buckets"] or after is None:
                return out

    # ------------------------------------------------------------------ write-side reads

    def session_states(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], SessionState]:
        """Each stored session's last turn and whole text, from its session document (read in real time:
        the base of the compare-and-set of this process's next write of it), or from its messages when it
        has no document or the document holds no tail."""
        self._check()
        keys = [(u, s) for u, sids in wanted.items() for s in dict.fromkeys(sids)]
        if not keys:
            return {}
        docs = self._mget(
            "sessions", [(u, _doc_id(u, s)) for u, s in keys], ["user_id", "session_id", "contents", "tail"]
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
            tail = _hit_raw(src["tail"]) if src.get("tail") else None
            out[key] = SessionState(tail=tail, text=src.get("contents"))
            if tail is None:
                missing_tail.setdefault(key[0], []).append(key[1])
        for user, sids in missing_tail.items():
            for sid, tail in self._tails(user, sids).items():
                prior = out.get((user, sid))
                out[(user, sid)] = SessionState(tail=tail, text=prior.text if prior else None)
        with self._lock:
            self._reads.update(reads)
        return {k: out[k] for k in keys if k in out}

    def _tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, Hit]:
        """The last turn of each session (the first stored at the highest turn), from its messages."""
        out: dict[str, Hit] = {}
        for i in range(0, len(session_ids), 1000):
            part = list(session_ids[i : i + 1000])
            body = {
                "size": 0,
                "query": {"bool": {"filter": [self._user(user_id), {"terms": {"session_id": part}}]}},
                "aggs": {
                    "s": {
                        "terms": {"field": "session_id", "size": len(part)},
                        "aggs": {
                            "tail": {
                                "top_hits": {
                                    "size": 1,
                                    "sort": [{"turn": "desc"}, {"seq": "asc"}],
                                    "_source": ["raw"],
                                }
                            }
                        },
                    }
                },
            }
            got = self._search("messages", body, user_id)["aggregations"]["s"]["buckets"]
            for b in got:
                out[b["key"]] = _hit_raw(b["tail"]["hits"]["hits"][0]["_source"]["raw"])
        return out

    def existing(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Hit]:
        self._check()
        pairs = [(u, i) for u, ids in wanted.items() for i in dict.fromkeys(ids)]
        if not pairs:
            return {}
        found = self._mget("messages", [(u, _doc_id(u, i)) for u, i in pairs], ["raw", "user_id"])
        out = {}
        for d in found:
            h = _hit_raw(d["_source"]["raw"])
            out[(d["_source"]["user_id"], h.id)] = Hit.trusted(
                h.id, h.session_id, h.turn, h.timestamp, h.role, None, "", 0.0, None
            )
        return out

    def session_turns(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], list[Hit]]:
        self._check()
        out: dict[tuple[str, str], list[Hit]] = {}
        for user, sids in wanted.items():
            sids = list(dict.fromkeys(sids))
            for i in range(0, len(sids), _CLAUSES):
                query = {
                    "bool": {"filter": [self._user(user), {"terms": {"session_id": sids[i : i + _CLAUSES]}}]}
                }
                for h in self._hits(list(self._scan("messages", query, user, _source=["raw"])), False, True):
                    out.setdefault((user, h.session_id), []).append(h)
        for turns in out.values():
            turns.sort(key=lambda h: h.turn)
        return out

    def request_marker(self, user_id: str, request_id: str) -> str | None:
        """The payload of a committed (done) marker, else None: a marker another writer claimed and has not
        committed yet is not one (the claim in :meth:`write` then waits for that writer)."""
        self._check()
        doc = self._marker(user_id, request_id)
        if doc is None or doc["_source"]["state"] != "done":
            with self._lock:
                self._checked.add((user_id, request_id))
                if len(self._checked) > 100_000:
                    self._checked.clear()
            return None
        with self._lock:
            self._checked.discard((user_id, request_id))
        return str(doc["_source"]["payload"])

    def _marker(self, user_id: str, request_id: str) -> dict[str, Any] | None:
        from opensearchpy.exceptions import NotFoundError

        doc_id = _doc_id(user_id, request_id)
        try:
            return self._call(  # type: ignore[no-any-return]
                "request lookup",
                lambda: self._client.get(index=self.index["requests"], id=doc_id, routing=user_id),
            )
        except NotFoundError:
            return None

    def _stale(self, src: Mapping[str, Any]) -> bool:
        return time.time() * 1000 - float(src.get("claimed", 0)) > self.stale_after * 1000

    # ------------------------------------------------------------------ writing

    def write(self, batch: WriteBatch) -> None:
        """Buffer ``batch`` for the next commit; claim its request marker now (see the module docstring):
        :class:`~refind.RequestConflict` when another writer used the request id with another body,
        :class:`~refind.store.base.AlreadyApplied` when it applied the same one."""
        self._writable()
        claim = (
            self._claim(batch.marker.user_id, batch.marker.request_id, batch.marker.payload)
            if batch.marker
            else None
        )
        with self._lock:
            self._check()
            self._pending.ops.append(("batch", (batch, claim)))

    def _claim(self, user_id: str, request_id: str, payload: str) -> _Claim:
        from opensearchpy.exceptions import ConflictError

        doc_id = _doc_id(user_id, request_id)
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
                got = self._call(
                    "request claim",
                    partial(
                        self._client.index,
                        index=index,
                        id=doc_id,
                        routing=user_id,
                        body=body,
                        op_type="create",
                        refresh="false",
                    ),  # fmt: skip
                )
                return _Claim(user_id, request_id, doc_id, int(got["_seq_no"]), int(got["_primary_term"]))
            except ConflictError:
                pass
            doc = self._marker(user_id, request_id)
            if doc is None:
                continue  # released meanwhile: claim again
            src = doc["_source"]
            if src.get("owner") == self._token and src["state"] == "pending" and src.get("claimed") == now:
                return _Claim(user_id, request_id, doc_id, int(doc["_seq_no"]), int(doc["_primary_term"]))
            replace = not checked and src["state"] == "done"  # a plain write over a committed marker
            if not replace and _digest(src["payload"]) != _digest(payload):
                raise RequestConflict(
                    f"request_id {request_id!r} was already used with a different body; nothing was written. "
                    "Use a new request_id for new content"
                )
            if src["state"] == "done" and not replace:
                raise AlreadyApplied(request_id)
            if replace or self._stale(src) or time.monotonic() > deadline:  # its writer died: take it over
                try:
                    got = self._call(
                        "request claim",
                        partial(
                            self._client.index,
                            index=index, id=doc_id, routing=user_id, body=body, refresh="false",
                            if_seq_no=doc["_seq_no"], if_primary_term=doc["_primary_term"],
                        ),
                    )  # fmt: skip
                    if not replace:
                        log.warning(
                            "took over request %r of user %r, abandoned by its writer", request_id, user_id
                        )
                    return _Claim(user_id, request_id, doc_id, int(got["_seq_no"]), int(got["_primary_term"]))
                except ConflictError:
                    continue
            time.sleep(0.05)

    def commit(self) -> None:
        """Send everything written so far (see the module docstring); durable and visible on return."""
        self._writable()
        with self._commit_lock:
            with self._lock:
                ops, self._pending.ops = self._pending.ops, []
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
                if not records or s.text is None or key not in reads:  # tail: from the messages
                    tails[key] = None
                    continue
                prior = tails.get(key, reads[key].tail)
                last = max(records, key=lambda r: r.turn)
                if prior is None or last.turn >= int(json.loads(prior)["turn"]):
                    prior = _raw(last)
                tails[key] = prior
        actions: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        cas: dict[int, tuple[str, str]] = {}
        for key, s in docs.items():
            user, sid = key
            meta: dict[str, Any] = {
                "_index": self.index["sessions"],
                "_id": _doc_id(user, sid),
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
        raced: set[tuple[str, str]] = set()
        undo: list[
            tuple[tuple[str, str], int, int, _Read]
        ] = []  # CAS'd session documents: (key, seq, term, read)
        with self._lock:
            for key in docs:
                self._reads.pop(key, None)  # the next write of it reads it again
        if actions:
            results = self._bulk(actions, "wait_for")
            for i, (status, item) in enumerate(results):
                if status == 409 and i in cas:
                    if not self._written_by(cas[i], token):
                        raced.add(cas[i])
                elif status >= 300 and not (status == 404 and "delete" in actions[i][0]):
                    raise StoreError(f"OpenSearch at {self.location} refused a session document: {item}")
                elif i in cas and status < 300 and "_seq_no" in item:
                    undo.append((cas[i], int(item["_seq_no"]), int(item["_primary_term"]), reads[cas[i]]))
        try:
            self._send_messages(run, raced)
        except WriteRaced:  # everything but the raced sessions was written, and stays
            raise
        except BaseException:
            self._undo(run, raced, undo)
            raise

    def _send_messages(
        self, run: list[tuple[WriteBatch, _Claim | None]], raced: set[tuple[str, str]]
    ) -> None:
        # the messages (not those of raced sessions), then the markers of the batches fully written
        writes: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        added = int(time.time() * 1000)
        for batch, _ in run:
            for r in batch.records:
                if (r.user_id, r.session_id) in raced:
                    continue
                doc_id = _doc_id(r.user_id, r.id)
                meta = {"_index": self.index["messages"], "_id": doc_id, "routing": r.user_id}
                writes.append(({"index": meta}, {
                    "user_id": r.user_id, "session_id": r.session_id, "id": r.id, "mid": doc_id,
                    "role": r.role, "turn": int(r.turn), "ts": int(r.timestamp), "added": added,
                    "seq": self._next_seq(), "contents": r.content, "raw": _raw(r),
                }))  # fmt: skip
            for info in batch.infos:
                if (info.user_id, info.session_id) in raced:
                    continue
                raw = json.dumps([info.session_id, info.title, info.source, info.project], ensure_ascii=False)
                meta = {
                    "_index": self.index["infos"], "_id": _doc_id(info.user_id, info.session_id),
                    "routing": info.user_id,
                }  # fmt: skip
                body: dict[str, Any] = {
                    "user_id": info.user_id, "session_id": info.session_id, "seq": self._next_seq(),
                    "source": info.source, "project": info.project, "raw": raw,
                }  # fmt: skip
                if info.title is not None:
                    body["title"] = info.title
                writes.append(({"index": meta}, body))
        if writes:
            for status, item in self._bulk(writes, "wait_for"):
                if status >= 300:
                    raise StoreError(f"OpenSearch at {self.location} refused a message: {item}")
        done: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
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
            for status, item in self._bulk(done, "false"):
                if status >= 300:
                    raise StoreError(f"OpenSearch at {self.location} could not record a request id: {item}")
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
        actions: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        for batch, _ in run:
            for r in batch.records:
                if not r.replace and (r.user_id, r.session_id) not in raced:
                    meta: dict[str, Any] = {
                        "_index": self.index["messages"],
                        "_id": _doc_id(r.user_id, r.id),
                        "routing": r.user_id,
                    }
                    actions.append(({"delete": meta}, None))
        for (user, sid), seq_no, term, read in sessions:
            meta = {
                "_index": self.index["sessions"], "_id": _doc_id(user, sid), "routing": user,
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
            lines: list[Any] = [
                x for meta, body in actions for x in ((meta,) if body is None else (meta, body))
            ]
            self._client.bulk(body=lines, refresh="wait_for", request_timeout=10)
        except Exception as exc:
            log.warning(
                "could not undo a failed commit on %s (%s); its messages may stay", self.location, exc
            )

    def _written_by(self, key: tuple[str, str], token: str) -> bool:
        """Whether the session document of ``key`` holds this commit's write (a retried CAS that had landed)."""
        found = self._mget("sessions", [(key[0], _doc_id(*key))], ["w"])
        return bool(found) and found[0]["_source"].get("w") == token

    def _bulk(
        self, actions: list[tuple[dict[str, Any], dict[str, Any] | None]], refresh: str
    ) -> list[tuple[int, Any]]:
        """One bulk request (in slices); items failing with 429 or 5xx are sent again (bounded); returns
        (status, item) per action."""
        results: list[tuple[int, Any]] = [(0, None)] * len(actions)
        todo = list(range(len(actions)))
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.1
        while todo:
            again: list[int] = []
            for start in range(0, len(todo), 2000):
                part = todo[start : start + 2000]
                lines: list[Any] = []
                for i in part:
                    meta, body = actions[i]
                    lines.append(meta)
                    if body is not None:
                        lines.append(body)
                got = self._call("write", partial(self._client.bulk, body=lines, refresh=refresh))
                for i, item in zip(part, got["items"], strict=True):
                    (result,) = item.values()
                    status = int(result.get("status", 500))
                    results[i] = (status, result)
                    if status == 429 or status >= 500:
                        again.append(i)
            todo = again
            if todo:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"OpenSearch at {self.location} kept refusing {len(todo)} write(s): {results[todo[0]][1]}"
                    )
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        return results

    def _release(self, claims: Sequence[_Claim]) -> None:
        """Delete this process's pending claims (best effort), so a retry of their adds can write."""
        for c in claims:
            try:
                self._client.delete(
                    index=self.index["requests"], id=c.doc_id, routing=c.user_id,
                    if_seq_no=c.seq_no, if_primary_term=c.primary_term, refresh="false",
                )  # fmt: skip
            except Exception as exc:  # the claim goes stale and is taken over
                log.debug("could not release request claim %s: %s", c.request_id, exc)

    def delete_user(self, user_id: str) -> int:
        self._writable()
        before = self.count(user_id)
        query = {"bool": {"filter": [self._user(user_id)]}}
        for name in ("messages", "sessions", "infos", "requests"):
            self._delete_matching(name, query, user_id)
        with self._lock:
            self._reads = {k: v for k, v in self._reads.items() if k[0] != user_id}
        return before

    def delete_session(self, user_id: str, session_id: str) -> int:
        """Delete one session (its messages, document and info), after committing what was written."""
        self._writable()
        self.commit()
        query = {"bool": {"filter": [self._user(user_id), {"term": {"session_id": session_id}}]}}
        kw: dict[str, Any] = {"index": self.index["messages"], "body": {"query": query}, "routing": user_id}
        before = int(self._call("count", lambda: self._client.count(**kw))["count"])
        for name in ("messages", "sessions", "infos"):
            self._delete_matching(name, query, user_id)
        with self._lock:
            self._reads.pop((user_id, session_id), None)
        return before

    def _delete_matching(self, name: str, query: dict[str, Any], routing: str | None) -> None:
        """Delete every document of index ``name`` matching ``query`` (found by a scan, deleted in bulk,
        refreshed: the node needs no reindex module for delete-by-query)."""
        index = self.index[name]
        if name != "messages":  # seq and a unique tiebreak are what _scan pages by; these are small: one page
            self._call("refresh", lambda: self._client.indices.refresh(index=index))
        while True:
            body = {"query": query, "size": _PAGE, "_source": ["user_id"], "track_total_hits": False}
            hits = self._search(name, body, routing)["hits"]["hits"]
            if not hits:
                return
            actions: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
                ({"delete": {"_index": index, "_id": h["_id"], "routing": h["_source"]["user_id"]}}, None)
                for h in hits
            ]
            for status, item in self._bulk(actions, "true"):
                if status >= 300 and status != 404:
                    raise StoreError(f"OpenSearch at {self.location} refused a delete: {item}")

    def expire(self, cutoff_ms: int) -> Expired:
        """Retention (applied at the next commit): messages and markers added before ``cutoff_ms``."""
        self._writable()
        cutoff = int(cutoff_ms)
        old = {"range": {"added": {"lt": cutoff}}}
        removed = 0
        affected: dict[tuple[str, str], None] = {}
        for h in self._scan("messages", {"bool": {"filter": [old]}}, None, _source=["user_id", "session_id"]):
            removed += 1
            affected[(h["_source"]["user_id"], h["_source"]["session_id"])] = None
        sessions = []
        for user, sid in affected:
            query = {"bool": {"filter": [self._user(user), {"term": {"session_id": sid}}], "must_not": [old]}}
            left = self._hits(list(self._scan("messages", query, user, _source=["raw"])), False, True)
            left.sort(key=lambda h: h.turn)
            sessions.append((user, sid, [h.content for h in left]))
        with self._lock:
            self._pending.ops.append(("expire", cutoff))
        return Expired(removed=removed, sessions=sessions)

    def _expire_now(self, cutoff: int) -> None:
        for name in ("messages", "requests"):
            self._delete_matching(name, {"bool": {"filter": [{"range": {"added": {"lt": cutoff}}}]}}, None)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Drop what was written and not committed, close the connections. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            ops, self._pending.ops = self._pending.ops, []
        claims = [v[1] for kind, v in ops if kind == "batch" and v[1] is not None]
        if claims and not self.read_only:
            self._release(claims)
        with contextlib.suppress(Exception):  # closing sockets
            self._client.close()

    def drop(self) -> None:
        """Delete this prefix's indexes (tests and benchmarks)."""
        self._client.indices.delete(index=",".join(self.index.values()), ignore_unavailable=True)

    def __enter__(self) -> OpenSearchStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenSearchStore({self.location!r}{', read-only' if self.read_only else ''})"


def _digest(payload: str) -> str:
    """The body digest a write-path marker payload records (the payload itself when it is not JSON)."""
    try:
        d = json.loads(payload)
    except ValueError:
        return payload
    return str(d.get("digest", payload)) if isinstance(d, dict) else payload
