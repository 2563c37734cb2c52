"""Agents decide the search rounds: the offline HeuristicAgent (default) and the LLMAgent."""

from refind.agent._options import LLMOptions
from refind.agent.base import Agent
from refind.agent.heuristic import HeuristicAgent
from refind.agent.llm import LLMAgent

__all__ = ["Agent", "HeuristicAgent", "LLMAgent", "LLMOptions"]
