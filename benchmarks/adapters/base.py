"""The adapter protocol: how the runner asks a retrieval system for evidence.

An adapter has a ``name``; ``init(sessions, config)`` indexes one haystack and returns a state;
``query(question, state, k)`` returns ranked items, best first; ``teardown(state)`` (optional) releases
what ``init`` took. ``unavailable()`` says why the adapter cannot run here (missing API, key, package), or
returns None; the runner then skips it with that one-line reason instead of failing or faking results.

A ranked item is one piece of evidence as the adapter would hand it to a reader: the session it comes
from, the message ids (turns) it carries when it has them, a score, and its rendered text (whose tokens
are counted). Session metrics read the session order of the items; turn metrics read their turn ids.

An adapter that packs its own evidence for a reader's token budget has ``pack(question, state, k, items,
budgets)``, called after ``query`` (untimed) on questions with turn gold, returning a
:class:`PackedEvidence` per budget: exactly what a reader would get for that many tokens. Without it
the runner packs the ranked items with :func:`benchmarks.packing.pack_in_order` (first fit, rank order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from benchmarks.datasets import Question, Session

__all__ = ["Adapter", "AdapterConfig", "PackedEvidence", "RankedItem", "render_message"]


@dataclass(frozen=True, slots=True)
class RankedItem:
    session_id: str
    score: float
    text: str
    turn_ids: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class PackedEvidence:
    """The evidence a reader gets for one token budget: the exact ``text``, its ``tokens``
    (:func:`refind.tokens.count_tokens`), the ids of the turns it carries and how many items (refind:
    evidence blocks) it holds. A turn the packer cut to a passage is still carried."""

    text: str
    tokens: int
    turn_ids: frozenset[str]
    items: int


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    """What an adapter may know about the run. ``turn_level``: the dataset has turn gold, so message-level
    adapters return messages as items (else sessions). ``fetch``: messages a message-level adapter
    retrieves per question before ranking sessions by their best message."""

    dataset: str
    k: int
    turn_level: bool
    fetch: int = 200


@runtime_checkable
class Adapter(Protocol):
    name: str

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> Any: ...

    def query(self, question: Question, state: Any, k: int) -> list[RankedItem]: ...


def render_message(speaker: str | None, role: str, content: str) -> str:
    """One message as evidence text: ``[speaker or role] content`` (the form sessions are rendered in)."""
    return f"[{speaker or role}] {content}"
