"""Deprecated: the old name of :mod:`refind.loaders`; it goes in the next release.

``from refind.loaders import X`` still gives :mod:`refind.loaders`' ``X``, with a ``DeprecationWarning`` that names
the new import. Nothing is defined here: every name is looked up in :mod:`refind.loaders` when asked for.
"""

from __future__ import annotations

import warnings
from typing import Any

from refind import loaders as _loaders


def __getattr__(name: str) -> Any:
    value = getattr(_loaders, name)  # an AttributeError for a name refind.loaders lacks, as for any module
    if not name.startswith("__"):
        warnings.warn(
            f"refind.io is deprecated: import {name} from refind.loaders", DeprecationWarning, stacklevel=2
        )
    return value


def __dir__() -> list[str]:
    return sorted(_loaders.__all__)
