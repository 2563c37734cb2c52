"""Evidence for a reader: ordering, rendering, and packing under a token budget.

The design: docs/design.md § "Evidence".

Pure functions over the models (no index, no search), so :class:`refind.SearchResult` renders and packs
itself and every front (CLI, HTTP service, benchmarks) gets exactly what ``to_text`` gives.

Rendering: a block is a header ``[session <id> | <date>]`` (then ``| <source> | <title>`` when the session has
them), then one ``speaker: text`` line per turn, the
turns a search hit marked ``* ``. A hit longer than ``hit_tokens`` is cut to the passage around the words
that matched; a context turn (the window around a hit) longer than ``context_tokens`` is cut keeping the
side nearest its hit. A cut is marked ``[…]``.

Packing for a budget of B tokens (:func:`pack`) spends the tokens on what answers first, in tiers of
``POLICY.pack_tier`` sessions by fused relevance (the best five sessions get their hits and then their context
before the next five get anything, so weak hits never crowd out the best context):

1. every hit turn of the tier, before any context: hits ordered across sessions by :func:`hit_order` (the
   hit's own fused score fused with its session's rank), each with its session header and date, a long
   hit cut to the passage around its matched words (``POLICY.passage_tokens``, at most B/8, the cut marked), so
   one long assistant answer cannot starve the hits after it;
2. then the tier's context turns, block by block in the order of their best hit, each block's nearest
   its hits first (distance 1 around every hit of the block, then 2...), a long one first cut to the
   passage on its hit's side (``POLICY.context_passage_tokens``), so that the context of the first places does
   not take the room of the hits of the next tiers;
3. then, with what every tier left, the cut hits grow towards their full length (at most ``hit_tokens``),
   and after them the cut context turns (at most ``context_tokens``);
4. the result is grouped by session and time again; a block that does not fit whole is trimmed, not
   dropped, and when anything fits at all the result is never empty.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal

from refind.fusion import two_rank_order
from refind.models import MAX_QUERY_TERMS, Evidence, Turn
from refind.policy import POLICY
from refind.tokens import count_tokens, count_tokens_upto, slice_tokens

__all__ = [
    "CUT",
    "by_relevance",
    "excerpt",
    "DateForm",
    "format_date",
    "format_range",
    "hit_order",
    "match_spans",
    "order_evidence",
    "pack",
    "pack_for",
    "render",
    "render_block",
    "rendered_tokens",
    "time_zone",
]

CUT = "[…]"
"""Marks where a turn was cut."""

Keep = Literal["match", "head", "tail"]

# ---------------------------------------------------------------------------------------------- dates

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")

DateForm = Literal["session", "weekday", "day", "minute"]
"""How :func:`format_date` writes a date: ``session`` ("8 May 2023", "8 May 2023, 14:30 UTC", or the
source's own human text), ``weekday`` (the same with the weekday: "Mon 8 May 2023"), ``day``
("2023-05-08") and ``minute`` ("2023-05-08 14:30 UTC")."""
_FORMS = ("session", "weekday", "day", "minute")


def format_date(
    ms: int, form: DateForm = "session", *, text: str | None = None, tz: tzinfo | None = None
) -> str:
    """A date for people, the one date formatter of refind (evidence headers, the CLI, tool messages):
    in UTC, or in the time zone ``tz`` when one is given (:func:`time_zone`; the CLI and the page pass the
    person's, the library's renderings for readers stay in UTC).

    ``session`` and ``weekday`` keep the granularity the source gave: human ``text`` ("1:56 pm on 8 May,
    2023", "March 2024") is shown as written; a machine timestamp (epoch ms, ISO 8601 ``text``) as a day,
    plus the time of day when the source had one (a date-only ISO text, or no text and midnight UTC, is a
    day). ``day`` and ``minute`` are ISO-like and ignore ``text``. A time at exactly midnight UTC is
    taken for a date without a time of day and shown in UTC whatever ``tz`` (converting it would move it
    to another day).
    """
    if form not in _FORMS:
        raise ValueError(f"unknown date form {form!r}; expected one of {', '.join(_FORMS)}")
    if tz is None or ms % 86_400_000 == 0:
        return _format_date(ms, form, text)
    return _render_date(datetime.fromtimestamp(ms / 1000, tz), form, text)


@functools.lru_cache(maxsize=4096)
def _format_date(ms: int, form: DateForm, text: str | None) -> str:
    """:func:`format_date` in UTC, remembered: every evidence block's header formats its session's date,
    and a search's rounds show the same sessions again (it was 2% of a search's time)."""
    return _render_date(datetime.fromtimestamp(ms / 1000, UTC), form, text)


def _zone_name(dt: datetime) -> str:
    name = dt.tzname()
    if name and name[0] in "+-":  # a zone without an abbreviation ("+04"): the offset, as UTC+4
        name = f"UTC{name}"
    return name or "UTC"


def _render_date(dt: datetime, form: DateForm, text: str | None) -> str:
    if form == "day":
        return f"{dt:%Y-%m-%d}"
    if form == "minute":
        return f"{dt:%Y-%m-%d %H:%M} {_zone_name(dt)}"
    stripped = text.strip() if text is not None else None
    if text and stripped is not None and not _ISO.match(stripped) and not stripped.isdigit():
        return text
    iso = _ISO.match(stripped) if stripped is not None else None
    date_only = iso is not None and iso.group(1) is None
    day = f"{dt.day} {dt:%B %Y}" if form == "session" else f"{dt:%a} {dt.day} {dt:%b %Y}"
    if date_only or (text is None and dt.hour == dt.minute == dt.second == 0 and not dt.utcoffset()):
        return day
    return f"{day}, {dt:%H:%M} {_zone_name(dt)}"


def format_range(first: int, last: int, *, tz: tzinfo | None = None) -> str:
    """A compact period from ``first`` to ``last`` (epoch ms), in UTC or ``tz``: "Thu 12 Jun 2025, 08:00–09:30
    PDT" within a day, "12–14 Jun 2025" within a month, "30 May – 2 Jun 2025" within a year, else "30 Dec 2024
    – 2 Jan 2025". Dates without a time of day (midnight UTC) show as days, as :func:`format_date` does."""
    lo, hi = min(first, last), max(first, last)
    a, b = _local(lo, tz), _local(hi, tz)
    timed = lo % 86_400_000 != 0 or hi % 86_400_000 != 0
    if a.date() == b.date():
        day = f"{a:%a} {a.day} {a:%b %Y}"
        if not timed:
            return day
        if lo == hi or f"{a:%H:%M}" == f"{b:%H:%M}":
            return f"{day}, {a:%H:%M} {_zone_name(b)}"
        return f"{day}, {a:%H:%M}–{b:%H:%M} {_zone_name(b)}"
    if (a.year, a.month) == (b.year, b.month):
        return f"{a.day}–{b.day} {b:%b %Y}"
    if a.year == b.year:
        return f"{a.day} {a:%b} – {b.day} {b:%b %Y}"
    return f"{a.day} {a:%b %Y} – {b.day} {b:%b %Y}"


def _local(ms: int, tz: tzinfo | None) -> datetime:
    """``ms`` as a datetime in ``tz`` (UTC when None, or when it is exactly midnight UTC: a date)."""
    zone = UTC if tz is None or ms % 86_400_000 == 0 else tz
    return datetime.fromtimestamp(ms / 1000, zone)


def time_zone(name: str | None = None) -> tzinfo:
    """The time zone named ``name`` (an IANA name such as ``Europe/Paris``, ``UTC``, or ``local``: this
    machine's); None: ``$TZ`` when it names one, else this machine's zone. An unknown name is an
    :class:`~refind.InvalidInput` that says what is expected."""
    from dateutil.tz import tzlocal

    if name is None:
        env = os.environ.get("TZ", "").strip().lstrip(":")
        if env:
            try:
                return _named_zone(env)
            except ValueError:
                pass  # a POSIX rule string ("EST5EDT,M3.2.0,M11.1.0"): the C library's local time reads it
        return tzlocal()
    given = name.strip()
    if given.lower() == "local":
        return tzlocal()
    try:
        return _named_zone(given)
    except ValueError:
        from refind.errors import InvalidInput

        shown = given if len(given) <= 80 else given[:79] + "…"
        raise InvalidInput(
            f"time zone {shown!r} is unknown: give an IANA name such as Europe/Paris, America/Los_Angeles or "
            "UTC, or local (this machine's)",
            field="tz",
        ) from None


def _named_zone(name: str) -> tzinfo:
    from zoneinfo import ZoneInfo

    if name.upper() in ("UTC", "Z", "GMT") or name in ("Etc/UTC", "Etc/GMT"):
        return UTC
    if not name or len(name) > 100 or ".." in name or name.startswith("/"):
        raise ValueError(name)
    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise ValueError(name) from exc


# ---------------------------------------------------------------------------------------------- matches


def match_spans(text: str, terms: Sequence[str]) -> list[tuple[int, int]]:
    """Where the analyzed query ``terms`` (an evidence block's ``terms``) occur in ``text``: (start, end)
    of each word they match, found as :func:`excerpt` finds them (a stem at the start of a word, CJK
    anywhere; a stem ending in "e" also without it, so "give" finds "giving"), in order and without
    overlaps, for highlighting."""
    spans: list[tuple[int, int]] = []
    roots = _term_roots(terms)
    # a stem ending in "e" is found by its root too, as "giving" by "give" (Porter keeps "give", not "giv")
    roots += [r[:-1] for r in roots if r.isascii() and len(r) > 3 and r.endswith("e")]
    for pos, index in _occurrences(text, roots):
        root = roots[index]
        end = pos + len(root)
        if root.isascii():
            while end < len(text) and text[end].isalnum():
                end += 1
        if spans and pos < spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((pos, end))
    return spans


# ---------------------------------------------------------------------------------------------- order


def order_evidence(blocks: Iterable[Evidence]) -> list[Evidence]:
    """Group by session, sessions in time order (by their earliest block), blocks and turns in order; standing
    instructions (``standing`` blocks) first, in time order. A lasting fact's block whose sentence the
    evidence already shows in its session is left out: the fact is shown once."""
    blocks = _shown_once(list(blocks))
    first: dict[tuple[bool, str], tuple[int, int]] = {}
    for b in blocks:
        key = (b.session_date, b.first_turn)
        group = (not b.standing, b.session_id)
        if group not in first or key < first[group]:
            first[group] = key
    return sorted(
        blocks,
        key=lambda b: (not b.standing, first[(not b.standing, b.session_id)], b.session_id, b.first_turn),
    )


def _shown_once(blocks: list[Evidence]) -> list[Evidence]:
    """``blocks`` without the lasting facts' blocks (``standing_kind`` set) whose message another block
    shows with the fact's sentence in what it shows (a long turn may be cut to another passage)."""
    if not any(b.standing_kind for b in blocks):
        return blocks
    shown = {t.id: t.content for b in blocks if not b.standing for t in b.turns}
    return [
        b
        for b in blocks
        if not b.standing_kind or not all(t.id in shown and t.content in shown[t.id] for t in b.turns)
    ]


def by_relevance(blocks: Iterable[Evidence]) -> list[Evidence]:
    """Blocks best first (ties: earlier round, then earlier time)."""
    return sorted(
        blocks, key=lambda e: (-e.score, e.rounds[0] if e.rounds else 0, e.session_date, e.first_turn)
    )


# ---------------------------------------------------------------------------------------------- excerpts


def _term_roots(terms: Sequence[str]) -> list[str]:
    """What to look for in a text for each analyzed (lowercased, stemmed) term: a stem is found at the
    start of the words it came from ("hous" in "houses"); a Porter stem ending in "i" by its root, so that
    "happi" finds "happy"; CJK bigrams as written."""
    roots = []
    for term in list(dict.fromkeys(t for t in terms if t))[:MAX_QUERY_TERMS]:
        roots.append(term[:-1] if term.isascii() and len(term) > 3 and term.endswith("i") else term)
    return roots


def _occurrences(text: str, roots: Sequence[str], limit: int = 2000) -> list[tuple[int, int]]:
    """(position, term index) of each root found at a word start (CJK: anywhere), by position. ``str.find``
    on the lowercased text keeps a megabyte-long message cheap to scan."""
    lowered = text.lower()
    haystack = lowered if len(lowered) == len(text) else text  # (lowercasing may change lengths)
    found: list[tuple[int, int]] = []
    for index, root in enumerate(roots):
        pos = haystack.find(root)
        n = 0
        while pos >= 0 and n < limit:
            if not root.isascii() or pos == 0 or not haystack[pos - 1].isalnum():
                found.append((pos, index))
                n += 1
            pos = haystack.find(root, pos + 1)
    found.sort()
    return found


def _match_center(text: str, terms: Sequence[str], width: int) -> int | None:
    """The character position at the middle of the ``width``-character window that holds the most
    distinct terms (then the most matches; then the earliest), or None when no term occurs."""
    hits = _occurrences(text, _term_roots(terms))
    if not hits:
        return None
    best = (0, 0, 0)  # (distinct, count, -start index)
    best_span = (hits[0][0], hits[0][0])
    counts: dict[int, int] = {}
    lo = 0
    for hi, (pos, term) in enumerate(hits):
        counts[term] = counts.get(term, 0) + 1
        while pos - hits[lo][0] > width:
            t = hits[lo][1]
            counts[t] -= 1
            if not counts[t]:
                del counts[t]
            lo += 1
        score = (len(counts), hi - lo + 1, -lo)
        if score > best:
            best, best_span = score, (hits[lo][0], pos)
    return (best_span[0] + best_span[1]) // 2


def excerpt(text: str, max_tokens: int | None, *, terms: Sequence[str] = (), keep: Keep = "match") -> str:
    """``text`` whole when it fits in ``max_tokens`` tokens, else a passage of it that does (the
    ``[…]`` marks included): around the densest occurrence of ``terms`` (``keep="match"``; the start when
    none occurs), or its start (``head``) or end (``tail``). ``None`` keeps every text whole. The cost is
    bounded by the passage, not the text: a megabyte-long message costs about what a short one does."""
    if max_tokens is None or len(text) <= max_tokens:  # a token is at least one character
        return text
    if len(text) <= 8 * max_tokens and count_tokens(text) <= max_tokens:
        return text
    width = 6 * max_tokens  # characters comfortably holding max_tokens tokens
    if keep == "head":
        center = 0
    elif keep == "tail":
        center = len(text)
    else:
        found = _match_center(text, terms, width // 2)
        center = found if found is not None else 0
    room = max(max_tokens - 2 * count_tokens(CUT + " "), 1)
    lo = max(0, min(center - width // 2, len(text) - width))
    hi = min(len(text), lo + width)
    window = text[lo:hi]
    relative = (center - lo) / max(len(window), 1)
    passage, cut_head, cut_tail = slice_tokens(window, room, relative)
    cut_head = cut_head or lo > 0
    cut_tail = cut_tail or hi < len(text)
    passage = passage.strip()
    return f"{CUT + ' ' if cut_head else ''}{passage}{' ' + CUT if cut_tail else ''}"


# ---------------------------------------------------------------------------------------------- rendering


def _speaker(t: Turn) -> str:
    return t.speaker if t.speaker else t.role


def _line(t: Turn, text: str) -> str:
    return f"{'* ' if t.matched else ''}{_speaker(t)}: {text}"


HEADER_TITLE_CHARS = 80
"""A session title is cut to this many characters in a block's header."""


_STANDING_HEADER = {"fact": "standing fact", "earlier fact": "standing fact, since changed"}
"""A standing block's header by its kind (the rest are standing instructions and preferences)."""


def _header(block: Evidence) -> str:
    when = format_date(block.session_date, text=block.session_date_text)
    extra = "".join(f" | {v}" for v in (block.source, _clipped(block.title)) if v)
    if block.standing:
        what = _STANDING_HEADER.get(block.standing_kind or "", "standing instruction")
        return f"[{what} | session {block.session_id} | {when}{extra}]"
    return f"[session {block.session_id} | {when}{extra}]"


def _clipped(title: str | None) -> str | None:
    if title is None or len(title) <= HEADER_TITLE_CHARS:
        return title
    return title[: HEADER_TITLE_CHARS - 1] + "…"


def _context_side(block: Evidence, index: int) -> Keep:
    """Which end of context turn ``index`` to keep: the one facing its nearest hit."""
    hits = [i for i, t in enumerate(block.turns) if t.matched]
    if not hits:
        return "head"
    nearest = min(hits, key=lambda h: (abs(h - index), h))
    return "tail" if nearest > index else "head"


def _turn_text(
    block: Evidence, index: int, context_tokens: int | None, hit_tokens: int | None, cap: int | None = None
) -> str:
    t = block.turns[index]
    if t.matched:
        limit = hit_tokens if cap is None else (cap if hit_tokens is None else min(cap, hit_tokens))
        return excerpt(t.content, limit, terms=block.terms)
    limit = context_tokens if cap is None else (cap if context_tokens is None else min(cap, context_tokens))
    return excerpt(t.content, limit, keep=_context_side(block, index))


def render_block(
    block: Evidence,
    *,
    header: bool = True,
    context_tokens: int | None = POLICY.context_tokens,
    hit_tokens: int | None = POLICY.hit_tokens,
) -> str:
    """One block: its header, then ``speaker: text`` lines (hits marked ``*``), long turns cut (see the
    module docstring). ``None`` for a cap keeps those turns whole."""
    lines = [_header(block)] if header else []
    for i, t in enumerate(block.turns):
        lines.append(_line(t, _turn_text(block, i, context_tokens, hit_tokens)))
    return "\n".join(lines)


def render(
    blocks: Sequence[Evidence],
    max_tokens: int | None = None,
    *,
    context_tokens: int | None = POLICY.context_tokens,
    hit_tokens: int | None = POLICY.hit_tokens,
) -> str:
    """All blocks in session and time order (packed for ``max_tokens`` first, see :func:`pack`).
    Consecutive blocks of one session share its header; a gap between them is shown as ``...``."""
    if max_tokens is not None:
        blocks = pack(blocks, max_tokens, context_tokens=context_tokens, hit_tokens=hit_tokens)
    return _render_ordered(order_evidence(blocks), context_tokens, hit_tokens)


def rendered_tokens(
    blocks: Sequence[Evidence],
    *,
    context_tokens: int | None = POLICY.context_tokens,
    hit_tokens: int | None = POLICY.hit_tokens,
) -> int:
    """About the tokens of :func:`render` (``blocks`` without a budget), cheaply: each turn's content
    (counts are cached per text) up to its cap, plus a few for its speaker and line, plus each header. For
    the trace, which records it for every round."""
    total = 0
    for block in blocks:
        total += count_tokens(_header(block)) + 1
        for t in block.turns:
            cap = hit_tokens if t.matched else context_tokens
            total += (count_tokens(t.content) if cap is None else count_tokens_upto(t.content, cap)) + 4
    return total


def _new_group(previous: Evidence | None, block: Evidence) -> bool:
    """Whether ``block`` starts a new group under its own header (another session, or standing or not)."""
    return previous is None or (previous.session_id, previous.standing) != (block.session_id, block.standing)


def _render_ordered(blocks: Sequence[Evidence], context_tokens: int | None, hit_tokens: int | None) -> str:
    parts: list[str] = []
    previous: Evidence | None = None
    for block in blocks:
        text = render_block(
            block,
            header=_new_group(previous, block),
            context_tokens=context_tokens,
            hit_tokens=hit_tokens,
        )
        if not _new_group(previous, block):
            parts.append("...\n" + text)
        else:
            parts.append(("\n" if parts else "") + text)
        previous = block
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------- packing


@dataclass(slots=True)
class _Pick:
    block: int  # index into the ranked blocks
    turn: int  # index into that block's turns
    text: str  # the turn's content as it will be shown (possibly cut)
    cost: int  # tokens it was counted at (its line and any header or gap line it brought)


def hit_order(blocks: Sequence[Evidence]) -> list[tuple[int, int]]:
    """The hits of ``blocks`` (``(block index, turn index)``), most relevant first across sessions: by
    reciprocal-rank fusion of the hit's own rank (its fused score in the round that found it,
    :attr:`Turn.score`) and its session's rank (the block order given, best first), so a session's weaker
    hits wait behind other sessions' stronger ones; ties: the better session, then turn order."""
    session_rank: dict[str, int] = {}
    for b in blocks:
        session_rank.setdefault(b.session_id, len(session_rank) + 1)
    hits = [(bi, ti) for bi, b in enumerate(blocks) for ti, t in enumerate(b.turns) if t.matched]
    by_own = sorted(
        hits, key=lambda x: (-blocks[x[0]].turns[x[1]].score, session_rank[blocks[x[0]].session_id], x)
    )
    own_rank = {x: r for r, x in enumerate(by_own, 1)}
    return two_rank_order(hits, own_rank.__getitem__, lambda x: session_rank[blocks[x[0]].session_id])


def pack_for(
    blocks: Sequence[Evidence],
    max_tokens: int,
    shape: str,
    *,
    context_tokens: int | None = POLICY.context_tokens,
    hit_tokens: int | None = POLICY.hit_tokens,
    segment_turns: int = POLICY.segment_turns,
    floor: Sequence[Evidence] | None = None,
    floor_shape: str | None = None,
) -> list[Evidence]:
    """:func:`pack` as a question of ``shape`` wants it: a ``breadth`` question's hits of every session
    before any context (no tiers), each first cut to ``POLICY.breadth_passage_tokens``; else the default tiers
    (of sessions, and of parts of long threads: ``segment_turns``). With a ``floor``, everything the floor
    alone would show (packed as ``floor_shape``, by default ``shape``) is shown first (:func:`_over_floor`)."""
    if floor is not None:
        return _over_floor(
            floor,
            blocks,
            max_tokens,
            shape,
            floor_shape or shape,
            context_tokens=context_tokens,
            hit_tokens=hit_tokens,
            segment_turns=segment_turns,
        )
    if shape == "breadth":
        return pack(
            blocks,
            max_tokens,
            context_tokens=context_tokens,
            hit_tokens=hit_tokens,
            passage_tokens=POLICY.breadth_passage_tokens,
            tier=None,
        )
    return pack(
        blocks, max_tokens, context_tokens=context_tokens, hit_tokens=hit_tokens, segment_turns=segment_turns
    )


def _over_floor(
    floor: Sequence[Evidence],
    blocks: Sequence[Evidence],
    max_tokens: int,
    shape: str,
    floor_shape: str,
    *,
    context_tokens: int | None,
    hit_tokens: int | None,
    segment_turns: int,
) -> list[Evidence]:
    """``blocks`` packed for ``max_tokens`` so that everything ``floor`` alone would show is shown (a plan's
    evidence that the rest only adds to: the heuristic rounds an LLM plan starts from). ``floor`` is packed
    first, as the ``floor_shape`` question it was found for; what the budget has left goes to the hits of
    ``blocks`` it did not show, packed as ``shape``, and merged into it. A plan that adds rounds can then
    only add to what a reader gets within a budget, never push out what the plan without them showed."""

    def packed(these: Sequence[Evidence], budget: int, as_shape: str) -> list[Evidence]:
        return pack_for(
            these,
            budget,
            as_shape,
            context_tokens=context_tokens,
            hit_tokens=hit_tokens,
            segment_turns=segment_turns,
        )

    first = packed(floor, max_tokens, floor_shape)
    used = count_tokens(_render_ordered(order_evidence(first), context_tokens, hit_tokens)) if first else 0
    shown = {t.id for b in first for t in b.turns}
    rest = []
    for b in blocks:
        turns = [t for t in b.turns if t.id not in shown]
        if any(t.matched for t in turns):
            rest.append(b.model_copy(update={"turns": turns}))
    room = max_tokens - used - 2  # the blank line between groups
    if not rest or room < POLICY.min_passage_tokens:
        return order_evidence(first)
    more = packed(rest, room, shape)
    combined = _merge_spans([*first, *more])
    if count_tokens(_render_ordered(combined, context_tokens, hit_tokens)) > max_tokens:
        return order_evidence(first)  # a header or gap line the two parts did not count
    return combined


def _with_meaning(
    blocks: Sequence[Evidence],
    words: Sequence[Evidence],
    max_tokens: int,
    **options: Any,
) -> list[Evidence]:
    """:func:`pack` of ``blocks`` when the round by meaning marked some turns (``nearness``): the word evidence
    (``words``, the blocks without ``meaning``) is packed for all but ``POLICY.meaning_share`` of the budget;
    the marked turns it does not show are offered in that share, nearest first, each as a hit of its own (cut
    to its passage as any hit); what they leave goes back to the word evidence. So a fact that says the
    question's meaning in other words reaches a small budget, and the word evidence keeps the rest."""

    def part(these: Sequence[Evidence], budget: int) -> list[Evidence]:  # each packed as plain evidence
        return pack([_plain(b) for b in these], budget, **options)

    reserve = int(max_tokens * POLICY.meaning_share)
    first = part(words, max_tokens - reserve)
    shown = {t.id for b in first for t in b.turns}
    near = [
        (t.nearness, b, t) for b in blocks for t in b.turns if t.nearness is not None and t.id not in shown
    ]
    near.sort(key=lambda x: (-x[0], x[2].id))
    offered_in = [
        b.model_copy(
            update={
                "id": f"{b.session_id}#{t.turn}-{t.turn}",
                "turns": [t.model_copy(update={"matched": True, "score": nearness})],
                "score": nearness,
                "meaning": True,
            }
        )
        for nearness, b, t in near
    ]
    offered = part(offered_in, reserve) if offered_in and reserve > 0 else []
    if not offered:
        return part(words, max_tokens)
    ctx, hit = options.get("context_tokens"), options.get("hit_tokens")
    used = count_tokens(_render_ordered(order_evidence(offered), ctx, hit)) + 2
    rest = part(words, max_tokens - used)
    again = {t.id for b in rest for t in b.turns}
    offered = [b for b in offered if b.turns[0].id not in again]
    score = {b.session_id: b.score for b in blocks}
    return order_evidence(
        [*(b.model_copy(update={"score": score.get(b.session_id, 0.0)}) for b in offered), *rest]
    )


def _plain(block: Evidence) -> Evidence:
    """``block`` without the round by meaning's marks (packed as any evidence)."""
    if not any(t.nearness is not None for t in block.turns):
        return block
    return block.model_copy(update={"turns": [t.model_copy(update={"nearness": None}) for t in block.turns]})


def _merge_spans(blocks: Sequence[Evidence]) -> list[Evidence]:
    """``blocks`` in session and time order, those of one session (and kind) whose turn spans overlap or
    touch joined into one block (their turns are distinct)."""
    out: list[Evidence] = []
    for b in order_evidence(blocks):
        prev = out[-1] if out else None
        if (
            prev is not None
            and (prev.session_id, prev.standing, prev.meaning) == (b.session_id, b.standing, b.meaning)
            and b.first_turn <= prev.last_turn + 1
        ):
            turns = sorted([*prev.turns, *b.turns], key=lambda t: t.turn)
            out[-1] = prev.model_copy(
                update={
                    "id": f"{prev.session_id}#{turns[0].turn}-{turns[-1].turn}",
                    "turns": turns,
                    "score": max(prev.score, b.score),
                    "rounds": sorted(set(prev.rounds) | set(b.rounds)),
                }
            )
        else:
            out.append(b)
    return order_evidence(out)


def segments(blocks: Sequence[Evidence], segment_turns: int = POLICY.segment_turns) -> list[tuple[str, int]]:
    """The part of its session each block belongs to, ``(session, n)``: a session's blocks in turn order,
    a new part starting more than :data:`POLICY.segment_gap_ms` after the previous block's last turn, or, in a
    long thread (evidence at turn :data:`POLICY.long_thread_turns` or later), where a block begins
    ``segment_turns`` or more turns after its part's first block (0: no cut by size). A conversation of a
    sitting is one part; a long thread (a batch of 150 messages, a ChatGPT thread resumed over months) is
    several, and packing treats each part as it treats a session (tiers of :data:`POLICY.pack_tier` parts)."""
    by_session: dict[str, list[int]] = {}
    for bi, b in enumerate(blocks):
        by_session.setdefault(b.session_id, []).append(bi)
    out: list[tuple[str, int]] = [("", 0)] * len(blocks)
    for sid, indexes in by_session.items():
        long = (
            max(blocks[i].turns[-1].turn for i in indexes if blocks[i].turns) + 1 >= POLICY.long_thread_turns
        )
        turns = segment_turns if long and segment_turns > 0 else None
        n, start, last = 0, None, None
        for bi in sorted(indexes, key=lambda i: (blocks[i].first_turn, i)):
            b = blocks[bi]
            first_ts = b.turns[0].timestamp if b.turns else None
            if start is not None and (
                (turns is not None and b.first_turn - start >= turns)
                or (first_ts is not None and last is not None and first_ts - last > POLICY.segment_gap_ms)
            ):
                n, start = n + 1, None
            if start is None:
                start = b.first_turn
            if b.turns:
                last = b.turns[-1].timestamp
            out[bi] = (sid, n)
    return out


def pack(
    blocks: Sequence[Evidence],
    max_tokens: int,
    *,
    context_tokens: int | None = POLICY.context_tokens,
    hit_tokens: int | None = POLICY.hit_tokens,
    passage_tokens: int = POLICY.passage_tokens,
    context_passage_tokens: int = POLICY.context_passage_tokens,
    tier: int | None = POLICY.pack_tier,
    segment_turns: int = POLICY.segment_turns,
) -> list[Evidence]:
    """The evidence to show within ``max_tokens`` (as :func:`render` renders it), in session and time
    order: hits first, then context nearest the hits, long turns cut, never empty when anything fits (see
    the module docstring). Turns kept are exactly as shown: a cut turn's ``content`` is its passage."""
    if not blocks or max_tokens <= 0:
        return []
    whole = _render_ordered(order_evidence(blocks), context_tokens, hit_tokens)
    if count_tokens(whole) <= max_tokens:
        return order_evidence(blocks)
    options: dict[str, Any] = {  # this call's, for the parts packed again on their own
        "context_tokens": context_tokens,
        "hit_tokens": hit_tokens,
        "passage_tokens": passage_tokens,
        "context_passage_tokens": context_passage_tokens,
        "tier": tier,
        "segment_turns": segment_turns,
    }
    standing = [b for b in blocks if b.standing]
    if standing and len(standing) < len(blocks):
        # standing instructions get at most a small reserved share; the evidence gets the rest
        def part(these: Sequence[Evidence], budget: int) -> list[Evidence]:
            return pack(these, budget, **options)

        share = max(
            max_tokens // POLICY.standing_share,
            min(POLICY.standing_tokens, max_tokens // POLICY.standing_cap_share),
        )
        # a standing block ranks by its turn's score, best first (refind.search.standing._block: its block
        # score, 0, ranks no session against the evidence); packed by block score, they went oldest first
        offered = (
            [
                b.model_copy(update={"score": 0.0})
                for b in part([_ranked_standing(b) for b in standing], share)
            ]
            if max_tokens >= POLICY.standing_min_budget
            else []
        )
        used = count_tokens(_render_ordered(offered, context_tokens, hit_tokens)) + 2 if offered else 0
        rest = part([b for b in blocks if not b.standing], max_tokens - used)
        return order_evidence([*offered, *rest])
    words = [b for b in blocks if not b.meaning]
    if words and any(t.nearness is not None for b in blocks for t in b.turns):
        return _with_meaning(blocks, words, max_tokens, **options)
    ranked = by_relevance(blocks)
    picks: dict[tuple[int, int], _Pick] = {}
    sessions: dict[str, int] = {}  # session -> lines taken in it
    used = 0

    def overhead(bi: int, ti: int) -> int:
        """Tokens a line costs beyond its own: its session's header, or a '...' gap line."""
        block = ranked[bi]
        if not sessions.get(block.session_id):
            return count_tokens(_header(block)) + 1  # the header line ("\n" and "\n\n" are one token each)
        return 0 if (bi, ti - 1) in picks or (bi, ti + 1) in picks else 2

    def take(bi: int, ti: int, floor: int, cap: int | None = None) -> bool:
        """Show turn ``ti`` of block ``bi`` (cut to ``cap`` tokens when given), or a shorter passage of it
        if at least ``floor`` tokens of it still fit; a turn already shown is grown in place."""
        nonlocal used
        block = ranked[bi]
        turn = block.turns[ti]
        old = picks.get((bi, ti))
        if old is not None:
            used -= old.cost
        fixed = (old.cost - count_tokens(old.text) if old is not None else overhead(bi, ti)) + (
            0 if old is not None else count_tokens(_line(turn, "")) + 1
        )
        text = _turn_text(block, ti, context_tokens, hit_tokens, cap=cap)
        need = fixed + count_tokens(text)
        if used + need > max_tokens:
            room = max_tokens - used - fixed
            if room < floor or (old is not None and room <= count_tokens(old.text)):
                if old is not None:
                    used += old.cost
                return False
            text = _turn_text(block, ti, context_tokens, hit_tokens, cap=room)
            need = fixed + count_tokens(text)
            if used + need > max_tokens:
                if old is not None:
                    used += old.cost
                return False
        if old is None:
            sessions[block.session_id] = sessions.get(block.session_id, 0) + 1
        picks[(bi, ti)] = _Pick(bi, ti, text, need)
        used += need
        return True

    parts = segments(ranked, segment_turns)
    session_rank: dict[tuple[str, int], int] = {}  # the parts, in the order of their best block
    for bi in range(len(ranked)):
        session_rank.setdefault(parts[bi], len(session_rank))
    all_hits = hit_order(ranked)
    first = max(POLICY.min_passage_tokens, min(passage_tokens, max_tokens // POLICY.hit_share))
    first = first if hit_tokens is None else min(first, hit_tokens)
    around = max(POLICY.min_context_tokens, context_passage_tokens)
    size = tier if tier is not None and tier > 0 else len(session_rank)
    for start in range(0, len(session_rank), size):
        hits = [h for h in all_hits if start <= session_rank[parts[h[0]]] < start + size]
        # 1. every hit, most relevant first, each cut to a passage sized to the budget, so that one long
        # answer cannot take the room of the hits after it
        for bi, ti in hits:
            take(bi, ti, POLICY.min_passage_tokens, cap=first)
        if not picks and hits:  # nothing fits whole enough: the best hit, as far as it goes
            take(*hits[0], 1, cap=first)
        # 2. then the tier's context: block by block (in the order of their best hit), each block's
        # turns nearest its hits first (distance 1 around every hit of the block, then 2...)
        span = max((len(ranked[bi].turns) for bi, _ in hits), default=0)
        for block_index in dict.fromkeys(bi for bi, _ in hits):
            mine = [h for h in hits if h[0] == block_index]
            for distance in range(1, span):
                for bi, ti in mine:
                    if (bi, ti) not in picks:
                        continue
                    for step in (-1, 1):
                        tj = ti + step * distance
                        inside = 0 <= tj < len(ranked[bi].turns)
                        if not inside or (bi, tj) in picks or ranked[bi].turns[tj].matched:
                            continue
                        if (bi, tj - step) in picks:  # context grows out of a hit, never leaves a gap
                            take(bi, tj, POLICY.min_context_tokens, cap=around)
    # 3. what is left grows the hits that were cut towards their full length (at most hit_tokens), then
    # the context turns that were cut (at most context_tokens), in the order they were taken
    for bi, ti in [*all_hits, *(k for k in list(picks) if not ranked[k[0]].turns[k[1]].matched)]:
        p = picks.get((bi, ti))
        if p is not None and p.text != _turn_text(ranked[bi], ti, context_tokens, hit_tokens):
            take(
                bi,
                ti,
                POLICY.min_passage_tokens if ranked[bi].turns[ti].matched else POLICY.min_context_tokens,
            )
    if not picks:  # no hit at all (e.g. a browse): the best block's turns in order, as far as they go
        for ti in range(len(ranked[0].turns)):
            if not take(0, ti, 1):
                break
    order = list(picks)
    packed = _assemble(ranked, [picks[k] for k in order])
    # the sum of the parts can miss the rendering by a token or two (BPE merges across lines): settle it
    while packed and count_tokens(_render_ordered(packed, None, None)) > max_tokens:
        order.pop()
        packed = _assemble(ranked, [picks[k] for k in order])
    return packed


def _ranked_standing(block: Evidence) -> Evidence:
    """A standing block with its turn's score as its own, so :func:`by_relevance` (and the packing) takes
    the standing blocks best first."""
    return block.model_copy(update={"score": max((t.score for t in block.turns), default=0.0)})


def _assemble(ranked: Sequence[Evidence], picks: Sequence[_Pick]) -> list[Evidence]:
    """Blocks of the picked turns (content as shown), one per run of consecutive turns, in session and
    time order."""
    by_block: dict[int, dict[int, str]] = {}
    for p in picks:
        by_block.setdefault(p.block, {})[p.turn] = p.text
    out: list[Evidence] = []
    for bi, kept in by_block.items():
        block = ranked[bi]
        run: list[Turn] = []
        for ti in sorted(kept):
            turn = block.turns[ti].model_copy(update={"content": kept[ti]})
            if run and block.turns[ti].turn != run[-1].turn + 1:
                out.append(_block_of(block, run))
                run = []
            run.append(turn)
        if run:
            out.append(_block_of(block, run))
    return order_evidence(out)


def _block_of(block: Evidence, turns: list[Turn]) -> Evidence:
    return block.model_copy(
        update={"id": f"{block.session_id}#{turns[0].turn}-{turns[-1].turn}", "turns": turns}
    )
