"""Give the memory of large request bodies back to the system once none is held.

CPython frees a body's bytes when the request is done, but glibc's allocator keeps freed memory in its
heaps (and raises its mmap threshold after the first large free, so later 8 MiB bodies land in the heap
too): 250 keyless 8 MiB bodies once left the process about 200 MiB above where it started, on a machine
with more arenas than this one. ``malloc_trim(0)`` hands the free pages of every heap back. It runs off the
event loop, once the bytes of bodies held at once fall back to zero after a large one, never two at once.
Elsewhere than glibc it does nothing (other allocators return large blocks themselves).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable

__all__ = ["Trimmer", "LARGE_BODY"]

log = logging.getLogger("refind.server")

LARGE_BODY = 1024 * 1024
"""A body of at least this many bytes asks for a trim once no body is held (smaller ones do not)."""


def _malloc_trim() -> Callable[[], None] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def call() -> None:
        trim(0)

    return call


class Trimmer:
    """``request()`` on the event loop thread: a trim runs in the default executor, at most one at a
    time; a request made while one runs asks for one more after it."""

    def __init__(self) -> None:
        self._trim = _malloc_trim()
        self._running = False
        self._again = False

    def request(self) -> None:
        if self._trim is None:
            return
        if self._running:
            self._again = True
            return
        self._running = True
        asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        assert self._trim is not None
        loop = asyncio.get_running_loop()
        try:
            while True:
                self._again = False
                await loop.run_in_executor(None, self._trim)
                if not self._again:
                    break
        except Exception as exc:  # a failed trim costs memory, never a request
            log.warning("malloc_trim failed: %s", type(exc).__name__)
        finally:
            self._running = False
