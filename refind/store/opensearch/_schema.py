"""The index schema: the indexes' mappings and settings, the analyzer, the format ``_meta``, and the
shape of each document (its ``_id``, the verbatim ``raw`` JSON, a hit read back from either).

Pure: no client. ``{prefix}-messages`` holds one document per message, ``{prefix}-sessions`` one per session
(its whole text, for session-level BM25; its last turn; the token of the commit that wrote it),
``{prefix}-requests`` one request marker per (user, request id), ``{prefix}-tombstones`` one deleted session per
(user, session) with the time it was deleted (``seq``), ``{prefix}-marks`` one mark on what stands per (user,
message id): pinned as a kind or hidden (issue 37), ``{prefix}-vectors`` one per message: its queue entry
for a vector, then its vector (:mod:`refind.store.opensearch._vectors`). Every document is routed by
``user_id``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from refind.config import Settings
from refind.lexicon import ANALYZER_STOP_WORDS
from refind.models import Hit
from refind.store.base import ANALYZER_NAME, Record
from refind.store.opensearch._location import Location

__all__ = [
    "ANALYSIS",
    "HIT_FIELDS",
    "INDEX_FORMAT",
    "MAPPINGS",
    "MAX_TURN",
    "doc_id",
    "format_problem",
    "hit_fields",
    "hit_raw",
    "index_body",
    "raw",
    "vector_mapping",
]

INDEX_FORMAT = 1
"""Recorded in each index's mapping ``_meta``; an index with another format or analyzer is refused."""
MAX_TURN = 2**31 - 1

ANALYSIS: dict[str, Any] = {
    # the embedded engine's chain (io.refind.lucene.Engine): ':' to a space, then the standard tokenizer,
    # cjkWidth, lowercase, cjkBigram, englishPossessive, Lucene's English stop set, porterStem
    "char_filter": {"refind_colon": {"type": "pattern_replace", "pattern": ":", "replacement": " "}},
    "filter": {
        "refind_possessive": {"type": "stemmer", "language": "possessive_english"},
        "refind_stop": {"type": "stop", "stopwords": sorted(ANALYZER_STOP_WORDS)},
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

MAPPINGS: dict[str, dict[str, Any]] = {
    "messages": {
        "dynamic": "strict",
        "_source": {"excludes": ["contents"]},  # the content is kept once, in raw
        "properties": {
            "user_id": _KEYWORD, "session_id": _KEYWORD, "id": _KEYWORD, "mid": _KEYWORD, "role": _KEYWORD,
            "turn": {"type": "integer"}, "ts": {"type": "long"}, "added": {"type": "long"},
            "seq": {"type": "long"}, "contents": _TEXT, "raw": _STORED,
            # what the message says that stands (issue 37): its kind, and the whole reading as JSON
            "standing": _KEYWORD, "standing_raw": _STORED,
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
    "tombstones": {  # the sessions a person deleted, kept out of later imports (one per user and session)
        "dynamic": "strict",
        "properties": {"user_id": _KEYWORD, "session_id": _KEYWORD, "seq": {"type": "long"}},
    },
    "marks": {  # a person's marks on what stands (one per user and message): "kind" pinned, absent hidden
        "dynamic": "strict",
        "properties": {"user_id": _KEYWORD, "id": _KEYWORD, "kind": _KEYWORD, "seq": {"type": "long"}},
    },
    "vectors": {  # one per message: its queue entry (pending), then its vector ("vector", mapped with the model)
        "dynamic": "strict",
        "properties": {
            "user_id": _KEYWORD, "session_id": _KEYWORD, "id": _KEYWORD, "mid": _KEYWORD, "role": _KEYWORD,
            "turn": {"type": "integer"}, "ts": {"type": "long"}, "added": {"type": "long"},
            "seq": {"type": "long"}, "token": _KEYWORD, "pending": {"type": "boolean"},
        },
    },
}  # fmt: skip


def vector_mapping(dimensions: int) -> dict[str, Any]:
    """The ``vector`` field: the k-NN plugin's ``knn_vector`` on its Lucene engine (HNSW in Java, no native
    library; it filters inside the graph search), cosine."""
    return {
        "type": "knn_vector",
        "dimension": int(dimensions),
        "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
    }


def _meta() -> dict[str, Any]:
    return {"refind_format": INDEX_FORMAT, "analyzer": ANALYZER_NAME}


def index_body(
    loc: Location, settings: Settings, mapping: dict[str, Any], meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The create-index body of one of the indexes: shards and replicas from the location, translog
    durability ``request``, adjacent-segment merges, BM25 with the settings' ``k1``/``b``, the analyzer."""
    index: dict[str, Any] = {
        "number_of_shards": loc.shards,
        "refresh_interval": loc.refresh_interval,
        "translog.durability": "request",
        "merge.policy": "log_byte_size",  # adjacent segments only: ties keep insertion order
        "similarity": {
            "default": {"type": "BM25", "k1": float(settings.bm25_k1), "b": float(settings.bm25_b)}
        },
    }
    if "pending" in mapping.get("properties", {}):  # the vectors index: a k-NN index
        index["knn"] = True
    if loc.replicas is None:
        index["auto_expand_replicas"] = "0-1"
    else:
        index["number_of_replicas"] = loc.replicas
    return {
        "settings": {"index": index, "analysis": ANALYSIS},
        "mappings": {**mapping, "_meta": {**_meta(), **(meta or {})}},
    }


def format_problem(meta: Mapping[str, Any]) -> str | None:
    """Why an index whose mapping ``_meta`` is ``meta`` cannot be used (None: it can)."""
    if meta.get("refind_format") == INDEX_FORMAT and meta.get("analyzer") == ANALYZER_NAME:
        return None
    return (
        f"has refind format {meta.get('refind_format')} / analyzer {meta.get('analyzer')!r}; this refind "
        f"writes format {INDEX_FORMAT} / {ANALYZER_NAME!r}: use another prefix, or the refind version that "
        "wrote it"
    )


def doc_id(*parts: str) -> str:
    """A deterministic ``_id`` (ids may be 1,000 characters; ``_id`` holds 512 bytes)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]


def raw(r: Record) -> str:
    """The verbatim message as stored in ``raw`` (and a session document's ``tail``)."""
    d: dict[str, Any] = {
        "id": r.id, "session_id": r.session_id, "turn": int(r.turn), "ts": int(r.timestamp), "role": r.role,
        "content": r.content,
    }  # fmt: skip
    if r.speaker:
        d["speaker"] = r.speaker
    if r.time_text is not None:
        d["time_text"] = r.time_text
    return json.dumps(d, ensure_ascii=False)


def hit_raw(text: str, score: float = 0.0) -> Hit:
    """A hit with content, from a stored ``raw``."""
    d = json.loads(text)
    return Hit.trusted(
        d["id"], d["session_id"], int(d["turn"]), int(d["ts"]), d["role"], d.get("speaker") or None,
        d["content"], score, d.get("time_text"),
    )  # fmt: skip


HIT_FIELDS = ["id", "session_id", "turn", "ts", "role"]
"""The doc-value fields a hit without content is read from."""


def hit_fields(fields: Mapping[str, list[Any]], score: float = 0.0) -> Hit:
    """A hit without content, from the doc-value fields :data:`HIT_FIELDS`."""
    return Hit.trusted(
        fields["id"][0], fields["session_id"][0], int(fields["turn"][0]), int(fields["ts"][0]),
        fields["role"][0], None, "", score, None,
    )  # fmt: skip
