"""Adapters the runner can evaluate, by name. See :mod:`benchmarks.adapters.base` for the protocol.

| name | what | runs offline |
|---|---|---|
| ``grep`` | the seed framework's token-substring baseline | yes |
| ``bm25`` | one Lucene BM25 query over messages (refind's store), sessions by best message | yes |
| ``refind`` | ``Memory.search`` with the default (heuristic) agent | yes, once search exists |
| ``refind-llm`` | ``Memory.search`` with the LLM agent | no: OpenAI-compatible endpoint |
| ``refind-opensearch`` | ``refind`` over the OpenSearch engine, a fresh index prefix per haystack | no: ``$REFIND_BENCH_OPENSEARCH`` (a cluster) |
| ``refind-http`` | ``refind``'s search through the HTTP service (``/add``, ``/search``), a sandboxed server per haystack | yes |
| ``vector`` | OpenAI ``text-embedding-3-small``, cosine | no: OpenAI-compatible endpoint |

Packed for a reader's budget (``packed_turn_recall_at_budget``): ``refind`` and ``refind-llm`` pack their own
evidence (``Memory.search(..., max_tokens=B)``); the others have no packer, and the runner hands over their
ranked items in rank order, first fit (:mod:`benchmarks.packing`). ``refind-http`` is among those: the
service's ``/search`` takes no token budget, so its blocks are packed like hits.
"""

from __future__ import annotations

from typing import Any

from benchmarks.adapters.base import Adapter, AdapterConfig, RankedItem
from benchmarks.adapters.bm25 import BM25Adapter
from benchmarks.adapters.grep import GrepAdapter
from benchmarks.adapters.http import RefindHTTPAdapter
from benchmarks.adapters.refind_agent import RefindAdapter, RefindLLMAdapter, RefindOpenSearchAdapter
from benchmarks.adapters.vector import DenseAdapter, VectorAdapter

__all__ = ["ADAPTERS", "Adapter", "AdapterConfig", "RankedItem", "create", "unavailable"]

ADAPTERS: dict[str, Any] = {
    "grep": GrepAdapter,
    "bm25": BM25Adapter,
    "refind": RefindAdapter,
    "refind-llm": RefindLLMAdapter,
    "refind-http": RefindHTTPAdapter,
    "refind-opensearch": RefindOpenSearchAdapter,
    "dense": DenseAdapter,
    "vector": VectorAdapter,
}


def unavailable(name: str) -> str | None:
    """Why adapter ``name`` cannot run here, or None when it can."""
    return ADAPTERS[name].unavailable()


def create(name: str) -> Adapter:
    """A new adapter instance by name."""
    adapter: Adapter = ADAPTERS[name]()
    return adapter
