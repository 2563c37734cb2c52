"""A real headless Chromium for the browsing page's tests, driven by Playwright over the system browser.

The browser is Debian's ``chromium`` package (``.ci/run`` installs it on a fresh machine; elsewhere
``apt-get install chromium``), never one Playwright downloads: ``executable_path`` points at it. When the
browser or Playwright is missing the tests skip and say why; with ``REFIND_REQUIRE_CHROMIUM=1`` (``.ci/run``)
they fail instead. A browser that is there but cannot start is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.needs import skip_or_fail

REQUIRE_ENV = "REFIND_REQUIRE_CHROMIUM"
BROWSER_ENV = "REFIND_CHROMIUM"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def executable() -> str | None:
    """The system Chromium: ``$REFIND_CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH."""
    chosen = os.environ.get(BROWSER_ENV)
    if chosen:
        return chosen
    return shutil.which("chromium") or shutil.which("chromium-browser")


def unavailable_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    if executable() is None:
        return "no chromium on PATH (apt-get install chromium, or set REFIND_CHROMIUM)"
    return None


def require_browser() -> None:
    """Skip the calling test when Chromium or Playwright is missing, or fail when REFIND_REQUIRE_CHROMIUM=1."""
    skip_or_fail(unavailable_reason(), REQUIRE_ENV)


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium with a fresh profile (Playwright's Browser), closed on exit."""
    from playwright.sync_api import sync_playwright

    require_browser()
    profile = tempfile.mkdtemp(prefix="refind-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=executable(),
                headless=True,
                args=FLAGS,
                viewport={"width": 1100, "height": 900},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
