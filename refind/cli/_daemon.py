"""A lingering search process per index, so that ``refind search`` / ``show`` / ``sessions`` skip the JVM start.

A reading command first asks the index's daemon over a Unix socket; when none answers it starts one detached
(``python -m refind.cli daemon run``), waits for it and asks again. The daemon holds the index open read-only
(never the write lock), reads each connection in a thread of its own with a deadline (a client that sends
nothing holds no other), runs one request at a time, refreshes its reader before each (a finished import is
always seen), and exits after ``$REFIND_DAEMON_IDLE`` seconds without a request (default 300), on
``refind daemon stop``, or when its index or socket goes away. Whenever the daemon cannot be reached, cannot
start or fails in a way that is not a refind error, the command runs in-process as before: correct output wins
over speed. ``REFIND_DAEMON=0`` (or ``--no-daemon``) turns it off.

The daemon computes; the client renders. A command's *payload* (its result as JSON-ready data) is built by the
same function in both paths, and the client draws it with the same code, so the output is the same text, the
same ``--json`` and the same exit codes. Errors refind raises on purpose come back as their one-line message.

Security: the socket lives in a directory only this user can enter (``$XDG_RUNTIME_DIR/refind``, else
``/tmp/refind-UID``, mode 0700, checked), the socket itself is 0600, the daemon checks the peer's user id where
the OS says it (``SO_PEERCRED``), answers only for its own index, and bounds a request (size, time to send it).
The socket's name is a hash of the index's real path, refind's version and location, the interpreter and the
``REFIND_*`` settings, so a daemon never answers with other settings than the command would have used. The
work one request can cause is bounded by the library's own limits on its arguments (question length,
``top_k``, ``limit``...), as for the HTTP service.

This module imports only the standard library at the top: the client side must stay cheap.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["IDLE_ENV", "OFF_ENV", "OPS", "ask", "daemons", "enabled", "index_dir", "op", "serve", "stop"]

OFF_ENV = "REFIND_DAEMON"  # "0" (or "off", "false", "no") turns the daemon off
IDLE_ENV = "REFIND_DAEMON_IDLE"  # seconds without a request before the daemon exits
DEFAULT_IDLE = 300.0
PROTOCOL = 1
MAX_REQUEST = 1 << 20  # bytes of one request
MAX_REPLY = 1 << 30
REQUEST_SECONDS = 5.0  # to send a whole request once connected
MAX_CONNECTIONS = 32  # read at once; more are refused (their command runs in-process)
START_SECONDS = 60.0  # a daemon's JVM start and index open, on a loaded machine
REPLY_SECONDS = 120.0
_TICK = 5.0
# settings that name the index (part of the socket's path already) or only steer the front
_NOT_SETTINGS = {"REFIND_DATA", "REFIND_STORE", "REFIND_DEBUG", OFF_ENV, IDLE_ENV}

log = logging.getLogger(__name__)

Payload = dict[str, Any]
OPS: dict[str, Callable[..., Payload]] = {}


class _Refused(Exception):
    """The daemon will not or cannot answer this request: the command runs in-process."""


def op(name: str) -> Callable[[Callable[..., Payload]], Callable[..., Payload]]:
    """Register ``fn(mem, **params) -> payload`` as the daemon's answer to ``name`` (the command modules do)."""

    def register(fn: Callable[..., Payload]) -> Callable[..., Payload]:
        OPS[name] = fn
        return fn

    return register


# ---------------------------------------------------------------------------------------------- where


def enabled() -> bool:
    """Whether reading commands may use a daemon: on by default where Unix sockets exist; off with
    ``REFIND_DAEMON=0`` and while ``REFIND_DEBUG`` is set (a traceback must come from this process)."""
    if os.environ.get(OFF_ENV, "").strip().lower() in {"0", "off", "false", "no"}:
        return False
    if os.environ.get("REFIND_DEBUG", "") not in {"", "0"}:
        return False
    return os.name == "posix" and hasattr(socket, "AF_UNIX")


