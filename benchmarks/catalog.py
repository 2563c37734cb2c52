"""Every dataset ``python -m benchmarks run`` knows, by name: :data:`DATASETS` and :func:`load_dataset`.

The table sits above the formats so that none of them imports it: :mod:`benchmarks.datasets` holds the types
and three formats, :mod:`benchmarks.beam` and :mod:`benchmarks.time_only` one format each (the time-only set
reads its conversations with the loaders it names in ``benchmarks.time_only.SOURCES``). A new format is a
module of its own plus one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchmarks.beam import load_beam
from benchmarks.datasets import Dataset, load_coding_life, load_locomo, load_longmemeval
from benchmarks.time_only import load_time_only
from refind.errors import InvalidInput

__all__ = ["DATASETS", "load_dataset"]

DATASETS: dict[str, Callable[[str | Path], Dataset]] = {
    "coding-life": load_coding_life,
    "locomo": load_locomo,
    "longmemeval": load_longmemeval,
    "beam": load_beam,
    "time-only": load_time_only,
}


def load_dataset(name: str, path: str | Path) -> Dataset:
    """Load dataset ``name`` (one of :data:`DATASETS`) from ``path``."""
    if name not in DATASETS:
        raise InvalidInput(f"dataset: {name!r} is not one of {', '.join(DATASETS)}")
    return DATASETS[name](path)
