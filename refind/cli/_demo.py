"""``refind demo``: builds an index from the example history and asks it questions (offline, no key)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import click
from rich.rule import Rule
from rich.text import Text

import refind
from refind.cli._app import (
    _AGENT_HELP,
    _AGENTS,
    _CONTEXT,
    _agent,
    _data_dir,
    _data_option,
    main,
)
from refind.cli._terminal import (
    _print_evidence,
    _print_header,
    _print_trace,
    err,
    out,
)
from refind.loaders import iter_sessions

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
        if shutil.which("refind") is None:
            here = Path(sys.executable).parent / "refind"
            also = f" (or run {here} as it is)" if here.is_file() else ""
            out.print(
                Text(
                    f"`refind` is not on your PATH: `make install` in the clone puts it there{also}.",
                    "yellow",
                ),
                soft_wrap=True,
            )
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
        mem.delete_user(user, tombstone=False)  # a rebuild: the import below brings them back
    started = time.perf_counter()
    result = mem.import_sessions(iter_sessions(log_path, "jsonl"))
    err.print(
        f"Imported {result.added} messages in {result.sessions} sessions from {log_path.name} into "
        f"{mem.path} in {time.perf_counter() - started:.1f} s.",
        soft_wrap=True,
    )