def index_dir(location: str | os.PathLike[str] | None) -> Path | None:
    """The real path of the local Lucene index a command would open at ``location`` (None: refind's default),
    or None when it is not one (a remote engine, in memory, or no index there yet: the command's own error)."""
    if location is None:
        import refind

        location = os.environ.get("REFIND_STORE") or refind.default_data_dir()
    text = str(location)
    if "://" in text or text == ":memory:":
        return None
    path = Path(text).expanduser()
    try:
        path = path.resolve(strict=True)
    except OSError:
        return None
    return path if (path / "refind.json").is_file() else None


def _runtime_dir() -> Path | None:
    """This user's private directory for sockets, made 0700; None when it is not private."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = Path(base) / "refind" if base else Path("/tmp") / f"refind-{os.getuid()}"
    try:
        root.mkdir(mode=0o700, parents=bool(base), exist_ok=True)
        st = root.lstat()
    except OSError:
        return None
    if not root.is_dir() or root.is_symlink() or st.st_uid != os.getuid() or st.st_mode & 0o077:
        log.debug("refind daemon: %s is not private to this user; running in-process", root)
        return None
    return root


def _key(index: Path) -> str:
    import refind

    settings = sorted(
        (k, v) for k, v in os.environ.items() if k.startswith("REFIND_") and k not in _NOT_SETTINGS
    )
    where = [str(index), refind.__version__, str(refind.__file__), sys.executable, os.environ.get("TZ", "")]
    ident: list[object] = [*where, settings, PROTOCOL]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:20]


def _paths(index: Path) -> tuple[Path, Path, Path] | None:
    """The socket, lock and log file of ``index``'s daemon; None when there is no private place for them."""
    root = _runtime_dir()
    if root is None:
        return None
    key = _key(index)
    sock = root / f"{key}.sock"
    if len(os.fsencode(sock)) > 100:  # sun_path holds 108 bytes
        return None
    return sock, root / f"{key}.lock", root / f"{key}.log"


# ---------------------------------------------------------------------------------------------- the client


