"""The embedding worker: fills in the vectors of the messages awaiting theirs, in the background.

Every message an engine stores enters its durable queue (:meth:`refind.store.base.Writer.pending_vectors`);
nobody waits for its vector. :class:`VectorWorker` runs in the process that holds the writer (a writable
:class:`refind.Memory` with an embedder): one thread takes a bounded batch from the queue, embeds it with
no lock held (adds and searches go on meanwhile), then writes the vectors and commits under the write
path's lock (:meth:`refind.store.write.WritePath.write_vectors`), and sleeps when the queue is empty until
an add wakes it. :meth:`VectorWorker.step` is the same step in the calling thread (``Memory.embed_pending``:
``refind import`` and benchmarks).

What a crash loses: nothing acknowledged. The queue is the engine's, durable with the messages, so a kill -9
between a batch's embedding and its commit leaves those messages queued, and the next worker embeds them.
An embedder that fails (:class:`~refind.errors.EmbedderUnavailable`: an endpoint down) leaves the queue as
it is; the worker says so once and tries again later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from refind.embed.base import Embedder
from refind.errors import EmbedderUnavailable, StoreClosed
from refind.store.base import VectorRecord
from refind.store.write import WritePath

__all__ = ["BATCH", "VectorWorker"]

log = logging.getLogger(__name__)

BATCH = 64
"""Messages embedded and written per step: small, so the write path's lock is held briefly (an add waits
for at most one batch's write and commit) and a step's work is bounded; not smaller, since each step's
commit costs about as much as writing 64 vectors (docs/benchmarks/vectors.md)."""
RETRY_SECONDS = 30.0  # after the embedder or the engine failed: wait this long (or until woken) and retry
IDLE_SECONDS = 60.0  # an idle worker looks at the queue this often even when nobody wakes it


class VectorWorker:
    """Embeds queued messages with ``embedder`` and writes their vectors through ``writes``."""

    def __init__(self, writes: WritePath, embedder: Embedder, *, batch: int = BATCH) -> None:
        self.writes = writes
        self.engine = writes.engine
        self.embedder = embedder
        self.batch = max(1, int(batch))
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._step_lock = threading.Lock()  # one step at a time: the thread's and embed_pending's
        self._idle = threading.Condition()
        self._working = False
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None  # the last failure, until a step succeeds
        self.embedded = 0  # vectors written by this worker

    # ------------------------------------------------------------------ the thread

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="refind-embed", daemon=True)
            self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wake(self) -> None:
        """Something was written: look at the queue now."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the thread after its current step (what it embedded and did not commit stays queued)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                with self._idle:
                    self._working = True
                taken, _ = self._step(self.batch)
            except StoreClosed:
                return
            except Exception as exc:  # an endpoint down, a full disk: the queue keeps the messages
                if self.error is None or type(self.error) is not type(exc):
                    log.warning(
                        "the embedding worker failed (%s: %s); the messages stay queued and it tries again "
                        "in %.0f s",
                        type(exc).__name__, str(exc)[:300], RETRY_SECONDS,
                    )  # fmt: skip
                self.error = exc
                self._rest(RETRY_SECONDS)
                continue
            finally:
                with self._idle:
                    self._working = False
                    self._idle.notify_all()
            if not taken:
                self._rest(IDLE_SECONDS)

    def _rest(self, seconds: float) -> None:
        self._wake.wait(seconds)

    # ------------------------------------------------------------------ one step

    def step(self, limit: int | None = None) -> tuple[int, int]:
        """One batch (of at most ``limit``, else the worker's batch) in the calling thread: (messages taken
        from the queue, vectors written)."""
        with self._idle:
            self._working = True
        try:
            return self._step(self.batch if limit is None else max(1, int(limit)))
        finally:
            with self._idle:
                self._working = False
                self._idle.notify_all()

    def _step(self, limit: int) -> tuple[int, int]:
        with self._step_lock:
            pending = self.engine.pending_vectors(limit)
            if not pending:
                return 0, 0
            vectors = self.embedder.embed([p.content for p in pending])  # no lock held: adds go on
            if len(vectors) != len(pending):
                raise EmbedderUnavailable(
                    f"the embedder {self.embedder.name!r} returned {len(vectors)} vectors for {len(pending)} texts"
                )
            records = [
                VectorRecord(p.user_id, p.id, p.token, v) for p, v in zip(pending, vectors, strict=True)
            ]
            written = self.writes.write_vectors(records)
            self.embedded += written
            self.error = None
            return len(pending), written

    def drain(
        self,
        limit: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Steps in the calling thread until the queue is empty (or ``limit`` vectors are written, or
        ``should_stop()``); ``progress(written so far, still queued)`` after each. Returns the vectors
        written."""
        written = 0
        while limit is None or written < limit:
            if should_stop is not None and should_stop():
                break
            want = self.batch if limit is None else min(self.batch, limit - written)
            taken, n = self.step(want)
            written += n
            if progress is not None:
                progress(written, self.engine.vector_counts().pending)
            if not taken:
                break
        return written

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until the queue is empty and no step runs (True), or ``timeout`` seconds pass (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._idle:
                while self._working:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._idle.wait(left if left is None else min(left, 1.0))
            if self.engine.vector_counts().pending == 0:
                with self._idle:
                    if not self._working:
                        return True
                continue
            if not self.running:
                return False  # nobody fills the queue: it would never empty
            self.wake()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            with self._idle:
                self._idle.wait(0.05 if left is None else min(0.05, left))
