"""Test tools: small embedders made for tests, never shipped. ``HashingTestEmbedder`` turns a text into a
unit vector by hashing its lowercased words into a few buckets (a bag of words): deterministic, instant, and
texts that share words are near each other, which is all the engine and worker tests need of text -> vector.
The end-to-end tests of search by meaning use the real local model (refind/embed/local.py)."""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Sequence

from refind.errors import EmbedderUnavailable


class HashingTestEmbedder:
    """A test tool: a bag of hashed words, ``dimensions`` buckets, unit length. ``delay``: seconds each
    ``embed`` call sleeps (a slow model); ``gate``: when set, ``embed`` waits for it (a stalled model);
    ``fail``: when set, ``embed`` raises :class:`EmbedderUnavailable` (an endpoint down)."""

    def __init__(self, dimensions: int = 32, name: str = "test-hashing-bow", delay: float = 0.0) -> None:
        self.name = name
        self.dimensions = dimensions
        self.delay = delay
        self.gate: threading.Event | None = None
        self.fail = threading.Event()
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(30)
        if self.fail.is_set():
            raise EmbedderUnavailable("the test embedder is set to fail")
        if self.delay:
            time.sleep(self.delay)
        self.texts += len(texts)
        return [self.vector(t) for t in texts]

    def vector(self, text: str) -> list[float]:
        v = [0.0] * self.dimensions
        for word in re.findall(r"\w+", text.lower()):
            h = hashlib.blake2b(word.encode(), digest_size=4).digest()
            v[int.from_bytes(h[:3], "big") % self.dimensions] += 1.0 if h[3] & 1 else -1.0
        n = math.sqrt(sum(x * x for x in v))
        if n == 0:
            v[0], n = 1.0, 1.0
        return [x / n for x in v]
