"""SearchSession: the state of one question's search (read-set, collected evidence, trace)."""

from __future__ import annotations

import math
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Literal

from refind.evidence import SEGMENT_TURNS, order_evidence, rendered_tokens
from refind.models import Evidence, Hit, RoundTrace, Shape, Turn
from refind.result import SearchResult
from refind.search.round import Fusion, blocks_of, build_blocks, round_spec, run_round
from refind.standing import CUE_TERMS, is_request, is_standing, standing_sentence
from refind.store.base import Filters, Reader

__all__ = ["ReadSet", "SearchSession", "asks_current_state"]

BREADTH_K = 5  # a breadth round takes this many times top_k hits (HeuristicAgent's breadth_k)

_CURRENT = re.compile(
    r"\b(now|right now|currently|current|still|latest|anymore|any more|these days|nowadays|"
    r"at the moment|at present|presently|most recent|most recently)\b",
    re.IGNORECASE,
)


def asks_current_state(question: str) -> bool:
    """True when ``question`` asks about the current state of something ("now", "currently", "still",
    "latest", "anymore", "these days"...): then the latest statement of a changed fact should win."""
    return _CURRENT.search(question) is not None


def merge_blocks(a: Evidence, b: Evidence) -> Evidence:
    """One block for two overlapping or adjacent blocks of the same session (found by two rounds)."""
    turns: dict[int, Turn] = {t.turn: t for t in a.turns}
    for t in b.turns:
        if t.turn in turns:
            old = turns[t.turn]
            turns[t.turn] = old.model_copy(
                update={"matched": old.matched or t.matched, "score": max(old.score, t.score)}
            )
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
        terms=list(dict.fromkeys([*a.terms, *b.terms])),
    )


ReadSet = Literal["message", "session", "off"]


