"""The engines every engine test runs over: one registry, so a new engine is one more entry.

``ENGINES`` maps a name to an :class:`EngineKind`: how to make a new, empty engine in a test's directory,
and what the engine can do beyond the protocol's reads and writes (reopen its data after ``close``, open a
read-only reader beside its writer). ``tests/test_engine_contract.py`` runs its suite over every entry;
search, agent and evidence tests take ``engine_memory(name, tmp)`` for the names they run on.

To add an engine: add an entry whose ``make`` gives a new, empty one and whose ``unavailable`` says why it
cannot run here so its tests skip with that reason. The ``opensearch`` entry connects to the test run's
1-node dev cluster (:func:`tests.opensearch_helpers.session_cluster`, started on first use) with a fresh
index prefix per test; without Java or mvn it skips (fails under ``REFIND_REQUIRE_OPENSEARCH=1``).

The Lucene entries import :mod:`refind.store.lucene` only when a test makes one, so a run of the
reference entry alone never starts a JVM.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import refind
from refind.config import Settings
from refind.store.base import Engine, Record, WriteBatch


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


_prefixes: list[str] = []


def _opensearch_location(directory: Path) -> str:
    """The test's index prefix on the session's node (one per test directory)."""
    import hashlib

    from tests.opensearch_helpers import session_cluster

    url = session_cluster().url.split("://", 1)[1]
    return f"opensearch://{url}/t-{hashlib.sha1(str(directory).encode()).hexdigest()[:12]}"


def _opensearch(directory: Path, settings: Settings) -> Engine:
    from refind.store.opensearch import OpenSearchStore

    store = OpenSearchStore(_opensearch_location(directory), settings=settings, stale_after=5)
    _prefixes.append(store.loc.prefix)
    while len(_prefixes) > 6:  # the indexes of earlier tests: dropped, so the node stays small
        old = _prefixes.pop(0)
        store._client.indices.delete(index=f"{old}-*", ignore_unavailable=True)
    return store


def _opensearch_unavailable() -> str | None:
    from tests.opensearch_helpers import REQUIRE_ENV, unavailable_reason

    reason = unavailable_reason()
    if reason is not None and os.environ.get(REQUIRE_ENV) == "1":
        return None  # let session_cluster() fail loudly instead of skipping
    return reason


ENGINES: dict[str, EngineKind] = {
    "lucene": EngineKind("lucene", _lucene_memory, jvm=True),
    "lucene-disk": EngineKind(
        "lucene-disk", _lucene_disk, location=lambda d: str(d / "index"), read_only=True, jvm=True
    ),
    "reference": EngineKind("reference", _reference),
    "opensearch": EngineKind(
        "opensearch",
        _opensearch,
        location=_opensearch_location,
        read_only=True,
        unavailable=_opensearch_unavailable,
    ),  # fmt: skip
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


def write_without_standing(engine: Engine, texts: Sequence[tuple[str, str]]) -> None:
    """Write ``texts`` ((role, text) pairs) as the turns of user 'u''s session 's', as a refind before the
    standing rule (issue 37) wrote them: no standing on the records; commit, and check that none stands."""
    engine.write(WriteBatch([
        Record("u", "s", f"s:{t}", t, 1_700_000_000_000 + t, role, text) for t, (role, text) in enumerate(texts)
    ]))  # fmt: skip
    engine.commit()
    assert engine.standing("u", 10) == []
