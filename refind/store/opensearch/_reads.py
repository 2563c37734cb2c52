"""Reads: the queries of the engine protocol's reads over the indexes, built from analyzed terms and
filters only, and the hits read back.

Every query is a ``bool`` of ``term``/``terms``/``range`` clauses (``filter``; the read-set in
``must_not``) around a ``should`` of the query's analyzed terms, each a ``term`` query boosted by its count:
query text is analyzed here, by :func:`refind.store.analysis.analyze` (the terms of Lucene's chain, checked
against the Java engine by the contract suite), and never reaches OpenSearch as query syntax. Every read
filters on ``user_id`` and is routed by it. BM25 statistics are per shard (docs/scale-out.md, "Same answers").
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from refind.models import Hit
from refind.store.analysis import analyze as _analyze
from refind.store.base import Filters, SessionCounts, SessionInfo, StandingMark, query_bag
from refind.store.opensearch._schema import HIT_FIELDS, MAX_TURN, doc_id, hit_fields, hit_raw
from refind.store.opensearch._transport import PAGE, Transport

__all__ = ["CLAUSES", "Reads", "user_term"]

CLAUSES = 900
"""Clauses per query, under OpenSearch's default limit of 1024."""


_TIEBREAK = {
    "messages": "mid",
    "vectors": "mid",
    "marks": "id",
}  # scan's order within one seq (else session_id)


def user_term(user_id: str) -> dict[str, Any]:
    return {"term": {"user_id": user_id}}


def _mark(source: Mapping[str, Any]) -> StandingMark:
    """A stored mark: pinned as its ``kind``, or hidden (no kind)."""
    kind = source.get("kind")
    return StandingMark(kind if kind in ("instruction", "preference", "fact") else None, int(source["seq"]))


def _should(bag: Sequence[tuple[str, int]], name: str = "contents") -> dict[str, Any]:
    return {
        "bool": {
            "should": [
                {"term": {name: {"value": t, "boost": n}}} if n > 1 else {"term": {name: t}} for t, n in bag
            ]
        }
    }


def _float32(x: Any) -> float:
    return float(struct.unpack("f", struct.pack("f", float(x)))[0])


def _filtered(user_id: str, filters: Filters | None, main: dict[str, Any] | None) -> dict[str, Any]:
    must = [main] if main is not None else []
    flt: list[dict[str, Any]] = [user_term(user_id)]
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
        if f.any_terms is not None:  # the analyzed terms, as the field indexes them
            flt.append({"terms": {"contents": list(f.any_terms)}})
    q: dict[str, Any] = {"filter": flt}
    if must:
        q["must"] = must
    if must_not:
        q["must_not"] = must_not
    return {"bool": q}


def hits(raw_hits: Sequence[dict[str, Any]], scored: bool, content: bool) -> list[Hit]:
    """Hits from search hits read with :func:`_source` (``raw`` with content, doc values without)."""
    out = []
    for h in raw_hits:
        score = _float32(h["_score"]) if scored and h.get("_score") is not None else 0.0
        out.append(hit_raw(h["_source"]["raw"], score) if content else hit_fields(h["fields"], score))
    return out


def _source(content: bool) -> dict[str, Any]:
    if content:
        return {"_source": ["raw"]}
    return {"_source": False, "docvalue_fields": HIT_FIELDS}


