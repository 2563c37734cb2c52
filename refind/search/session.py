"""SearchSession: the state of one question's search (read-set, collected evidence, trace)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Literal

from refind.evidence import fit_blocks, merge_blocks, order_evidence, render
from refind.models import Evidence, RoundTrace, SearchResult
from refind.search.round import Fusion, build_blocks, search_round
from refind.store.base import Filters, Store
from refind.tokens import count_tokens

__all__ = ["ReadSet", "SearchSession"]

ReadSet = Literal["message", "session", "off"]


class SearchSession:
    """What an agent works with for one question.

    :meth:`search` runs a round that skips what earlier rounds returned (the read-set: messages, or whole
    sessions), merges the new blocks into the collected evidence and records the round in the trace.
    :meth:`note` keeps blocks; :meth:`result` returns the noted blocks (or, when nothing was noted, all).
    """

    def __init__(
        self,
        store: Store,
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
    ) -> None:
        self.store = store
        self.user_id = user_id
        self.question = question
        self.now = now
        self.top_k = top_k
        self.window = window
        self.readset = readset
        self.fusion = fusion or Fusion()
        self.overfetch = overfetch
        self.agent = agent
        self.read_ids: set[str] = set()
        self.read_sessions: set[str] = set()
        self.blocks: list[Evidence] = []
        self.trace: list[RoundTrace] = []
        self.finished = False
        self._seen_before: set[str] = set()

    @property
    def rounds(self) -> int:
        """Searches run so far."""
        return sum(1 for t in self.trace if t.action in {"search", "browse"})

    def _filters(self, date_from: int | None, date_to: int | None) -> Filters:
        return Filters(
            time_from=date_from,
            time_to=date_to,
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
    ) -> list[Evidence]:
        """One round over what is still unread; returns the blocks it added or extended (best first)."""
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        found, hits = search_round(
            self.store,
            self.user_id,
            keywords,
            top_k=top_k or self.top_k,
            window=self.window,
            filters=self._filters(date_from, date_to),
            fusion=self.fusion,
            overfetch=self.overfetch,
            round_no=round_no,
        )
        new = self._absorb(found)
        self._record("search", round_no, t0, keywords, date_from, date_to, len(hits), new, note)
        return new

    def browse(
        self, date_from: int | None, date_to: int | None, *, k: int | None = None, note: str | None = None
    ) -> list[Evidence]:
        """Scroll to a period: the newest unread messages in the range (no keywords), with their windows."""
        t0 = time.perf_counter()
        round_no = self.rounds + 1
        hits = self.store.browse(self.user_id, k or self.top_k, self._filters(date_from, date_to))
        # no BM25 here: rank by recency, on the same scale as fused scores
        scored = [(h, 1.0 / (self.fusion.k0 + i + 1)) for i, h in enumerate(hits)]
        found = build_blocks(self.store, self.user_id, scored, self.window, {h.id for h in hits}, round_no)
        new = self._absorb(found)
        self._record("browse", round_no, t0, None, date_from, date_to, len(hits), new, note)
        return new

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
                tokens=count_tokens(render(new)) if new else 0,
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
        """Mark blocks (by block id, or the id of any of their turns) as kept; returns the ids that matched."""
        wanted = set(ids)
        kept = []
        for i, block in enumerate(self.blocks):
            if block.id in wanted or any(t.id in wanted for t in block.turns):
                self.blocks[i] = block.model_copy(update={"noted": True})
                kept.append(block.id)
        self.trace.append(RoundTrace(round=self.rounds, action="note", new_evidence=len(kept), note=note))
        return kept

    def finish(self, note: str | None = None) -> None:
        """Record that the agent is done."""
        self.finished = True
        self.trace.append(RoundTrace(round=self.rounds, action="finish", note=note))

    def result(self, max_tokens: int | None = None) -> SearchResult:
        """The evidence in session and time order (noted blocks if any were noted, else all), trimmed to
        ``max_tokens`` by dropping the least relevant blocks."""
        noted = [b for b in self.blocks if b.noted]
        blocks = noted or list(self.blocks)
        if max_tokens is not None:
            blocks = fit_blocks(blocks, max_tokens)
        return SearchResult(
            question=self.question,
            user_id=self.user_id,
            now=self.now,
            agent=self.agent,
            evidence=order_evidence(blocks),
            trace=list(self.trace),
        )
