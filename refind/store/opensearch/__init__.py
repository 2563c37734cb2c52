"""The OpenSearch engine: the engine protocol (:mod:`refind.store.base`) over an OpenSearch cluster
(docs/scale-out.md).

``refind.Memory("opensearch://host:9200/prefix")`` (``opensearchs://`` for TLS) opens one. Its indexes per
prefix, created on first use with explicit mappings and the embedded engine's analyzer chain; every document
is routed by ``user_id``, so one user's reads and writes touch one shard. One module per job:

- ``_location``: parsing an ``opensearch://`` location, its credentials and index options;
- ``_schema``: the index schema (mappings, analyzer, format ``_meta``) and each document's shape;
- ``_transport``: the client, retries with backoff, bulk requests, error translation;
- ``_reads``: the protocol's reads, as ``bool`` queries of analyzed terms and filters (never query syntax);
- ``_commit``: the multi-writer commit protocol: buffered writes, request claims, compare-and-set session
  documents, undo of a failed commit, deletions;
- ``_store``: the lifecycle: :class:`OpenSearchStore` opens, ties the others together, closes.

BM25 statistics are per shard (OpenSearch scores each shard with its own document counts); with one primary
shard they are index-wide, as in the embedded engine (docs/scale-out.md, "Same answers").
"""

from __future__ import annotations

from refind.store.opensearch._location import Location, parse_location
from refind.store.opensearch._schema import INDEX_FORMAT
from refind.store.opensearch._store import OpenSearchStore

__all__ = ["INDEX_FORMAT", "Location", "OpenSearchStore", "parse_location"]
