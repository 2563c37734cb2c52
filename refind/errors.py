"""Errors raised by refind.

Every error refind raises derives from :class:`RefindError`, and every message says what to do next.
Foreign exceptions (Java through JPype, pydantic, openai, HTTP) are translated at the boundary with
``raise ... from exc``; no Java stack trace reaches a user.

    RefindError
    ├── InvalidInput            bad arguments or records: fix the input (also a ValueError)
    │   └── RequestConflict     the same request_id was used before with a different body
    ├── SetupError              Java 21 or the Anserini jar cannot be found or started
    │   ├── LLMUnavailable      no usable LLM endpoint is configured (key / base URL / openai missing)
    │   └── EmbedderUnavailable no usable embedding model (the model's package missing, an endpoint failing)
    └── StoreError              the index on disk cannot be used as asked
        ├── IndexLocked         another process holds the index's write lock
        ├── IndexFormatError    the directory is not a refind index, or one of another format
        ├── ReadOnlyError       a write was attempted on an index opened read-only
        └── StoreClosed         the store was used after close()
"""

from __future__ import annotations

__all__ = [
    "EmbedderUnavailable",
    "IndexFormatError",
    "IndexLocked",
    "InvalidInput",
    "LLMUnavailable",
    "ReadOnlyError",
    "RefindError",
    "RequestConflict",
    "SetupError",
    "StoreClosed",
    "StoreError",
]


class RefindError(Exception):
    """Root of every error refind raises on purpose."""


class InvalidInput(RefindError, ValueError):
    """The caller passed something refind cannot accept; the message names the field, and ``field`` holds
    its name (or path, such as ``messages[0].timestamp``) when one field is at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[object, ...]:  # keeps ``field`` across processes (pickling)
        return (_invalid, (type(self), str(self), self.field))


def _invalid(cls: type[InvalidInput], message: str, field: str | None) -> InvalidInput:
    return cls(message, field=field)


class RequestConflict(InvalidInput):
    """A request_id was reused with a different body; nothing was written."""


class SetupError(RefindError):
    """The runtime refind needs (Java 21, the Anserini jar) is missing or cannot start."""


class LLMUnavailable(SetupError):
    """No usable LLM endpoint (no key or base URL configured, or the openai package missing)."""


class EmbedderUnavailable(SetupError):
    """No usable embedding model: the default model's package is not installed, or an embeddings endpoint
    refused or failed; search still runs by words, and the message says how to get meaning back."""


class StoreError(RefindError):
    """The index cannot be used as asked."""


class IndexLocked(StoreError):
    """Another process (or another open Memory) holds the index's write lock."""


class IndexFormatError(StoreError):
    """The directory holds something other than a compatible refind index."""


class ReadOnlyError(StoreError):
    """A write was attempted through a read-only store."""


class StoreClosed(StoreError):
    """The store was used after it was closed."""
