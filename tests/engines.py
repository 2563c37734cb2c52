"""The engines every engine test runs over: one registry, so a new engine is one more entry.

``ENGINES`` maps a name to an :class:`EngineKind`: how to make a new, empty engine in a test's directory,
and what the engine can do beyond the protocol's reads and writes (reopen its data after ``close``, open a
read-only reader beside its writer). ``tests/test_engine_contract.py`` runs its suite over every entry;
search, agent and evidence tests take ``engine_memory(name, tmp)`` for the names they run on.

To add an engine (OpenSearch next): add an entry whose ``make`` connects to a fresh index (a per-test
prefix) and whose ``unavailable`` says why it cannot run here (no cluster) so its tests skip with that
reason, e.g. ``unavailable=tests.opensearch_helpers.unavailable_reason``.

The Lucene entries import :mod:`refind.store.lucene` only when a test makes one, so a run of the
reference entry alone never starts a JVM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import refind
from refind.config import Settings
from refind.store.base import Engine


@dataclass(frozen=True)
class EngineKind:
    """One engine under test.

    ``make(directory, settings)`` returns a new, empty engine (``directory`` is the test's own, for engines
    that need one). ``location(directory)``, for engines whose data outlives the object, is what
    :func:`refind.store.open_engine` reopens (in this process or in another); ``read_only`` says whether
    ``open_engine(location, read_only=True)`` gives a reader beside the writer. ``unavailable()`` returns
    why the engine cannot run here, or None."""

    name: str
    make: Callable[[Path, Settings], Engine]
    location: Callable[[Path], str] | None = None
    read_only: bool = False
    jvm: bool = False
    unavailable: Callable[[], str | None] = lambda: None

    @property
    def durable(self) -> bool:
        return self.location is not None


def _lucene_memory(directory: Path, settings: Settings) -> Engine:
    from refind.store.lucene import LuceneStore

    return LuceneStore(None, settings=settings)


def _lucene_disk(directory: Path, settings: Settings) -> Engine:
    from refind.store.lucene import LuceneStore

    return LuceneStore(directory / "index", settings=settings)


def _reference(directory: Path, settings: Settings) -> Engine:
    from refind.store.reference import ReferenceStore

    return ReferenceStore(settings=settings)


ENGINES: dict[str, EngineKind] = {
    "lucene": EngineKind("lucene", _lucene_memory, jvm=True),
    "lucene-disk": EngineKind(
        "lucene-disk", _lucene_disk, location=lambda d: str(d / "index"), read_only=True, jvm=True
    ),
    "reference": EngineKind("reference", _reference),
}


def kind(name: str) -> EngineKind:
    """The registered engine ``name``, or a skip when it cannot run here."""
    found = ENGINES[name]
    reason = found.unavailable()
    if reason is not None:
        pytest.skip(reason)
    return found


def engine_memory(name: str, directory: Path, **overrides: Any) -> refind.Memory:
    """A :class:`refind.Memory` over a new engine of kind ``name`` (``overrides``: settings, as Memory's
    keywords, given to the engine too)."""
    settings = Settings.from_env(**overrides)
    return refind.Memory(store=kind(name).make(directory, settings), settings=settings)
