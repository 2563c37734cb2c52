"""The real local model for the tests marked ``local_llm``: ``scripts/local-llm`` (llama.cpp's llama-server
with Qwen2.5-Coder-1.5B-Instruct, built and installed once into a cache outside the repository).

The fixture starts the server when none is running (the first start builds llama-server, several minutes)
and stops what it started. Any failure to build, install or start is a test error, never a skip: the
real-model suite is part of ``make test`` and of CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "local_llm.py"
BUILD_TIMEOUT = 3600  # seconds: a cold build of llama-server on a busy 2-core machine
PORT = int(os.environ.get("REFIND_TEST_LLM_PORT") or 8093)


class LocalLLMError(RuntimeError):
    """``scripts/local-llm`` failed; the message carries its stderr."""


def _script(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


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
