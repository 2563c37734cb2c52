"""The Store protocol: what a storage engine offers the layers above it.

The embedded default is :class:`refind.store.lucene.LuceneStore`. A scale-out engine (OpenSearch) would
implement the same methods over the same document shape (DESIGN §8).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from refind.models import Hit

__all__ = ["Filters", "Record", "SessionUpdate", "Store"]

SessionUpdate = Literal["new", "append", "rebuild"]


@dataclass(frozen=True, slots=True)
class Record:
    """One message ready to be written: every field resolved (turn, timestamp, id)."""

    user_id: str
    session_id: str
    id: str
    turn: int
    timestamp: int
    role: str
    content: str
    speaker: str | None = None
    time_text: str | None = None
    replace: bool = True  # False only when the caller knows the id is new (skips the delete-by-term)


@dataclass(frozen=True, slots=True)
class Filters:
    """Constraints applied before ranking. Times are inclusive epoch ms; ``exclude_ids`` are message ids."""

    time_from: int | None = None
    time_to: int | None = None
    session_ids: Sequence[str] | None = None
    roles: Sequence[str] | None = None
    exclude_ids: Sequence[str] | None = None
    exclude_sessions: Sequence[str] | None = None


class Store(Protocol):
    """Storage engine interface. Every read takes the user id: there is no cross-user query."""

    def add(
        self,
        records: Sequence[Record],
        *,
        marker: tuple[str, str, str] | None = None,
        sessions: dict[tuple[str, str], SessionUpdate] | None = None,
    ) -> int: ...

    def query_sessions(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]: ...

    def analyze(self, text: str) -> list[str]: ...

    def query(self, user_id: str, text: str, k: int = 10, filters: Filters | None = None) -> list[Hit]: ...

    def query_meta(
        self, user_id: str, text: str, k: int = 10, filters: Filters | None = None
    ) -> list[Hit]: ...

    def window(self, user_id: str, session_id: str, turn_from: int, turn_to: int) -> list[Hit]: ...

    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]: ...

    def browse(
        self, user_id: str, k: int, filters: Filters | None = None, newest_first: bool = True
    ) -> list[Hit]: ...

    def term_counts(self, user_id: str, text: str) -> dict[str, int]: ...

    def get(self, user_id: str, ids: Iterable[str]) -> list[Hit]: ...

    def session_tail(self, user_id: str, session_id: str) -> Hit | None: ...

    def request_marker(self, user_id: str, request_id: str) -> str | None: ...

    def delete_user(self, user_id: str) -> int: ...

    def count(self, user_id: str | None = None) -> int: ...

    def users(self) -> list[str]: ...

    def close(self) -> None: ...
