"""SearchSession: the state of one question's search (its reading, read-set, collected evidence, trace).

A session runs the rounds an agent asks for, each given as one :class:`~refind.models.Round` value, through a
few primitives: :meth:`~SearchSession.words` (a BM25 round over what is still unread),
:meth:`~SearchSession.period` (a period's sessions, newest first) and :meth:`~SearchSession.openings` (the opening messages of given sessions). Each
merges what it found into the evidence, credits its sessions in the fused ranking across rounds
(:mod:`refind.fusion`) and records the round in the trace as the same value. Which round runs how is the
agents' business (:mod:`refind.agent.kinds`); the session holds the state and is the only one to change it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import replace
from types import MappingProxyType
from typing import Literal

from refind.config import DEFAULTS
from refind.embed.base import Embedder
from refind.evidence import order_evidence, pack, rendered_tokens
from refind.fusion import Fusion, credit, final_score, reciprocal
from refind.models import Evidence, Hit, Round, RoundTrace, Shape, TraceAction, Turn
from refind.policy import POLICY
from refind.query.reading import QuestionReading, ReadingRules, read_question
from refind.result import SearchResult
from refind.search.round import blocks_of, build_blocks, content_terms, round_spec, run_round
from refind.search.standing import fact_blocks, sentence_vectors, standing_blocks
from refind.store.base import Filters, Reader

__all__ = ["ReadSet", "SearchSession", "drop_near_duplicates", "merge_blocks", "with_info"]

ReadSet = Literal["message", "session", "off"]

_WORD = re.compile(r"\w+")


def merge_blocks(a: Evidence, b: Evidence) -> Evidence:
    """One block for two overlapping or adjacent blocks of the same session (found by two rounds)."""
    turns: dict[int, Turn] = {t.turn: t for t in a.turns}
    for t in b.turns:
        if t.turn in turns:
            old = turns[t.turn]
            near = [x for x in (old.nearness, t.nearness) if x is not None]
            turns[t.turn] = old.model_copy(
                update={
                    "matched": old.matched or t.matched,
                    "score": max(old.score, t.score),
                    "nearness": max(near) if near else None,
                }
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


class SearchSession:
    """What an agent works with for one question.

    ``reading`` is the question as :func:`refind.query.read_question` read it. The round primitives skip what earlier rounds returned (the read-set: messages, or whole
    sessions), merge new blocks into the collected evidence and record each round in the trace;
    :meth:`note` keeps blocks; :meth:`result` returns the noted blocks (or, when nothing was noted, all).
    Agents read the state through properties and change it only through these methods.
    """

    def __init__(
        self,
        store: Reader,
        user_id: str,
        reading: QuestionReading,
        *,
        top_k: int = DEFAULTS.top_k,
        window: int = DEFAULTS.window,
        readset: ReadSet = DEFAULTS.readset,
        fusion: Fusion | None = None,
        overfetch: int = DEFAULTS.overfetch,
        agent: str = "heuristic",
        context_tokens: int | None = DEFAULTS.context_tokens,
        window_tokens: int | None = DEFAULTS.window_tokens,
        hit_tokens: int | None = DEFAULTS.hit_tokens,
        latest_boost: float = DEFAULTS.latest_boost,
        standing: int = DEFAULTS.standing,
        standing_facts: int = DEFAULTS.standing_facts,
        scope: Sequence[str] | None = None,
        segment_turns: int = DEFAULTS.segment_turns,
        embedder: Embedder | None = None,
    ) -> None:
        self.reading = reading
        self._readings: dict[ReadingRules, QuestionReading] = {reading.rules: reading}
        self.store = store
        self.scope = list(scope) if scope is not None else None  # the sessions searched (None: all)
        self.user_id = user_id
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
        self.standing_facts = standing_facts  # the person's lasting facts offered beside it (0: none)
        self.segment_turns = segment_turns  # long threads are packed in parts of this many turns (0: whole)
        self.wide_from = 0  # the first round of the breadth shape (widen)
        self.floor: list[Evidence] | None = None  # the blocks a plan only adds to (keep_floor)
        self.floor_shape: Shape = "lookup"  # the shape they were found and are packed under
        self.terms: list[str] = []  # the analyzed terms of every round so far
        self.read_ids: set[str] = set()
        self.read_sessions: set[str] = set()
        self._blocks: list[Evidence] = []
        self._meaning: list[Evidence] = []  # the round by meaning's blocks: beside the word evidence
        self._trace: list[RoundTrace] = []
        self.finished = False
        # give the top sessions without a block one at result time (an agent that hands on only what its
        # model saw turns this off: keep_seen)
        self.complete_missing = True
        self._seen_before: set[str] = set()
        # session-level fusion across rounds: each round credits the sessions of its (over-fetched, fused)
        # hits by reciprocal rank, so a session several rounds point at outranks a one-off
        self._session_score: dict[str, float] = {}
        self.rankings: list[list[str]] = []  # every session order credited, in round order
        self.best_hit: dict[str, Hit] = {}  # each session's best unread hit, from the first round that saw it
        self.shape: Shape = "lookup"  # the question's shape as the agent read it (refind.query.shape)
        self.shape_reason: str | None = None
        self._question_terms: list[str] | None = None
        # the question's vector for a round by meaning, and the nearness of the person's facts (None: words only)
        self.embedder = embedder
        self._question_vector: list[float] | None = None
        # the question's vector and its nearest messages under no round's own filter, found beside the word
        # rounds (start_meaning): the round by meaning then only reads them
        self._near: Future[tuple[list[float], list[Hit]]] | None = None
        self._near_filters: Filters | None = None

    # ------------------------------------------------------------------ what agents read

    @property
    def question(self) -> str:
        """The question's text."""
        return self.reading.text

    @property
    def now(self) -> int | None:
        """The question's "now" (epoch ms), which its time cues are resolved against."""
        return self.reading.now

    @property
    def blocks(self) -> list[Evidence]:
        """The evidence collected so far (a copy)."""
        return list(self._blocks)

    @property
    def trace(self) -> list[RoundTrace]:
        """Every round and step so far (a copy)."""
        return list(self._trace)

    @property
    def session_score(self) -> Mapping[str, float]:
        """Each session's fused score across the rounds so far (read-only)."""
        return MappingProxyType(self._session_score)

    @property
    def rounds(self) -> int:
        """Rounds run so far (searches and browses)."""
        return sum(1 for t in self._trace if t.is_round)

    def reading_for(self, rules: ReadingRules) -> QuestionReading:
        """The question as read under ``rules`` (the session's own reading when they are its rules; read once
        per rules otherwise, by :func:`refind.query.read_question`)."""
        got = self._readings.get(rules)
        if got is None:
            r = self.reading
            got = read_question(r.text, now=r.now, options=r.options, rules=rules)
            self._readings[rules] = got
        return got

    def question_terms(self) -> list[str]:
        """The index terms of the question as asked (analyzed once)."""
        if self._question_terms is None:
            self._question_terms = self.store.analyze(self.reading.text)
        return self._question_terms

    @property
    def can_embed(self) -> bool:
        """Whether this search has an embedder, so that a round by meaning can run."""
        return self.embedder is not None

    def question_vector(self) -> list[float] | None:
        """The question's vector (embedded once), or None without an embedder."""
        if self.embedder is None:
            return None
        if self._question_vector is None:
            if self._near is not None:
                self._question_vector = self._near.result()[0]
            else:
                self._question_vector = [float(x) for x in self.embedder.embed([self.reading.text])[0]]
        return self._question_vector

    def start_meaning(self, pool: Executor) -> None:
        """Embed the question and find its nearest messages (within this search's scope, under no round's
        time filter or roles) in ``pool``, now: the model and the vector search run on the other core while
        the word rounds run, and a round by meaning without a filter of its own only reads what they found.
        Nothing without an embedder; once per search."""
        embedder = self.embedder
        if embedder is None or self._near is not None:
            return
        filters = self._meaning_filters(None, None, None)

        def nearest() -> tuple[list[float], list[Hit]]:
            vector = [float(x) for x in embedder.embed([self.reading.text])[0]]
            return vector, self._nearest(vector, filters)

        self._near_filters = filters
        self._near = pool.submit(nearest)

    def _meaning_filters(
        self, date_from: int | None, date_to: int | None, roles: Sequence[str] | None
    ) -> Filters:
        """A round by meaning's filters: what it marks as read is what it ranks, not what it skips."""
        return replace(self._filters(date_from, date_to, roles), exclude_ids=None, exclude_sessions=None)

    def _nearest(
        self, vector: Sequence[float], filters: Filters, hits: int = POLICY.meaning_hits
    ) -> list[Hit]:
        """The person's messages nearest ``vector`` under ``filters`` (the ``POLICY.meaning_fetch`` nearest, or
        ``hits`` if more), at or above the cosine floor."""
        ranked = self.store.knn(self.user_id, vector, max(POLICY.meaning_fetch, hits), filters)
        return [h for h in ranked if h.score >= POLICY.meaning_floor]

    def _vector(self, text: str) -> list[float] | None:
        """The vector of ``text`` (an agent's own words for a round by meaning), or None without an embedder."""
        return None if self.embedder is None else [float(x) for x in self.embedder.embed([text])[0]]

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text``, as every search of this session analyzes it."""
        return self.store.analyze(text)

    def term_counts(self, text: str) -> dict[str, int]:
        """For each distinct term of ``text``: how many of this user's messages hold it."""
        return self.store.term_counts(self.user_id, text)

    def evidence_sessions(self) -> dict[str, int]:
        """The sessions with evidence (standing blocks left out), each with its earliest block's date."""
        dates: dict[str, int] = {}
        for b in self._blocks:
            if not b.standing:
                dates[b.session_id] = min(dates.get(b.session_id, b.session_date), b.session_date)
        return dates

    # ------------------------------------------------------------------ the question's shape

    def set_shape(self, shape: Shape, reason: str | None = None) -> None:
        """Record the question's shape (``lookup``, ``breadth``, ``period``) the agent plans by; the result
        and its trace say it."""
        self.shape = shape
        self.shape_reason = reason
        if shape != "lookup":  # a lookup is what every search did before shapes: nothing to add
            self.step("shape", f"{shape}: {reason}" if reason else shape)

    def widen(self, reason: str, k: int = POLICY.breadth_k, window: int = POLICY.breadth_window) -> None:
        """Switch to the ``breadth`` shape (the answer is spread over many places): later rounds take ``k``
        times ``top_k`` hits with at most ``window`` turns around each, and the result packs for breadth.
        Once only: a session already in breadth keeps its settings."""
        if self.shape == "breadth":
            return
        self.set_shape("breadth", reason)
        self.top_k *= k
        self.window = min(self.window, window)
        self.wide_from = self.rounds + 1  # near duplicates are dropped among the blocks found from here on

    # ------------------------------------------------------------------ round primitives

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

    def words(self, round_: Round) -> list[Evidence]:
        """A round of BM25 over ``round_.keywords`` among what is still unread (its time filter and roles
        applied); returns the blocks it added or extended (best first). ``round_.weight`` scales how much its
        session ranking counts in the final ranking; a round of weight 0 ranks its hits' sessions by their
        hit sums (no session-document query). Roles keep the round's hits to messages of those roles (their
        windows still show both sides)."""
        if not round_.keywords:
            raise ValueError(f"a words round needs keywords: {round_!r}")
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        weight = round_.weight
        content = content_terms(round_.keywords)  # a hit needs one of them when the words hold function words
        spec = round_spec(
            round_.keywords,
            self.top_k,
            self.window,
            self._filters(round_.date_from, round_.date_to, round_.roles),
            # a round that does not count in the session ranking (weight 0) fuses its hits with its own
            # sessions' hit sums (ReFind's rule) instead of asking the engine to rank session documents
            self.fusion if weight > 0 else replace(self.fusion, sessions="hits"),
            self.overfetch,
            read=self.readset != "off",
            titles=weight > 0,  # title words count for the session: its title's rank, among those hit
            content=content,
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
        self._record("search", round_, round_no, t0, len(hits), new, content_terms=content)
        return new

    def meaning(self, round_: Round, *, hits: int = POLICY.meaning_hits) -> list[Evidence]:
        """A round by meaning: the person's messages whose vectors are nearest the question's (cosine,
        :meth:`refind.store.base.Reader.knn`; its time filter and roles apply inside the search). Its
        sessions, by their nearest message, are credited at ``round_.weight`` in the fused ranking. Its
        ``hits`` nearest messages are marked with their ``nearness``: in the evidence where a word round
        returned them, else in blocks of their own (``meaning``, windows as for word hits). A budget offers
        them, nearest first, in a reserved share when the word evidence it packs does not show them
        (:func:`refind.evidence.pack`). Nothing without an embedder.

        A round with words of its own (``round_.keywords``: an agent's search by meaning, the LLM agent's
        ``search_meaning`` tool) ranks by their vector instead of the question's; its unread hits join the
        evidence as a words round's do (blocks to see and note; no ``nearness`` marks, so the budget's share
        for meaning stays the question's)."""
        own = round_.keywords
        vector = self._vector(own) if own else self.question_vector()
        if vector is None:
            return []
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        filters = self._meaning_filters(round_.date_from, round_.date_to, round_.roles)
        if (
            not own
            and self._near is not None
            and filters == self._near_filters
            and hits <= POLICY.meaning_hits
        ):
            ranked = self._near.result()[1]  # found beside the word rounds (start_meaning)
        else:
            ranked = self._nearest(vector, filters, hits)
        self._credit((h.session_id for h in ranked), round_.weight)
        if own:
            unread = [h for h in ranked if not self._is_read(h)][:hits]
            found = self._windows([(h, h.score) for h in unread], round_no)
            new = self._absorb(found)
            self._record("search", round_, round_no, t0, len(ranked), new)
            return new
        near = {h.id: h.score for h in ranked[:hits]}
        self._blocks = [_with_nearness(b, near) for b in self._blocks]  # those word rounds returned
        unread = [h for h in ranked[:hits] if not self._is_read(h)]
        found = self._windows([(h, h.score) for h in unread], round_no)
        new = []
        for block in found:  # the turns of its windows that no earlier round returned
            turns = [t for t in block.turns if t.id not in self.read_ids]
            if any(t.matched for t in turns):
                span = f"{block.session_id}#{turns[0].turn}-{turns[-1].turn}"
                block = block.model_copy(update={"turns": turns, "meaning": True, "id": span})
                new.append(_with_nearness(block, near))
        for h in unread:
            self.best_hit.setdefault(h.session_id, h)
        self._seen_before = set(self.read_ids)
        for block in new:
            self.read_ids.update(t.id for t in block.turns)
        self._meaning.extend(new)
        self._record("search", round_, round_no, t0, len(ranked), new)
        return new

    def period(
        self, round_: Round, *, k: int | None = None, opening: int = POLICY.period_opening
    ) -> list[Evidence]:
        """Scroll ``round_``'s period session by session: up to ``k`` (``top_k``) of its sessions, newest first,
        each shown by its opening ``opening`` messages inside the period (where a conversation says what it is
        about) and its newest ones (``k`` shared among the sessions found), with their windows. Sessions
        already in the evidence are skipped."""
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        date_from, date_to = round_.date_from, round_.date_to
        k = k or self.top_k
        taken = {b.session_id for b in self._blocks}
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
        scored = [(h, reciprocal(rank[h.session_id] + 1, self.fusion.k0)) for h in hits]
        return self._browsed(scored, sessions, round_, round_no, t0)

    def openings(self, round_: Round, sessions: Sequence[str], opening: int) -> list[Evidence]:
        """The unread of the opening ``opening`` messages of ``sessions``, browsed as one round (one window
        query); nothing when ``sessions`` is empty or all of it was read."""
        if not sessions:
            return []
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        groups = self.store.windows(self.user_id, [(sid, 0, opening - 1) for sid in sessions])
        hits = [h for group in groups for h in group if not self._is_read(h)]
        if not hits:
            return []
        scored = [(h, reciprocal(1 + i, self.fusion.k0)) for i, h in enumerate(hits)]
        return self._browsed(scored, list(sessions), round_, round_no, t0)

    def _browsed(
        self, scored: list[tuple[Hit, float]], sessions: list[str], round_: Round, round_no: int, t0: float
    ) -> list[Evidence]:
        """A browse's hits (no keywords: all of them are the round's matches) as blocks with their windows,
        its sessions credited at the round's weight, recorded in the trace; returns the new blocks."""
        found = self._windows(scored, round_no)
        self._credit(sessions, round_.weight)
        new = self._absorb(found)
        self._record("browse", round_, round_no, t0, len(scored), new)
        return new

    def _is_read(self, hit: Hit) -> bool:
        if self.readset == "session":
            return hit.session_id in self.read_sessions
        return hit.id in self.read_ids

    def _credit(self, sessions: Iterable[str], weight: float = 1.0) -> None:
        """Reciprocal-rank fusion of the rounds' session rankings: the final session order."""
        self.rankings.append(credit(self._session_score, sessions, weight, self.fusion.k0))

    def _record(
        self,
        action: TraceAction,
        round_: Round | None,
        round_no: int,
        t0: float,
        hits: int,
        new: list[Evidence],
        note: str | None = None,
        *,
        content_terms: list[str] | None = None,
    ) -> None:
        """The trace entry of a round (its :class:`Round`'s fields) or of the result's completion (no round)."""
        self._trace.append(
            RoundTrace(
                round=round_no,
                action=action,
                kind=round_.kind if round_ else None,
                keywords=round_.keywords if round_ and action == "search" else None,
                date_from=round_.date_from if round_ else None,
                date_to=round_.date_to if round_ else None,
                weight=round_.weight if round_ else None,
                roles=list(round_.roles) if round_ and round_.roles is not None else None,
                content_terms=content_terms,
                hits=hits,
                new_evidence=len(new),
                new_turns=sum(1 for b in new for t in b.turns if t.id not in self._seen_before),
                tokens=rendered_tokens(new, context_tokens=self.context_tokens, hit_tokens=self.hit_tokens),
                ms=round((time.perf_counter() - t0) * 1000, 3),
                note=(round_.label or None) if round_ else note,
            )
        )

    def _windows(
        self, scored: Sequence[tuple[Hit, float]], round_no: int, *, terms: Sequence[str] = ()
    ) -> list[Evidence]:
        """:func:`build_blocks` of ``scored`` (every one a match) with this search's windows and token caps."""
        return build_blocks(
            self.store,
            self.user_id,
            scored,
            self.window,
            {h.id for h, _ in scored},
            round_no,
            self.window_tokens,
            self.context_tokens,
            terms=terms,
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
            for existing in self._blocks:
                if existing.session_id == merged.session_id and (
                    existing.first_turn <= merged.last_turn + 1
                    and merged.first_turn <= existing.last_turn + 1
                ):
                    merged = merge_blocks(existing, merged)
                    changed = [c for c in changed if c.id != existing.id]
                else:
                    rest.append(existing)
            self._blocks = [*rest, merged]
            changed.append(merged)
            self.read_ids.update(t.id for t in block.turns)
            self.read_sessions.add(block.session_id)
        return changed

    # ------------------------------------------------------------------ steps that search nothing

    def step(self, action: TraceAction, note: str | None = None, *, tokens: int = 0, ms: float = 0.0) -> None:
        """Record a step that searched nothing (an LLM call, a retry, a corrected date, a fallback...)."""
        self._trace.append(RoundTrace(round=self.rounds, action=action, tokens=tokens, ms=ms, note=note))

    def note(self, ids: Iterable[str], note: str | None = None) -> list[str]:
        """Mark blocks (by block id, or the id of any of their turns) as kept; returns the ids that matched.
        A block id from before a later round merged that block into a bigger one still finds it."""
        wanted = set(ids)
        spans = [_parse_block_id(i) for i in wanted]
        kept = []
        for i, block in enumerate(self._blocks):
            inside = any(
                sid == block.session_id and block.first_turn <= lo and hi <= block.last_turn
                for sid, lo, hi in (x for x in spans if x is not None)
            )
            if inside or block.id in wanted or any(t.id in wanted for t in block.turns):
                self._blocks[i] = block.model_copy(update={"noted": True})
                kept.append(block.id)
        self._trace.append(RoundTrace(round=self.rounds, action="note", new_evidence=len(kept), note=note))
        return kept

    def unnote(self, note: str) -> int:
        """Keep every block (noted or not) in the result again; records ``note`` when any was noted.
        Returns how many were."""
        noted = sum(1 for b in self._blocks if b.noted)
        if noted:
            self._blocks = [b.model_copy(update={"noted": False}) if b.noted else b for b in self._blocks]
            self.step("note", f"{noted} {note}")
        return noted

    def keep_seen(self, shown: set[str], unseen_tokens: int) -> None:
        """Hand on what an agent's model saw or noted: the noted blocks when any were noted; else the turns
        with ids in ``shown``, plus the unseen rest packed into at most ``unseen_tokens`` (best first). Top
        sessions the model never saw are not added at result time."""
        self.complete_missing = False
        if any(b.noted for b in self._blocks):
            return
        seen: list[Evidence] = []
        unseen: list[Evidence] = []
        for block in self._blocks:
            for keep, runs in ((True, seen), (False, unseen)):
                run: list[Turn] = []
                for t in [*block.turns, None]:
                    if t is not None and (t.id in shown) == keep and (not run or t.turn == run[-1].turn + 1):
                        run.append(t)
                        continue
                    if run:
                        runs.append(
                            block.model_copy(
                                update={
                                    "id": f"{block.session_id}#{run[0].turn}-{run[-1].turn}",
                                    "turns": run,
                                }
                            )
                        )
                    run = [t] if t is not None and (t.id in shown) == keep else []
        rest = (
            pack(
                unseen,
                unseen_tokens,
                context_tokens=self.context_tokens,
                hit_tokens=self.hit_tokens,
                segment_turns=self.segment_turns,
            )
            if unseen and unseen_tokens > 0
            else []
        )
        self._blocks = [*seen, *rest]

    def finish(self, note: str | None = None) -> None:
        """Record that the agent is done."""
        self.finished = True
        self._trace.append(RoundTrace(round=self.rounds, action="finish", note=note))

    # ------------------------------------------------------------------ the result

    def complete(self) -> list[Evidence]:
        """Give each of the ``top_k`` best sessions (by the fused ranking across rounds) at least one block:
        a session can rank high on its whole text and on several rounds without one of its messages making
        a round's top_k hits. Its best hit is expanded to a window like any other. Returns the new blocks."""
        with_blocks = {b.session_id for b in [*self._blocks, *self._meaning]}
        top = sorted(self._session_score, key=lambda sid: -self._session_score[sid])[: self.top_k]
        missing = [
            (self.best_hit[sid], 0.0) for sid in top if sid not in with_blocks and sid in self.best_hit
        ]
        if not missing:
            return []
        t0 = time.perf_counter()
        found = self._windows(missing, 0, terms=self.terms)
        new = self._absorb(found)
        self._record("complete", None, self.rounds, t0, len(missing), new, "top sessions without a block")
        return new

    def standing_blocks(self, k: int | None = None) -> list[Evidence]:
        """Up to ``k`` (``standing``) of this person's standing instructions and preferences not already in
        the evidence (:func:`refind.search.standing.standing_blocks`); none when there is no evidence."""
        k = self.standing if k is None else k
        if (k <= 0 and self.standing_facts <= 0) or not self._blocks:
            return []
        nearness = self._fact_nearness if self.embedder is not None else None
        return standing_blocks(
            self.store, self.user_id, self.reading, k, self.read_ids, self.standing_facts, nearness
        )

    def _fact_nearness(self, sentences: Sequence[str]) -> list[float]:
        """Each standing sentence's cosine to the question (their vectors kept: sentence_vectors)."""
        assert self.embedder is not None
        q = self.question_vector() or []
        return [
            sum(a * b for a, b in zip(q, v, strict=True)) for v in sentence_vectors(self.embedder, sentences)
        ]

    def facts(self, k: int | None = None) -> list[Evidence]:
        """Up to ``k`` (``standing_facts``) of the person's current lasting facts that bear on the question, best
        first, as the result would offer them (:func:`refind.search.standing.fact_blocks`), whether or not a
        round has returned them: what an agent may show its model before any round runs."""
        k = self.standing_facts if k is None else k
        if k <= 0:
            return []
        nearness = self._fact_nearness if self.embedder is not None else None
        return fact_blocks(self.store, self.user_id, self.reading, k, nearness)

    def _recency(self, blocks: Iterable[Evidence]) -> dict[str, float]:
        """For a question about the current state, each session's factor on its fused score: up to
        ``1 + latest_boost`` for the latest session, so that among (nearly) equally relevant sessions the
        later one ranks first. Empty otherwise."""
        if self.latest_boost <= 0 or not self.reading.asks_current:
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
        self.floor = list(self._blocks)
        self.floor_shape = self.shape  # a later round may switch the shape (the search tool's breadth)

    def _final(self, blocks: Sequence[Evidence], shape: Shape | None = None) -> list[Evidence]:
        """``blocks`` with their final relevance (:func:`refind.fusion.final_score`); a breadth question's
        near duplicates dropped."""
        recency = self._recency(blocks)
        scored = [
            b.model_copy(
                update={
                    "score": final_score(
                        self._session_score.get(b.session_id, 0.0), recency.get(b.session_id, 1.0), b.score
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
        noted = [b for b in self._blocks if b.noted]
        if not noted and self.complete_missing:
            self.complete()
        chosen = noted or self._blocks
        standing = self.standing_blocks()
        meaning = [] if noted else self._final(self._meaning, "lookup")
        blocks = with_info(self.store, self.user_id, [*self._final(chosen), *meaning, *standing])  # headers
        floor = None
        if self.floor is not None and not noted:
            floor = with_info(
                self.store, self.user_id, [*self._final(self.floor, self.floor_shape), *meaning, *standing]
            )
        result = SearchResult(
            question=self.question,
            user_id=self.user_id,
            now=self.now,
            agent=self.agent,
            evidence=order_evidence(blocks),
            trace=list(self._trace),
            context_tokens=self.context_tokens,
            hit_tokens=self.hit_tokens,
            segment_turns=self.segment_turns,
            shape=self.shape,
            floor=floor,
            floor_shape=self.floor_shape if floor is not None else None,
        )
        return result.packed(max_tokens) if max_tokens is not None else result


def drop_near_duplicates(
    blocks: list[Evidence],
    threshold: float = POLICY.near_duplicate,
    keep: Callable[[Evidence], bool] | None = None,
) -> list[Evidence]:
    """``blocks`` without those whose hit turns say what a more relevant kept block's hit turns already say
    (word-set Jaccard similarity at least ``threshold``): a breadth question wants many different places.
    Blocks for which ``keep`` is true are never dropped (others are still compared with them)."""
    kept: list[tuple[Evidence, frozenset[str]]] = []
    for block in sorted(blocks, key=lambda b: -b.score):
        words = frozenset(
            w
            for t in block.turns
            if t.matched
            for w in _WORD.findall(t.content.lower()[: POLICY.near_duplicate_chars])
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


def _with_nearness(block: Evidence, near: dict[str, float]) -> Evidence:
    """``block`` with the turns the round by meaning found marked by their cosine to the question."""
    if not any(t.id in near for t in block.turns):
        return block
    turns = [t.model_copy(update={"nearness": near[t.id]}) if t.id in near else t for t in block.turns]
    return block.model_copy(update={"turns": turns})


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
