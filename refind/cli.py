"""The ``refind`` command: a thin layer over :class:`refind.Memory` that prints (the library never does).

    refind demo                                  build a demo index from examples/data and ask it questions
    refind import chats.jsonl                    import LoCoMo, LongMemEval or JSONL chat logs
    refind search "what did I decide?" --user maya [--now 2024-06-20] [--json] [--trace]
    refind serve --port 8000 --auth bearer       the Add/Search HTTP service (refind.server)
    refind stats [--json]                        messages and users in the index (read-only)
    refind delete-user maya [--yes]

``--data DIR`` (or ``$REFIND_DATA``) picks the index directory; ``--store URL`` (or ``$REFIND_STORE``) picks any
engine instead, e.g. ``opensearch://host:9200/prefix`` (docs/scale-out.md). Reading commands (search, stats) open it
read-only, so they work beside a running ``refind serve``. Results go to stdout; progress, warnings and
errors to stderr.

Exit codes: 0 success; 1 a refind error (bad input, no index, index locked, Java or LLM not set up), or a
declined confirmation; 2 a usage error; 3 an unexpected error; 130 ``refind serve`` stopped by Ctrl-C.
Errors are one line; ``REFIND_DEBUG=1`` re-raises them with the traceback.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

import refind
from refind.config import debug_enabled
from refind.loaders import DEFAULT_USER, FORMATS, iter_sessions

__all__ = ["EXIT_ERROR", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_USAGE", "main"]

EXIT_ERROR = 1  # a RefindError, or a confirmation declined
EXIT_USAGE = 2  # click's usage errors
EXIT_INTERNAL = 3  # anything unexpected (a bug): one line, or the traceback with REFIND_DEBUG=1
EXIT_INTERRUPTED = 130

_AGENTS = ("heuristic", "llm")
_AGENT_HELP = (
    "Who plans the rounds: heuristic (offline) or llm (an OpenAI-compatible model: set REFIND_LLM_API_KEY "
    "or OPENAI_API_KEY, or REFIND_LLM_BASE_URL)."
)
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


class _Failure(click.ClickException):
    """A one-line error with a chosen exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click reads it per instance


class _Group(click.Group):
    """Turns every refind error into one line on stderr and a stable exit code; lists the commands in the
    order a newcomer uses them."""

    order = ("demo", "import", "search", "mcp", "serve", "stats", "delete-user")

    def list_commands(self, ctx: click.Context) -> list[str]:
        known = [name for name in self.order if name in self.commands]
        return known + sorted(set(self.commands) - set(known))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except refind.RefindError as exc:
            if debug_enabled():
                raise
            raise _Failure(_one_line(str(exc))) from None
        except Exception as exc:
            if debug_enabled():
                raise
            raise _Failure(
                f"unexpected {type(exc).__name__}: {_one_line(str(exc))} "
                "(this is a bug; REFIND_DEBUG=1 shows the traceback)",
                EXIT_INTERNAL,
            ) from None


def _one_line(text: str, limit: int = 500) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _EchoHandler(logging.Handler):
    """Library warnings as ``refind: warning: ...`` lines on the current stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"refind: {record.levelname.lower()}: {record.getMessage()}", err=True)


def _setup_logging(verbose: bool) -> None:
    logger = logging.getLogger("refind")
    for handler in [h for h in logger.handlers if isinstance(h, _EchoHandler)]:
        logger.removeHandler(handler)
    logger.addHandler(_EchoHandler())
    logger.setLevel(logging.INFO if verbose else logging.WARNING)


# ---------------------------------------------------------------------------------------------- the group


@click.group(cls=_Group, context_settings=_CONTEXT)
@click.option(
    "--data",
    "data",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="REFIND_DATA",
    show_envvar=True,
    help="Index directory. Default: $REFIND_DATA, else $XDG_DATA_HOME/refind or ~/.local/share/refind.",
)
@click.option(
    "--store",
    "store",
    default=None,
    envvar="REFIND_STORE",
    show_envvar=True,
    help="Where the messages live, instead of --data: a directory, or opensearch://host:9200/prefix "
    "(opensearchs:// for TLS; credentials in docs/scale-out.md).",
)
@click.option("-v", "--verbose", is_flag=True, help="Also show the library's info messages on stderr.")
@click.version_option(refind.__version__, "--version", prog_name="refind")
@click.pass_context
def main(ctx: click.Context, data: Path | None, store: str | None, verbose: bool) -> None:
    """refind: search an AI agent's raw chat history the way a person searches a chat app.

    Messages are kept verbatim in a local Lucene index; a question runs a few keyword rounds with time
    filters and context windows, and the evidence comes back grouped by session in time order.

    Start with `refind demo`.
    """
    if store is not None and data is not None:
        if ctx.get_parameter_source("data") is not click.core.ParameterSource.ENVIRONMENT:
            raise click.UsageError("give --data or --store, not both")
        data = None  # an explicit --store (or $REFIND_STORE) wins over $REFIND_DATA
    ctx.obj = data
    ctx.meta["refind.store"] = store
    if ctx.invoked_subcommand != "serve":  # the service configures its own logging
        _setup_logging(verbose)


_DATA_HELP = (
    "Index directory (here or before the command). Default: $REFIND_DATA, else ~/.local/share/refind."
)


def _data_option(command: Any) -> Any:
    """``--data DIR`` on a subcommand too (``refind serve --data DIR`` as well as ``refind --data DIR
    serve``); the subcommand's wins when both are given."""
    return click.option(
        "--data", "data", type=click.Path(file_okay=False, path_type=Path), default=None, help=_DATA_HELP
    )(command)


