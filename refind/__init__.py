"""refind: search an agent's raw chat history the way a person searches a chat app.

Messages are kept verbatim in an embedded Lucene index; questions are answered with evidence found by
keyword rounds with time filters, context windows and session fusion. Public names only live here.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

from refind.agent import Agent, HeuristicAgent, LLMAgent
from refind.config import Settings, default_data_dir
from refind.errors import (
    IndexFormatError,
    IndexLocked,
    InvalidInput,
    LLMUnavailable,
    ReadOnlyError,
    RefindError,
    RequestConflict,
    SetupError,
    StoreClosed,
    StoreError,
)
from refind.evidence import format_date
from refind.memory import Memory
from refind.models import (
    AddResult,
    Evidence,
    Hit,
    Message,
    RoundTrace,
    SessionSummary,
    StoreStats,
    Turn,
)
from refind.result import SearchResult
from refind.warmup import WarmUp, warm_up

__all__ = [
    "AddResult",
    "Agent",
    "Evidence",
    "HeuristicAgent",
    "Hit",
    "IndexFormatError",
    "IndexLocked",
    "InvalidInput",
    "LLMAgent",
    "LLMUnavailable",
    "Memory",
    "Message",
    "ReadOnlyError",
    "RefindError",
    "RequestConflict",
    "RoundTrace",
    "SearchResult",
    "SessionSummary",
    "Settings",
    "SetupError",
    "StoreClosed",
    "StoreError",
    "StoreStats",
    "Turn",
    "WarmUp",
    "__version__",
    "default_data_dir",
    "format_date",
    "warm_up",
]
