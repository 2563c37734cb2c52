"""The real local model for the tests marked ``local_llm``: ``scripts/local-llm`` (llama.cpp's llama-server
with Qwen2.5-Coder-1.5B-Instruct, built and installed once into a cache outside the repository;
``make test`` runs ``scripts/local-llm install`` first).

The fixture starts the server when none is running and stops what it started. When the build tools
(``cmake``, a C++ compiler) are missing and llama-server is not built yet, the tests are skipped with that
reason; with ``REFIND_REQUIRE_LOCAL_LLM=1`` (CI) they fail instead. Any other problem (a build, an install
or a start that fails) is an error, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.needs import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "local_llm.py"
BUILD_TIMEOUT = 3600  # seconds: a cold build of llama-server on a busy 2-core machine
PORT = int(os.environ.get("REFIND_TEST_LLM_PORT") or 8093)
REQUIRE_ENV = "REFIND_REQUIRE_LOCAL_LLM"


class LocalLLMError(RuntimeError):
    """``scripts/local-llm`` failed; the message carries its stderr."""


def _script(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def unavailable_reason() -> str | None:
    """Why llama-server cannot be built here (no cmake or C++ compiler, none built yet), or None."""
    proc = _script("status", timeout=30)
    if proc.returncode == 0 and "llama-server" in proc.stdout and ": built" in proc.stdout:
        return None
    missing = [tool for tool in ("cmake", "c++") if shutil.which(tool) is None]
    if not missing:
        return None
    return (
        f"local model unavailable: {', '.join(missing)} not found to build llama-server; install cmake and "
        f"g++ (set {REQUIRE_ENV}=1 to make this a failure)"
    )


def require_tools() -> None:
    """Skip the calling test when llama-server cannot be built here, or fail with ``REFIND_REQUIRE_LOCAL_LLM=1``."""
    skip_or_fail(unavailable_reason(), REQUIRE_ENV)


def running_url() -> str | None:
    proc = _script("url", timeout=30)
    return proc.stdout.strip() if proc.returncode == 0 else None


def start() -> tuple[str, bool]:
    """(base URL, whether this call started the server)."""
    url = running_url()
    if url:
        return url, False
    threads = os.environ.get("REFIND_TEST_LLM_THREADS") or "1"
    proc = _script("start", "--port", str(PORT), "--threads", threads, timeout=BUILD_TIMEOUT)
    if proc.returncode != 0:
        raise LocalLLMError(f"scripts/local-llm start failed: {proc.stderr.strip()[-2000:]}")
    return proc.stdout.strip().splitlines()[-1], True


def stop() -> None:
    _script("stop", timeout=60)
