"""The ``refind`` group: its options, the exit codes, one-line errors, and the helpers every command
shares to open the index (``--data`` / ``--store``) and pick an agent."""

from __future__ import annotations

import importlib
import os
from datetime import tzinfo
from pathlib import Path
from typing import Any

import click

import refind
from refind.cli._terminal import (
    _one_line,
    _setup_logging,
)

EXIT_ERROR = 1  # a RefindError, or a confirmation declined
EXIT_USAGE = 2  # click's usage errors
EXIT_INTERNAL = 3  # anything unexpected (a bug): one line, or the traceback with REFIND_DEBUG=1
EXIT_INTERRUPTED = 130

DEFAULT_USER = (
    "me"  # refind.loaders.DEFAULT_USER (tests/test_daemon.py checks): not imported, it loads every reader
)
_AGENTS = ("heuristic", "llm")
_AGENT_HELP = (
    "Who plans the rounds: heuristic (offline) or llm (an OpenAI-compatible model: set REFIND_LLM_API_KEY "
    "or OPENAI_API_KEY, or REFIND_LLM_BASE_URL)."
)
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Failure(click.ClickException):
    """A one-line error with a chosen exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click reads it per instance


class _Group(click.Group):
    """Turns every refind error into one line on stderr and a stable exit code; lists the commands in the
    order a newcomer uses them."""

    order = ("demo", "import", "search", "mcp", "serve", "stats", "delete-user")
    lazy: dict[str, str] = {}  # command -> the module that registers it, imported when the command is used

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(self.commands) | set(self.lazy)
        known = [name for name in self.order if name in names]
        return known + sorted(names - set(known))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            importlib.import_module(self.lazy[cmd_name])
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except refind.RefindError as exc:
            if refind.Settings.debug_enabled():
                raise
            raise _Failure(_one_line(str(exc))) from None
        except Exception as exc:
            if refind.Settings.debug_enabled():
                raise
            raise _Failure(
                f"unexpected {type(exc).__name__}: {_one_line(str(exc))} "
                "(this is a bug; REFIND_DEBUG=1 shows the traceback)",
                EXIT_INTERNAL,
            ) from None


# ---------------------------------------------------------------------------------------------- the group

_SET_HELP = (
    "Change a setting for this command: NAME=VALUE, NAME a field of refind.Settings (top_k, window, overfetch, "
    "max_rounds, breadth_k, feedback, ...: docs/configuration.md), VALUE as its REFIND_NAME variable would "
    "hold it; checked before anything runs. Repeatable."
)


def _apply_settings(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> None:
    """``--set NAME=VALUE``: checked against :class:`refind.Settings`, then put in this process's environment
    as the setting's variable, so the memory this command opens, the processes it starts (the index's
    daemon, the service's workers) and the daemon's identity all see it as they see ``REFIND_*``."""
    for item in values:
        name, sep, text = item.partition("=")
        name = name.strip().lower().replace("-", "_")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", ctx, param)
        try:
            refind.Settings.parse(name, text)
        except refind.InvalidInput as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        os.environ[refind.Settings.variable(name)] = text


def _set_option(command: Any) -> Any:
    """``--set NAME=VALUE`` (repeatable) on the group and on the commands that search."""
    return click.option(
        "--set",
        "settings",
        multiple=True,
        metavar="NAME=VALUE",
        expose_value=False,
        callback=_apply_settings,
        help=_SET_HELP,
    )(command)


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
@click.option(
    "--tz",
    "tz",
    default=None,
    envvar="REFIND_TZ",
    show_envvar=True,
    help="Time zone the dates are shown in: an IANA name (Europe/Paris, America/Los_Angeles, UTC) or local. "
    "Default: $TZ, else this machine's. Stored times are UTC whatever it is.",
)
@_set_option
@click.option("-v", "--verbose", is_flag=True, help="Also show the library's info messages on stderr.")
@click.version_option(refind.__version__, "--version", prog_name="refind")
@click.pass_context
def main(ctx: click.Context, data: Path | None, store: str | None, tz: str | None, verbose: bool) -> None:
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
    ctx.meta["refind.tz"] = tz
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


def _no_daemon_option(command: Any) -> Any:
    """``--no-daemon``: run in this process instead of asking the index's background process."""
    return click.option(
        "--no-daemon",
        "no_daemon",
        is_flag=True,
        help="Run in this process, not in the index's background search process (also: REFIND_DAEMON=0).",
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


def _open(ctx: click.Context, data: Path | None, *, read_only: bool, **options: Any) -> refind.Memory:
    """The memory at ``--data``/``--store``; ``options`` go to :class:`refind.Memory` (``embedder``,
    ``embed_in_background``)."""
    return refind.Memory(_location(ctx, data), read_only=read_only, **options)


def _zone(ctx: click.Context) -> tzinfo:
    """The time zone dates are shown in: ``--tz`` (or ``$REFIND_TZ``), else ``$TZ``, else this machine's."""
    return refind.time_zone(ctx.find_root().meta.get("refind.tz"))


def _agent(name: str) -> refind.Agent | None:
    """None means Memory.search's default (the heuristic agent of the settings). The LLM agent's heuristic
    rounds (first, and its fallback) are that agent too."""
    if name != "llm":
        return None
    return refind.LLMAgent(fallback=refind.HeuristicAgent.from_settings(refind.Settings.from_env()))
