"""The OpenSearch engine's retry, undo and claim paths, driven through its ``client=`` seam without a cluster.

The client is the real ``opensearchpy.OpenSearch`` with its real transport; only the connection under it is
a test one (opensearch-py's ``Connection`` class, the seam its own tests use): :class:`ScriptedCluster`
keeps documents in a dict, answers the few requests the engine makes, and fails on cue (a status for the
next requests to a path, or a status for some items of a bulk request). Every request is recorded, so a test
can check what the engine sent: what it sent again, what it undid, what claim it released. The real cluster
still runs the engine contract suite and ``tests/test_opensearch_engine.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import pytest
from opensearchpy import OpenSearch
from opensearchpy.connection import Connection
from opensearchpy.exceptions import ConnectionError as OSConnectionError

import refind
from refind.models import parse_messages
from refind.standing import RULE_VERSION
from refind.store.base import (
    ANALYZER_NAME,
    AlreadyApplied,
    Marker,
    Record,
    RequestTaken,
    SessionDoc,
    WriteBatch,
)
from refind.store.opensearch import INDEX_FORMAT, OpenSearchStore
from refind.store.write import WritePath

PREFIX = "seam"


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, Any]
    body: Any


@dataclass
class ScriptedCluster:
    """An in-memory stand-in for a 1-node cluster: documents by (index, _id), with seq_no for
    compare-and-set; ``fail`` holds, per (method, path suffix), the statuses of the next such requests;
    ``item_status`` may override the status of a bulk item (None: apply it)."""

    docs: dict[tuple[str, str], tuple[dict[str, Any], int]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    fail: dict[tuple[str, str], list[int | str]] = field(default_factory=dict)
    item_status: Callable[[str, dict[str, Any], dict[str, Any] | None], int | None] | None = None
    seq: int = 0

    def bulks(self) -> list[list[tuple[dict[str, Any], dict[str, Any] | None]]]:
        return [r.body for r in self.requests if r.path.endswith("/_bulk")]

    # ------------------------------------------------------------------ answering

    def answer(self, method: str, url: str, params: dict[str, Any], body: bytes | None) -> tuple[int, Any]:
        path = unquote(url.split("?", 1)[0])
        params = {k: v.decode() if isinstance(v, bytes) else v for k, v in params.items()}
        parsed = self._parse(path, body)
        self.requests.append(Request(method, path, dict(params), parsed))
        for (m, suffix), statuses in self.fail.items():
            if m == method and path.endswith(suffix) and statuses:
                status = statuses.pop(0)
                if status == "drop":
                    raise OSConnectionError("N/A", "connection refused (scripted)", None)
                return int(status), {
                    "error": {"type": "scripted", "reason": f"scripted {status}"},
                    "status": status,
                }
        parts = [p for p in path.split("/") if p]
        if method == "HEAD" and len(parts) == 1:
            return 200, None
        if method == "GET" and len(parts) == 2 and parts[1] == "_mapping":
            meta: dict[str, Any] = {"refind_format": INDEX_FORMAT, "analyzer": ANALYZER_NAME}
            if parts[0].endswith("-vectors"):  # a prefix this refind created: its messages are queued
                meta["queued"] = True
            if parts[0].endswith("-messages"):  # and what stands in them is stored (issue 37)
                meta["standing"] = RULE_VERSION
            return 200, {parts[0]: {"mappings": {"_meta": meta}}}
        if parts[-1] == "_mget":
            out = []
            for d in parsed["docs"]:
                got = self.docs.get((parts[0], d["_id"]))
                out.append(self._doc(parts[0], d["_id"], got))
            return 200, {"docs": out}
        if parts[-1] == "_refresh":
            return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}
        if parts[-1] == "_msearch":
            empty = {"hits": {"hits": []}, "aggregations": {"s": {"buckets": []}}}
            return 200, {"responses": [empty for _ in parsed[::2]]}
        if parts[-1] == "_search":
            return 200, {"hits": {"hits": []}, "aggregations": {"s": {"buckets": []}}}
        if parts[-1] == "_count":
            n = sum(1 for (index, _) in self.docs if index == parts[0])
            return 200, {"count": n}
        if parts[-1] == "_bulk":
            items = [self._item(meta, doc) for meta, doc in parsed]
            return 200, {
                "errors": any(next(iter(i.values()))["status"] >= 300 for i in items),
                "items": items,
            }
        if len(parts) == 3 and parts[1] == "_doc":
            index, doc_id = parts[0], parts[2]
            if method == "GET":
                got = self.docs.get((index, doc_id))
                return (200 if got else 404), self._doc(index, doc_id, got)
            op = (
                "delete"
                if method == "DELETE"
                else ("create" if params.get("op_type") == "create" else "index")
            )
            meta = {
                "_index": index,
                "_id": doc_id,
                **{k: v for k, v in params.items() if k.startswith("if_")},
            }
            (result,) = self._item({op: meta}, parsed).values()
            return int(result["status"]), result
        return 400, {"error": f"ScriptedCluster does not answer {method} {path}"}

    @staticmethod
    def _parse(path: str, body: bytes | None) -> Any:
        if not body:
            return None
        text = body.decode() if isinstance(body, bytes) else str(body)
        if path.endswith("/_msearch"):
            return [json.loads(x) for x in text.splitlines() if x.strip()]
        if path.endswith("/_bulk"):
            lines = [json.loads(x) for x in text.splitlines() if x.strip()]
            out: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
            i = 0
            while i < len(lines):
                meta = lines[i]
                if "delete" in meta:
                    out.append((meta, None))
                    i += 1
                else:
                    out.append((meta, lines[i + 1]))
                    i += 2
            return out
        return json.loads(text)

    def _doc(self, index: str, doc_id: str, got: tuple[dict[str, Any], int] | None) -> dict[str, Any]:
        if got is None:
            return {"_index": index, "_id": doc_id, "found": False}
        src, seq_no = got
        return {
            "_index": index,
            "_id": doc_id,
            "found": True,
            "_seq_no": seq_no,
            "_primary_term": 1,
            "_source": src,
        }

    def _item(self, meta: dict[str, Any], doc: dict[str, Any] | None) -> dict[str, Any]:
        ((op, m),) = meta.items()
        key = (m["_index"], m["_id"])
        status = self.item_status(op, m, doc) if self.item_status else None
        if status is not None:
            return {
                op: {
                    "_index": key[0],
                    "_id": key[1],
                    "status": status,
                    "error": {"type": f"scripted {status}"},
                }
            }
        current = self.docs.get(key)
        if "if_seq_no" in m and (current is None or current[1] != int(m["if_seq_no"])):
            return {
                op: {"_index": key[0], "_id": key[1], "status": 409, "error": {"type": "version_conflict"}}
            }
        if op == "create" and current is not None:
            return {
                op: {"_index": key[0], "_id": key[1], "status": 409, "error": {"type": "version_conflict"}}
            }
        if op == "delete":
            if current is None:
                return {op: {"_index": key[0], "_id": key[1], "status": 404}}
            del self.docs[key]
            return {op: {"_index": key[0], "_id": key[1], "status": 200}}
        if op == "update":
            if current is None:
                return {op: {"_index": key[0], "_id": key[1], "status": 404}}
            assert doc is not None
            src = {**current[0], **doc["doc"]}
        else:
            assert doc is not None
            src = doc
        self.seq += 1
        self.docs[key] = (src, self.seq)
        status = 201 if current is None else 200
        return {
            op: {"_index": key[0], "_id": key[1], "status": status, "_seq_no": self.seq, "_primary_term": 1}
        }


def _client(cluster: ScriptedCluster) -> OpenSearch:
    class Scripted(Connection):
        def perform_request(  # type: ignore[override]
            self,
            method: str,
            url: str,
            params: Any = None,
            body: Any = None,
            timeout: Any = None,
            ignore: Any = (),
            headers: Any = None,
        ) -> tuple[int, dict[str, str], str]:
            status, data = cluster.answer(method, url, dict(params or {}), body)
            raw = "" if data is None else json.dumps(data)
            if not (200 <= status < 300) and status not in ignore:
                self._raise_error(status, raw, "application/json")
            return status, {"content-type": "application/json"}, raw

    # no retries in the client: the engine's own (bounded, with backoff) are what is under test
    return OpenSearch(hosts=["http://scripted:9200"], connection_class=Scripted, max_retries=0)


@pytest.fixture
def cluster() -> ScriptedCluster:
    return ScriptedCluster()


@pytest.fixture
def store(cluster: ScriptedCluster) -> Iterator[OpenSearchStore]:
    s = OpenSearchStore(f"opensearch://scripted:9200/{PREFIX}", client=_client(cluster), retry_seconds=1.5)
    yield s
    s.close()


def _rec(turn: int, text: str, replace: bool = False) -> Record:
    return Record("u", "s", f"s:{turn}", turn, 1_700_000_000_000 + turn, "user", text, replace=replace)


def _sources(cluster: ScriptedCluster, name: str) -> list[dict[str, Any]]:
    return [src for (index, _), (src, _) in cluster.docs.items() if index == f"{PREFIX}-{name}"]


def test_transient_failures_are_retried_and_the_commit_lands_once(
    store: OpenSearchStore, cluster: ScriptedCluster
) -> None:
    store.session_states({"u": ["s"]})
    store.write(WriteBatch([_rec(0, "first kayak")], [SessionDoc("u", "s", "first kayak", True)]))
    # the session documents' bulk request: a dropped connection, then a 503; then one message item is
    # refused with 429 once: only that item is sent again
    cluster.fail[("POST", "/_bulk")] = ["drop", 503]
    refused: set[str] = set()

    def once_429(op: str, meta: dict[str, Any], doc: dict[str, Any] | None) -> int | None:
        if meta["_index"] == f"{PREFIX}-messages" and meta["_id"] not in refused:
            refused.add(meta["_id"])
            return 429
        return None

    cluster.item_status = once_429
    store.commit()
    bulks = cluster.bulks()
    assert len(bulks) == 6  # sessions (dropped, 503, sent), vector queue entries, messages (429, sent again)
    assert bulks[0] == bulks[1] == bulks[2] and bulks[4] == bulks[5]
    assert [next(iter(m.values()))["_index"] for m, _ in bulks[3]] == [f"{PREFIX}-vectors"]
    assert [h["contents"] for h in _sources(cluster, "messages")] == ["first kayak"]
    assert [h["contents"] for h in _sources(cluster, "sessions")] == ["first kayak"]


def test_a_cluster_that_keeps_failing_is_a_store_error_and_the_claim_is_released(
    store: OpenSearchStore, cluster: ScriptedCluster
) -> None:
    store.session_states({"u": ["s"]})
    store.write(
        WriteBatch([_rec(0, "kayak")], [SessionDoc("u", "s", "kayak", True)], Marker("u", "r1", "p1"))
    )
    claim = [k for k in cluster.docs if k[0] == f"{PREFIX}-requests"]
    assert len(claim) == 1 and cluster.docs[claim[0]][0]["state"] == "pending"
    cluster.fail[("POST", "/_bulk")] = [503] * 1000
    with pytest.raises(
        refind.StoreError, match=r"OpenSearch at opensearch://scripted:9200/seam failed during write"
    ):
        store.commit()
    assert len(cluster.bulks()) > 2  # retried with backoff, then given up (retry_seconds=1.5)
    assert claim[0] not in cluster.docs  # released: a retry of the add can claim it again
    released = [r for r in cluster.requests if r.method == "DELETE"]
    assert len(released) == 1 and released[0].params["if_seq_no"] is not None  # only while still ours


def test_a_commit_refused_after_its_session_documents_undoes_them(
    store: OpenSearchStore, cluster: ScriptedCluster
) -> None:
    # committed: turn 0, its session document
    store.session_states({"u": ["s"]})
    store.write(WriteBatch([_rec(0, "first kayak")], [SessionDoc("u", "s", "first kayak", True)]))
    store.commit()
    before = {k: v for k, v in cluster.docs.items()}
    # the next add: its session document lands (a compare-and-set on the version read), its messages are
    # refused (403: not retried), so the commit undoes what it wrote
    store.session_states({"u": ["s"]})
    store.write(
        WriteBatch(
            [_rec(1, "second kayak"), _rec(2, "third kayak")],
            [SessionDoc("u", "s", "first kayak\nsecond kayak\nthird kayak")],
            Marker("u", "r2", "p2"),
        )
    )
    cluster.item_status = lambda op, meta, doc: 403 if meta["_index"] == f"{PREFIX}-messages" else None
    with pytest.raises(refind.StoreError, match="refused a message"):
        store.commit()
    *_, cas, queued, refused, undo = cluster.bulks()
    assert {next(iter(m.values()))["_index"] for m, _ in queued} == {
        f"{PREFIX}-vectors"
    }  # before the messages
    ((op, meta), body) = next(iter(cas[0][0].items())), cas[0][1]
    assert op == "index" and meta["if_seq_no"] == before[(f"{PREFIX}-sessions", meta["_id"])][1]
    assert body is not None and body["contents"].endswith("third kayak")
    assert len(refused) == 2
    deletes = [m["delete"] for m, _ in undo if "delete" in m]
    puts = [(m["index"], b) for m, b in undo if "index" in m]
    assert {d["_id"] for d in deletes} == {next(iter(m.values()))["_id"] for m, _ in refused}
    assert len(puts) == 1
    (put_meta, put_body) = puts[0]
    # a compare-and-set on this commit's own write of it (not on the version it had read): applied below
    assert put_meta["if_seq_no"] > meta["if_seq_no"]
    assert put_body is not None and put_body["contents"] == "first kayak" and put_body["w"] == "undo"
    assert (
        json.loads(put_body["tail"])["turn"] == 0
    )  # the tail as it was: a retry resolves turns 1 and 2 again
    # the state a retry reads: the first add only, the request id free
    assert [s["contents"] for s in _sources(cluster, "sessions")] == ["first kayak"]
    assert [s["contents"] for s in _sources(cluster, "messages")] == ["first kayak"]
    assert _sources(cluster, "requests") == []


def test_a_request_id_held_with_another_payload_is_taken_and_the_write_path_calls_it_a_conflict(
    store: OpenSearchStore, cluster: ScriptedCluster
) -> None:
    other = OpenSearchStore(
        f"opensearch://scripted:9200/{PREFIX}", client=_client(cluster), retry_seconds=1.5
    )
    try:
        assert other.request_marker("u", "r") is None
        other.write(WriteBatch(marker=Marker("u", "r", "body A")))  # another worker's claim, pending
        assert store.request_marker("u", "r") is None  # a pending claim is no marker yet
        with pytest.raises(RequestTaken):  # another payload: the engine says so and writes nothing
            store.write(WriteBatch([_rec(0, "x")], marker=Marker("u", "r", "body B")))
        assert store.request_marker("u", "r") is None  # still the other worker's, pending
        other.commit()
        with pytest.raises(AlreadyApplied):  # the same payload, now committed by the other worker
            store.write(WriteBatch(marker=Marker("u", "r", "body A")))
    finally:
        other.close()
    # the write path, not the engine, turns a taken request id into the user's RequestConflict
    path = WritePath(store)
    msgs = parse_messages([{"role": "user", "content": "hello"}])
    first = OpenSearchStore(
        f"opensearch://scripted:9200/{PREFIX}", client=_client(cluster), retry_seconds=1.5
    )
    try:
        WritePath(first).add("v", "s", msgs, "req", None, None)
        cluster.docs.update(
            {k: ({**src, "state": "pending", "owner": "someone"}, n) for k, (src, n) in cluster.docs.items()
             if k[0] == f"{PREFIX}-requests" and src["user_id"] == "v"}
        )  # fmt: skip
        other_msgs = parse_messages([{"role": "user", "content": "another body"}])
        with pytest.raises(refind.RequestConflict, match="already used with a different body"):
            path.add("v", "s", other_msgs, "req", None, None)
    finally:
        first.close()


def test_a_commit_larger_than_one_bulk_request_sends_without_refresh_waits_then_refreshes_once(
    store: OpenSearchStore, cluster: ScriptedCluster
) -> None:
    n = 4500  # three bulk requests of messages
    store.session_states({"u": ["s"]})
    text = "\n".join(f"kayak {i}" for i in range(n))
    store.write(WriteBatch([_rec(i, f"kayak {i}") for i in range(n)], [SessionDoc("u", "s", text, True)]))
    store.commit()
    sent = [r for r in cluster.requests if r.path.endswith("/_bulk") or r.path.endswith("/_refresh")]
    # the session document, the messages' vector queue entries (three requests), the messages (three)
    assert [r.params.get("refresh") for r in sent if r.path.endswith("/_bulk")] == ["false"] * 7
    assert sent[-1].path == (  # once, after all
        f"/{PREFIX}-messages,{PREFIX}-sessions,{PREFIX}-infos,{PREFIX}-vectors/_refresh"
    )
    assert len(_sources(cluster, "messages")) == n
    # a small commit (one request) still waits for its refresh, as an add does
    store.session_states({"u": ["s"]})
    store.write(WriteBatch([_rec(n, "one more kayak")], [SessionDoc("u", "s", text + "\none more kayak")]))
    store.commit()
    assert [r.params.get("refresh") for r in cluster.requests[-2:]] == ["wait_for", "wait_for"]


def test_a_large_commit_that_writes_one_id_twice_keeps_the_later_write(
    store: OpenSearchStore, cluster: ScriptedCluster
) -> None:
    first = [_rec(i, f"old {i}") for i in range(3000)]
    again = [_rec(i, f"new {i}", replace=True) for i in range(3000)]  # the same ids, in later requests
    store.write(WriteBatch(first, [SessionDoc("u", "s", "old", True)]))
    store.write(WriteBatch(again, [SessionDoc("u", "s", "new")]))
    store.commit()
    contents = sorted(src["contents"] for src in _sources(cluster, "messages"))
    assert contents == sorted(f"new {i}" for i in range(3000))  # sent in order, not two at a time
