"""``refind import``: a file or folder of chat history into the index, with progress, ``--watch`` and
a summary."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

import refind
from refind.cli._app import (
    _CONTEXT,
    EXIT_INTERRUPTED,
    _data_option,
    _Failure,
    _open,
    main,
)
from refind.cli._terminal import (
    _one_line,
    _plural,
    err,
    json_text,
    out,
)
from refind.loaders import DEFAULT_USER, LOADERS

# ---------------------------------------------------------------------------------------------- import

_IMPORT_HELP = """Import the chat history at PATH into the index.

Formats (--format; detected when not given):

\b
{formats}

Importing the same PATH again writes only what is new: files that have not changed are not read,
growing logs are read from where the last import stopped, and conversations that grew get their new
messages appended (the record is import-state.json in the index directory). Records that cannot be
read are counted and named in the summary; the rest is imported.

With an embedding model, the imported messages' vectors (search by meaning) are made before it exits,
with a progress bar; Ctrl-C leaves the rest queued (--no-embed skips this step).
"""


def _formats_help() -> str:
    """One line per registered format (``refind/loaders/_registry.py``), its name then its help."""
    width = max(len(name) for name in LOADERS.names())
    rows = []
    for name in LOADERS.names():
        first, *more = LOADERS.get(name).help.split("\n")
        rows.append(f"  {name:<{width}}  {first}")
        rows.extend(f"  {'':<{width}}  {line}" for line in more)
    return "\n".join(rows)


def _personal_titles() -> str:
    titles = [LOADERS.get(name).title for name in LOADERS.names() if LOADERS.get(name).personal]
    return titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} or {titles[-1]}"


@main.command("import", context_settings=_CONTEXT, help=_IMPORT_HELP.format(formats=_formats_help()))
@_data_option
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(LOADERS.names()),
    default=None,
    help="Format of PATH. Default: detected from its name and first bytes.",
)
@click.option(
    "--user",
    default=None,
    help="Import only this user's sessions: a LoCoMo sample_id (conv-26), a LongMemEval question_id, "
    "or a JSONL user_id.",
)
@click.option(
    "--as-user",
    default=None,
    help=f"Store the imported sessions under this user id instead. A {_personal_titles()} history is stored "
    f"as user '{DEFAULT_USER}' unless given.",
)
@click.option(
    "--rescan", is_flag=True, help="Read everything again, ignoring what earlier imports of PATH recorded."
)
@click.option(
    "--watch",
    is_flag=True,
    help="Keep running: import what is new in PATH every --interval seconds (growing session logs are read "
    "from where the last pass stopped), printing a line for each pass that wrote something. Stop with Ctrl-C.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="Seconds between passes of --watch.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (one object per pass).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--no-embed",
    is_flag=True,
    help="Do not make the imported messages' vectors before exiting: they stay queued, and a writable refind "
    "with a model (`refind serve`, the next import) makes them in the background.",
)
@click.pass_context
def import_cmd(
    ctx: click.Context,
    data: Path | None,
    path: Path,
    fmt: str | None,
    user: str | None,
    as_user: str | None,
    rescan: bool,
    watch: bool,
    interval: float,
    as_json: bool,
    quiet: bool,
    no_embed: bool,
) -> None:
    """Import the chat history at PATH (the help is ``_IMPORT_HELP``, its formats from the loaders' table)."""
    from tqdm import tqdm

    from refind.loaders import detect_format, import_path
    from refind.loaders import watch as watch_passes

    fmt = fmt or detect_format(path)
    stop = _StopOnInterrupt()
    try:
        mem = _open(ctx, data, read_only=False, embed_in_background=watch)
    except refind.IndexLocked as exc:
        raise _Failure(
            f"{_one_line(str(exc)).split(';')[0]}. An import needs the index to itself: stop the server "
            "(or whatever holds it) and import again, or send the messages through the server's /add"
        ) from None
    with mem:
        bar = tqdm(
            desc=f"reading {path.name}",
            unit=" msg",
            file=sys.stderr,
            disable=True if quiet or as_json or watch else None,  # None: only on a terminal
            dynamic_ncols=True,
        )
        writing = tqdm(
            desc="writing",
            unit=" msg",
            file=sys.stderr,
            disable=True if quiet or as_json or watch else None,
            dynamic_ncols=True,
            position=1,
        )
        options: dict[str, Any] = {"user": user, "as_user": as_user, "rescan": rescan, "progress": bar.update}
        try:
            if not watch:
                with stop:
                    summary = import_path(
                        mem,
                        path,
                        fmt,  # type: ignore[arg-type]
                        stop=lambda: stop.interrupted,
                        written=writing.update,
                        **options,
                    )
            else:
                err.print(f"Watching {path} every {interval:g} s (Ctrl-C stops).", soft_wrap=True)
                try:
                    for i, summary in enumerate(watch_passes(mem, path, fmt, interval=interval, **options)):  # type: ignore[arg-type]
                        if i == 0 or summary.sessions or summary.problems:  # quiet while nothing is new
                            _print_import(summary, as_json, brief=i > 0, one_line=True)
                except KeyboardInterrupt:
                    ctx.exit(0)
                return
        finally:
            writing.close()
            bar.close()
        if user is not None and not summary.users and not summary.interrupted:
            raise _Failure(
                f"{path}: no sessions of user {user!r}; `refind import` without --user imports all"
            )
        _print_import(summary, as_json)
        if not summary.interrupted and not no_embed and mem.embedder is not None:
            _embed(mem, quiet or as_json)
    if summary.interrupted:
        if not as_json:
            out.print(
                "Interrupted: every session counted above is saved, the rest of the source is not. Run the "
                "same import again to add the rest (messages with an id replace themselves)."
            )
        ctx.exit(EXIT_INTERRUPTED)


def _embed(mem: refind.Memory, quiet: bool) -> None:
    """Make the vectors of what awaits them (the import's messages, and any left from before), with a
    progress bar (messages embedded of all that await, and the rate); Ctrl-C leaves the rest queued."""
    from tqdm import tqdm

    waiting = mem.vector_counts().pending
    if not waiting:
        return
    stop = _StopOnInterrupt("refind: stopping after this batch of vectors (Ctrl-C again to abort at once)")
    bar = tqdm(
        desc="embedding", total=waiting, unit=" msg", file=sys.stderr, disable=True if quiet else None,
        dynamic_ncols=True,
    )  # fmt: skip
    done = [0]

    def progress(written: int, left: int) -> None:
        bar.total = written + left
        bar.update(written - done[0])
        done[0] = written

    started = time.monotonic()
    try:
        with stop:
            made = mem.embed_pending(progress=progress, should_stop=lambda: stop.interrupted)
    finally:
        bar.close()
    if not quiet and mem.embedder is not None:
        seconds = time.monotonic() - started
        out.print(
            f"  vectors     {made:,} made by {mem.embedder.name} for search by meaning, in {seconds:.1f} s "
            f"({made / max(seconds, 1e-9):,.0f} messages/s)",
            soft_wrap=True,
        )
    left = mem.vector_counts().pending
    if left:
        err.print(
            f"{_plural(left, 'message')} still await their vectors (search finds them by words meanwhile); "
            "`refind serve` or the next `refind import` makes them in the background.",
            soft_wrap=True,
        )


class _StopOnInterrupt:
    """While active, the first Ctrl-C asks the import to stop after the session it is reading (what was
    read is then saved and summarized); a second Ctrl-C stops at once."""

    def __init__(
        self, notice: str = "refind: stopping after this session (Ctrl-C again to abort at once)"
    ) -> None:
        self.interrupted = False
        self._previous: Any = None
        self.notice = notice

    def _handle(self, signum: int, frame: Any) -> None:
        import signal

        self.interrupted = True
        signal.signal(signal.SIGINT, self._previous)
        click.echo("\n" + self.notice, err=True)

    def __enter__(self) -> _StopOnInterrupt:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal
        import threading

        main = threading.current_thread() is threading.main_thread()
        if main and self._previous is not None and signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, self._previous)