class SearchSession:
    """What an agent works with for one question.

    :meth:`search` runs a round that skips what earlier rounds returned (the read-set: messages, or whole
    sessions), merges the new blocks into the collected evidence and records the round in the trace.
    :meth:`note` keeps blocks; :meth:`result` returns the noted blocks (or, when nothing was noted, all).
    """

    def __init__(
        self,
        store: Reader,
        user_id: str,
        question: str,
        *,
        now: int | None = None,
        top_k: int = 5,
        window: int = 2,
        readset: ReadSet = "message",
        fusion: Fusion | None = None,
        overfetch: int = 50,
        agent: str = "heuristic",
        context_tokens: int | None = 150,
        window_tokens: int | None = None,
        hit_tokens: int | None = 1000,
        latest_boost: float = 0.0,
        standing: int = 0,
        scope: Sequence[str] | None = None,
        segment_turns: int = SEGMENT_TURNS,
    ) -> None:
        self.store = store
        self.scope = list(scope) if scope is not None else None  # the sessions searched (None: all)
        self.user_id = user_id
        self.question = question
        self.now = now
        self.top_k = top_k
        self.window = window
        self.readset = readset
        self.fusion = fusion or Fusion()
        self.overfetch = overfetch
        self.agent = agent
        self.context_tokens = context_tokens
        self.window_tokens = window_tokens
        self.hit_tokens = hit_tokens
        self.latest_boost = latest_boost
        self.standing = standing  # standing instructions offered beside the evidence (0: none)
        self.segment_turns = segment_turns  # long threads are packed in parts of this many turns (0: whole)
        self.wide_from = 0  # the first round of the breadth shape (widen)
        self.floor: list[Evidence] | None = None  # the blocks a plan only adds to (keep_floor)
        self.floor_shape: Shape = "lookup"  # the shape they were found and are packed under
        self.terms: list[str] = []  # the analyzed terms of every round so far
        self.read_ids: set[str] = set()
        self.read_sessions: set[str] = set()
        self.blocks: list[Evidence] = []
        self.trace: list[RoundTrace] = []
        self.finished = False
        # give the top sessions without a block one at result time (an agent that must return only what
        # its model saw turns this off)
        self.complete_missing = True
        self._seen_before: set[str] = set()
        # session-level fusion across rounds: each round credits the sessions of its (over-fetched, fused)
        # hits by reciprocal rank, so a session several rounds point at outranks a one-off
        self.session_score: dict[str, float] = {}
        self.rankings: list[list[str]] = []  # every session order credited, in round order
        self.best_hit: dict[str, Hit] = {}  # each session's best unread hit, from the first round that saw it
        self.shape: Shape = "lookup"  # the question's shape as the agent read it (refind.agent.shape)
        self.shape_reason: str | None = None

    def set_shape(self, shape: Shape, reason: str | None = None) -> None:
        """Record the question's shape (``lookup``, ``breadth``, ``period``) the agent plans by; the result
        and its trace say it."""
        self.shape = shape
        self.shape_reason = reason
        if shape != "lookup":  # a lookup is what every search did before shapes: nothing to add
            note = f"{shape}: {reason}" if reason else shape
            self.trace.append(RoundTrace(round=self.rounds, action="shape", note=note))

    def widen(self, reason: str, k: int = BREADTH_K, window: int = 0) -> None:
        """Switch to the ``breadth`` shape (the answer is spread over many places): later rounds take ``k``
        times ``top_k`` hits with at most ``window`` turns around each, and the result packs for breadth.
        Once only: a session already in breadth keeps its settings."""
        if self.shape == "breadth":
            return
        self.set_shape("breadth", reason)
        self.top_k *= k
        self.window = min(self.window, window)
        self.wide_from = self.rounds + 1  # near duplicates are dropped among the blocks found from here on

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text``, as every search of this session analyzes it."""
        return self.store.analyze(text)

    def term_counts(self, text: str) -> dict[str, int]:
        """For each distinct term of ``text``: how many of this user's messages hold it."""
        return self.store.term_counts(self.user_id, text)

    @property
    def rounds(self) -> int:
        """Searches run so far."""
        return sum(1 for t in self.trace if t.action in {"search", "browse"})

    def _filters(
        self, date_from: int | None, date_to: int | None, roles: Sequence[str] | None = None
    ) -> Filters:
        return Filters(
            time_from=date_from,
            time_to=date_to,
            session_ids=self.scope,
            roles=list(roles) if roles else None,
            exclude_ids=sorted(self.read_ids) if self.readset == "message" and self.read_ids else None,
            exclude_sessions=sorted(self.read_sessions)
            if self.readset == "session" and self.read_sessions
            else None,
        )

    def search(
        self,
        keywords: str,
        date_from: int | None = None,
        date_to: int | None = None,
        *,
        top_k: int | None = None,
        note: str | None = None,
        weight: float = 1.0,
        roles: Sequence[str] | None = None,
    ) -> list[Evidence]:
        """One round over what is still unread; returns the blocks it added or extended (best first).
        ``weight`` scales how much this round's session ranking counts in the final ranking; a round of
        weight 0 ranks its hits' sessions by their hit sums (no session-document query). ``roles`` keeps
        the round's hits to messages of those roles (their windows still show both sides)."""
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        spec = round_spec(
            keywords,
            top_k or self.top_k,
            self.window,
            self._filters(date_from, date_to, roles),
            # a round that does not count in the session ranking (weight 0) fuses its hits with its own
            # sessions' hit sums (ReFind's rule) instead of asking the engine to rank session documents
            self.fusion if weight > 0 else replace(self.fusion, sessions="hits"),
            self.overfetch,
            read=self.readset != "off",
            titles=weight > 0,  # title words count for the session: its title's rank, among those hit
        )
        got = run_round(self.store, self.user_id, spec)
        found = blocks_of(got, round_no, self.window_tokens, self.context_tokens)
        hits = got.hits
        for h in hits:
            self.best_hit.setdefault(h.session_id, h)
        for block in found:
            self.terms.extend(t for t in block.terms if t not in self.terms)
        for order in got.orders:
            self._credit(order, weight)
        if got.titled:
            self._credit(got.titled, weight)
        new = self._absorb(found)
        self._record("search", round_no, t0, keywords, date_from, date_to, len(hits), new, note)
        return new

    def _is_read(self, hit: Hit) -> bool:
        if self.readset == "session":
            return hit.session_id in self.read_sessions
        return hit.id in self.read_ids

    def _credit(self, sessions: Iterable[str], weight: float = 1.0) -> None:
        """Reciprocal-rank fusion of the rounds' session rankings: the final session order."""
        sessions = list(dict.fromkeys(sessions))
        self.rankings.append(sessions)
        for rank, sid in enumerate(sessions, 1):
            self.session_score[sid] = self.session_score.get(sid, 0.0) + weight / (self.fusion.k0 + rank)

    def browse(
        self, date_from: int | None, date_to: int | None, *, k: int | None = None, note: str | None = None
    ) -> list[Evidence]:
        """Scroll to a period: the newest unread messages in the range (no keywords), with their windows."""
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        hits = self.store.browse(self.user_id, k or self.top_k, self._filters(date_from, date_to))
        # no BM25 here: rank by recency, on the same scale as fused scores
        scored = [(h, 1.0 / (self.fusion.k0 + i + 1)) for i, h in enumerate(hits)]
        return self._browsed(scored, [h.session_id for h in hits], round_no, t0, date_from, date_to, note)

    def _browsed(
        self,
        scored: list[tuple[Hit, float]],
        sessions: list[str],
        round_no: int,
        t0: float,
        date_from: int | None,
        date_to: int | None,
        note: str | None,
    ) -> list[Evidence]:
        """A browse's hits (no keywords: all of them are the round's matches) as blocks with their windows,
        its sessions credited at half weight, recorded in the trace; returns the new blocks."""
        found = build_blocks(
            self.store,
            self.user_id,
            scored,
            self.window,
            {h.id for h, _ in scored},
            round_no,
            self.window_tokens,
            self.context_tokens,
        )
        self._credit(sessions, 0.5)
        new = self._absorb(found)
        self._record("browse", round_no, t0, None, date_from, date_to, len(scored), new, note)
        return new

    def browse_beginning(self, *, opening: int = 3, note: str | None = None) -> list[Evidence]:
        """The opening ``opening`` messages of the earliest session in the evidence (where a person first
        describes what they set out to do): for a question about how something began ("when I first
        described my setup", "to start my project"). One window query; nothing when there is no evidence."""
        t0 = time.perf_counter()
        sessions = {b.session_id: b.session_date for b in self.blocks if not b.standing}
        if not sessions:
            return []
        first = min(sessions, key=lambda sid: (sessions[sid], sid))
        return self._openings([first], opening, t0, note)

    def browse_openings(
        self, *, sessions: int = 6, opening: int = 4, note: str | None = None
    ) -> list[Evidence]:
        """The opening ``opening`` messages of each of the ``sessions`` best sessions in the evidence (by
        the fused ranking): where a person states what a conversation is about, which a summary of how a
        project went needs from each of its parts. One window query; nothing when there is no evidence."""
        t0 = time.perf_counter()
        with_evidence = {b.session_id for b in self.blocks if not b.standing}
        top = sorted(with_evidence, key=lambda sid: (-self.session_score.get(sid, 0.0), sid))[:sessions]
        return self._openings(top, opening, t0, note) if top else []

    def _openings(self, sessions: list[str], opening: int, t0: float, note: str | None) -> list[Evidence]:
        """The unread of the opening ``opening`` messages of ``sessions``, browsed as one round."""
        round_no = self.rounds + 1
        groups = self.store.windows(self.user_id, [(sid, 0, opening - 1) for sid in sessions])
        hits = [h for group in groups for h in group if not self._is_read(h)]
        if not hits:
            return []
        scored = [(h, 1.0 / (self.fusion.k0 + 1 + i)) for i, h in enumerate(hits)]
        return self._browsed(scored, sessions, round_no, t0, None, None, note)

    def browse_sessions(
        self,
        date_from: int | None,
        date_to: int | None,
        *,
        k: int | None = None,
        opening: int = 2,
        note: str | None = None,
    ) -> list[Evidence]:
        """Scroll a period session by session: up to ``k`` (``top_k``) of the period's sessions, newest first,
        each shown by its opening ``opening`` messages inside the period (where a conversation says what it is
        about) and its newest ones (``k`` shared among the sessions found), with their windows. Sessions
        already in the evidence are skipped."""
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        k = k or self.top_k
        taken = {b.session_id for b in self.blocks}
        sessions: list[str] = []
        for _ in range(k):
            filters = Filters(time_from=date_from, time_to=date_to, exclude_sessions=sorted(taken) or None)
            newest = self.store.browse(self.user_id, 1, filters)
            if not newest:
                break
            sessions.append(newest[0].session_id)
            taken.add(newest[0].session_id)
        hits: list[Hit] = []
        per_session = max(1, k // max(len(sessions), 1))  # a period of few sessions shows more of each
        for sid in sessions:
            inside = Filters(time_from=date_from, time_to=date_to, session_ids=[sid])
            got = {h.id: h for h in self.store.browse(self.user_id, opening, inside, newest_first=False)}
            for h in self.store.browse(self.user_id, per_session, inside):
                got.setdefault(h.id, h)
            hits.extend(got.values())
        rank = {sid: i for i, sid in enumerate(sessions)}
        scored = [(h, 1.0 / (self.fusion.k0 + rank[h.session_id] + 1)) for h in hits]
        return self._browsed(scored, sessions, round_no, t0, date_from, date_to, note)

    def _record(
        self,
        action: str,
        round_no: int,
        t0: float,
        keywords: str | None,
        date_from: int | None,
        date_to: int | None,
        hits: int,
        new: list[Evidence],
        note: str | None,
    ) -> None:
        self.trace.append(
            RoundTrace(
                round=round_no,
                action=action,
                keywords=keywords,
                date_from=date_from,
                date_to=date_to,
                hits=hits,
                new_evidence=len(new),
                new_turns=sum(1 for b in new for t in b.turns if t.id not in self._seen_before),
                tokens=rendered_tokens(new, context_tokens=self.context_tokens, hit_tokens=self.hit_tokens),
                ms=round((time.perf_counter() - t0) * 1000, 3),
                note=note,
            )
        )

    def _absorb(self, found: Iterable[Evidence]) -> list[Evidence]:
        """Merge found blocks into the collection; returns those that are new or grew."""
        self._seen_before = set(self.read_ids)
        changed: list[Evidence] = []
        for block in found:
            if all(t.id in self.read_ids for t in block.turns):
                continue
            merged = block
            rest = []
            for existing in self.blocks:
                if existing.session_id == merged.session_id and (
                    existing.first_turn <= merged.last_turn + 1
                    and merged.first_turn <= existing.last_turn + 1
                ):
                    merged = merge_blocks(existing, merged)
                    changed = [c for c in changed if c.id != existing.id]
                else:
                    rest.append(existing)
            self.blocks = [*rest, merged]
            changed.append(merged)
            self.read_ids.update(t.id for t in block.turns)
            self.read_sessions.add(block.session_id)
        return changed

    def note(self, ids: Iterable[str], note: str | None = None) -> list[str]:
        """Mark blocks (by block id, or the id of any of their turns) as kept; returns the ids that matched.
        A block id from before a later round merged that block into a bigger one still finds it."""
        wanted = set(ids)
        spans = [_parse_block_id(i) for i in wanted]
        kept = []
        for i, block in enumerate(self.blocks):
            inside = any(
                sid == block.session_id and block.first_turn <= lo and hi <= block.last_turn
                for sid, lo, hi in (x for x in spans if x is not None)
            )
            if inside or block.id in wanted or any(t.id in wanted for t in block.turns):
                self.blocks[i] = block.model_copy(update={"noted": True})
                kept.append(block.id)
        self.trace.append(RoundTrace(round=self.rounds, action="note", new_evidence=len(kept), note=note))
        return kept

    def finish(self, note: str | None = None) -> None:
        """Record that the agent is done."""
        self.finished = True
        self.trace.append(RoundTrace(round=self.rounds, action="finish", note=note))

    def complete(self) -> list[Evidence]:
        """Give each of the ``top_k`` best sessions (by the fused ranking across rounds) at least one block:
        a session can rank high on its whole text and on several rounds without one of its messages making
        a round's top_k hits. Its best hit is expanded to a window like any other. Returns the new blocks."""
        with_blocks = {b.session_id for b in self.blocks}
        top = sorted(self.session_score, key=lambda sid: -self.session_score[sid])[: self.top_k]
        missing = [
            (self.best_hit[sid], 0.0) for sid in top if sid not in with_blocks and sid in self.best_hit
        ]
        if not missing:
            return []
        t0 = time.perf_counter()
        found = build_blocks(
            self.store,
            self.user_id,
            missing,
            self.window,
            {h.id for h, _ in missing},
            0,
            self.window_tokens,
            self.context_tokens,
            terms=self.terms,
        )
        new = self._absorb(found)
        self._record(
            "complete", self.rounds, t0, None, None, None, len(missing), new, "top sessions without a block"
        )
        return new

    def standing_blocks(self, k: int | None = None) -> list[Evidence]:
        """Up to ``k`` (``standing``) of this person's standing instructions and preferences
        (:func:`refind.standing.is_standing`) not already in the evidence: those sharing most words with the
        question first (each shared word weighted by how few candidates hold it), then the most recent; for a
        question that is not a request, at most ``_STANDING_NOT_REQUESTED`` and only those sharing a word.
        Each shows its standing sentence, the rest of its message cut (``[…]``). One query: the person's
        messages ranked by the rule's cue words (:data:`refind.standing.CUE_TERMS`), the first
        ``_STANDING_POOL`` of them checked by the rule."""
        k = self.standing if k is None else k
        if k <= 0 or not self.blocks:
            return []
        request = is_request(self.question)
        found = [h for h in standing_candidates(self.store, self.user_id) if h.id not in self.read_ids]
        if not found:
            return []
        asked = _stems(self.question)
        stems = {h.id: _stems(h.content) for h in found}
        # shared words weighted by how few of the candidates hold them: a word every instruction shares
        # ("app", "project") says little about which one bears on this question
        df: dict[str, int] = {}
        for words in stems.values():
            for w in words & asked:
                df[w] = df.get(w, 0) + 1
        n = len(found)
        overlap = {h.id: sum(math.log(1 + n / df[w]) for w in asked & stems[h.id]) for h in found}
        if not request:  # not a request: only those on its topic, fewer
            found, k = [h for h in found if overlap[h.id] > 0], min(k, _STANDING_NOT_REQUESTED)
        ranked = sorted(found, key=lambda h: (-overlap[h.id], -h.timestamp, h.id))[:k]

        def shown(text: str) -> str:  # the instruction itself, not the whole message it sits in
            sentence = standing_sentence(text)
            at = text.find(sentence) if sentence else -1
            if sentence is None or at < 0:
                return text
            end = at + len(sentence)
            while end < len(text) and text[end] in ".!?":
                end += 1
            said = text[at:end]
            before, after = text[:at].strip(), text[end:].strip()
            return f"{said} […]" if before or after else said

        return [  # at most a few: built as models, not the hot path's trusted dicts
            Evidence(
                id=f"{h.session_id}#{h.turn}-{h.turn}",
                session_id=h.session_id,
                session_date=h.timestamp,
                session_date_text=h.time_text,
                turns=[
                    Turn(
                        id=h.id,
                        turn=h.turn,
                        role=h.role,
                        content=shown(h.content),
                        timestamp=h.timestamp,
                        speaker=h.speaker,
                        time_text=h.time_text,
                        matched=True,
                        score=float(len(ranked) - i),  # packed best first; the block ranks no session
                    )
                ],
                rounds=[0],
                standing=True,
            )
            for i, h in enumerate(ranked)
        ]

    def _recency(self, blocks: Iterable[Evidence]) -> dict[str, float]:
        """For a question about the current state (:func:`asks_current_state`), each session's factor on
        its fused score: up to ``1 + latest_boost`` for the latest session, so that among (nearly)
        equally relevant sessions the later one ranks first. Empty otherwise."""
        if self.latest_boost <= 0 or not asks_current_state(self.question):
            return {}
        dates: dict[str, int] = {}
        for b in blocks:
            dates[b.session_id] = min(dates.get(b.session_id, b.session_date), b.session_date)
        return _recency_factors(dates, self.latest_boost)

    def keep_floor(self) -> None:
        """Take the evidence found so far as the floor of what follows: the rounds still to come (an LLM
        plan's, after the heuristic rounds it starts from) may add to what a budget shows of it, never push
        it out (:attr:`SearchResult.floor`, :func:`refind.evidence.pack_for` with a ``floor``). The floor is what a
        result would hold now: the top sessions without a block get theirs first (:meth:`complete`)."""
        if self.complete_missing:
            self.complete()
        self.floor = list(self.blocks)
        self.floor_shape = self.shape  # a later round may switch the shape (the search tool's breadth)

    def _final(self, blocks: Sequence[Evidence], shape: Shape | None = None) -> list[Evidence]:
        """``blocks`` with their final relevance: the session's fused score across rounds (times the
        latest-first factor), then the block's own best hit; a breadth question's near duplicates dropped."""
        recency = self._recency(blocks)
        scored = [
            b.model_copy(
                update={
                    "score": round(
                        self.session_score.get(b.session_id, 0.0) * recency.get(b.session_id, 1.0)
                        + b.score / 1000,
                        8,
                    )
                }
            )
            for b in blocks
        ]
        # a breadth question's near duplicates go, but not what came before the shape was set (an LLM plan's
        # heuristic rounds)
        if (shape or self.shape) == "breadth":
            scored = drop_near_duplicates(scored, keep=lambda b: min(b.rounds, default=0) < self.wide_from)
        return scored

    def result(self, max_tokens: int | None = None) -> SearchResult:
        """The evidence in session and time order (noted blocks if any were noted, else all, after
        :meth:`complete`), packed for ``max_tokens`` when given (:func:`refind.evidence.pack`: what
        ``SearchResult.to_text(max_tokens)`` of the unpacked result shows)."""
        noted = [b for b in self.blocks if b.noted]
        if not noted and self.complete_missing:
            self.complete()
        chosen = noted or self.blocks
        standing = self.standing_blocks()
        blocks = with_info(self.store, self.user_id, [*self._final(chosen), *standing])  # headers show them
        floor = None
        if self.floor is not None and not noted:
            floor = with_info(
                self.store, self.user_id, [*self._final(self.floor, self.floor_shape), *standing]
            )
        result = SearchResult(
            question=self.question,
            user_id=self.user_id,
            now=self.now,
            agent=self.agent,
            evidence=order_evidence(blocks),
            trace=list(self.trace),
            context_tokens=self.context_tokens,
            hit_tokens=self.hit_tokens,
            segment_turns=self.segment_turns,
            shape=self.shape,
            floor=floor,
            floor_shape=self.floor_shape if floor is not None else None,
        )
        return result.packed(max_tokens) if max_tokens is not None else result


_WORDS = re.compile(r"\w+")
_STANDING_POOL = 200
_STANDING_NOT_REQUESTED = 2  # instructions offered for a question that is not a request (on its topic only)
_STEM_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "you",
        "your",
        "with",
        "that",
        "this",
        "what",
        "how",
        "can",
        "have",
        "about",
        "from",
        "are",
        "was",
        "were",
        "will",
        "would",
        "could",
        "should",
        "there",
        "their",
        "they",
        "them",
        "then",
        "than",
        "when",
        "which",
        "who",
        "whom",
        "why",
        "into",
        "also",
        "just",
        "like",
        "want",
        "need",
        "make",
        "sure",
        "please",
        "always",
        "never",
        "prefer",
        "rather",
        "future",
        "forward",
        "whenever",
        "avoid",
        "remember",
        "stick",
    ]
)


