"""``vector``: OpenAI ``text-embedding-3-small`` and cosine similarity, as in the seed framework.

Session-level datasets embed each session's text; datasets with turn gold embed each message and rank
sessions by their best message (items are messages, like ``bm25``). As in the seed, each input is cut to
its first 8,000 characters. Needs ``OPENAI_API_KEY`` or an OpenAI-compatible ``OPENAI_BASE_URL``; the
model can be changed with ``REFIND_BENCH_EMBED_MODEL``. Paid and networked: never run in CI.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.adapters.base import AdapterConfig, RankedItem, render_message
from benchmarks.adapters.refind_agent import openai_configured
from benchmarks.datasets import Question, Session

__all__ = ["VectorAdapter"]

MAX_CHARS = 8000
BATCH = 64


@dataclass
class _State:
    client: Any
    units: list[RankedItem]  # what is ranked: sessions or messages, score unset
    matrix: Any  # unit-normalized embeddings, one row per unit
    turn_level: bool
    fetch: int


class VectorAdapter:
    name = "vector"

    def __init__(self) -> None:
        self.model = os.environ.get("REFIND_BENCH_EMBED_MODEL") or "text-embedding-3-small"
        self.info: dict[str, Any] = {"model": self.model, "max_chars": MAX_CHARS}

    @staticmethod
    def unavailable() -> str | None:
        if not openai_configured():
            return "needs OPENAI_API_KEY or OPENAI_BASE_URL (an OpenAI-compatible embeddings endpoint)"
        return None

    def _client(self) -> Any:
        import openai

        return openai.OpenAI(
            api_key=os.environ.get("OPENAI_API_KEY") or "unused",
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            timeout=60.0,
            max_retries=3,
        )

    def _embed(self, client: Any, texts: Sequence[str]) -> Any:
        import numpy as np

        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = [t[:MAX_CHARS] for t in texts[start : start + BATCH]]
            response = client.embeddings.create(model=self.model, input=batch)
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise RuntimeError(f"embeddings: asked for {len(batch)}, got {len(data)}")
            rows.extend(list(d.embedding) for d in data)
        matrix = np.asarray(rows, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        if config.turn_level:
            units = [
                RankedItem(s.id, 0.0, render_message(m.speaker, m.role, m.content), (m.id,) if m.id else None)
                for s in sessions
                for m in s.messages
            ]
        else:
            units = [RankedItem(s.id, 0.0, s.text, s.turn_ids) for s in sessions]
        client = self._client()
        matrix = self._embed(client, [u.text for u in units])
        self.info["items"] = "messages" if config.turn_level else "sessions"
        return _State(client, units, matrix, config.turn_level, config.fetch)

    def query(self, question: Question, state: _State, k: int) -> list[RankedItem]:
        import numpy as np

        if not state.units:
            return []
        q = self._embed(state.client, [question.text])[0]
        scores = state.matrix @ q
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
        state.client.close()
