"""The search policy: every tuned number of the search step, named once, each with the measurement that set it.

A number here was chosen by a run of ``python -m benchmarks`` on the dev splits; the section of
docs/benchmarks/ablation.md (or docs/search.md) that holds the run is named beside it. Settings a person is
expected to change (``top_k``, ``window``, budgets, BM25 parameters) are not here but in :mod:`refind.config`;
these are the method's own constants, which a change should be measured against before it is made.
``tests/test_lexicon.py`` checks that the modules of the search step hold no tuned number of their own.

:data:`POLICY` is the one instance every module reads.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["POLICY", "Policy"]


@dataclass(frozen=True, slots=True)
class Policy:
    """The tuned numbers of the search step (read :data:`POLICY`)."""

    # ------------------------------------------------------------------ rounds: how much each counts
    weight_question: float = 1.0
    """Session-ranking weight of a round over the whole question (broad, phrasing, time, own words, a tool's
    search). docs/search.md "Across rounds"."""
    weight_option: float = 0.5
    """Weight of a round over one multiple-choice option's words. docs/search.md "Across rounds"."""
    weight_partial: float = 0.0
    """Weight of a round over part of the question's words (rarer terms, relaxed): dropping the topic's common
    word skewed which sessions ranked first ("bike expenses" lost "bike"); such a round picks its hits by its
    own sessions' hit sums. docs/search.md "Across rounds" (issue 12, db26e03 / 48bf04a)."""
    weight_feedback: float = 0.5
    """Weight of the pseudo-relevance feedback round (off by default). ablation.md "Searched for the remaining
    targets of issue 12, not kept"."""
    weight_meaning: float = 0.25
    """Weight of the round by meaning (issue 27) in the fused session ranking: its sessions by their message
    nearest the question. ablation.md "Meaning beside words"."""
    meaning_fetch: int = 8
    """The nearest messages the round by meaning asks the engine for (its sessions credited in that order):
    a graph search's cost grows with it (100,000 vectors: 5.5 ms for 8, 9.7 ms for 30, loaded machine).
    Same section."""
    meaning_floor: float = 0.2
    """A message nearer the question than this cosine counts for the round by meaning (credit and evidence);
    the rest are not near at all: a question that nothing answers gets no evidence by meaning. Set for the
    default model (all-MiniLM-L6-v2). Same section."""
    meaning_hits: int = 8
    """The round by meaning keeps this many of the nearest messages no word round returned. Same section."""
    meaning_share: float = 0.2
    """A budget offers them in this share of it, the nearest first; what they leave goes to the word evidence.
    Same section."""
    weight_browse: float = 0.5
    """Weight of a browse's sessions (a period scrolled by recency, openings, how it began): they were not
    ranked by words. docs/search.md "Questions that are not one lookup"."""

    # ------------------------------------------------------------------ fusion
    block_divisor: float = 1000.0
    """A block's final score is its session's fused score plus its own best hit's fused score divided by this:
    the hit only breaks ties between blocks of one session. docs/search.md "Final order"."""
    score_digits: int = 8
    """Digits a final score is rounded to, so that sums of reciprocal ranks compare equal across engines."""
    hit_order_k0: float = 5.0
    """Rank-fusion constant of a packing's hit order (a hit's own rank with its session's): small, so the
    first ranks weigh most. docs/search.md "Final order" (issue 21, packed recall)."""

    # ------------------------------------------------------------------ breadth
    breadth_k: int = 5
    """A breadth round takes this many times ``top_k`` hits (3 before 2026-12-03). ablation.md "Breadth: more
    places, each shorter"."""
    breadth_window: int = 0
    """Turns around each breadth hit. ablation.md "Breadth: more places, each shorter"."""
    near_duplicate: float = 0.8
    """A breadth hit whose word set has at least this Jaccard similarity with a more relevant hit's is
    dropped. ablation.md "Shapes and standing instructions"."""
    near_duplicate_chars: int = 20_000
    """Characters of a hit compared for near duplicates (a bound on the work of one long message)."""

    # ------------------------------------------------------------------ browsing rounds
    beginning_opening: int = 3
    """Messages read at the opening of the earliest session for "when I first…". ablation.md "Long threads in
    parts, standing sentences, whose words, how it began"."""
    summary_sessions: int = 6
    """A summary question reads the openings of this many best sessions. ablation.md "Whether the person did
    something; a summary's openings"."""
    summary_opening: int = 4
    """Messages of each such opening. Same section."""
    period_opening: int = 2
    """A period's session is shown by this many opening messages (and its newest). docs/search.md
    "Questions that are not one lookup"."""

    # ------------------------------------------------------------------ rarer terms and feedback
    rarer_share: float = 0.5
    """The rarer-terms round searches this share (rounded up) of the question's present terms, the rarest
    first. docs/search.md "The offline agent"."""
    relaxed_min_terms: int = 3
    """A relaxed round (the terms without the most common one) needs at least this many present terms."""
    feedback_terms: int = 6
    """Terms a feedback round adds. ablation.md "Searched for the remaining targets of issue 12"."""
    feedback_hits: int = 3
    """Best hit turns a feedback round reads its terms from. Same section."""
    feedback_chars: int = 4000
    """Characters of each such hit read (a bound on the work of one long message)."""
    feedback_pool: int = 4
    """Candidate terms looked up in the person's history, as a multiple of ``feedback_terms``."""

    # ------------------------------------------------------------------ standing instructions
    standing_pool: int = 200
    """A person's messages ranked by the standing rule's cue words and checked by it. ablation.md "Shapes and
    standing instructions"."""
    standing_not_requested: int = 2
    """Standing instructions offered for a question that is not a request (on its topic only). Same section."""
    standing_facts_pool: int = 200
    """A person's newest standing messages read for their lasting facts (issue 37; ``Reader.standing``)."""
    fact_domain_bonus: float = 0.1
    """Added to the cosine of a lasting fact of a domain with consequences (health, diet, household, legal,
    money, work, faith) when facts are ranked by nearness to the question (:func:`refind.search.standing.
    fact_blocks`). ablation.md "A person's lasting facts"."""
    facts_not_requested: int = 2
    """Lasting facts offered, nearest first, for a question that is not a request (a search with an embedder;
    without one only those sharing a word). Same section."""
    fact_floor_not_requested: float = 0.2
    """... and only those whose sentence is at least this near the question (cosine; the round by meaning's
    floor): a question about what happened keeps its budget for the evidence. Same section."""
    standing_max_words: int = 60
    """A longer sentence is a story, not an instruction or a standing fact (:mod:`refind.standing`). Same
    section; kept for facts (issue 37): docs/benchmarks/standing.md."""
    stem_chars: int = 8000
    """Characters of a message read for its topic stems."""

    # ------------------------------------------------------------------ packing (refind.evidence)
    pack_tier: int = 5
    """Sessions per tier when packing: every hit of a tier before its context. docs/search.md "Final order"."""
    passage_tokens: int = 60
    """A long hit's first passage (100 before 2026-12-03). ablation.md "A long hit's first passage: 60 tokens,
    not 100"."""
    context_passage_tokens: int = 40
    """A long context turn's first passage. ablation.md "A long context turn's first passage: 40 tokens"."""
    breadth_passage_tokens: int = 40
    """A breadth question's hit passage (60 before 2026-12-03). ablation.md "Breadth: more places, each
    shorter"."""
    min_passage_tokens: int = 24
    """A hit cut shorter than this says too little to be worth its line."""
    min_context_tokens: int = 8
    """A context turn cut shorter than this says too little to be worth its line."""
    hit_share: int = 8
    """First pass: no hit passage takes more than 1/``hit_share`` of the budget. docs/search.md "Final order"."""
    segment_turns: int = 10
    """A long thread is packed in parts of fewer than this many turns (the ``segment_turns`` setting's
    default). ablation.md "Long threads in parts"."""
    long_thread_turns: int = 50
    """A thread with evidence at this turn or later is a long thread. Same section."""
    segment_gap_ms: int = 6 * 3600 * 1000
    """Within a long thread, a pause this long starts a new part. Same section."""
    standing_share: int = 10
    """Standing instructions take at most 1/``standing_share`` of a budget. ablation.md "Room for a standing
    instruction in a small budget"."""
    standing_tokens: int = 150
    """The least a budget reserves for standing instructions: room for one standing sentence and its session
    header (a tenth of 1,000 tokens held none whole). Same section."""
    standing_cap_share: int = 4
    """... but never more than 1/``standing_cap_share`` of the budget. Same section."""
    standing_min_budget: int = 200
    """Below this budget no standing instruction is offered: the evidence needs it all. Same section."""
    context_tokens: int = 150
    """A context turn is cut to this many tokens when rendered (the ``context_tokens`` setting's default)."""
    hit_tokens: int = 1000
    """A hit longer than this is cut around its matched words (the ``hit_tokens`` setting's default)."""


POLICY = Policy()
"""The policy every module of the search step reads."""
