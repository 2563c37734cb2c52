"""The public facade: __all__ is sorted and equals what refind exports (httpx's test_exported_members)."""

from __future__ import annotations

import types

import refind


def test_all_is_sorted_and_complete() -> None:
    public = {
        name
        for name in dir(refind)
        if not name.startswith("_") and not isinstance(getattr(refind, name), types.ModuleType)
    } - {"annotations"}
    assert sorted(refind.__all__) == list(refind.__all__)
    assert public == set(refind.__all__) - {"__version__"}


def test_every_error_derives_from_refind_error() -> None:
    for name in refind.__all__:
        obj = getattr(refind, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, refind.RefindError)
