"""The one pause of Python's automatic cyclic garbage collection, for work that allocates millions of
objects none of which is garbage in a cycle (decoding an export, a bulk import).

Each collection that such allocation triggers walks the young objects, and the full ones walk every object the
process holds: the collections took half the time of decoding a 50 MB export and 5-10% of a fresh import
(docs/benchmarks/perf.md, "Import: the collector paused"). Mercurial's ``util.nogc`` does the same for the
same reason. The collector's state is the process's, so pauses are counted: nested and concurrent ones
overlap, the last one out turns the collector back on, and only if it was on when the first came in (a
process that turned it off keeps it off).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["collector_paused"]

_lock = threading.Lock()
_pauses = 0  # pauses running now
_was_enabled = False  # the collector's state when the first of them began


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic collection inside (an explicit ``gc.collect`` still runs)."""
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()
