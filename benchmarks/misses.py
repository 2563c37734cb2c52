"""``python -m benchmarks misses``: where refind's default agent loses the gold, and could words reach it?

A diagnosis, not a score: it says which part of the search a better method would have to change. Per
answerable question it runs refind's default agent on the harness's haystack (``Memory.search``'s agent
and settings, ``top_k = k``), keeps the unpacked result and the result packed for ``--budget`` tokens
(``SearchResult.packed``, what the harness's ``packed@B`` scores), and puts

- **every gold turn** in the first of these that holds it:
  - ``shown``: in the evidence packed for the budget (their per-question mean is the harness's ``packed@B``;
    with ``cut``, the ``unpacked`` share: what a packing that lost nothing would give);
  - ``cut``: in the unpacked evidence, left out by the packing;
  - ``session``: not in the evidence, though its session has evidence;
  - ``absent``: its session has no evidence at all;
- **every gold session missing from the top k** of a question that fails recall_all@k by its rank in the
  fused session ranking across rounds (``6-10``, ``11-20``, ``21+``, or ``unscored``: no round's hits or
  session documents reached it), and by why words did not bring it in (:func:`miss_class`):
  - ``no shared word``: its gold turns share no word with the question (the question's words are the
    index terms, as the store analyzes text, of the agent's keywords for it; without turn gold, any of the
    session's messages counts), so no keyword round over the question's words can find them;
  - ``tied``: a message of a non-gold session in the top k holds every word they share, so words alone
    do not tell the two apart;
  - ``separable``: no such message holds all the words they share;
- **every question failing recall_all@k** by its hardest miss: ``more gold than k`` (it cannot pass),
  else the first class of the list above that one of its misses has.

Each gold turn left out is also marked when it shares no word with the question. Figures are deterministic
for a dataset.

    python -m benchmarks misses --dataset locomo --data ../shared/data/locomo10_dev.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "MISS_CLASSES",
    "TURN_PLACES",
    "main",
    "miss_class",
    "question_class",
    "rank_bucket",
    "run",
    "session_scores",
    "turn_place",
]

TURN_PLACES = ("shown", "cut", "session", "absent")
RANK_BUCKETS = ("6-10", "11-20", "21+", "unscored")
MISS_CLASSES = ("no shared word", "tied", "separable")
QUESTION_CLASSES = ("more gold than k", *MISS_CLASSES)


def turn_place(turn: str, session: str, shown: Collection[str], unpacked: Collection[str],
               evidence_sessions: Collection[str]) -> str:  # fmt: skip
    """Where a gold turn ended (the first of :data:`TURN_PLACES` that holds it)."""
    if turn in shown:
        return "shown"
    if turn in unpacked:
        return "cut"
    return "session" if session in evidence_sessions else "absent"


def rank_bucket(rank: int | None) -> str:
    """A missing gold session's fused rank (1-based; None: never scored) as one of the report's buckets."""
    if rank is None:
        return "unscored"
    if rank <= 10:
        return "6-10"
    return "11-20" if rank <= 20 else "21+"


def session_scores(session_score: Mapping[str, float], evidence: Iterable[Any]) -> list[str]:
    """The fused session ranking: each evidence session at its best block score (what
    ``SearchResult.sessions()`` orders by), every other session the rounds scored at its fused score."""
    shown: dict[str, float] = {}
    for block in evidence:
        shown[block.session_id] = max(shown.get(block.session_id, block.score), block.score)
    scores = {**session_score, **shown}
    return sorted(scores, key=lambda s: (-scores[s], s))


def miss_class(shared: Collection[str], rivals: Iterable[Iterable[Collection[str]]]) -> str:
    """Why words did not bring a missing gold session into the top k (:data:`MISS_CLASSES`), from the
    question words its gold turns hold (``shared``) and, for each non-gold session of the top k
    (``rivals``), the question words each of its messages holds: no shared word; or some rival message
    holds every shared word ("tied": words alone do not tell them apart); or none does ("separable")."""
    if not shared:
        return "no shared word"
    need = set(shared)
    return "tied" if any(need <= set(m) for r in rivals for m in r) else "separable"


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


class _Terms:
    """The index terms of each message, analyzed once per haystack."""

    def __init__(self, text: Mapping[str, str]) -> None:
        self.text = text
        self.cache: dict[str, frozenset[str]] = {}

    def __call__(self, message_id: str, search: Any) -> frozenset[str]:
        if message_id not in self.cache:
            self.cache[message_id] = frozenset(search.analyze(self.text[message_id]))
        return self.cache[message_id]


def question_class(gold: int, k: int, misses: Collection[str]) -> str:
    """A question failing recall_all@k, by its hardest miss (:data:`QUESTION_CLASSES`)."""
    if gold > k:
        return "more gold than k"
    for kind in MISS_CLASSES:
        if kind in misses:
            return kind
    raise ValueError("a failing question has at least one miss")


def run(dataset: str, data: str, k: int, budget: int, limit: int | None = None) -> dict[str, Any]:
    from benchmarks.adapters.bm25 import _USER, open_haystack
    from benchmarks.catalog import load_dataset

    ds = load_dataset(dataset, data)
    wanted = [q for q in ds.questions if not q.abstention and q.gold_sessions][:limit]
    turns: dict[str, Counter[str]] = defaultdict(Counter)  # type -> place (and "place/no word") -> count
    sessions: dict[str, Counter[str]] = defaultdict(Counter)  # type -> rank bucket and miss class -> count
    failing: dict[str, Counter[str]] = defaultdict(Counter)  # type -> question class -> count
    shown_share: dict[str, list[float]] = defaultdict(list)
    unpacked_share: dict[str, list[float]] = defaultdict(list)
    questions: Counter[str] = Counter()
    for key, hay in ds.haystacks({q.haystack for q in wanted}):
        mine = [q for q in wanted if q.haystack == key]
        if not mine:
            continue
        where = {m.id: s.id for s in hay for m in s.messages if m.id is not None}
        text = {m.id: m.content for s in hay for m in s.messages if m.id is not None}
        members = {s.id: [m.id for m in s.messages if m.id is not None] for s in hay}
        memory = open_haystack(hay, meaning=True)
        try:
            agent = memory.default_agent()
            terms = _Terms(text)
            for q in mine:
                search = memory.open_session(q.text, _USER, now=q.now, top_k=k)
                agent.run(search)
                result = search.result()
                shown = {t.id for b in result.packed(budget).evidence for t in b.turns}
                unpacked = {t.id for b in result.evidence for t in b.turns}
                evidence_sessions = {b.session_id for b in result.evidence}
                words = search.reading.keywords
                asked = frozenset(search.analyze(" ".join(words)))
                kinds = (q.type, "ALL")
                for kind in kinds:
                    questions[kind] += 1
                if q.gold_turns:
                    gold = set(q.gold_turns)
                    for kind in kinds:
                        shown_share[kind].append(len(gold & shown) / len(gold))
                        unpacked_share[kind].append(len(gold & unpacked) / len(gold))
                    for t in sorted(gold):
                        place = turn_place(t, where.get(t, ""), shown, unpacked, evidence_sessions)
                        no_word = place != "shown" and t in text and not asked & terms(t, search)
                        for kind in kinds:
                            turns[kind][place] += 1
                            turns[kind][f"{place}/no word"] += no_word
                ranking = session_scores(search.session_score, result.evidence)
                rank = {sid: i for i, sid in enumerate(ranking, 1)}
                missing = sorted(set(q.gold_sessions) - set(ranking[:k]))
                if not missing:
                    continue

                # each non-gold top-k session's messages, as the question words each holds
                rivals = [
                    [asked & terms(m, search) for m in members[sid]]
                    for sid in ranking[:k]
                    if sid not in q.gold_sessions
                ]
                classes = []
                for sid in missing:
                    # the words its gold turns share with the question (any message's without turn gold)
                    own = [t for t in q.gold_turns or () if where.get(t) == sid and t in text]
                    shared = frozenset().union(*(asked & terms(t, search) for t in own or members[sid]))
                    classes.append(miss_class(shared, rivals))
                    for kind in kinds:
                        sessions[kind][rank_bucket(rank.get(sid))] += 1
                        sessions[kind][classes[-1]] += 1
                for kind in kinds:
                    failing[kind][question_class(len(q.gold_sessions), k, classes)] += 1
        finally:
            memory.close()
        print(f"{key}: {len(mine)} questions", file=sys.stderr, flush=True)
    order = sorted(questions, key=lambda t: (t == "ALL", t))
    return {
        "dataset": dataset,
        "k": k,
        "budget": budget,
        "questions": questions["ALL"],
        "by_type": {
            kind: {
                "questions": questions[kind],
                "packed_turn_recall": _mean(shown_share[kind]),
                "unpacked_turn_recall": _mean(unpacked_share[kind]),
                "gold_turns": {p: turns[kind][p] for p in TURN_PLACES},
                "gold_turns_no_shared_word": {p: turns[kind][f"{p}/no word"] for p in TURN_PLACES[1:]},
                "recall_all_failures": {c: failing[kind][c] for c in QUESTION_CLASSES},
                "missing_gold_sessions": {b: sessions[kind][b] for b in (*RANK_BUCKETS, *MISS_CLASSES)},
            }
            for kind in order
        },
    }


def markdown(report: Mapping[str, Any]) -> str:
    """Three tables: gold turns by place, failing questions by their hardest miss, missing gold sessions by
    fused rank and by why words did not bring them in."""
    from benchmarks.report import table

    budget, k = report["budget"], report["k"]
    rows = report["by_type"].items()

    def share(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    turns = [
        [kind, str(row["questions"]), share(row["packed_turn_recall"]), share(row["unpacked_turn_recall"]),
         str(row["gold_turns"]["shown"]),
         *(f"{row['gold_turns'][p]} ({row['gold_turns_no_shared_word'][p]})" for p in TURN_PLACES[1:])]
        for kind, row in rows
    ]  # fmt: skip
    failing = [
        [kind, str(sum(row["recall_all_failures"].values())),
         *(str(row["recall_all_failures"][c]) for c in QUESTION_CLASSES)]
        for kind, row in rows
    ]  # fmt: skip
    columns = (*RANK_BUCKETS, *MISS_CLASSES)
    missing = [[kind, *(str(row["missing_gold_sessions"][c]) for c in columns)] for kind, row in rows]
    lines = [
        f"Gold turns by where they ended (budget {budget} tokens; in brackets: how many share no word "
        "with the question)",
        "",
        *table(["type", "questions", f"packed@{budget}", "unpacked", *TURN_PLACES], turns, left=1),
        "",
        f"Questions failing recall_all@{k}, by their hardest miss",
        "",
        *table(["type", "failing", *QUESTION_CLASSES], failing, left=1),
        "",
        f"Gold sessions missing from the top {k}: fused rank, and why words did not bring them in",
        "",
        *table(["type", *columns], missing, left=1),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.catalog import DATASETS

    doc = __doc__ or ""
    p = argparse.ArgumentParser(prog="python -m benchmarks misses", description=doc.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--data", required=True, help="the dataset file (or directory)")
    p.add_argument("--k", type=int, default=5, help="hits per round and sessions counted (default 5)")
    p.add_argument("--budget", type=int, default=2000, help="the reader's token budget (default 2000)")
    p.add_argument("--limit", type=int, default=None, help="only the first N answerable questions")
    p.add_argument("--out", type=Path, default=None, help="also write misses.json and misses.md here")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.k < 1:
        p.error("--k must be at least 1")
    if args.budget < 1:
        p.error("--budget must be at least 1")
    if args.limit is not None and args.limit < 1:
        p.error("--limit must be at least 1")
    from refind.errors import RefindError

    try:
        report = run(args.dataset, args.data, args.k, args.budget, args.limit)
    except RefindError as exc:  # unreadable data: one line, like `benchmarks run`
        print(f"benchmarks: {exc}", file=sys.stderr)
        return 2
    table = markdown(report)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "misses.json").write_text(json.dumps(report, indent=2) + "\n")
        (args.out / "misses.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
