"""``refind serve``: the Add/Search HTTP service of the Agent Memory Leaderboard contract, over
:class:`refind.Memory` (docs/service.md).

    from refind.server import serve
    serve("./index", port=8000, auth="bearer")            # blocks; the key comes from $REFIND_API_KEY

    python -m refind.server --data ./index --auth bearer  # the same from a shell

One process writes (the index has one writer per directory); searches run in ``search_workers`` reader
processes beside it (default one per core, at most 4), so they use every core. Requests run in a thread
pool; past ``max_in_flight`` they get 503 with ``Retry-After``. FastAPI and uvicorn are imported only here, when a
server is built: ``pip install 'refind[serve]'``.
"""

from __future__ import annotations

import contextlib
import copy
import ipaddress
import logging
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refind.errors import SetupError
from refind.server._config import DEFAULT_MAX_BODY_BYTES, AuthScheme, ServerConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

    from refind.config import Settings
    from refind.memory import Memory

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerConfig", "create_app", "serve"]

log = logging.getLogger("refind.server")
_LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _require() -> None:
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise SetupError(
            f"the HTTP service needs fastapi and uvicorn ({exc.name} is missing): pip install 'refind[serve]'"
        ) from exc


def create_app(
    memory: Memory | str | os.PathLike[str] | None = None,
    *,
    config: ServerConfig | None = None,
    settings: Settings | None = None,
    **options: Any,
) -> FastAPI:
    """The FastAPI application over ``memory``.

    ``memory`` is an open :class:`refind.Memory` (the caller closes it), or an index directory (None: the
    default one), which the app opens at startup and closes at shutdown (``settings`` applies then).
    ``options`` are :class:`ServerConfig` fields (``auth``, ``api_key``, ``max_body_bytes``, ``threads``,
    ``max_in_flight``, ``retention_days``, ``agent``, ...), or pass a whole ``config``. Raises
    :class:`refind.InvalidInput` for bad options, :class:`refind.SetupError` when fastapi is missing, the
    LLM agent has no endpoint, or retention is asked of a Memory that cannot delete by age.
    """
    _require()
    from refind.server._app import build_app

    if config is None:
        config = ServerConfig.build(**options)
    elif options:
        config = ServerConfig.build(**{**dict(config), **options})
    return build_app(memory, config, settings)


