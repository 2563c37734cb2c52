"""``python -m refind.server``: run the Add/Search service (the ``refind serve`` command wraps this)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from refind.errors import RefindError
from refind.server import DEFAULT_MAX_BODY_BYTES, serve

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m refind.server",
        description="Serve a refind index over the Agent Memory Leaderboard Add/Search HTTP contract.",
    )
    p.add_argument(
        "--data", default=None, help="index directory (default: $REFIND_DATA or the user data dir)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument(
        "--auth",
        choices=["none", "token", "bearer", "x-api-key"],
        default="none",
        help="how clients send the key: 'Authorization: Token|Bearer <key>' or 'X-Api-Key: <key>' (default none)",
    )
    p.add_argument(
        "--api-key",
        default=None,
        help="the key (default $REFIND_API_KEY; prefer the variable: flags show in the process list)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help=f"largest request body; bigger ones get 413 (default {DEFAULT_MAX_BODY_BYTES})",
    )
    p.add_argument("--threads", type=int, default=16, help="thread pool for index calls (default 16)")
    p.add_argument(
        "--max-in-flight",
        type=int,
        default=None,
        help="requests served or queued at once; more get 503 + Retry-After (default 4 x threads)",
    )
    p.add_argument(
        "--retention-days",
        type=float,
        default=None,
        help="delete messages older than this many days (default: keep everything)",
    )
    p.add_argument(
        "--retention-interval",
        type=float,
        default=3600.0,
        help="seconds between retention sweeps (default 3600; the first runs at startup)",
    )
    p.add_argument(
        "--agent", choices=["heuristic", "llm"], default="heuristic", help="search agent (default heuristic)"
    )
    p.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        default="info",
        help="log level (default info); request bodies are never logged",
    )
    p.add_argument("--no-access-log", action="store_true", help="no per-request access log lines")
    p.add_argument("--port-file", default=None, help="write the bound port here once listening")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        serve(
            args.data,
            host=args.host,
            port=args.port,
            auth=args.auth,
            api_key=args.api_key,
            max_body_bytes=args.max_body_bytes,
            retention_days=args.retention_days,
            retention_interval_s=args.retention_interval,
            agent=args.agent,
            log_level=args.log_level,
            threads=args.threads,
            max_in_flight=args.max_in_flight,
            access_log=not args.no_access_log,
            port_file=args.port_file,
        )
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled, after a clean shutdown
        return 130
    except RefindError as exc:
        if os.environ.get("REFIND_DEBUG") == "1":
            raise
        print(f"refind serve: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
