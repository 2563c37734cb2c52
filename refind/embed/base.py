"""The embedder seam: one small protocol every source of sentence vectors implements.

An :class:`Embedder` has a ``name`` (recorded in the index: vectors of two models never mix), its
``dimensions``, and :meth:`Embedder.embed`, which turns texts into unit-length vectors (cosine similarity is
then their dot product). refind ships two: the local default (:mod:`refind.embed.local`, offline, its weights
from a registry package) and an OpenAI-compatible embeddings endpoint (:mod:`refind.embed.endpoint`: OpenAI,
llama.cpp's embedding server, Ollama, vLLM). Anything with these three members works too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Embedder", "normalized"]


@runtime_checkable
class Embedder(Protocol):
    """A source of sentence vectors."""

    name: str
    """What produced the vectors (model and, where it changes them, the runtime): recorded in the index."""
    dimensions: int
    """The length of every vector."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order. A text longer than the model reads is read as far as it
        reads (its beginning); an empty text gets a vector too."""
        ...


def normalized(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to unit length (a zero vector stays zero)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [float(x) / norm for x in vector] if norm > 0 else [0.0 for _ in vector]
