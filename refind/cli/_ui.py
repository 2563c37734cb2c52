"""``refind ui``: the browsing page of one person's history (:mod:`refind.ui`) on loopback."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from refind.cli._app import _CONTEXT, EXIT_INTERRUPTED, _data_option, _Failure, _location, _zone, main
from refind.cli._terminal import err
from refind.loaders import DEFAULT_USER


@main.command(context_settings=_CONTEXT)
@_data_option
@click.option(
    "--store",
    "store",
    default=None,
    help="Where the messages live, instead of --data (here or before the command).",
)
@click.option("--user", "-u", default=DEFAULT_USER, show_default=True, help="Whose history to browse.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback).")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0 picks a free port."
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Listen on a --host that is not loopback. The page is plain HTTP: anyone who reaches it and sees "
    "its link reads the history.",
)
@click.option(
    "--no-token",
    is_flag=True,
    help="Serve without this start's secret in the URL: every account on this machine can then read the "
    "page.",
)
@click.option(
    "--port-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the bound port here once listening (with --port 0).",
)
@click.pass_context
def ui(
    ctx: click.Context,
    data: Path | None,
    store: str | None,
    user: str,
    host: str,
    port: int,
    allow_remote: bool,
    no_token: bool,
    port_file: Path | None,
) -> None:
    """Browse USER's history in a web browser: search, results grouped by session, a session in full, and
    "About you": what USER said that stands, to pin or hide.

    A small server-rendered page (no script) on http://127.0.0.1:8765/ until Ctrl-C. The URL printed
    carries a secret made at each start (?token=...; the page then sets a cookie), so another account on
    this machine cannot read it; --no-token serves without one. It opens the index read-only, so it works
    beside `refind serve` and imports; a correction on the About you page (pin, hide) opens it for writing
    for that moment, and says so when another process holds it. Dates are in `refind --tz`'s zone
    (default: $TZ, else this machine's). Needs the serve extra: pip install 'refind[serve]'.

    \b
    Examples:
      refind ui
      refind ui --port 0 --user maya
    """
    try:
        from refind.ui import serve as run_ui
    except ImportError as exc:
        raise _Failure(f"the browsing page needs {exc.name}: pip install 'refind[serve]'") from None
    if store is not None and data is not None:
        raise click.UsageError("give --data or --store, not both")

    def ready(url: str) -> None:
        err.print(
            Text(f"refind ui: {user}'s history at {url} (Ctrl-C stops)"), highlight=False, soft_wrap=True
        )

    try:
        run_ui(
            store if store is not None else _location(ctx, data),
            user_id=user,
            host=host,
            port=port,
            allow_remote=allow_remote,
            port_file=port_file,
            ready=ready,
            tz=_zone(ctx),
            token=not no_token,
        )
    except KeyboardInterrupt:
        ctx.exit(EXIT_INTERRUPTED)
