"""Sentence vectors from an OpenAI-compatible embeddings endpoint, through the ``openai`` client.

OpenAI (``text-embedding-3-small``), llama.cpp's ``llama-server --embedding``, Ollama, vLLM and LM Studio all
answer ``POST /v1/embeddings``. The model, endpoint and key come from the arguments, else
``REFIND_EMBED_MODEL``, ``REFIND_EMBED_BASE_URL`` and ``REFIND_EMBED_API_KEY`` (then ``OPENAI_API_KEY``).
Texts are sent in batches of ``batch`` and cut to ``max_chars`` characters first (an endpoint refuses a text
longer than its model's window; a message's beginning says what it is about). Retries: the client's own
(``max_retries``, on 429, 5xx and connection errors); a request that still fails raises
:class:`~refind.errors.EmbedderUnavailable`, which the caller (the embedding worker) reports and retries later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from refind.config import env_var
from refind.embed.base import normalized
from refind.errors import EmbedderUnavailable, InvalidInput

__all__ = ["EndpointEmbedder"]


class EndpointEmbedder:
    """An :class:`~refind.embed.Embedder` over ``POST {base_url}/embeddings``. ``dimensions`` is asked of the
    endpoint once (one short text embedded) unless given."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any | None = None,
        dimensions: int | None = None,
        batch: int = 64,
        max_chars: int = 8000,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        model = model or env_var("REFIND_EMBED_MODEL")
        if not model:
            raise InvalidInput(
                "embedding endpoint: no model named; pass model=... or set REFIND_EMBED_MODEL "
                "(e.g. text-embedding-3-small, or the name your local server gives its model)",
                field="model",
            )
        if not isinstance(batch, int) or batch < 1:
            raise InvalidInput("batch: expected a positive integer", field="batch")
        self.model = model
        self.batch = batch
        self.max_chars = max_chars
        if client is None:
            try:
                import openai
            except ImportError as exc:  # pragma: no cover - openai is a dependency
                raise EmbedderUnavailable("the embeddings endpoint needs the openai package") from exc
            url = base_url or env_var("REFIND_EMBED_BASE_URL")
            key = api_key or env_var("REFIND_EMBED_API_KEY") or env_var("OPENAI_API_KEY")
            if not url and not key:
                raise EmbedderUnavailable(
                    "no embeddings endpoint: set REFIND_EMBED_BASE_URL (e.g. http://localhost:8080/v1 for "
                    "llama-server --embedding) or REFIND_EMBED_API_KEY for OpenAI, or use the local default "
                    "model (REFIND_EMBEDDER=local)"
                )
            client = openai.OpenAI(
                api_key=key or "unused", base_url=url, timeout=timeout, max_retries=max_retries
            )
        self.client = client
        self.base_url = str(getattr(client, "base_url", "")) or None
        self.name = f"endpoint:{model}"
        self.dimensions = dimensions if dimensions is not None else len(self.embed(["dimensions"])[0])

    def __repr__(self) -> str:
        return f"EndpointEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch):
            chunk = [t[: self.max_chars] or " " for t in texts[i : i + self.batch]]
            try:
                response = self.client.embeddings.create(model=self.model, input=chunk)
            except Exception as exc:  # openai's errors, connection errors: say which endpoint failed
                raise EmbedderUnavailable(
                    f"the embeddings endpoint {self.base_url or 'api.openai.com'} failed for model "
                    f"{self.model!r}: {type(exc).__name__}: {str(exc)[:200]}"
                ) from exc
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(chunk):
                raise EmbedderUnavailable(
                    f"the embeddings endpoint returned {len(data)} vectors for {len(chunk)} texts"
                )
            out.extend(normalized(d.embedding) for d in data)
        return out
