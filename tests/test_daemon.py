"""The background search process (refind/cli/_daemon.py): real processes, a real Unix socket, a real index.

Every check compares the daemon's output with the in-process command (``--no-daemon``) byte for byte, and
the fixture stops every daemon a test started and checks that none is left."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refind.cli._app import EXIT_ERROR

pytestmark = pytest.mark.slow  # background search processes, started and stopped: make test, not make check

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "examples" / "data" / "chat_history.jsonl"
NOW = "2024-06-20"


def cli(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "refind.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def status(env: dict[str, str]) -> list[dict[str, Any]]:
    """The running daemons, through the module's own status request (in a child with ``env``)."""
    code = "import json; from refind.cli import _daemon; print(json.dumps(_daemon.daemons()))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by init) counts as gone
    state = (
        Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        if Path(f"/proc/{pid}").exists()
        else "Z"
    )
    return state != "Z"


def wait_gone(pid: int, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example history (user maya), imported through the CLI in a child process."""
    path = tmp_path_factory.mktemp("daemon") / "index"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    done = cli(
        {**env, "PYTHONPATH": str(ROOT), "REFIND_DAEMON": "0", "REFIND_EMBEDDER": "off"},
        "--data",
        str(path),
        "import",
        str(HISTORY),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture
def env(tmp_path: Path, index: Path) -> Iterator[dict[str, str]]:
    """A child environment with the daemon on (short idle timeout, a runtime directory of its own); every
    daemon it started is stopped afterwards, and none may be left."""
    runtime = Path(tempfile.mkdtemp(prefix="rfd"))  # short: a socket's path is at most 108 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    env.update(
        PYTHONPATH=str(ROOT),
        XDG_RUNTIME_DIR=str(runtime),
        REFIND_DATA=str(index),
        REFIND_DAEMON_IDLE="60",
        REFIND_EMBEDDER="off",  # by words, as in-process tests are (tests/conftest.py)
    )
    yield env
    running = status(env)
    cli(env, "daemon", "stop", "--all")
    left = [d["pid"] for d in running if not wait_gone(d["pid"])]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(runtime, ignore_errors=True)
    assert not left, f"daemons left running: {left}"


def same_as_in_process(
    env: dict[str, str], *args: str, json_out: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` through the daemon and with --no-daemon; assert the same stdout, stderr and exit code."""
    through = cli(env, *args)
    alone = cli(env, *args, "--no-daemon")
    if json_out and through.returncode == 0:  # the rounds' milliseconds differ from run to run
        a, b = json.loads(through.stdout), json.loads(alone.stdout)
        for body in (a, b):
            for step in body.get("trace", []):
                step["ms"] = 0
        assert a == b
    else:
        assert through.stdout == alone.stdout
    assert (through.returncode, through.stderr) == (alone.returncode, alone.stderr)
    return through


def test_search_show_and_sessions_print_the_same_through_the_daemon(env: dict[str, str], index: Path) -> None:
    first = same_as_in_process(env, "search", "Where did I go for Thai food?", "--user", "maya", "--now", NOW)
    assert "Sabai Sabai" in first.stdout
    [daemon] = status(env)
    assert daemon["index"] == str(index.resolve())
    cases = [
        ("search", "what is my half marathon target?", "--user", "maya", "--now", NOW, "--max-tokens", "300"),
        (
            "search",
            "running plans last month",
            "--user",
            "maya",
            "--now",
            NOW,
            "--top-k",
            "3",
            "--window",
            "1",
        ),
        ("search", "anything at all", "--user", "nobody-here", "--now", NOW),  # the warning on stderr
        ("search", "x" * 5000, "--user", "maya"),  # refused by the library: one line, exit 1
        ("search", "Thai", "--user", "maya", "--source", "chatgpt", "--now", NOW),  # filtered to nothing
        ("sessions", "--user", "maya", "--limit", "2"),  # and the "more follow" line
        ("sessions", "--user", "maya", "--json"),
        ("show", "2024-01-07", "--user", "maya", "--from", "1", "--limit", "3"),
        ("show", "2024-01-07", "--user", "maya", "--json"),
        ("show", "no-such-session", "--user", "maya"),
    ]
    for args in cases:
        same_as_in_process(env, *args, json_out=args[0] == "search" and "--json" in args)
    done = same_as_in_process(
        env, "search", "Thai food", "--user", "maya", "--now", NOW, "--json", json_out=True
    )
    assert json.loads(done.stdout)["evidence"]
    too_long = cli(env, "search", "x" * 5000, "--user", "maya")
    assert too_long.returncode == EXIT_ERROR and too_long.stderr.startswith("Error: ")
    assert [d["pid"] for d in status(env)] == [daemon["pid"]], "one daemon served every command"


def test_an_import_beside_the_daemon_works_and_is_seen_at_once(env: dict[str, str], tmp_path: Path) -> None:
    index = tmp_path / "own"
    env = {**env, "REFIND_DATA": str(index)}
    assert cli(env, "import", str(HISTORY), "--quiet").returncode == 0
    before = cli(env, "search", "zanzibar snorkelling", "--user", "maya", "--json")
    assert before.returncode == 0, before.stderr
    assert not json.loads(before.stdout)["evidence"]
    [daemon] = status(env)
    more = tmp_path / "more.jsonl"
    line = {
        "user_id": "maya",
        "session_id": "trip",
        "role": "user",
        "content": "Snorkelling in Zanzibar next week!",
    }
    more.write_text(json.dumps({**line, "timestamp": "2024-06-01T10:00:00Z"}) + "\n")
    imported = cli(env, "import", str(more), "--quiet")  # the daemon holds no write lock
    assert imported.returncode == 0, imported.stderr
    after = cli(env, "search", "zanzibar snorkelling", "--user", "maya", "--json")
    assert after.returncode == 0, after.stderr
    assert [e["session_id"] for e in json.loads(after.stdout)["evidence"]] == ["trip"]
    assert [d["pid"] for d in status(env)] == [daemon["pid"]], "the same daemon saw the import"
    listed = cli(env, "sessions", "--user", "maya", "--json")
    assert "trip" in {json.loads(r)["session_id"] for r in listed.stdout.splitlines()}


def test_a_replaced_index_is_opened_afresh(env: dict[str, str], tmp_path: Path) -> None:
    index = tmp_path / "swap"
    env = {**env, "REFIND_DATA": str(index)}
    assert cli(env, "import", str(HISTORY), "--quiet").returncode == 0
    assert json.loads(cli(env, "search", "Thai", "--user", "maya", "--json").stdout)["evidence"]
    shutil.rmtree(index)
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps({"user_id": "maya", "session_id": "s", "role": "user", "content": "hello"}) + "\n"
    )
    assert cli(env, "import", str(other), "--quiet").returncode == 0
    same_as_in_process(env, "search", "Thai", "--user", "maya", "--now", NOW, "--json", json_out=True)
    assert not json.loads(cli(env, "search", "Thai", "--user", "maya", "--json").stdout)["evidence"]


