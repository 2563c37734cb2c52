"""``refind serve``: the Add/Search HTTP service (:mod:`refind.server`) on this index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from refind.cli._app import (
    _AGENTS,
    _CONTEXT,
    EXIT_INTERRUPTED,
    _data_option,
    _Failure,
    _location,
    _set_option,
    main,
)

# ---------------------------------------------------------------------------------------------- serve


@main.command(context_settings=_CONTEXT)
@_data_option
@click.option(
    "--store",
    "store",
    default=None,
    help="Where the messages live, instead of --data (here or before the command): "
    "opensearch://host:9200/prefix for a cluster (docs/scale-out.md).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="0 picks a free port."
)
@click.option(
    "--auth",
    type=click.Choice(["none", "token", "bearer", "x-api-key"]),
    default="none",
    show_default=True,
    help="How clients send the key: 'Authorization: Token|Bearer <key>' or 'X-Api-Key: <key>'.",
)
@click.option(
    "--api-key",
    default=None,
    help="The key. Default: $REFIND_API_KEY (prefer the variable: flags show in the process list).",
)
@click.option(
    "--agent",
    type=click.Choice(_AGENTS),
    default="heuristic",
    show_default=True,
    help="Search agent of /search.",
)
@click.option(
    "--retention-days",
    type=float,
    default=None,
    help="Delete what was added more than this many days ago (messages with their requests' markers). "
    "Default: keep everything.",
)
@click.option(
    "--retention-interval",
    type=float,
    default=3600.0,
    show_default=True,
    help="Seconds between retention sweeps (the first runs at startup).",
)
@click.option(
    "--max-body-bytes",
    type=int,
    default=None,
    help="Largest request body; bigger ones get 413. Default: 8388608 (8 MiB).",
)
@click.option(
    "--max-body-bytes-in-flight",
    type=int,
    default=None,
    help="Bytes of request bodies held at once, across connections; a body beyond it is read, dropped and "
    "answered 503 with Retry-After. Default: 67108864 (64 MiB), and never less than the largest body.",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug", "trace"]),
    default="info",
    show_default=True,
    help="Request bodies are never logged.",
)
@click.option("--threads", type=int, default=16, show_default=True, help="Thread pool for index calls.")
@click.option(
    "--max-in-flight",
    type=int,
    default=None,
    help="Requests served or queued at once; more get 503 with Retry-After. Default: threads x 4.",
)
@click.option(
    "--read-timeout",
    type=click.FloatRange(0, 3600, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds a request's headers, then its body, may take to arrive; slower ones get 408.",
)
@click.option(
    "--search-workers",
    type=int,
    default=None,
    help="Reader processes that run the searches, beside the one that writes. Default: one per core, at "
    "most 4; 0 runs them in the serving process.",
)
@click.option(
    "--warm-up",
    "warm_up_s",
    type=click.FloatRange(0, 60),
    default=0.0,
    show_default=True,
    help="Seconds of synthetic searches each searching process runs at start (refind.warm_up), so that "
    "the first requests do not pay for the JVM's compilation. 0: none.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Stateless serving processes on one port; more than 1 needs a remote engine (an opensearch:// "
    "store). The embedded engine has one writer; its searches scale with the search workers instead.",
)
@click.option("--no-access-log", is_flag=True, help="Do not log one line per request.")
@click.option(
    "--port-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the bound port here once listening (with --port 0).",
)
@_set_option
@click.pass_context
def serve(
    ctx: click.Context,
    data: Path | None,
    store: str | None,
    host: str,
    port: int,
    auth: str,
    api_key: str | None,
    agent: str,
    retention_days: float | None,
    retention_interval: float,
    max_body_bytes: int | None,
    max_body_bytes_in_flight: int | None,
    log_level: str,
    threads: int,
    max_in_flight: int | None,
    read_timeout: float,
    search_workers: int | None,
    warm_up_s: float,
    workers: int,
    no_access_log: bool,
    port_file: Path | None,
) -> None:
    """Serve the index over HTTP: Add/Search, the Agent Memory Leaderboard contract.

    Runs until Ctrl-C or SIGTERM (requests in flight finish, then the index is closed). The service
    holds the index's write lock; `refind search` and `refind stats` still work beside it. The searches use
    the settings of the environment and of --set (the heuristic agent's among them: --set max_rounds=6).
    Settings are checked before anything starts; a bad one is a one-line error. `python -m refind.server`
    is the same command. Needs the serve extra: pip install 'refind[serve]'.
    """
    try:
        from refind.server import serve as run_server
    except ImportError as exc:
        if exc.name in {"refind.server", "refind"}:
            raise _Failure(
                "the HTTP service (refind.server) is not part of this refind installation"
            ) from None
        raise _Failure(f"the HTTP service needs {exc.name}: pip install 'refind[serve]'") from None
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "auth": auth,
        "api_key": api_key,
        "retention_days": retention_days,
        "retention_interval_s": retention_interval,
        "agent": agent,
        "log_level": log_level,
        "threads": threads,
        "max_in_flight": max_in_flight,
        "max_body_bytes_in_flight": max_body_bytes_in_flight,
        "read_timeout_s": read_timeout,
        "search_workers": search_workers,
        "warm_up_s": warm_up_s,
        "workers": workers,
        "access_log": not no_access_log,
        "port_file": port_file,
    }
    if max_body_bytes is not None:
        options["max_body_bytes"] = max_body_bytes
    try:
        if store is not None and data is not None:
            raise click.UsageError("give --data or --store, not both")
        run_server(store if store is not None else _location(ctx, data), **options)
    except KeyboardInterrupt:  # the service has shut down cleanly
        ctx.exit(EXIT_INTERRUPTED)
