"""Searches in reader processes, so they run in parallel on the cores.

A search is about half Java (Lucene, outside the GIL) and half Python (the agent's rounds, fusion,
evidence), and its Python half holds the GIL: threads of one process overlap little of it (measured with
LoCoMo questions after JIT warm-up on 2 cores: 16 threads 1.1-1.3x one thread's rate; two processes 1.9x).
So ``refind serve`` keeps the index's writer in its own process (adds, deletions, retention) and hands each
search to one of ``search_workers`` processes that hold the same index open read-only. Each search in a
worker first refreshes to the writer's latest commit, so an add is visible to every search that starts
after it was answered, as in one process.

Workers are started with ``spawn`` (a JVM cannot be forked) and run only public refind calls. A worker
that dies fails its search with 503 and the pool is restarted.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import UTC, datetime
from typing import Any

import refind

__all__ = ["SearchPool", "search_items"]

log = logging.getLogger("refind.server")

_memory: refind.Memory | None = None
_agent: refind.Agent | None = None
_warmed: refind.WarmUp | None = None


def _iso(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.isoformat(timespec="milliseconds" if ms % 1000 else "seconds").replace("+00:00", "Z")


def search_items(
    memory: refind.Memory,
    agent: refind.Agent | None,
    query: str,
    user_id: str,
    top_k: int,
    now: Any = None,
    options: list[str] | None = None,
    max_tokens: int | None = None,
) -> list[dict[str, Any]]:
    """One Search: the evidence blocks, most relevant first, at most ``top_k``, each rendered as
    ``SearchResult.to_text`` renders it (packed for ``max_tokens`` when given)."""
    result = memory.search(query, user_id, now=now, agent=agent, options=options, max_tokens=max_tokens)
    return [
        {
            "id": b.id,
            "content": result.render_block(b),
            "score": b.score,
            "created_at": _iso(b.turns[0].timestamp),
        }
        for b in result.by_relevance()[:top_k]
    ]


def _exit_with_parent() -> None:
    """End this worker when the serving process is gone, however it ended (a ``kill -9`` leaves no one to
    shut the pool down, and an orphaned reader would keep its JVM and the index open)."""
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="refind-parent-watch", daemon=True).start()


def settle_heap() -> int:
    """Once a serving process has started (modules imported, the JVM and JPype up, warmed up): collect, then
    move every object alive to the collector's permanent generation (``gc.freeze``), so that its full
    collections, which a search's allocations trigger every few dozen searches, stop walking the tens of
    thousands of objects that live as long as the process. Measured (docs/service.md): on one index, the
    collector's time over 1,200 searches fell from 0.6-1.5 s to under 0.1 s and the searches over 30 ms
    from 18-44 to 1. Returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def _start_worker(path: str, settings: dict[str, Any] | None, agent: str, warm_up_s: float = 0.0) -> None:
    global _memory, _agent, _warmed
    _exit_with_parent()
    s = refind.Settings(**settings) if settings is not None else None
    _memory = refind.Memory(path, read_only=True, settings=s)
    seed = refind.HeuristicAgent.from_settings(_memory.settings)  # as the serving process's (_app._Runtime)
    _agent = refind.LLMAgent(fallback=seed) if agent == "llm" else None
    if warm_up_s > 0:
        _warmed = refind.warm_up(warm_up_s)
    settle_heap()


def _search(request: dict[str, Any]) -> list[dict[str, Any]]:
    assert _memory is not None, "the search worker did not start"
    return search_items(_memory, _agent, **request)


def _ready() -> tuple[int, refind.WarmUp | None]:
    return os.getpid(), _warmed


def _log_ready(future: Future[tuple[int, refind.WarmUp | None]]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    pid, warmed = future.result()
    if warmed is not None:
        log.info("search worker %d warmed up: %d searches in %.1f s", pid, warmed.searches, warmed.seconds)


class SearchPool:
    """``workers`` reader processes over the index at ``path`` (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        workers: int,
        *,
        agent: str,
        settings: refind.Settings | None,
        warm_up_s: float = 0.0,
    ) -> None:
        self.path = str(path)
        self.workers = workers
        self._args = (self.path, settings.model_dump() if settings is not None else None, agent, warm_up_s)
        self._executor = self._new()

    def _new(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=self._args,
        )

    def warm(self) -> list[Future[tuple[int, refind.WarmUp | None]]]:
        """Start every worker now (each opens the index, starts its JVM and runs its warm-up), without
        waiting; each future gives a worker's pid and warm-up once it is ready (logged)."""
        futures = [self._executor.submit(_ready) for _ in range(self.workers)]
        for f in futures:
            f.add_done_callback(_log_ready)
        return futures

    async def search(self, **request: Any) -> list[dict[str, Any]]:
        """Run one search (``search_items``' arguments but the memory and agent) in a worker."""
        try:
            return await asyncio.wrap_future(self._executor.submit(_search, request))
        except BrokenProcessPool as exc:
            log.error("a search worker died (%s); starting the pool again", type(exc).__name__)
            old, self._executor = self._executor, self._new()
            old.shutdown(wait=False, cancel_futures=True)
            raise refind.StoreError("a search worker stopped; retry") from None

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