def test_the_daemon_exits_when_idle_and_on_stop(env: dict[str, str]) -> None:
    quick = {**env, "REFIND_DAEMON_IDLE": "1"}
    assert cli(quick, "search", "Thai", "--user", "maya").returncode == 0
    [daemon] = status(quick)
    assert wait_gone(daemon["pid"]), "the idle daemon is still running"
    assert not list(Path(env["XDG_RUNTIME_DIR"], "refind").glob("*.sock"))
    assert cli(env, "search", "Thai", "--user", "maya").returncode == 0
    [daemon] = status(env)
    stopped = cli(env, "daemon", "stop")
    assert (stopped.returncode, stopped.stdout) == (0, "Stopped 1 daemon.\n")
    assert wait_gone(daemon["pid"])
    assert cli(env, "daemon", "status").stdout == "No refind daemon is running.\n"


def test_off_switches_start_no_daemon(env: dict[str, str]) -> None:
    assert cli(env, "search", "Thai", "--user", "maya", "--no-daemon").returncode == 0
    assert cli({**env, "REFIND_DAEMON": "0"}, "search", "Thai", "--user", "maya").returncode == 0
    assert cli({**env, "REFIND_DAEMON": "0"}, "show", "2024-01-07", "--user", "maya").returncode == 0
    assert status(env) == []


def test_a_killed_daemon_is_replaced_and_a_private_dir_is_required(env: dict[str, str]) -> None:
    assert cli(env, "search", "Thai", "--user", "maya").returncode == 0
    [daemon] = status(env)
    os.kill(daemon["pid"], signal.SIGKILL)  # its socket file stays behind
    assert wait_gone(daemon["pid"])
    same_as_in_process(env, "search", "Thai food", "--user", "maya", "--now", NOW)
    [second] = status(env)
    assert second["pid"] != daemon["pid"]
    cli(env, "daemon", "stop", "--all")
    assert wait_gone(second["pid"])
    runtime = Path(env["XDG_RUNTIME_DIR"], "refind")
    runtime.chmod(0o755)  # others could reach a socket in it: no daemon, the command runs in-process
    try:
        same_as_in_process(env, "search", "Thai food", "--user", "maya", "--now", NOW)
        assert not list(runtime.glob("*.sock"))
    finally:
        runtime.chmod(0o700)


def _raw(sock: Path, data: bytes) -> dict[str, Any] | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(sock))
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            reply = b"".join(iter(lambda: s.recv(65536), b""))
        except (BrokenPipeError, ConnectionResetError):  # the daemon stopped reading: refused
            return {"fail": "connection cut"}
    return json.loads(reply) if reply else None


