"""scripts/local-llm without building anything: status, url and stop on an empty cache, and the one-line
error when the build tools are missing (tests/test_local_llm.py runs the real server)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "local-llm"
sys.path.insert(0, str(ROOT / "scripts"))
import local_llm  # noqa: E402  (scripts/ is no package)


def run(tmp_path: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFIND_LLM_CACHE": str(tmp_path / "cache"), "PYTHON": sys.executable}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_status_url_stop_on_an_empty_cache(tmp_path: Path) -> None:
    status = run(tmp_path, "status")
    assert status.returncode == 0
    assert status.stdout.splitlines() == [
        "llama-server 11434.0.0: not built",
        "model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf: not installed",
        "server: not running",
    ]
    url = run(tmp_path, "url")
    assert url.returncode == 1 and url.stdout == "" and url.stderr == "local-llm: not running\n"
    stop = run(tmp_path, "stop")
    assert stop.returncode == 0 and stop.stderr == "local-llm: not running\n"


def test_missing_build_tools_is_one_line_and_exit_1(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    for tool in ("bash", "dirname"):  # what the wrapper itself needs; no cmake, no compiler
        (empty / tool).symlink_to(f"/usr/bin/{tool}" if Path(f"/usr/bin/{tool}").exists() else f"/bin/{tool}")
    proc = run(tmp_path, "install", path=str(empty))
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert "cmake not found" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "cache" / "models").exists()


def test_the_chat_template_is_in_the_repository() -> None:
    template = (ROOT / "scripts" / "local-llm-qwen2.5.jinja").read_text()
    assert "<tool_call>" not in template and "only one json object" in template


def test_the_real_model_tests_skip_without_build_tools_unless_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests import local_llm_helpers

    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("REFIND_LLM_CACHE", str(tmp_path / "cache"))  # nothing built there
    monkeypatch.setenv("PATH", str(empty))
    reason = local_llm_helpers.unavailable_reason()
    assert reason is not None and "cmake, c++ not found" in reason and "REFIND_REQUIRE_LOCAL_LLM=1" in reason
    monkeypatch.delenv("REFIND_REQUIRE_LOCAL_LLM", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cmake"):
        local_llm_helpers.require_tools()
    monkeypatch.setenv("REFIND_REQUIRE_LOCAL_LLM", "1")
    with pytest.raises(pytest.fail.Exception, match="requires it"):
        local_llm_helpers.require_tools()


def _fake_install(tmp_path: Path, body: str) -> None:
    """A cache whose llama-server is the shell script ``body`` (the model file is never read by it)."""
    binary = tmp_path / "cache" / f"llama-server-11434.0.0-{local_llm.cpu_key()}" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/bash\n" + body)
    binary.chmod(0o755)
    model = tmp_path / "cache" / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"")


def test_a_server_that_dies_of_a_signal_while_starting_is_started_again(tmp_path: Path) -> None:
    _fake_install(tmp_path, 'echo "init: thread pool up ($*)"\nkill -SEGV $$\n')
    proc = run(tmp_path, "start", "--port", "8099", "--wait", "30")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert sum("died of signal 11 while starting; starting it again" in line for line in lines) == 2
    assert "llama-server exited with -11 (3 starts): init: thread pool up" in lines[-1]
    assert "--port 8099" in lines[-1] and "Traceback" not in proc.stderr
    run_dir = tmp_path / "cache" / "run"
    assert sorted(p.name for p in run_dir.glob("server-exit-*.log")) == [
        "server-exit-1.log",
        "server-exit-2.log",
        "server-exit-3.log",
    ]
    assert not (run_dir / "server.json").exists()
    assert run(tmp_path, "status").stdout.splitlines()[-1] == "server: not running"


def test_a_server_that_exits_with_its_own_error_is_not_started_again(tmp_path: Path) -> None:
    _fake_install(tmp_path, 'echo "error: unknown argument" >&2\nexit 1\n')
    proc = run(tmp_path, "start", "--port", "8099", "--wait", "30")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"local-llm: llama-server exited with 1: error: unknown argument "
        f"(log: {tmp_path / 'cache' / 'run' / 'server-exit-1.log'})"
    ]


def test_a_binary_built_for_another_processor_is_not_used(tmp_path: Path) -> None:
    other = tmp_path / "cache" / "llama-server-11434.0.0-00000000" / "llama-server"
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/bash\nexit 0\n")
    assert local_llm.cpu_key() != "00000000" and len(local_llm.cpu_key()) == 8
    assert run(tmp_path, "status").stdout.splitlines()[0] == "llama-server 11434.0.0: not built"
