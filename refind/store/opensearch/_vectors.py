"""Vectors (issue 36): ``{prefix}-vectors``, one document per message, which is its queue entry while it
awaits its vector (``pending``) and holds the vector (a ``knn_vector`` of the k-NN plugin's Lucene engine:
HNSW in Java, cosine) once it has one, with the fields a filter reads, so a KNN query filters inside the
graph search.

- **queue**: a commit writes the vector documents of its messages *before* the messages (a crash leaves at
  worst a queue entry whose message never landed, dropped once it is older than ``stale_after``): a message
  whose content has the token of the vector stored for it keeps that vector (the document gets the
  message's new fields by a partial update); any other is indexed anew, pending, without a vector;
- **vectors**: :meth:`Vectors.write` writes a vector with a compare-and-set on the version of the document
  it read, only when the document's token is the vector's: a message replaced or deleted meanwhile (by any
  process) keeps the vector out;
- **deletions** go with the messages': the same ``user_id`` / ``session_id`` / ``added`` fields are here;
- **the model**: the ``vector`` field is mapped (``put_mapping``) with the model's dimensions when the
  model is recorded, and the model's name is in the index's ``_meta``; another model is refused; a reset
  drops and re-creates the index and queues every message again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from refind.errors import IndexFormatError, InvalidInput, StoreError
from refind.models import Hit
from refind.store.base import (
    Filters,
    PendingVector,
    Record,
    VectorCounts,
    VectorRecord,
    content_token,
    model_mismatch,
)
from refind.store.opensearch._reads import Reads, _filtered, user_term
from refind.store.opensearch._schema import HIT_FIELDS, doc_id, hit_fields, hit_raw, vector_mapping
from refind.store.opensearch._transport import Action, Transport

__all__ = ["EF_SEARCH", "Vectors"]

EF_SEARCH = 100
"""Candidates of the HNSW search of a KNN query, at least (Lucene's own default beam width)."""

log = logging.getLogger(__name__)


def _float32(x: float) -> float:
    import struct

    return float(struct.unpack("f", struct.pack("f", float(x)))[0])


class Vectors:
    """The vector index of one prefix: its queue, its vectors, its KNN and its model."""

    def __init__(
        self, transport: Transport, reads: Reads, index: Mapping[str, str], stale_after: float
    ) -> None:
        self.t = transport
        self.reads = reads
        self.name = index["vectors"]
        self.index = index
        self.stale_after = float(stale_after)
        self.missing = False  # a reader of a prefix written before vectors: none yet

    # ------------------------------------------------------------------ the model

    def _meta(self) -> dict[str, Any]:
        got = self.t.call("opening", partial(self.t.client.indices.get_mapping, index=self.name))
        return dict(next(iter(got.values()))["mappings"].get("_meta", {}))

    def model(self) -> tuple[str, int] | None:
        if self.missing:
            return None
        meta = self._meta()
        name, dims = meta.get("vector_model"), meta.get("vector_dimensions")
        return (str(name), int(dims)) if isinstance(name, str) and isinstance(dims, int) else None

    def use_model(self, name: str, dimensions: int, location: str) -> None:
        given = (str(name), int(dimensions))
        stored = self.model()
        if stored is not None:
            if stored != given:
                raise IndexFormatError(model_mismatch(location, stored, given))
            return
        meta = {**self._meta(), "vector_model": given[0], "vector_dimensions": given[1]}
        body = {"_meta": meta, "properties": {"vector": vector_mapping(given[1])}}
        try:
            self.t.call(
                "recording the vector model",
                lambda: self.t.client.indices.put_mapping(index=self.name, body=body),
            )
        except StoreError as exc:  # another process mapped the vector with other dimensions first
            again = self.model()
            if again is not None and again != given:
                raise IndexFormatError(model_mismatch(location, again, given)) from exc
            raise
        again = self.model()
        if again != given:  # another process recorded another model at the same moment
            assert again is not None
            raise IndexFormatError(model_mismatch(location, again, given))

    # ------------------------------------------------------------------ the queue, with the messages' commit

    def queue_actions(self, records: Sequence[Record], added: int, seq: Any) -> list[Action]:
        """The vector documents of ``records`` (the last written of each id), to send before the messages:
        kept vectors get the messages' new fields, the others are queued anew. ``seq`` gives write order."""
        last: dict[tuple[str, str], Record] = {}
        for r in records:
            last[(r.user_id, r.id)] = r
        if not last:
            return []
        stored = {
            (d["_source"]["user_id"], d["_source"]["id"]): d["_source"]
            for d in self.t.mget(
                self.name, [(u, doc_id(u, i)) for u, i in last], ["user_id", "id", "token", "pending"]
            )
        }
        actions: list[Action] = []
        for (user, mid), r in last.items():
            token = content_token(r.content)
            meta = {"_index": self.name, "_id": doc_id(user, mid), "routing": user}
            fields = {
                "session_id": r.session_id, "turn": int(r.turn), "ts": int(r.timestamp), "role": r.role,
                "added": added,
            }  # fmt: skip
            body = {
                "user_id": user, "id": mid, "mid": doc_id(user, mid), "token": token, "pending": True,
                "seq": seq(), **fields,
            }  # fmt: skip
            prior = stored.get((user, mid))
            if prior is not None and prior.get("token") == token and prior.get("pending") is False:
                # the same content: its vector stays, with the message's new fields (queued if it is gone)
                actions.append(({"update": meta}, {"doc": fields, "upsert": body}))
                continue
            actions.append(({"index": meta}, body))
        return actions

    def queue_all(self, scan_messages: Any) -> int:
        """Queue every stored message (``scan_messages``: the messages index's documents with ``raw``,
        ``user_id`` and ``added``): a prefix written before vectors, or after a reset."""
        n = 0
        batch: list[Action] = []
        started = time.monotonic()
        for h in scan_messages:
            src = h["_source"]
            hit = hit_raw(src["raw"])
            user = src["user_id"]
            body = {
                "user_id": user, "id": hit.id, "mid": doc_id(user, hit.id), "token": content_token(hit.content),
                "pending": True, "seq": n, "session_id": hit.session_id, "turn": hit.turn, "ts": hit.timestamp,
                "role": hit.role, "added": int(src.get("added", 0)),
            }  # fmt: skip
            batch.append(
                ({"index": {"_index": self.name, "_id": doc_id(user, hit.id), "routing": user}}, body)
            )
            n += 1
            if len(batch) >= 2000:
                self._send(batch, "false")
                batch = []
                log.info("queued %d messages for their vectors (%.0f s)", n, time.monotonic() - started)
        self._send(batch, "true")
        return n

    def _send(self, actions: list[Action], refresh: str) -> None:
        for status, item in self.t.bulk(actions, refresh) if actions else []:
            if status >= 300:
                raise StoreError(f"OpenSearch at {self.t.location} refused a vector document: {item}")

    # ------------------------------------------------------------------ the worker's calls

    def pending(self, limit: int) -> list[PendingVector]:
        """Up to ``limit`` queued messages, oldest write first, with their content (from the messages
        index). An entry whose message is missing and older than ``stale_after`` is dropped; one whose token
        is not its message's (a crash between a commit's two writes) gets the message's."""
        if limit <= 0:
            return []
        body = {
            "query": {"bool": {"filter": [{"term": {"pending": True}}]}},
            "size": int(limit),
            "sort": [{"seq": "asc"}, {"mid": "asc"}],
            "track_total_hits": False,
            "_source": ["user_id", "id", "token", "seq"],
            "seq_no_primary_term": True,
        }
        self.t.refresh(self.name)
        found = self.t.search(self.name, body, None)["hits"]["hits"]
        if not found:
            return []
        messages = {
            (d["_source"]["user_id"], hit_raw(d["_source"]["raw"]).id): hit_raw(d["_source"]["raw"])
            for d in self.t.mget(
                self.index["messages"],
                [
                    (h["_source"]["user_id"], doc_id(h["_source"]["user_id"], h["_source"]["id"]))
                    for h in found
                ],
                ["raw", "user_id"],
            )
        }
        out: list[PendingVector] = []
        fixes: list[Action] = []
        now_us = time.time_ns() // 1000
        for h in found:
            src = h["_source"]
            user, mid = src["user_id"], src["id"]
            meta = {
                "_index": self.name, "_id": h["_id"], "routing": user, "if_seq_no": h["_seq_no"],
                "if_primary_term": h["_primary_term"],
            }  # fmt: skip
            m = messages.get((user, mid))
            if m is None:
                if now_us - int(src.get("seq", 0)) > self.stale_after * 1e6:
                    fixes.append(({"delete": meta}, None))  # its message never landed
                continue
            token = content_token(m.content)
            if token != src.get("token"):
                fixes.append(({"update": meta}, {"doc": {"token": token}}))
            out.append(PendingVector(user, mid, token, m.content))
        if fixes:
            self.t.bulk(fixes, "false")  # a conflict: another writer changed it meanwhile, which is fine
        return out

    def write(
        self, vectors: Sequence[VectorRecord], dims: int, unsettled: set[tuple[str, str]]
    ) -> list[Action]:
        """The writes of the vectors whose document still has their token, each a compare-and-set on the
        version read (sent by the next commit: one whose message a commit rewrites first fails its
        compare-and-set and is left out). ``unsettled``: messages written and not yet committed, left out."""
        for v in vectors:
            if len(v.vector) != dims:
                raise InvalidInput(
                    f"vector of {v.user_id!r}/{v.id!r}: {len(v.vector)} dimensions, the model has {dims}",
                    field="vector",
                )
        wanted = {(v.user_id, v.id): v for v in vectors if (v.user_id, v.id) not in unsettled}
        if not wanted:
            return []
        docs = self.t.mget(self.name, [(u, doc_id(u, i)) for u, i in wanted], True)
        actions: list[Action] = []
        for d in docs:
            src = d["_source"]
            found = wanted.get((src["user_id"], src["id"]))
            if found is None or src.get("token") != found.token:
                continue
            meta = {
                "_index": self.name, "_id": d["_id"], "routing": src["user_id"], "if_seq_no": d["_seq_no"],
                "if_primary_term": d["_primary_term"],
            }  # fmt: skip
            body = {**src, "pending": False, "vector": [float(x) for x in found.vector]}
            actions.append(({"index": meta}, body))
        return actions

    def send_vectors(self, actions: list[Action], refresh: str) -> None:
        for status, item in self.t.bulk(actions, refresh) if actions else []:
            if status >= 300 and status not in (404, 409):  # 409: the message was written again meanwhile
                raise StoreError(f"OpenSearch at {self.t.location} refused a vector: {item}")

    # ------------------------------------------------------------------ reads

    def counts(self, user_id: str | None) -> VectorCounts:
        if self.missing:
            return VectorCounts(0, self.reads.count(user_id))
        flt: list[dict[str, Any]] = [user_term(user_id)] if user_id is not None else []
        aggs = {"pending": {"filter": {"term": {"pending": True}}}}
        body = {"query": {"bool": {"filter": flt}}, "size": 0, "track_total_hits": True, "aggs": aggs}
        got = self.t.search(self.name, body, user_id)
        total = int(got["hits"]["total"]["value"])
        pending = int(got["aggregations"]["pending"]["doc_count"])
        return VectorCounts(total - pending, pending)

    def knn(self, user_id: str, vector: Sequence[float], k: int, filters: Filters | None) -> list[Hit]:
        """The k-NN plugin's ``knn`` query with the user and ``filters`` as its ``filter`` (the Lucene
        engine filters inside the HNSW search), routed by the user; scores turned back into cosines."""
        query = {
            "knn": {
                "vector": {
                    "vector": [float(x) for x in vector],
                    "k": int(k),
                    "filter": _filtered(user_id, filters, None),
                    # the Lucene engine searches for max(k, ef_search) candidates, then keeps k: a filter
                    # that admits fewer than that is searched exactly (measured: with k alone, a small k and
                    # a narrow filter missed the best hit now and then)
                    "method_parameters": {"ef_search": max(int(k), EF_SEARCH)},
                }
            }
        }
        body = {"query": query, "size": int(k), "_source": False, "docvalue_fields": HIT_FIELDS}
        found = self.t.search(self.name, body, user_id)["hits"]["hits"]
        return [hit_fields(h["fields"], _float32(2.0 * float(h["_score"]) - 1.0)) for h in found]