def _print_import(summary: Any, as_json: bool, *, brief: bool = False, one_line: bool = False) -> None:
    """One import's summary (a refind.loaders.ImportSummary): a table, one line per later --watch pass, or JSON
    (one line per pass with --watch)."""
    if as_json:
        click.echo(json_text(summary.model_dump_json(indent=None if one_line else 2)))
        return
    if brief:
        when = datetime.now().strftime("%H:%M:%S")
        line = (
            f"{when}  {_plural(summary.sessions, 'session')} written, {_plural(summary.added, 'message')} added"
            + (f", {_plural(len(summary.problems), 'unreadable record')}" if summary.problems else "")
        )
        out.print(line)
        for problem in summary.problems:
            out.print(f"  {problem}", soft_wrap=True)
        return
    name = Path(summary.path).name or summary.path
    out.print(Text.assemble(("Imported ", ""), (name, "bold"), f" ({summary.format}) into {summary.index}"))
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 2))
    table.add_row(
        "sessions", f"{summary.sessions} written, {summary.unchanged} unchanged since the last import"
    )
    table.add_row("messages", f"{summary.added} added, {summary.replaced} replaced")
    users = summary.users
    shown = ", ".join(users[:5]) + (", ..." if len(users) > 5 else "")
    table.add_row("users", f"{len(users)} ({shown})" if users else "0")
    if summary.files + summary.files_unchanged > 1 or summary.files_unchanged:
        table.add_row("files", f"{summary.files} read, {summary.files_unchanged} unchanged")
    table.add_row("skipped", _skipped_text(summary.skipped))
    table.add_row("time", f"{summary.seconds:.1f} s")
    out.print(table)
    if summary.problems:
        out.print(Text("Could not read:", style="yellow"))
        for problem in summary.problems:
            out.print(f"  {problem}", soft_wrap=True)
        more = summary.skipped.get("unreadable_lines", 0) + summary.skipped.get("unreadable_conversations", 0)
        if more > len(summary.problems):
            out.print(f"  ... and {more - len(summary.problems)} more")


def _skipped_text(skipped: dict[str, int]) -> str:
    if not skipped:
        return "nothing"
    return ", ".join(
        f"{n} {_singular(reason) if n == 1 else reason.replace('_', ' ')}"
        for reason, n in sorted(skipped.items())
    )


def _singular(reason: str) -> str:
    """A skip reason for one record: "unreadable_lines" -> "unreadable line"."""
    words = reason.split("_")
    last = words[-1]
    if last.endswith("ies"):
        last = last[:-3] + "y"
    elif last.endswith(("ches", "shes", "sses", "xes")):
        last = last[:-2]
    elif last.endswith("s") and not last.endswith("ss"):
        last = last[:-1]
    return " ".join([*words[:-1], last])
