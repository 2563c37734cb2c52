"""One search round: the primitive every agent (and the ``search`` tool) uses.

The design: docs/design.md § "One round".

1. BM25 over the user's messages, filtered by time and by the read-set, over-fetching candidates.
2. Session fusion: each hit gets ``w_hit/(k0 + r1) + w_session/(k0 + r2)``, with r1 its BM25 rank and r2 its
   session's rank: by the sum of that session's hit scores (``Fusion.sessions = "hits"``, ReFind's formula) or
   by BM25 over the session's whole text (``"documents"``, what ``Memory`` uses by default); weights are
   settings.
3. The top_k hits by fused score, each expanded to ±window turns of its session; overlapping or adjacent
   windows merged into one block.
4. Evidence blocks: session, date, turns (hits flagged), score = the block's best fused score.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from refind.config import DEFAULTS
from refind.fusion import Fusion, fuse_hits
from refind.lexicon import FUNCTION_WORDS
from refind.models import Evidence, Hit, Turn, trusted
from refind.store.analysis import analyze
from refind.store.base import Filters, Reader, RoundFound, RoundRunner, RoundSpec

__all__ = [
    "blocks_of",
    "build_blocks",
    "content_terms",
    "round_by_calls",
    "round_spec",
    "run_round",
    "search_round",
    "session_ranking",
]


@functools.cache
def _function_terms() -> frozenset[str]:
    """The index terms of the words that give a question its form, not its topic
    (:data:`refind.lexicon.KEYWORD_STOP_WORDS`: "what", "did", "about", "tell"...), as every engine analyzes
    them (the reference analyzer is Lucene's, term for term)."""
    return frozenset(t for w in FUNCTION_WORDS for t in analyze(w))


def content_terms(text: str) -> list[str] | None:
    """The index terms of ``text`` a hit must hold one of, when ``text`` holds function words as well
    (a question as asked: "what did we decide about the cache?"): its other terms, in order (an empty list
    when it holds nothing else). None when every term of ``text`` is a content term (keywords): then any
    hit holds one. A message that matched only "what" and "did" is not a hit (issue 38)."""
    terms = list(dict.fromkeys(analyze(text)))
    function = _function_terms()
    content = [t for t in terms if t not in function]
    return content if len(content) < len(terms) else None


def session_ranking(
    store: Reader, user_id: str, keywords: str, hits: Sequence[Hit], fusion: Fusion, *, restrict: bool = True
) -> tuple[list[str] | None, list[list[str]]]:
    """(r2 order for :func:`refind.fusion.fuse_hits`, the round's session orders). The round's orders are the sessions in
    fused-hit order, or with ``documents``, two orders: sessions by their best message and by BM25 over
    their whole text (restricted to sessions with hits when ``restrict``: session documents carry no time,
    so a filtered round must not rank sessions outside its filter). The caller fuses the orders of all
    rounds by reciprocal rank, each order separately (fusing already-fused lists would lose the ranks)."""
    sessions_with_hits = list(dict.fromkeys(h.session_id for h in hits))
    if fusion.sessions != "documents" or not sessions_with_hits:
        return None, [list(dict.fromkeys(h.session_id for h, _ in fuse_hits(hits, fusion)))]
    if restrict:
        by_doc = [
            sid
            for sid, _ in store.query_sessions(user_id, keywords, len(sessions_with_hits), sessions_with_hits)
        ]
    else:
        by_doc = [sid for sid, _ in store.query_sessions(user_id, keywords, max(len(sessions_with_hits), 50))]
    by_hit = list(dict.fromkeys(h.session_id for h in hits))  # best message first
    return by_doc, [by_hit, by_doc]


def _spans(selected: Sequence[tuple[Hit, float]], window: int) -> list[tuple[str, int, int, float]]:
    """Merged (session, first turn, last turn, best score) spans around the selected hits."""
    by_session: dict[str, list[tuple[int, int, float]]] = defaultdict(list)
    for h, score in selected:
        by_session[h.session_id].append((max(h.turn - window, 0), h.turn + window, score))
    spans = []
    for sid, ranges in by_session.items():
        ranges.sort()
        lo, hi, best = ranges[0]
        for a, b, s in ranges[1:]:
            if a <= hi + 1:  # overlapping or adjacent
                hi, best = max(hi, b), max(best, s)
            else:
                spans.append((sid, lo, hi, best))
                lo, hi, best = a, b, s
        spans.append((sid, lo, hi, best))
    return spans


def search_round(
    store: Reader,
    user_id: str,
    keywords: str,
    *,
    top_k: int = DEFAULTS.top_k,
    window: int = DEFAULTS.window,
    filters: Filters | None = None,
    fusion: Fusion | None = None,
    overfetch: int = DEFAULTS.overfetch,
    round_no: int = 1,
    read: Callable[[Hit], bool] | None = None,
    window_tokens: int | None = DEFAULTS.window_tokens,
    context_tokens: int | None = DEFAULTS.context_tokens,
) -> tuple[list[Evidence], list[Hit], list[list[str]]]:
    """Run one round. Returns the evidence blocks (best first), the BM25 hits fused, and the round's
    session orders (for fusing sessions across rounds).

    ``filters`` are applied in Lucene before top-k. The read-set is given twice: as ``filters.exclude_*``
    (applied in Lucene) and as ``read``, a predicate; when ``read`` is given the round first queries
    without the exclusions (so the session ranking reflects the query, not what happens to be unread),
    drops read hits, and re-queries with the exclusions only when fewer than ``top_k`` unread hits remain.
    ``read`` must say what the exclusions say (a hit is read when its id or session is excluded).
    """
    spec = round_spec(
        keywords, top_k, window, filters, fusion, overfetch, read, content=content_terms(keywords)
    )
    found = run_round(store, user_id, spec)
    blocks = blocks_of(found, round_no, window_tokens, context_tokens)
    return blocks, found.hits, found.orders


def round_spec(
    keywords: str,
    top_k: int = DEFAULTS.top_k,
    window: int = DEFAULTS.window,
    filters: Filters | None = None,
    fusion: Fusion | None = None,
    overfetch: int = DEFAULTS.overfetch,
    read: Callable[[Hit], bool] | bool | None = None,
    *,
    titles: bool = False,
    content: Sequence[str] | None = None,
) -> RoundSpec:
    """The :class:`RoundSpec` of :func:`search_round`'s arguments (``content``: :func:`content_terms`)."""
    fusion = fusion or Fusion()
    restrict = filters is not None and bool(
        filters.time_from is not None or filters.time_to is not None or filters.session_ids or filters.roles
    )
    return RoundSpec(
        text=keywords,
        fetch=max(overfetch, top_k),
        top_k=top_k,
        window=window,
        filters=None if filters is None else replace(filters, exclude_ids=None, exclude_sessions=None),
        exclude_ids=tuple(filters.exclude_ids or ()) if filters is not None else (),
        exclude_sessions=tuple(filters.exclude_sessions or ()) if filters is not None else (),
        read=bool(read) and filters is not None,
        sessions=fusion.sessions,
        restrict=restrict,
        k0=fusion.k0,
        w_hit=fusion.w_hit,
        w_session=fusion.w_session,
        titles=titles,
        content_terms=tuple(content) if content is not None else None,
    )


def run_round(store: Reader, user_id: str, spec: RoundSpec) -> RoundFound:
    """What a round finds: in one call on an engine that runs rounds (:class:`RoundRunner`), else through
    its separate calls (:func:`round_by_calls`). Both give the same."""
    if isinstance(store, RoundRunner):
        return store.round(user_id, spec)
    return round_by_calls(store, user_id, spec)


def round_by_calls(store: Reader, user_id: str, spec: RoundSpec) -> RoundFound:
    """A round through the engine's separate calls: query (twice when the read-set leaves too few unread
    hits), session documents, windows, analysis and titles."""
    fusion = Fusion(spec.k0, spec.w_hit, spec.w_session, spec.sessions)  # type: ignore[arg-type]
    full = replace(
        spec.filters or Filters(),
        exclude_ids=list(spec.exclude_ids) or None,
        exclude_sessions=list(spec.exclude_sessions) or None,
    )
    if spec.content_terms is not None:  # ranked by every match, chosen among those with a content word
        ranked_hits = store.query(user_id, spec.text, spec.fetch, spec.filters, content=False)
        chosen = replace(full, any_terms=list(spec.content_terms))
        unread = store.query(user_id, spec.text, spec.fetch, chosen, content=False)
    elif spec.read:
        read_ids, read_sessions = set(spec.exclude_ids), set(spec.exclude_sessions)
        ranked_hits = store.query(user_id, spec.text, spec.fetch, spec.filters, content=False)
        unread = [h for h in ranked_hits if h.id not in read_ids and h.session_id not in read_sessions]
        if len(unread) < spec.top_k and len(unread) < len(ranked_hits):
            unread = store.query(user_id, spec.text, spec.fetch, full, content=False)
    else:
        ranked_hits = unread = store.query(user_id, spec.text, spec.fetch, full, content=False)
    if not ranked_hits and not unread:
        return RoundFound(list(unread), [], {}, [], [], [], [])
    r2_order, orders = session_ranking(store, user_id, spec.text, ranked_hits, fusion, restrict=spec.restrict)
    selected = fuse_hits(unread, fusion, r2_order)[: spec.top_k]
    spans = _spans(selected, spec.window)
    windows = store.windows(user_id, [(sid, lo, hi) for sid, lo, hi, _ in spans])
    titled: list[str] = []
    if spec.titles and unread:
        with_hits = list(dict.fromkeys(h.session_id for h in unread))
        titled = [sid for sid, _ in store.query_titles(user_id, spec.text, len(with_hits), with_hits)]
    return RoundFound(
        hits=list(unread),
        orders=orders,
        selected={h.id: score for h, score in selected},
        spans=spans,
        windows=windows,
        terms=list(dict.fromkeys(store.analyze(spec.text))),
        titled=titled,
    )


def blocks_of(
    found: RoundFound, round_no: int, window_tokens: int | None = None, context_tokens: int | None = None
) -> list[Evidence]:
    """The evidence blocks of a round's spans, best first (:func:`build_blocks`, its windows read)."""
    return _blocks(
        found.spans,
        found.windows,
        found.selected,
        found.selected.keys(),
        round_no,
        window_tokens,
        context_tokens,
        found.terms,
    )


def build_blocks(
    store: Reader,
    user_id: str,
    selected: Sequence[tuple[Hit, float]],
    window: int,
    matched: set[str],
    round_no: int,
    window_tokens: int | None = None,
    context_tokens: int | None = None,
    *,
    terms: Sequence[str] = (),
) -> list[Evidence]:
    """Expand scored hits to ±window turns, merge overlapping windows, fetch them in one query, and
    return the blocks best first (turns whose id is in ``matched`` are flagged; ``terms``, the round's
    analyzed query terms, go with each block so a long hit can be cut to the passage around them).

    ``window_tokens`` bounds the context on each side of a hit: walking away from it, context turns are
    kept while their tokens (each counted at most ``context_tokens``, as rendered) add up to no more than
    that. Short chat turns keep the whole ±window; a window of long assistant answers shrinks. A span whose
    middle is dropped this way becomes two blocks."""
    spans = _spans(selected, window)
    hit_score = {h.id: score for h, score in selected if h.id in matched}
    windows = store.windows(user_id, [(sid, lo, hi) for sid, lo, hi, _ in spans])
    return _blocks(spans, windows, hit_score, matched, round_no, window_tokens, context_tokens, terms)


def _blocks(
    spans: Sequence[tuple[str, int, int, float]],
    windows: Sequence[Sequence[Hit]],
    hit_score: dict[str, float],
    matched: Collection[str],
    round_no: int,
    window_tokens: int | None,
    context_tokens: int | None,
    terms: Sequence[str],
) -> list[Evidence]:
    """Blocks of the spans' turns, best first; turns whose id is in ``matched`` are flagged, with their
    ``hit_score``."""
    blocks = []
    for (sid, _lo, _hi, score), turns in zip(spans, windows, strict=True):
        for run in _trim_context(turns, matched, window_tokens, context_tokens):
            blocks.append(
                trusted(  # from stored messages: nothing to validate
                    Evidence,
                    {
                        "id": f"{sid}#{run[0].turn}-{run[-1].turn}",
                        "session_id": sid,
                        "session_date": run[0].timestamp,
                        "session_date_text": run[0].time_text,
                        "title": None,  # the session's info: added once per result (with_info)
                        "source": None,
                        "project": None,
                        "turns": [
                            trusted(
                                Turn,
                                {
                                    "id": t.id,
                                    "turn": t.turn,
                                    "role": t.role,
                                    "content": t.content,
                                    "timestamp": t.timestamp,
                                    "speaker": t.speaker,
                                    "time_text": t.time_text,
                                    "matched": t.id in matched,
                                    "score": hit_score.get(t.id, 0.0),
                                    "nearness": None,
                                },
                            )
                            for t in run
                        ],
                        "score": score,
                        "rounds": [round_no],
                        "noted": False,
                        "terms": list(terms),
                        "standing": False,
                        "standing_kind": None,
                        "meaning": False,
                    },
                )
            )
    blocks.sort(key=lambda b: -b.score)
    return blocks


def _trim_context(
    turns: Sequence[Hit], matched: Collection[str], window_tokens: int | None, context_tokens: int | None
) -> list[list[Hit]]:
    """Runs of consecutive turns to keep: every matched turn, and context within ``window_tokens``."""
    if not turns:
        return []
    if window_tokens is None or not any(t.id in matched for t in turns):
        return [list(turns)]
    from refind.tokens import count_tokens, count_tokens_upto

    def cost(t: Hit) -> int:
        if context_tokens is None:
            return count_tokens(t.content)
        return count_tokens_upto(t.content, context_tokens)

    keep = [t.id in matched for t in turns]
    for i, t in enumerate(turns):
        if t.id not in matched:
            continue
        for step in (-1, 1):
            used, j = 0, i + step
            while 0 <= j < len(turns) and turns[j].id not in matched:
                used += cost(turns[j])
                if used > window_tokens:
                    break
                keep[j] = True
                j += step
    runs: list[list[Hit]] = []
    for i, t in enumerate(turns):
        if not keep[i]:
            continue
        if runs and keep[i - 1] and i > 0:
            runs[-1].append(t)
        else:
            runs.append([t])
    return runs
