"""The one rule for tests that need a real part (OpenSearch, a local model, Chromium): skip and say why when
it is missing here, fail when the part's ``REFIND_REQUIRE_*`` variable is ``1`` (``.ci/run`` sets them)."""

from __future__ import annotations

import os

import pytest


def skip_or_fail(reason: str | None, require_env: str) -> None:
    """Nothing when ``reason`` is None; else fail when ``$require_env`` is ``1``, skip with the reason otherwise."""
    if reason is None:
        return
    if os.environ.get(require_env) == "1":
        pytest.fail(f"{reason}; {require_env}=1 requires it", pytrace=False)
    pytest.skip(reason)