def test_the_socket_is_private_and_requests_are_bounded(
    env: dict[str, str], index: Path, tmp_path: Path
) -> None:
    assert cli(env, "search", "Thai", "--user", "maya").returncode == 0
    [daemon] = status(env)
    sock = Path(daemon["socket"])
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    other = {"v": 1, "index": str(tmp_path), "op": "sessions", "params": {}}
    assert "serves" in _raw(sock, json.dumps(other).encode())["fail"]
    assert "fail" in _raw(sock, b"not json")
    assert "fail" in _raw(sock, b"x" * (2 << 20))  # more than a request may hold
    unknown = {"v": 1, "index": str(index.resolve()), "op": "delete_user", "params": {"user": "maya"}}
    assert "unknown request" in _raw(sock, json.dumps(unknown).encode())["fail"]
    bad = {"v": 1, "index": str(index.resolve()), "op": "sessions", "params": {"rm": "-rf"}}
    assert "fail" in _raw(sock, json.dumps(bad).encode())
    assert [d["pid"] for d in status(env)] == [daemon["pid"]], "the daemon survives bad requests"
    same_as_in_process(env, "sessions", "--user", "maya")


def test_the_client_side_loads_no_java(env: dict[str, str]) -> None:
    assert cli(env, "search", "Thai", "--user", "maya").returncode == 0  # the daemon is warm
    code = (
        "import sys\n"
        "from refind.cli import main\n"
        "try:\n"
        "    main(['search', 'Thai food', '--user', 'maya', '--now', '2024-06-20'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'jpype', 'pyserini', 'tiktoken', 'openai'}"
        " or m.startswith('refind.store.lucene'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Sabai Sabai" in done.stdout
    assert "HEAVY []" in done.stderr


def test_commands_load_lazily_and_every_one_is_mapped() -> None:
    """``main.lazy`` names the module of every command (so none is missing from --help), and the CLI's
    default user is the importers' (the client does not import the readers to learn it)."""
    import importlib

    import refind.loaders
    from refind.cli import main
    from refind.cli._app import DEFAULT_USER

    for module in set(main.lazy.values()):
        importlib.import_module(module)
    assert set(main.commands) == set(main.lazy)
    assert DEFAULT_USER == refind.loaders.DEFAULT_USER


def test_another_user_cannot_reach_the_daemon(env: dict[str, str]) -> None:
    """The runtime directory (0700) and the socket (0600) each keep another user out."""
    if os.getuid() != 0:
        pytest.skip("acting as another user needs root")
    assert cli(env, "search", "Thai", "--user", "maya").returncode == 0
    [daemon] = status(env)
    probe = (
        "import os, socket, sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "try:\n"
        "    s.connect(sys.argv[1])\n"
        "except PermissionError:\n"
        "    print('refused')\n"
        "else:\n"
        "    print('connected')\n"
    )
    runtime = Path(daemon["socket"]).parent

    def attempt() -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe, daemon["socket"]], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert attempt() == "refused"  # the directory
    runtime.chmod(0o711)
    try:
        assert attempt() == "refused"  # the socket itself
    finally:
        runtime.chmod(0o700)
    assert [d["pid"] for d in status(env)] == [daemon["pid"]]


def test_silent_connections_do_not_hold_the_others(env: dict[str, str], index: Path) -> None:
    """Issue 39: the daemon served one connection at a time, so a connection that sent nothing held every
    other for its 5 s (a 0.28 s search took 20.3 s behind 4). Each connection is read on its own now, with
    its own deadline: requests behind 4 silent connections are answered at once, and each silent one is
    closed after the deadline."""
    from refind.cli._daemon import REQUEST_SECONDS

    assert cli(env, "search", "Thai", "--user", "maya").returncode == 0  # the daemon is warm
    [daemon] = status(env)
    sock = Path(daemon["socket"])
    request = {
        "v": 1,
        "index": str(index.resolve()),
        "op": "sessions",
        "params": {"user": "maya", "source": None, "project": None, "limit": 5, "offset": 0},
    }
    silent = []
    try:
        for _ in range(4):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(sock))
            silent.append(s)
        time.sleep(0.2)  # the daemon has accepted them
        started = time.monotonic()
        replies = [_raw(sock, json.dumps(request).encode()) for _ in range(3)]
        took = time.monotonic() - started
        assert all(r is not None and "ok" in r for r in replies), replies
        assert took < REQUEST_SECONDS / 2, f"3 requests took {took:.1f} s behind 4 silent connections"
        for s in silent:  # each silent one is answered and closed once its time is up
            s.settimeout(REQUEST_SECONDS * 3)
            reply = b"".join(iter(lambda s=s: s.recv(65536), b""))
            assert "fail" in json.loads(reply), reply
    finally:
        for s in silent:
            s.close()
    assert [d["pid"] for d in status(env)] == [daemon["pid"]]