class Reads:
    """The reads of one prefix's indexes (``index``: name -> full index name) over ``transport``."""

    def __init__(self, transport: Transport, index: Mapping[str, str]) -> None:
        self.t = transport
        self.index = index
        self.no_infos = False  # a reader of a prefix written before session info: it has none
        self.no_tombstones = False  # a reader of a prefix written before tombstones: it has none
        self.no_marks = False  # a reader of a prefix written before marks (issue 37): it has none

    def search(self, name: str, body: dict[str, Any], routing: str | None) -> dict[str, Any]:
        return self.t.search(self.index[name], body, routing)

    def mget(self, name: str, docs: Sequence[tuple[str, str]], source: Any) -> list[dict[str, Any]]:
        return self.t.mget(self.index[name], docs, source)

    def scan(
        self, name: str, query: dict[str, Any], routing: str | None, page: int = PAGE, **extra: Any
    ) -> Iterator[dict[str, Any]]:
        """Every document matching ``query``, in insertion order (``seq``), paged with search_after
        (``page``: documents per request; a good guess of the total saves the shard a large queue)."""
        page = max(1, min(page, PAGE))
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "query": query,
                "size": page,
                "sort": [{"seq": "asc"}, {_TIEBREAK.get(name, "session_id"): "asc"}],
                "track_total_hits": False,
                **extra,
            }
            if after is not None:
                body["search_after"] = after
            found = self.search(name, body, routing)["hits"]["hits"]
            yield from found
            if len(found) < page:
                return
            after = found[-1]["sort"]

    # ------------------------------------------------------------------ the Reader protocol

    def analyze(self, text: str) -> list[str]:
        self.t.check()
        if not text or not text.strip():
            return []
        return _analyze(text)

    def query(self, user_id: str, text: str, k: int, filters: Filters | None, content: bool) -> list[Hit]:
        self.t.check()
        if k <= 0 or not text or not text.strip():
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        body = {
            "query": _filtered(user_id, filters, _should(bag)),
            "size": int(k),
            "sort": [{"_score": "desc"}, {"seq": "asc"}],
            "track_total_hits": False,
            **_source(content),
        }
        return hits(self.search("messages", body, user_id)["hits"]["hits"], True, content)

    def query_sessions(
        self, user_id: str, text: str, k: int, session_ids: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        self.t.check()
        if k <= 0 or not text or not text.strip():
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        flt: list[dict[str, Any]] = [user_term(user_id)]
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
        found = self.search("sessions", body, user_id)["hits"]["hits"]
        return [(h["fields"]["session_id"][0], _float32(h["_score"])) for h in found]

    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]:
        self.t.check()
        if not spans:
            return []
        out: list[list[Hit]] = [[] for _ in spans]
        by_session: dict[str, list[int]] = {}
        for i, (sid, first, last) in enumerate(spans):
            if min(int(last), MAX_TURN) >= max(int(first), 0):
                by_session.setdefault(sid, []).append(i)
        chunks: list[list[str]] = []
        used = CLAUSES
        for sid, idx in by_session.items():
            cost = 2 + min(len(idx), 64)
            if used + cost > CLAUSES:
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
                    PAGE
                    if len(idx) > 64
                    else sum(min(int(spans[i][2]), MAX_TURN) - max(int(spans[i][1]), 0) + 1 for i in idx)
                )
                one: list[dict[str, Any]] = [{"term": {"session_id": sid}}]
                if len(idx) <= 64:
                    ranges = [
                        {"range": {"turn": {"gte": max(int(spans[i][1]), 0),
                                            "lte": min(int(spans[i][2]), MAX_TURN)}}}
                        for i in idx
                    ]  # fmt: skip
                    one.append({"bool": {"should": ranges}})
                should.append({"bool": {"filter": one}})
            query = {"bool": {"filter": [user_term(user_id), {"bool": {"should": should}}]}}
            scan = self.scan("messages", query, user_id, page=expected + 1, _source=["raw"])
            for h in hits(list(scan), False, True):
                for i in by_session.get(h.session_id, ()):
                    if spans[i][1] <= h.turn <= spans[i][2]:
                        out[i].append(h)
        for group in out:
            group.sort(key=lambda h: h.turn)  # stable: equal turns in insertion order
        return out

    def browse(self, user_id: str, k: int, filters: Filters | None, newest_first: bool) -> list[Hit]:
        self.t.check()
        if k <= 0:
            return []
        body = {
            "query": _filtered(user_id, filters, None),
            "size": int(k),
            "sort": [{"ts": "desc" if newest_first else "asc"}, {"seq": "asc"}],
            "track_total_hits": False,
            "_source": ["raw"],
        }
        return hits(self.search("messages", body, user_id)["hits"]["hits"], False, True)

    def term_counts(self, user_id: str, text: str) -> dict[str, int]:
        self.t.check()
        if not text or not text.strip():
            return {}
        kept = {t for t, _ in query_bag(_analyze(text))}
        terms = [t for t in dict.fromkeys(_analyze(text)) if t in kept]
        if not terms:
            return {}
        aggs = {f"t{i}": {"filter": {"term": {"contents": t}}} for i, t in enumerate(terms)}
        body = {"query": {"bool": {"filter": [user_term(user_id)]}}, "size": 0, "aggs": aggs}
        got = self.search("messages", body, user_id)["aggregations"]
        return {t: int(got[f"t{i}"]["doc_count"]) for i, t in enumerate(terms)}

    def get(self, user_id: str, ids: Sequence[str]) -> list[Hit]:
        self.t.check()
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        found = self.mget("messages", [(user_id, doc_id(user_id, i)) for i in ids], ["raw", "seq", "user_id"])
        found = [d for d in found if d["_source"].get("user_id") == user_id]
        found.sort(key=lambda d: d["_source"]["seq"])
        return [hit_raw(d["_source"]["raw"]) for d in found]

    def count(self, user_id: str | None) -> int:
        self.t.check()
        kw: dict[str, Any] = {"index": self.index["messages"]}
        if user_id is not None:
            kw["body"] = {"query": {"bool": {"filter": [user_term(user_id)]}}}
            kw["routing"] = user_id
        return int(self.t.call("count", lambda: self.t.client.count(**kw))["count"])

    def session_infos(self, user_id: str, session_ids: Sequence[str] | None) -> dict[str, SessionInfo]:
        if self.no_infos or (session_ids is not None and not session_ids):
            return {}
        flt: list[dict[str, Any]] = [user_term(user_id)]
        if session_ids is not None:
            flt.append({"terms": {"session_id": list(dict.fromkeys(session_ids))}})
        out = {}
        for h in self.scan("infos", {"bool": {"filter": flt}}, user_id, _source=["raw"]):
            sid, title, source, project = json.loads(h["_source"]["raw"])
            out[sid] = SessionInfo(user_id, sid, title, source, project)
        return out

    def tombstones(self, user_id: str | None) -> dict[str, dict[str, int]]:
        if self.no_tombstones:
            return {}
        query = {"bool": {"filter": [user_term(user_id)]}} if user_id is not None else {"match_all": {}}
        out: dict[str, dict[str, int]] = {}
        for h in self.scan("tombstones", query, user_id, _source=["user_id", "session_id", "seq"]):
            src = h["_source"]
            out.setdefault(str(src["user_id"]), {})[str(src["session_id"])] = int(src["seq"])
        return out

    def marks(self, user_id: str) -> dict[str, StandingMark]:
        if self.no_marks:
            return {}
        query = {"bool": {"filter": [user_term(user_id)]}}
        found = self.scan("marks", query, user_id, _source=["id", "kind", "seq"])
        return {str(h["_source"]["id"]): _mark(h["_source"]) for h in found}

    def query_titles(
        self, user_id: str, text: str, k: int, session_ids: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        if self.no_infos or k <= 0 or not text or not text.strip():
            return []
        if session_ids is not None and not session_ids:
            return []
        bag = query_bag(_analyze(text))
        if not bag:
            return []
        flt: list[dict[str, Any]] = [user_term(user_id)]
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
        found = self.search("infos", body, user_id)["hits"]["hits"]
        return [(h["fields"]["session_id"][0], _float32(h["_score"])) for h in found]

    def session_summaries(self, user_id: str) -> list[SessionCounts]:
        out: list[SessionCounts] = []
        after: dict[str, Any] | None = None
        while True:
            comp: dict[str, Any] = {"size": 1000, "sources": [{"s": {"terms": {"field": "session_id"}}}]}
            if after is not None:
                comp["after"] = after
            body = {
                "size": 0,
                "query": {"bool": {"filter": [user_term(user_id)]}},
                "aggs": {
                    "sessions": {
                        "composite": comp,
                        "aggs": {"first": {"min": {"field": "ts"}}, "last": {"max": {"field": "ts"}}},
                    }
                },
            }
            got = self.search("messages", body, user_id)["aggregations"]["sessions"]
            out.extend(
                SessionCounts(
                    b["key"]["s"], int(b["doc_count"]), int(b["first"]["value"]), int(b["last"]["value"])
                )
                for b in got["buckets"]
            )
            after = got.get("after_key")
            if not got["buckets"] or after is None:
                return out

    def users(self) -> list[str]:
        self.t.check()
        users: list[str] = []
        after: dict[str, Any] | None = None
        while True:
            comp: dict[str, Any] = {"size": 1000, "sources": [{"u": {"terms": {"field": "user_id"}}}]}
            if after is not None:
                comp["after"] = after
            body = {"size": 0, "aggs": {"users": {"composite": comp}}}
            got = self.search("messages", body, None)["aggregations"]["users"]
            users.extend(b["key"]["u"] for b in got["buckets"])
            after = got.get("after_key")
            if not got["buckets"] or after is None:
                return sorted(users)

    # ------------------------------------------------------------------ the write side's reads

    def tails(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Hit]:
        """The last turn of each session (the first stored at the highest turn), from its messages, by
        (user, session): one search per user and 1,000 sessions, sent together (``msearch``)."""
        searches: list[tuple[str | None, dict[str, Any]]] = []
        users: list[str] = []
        for user_id, session_ids in wanted.items():
            for i in range(0, len(session_ids), 1000):
                searches.append((user_id, self._tails_body(user_id, list(session_ids[i : i + 1000]))))
                users.append(user_id)
        out: dict[tuple[str, str], Hit] = {}
        for user_id, answer in zip(users, self.t.msearch(self.index["messages"], searches), strict=True):
            for b in answer["aggregations"]["s"]["buckets"]:
                out[(user_id, b["key"])] = hit_raw(b["tail"]["hits"]["hits"][0]["_source"]["raw"])
        return out

    @staticmethod
    def _tails_body(user_id: str, part: list[str]) -> dict[str, Any]:
        return {
            "size": 0,
            "query": {"bool": {"filter": [user_term(user_id), {"terms": {"session_id": part}}]}},
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

    def existing(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Hit]:
        self.t.check()
        pairs = [(u, i) for u, ids in wanted.items() for i in dict.fromkeys(ids)]
        if not pairs:
            return {}
        found = self.mget("messages", [(u, doc_id(u, i)) for u, i in pairs], ["raw", "user_id"])
        out = {}
        for d in found:
            h = hit_raw(d["_source"]["raw"])
            out[(d["_source"]["user_id"], h.id)] = Hit.trusted(
                h.id, h.session_id, h.turn, h.timestamp, h.role, None, "", 0.0, None
            )
        return out

    def session_turns(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], list[Hit]]:
        self.t.check()
        out: dict[tuple[str, str], list[Hit]] = {}
        for user, sids in wanted.items():
            sids = list(dict.fromkeys(sids))
            for i in range(0, len(sids), CLAUSES):
                query = {
                    "bool": {"filter": [user_term(user), {"terms": {"session_id": sids[i : i + CLAUSES]}}]}
                }
                for h in hits(list(self.scan("messages", query, user, _source=["raw"])), False, True):
                    out.setdefault((user, h.session_id), []).append(h)
        for turns in out.values():
            turns.sort(key=lambda h: h.turn)
        return out

    def marker(self, user_id: str, request_id: str) -> dict[str, Any] | None:
        """The request marker document of (user, request id), realtime, or None."""
        from opensearchpy.exceptions import NotFoundError

        did = doc_id(user_id, request_id)
        try:
            return self.t.call(  # type: ignore[no-any-return]
                "request lookup",
                lambda: self.t.client.get(index=self.index["requests"], id=did, routing=user_id),
            )
        except NotFoundError:
            return None