def _data_dir(ctx: click.Context, data: Path | None = None) -> Path | None:
    chosen = data if data is not None else ctx.find_root().obj
    return Path(chosen).expanduser() if chosen is not None else None


def _location(ctx: click.Context, data: Path | None = None) -> str | Path | None:
    """The subcommand's --data, else the group's --store, else its --data (None: refind's default)."""
    if data is not None:
        return Path(data).expanduser()
    store = ctx.find_root().meta.get("refind.store")
    return str(store) if store else _data_dir(ctx)


def _open(ctx: click.Context, data: Path | None, *, read_only: bool) -> refind.Memory:
    return refind.Memory(_location(ctx, data), read_only=read_only)


def _agent(name: str) -> refind.Agent | None:
    """None means Memory.search's default (the heuristic agent with the settings' max_rounds)."""
    return refind.LLMAgent() if name == "llm" else None


# ---------------------------------------------------------------------------------------------- import


@main.command("import", context_settings=_CONTEXT)
@_data_option
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
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
    help="Store the imported sessions under this user id instead. A ChatGPT, Claude or Claude Code "
    f"history is stored as user '{DEFAULT_USER}' unless given.",
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
) -> None:
    """Import the chat history at PATH into the index.

    Formats (--format; detected when not given):

    \b
      chatgpt      a ChatGPT data export: conversations.json, or the export .zip
      claude       a Claude.ai data export: conversations.json, or the export .zip
      claude-code  Claude Code session logs: ~/.claude/projects, a project directory or one
                   <session>.jsonl
      jsonl        one message per line: {"user_id", "session_id", "role", "content",
                   "timestamp"?, "id"?}
      locomo       LoCoMo JSON (one user per conversation)
      longmemeval  LongMemEval JSON or .json.gz (one user per question's haystack)

    Importing the same PATH again writes only what is new: files that have not changed are not read,
    growing logs are read from where the last import stopped, and conversations that grew get their new
    messages appended (the record is import-state.json in the index directory). Records that cannot be
    read are counted and named in the summary; the rest is imported.
    """
    from tqdm import tqdm

    from refind.loaders import detect_format, import_path
    from refind.loaders import watch as watch_passes

    fmt = fmt or detect_format(path)
    stop = _StopOnInterrupt()
    try:
        mem = _open(ctx, data, read_only=False)
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
        options: dict[str, Any] = {"user": user, "as_user": as_user, "rescan": rescan, "progress": bar.update}
        try:
            if not watch:
                with stop:
                    summary = import_path(mem, path, fmt, stop=lambda: stop.interrupted, **options)  # type: ignore[arg-type]
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
            bar.close()
    if user is not None and not summary.users and not summary.interrupted:
        raise _Failure(f"{path}: no sessions of user {user!r}; `refind import` without --user imports all")
    _print_import(summary, as_json)
    if summary.interrupted:
        if not as_json:
            out.print(
                "Interrupted: every session counted above is saved, the rest of the source is not. Run the "
                "same import again to add the rest (messages with an id replace themselves)."
            )
        ctx.exit(EXIT_INTERRUPTED)


