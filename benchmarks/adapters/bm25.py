"""``bm25``: plain BM25-RAG over messages through refind's store, one query per question.

Each haystack goes into its own in-memory :class:`refind.Memory` (one JVM per process; a new index costs
about 25 ms). A shared index would be cheaper but wrong for a baseline: Lucene's BM25 statistics (document
frequencies, average length) are index-wide, so other haystacks in the same index, or deleted ones not yet
merged away, would change this haystack's scores.

A query fetches the top ``config.fetch`` messages (200) by BM25; sessions are ranked by their best message.
On datasets with turn gold the items are the matched messages themselves, in BM25 order (so the token
budget metrics measure one-shot BM25 evidence); otherwise one item per session, rendered whole.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.adapters.base import AdapterConfig, RankedItem, render_message
from benchmarks.datasets import Question, Session
from benchmarks.embedcache import cached

__all__ = ["BM25Adapter"]

_USER = "haystack"


@dataclass
class _State:
    memory: Any
    sessions: dict[str, Session]
    turn_level: bool
    fetch: int


@functools.cache
def warm_up_once() -> None:
    """``refind.warm_up()`` once per process, before the first haystack is opened (untimed, like the JVM
    start), unless ``REFIND_BENCH_WARMUP=0``: per-question latencies of the adapters over refind's engine
    (bm25, refind) are then a warm process's, as a long-running agent or ``refind serve`` sees them; the
    cold figures are the same run with the variable set to 0."""
    if os.environ.get("REFIND_BENCH_WARMUP", "1") == "0":
        return
    import refind

    refind.warm_up()


def open_haystack(sessions: Sequence[Session], *, meaning: bool = False) -> Any:
    """A fresh in-memory Memory holding ``sessions`` under one user (:data:`_USER`), in a warmed process
    (:func:`warm_up_once`). With ``meaning``, the memory has the embedder its settings name
    (``REFIND_EMBEDDER``, the local model by default; vectors kept across runs, :mod:`benchmarks.embedcache`)
    and every message has its vector before it is returned (embedded in this thread: deterministic)."""
    import refind
    from refind.embed import default_embedder

    warm_up_once()

    embedder = None
    if meaning:
        chosen = default_embedder(refind.Settings.from_env().embedder)
        embedder = cached(chosen) if chosen is not None else None
    memory = refind.Memory.in_memory(embedder=embedder, embed_in_background=False)
    try:
        memory.import_sessions(s.to_log(_USER) for s in sessions)
        if embedder is not None:
            memory.embed_pending()
    except BaseException:
        memory.close()
        raise
    return memory


class BM25Adapter:
    name = "bm25"

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}

    @staticmethod
    def unavailable() -> str | None:
        return None

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        memory = open_haystack(sessions)
        self.info = {
            "bm25_k1": memory.settings.bm25_k1,
            "bm25_b": memory.settings.bm25_b,
            "fetch": config.fetch,
            "items": "messages" if config.turn_level else "sessions",
        }
        return _State(memory, {s.id: s for s in sessions}, config.turn_level, config.fetch)

    def query(self, question: Question, state: _State, k: int) -> list[RankedItem]:
        hits = state.memory.query(_USER, question.text, k=max(state.fetch, k))
        if state.turn_level:
            return [
                RankedItem(
                    h.session_id, float(h.score), render_message(h.speaker, h.role, h.content), (h.id,)
                )
                for h in hits
            ]
        best: dict[str, float] = {}
        for h in hits:
            best.setdefault(h.session_id, float(h.score))
        return [
            RankedItem(sid, score, state.sessions[sid].text, state.sessions[sid].turn_ids)
            for sid, score in best.items()
        ]

    def teardown(self, state: _State) -> None:
        state.memory.close()