def _exchange(sock_path: Path, request: Payload, timeout: float) -> Payload:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock_path))
        s.sendall(json.dumps(request).encode())
        s.shutdown(socket.SHUT_WR)
        chunks, size = [], 0
        while chunk := s.recv(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_REPLY:
                raise _Refused("reply too large")
    if not chunks:
        raise _Refused("the daemon closed the connection")
    reply = json.loads(b"".join(chunks))
    if not isinstance(reply, dict):
        raise _Refused("malformed reply")
    return reply


def _lock_is_held(lock: Path) -> bool:
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def _start(index: Path, sock: Path, lock: Path, logfile: Path) -> bool:
    """Start ``index``'s daemon detached and wait until its socket accepts; False when it does not come up."""
    env = {k: v for k, v in os.environ.items() if k not in {"REFIND_STORE", "REFIND_DATA"}}
    cmd = [sys.executable, "-m", "refind.cli", "daemon", "run", str(index), "--socket", str(sock)]
    try:
        fd = os.open(logfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            child = subprocess.Popen(
                cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fd,
                start_new_session=True, close_fds=True,
            )  # fmt: skip
        finally:
            os.close(fd)
    except OSError as exc:
        log.debug("refind daemon: cannot start (%s)", exc)
        return False
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(sock))
                return True  # bound: it answers once the index is open (the request waits in the backlog)
            except OSError:
                pass
        if child.poll() is not None and not _lock_is_held(lock):
            return False  # ours exited and no other daemon is starting
        time.sleep(0.02)
    return False


def ask(location: str | os.PathLike[str] | None, name: str, params: Payload) -> Payload | None:
    """The daemon's payload for command ``name`` on the index at ``location``, starting the daemon if needed;
    None when the command must run in-process (daemon off, not a local index, or no daemon could answer).
    A refind error the daemon met is raised here as :class:`refind.RefindError` with its message."""
    if not enabled():
        return None
    index = index_dir(location)
    paths = _paths(index) if index is not None else None
    if index is None or paths is None:
        return None
    sock, lock, logfile = paths
    request = {"v": PROTOCOL, "index": str(index), "op": name, "params": params}
    reply: Payload | None = None
    for attempt in range(2):
        try:
            reply = _exchange(sock, request, REPLY_SECONDS)
            break
        except (ConnectionRefusedError, FileNotFoundError):
            if attempt or not _start(index, sock, lock, logfile):
                return None
        except (OSError, ValueError, _Refused) as exc:
            log.debug("refind daemon: no answer (%s); running in-process", exc)
            return None
    if reply is None:
        return None
    for logger, level, message in reply.get("logs", []):
        logging.getLogger(str(logger)).log(int(level), "%s", message)
    if "error" in reply:
        import refind

        raise refind.RefindError(str(reply["error"]))
    payload = reply.get("ok")
    return payload if isinstance(payload, dict) else None


def _answer(sock_path: Path, request: Payload, timeout: float = 10.0) -> Payload | None:
    try:
        return _exchange(sock_path, {"v": PROTOCOL, **request}, timeout)
    except (OSError, ValueError, _Refused):
        return None


def daemons() -> list[Payload]:
    """This user's running daemons: index, pid, idle timeout (seconds), socket."""
    root = _runtime_dir()
    found = []
    for sock in sorted(root.glob("*.sock")) if root is not None else []:
        reply = _answer(sock, {"op": "status"}, timeout=2.0)
        if reply is not None and isinstance(reply.get("ok"), dict):
            found.append({**reply["ok"], "socket": str(sock)})
    return found


def stop(location: str | os.PathLike[str] | None = None, *, every: bool = False) -> list[Payload]:
    """Stop the daemon of the index at ``location`` (``every``: each of this user's); what was stopped."""
    if every:
        targets = daemons()
    else:
        index = index_dir(location)
        paths = _paths(index) if index is not None else None
        reply = _answer(paths[0], {"op": "status"}, timeout=2.0) if paths is not None else None
        targets = [{**reply["ok"], "socket": str(paths[0])}] if reply and paths and "ok" in reply else []
    stopped = []
    for d in targets:
        if _answer(Path(d["socket"]), {"op": "stop"}, timeout=5.0) is not None:
            stopped.append(d)
    return stopped


# ---------------------------------------------------------------------------------------------- the daemon


class _Capture(logging.Handler):
    """The library's log records during one request, to be shown by the client as if raised there."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


@contextlib.contextmanager
def _captured() -> Iterator[_Capture]:
    logger = logging.getLogger("refind")
    handler, level = _Capture(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _identity(index: Path) -> tuple[int, int, int]:
    """What changes when the index directory is replaced or reformatted (not on a commit: the reader's
    refresh sees those)."""
    d, f = index.stat(), (index / "refind.json").stat()
    return d.st_ino, f.st_ino, f.st_mtime_ns


def _read_request(conn: socket.socket) -> Payload:
    """One request, whole within :data:`REQUEST_SECONDS` of the connection (each wait for data is cut to
    what is left of that time: a client that sends nothing, or a byte now and then, is refused in time)."""
    deadline = time.monotonic() + REQUEST_SECONDS
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Refused("request too slow")
        conn.settimeout(left)
        try:
            chunk = conn.recv(1 << 16)
        except TimeoutError:
            raise _Refused(f"the request did not arrive within {REQUEST_SECONDS:g} s") from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise _Refused(f"request larger than {MAX_REQUEST} bytes")
    request = json.loads(b"".join(chunks) or b"null")
    if not isinstance(request, dict) or request.get("v") != PROTOCOL:
        raise _Refused("not a request of this protocol")
    return request


def _same_user(conn: socket.socket) -> bool:
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return True  # the socket's 0600 and its 0700 directory are the check here
    import struct

    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
    return bool(uid == os.getuid())


class _Server:
    """The daemon's state across its connections: each connection is read in a thread of its own (so a
    client that sends nothing holds only its own), and the requests then run one at a time."""

    def __init__(self, index: Path, idle: float, wake: int) -> None:
        import refind

        self.index = index
        self.idle = idle
        self.mem: refind.Memory | None = refind.Memory(index, read_only=True)
        self.identity = _identity(index)
        self.compute = threading.Lock()  # one request runs at a time (and only one reopens the index)
        self.state = threading.Lock()
        self.active = 0
        self.last = time.monotonic()
        self.code: int | None = None  # set: the daemon exits with it
        self._wake = wake

    def idle_for(self) -> float:
        with self.state:
            return 0.0 if self.active else time.monotonic() - self.last

    def finish(self, code: int) -> None:
        with self.state:
            if self.code is None:
                self.code = code
        with contextlib.suppress(OSError):
            os.write(self._wake, b"x")

    def admit(self) -> bool:
        with self.state:
            if self.active >= MAX_CONNECTIONS:
                return False
            self.active += 1
            self.last = time.monotonic()
            return True

    def handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._handle(conn)
        finally:
            with self.state:
                self.active -= 1
                self.last = time.monotonic()

    def _handle(self, conn: socket.socket) -> None:
        try:
            if not _same_user(conn):
                return
            request = _read_request(conn)
        except (OSError, ValueError, _Refused) as exc:
            _send(conn, {"fail": str(exc)})
            return
        name = request.get("op")
        if name == "stop":
            _send(conn, {"ok": {}})
            self.finish(0)
            return
        if name == "status":
            _send(conn, {"ok": {"index": str(self.index), "pid": os.getpid(), "idle": round(self.idle, 1)}})
            return
        with self.compute:
            reply = self._run(request)
        _send(conn, reply)

    def _run(self, request: Payload) -> Payload:
        import refind

        name = request.get("op")
        try:
            if request.get("index") != str(self.index):
                raise _Refused(f"this daemon serves {self.index} only")
            if self.mem is None or _identity(self.index) != self.identity:  # replaced: open it afresh
                if self.mem is not None:
                    self.mem.close()
                self.mem = None
                self.mem = refind.Memory(self.index, read_only=True)
                self.identity = _identity(self.index)
            fn, params = OPS.get(str(name)), request.get("params")
            if fn is None or not isinstance(params, dict):
                raise _Refused(f"unknown request {name!r}")
            with _captured() as logs:
                try:
                    reply: Payload = {"ok": fn(self.mem, **params)}
                except refind.RefindError as exc:
                    reply = {"error": str(exc)}
            reply["logs"] = logs.records
        except Exception as exc:  # not refind's to say: the client runs the command itself
            reply = {"fail": f"{type(exc).__name__}: {exc}"}
            if self.mem is None:
                self.finish(1)
        return reply


def _send(conn: socket.socket, reply: Payload) -> None:
    with contextlib.suppress(OSError):
        conn.settimeout(REPLY_SECONDS)
        conn.sendall(json.dumps(reply, ensure_ascii=False).encode())


def serve(index: Path, sock_path: Path, idle: float | None = None) -> int:
    """Run ``index``'s daemon on ``sock_path`` until idle, stopped, or its index or socket is gone (an exit
    code: 0, or 1 when it could not start)."""
    import fcntl

    if idle is None:
        try:
            idle = float(os.environ.get(IDLE_ENV) or DEFAULT_IDLE)
        except ValueError:
            idle = DEFAULT_IDLE
    lock_fd = os.open(sock_path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another daemon serves this index (or is starting)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock_path.unlink(missing_ok=True)  # a dead daemon's; we hold the lock
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        server.bind(str(sock_path))
    finally:
        os.umask(old_umask)
    os.chmod(sock_path, 0o600)
    bound = sock_path.stat().st_ino
    server.listen(16)
    wake_r, wake_w = os.pipe()
    daemon: _Server | None = None
    try:
        try:
            daemon = _Server(index, idle, wake_w)
        except Exception as exc:
            print(f"refind daemon: cannot open {index}: {exc}", file=sys.stderr)
            return 1
        while daemon.code is None:
            ready, _, _ = select.select([server.fileno(), wake_r], [], [], min(_TICK, idle))
            if server.fileno() not in ready:
                try:
                    ours = sock_path.stat().st_ino == bound
                except OSError:
                    ours = False
                if not ours or daemon.idle_for() >= idle or not index.is_dir():
                    return 0
                continue
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            if not daemon.admit():
                with conn:
                    _send(conn, {"fail": f"busy: {MAX_CONNECTIONS} connections at once"})
                continue
            threading.Thread(target=daemon.handle, args=(conn,), name="refind-daemon", daemon=True).start()
        return daemon.code
    finally:
        with contextlib.suppress(OSError):
            if sock_path.stat().st_ino == bound:
                sock_path.unlink()
        server.close()
        if daemon is not None and daemon.mem is not None:
            with contextlib.suppress(Exception):
                daemon.mem.close()
        for fd in (wake_r, wake_w, lock_fd):
            os.close(fd)
