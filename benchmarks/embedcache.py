"""Vectors remembered across benchmark runs: an :class:`~refind.embed.Embedder` that asks the one it wraps only
for texts it has not seen (by model name and text digest), kept in a SQLite file.

The dev sets hold about 27,000 distinct messages; the local model embeds some tens a second on these
machines, so every run of every adapter that embeds would otherwise spend minutes on the same vectors.
``REFIND_BENCH_EMBED_CACHE`` names the file (default ``out/embed-cache.sqlite``; ``off`` for none). The vectors
are the model's own, byte for byte (float32): a cached run ranks exactly as an uncached one.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["CachedEmbedder", "cached"]


class CachedEmbedder:
    """``embedder`` with its vectors kept in ``path`` (same ``name`` and ``dimensions``)."""

    def __init__(self, embedder: Any, path: str | os.PathLike[str]) -> None:
        self.inner = embedder
        self.name = embedder.name
        self.dimensions = embedder.dimensions
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.name}\x1f{text}".encode()).digest()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        found: dict[bytes, list[float]] = {}
        fmt = f"<{self.dimensions}f"
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                found.update((k, list(struct.unpack(fmt, v))) for k, v in rows)
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            new = self.inner.embed([texts[i] for i in missing])
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    [(keys[i], struct.pack(fmt, *v)) for i, v in zip(missing, new, strict=True)],
                )
                self._db.commit()
            for i, v in zip(missing, new, strict=True):
                found[keys[i]] = [float(x) for x in struct.unpack(fmt, struct.pack(fmt, *v))]
        return [found[k] for k in keys]


def cached(embedder: Any) -> Any:
    """``embedder`` wrapped in the run's cache (``REFIND_BENCH_EMBED_CACHE``), or as it is when that is off."""
    where = os.environ.get("REFIND_BENCH_EMBED_CACHE", "out/embed-cache.sqlite")
    if where.lower() in {"", "off", "0", "none"}:
        return embedder
    return CachedEmbedder(embedder, where)
