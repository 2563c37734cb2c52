"""``dense`` and ``vector``: meaning alone, every message (or session) ranked by cosine to the question.

``dense`` embeds with refind's local default model (:class:`refind.embed.local.LocalEmbedder`, offline);
``vector`` with an OpenAI-compatible embeddings endpoint (:class:`refind.embed.endpoint.EndpointEmbedder`;
``REFIND_BENCH_EMBED_MODEL``, default ``text-embedding-3-small``, and ``OPENAI_API_KEY`` /
``OPENAI_BASE_URL``: paid and networked, never run in CI). Session-level datasets embed each session's text;
datasets with turn gold embed each message and rank sessions by their best message (items are messages,
packed bare in rank order, like ``bm25``). Vectors are kept across runs (:mod:`benchmarks.embedcache`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.adapters.base import AdapterConfig, RankedItem, render_message
from benchmarks.adapters.refind_agent import openai_configured
from benchmarks.datasets import Question, Session
from benchmarks.embedcache import cached

__all__ = ["DenseAdapter", "VectorAdapter"]

MAX_CHARS = 8000
BATCH = 64


@dataclass
class _State:
    units: list[RankedItem]  # what is ranked: sessions or messages, score unset
    matrix: Any  # unit-normalized embeddings, one row per unit
    turn_level: bool
    fetch: int


class DenseAdapter:
    """Meaning alone with refind's local default model."""

    name = "dense"

    def __init__(self) -> None:
        self._embedder: Any = None
        self.info: dict[str, Any] = {}

    @staticmethod
    def unavailable() -> str | None:
        try:
            import numpy  # noqa: F401

            from refind.embed.local import LocalEmbedder

            LocalEmbedder()
        except Exception as exc:  # the model or its runtime missing: say why
            return f"the local embedding model cannot load: {exc}"
        return None

    def embedder(self) -> Any:
        if self._embedder is None:
            from refind.embed.local import LocalEmbedder

            self._embedder = cached(LocalEmbedder())
            self.info = {"model": self._embedder.name, "dimensions": self._embedder.dimensions}
        return self._embedder

    def _embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.asarray(self.embedder().embed(list(texts)), dtype=np.float32)

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        if config.turn_level:
            units = [
                RankedItem(s.id, 0.0, render_message(m.speaker, m.role, m.content), (m.id,) if m.id else None)
                for s in sessions
                for m in s.messages
            ]
            texts = [m.content for s in sessions for m in s.messages]
        else:
            units = [RankedItem(s.id, 0.0, s.text, s.turn_ids) for s in sessions]
            texts = [u.text for u in units]
        self.info["items"] = "messages" if config.turn_level else "sessions"
        return _State(units, self._embed(texts), config.turn_level, config.fetch)

    def query(self, question: Question, state: _State, k: int) -> list[RankedItem]:
        import numpy as np

        if not state.units:
            return []
        scores = state.matrix @ self._embed([question.text])[0]
        order = np.argsort(-scores, kind="stable")
        if state.turn_level:
            order = order[: max(state.fetch, k)]
        return [
            RankedItem(
                state.units[i].session_id, float(scores[i]), state.units[i].text, state.units[i].turn_ids
            )
            for i in order
        ]

    def teardown(self, state: _State) -> None:
        pass


class VectorAdapter(DenseAdapter):
    """Meaning alone with an OpenAI-compatible embeddings endpoint."""

    name = "vector"

    def __init__(self) -> None:
        super().__init__()
        self.model = os.environ.get("REFIND_BENCH_EMBED_MODEL") or "text-embedding-3-small"
        self.info = {"model": self.model}

    @staticmethod
    def unavailable() -> str | None:
        if not openai_configured():
            return "needs OPENAI_API_KEY or OPENAI_BASE_URL (an OpenAI-compatible embeddings endpoint)"
        return None

    def embedder(self) -> Any:
        if self._embedder is None:
            from refind.embed.endpoint import EndpointEmbedder

            self._embedder = EndpointEmbedder(
                self.model,
                base_url=os.environ.get("OPENAI_BASE_URL") or None,
                api_key=os.environ.get("OPENAI_API_KEY") or "unused",
                dimensions=0,  # not asked of the endpoint: known from the first vectors
            )
        return self._embedder
