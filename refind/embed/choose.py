"""Which embedder a memory uses when it is given none: the ``embedder`` setting, resolved once per process."""

from __future__ import annotations

import logging
import threading
from typing import Any

from refind.embed.base import Embedder
from refind.errors import EmbedderUnavailable

__all__ = ["default_embedder"]

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_CHOSEN: dict[str, Embedder | None] = {}
_SAID: set[str] = set()


def default_embedder(kind: str) -> Embedder | None:
    """The embedder of setting ``kind`` (``local``, ``endpoint``, ``off``), made once per process and shared by
    every memory (a model is loaded once). When it cannot be had (the local model not installed, no endpoint
    configured), None: refind searches by words, and says so once, at WARNING, with the fix."""
    if kind == "off":
        return None
    with _LOCK:
        if kind in _CHOSEN:
            return _CHOSEN[kind]
        chosen: Any = None
        try:
            if kind == "local":
                from refind.embed.local import LocalEmbedder

                chosen = LocalEmbedder()
            elif kind == "endpoint":
                from refind.embed.endpoint import EndpointEmbedder

                chosen = EndpointEmbedder()
            else:
                raise EmbedderUnavailable(f"embedder: expected local, endpoint or off, got {kind!r}")
        except EmbedderUnavailable as exc:
            if kind not in _SAID:
                _SAID.add(kind)
                log.warning("refind searches by words only: %s", exc)
        _CHOSEN[kind] = chosen
        return chosen
