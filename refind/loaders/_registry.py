"""The table of import formats: every dispatch on a format (detection, ``--format`` and its help, reading,
incremental import) goes through :data:`LOADERS`.

A new format is one module with a :class:`~refind.loaders.Loader` (see ``refind/loaders/jsonl.py`` for a
line format, ``refind/loaders/longmemeval.py`` for a document) and one line in the table below; docs/import.md,
"Adding a format", walks through one. ``tests/test_loaders.py`` checks every registered loader against the
protocol.
"""

from __future__ import annotations

from collections.abc import Iterator

import refind.loaders.chatgpt as chatgpt
import refind.loaders.claude as claude
import refind.loaders.claude_code as claude_code
import refind.loaders.jsonl as jsonl
import refind.loaders.locomo as locomo
import refind.loaders.longmemeval as longmemeval
from refind.errors import InvalidInput
from refind.loaders._base import Loader

__all__ = ["LOADERS", "Loaders"]


class Loaders:
    """The registered formats. Iterating gives them in detection order (the first whose
    :meth:`~refind.loaders.Loader.sniff` claims a file wins); :meth:`names` gives them by name, the order of
    ``--format``'s choices, the help and the errors."""

    def __init__(self, loaders: tuple[Loader, ...] = ()) -> None:
        self._loaders: dict[str, Loader] = {}
        for loader in loaders:
            self.register(loader)

    def register(self, loader: Loader, *, before: str | None = None) -> Loader:
        """Add ``loader``, asked last in detection or just before the format named ``before`` (a format of the
        same name is replaced: in its place when ``before`` is not given). Returns it."""
        if not isinstance(loader, Loader) or not loader.name or not loader.about:
            raise InvalidInput(
                f"loader: expected a refind.loaders.Loader with a name and about, got {loader!r}"
            )
        if before is not None and before not in self._loaders:
            raise InvalidInput(f"before: no format named {before!r}; known: {', '.join(self.names())}")
        if loader.name in self._loaders and before in (None, loader.name):
            self._loaders[loader.name] = loader
            return loader
        rest = [known for known in self._loaders.values() if known.name != loader.name]
        at = len(rest) if before is None else [known.name for known in rest].index(before)
        self._loaders = {known.name: known for known in (*rest[:at], loader, *rest[at:])}
        return loader

    def get(self, name: str) -> Loader:
        """The format called ``name``; another name is an :class:`~refind.InvalidInput` naming the known."""
        loader = self._loaders.get(name)
        if loader is None:
            raise InvalidInput(f"format: {name!r} is not one of {', '.join(self.names())}")
        return loader

    def names(self) -> list[str]:
        """The formats' names, sorted."""
        return sorted(self._loaders)

    def __iter__(self) -> Iterator[Loader]:
        return iter(list(self._loaders.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._loaders

    def __len__(self) -> int:
        return len(self._loaders)


LOADERS = Loaders(
    (
        chatgpt.LOADER,
        claude.LOADER,
        claude_code.LOADER,
        jsonl.LOADER,
        longmemeval.LOADER,
        locomo.LOADER,  # its sign ('"conversation"' in a list) is the weakest: asked last
    )
)
"""Every format refind imports, in detection order."""
