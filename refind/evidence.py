"""Evidence ordering and rendering under a token budget (DESIGN §6)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from refind.models import Evidence, Turn
from refind.tokens import count_tokens, truncate_to_tokens

__all__ = [
    "CONTEXT_TOKENS",
    "by_relevance",
    "fit_blocks",
    "format_session_date",
    "merge_blocks",
    "order_evidence",
    "render",
    "render_block",
]


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")


def format_session_date(ms: int, text: str | None = None) -> str:
    """The session date at the granularity the source gave it: human text ("1:56 pm on 8 May, 2023",
    "March 2024") as written; a machine timestamp (epoch ms, ISO 8601) as a day, plus the UTC time of day
    when the source had one."""
    if text and not _ISO.match(text.strip()) and not text.strip().isdigit():
        return text
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    iso = _ISO.match(text.strip()) if text is not None else None
    date_only = iso is not None and iso.group(1) is None
    if date_only or (text is None and dt.hour == dt.minute == dt.second == 0):
        return f"{dt.day} {dt:%B %Y}"
    return f"{dt.day} {dt:%B %Y}, {dt:%H:%M} UTC"


def order_evidence(blocks: Iterable[Evidence]) -> list[Evidence]:
    """Group by session, sessions in time order (by their earliest block), blocks and turns in order."""
    blocks = list(blocks)
    first: dict[str, tuple[int, int]] = {}
    for b in blocks:
        key = (b.session_date, b.first_turn)
        if b.session_id not in first or key < first[b.session_id]:
            first[b.session_id] = key
    return sorted(blocks, key=lambda b: (first[b.session_id], b.session_id, b.first_turn))


def merge_blocks(a: Evidence, b: Evidence) -> Evidence:
    """One block for two overlapping or adjacent blocks of the same session."""
    turns: dict[int, Turn] = {t.turn: t for t in a.turns}
    for t in b.turns:
        if t.turn in turns:
            turns[t.turn] = turns[t.turn].model_copy(update={"matched": turns[t.turn].matched or t.matched})
        else:
            turns[t.turn] = t
    ordered = [turns[k] for k in sorted(turns)]
    return Evidence(
        id=f"{a.session_id}#{ordered[0].turn}-{ordered[-1].turn}",
        session_id=a.session_id,
        session_date=min(a.session_date, b.session_date),
        session_date_text=a.session_date_text if a.session_date <= b.session_date else b.session_date_text,
        turns=ordered,
        score=max(a.score, b.score),
        rounds=sorted(set(a.rounds) | set(b.rounds)),
        noted=a.noted or b.noted,
    )


def _speaker(t: Turn) -> str:
    return t.speaker if t.speaker else t.role


CONTEXT_TOKENS = 150
"""Default cap on a context turn (a window turn that no search hit) when rendering; hits stay whole."""


def render_block(block: Evidence, *, header: bool = True, context_tokens: int | None = CONTEXT_TOKENS) -> str:
    """One block: a header with the session and its date, then ``speaker: text`` lines (hits marked ``*``).

    Context turns longer than ``context_tokens`` are cut (with an ellipsis): they are there to show what
    surrounds a hit, and in assistant-heavy logs one of them can be thousands of tokens. ``None`` keeps
    every turn whole."""
    lines = []
    if header:
        lines.append(
            f"[session {block.session_id} | {format_session_date(block.session_date, block.session_date_text)}]"
        )
    for t in block.turns:
        mark = "* " if t.matched else ""
        text = t.content
        if context_tokens is not None and not t.matched:
            text = truncate_to_tokens(text, context_tokens)
        lines.append(f"{mark}{_speaker(t)}: {text}")
    return "\n".join(lines)


def by_relevance(blocks: Iterable[Evidence]) -> list[Evidence]:
    """Blocks best first (ties: earlier round, then earlier time)."""
    return sorted(
        blocks, key=lambda e: (-e.score, e.rounds[0] if e.rounds else 0, e.session_date, e.first_turn)
    )


def fit_blocks(
    blocks: Sequence[Evidence], max_tokens: int, *, context_tokens: int | None = CONTEXT_TOKENS
) -> list[Evidence]:
    """The most relevant blocks whose rendering fits in ``max_tokens`` (whole blocks, never half a turn):
    blocks are taken best first while they fit."""
    blocks = list(blocks)
    if count_tokens(_render_ordered(order_evidence(blocks), context_tokens)) <= max_tokens:
        return blocks
    chosen: list[Evidence] = []
    used = 0
    for block in by_relevance(blocks):
        cost = count_tokens(render_block(block, context_tokens=context_tokens)) + 2
        if used + cost <= max_tokens:
            chosen.append(block)
            used += cost
    while chosen and count_tokens(_render_ordered(order_evidence(chosen), context_tokens)) > max_tokens:
        chosen.remove(min(chosen, key=lambda e: e.score))
    return chosen


def render(
    blocks: Sequence[Evidence], max_tokens: int | None = None, *, context_tokens: int | None = CONTEXT_TOKENS
) -> str:
    """All blocks in session and time order; over ``max_tokens``, the least relevant blocks are dropped
    first (see :func:`fit_blocks`). Consecutive blocks of one session share its header; a gap between
    them is shown as ``...``."""
    if max_tokens is not None:
        blocks = fit_blocks(blocks, max_tokens, context_tokens=context_tokens)
    return _render_ordered(order_evidence(blocks), context_tokens)


def _render_ordered(blocks: Sequence[Evidence], context_tokens: int | None = CONTEXT_TOKENS) -> str:
    parts: list[str] = []
    previous: Evidence | None = None
    for block in blocks:
        if previous is not None and previous.session_id == block.session_id:
            parts.append("...\n" + render_block(block, header=False, context_tokens=context_tokens))
        else:
            parts.append(("\n" if parts else "") + render_block(block, context_tokens=context_tokens))
        previous = block
    return "\n".join(parts)