_STANDING_SEEN: weakref.WeakKeyDictionary[Any, OrderedDict[str, tuple[int, list[Hit]]]] = (
    weakref.WeakKeyDictionary()
)
_STANDING_USERS = 1024  # people whose candidates a store keeps
_STANDING_LOCK = threading.Lock()


def standing_candidates(store: Reader, user_id: str) -> list[Hit]:
    """The person's messages that state a standing instruction or preference, among the first
    ``_STANDING_POOL`` of their own messages ranked by the rule's cue words: the same for every question, so
    an engine that says which version of the index it searches (``generation()``, the Lucene engine) has
    them found once per version and person, not once per search."""
    generation = getattr(store, "generation", None)
    version = generation() if generation is not None else None
    if version is not None:
        with _STANDING_LOCK:
            per = _STANDING_SEEN.get(store)
            kept = per.get(user_id) if per is not None else None
        if kept is not None and kept[0] == version:
            return kept[1]
    pool = store.query(user_id, CUE_TERMS, _STANDING_POOL, Filters(roles=["user"]), content=True)
    found = [h for h in pool if is_standing(h.role, h.content)]
    if version is not None:
        with _STANDING_LOCK:
            per = _STANDING_SEEN.setdefault(store, OrderedDict())
            per[user_id] = (version, found)
            per.move_to_end(user_id)
            while len(per) > _STANDING_USERS:
                per.popitem(last=False)
    return found


