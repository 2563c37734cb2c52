"""Meaning beside words: sentence vectors of messages and questions (issue 27).

:class:`~refind.embed.base.Embedder` is the seam: the local default model (:mod:`refind.embed.local`) and an
OpenAI-compatible embeddings endpoint (:class:`~refind.embed.endpoint.EndpointEmbedder`) implement it.
"""

from refind.embed.base import Embedder, normalized
from refind.embed.choose import default_embedder
from refind.embed.endpoint import EndpointEmbedder

__all__ = ["Embedder", "EndpointEmbedder", "default_embedder", "normalized"]
