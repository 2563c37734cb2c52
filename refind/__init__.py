"""refind: search an agent's raw chat history the way a person searches a chat app.

Messages are kept verbatim in an embedded Lucene index; questions are answered with evidence found by
keyword rounds with time filters, context windows and session fusion. Public names only live here.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

import importlib as _importlib
import typing as _typing

# The public API, listed once: each name imported from the module that defines it. Type checkers and the API
# docs read these imports (``X as X`` marks a re-export, PEP 484); at run time the block does not run, and
# ``_WHERE`` below is read from it, so ``import refind`` stays cheap (a shell command's client side loads only
# what it renders) and ``refind.Memory`` or ``from refind import Memory`` imports its module on first use.
if _typing.TYPE_CHECKING:
    from refind.agent import Agent as Agent
    from refind.agent import HeuristicAgent as HeuristicAgent
    from refind.agent import LLMAgent as LLMAgent
    from refind.agent import LLMOptions as LLMOptions
    from refind.config import Settings as Settings
    from refind.config import default_data_dir as default_data_dir
    from refind.embed.base import Embedder as Embedder
    from refind.errors import EmbedderUnavailable as EmbedderUnavailable
    from refind.errors import IndexFormatError as IndexFormatError
    from refind.errors import IndexLocked as IndexLocked
    from refind.errors import InvalidInput as InvalidInput
    from refind.errors import LLMUnavailable as LLMUnavailable
    from refind.errors import ReadOnlyError as ReadOnlyError
    from refind.errors import RefindError as RefindError
    from refind.errors import RequestConflict as RequestConflict
    from refind.errors import SetupError as SetupError
    from refind.errors import StoreClosed as StoreClosed
    from refind.errors import StoreError as StoreError
    from refind.evidence import format_date as format_date
    from refind.evidence import format_range as format_range
    from refind.evidence import match_spans as match_spans
    from refind.evidence import time_zone as time_zone
    from refind.memory import Memory as Memory
    from refind.models import AddResult as AddResult
    from refind.models import Evidence as Evidence
    from refind.models import Hit as Hit
    from refind.models import MarkedMessage as MarkedMessage
    from refind.models import Message as Message
    from refind.models import RoundTrace as RoundTrace
    from refind.models import SessionSummary as SessionSummary
    from refind.models import StandingFact as StandingFact
    from refind.models import StoreStats as StoreStats
    from refind.models import Turn as Turn
    from refind.result import SearchResult as SearchResult
    from refind.standing import Standing as Standing
    from refind.standing import read_standing as read_standing
    from refind.store.base import VectorCounts as VectorCounts
    from refind.warmup import WarmUp as WarmUp
    from refind.warmup import warm_up as warm_up


def _public_names() -> dict[str, str]:
    """Each public name with its module, read from the ``TYPE_CHECKING`` imports above."""
    import ast

    with open(__file__, encoding="utf-8") as f:  # refind is installed as files (the JVM reads its jar there)
        source = f.read()
    return {
        alias.asname or alias.name: imp.module
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "_typing.TYPE_CHECKING"
        for imp in node.body
        if isinstance(imp, ast.ImportFrom) and imp.module is not None
        for alias in imp.names
    }


_WHERE = _public_names()
__all__ = sorted([*_WHERE, "__version__"])


def __getattr__(name: str) -> _typing.Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'refind' has no attribute {name!r}")
    value = getattr(_importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