def _stems(text: str) -> set[str]:
    """Crude content stems of ``text`` for topic overlap (lowercase words of 3+ letters, a plural or verb
    ending cut, common function words and the rule's own cue words dropped): no bridge call per message."""
    out = set()
    for w in _WORDS.findall(text.lower()[:8000]):
        if w.isdigit():
            continue
        w = w.rstrip("0123456789") or w  # "html5" and "html", "python3" and "python"
        if len(w) < 3 or w in _STEM_STOP:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                break
        out.add(w)
    return out


def drop_near_duplicates(
    blocks: list[Evidence], threshold: float = 0.8, keep: Callable[[Evidence], bool] | None = None
) -> list[Evidence]:
    """``blocks`` without those whose hit turns say what a more relevant kept block's hit turns already say
    (word-set Jaccard similarity at least ``threshold``): a breadth question wants many different places.
    Blocks for which ``keep`` is true are never dropped (others are still compared with them)."""
    kept: list[tuple[Evidence, frozenset[str]]] = []
    for block in sorted(blocks, key=lambda b: -b.score):
        words = frozenset(
            w for t in block.turns if t.matched for w in _WORDS.findall(t.content.lower()[:20_000])
        )
        if (
            (keep is None or not keep(block))
            and words
            and any(len(words & w) / len(words | w) >= threshold for _, w in kept if w)
        ):
            continue
        kept.append((block, words))
    ids = {b.id for b, _ in kept}
    return [b for b in blocks if b.id in ids]


