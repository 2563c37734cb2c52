"""Terminal output, the one room that owns rich: the consoles, library log lines on stderr, and how a
search result (header, evidence blocks, trace) is drawn.

Nothing stored writes to the terminal: the consoles show every control character of the text they print
(C0 but tab and newline, DEL, C1: an escape sequence in a message) written out as ``\\x1b``; JSON printed
for ``--json`` and ``export`` keeps the text exact, with DEL and C1 as ``\\u`` escapes too (JSON escapes C0)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import tzinfo

import click
from rich import box
from rich.console import Console
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

import refind

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0))}
_JSON_CONTROL = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0))}


def visible(text: str) -> str:
    """``text`` with its control characters but tab and newline written out (``\\x1b``, ``\\x9b``)."""
    return text.translate(_CONTROL)


def json_text(text: str) -> str:
    """JSON text with DEL and the C1 controls as ``\\u`` escapes (JSON escapes C0 itself): the same value,
    nothing a terminal acts on."""
    return text.translate(_JSON_CONTROL)


class _Console(Console):
    """A rich console that writes the control characters of what it prints as ``\\x1b`` (its own styles
    and control codes are segments of their own and go out as they are)."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style)
            for segment in buffer
        )


out = _Console(highlight=False, soft_wrap=False)
err = _Console(stderr=True, highlight=False)


def _one_line(text: str, limit: int = 500) -> str:
    line = visible(" ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _EchoHandler(logging.Handler):
    """Library warnings as ``refind: warning: ...`` lines on the current stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(visible(f"refind: {record.levelname.lower()}: {record.getMessage()}"), err=True)


def _setup_logging(verbose: bool) -> None:
    logger = logging.getLogger("refind")
    for handler in [h for h in logger.handlers if isinstance(h, _EchoHandler)]:
        logger.removeHandler(handler)
    logger.addHandler(_EchoHandler())
    logger.setLevel(logging.INFO if verbose else logging.WARNING)


# ---------------------------------------------------------------------------------------------- rendering


def _print_header(
    result: refind.SearchResult, tokens: int | None = None, *, tz: tzinfo | None = None
) -> None:
    """The question and one line about the result; ``tokens`` is ``result.tokens`` when the caller has it
    already (the daemon counts them: the client then never loads the tokenizer). Dates in ``tz`` (UTC:
    None)."""
    sessions = len({e.session_id for e in result.evidence})
    when = refind.format_date(result.now, "weekday", tz=tz) if result.now is not None else "unknown"
    out.print(Text(result.question, style="bold"))
    out.print(
        Text(
            f"user {result.user_id} · asked {when} · {result.agent} agent · "
            f"{_plural(len(result.evidence), 'block')} from {_plural(sessions, 'session')} · "
            f"{result.tokens if tokens is None else tokens} tokens",
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


def _print_evidence(
    result: refind.SearchResult,
    mark: Sequence[str] = (),
    *,
    now_given: bool = True,
    tz: tzinfo | None = None,
    titles: dict[str, str] | None = None,
) -> None:
    """Evidence grouped by session (in time order, as the result holds it); ▶ marks matched turns, ★ the
    turns named in ``mark`` (the demo's expected answers). A session's header shows the dates of its
    shown turns (first to last, in ``tz``: UTC when None), its source and title (or, quoted, the one
    ``titles`` derived from its first message)."""
    if not result.evidence:
        later = ", or a later --now" if now_given else ""
        out.print(Text(f"\nNo evidence found. Try other words{later}.", style="yellow"))
        return
    groups: list[list[refind.Evidence]] = []
    for block in result.evidence:
        if groups and (groups[-1][0].session_id, groups[-1][0].standing) == (
            block.session_id,
            block.standing,
        ):
            groups[-1].append(block)
        else:
            groups.append([block])
    marked = set(mark)
    for blocks in groups:
        first = blocks[0]
        header = Text("\n")
        if first.standing:  # offered beside the evidence: what the person said that stands
            what = {"fact": "standing fact", "earlier fact": "standing fact, since changed"}.get(
                first.standing_kind or "", "standing instruction"
            )
            header.append(f"{what} · ", style="bold magenta")
        header.append(
            refind.format_date(first.session_date, "weekday", text=first.session_date_text, tz=tz),
            style="bold cyan",
        )
        last_ts = max(t.timestamp for b in blocks for t in b.turns)
        if refind.format_date(last_ts, "day", tz=tz) != refind.format_date(first.session_date, "day", tz=tz):
            header.append(f" - {refind.format_date(last_ts, 'weekday', tz=tz)}", style="bold cyan")
        header.append(f"  session {first.session_id}", style="cyan")
        derived = (titles or {}).get(first.session_id) if not first.title else None
        title = first.title or (f"“{derived}”" if derived else None)
        if first.source or title:
            header.append("  " + " · ".join(v for v in (first.source, title) if v), style="bold")
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
    """A round's time filter, as the days it spans (UTC: the days the filter was computed in)."""
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
