"""A search a tool call asked for (``tool``): the LLM agent's and users' own agents' ``search``
(:mod:`refind.agent._tools`). Never proposed by a plan; runs as a BM25 round over its keywords."""

from __future__ import annotations

from refind.agent.kinds._base import Kind

__all__ = ["TOOL"]


class Tool(Kind):
    name = "tool"
    slot = "none"


TOOL = Tool()