def with_info(store: Reader, user_id: str, blocks: list[Evidence]) -> list[Evidence]:
    """``blocks`` with their sessions' title, source and project (one lookup for all)."""
    if not blocks:
        return blocks
    infos = store.session_infos(user_id, list(dict.fromkeys(b.session_id for b in blocks)))
    if not infos:
        return blocks
    out = []
    for b in blocks:
        i = infos.get(b.session_id)
        out.append(
            b
            if i is None
            else b.model_copy(update={"title": i.title, "source": i.source, "project": i.project})
        )
    return out


def _recency_factors(dates: dict[str, int], boost: float) -> dict[str, float]:
    """Per session ``1 + boost * r``, r from 0 (earliest) to 1 (latest) by date rank."""
    order = sorted(dates, key=lambda sid: (dates[sid], sid))
    n = max(len(order) - 1, 1)
    return {sid: 1.0 + boost * (i / n) for i, sid in enumerate(order)}


def _parse_block_id(block_id: str) -> tuple[str, int, int] | None:
    """``session#first-last`` -> (session, first, last); None for anything else."""
    sid, sep, span = block_id.rpartition("#")
    lo, dash, hi = span.partition("-")
    if not sep or not dash or not lo.isdigit() or not hi.isdigit():
        return None
    return sid, int(lo), int(hi)