class _StopOnInterrupt:
    """While active, the first Ctrl-C asks the import to stop after the session it is reading (what was
    read is then saved and summarized); a second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.interrupted = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        import signal

        self.interrupted = True
        signal.signal(signal.SIGINT, self._previous)
        click.echo("\nrefind: stopping after this session (Ctrl-C again to abort at once)", err=True)

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
        click.echo(summary.model_dump_json(indent=None if one_line else 2))
        return
    if brief:
        when = datetime.now().strftime("%H:%M:%S")
        line = f"{when}  {_plural(summary.sessions, 'session')} written, {summary.added} messages added" + (
            f", {_plural(len(summary.problems), 'unreadable record')}" if summary.problems else ""
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
    return ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(skipped.items()))


# ---------------------------------------------------------------------------------------------- search


@main.command(context_settings=_CONTEXT)
@_data_option
@click.argument("question")
@click.option("--user", "-u", required=True, help="Whose history to search (every search is per user).")
@click.option(
    "--now",
    default=None,
    help="The date the question is asked, for time cues like 'last month' (e.g. 2024-06-20). "
    "Default: the current time.",
)
@click.option("--agent", type=click.Choice(_AGENTS), default="heuristic", show_default=True, help=_AGENT_HELP)
@click.option("--top-k", type=click.IntRange(1, 1000), default=None, help="Hits per round (default 5).")
@click.option(
    "--window", type=click.IntRange(0, 100), default=None, help="Turns shown each side of a hit (default 2)."
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1),
    default=None,
    help="Pack the evidence into this many tokens: every hit first (cut to its matched passage when "
    "long), then the turns around the hits, best sessions first.",
)
@click.option("--trace", is_flag=True, help="Also show the rounds: keywords, dates, hits, time.")
@click.option("--json", "as_json", is_flag=True, help="Print the SearchResult as JSON (for scripts).")
@click.pass_context
def search(
    ctx: click.Context,
    data: Path | None,
    question: str,
    user: str,
    now: str | None,
    agent: str,
    top_k: int | None,
    window: int | None,
    max_tokens: int | None,
    trace: bool,
    as_json: bool,
) -> None:
    """Search USER's history for the evidence that answers QUESTION.

    Prints the evidence grouped by session, sessions in time order, with the session dates; the turns a
    search matched are marked with ▶ (the others are the context window around them). The index is
    opened read-only.
    """
    when: str | datetime = now if now is not None else datetime.now(UTC)
    planner = _agent(agent)
    with _open(ctx, data, read_only=True) as mem:
        result = mem.search(
            question, user, now=when, top_k=top_k, window=window, agent=planner, max_tokens=max_tokens
        )
        unknown_user = not result.evidence and mem.count(user) == 0
        index = str(mem.path)
    if unknown_user and not as_json:
        err.print(
            Text(
                f"User {user!r} has no messages in {index}; `refind stats` lists the users it has.", "yellow"
            )
        )
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    _print_header(result)
    _print_evidence(result)
    if trace:
        _print_trace(result)


# ---------------------------------------------------------------------------------------------- rendering


def _print_header(result: refind.SearchResult) -> None:
    sessions = len({e.session_id for e in result.evidence})
    when = refind.format_date(result.now, "weekday") if result.now is not None else "unknown"
    out.print(Text(result.question, style="bold"))
    out.print(
        Text(
            f"user {result.user_id} · asked {when} · {result.agent} agent · "
            f"{_plural(len(result.evidence), 'block')} from {_plural(sessions, 'session')} · "
            f"{result.tokens} tokens",
            style="dim",
        )
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _rounds_text(rounds: Sequence[int]) -> str:
    numbers = sorted({r for r in rounds if r})
    parts = [("round " if len(numbers) == 1 else "rounds ") + ", ".join(map(str, numbers))] if numbers else []
    if 0 in rounds:
        parts.append("completion")
    return "found by " + " and ".join(parts) if parts else ""


def _print_evidence(result: refind.SearchResult, mark: Sequence[str] = ()) -> None:
    """Evidence grouped by session (in time order, as the result holds it); ▶ marks matched turns, ★ the
    turns named in ``mark`` (the demo's expected answers)."""
    if not result.evidence:
        out.print(Text("\nNo evidence found. Try other words, or a later --now.", style="yellow"))
        return
    groups: list[list[refind.Evidence]] = []
    for block in result.evidence:
        if groups and groups[-1][0].session_id == block.session_id:
            groups[-1].append(block)
        else:
            groups.append([block])
    marked = set(mark)
    for blocks in groups:
        first = blocks[0]
        header = Text("\n")
        header.append(
            refind.format_date(first.session_date, "weekday", text=first.session_date_text), style="bold cyan"
        )
        header.append(f"  session {first.session_id}", style="cyan")
        header.append(f"  {_rounds_text([r for b in blocks for r in b.rounds])}", style="dim")
        out.print(header)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=2, no_wrap=True)
        grid.add_column(justify="right", style="dim", no_wrap=True, min_width=3)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for i, block in enumerate(blocks):
            if i:
                grid.add_row("", "", Text("⋮", style="dim"), "")
            for t in block.turns:
                star = t.id in marked
                marker = ("★" if star else "▶") if (t.matched or star) else ""
                style = "bold" if t.matched else ""
                grid.add_row(
                    Text(marker, style="bold green" if star else "bold yellow"),
                    str(t.turn),
                    Text(t.speaker or t.role, style="magenta" if t.role == "user" else "blue"),
                    Text(t.content, style=style + (" green" if star else "")),
                )
        out.print(grid)


