"""Agents decide the search rounds: the offline HeuristicAgent (default) and the LLMAgent."""

from refind.agent.base import Agent
from refind.agent.heuristic import HeuristicAgent

__all__ = ["Agent", "HeuristicAgent"]
