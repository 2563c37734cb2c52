"""``refind hooks install claude-code``: keep Claude Code sessions imported as they end."""

from __future__ import annotations

from pathlib import Path

import click

from refind.cli._app import _CONTEXT, _data_dir, _Failure, main
from refind.cli._terminal import out


@main.group(context_settings=_CONTEXT)
def hooks() -> None:
    """Import sessions as they end, through an agent host's hooks (Claude Code)."""


_SETTINGS_HELP = "Claude Code's settings file to edit. Default: ~/.claude/settings.json."


@hooks.command("install", context_settings=_CONTEXT)
@click.argument("host", type=click.Choice(["claude-code"]))
@click.option(
    "--settings", type=click.Path(dir_okay=False, path_type=Path), default=None, help=_SETTINGS_HELP
)
@click.option(
    "--projects",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The Claude Code logs to import. Default: ~/.claude/projects.",
)
@click.pass_context
def install(ctx: click.Context, host: str, settings: Path | None, projects: Path | None) -> None:
    """Add a SessionEnd hook to Claude Code's settings that runs `refind import` on its logs, into the index
    of --data (or the default one). Other settings and hooks are kept; installing again changes nothing.

    \b
    Examples:
      refind hooks install claude-code
      refind --data ~/refind-index hooks install claude-code --settings .claude/settings.json
    """
    from refind.hooks import claude_code_command, default_log, default_settings, install_claude_code

    if ctx.find_root().meta.get("refind.store"):
        raise _Failure("the hook imports into an index directory: give --data DIR, not --store")
    default_log().parent.mkdir(parents=True, exist_ok=True)
    command = claude_code_command(_data_dir(ctx), projects)
    where = settings or default_settings()
    changed = install_claude_code(command, where)
    out.print(f"{'Installed' if changed else 'Already installed:'} the SessionEnd hook in {where}:")
    out.print(f"  {command}", soft_wrap=True)


@hooks.command("remove", context_settings=_CONTEXT)
@click.argument("host", type=click.Choice(["claude-code"]))
@click.option(
    "--settings", type=click.Path(dir_okay=False, path_type=Path), default=None, help=_SETTINGS_HELP
)
def remove(host: str, settings: Path | None) -> None:
    """Take refind's hook out of Claude Code's settings (other hooks are kept)."""
    from refind.hooks import default_settings, remove_claude_code

    where = settings or default_settings()
    removed = remove_claude_code(where)
    out.print(f"Removed refind's hook from {where}." if removed else f"No refind hook in {where}.")