def _dates(step: refind.RoundTrace) -> str:
    if step.date_from is None and step.date_to is None:
        return ""
    lo = refind.format_date(step.date_from, "day") if step.date_from is not None else "…"
    hi = refind.format_date(step.date_to, "day") if step.date_to is not None else "…"
    if lo == hi:
        return lo
    if lo[:4] == hi[:4]:
        hi = hi[5:]  # same year: 2024-05-01 → 05-31
    return f"{lo} → {hi}"


def _print_trace(result: refind.SearchResult) -> None:
    """One row per step: searches with their keywords, dates, hits (unread matches), new evidence blocks
    and milliseconds; finish, note and completion steps with their reason."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("round", max_width=16)
    table.add_column("keywords", ratio=1, min_width=16)
    table.add_column("dates", no_wrap=True)
    table.add_column("hits", justify="right", no_wrap=True)
    table.add_column("new", justify="right", no_wrap=True)
    table.add_column("ms", justify="right", no_wrap=True)
    for step in result.trace:
        if step.action in {"search", "browse"}:
            label = step.note or step.action
            keywords = Text(step.keywords or "(none: the newest messages in the dates)")
            if step.action == "browse":
                keywords.stylize("dim")
            table.add_row(
                str(step.round),
                label,
                keywords,
                _dates(step),
                str(step.hits),
                str(step.new_evidence),
                f"{step.ms:.0f}",
            )
        elif step.action == "complete":
            table.add_row(
                "",
                "complete",
                Text(step.note or "", style="dim"),
                "",
                str(step.hits),
                str(step.new_evidence),
                f"{step.ms:.0f}",
            )
        else:
            table.add_row("", step.action, Text(step.note or "", style="dim"), "", "", "", "")
    out.print()
    out.print(table)


# ---------------------------------------------------------------------------------------------- stats, delete


@main.command(context_settings=_CONTEXT)
@_data_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def stats(ctx: click.Context, data: Path | None, as_json: bool) -> None:
    """Messages and users in the index, and messages per user (read-only)."""
    with _open(ctx, data, read_only=True) as mem:
        counts = mem.stats()
    if as_json:
        click.echo(counts.model_dump_json(indent=2))
        return
    out.print(Text.assemble(("Index ", ""), (counts.path, "bold")))
    out.print(f"{_plural(counts.messages, 'message')}, {_plural(counts.users, 'user')}")
    if counts.per_user:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("user")
        table.add_column("messages", justify="right")
        for name, n in sorted(counts.per_user.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(name, str(n))
        out.print(table)


@main.command("delete-user", context_settings=_CONTEXT)
@_data_option
@click.argument("user")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete_user(ctx: click.Context, data: Path | None, user: str, yes: bool) -> None:
    """Delete every message of USER from the index (durably; it cannot be undone)."""
    with _open(ctx, data, read_only=False) as mem:
        n = mem.count(user)
        if n == 0:
            out.print(f"User {user!r} has no messages in {mem.path}; nothing to delete.")
            return
        if not yes and not click.confirm(
            f"Delete all {n} messages of user {user!r} from {mem.path}? This cannot be undone", err=True
        ):
            raise _Failure("nothing was deleted")
        deleted = mem.delete_user(user)
    out.print(f"Deleted {deleted} messages of user {user!r}.")


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
    log_level: str,
    threads: int,
    max_in_flight: int | None,
    search_workers: int | None,
    warm_up_s: float,
    workers: int,
    no_access_log: bool,
    port_file: Path | None,
) -> None:
    """Serve the index over HTTP: Add/Search, the Agent Memory Leaderboard contract.

    Runs until Ctrl-C or SIGTERM (requests in flight finish, then the index is closed). The service
    holds the index's write lock; `refind search` and `refind stats` still work beside it. Settings are
    checked before anything starts; a bad one is a one-line error. `python -m refind.server` is the same
    command. Needs the serve extra: pip install 'refind[serve]'.
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


