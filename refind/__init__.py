"""refind: search an agent's raw chat history the way a person searches a chat app.

Messages are kept verbatim in an embedded Lucene index; questions are answered with evidence found by
keyword rounds with time filters, context windows and session fusion. Public names only live here.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

import importlib as _importlib
import typing as _typing

if (
    _typing.TYPE_CHECKING
):  # the names, for type checkers and the API docs; at run time each loads on first use
    from refind.agent import Agent, HeuristicAgent, LLMAgent, LLMOptions
    from refind.config import Settings, default_data_dir
    from refind.embed.base import Embedder
    from refind.errors import (
        EmbedderUnavailable,
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
    from refind.evidence import format_date, format_range, match_spans, time_zone
    from refind.memory import Memory
    from refind.models import (
        AddResult,
        Evidence,
        Hit,
        MarkedMessage,
        Message,
        RoundTrace,
        SessionSummary,
        StandingFact,
        StoreStats,
        Turn,
    )
    from refind.result import SearchResult
    from refind.standing import Standing, read_standing
    from refind.store.base import VectorCounts
    from refind.warmup import WarmUp, warm_up

# Where each public name lives: ``import refind`` stays cheap (a shell command's client side loads only what it
# renders), and ``refind.Memory`` or ``from refind import Memory`` imports its module then.
_WHERE = {
    "AddResult": "refind.models",
    "Agent": "refind.agent",
    "Embedder": "refind.embed.base",
    "EmbedderUnavailable": "refind.errors",
    "Evidence": "refind.models",
    "HeuristicAgent": "refind.agent",
    "Hit": "refind.models",
    "IndexFormatError": "refind.errors",
    "IndexLocked": "refind.errors",
    "InvalidInput": "refind.errors",
    "LLMAgent": "refind.agent",
    "LLMOptions": "refind.agent",
    "LLMUnavailable": "refind.errors",
    "MarkedMessage": "refind.models",
    "Memory": "refind.memory",
    "Message": "refind.models",
    "ReadOnlyError": "refind.errors",
    "RefindError": "refind.errors",
    "RequestConflict": "refind.errors",
    "RoundTrace": "refind.models",
    "SearchResult": "refind.result",
    "SessionSummary": "refind.models",
    "Settings": "refind.config",
    "SetupError": "refind.errors",
    "Standing": "refind.standing",
    "StandingFact": "refind.models",
    "StoreClosed": "refind.errors",
    "StoreError": "refind.errors",
    "StoreStats": "refind.models",
    "Turn": "refind.models",
    "VectorCounts": "refind.store.base",
    "WarmUp": "refind.warmup",
    "default_data_dir": "refind.config",
    "format_date": "refind.evidence",
    "format_range": "refind.evidence",
    "match_spans": "refind.evidence",
    "read_standing": "refind.standing",
    "time_zone": "refind.evidence",
    "warm_up": "refind.warmup",
}

__all__ = [
    "AddResult",
    "Agent",
    "Embedder",
    "EmbedderUnavailable",
    "Evidence",
    "HeuristicAgent",
    "Hit",
    "IndexFormatError",
    "IndexLocked",
    "InvalidInput",
    "LLMAgent",
    "LLMOptions",
    "LLMUnavailable",
    "MarkedMessage",
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
    "Standing",
    "StandingFact",
    "StoreClosed",
    "StoreError",
    "StoreStats",
    "Turn",
    "VectorCounts",
    "WarmUp",
    "__version__",
    "default_data_dir",
    "format_date",
    "format_range",
    "match_spans",
    "read_standing",
    "time_zone",
    "warm_up",
]


def __getattr__(name: str) -> _typing.Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'refind' has no attribute {name!r}")
    value = getattr(_importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
