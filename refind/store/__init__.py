"""Storage engines behind one protocol (:mod:`refind.store.base`), and where a Memory's engine comes from.

``open_engine(location)`` picks the engine from the location a user gives ``refind.Memory``:

- ``None``: ``$REFIND_STORE`` when set, else the index directory ``$REFIND_DATA``, else the per-user data
  directory (``$XDG_DATA_HOME/refind`` or ``~/.local/share/refind``): the embedded Lucene engine;
- a directory path: the embedded Lucene engine there;
- ``":memory:"`` or ``memory://``: the Lucene engine in RAM;
- ``reference://``: the pure-Python reference engine, in RAM (no Java; tests and notebooks);
- ``opensearch://host:port/prefix`` (``opensearchs://`` for TLS): an OpenSearch cluster.
"""

from __future__ import annotations

import os
from pathlib import Path

from refind.config import Settings, default_data_dir, env_var
from refind.errors import InvalidInput
from refind.store.base import Engine

__all__ = ["Engine", "open_engine"]


def open_engine(
    location: str | os.PathLike[str] | None, *, settings: Settings, read_only: bool = False
) -> Engine:
    """The engine for ``location`` (see the module docstring)."""
    if location is None:
        location = env_var("REFIND_STORE") or default_data_dir()
    text = str(location)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if text == ":memory:" or scheme == "memory":
        from refind.store.lucene import LuceneStore

        if read_only:
            raise InvalidInput("an in-memory store cannot be read-only")
        return LuceneStore(None, settings=settings)
    if scheme == "reference":
        from refind.store.reference import ReferenceStore

        if read_only:
            raise InvalidInput("an in-memory store cannot be read-only")
        return ReferenceStore(settings=settings)
    if scheme in {"opensearch", "opensearchs"}:
        from refind.store.opensearch import OpenSearchStore  # type: ignore[import-not-found]

        return OpenSearchStore(text, settings=settings, read_only=read_only)  # type: ignore[no-any-return]
    if scheme:
        raise InvalidInput(
            f"store: unknown scheme {scheme!r} in {text!r}; use a directory, :memory:, reference:// or "
            "opensearch://host:port/prefix"
        )
    from refind.store.lucene import LuceneStore

    return LuceneStore(Path(text), settings=settings, read_only=read_only)