# ---------------------------------------------------------------------------------------------- mcp


@main.command("mcp", context_settings=_CONTEXT)
@click.option(
    "--user",
    default=DEFAULT_USER,
    show_default=True,
    help="Whose history the tools search (imports of ChatGPT, Claude and Claude Code histories use 'me').",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: the host starts `refind mcp` itself; http: streamable HTTP at http://HOST:PORT/mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (http).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (http).")
@click.option(
    "--allow-add",
    is_flag=True,
    help="Also offer add_messages, so the model can save messages (opens the index for writing).",
)
@_data_option
@click.pass_context
def mcp(
    ctx: click.Context, data: Path | None, user: str, transport: str, host: str, port: int, allow_add: bool
) -> None:
    """Serve the index to an AI agent over the Model Context Protocol.

    Tools: search (a question; several keyword rounds with time filters), keyword_search (words and
    optional dates), read_turns (the turns around a hit) and, with --allow-add, add_messages. Read-only by
    default, so it runs beside `refind import --watch`. Over stdio nothing but the protocol is written to
    stdout; logs go to stderr. Needs the mcp extra: pip install 'refind[mcp]'. Configuration for Claude
    Desktop, Claude Code and other hosts: docs/mcp.md.
    """
    try:
        from refind.mcp import serve as run_mcp
    except ImportError as exc:
        if exc.name is not None and (exc.name == "mcp" or exc.name.startswith("mcp.")):
            raise _Failure("the MCP server needs the mcp SDK: pip install 'refind[mcp]'") from None
        raise
    try:
        run_mcp(
            _location(ctx, data), user_id=user, transport=transport, host=host, port=port, allow_add=allow_add
        )  # type: ignore[arg-type]
    except KeyboardInterrupt:
        ctx.exit(EXIT_INTERRUPTED)


# ---------------------------------------------------------------------------------------------- demo


def _demo_data() -> Path:
    """``examples/data`` of the source tree refind runs from."""
    here = Path(refind.__file__).resolve().parent.parent / "examples" / "data"
    if not (here / "demo_questions.json").is_file():
        raise refind.SetupError(
            f"the demo's chat log is not installed ({here} is missing): run `refind demo` from a clone of "
            "the refind repository (pip install -e .)"
        )
    return here


@main.command(context_settings=_CONTEXT)
@_data_option
@click.option(
    "--index",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to keep the demo index. Default: DATA/demo when --data or $REFIND_DATA is set, "
    "else a temporary directory removed at the end.",
)
@click.option("--rebuild", is_flag=True, help="Re-import the chat log even if the demo index exists.")
@click.option(
    "--max-tokens",
    type=click.IntRange(1),
    default=800,
    show_default=True,
    help="Evidence budget per question: hits first, then the turns around them, long turns cut.",
)
@click.option("--agent", type=click.Choice(_AGENTS), default="heuristic", show_default=True, help=_AGENT_HELP)
@click.pass_context
def demo(
    ctx: click.Context, data: Path | None, index: Path | None, rebuild: bool, max_tokens: int, agent: str
) -> None:
    """Ask five questions of an example chat history and show how refind finds the answers.

    The history is examples/data/chat_history.jsonl: 16 chats between Maya and an assistant, January to
    June 2024, written for this demo. The questions need time filters ("last month"), context windows (the
    answer is in the message after the one that matched) and evidence from two sessions (a change of
    mind). For each question the demo prints the evidence (sessions in time order; ▶ marks the turns a
    search matched, ★ the turns that hold the answer) and the rounds the agent ran.

    The demo never writes into your own index: it keeps its own index in DATA/demo (a separate index in
    a subdirectory) or in a temporary directory.
    """
    data_dir = _demo_data()
    spec = json.loads((data_dir / "demo_questions.json").read_text(encoding="utf-8"))
    log_path = data_dir / spec["log"]
    user, now = spec["user_id"], spec["now"]
    planner = _agent(agent)
    root = _data_dir(ctx, data)
    temporary = index is None and root is None
    if index is not None:
        path = index
    elif root is not None:
        path = root / "demo"
    else:
        path = Path(tempfile.mkdtemp(prefix="refind-demo-"))
    try:
        with refind.Memory(path) as mem:
            _build_demo_index(mem, log_path, user, rebuild=rebuild)
            questions = spec["questions"]
            out.print(
                Text.assemble(
                    ("refind demo: ", "bold"),
                    f"{mem.count(user)} messages between {spec['who']}, {spec['period']} "
                    f"({log_path.name}). Each question is asked as of {refind.format_date(_ms(now), 'weekday')}.\n",
                    ("▶", "bold yellow"),
                    " a turn a search matched   ",
                    ("★", "bold green"),
                    " a turn with the answer   other turns: the context window around a match",
                )
            )
            found = 0
            total_ms = 0.0
            for i, q in enumerate(questions, 1):
                out.print()
                out.print(Rule(f"Question {i} of {len(questions)}", style="cyan"))
                out.print(Text(q["shows"], style="italic"))
                out.print()
                result = mem.search(q["question"], user, now=now, agent=planner, max_tokens=max_tokens)
                total_ms += sum(s.ms for s in result.trace)
                _print_header(result)
                _print_evidence(result, mark=q["evidence"])
                _print_trace(result)
                shown = {t.id for e in result.evidence for t in e.turns}
                ok = all(i in shown for i in q["evidence"])
                found += ok
                out.print()
                out.print(
                    Text.assemble(
                        ("Answer: ", "bold"),
                        q["answer"],
                        (
                            "  ★ in the evidence" if ok else "  ✗ not in the evidence",
                            "green" if ok else "red",
                        ),
                    )
                )
        out.print()
        out.print(Rule(style="cyan"))
        out.print(
            f"{found} of {len(questions)} answers are in the evidence (budget {max_tokens} tokens per "
            f"question); the rounds took {total_ms:.0f} ms in all."
        )
        day = now[:10]
        if temporary:
            out.print("The demo index was temporary. To keep it and ask your own questions:")
            commands = [
                "refind --data ./refind-data demo",
                f"refind --data ./refind-data/demo search {_ASK} --user {user} --now {day}",
            ]
        else:
            out.print(
                f"The demo index is kept in {path} (delete the directory to remove it). Ask your own:",
                soft_wrap=True,
            )
            commands = [f"refind --data {path} search {_ASK} --user {user} --now {day} --trace"]
        for command in commands:
            out.print("  " + command, soft_wrap=True)
        out.print()
        out.print(
            Text("Now your own history", style="bold")
            + Text(" (stored as user 'me'; docs/getting-started.md):")
        )
        width = max(len(command) for command, _ in _OWN_HISTORY) + 2
        for command, what in _OWN_HISTORY:
            out.print(Text.assemble(f"  {command:<{width}}", (f"# {what}", "dim")), soft_wrap=True)
    finally:
        if temporary:
            shutil.rmtree(path, ignore_errors=True)


_ASK = '"what did the vet give Pixel?"'
_OWN_HISTORY = [
    ("refind import ~/Downloads/chatgpt-export.zip", "a ChatGPT data export (or its conversations.json)"),
    ("refind import ~/Downloads/claude-export.zip", "a Claude.ai data export"),
    ("refind import ~/.claude/projects --watch", "Claude Code session logs, kept current"),
    ('refind search "what did we decide about the cache?" --user me', "ask it"),
    ("refind mcp", "let Claude Desktop, Claude Code or Cursor search it (docs/mcp.md)"),
]


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _build_demo_index(mem: refind.Memory, log_path: Path, user: str, *, rebuild: bool) -> None:
    expected = sum(len(s.messages) for s in iter_sessions(log_path, "jsonl"))
    stored = mem.stats()
    others = sorted(set(stored.per_user) - {user})
    if others:
        raise refind.InvalidInput(
            f"{mem.path} holds messages of other users ({', '.join(others[:3])}), so it is not a demo "
            "index; pass --index with another directory"
        )
    if stored.messages == expected and not rebuild:
        err.print(
            f"Using the demo index at {mem.path} ({expected} messages; --rebuild re-imports them).",
            soft_wrap=True,
        )
        return
    if stored.messages:
        mem.delete_user(user)
    started = time.perf_counter()
    result = mem.import_sessions(iter_sessions(log_path, "jsonl"))
    err.print(
        f"Imported {result.added} messages in {result.sessions} sessions from {log_path.name} into "
        f"{mem.path} in {time.perf_counter() - started:.1f} s.",
        soft_wrap=True,
    )


if __name__ == "__main__":
    main()