LISTEN_BACKLOG = 2048
"""Connections the kernel queues before they are accepted (uvicorn's default)."""


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise SetupError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # listening now: the port is announced before uvicorn starts, and a client may come at once
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise SetupError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port (0: any free one)"
        ) from exc
    sock.set_inheritable(True)
    return sock


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _log_config(level: str) -> dict[str, Any]:
    from uvicorn.config import LOGGING_CONFIG

    cfg = copy.deepcopy(LOGGING_CONFIG)
    cfg["loggers"]["refind"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    if level == "trace":
        cfg["loggers"]["refind"]["level"] = "DEBUG"
    return cfg


def _write_port(path: str | os.PathLike[str], port: int) -> None:
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(f"{port}\n")
    os.replace(tmp, target)


def serve(
    data_dir: str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    auth: AuthScheme = "none",
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    retention_days: float | None = None,
    agent: str = "heuristic",
    log_level: str = "info",
    *,
    threads: int = 16,
    max_in_flight: int | None = None,
    search_workers: int | None = None,
    warm_up_s: float = 0.0,
    retention_interval_s: float = 3600.0,
    access_log: bool = True,
    port_file: str | os.PathLike[str] | None = None,
    workers: int = 1,
    read_timeout_s: float = 30.0,
    max_body_bytes_in_flight: int | None = None,
) -> None:
    """Serve the index in ``data_dir`` (None: ``$REFIND_DATA`` or the per-user data directory) until
    SIGINT/SIGTERM, with one uvicorn worker and a thread pool of ``threads``. ``read_timeout_s``: a request's
    headers, then its body, must each arrive within that many seconds, else 408 (docs/service.md).
    ``max_body_bytes_in_flight``: bytes of request bodies held at once across connections (default 64 MiB,
    at least ``max_body_bytes``); beyond it 503 with ``Retry-After``. With auth on, a request without the
    key is answered 401 from its headers, before any of its body is read.

    ``retention_days`` deletes messages older than that (:meth:`refind.Memory.delete_before`) at startup
    and every ``retention_interval_s`` seconds. ``api_key`` defaults to ``$REFIND_API_KEY`` (prefer it to a command-line flag, which other users can
    see in the process list). ``port=0`` picks a free port; ``port_file`` receives the port once the
    socket is bound (the service answers ``GET /health`` once it is ready). ``workers`` > 1 runs that many
    serving processes on the one socket, each with its own connection to the engine: only for an engine
    that several processes write at once (``opensearch://``, :attr:`refind.Memory.shared`); the parent
    forwards SIGTERM/SIGINT to them and returns once they are gone. Errors before serving
    (bad settings, the index locked by another process, the port taken) raise :class:`refind.RefindError`
    with one actionable line.
    """
    if log_level not in _LOG_LEVELS:
        from refind.errors import InvalidInput

        raise InvalidInput(f"log_level: expected one of {', '.join(_LOG_LEVELS)}")
    config = ServerConfig.build(
        auth=auth,
        api_key=api_key,
        max_body_bytes=max_body_bytes,
        retention_days=retention_days,
        retention_interval_s=retention_interval_s,
        agent=agent,
        threads=threads,
        max_in_flight=max_in_flight,
        search_workers=search_workers,
        warm_up_s=warm_up_s,
        read_timeout_s=read_timeout_s,
        max_body_bytes_in_flight=max_body_bytes_in_flight,
    )
    _require()
    from refind.memory import Memory

    if not 1 <= workers <= 64:
        raise SetupError("workers: expected 1 to 64 serving processes")
    if workers > 1:
        probe = Memory(data_dir)  # opens (and creates) the store once, so a bad location fails here
        try:
            shared = probe.shared
            where = probe.location
        finally:
            probe.close()
        if not shared:
            raise SetupError(
                f"--workers {workers} needs an engine that several processes write at once (--store "
                f"opensearch://host:9200/prefix); {where} has one writer: keep --workers 1 and let "
                "--search-workers run its searches in reader processes"
            )
    sock = _bind(host, port)
    if workers == 1:
        _serve_one(sock, data_dir, config, log_level, access_log, port_file, host)
        return
    _serve_many(sock, workers, data_dir, config, log_level, access_log, port_file, host)


def _serve_one(
    sock: socket.socket,
    data_dir: str | os.PathLike[str] | None,
    config: ServerConfig,
    log_level: str,
    access_log: bool,
    port_file: str | os.PathLike[str] | None,
    host: str,
) -> None:
    import uvicorn

    from refind.memory import Memory
    from refind.server._protocol import protocol_class

    memory: Memory | None = None
    try:
        memory = Memory(data_dir)
        from refind.server._app import build_app

        # the app closes the Memory at shutdown: after a SIGTERM uvicorn re-raises the signal, and the
        # process ends before this function's finally
        app = build_app(memory, config, owns=True)
        bound = sock.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level=log_level,
                log_config=_log_config(log_level),
                access_log=access_log,
                lifespan="on",
                timeout_graceful_shutdown=30,
                server_header=False,
                http=protocol_class(config.read_timeout_s),
            )
        )
        # uvicorn.Config has configured logging by now
        log.info("listening on http://%s:%d", f"[{host}]" if ":" in host else host, bound)
        if config.auth == "none" and not _loopback(host):
            log.warning("serving %s:%d WITHOUT authentication; use --auth bearer off loopback", host, bound)
        if port_file is not None:
            _write_port(port_file, bound)
        server.run(sockets=[sock])
        if not server.started:
            raise SetupError("the HTTP service did not start; the log above says why")
    finally:
        if memory is not None:
            memory.close()
        sock.close()
        if port_file is not None:
            Path(port_file).unlink(missing_ok=True)


def _serve_many(
    sock: socket.socket,
    workers: int,
    data_dir: str | os.PathLike[str] | None,
    config: ServerConfig,
    log_level: str,
    access_log: bool,
    port_file: str | os.PathLike[str] | None,
    host: str,
) -> None:
    """Fork ``workers`` serving processes on ``sock``; forward SIGTERM/SIGINT; wait for them all."""
    import signal
    import sys

    pids: list[int] = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # a worker: its own engine connection, its own uvicorn
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _serve_one(sock, data_dir, config, log_level, access_log, None, host)
            except BaseException as exc:  # reported, then this process ends without unwinding the parent's
                print(f"refind serve worker {os.getpid()}: {exc}", file=sys.stderr, flush=True)
                code = 1
            finally:
                os._exit(code)
        pids.append(pid)
    interrupted = False

    def forward(signum: int, frame: object) -> None:
        nonlocal interrupted
        interrupted = interrupted or signum == signal.SIGINT
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGTERM)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        if port_file is not None:
            _write_port(port_file, sock.getsockname()[1])
        log.info("serving with %d worker processes: %s", workers, " ".join(map(str, pids)))
        failed = 0
        for p in pids:
            while True:
                try:
                    _, status = os.waitpid(p, 0)
                    break
                except ChildProcessError:
                    status = 0
                    break
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
                failed += 1
                forward(signal.SIGTERM, None)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sock.close()
        if port_file is not None:
            Path(port_file).unlink(missing_ok=True)
    if interrupted:
        raise KeyboardInterrupt
    if failed:
        raise SetupError(f"{failed} of {workers} serving processes failed; their errors are above")
