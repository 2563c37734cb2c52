"""``refind daemon status`` / ``stop``: the background search processes that make reading commands fast
(refind/cli/_daemon.py); ``daemon run`` is how a command starts one (hidden)."""

from __future__ import annotations

from pathlib import Path

import click

from refind.cli import _daemon
from refind.cli._app import _CONTEXT, _data_option, _Failure, _location, main
from refind.cli._terminal import _plural, out


@main.group(context_settings=_CONTEXT)
def daemon() -> None:
    """A lingering process per index that keeps reading commands fast: `refind search`, `show` and
    `sessions` start one on first use and reuse it, so later commands skip the Java start. It holds the index read-only (imports
    keep working), sees every finished import, and exits after $REFIND_DAEMON_IDLE seconds without a
    request (default 300). REFIND_DAEMON=0 or --no-daemon runs commands in-process instead.
    """


@daemon.command(context_settings=_CONTEXT)
def status() -> None:
    """List this user's running background search processes: index, pid, idle timeout."""
    found = _daemon.daemons()
    if not found:
        out.print("No refind daemon is running.")
    for d in found:
        out.print(f"{d['index']}  pid {d['pid']}  exits after {d['idle']:g} s idle")


@daemon.command(context_settings=_CONTEXT)
@_data_option
@click.option("--all", "every", is_flag=True, help="Stop every refind daemon of this user.")
@click.pass_context
def stop(ctx: click.Context, data: Path | None, every: bool) -> None:
    """Stop the background search process of the index (--data), or every one with --all."""
    stopped = _daemon.stop(_location(ctx, data), every=every)
    out.print(f"Stopped {_plural(len(stopped), 'daemon')}." if stopped else "No refind daemon was running.")


@daemon.command(hidden=True, context_settings=_CONTEXT)
@click.argument("index", type=click.Path(file_okay=False, path_type=Path))
@click.option("--socket", "sock", type=click.Path(dir_okay=False, path_type=Path), required=True)
def run(index: Path, sock: Path) -> None:
    """Serve INDEX on SOCKET until idle (started by the reading commands, detached)."""
    from refind.cli import _search, _sessions  # noqa: F401 - they register the requests it answers

    code = _daemon.serve(index, sock)
    if code:
        raise _Failure(f"the daemon for {index} could not start", code)
