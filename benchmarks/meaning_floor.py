"""How near the gold is by meaning, to set the round by meaning's floor (``POLICY.meaning_floor``).

    python -m benchmarks meaning-floor --dataset locomo --data ../shared/data/locomo10_dev.json

For each question with turn gold: the question's cosine to every message of its haystack (the local model, or
whatever ``REFIND_EMBEDDER`` names, through the benchmarks' vector cache :mod:`benchmarks.embedcache`), the
gold among the ``--k`` nearest and its cosine; beside it, the nearest cosine of the same question in another
question's haystack (a haystack that does not answer it). For each floor: the share of the gold found among the
nearest that the floor keeps, and the share of questions whose foreign haystack still passes it.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.catalog import load_dataset

FLOORS = (0.0, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks meaning-floor", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--dataset", required=True, choices=("locomo", "longmemeval", "beam", "coding-life"))
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--k", type=int, default=8, help="nearest messages the round by meaning keeps")
    args = ap.parse_args(argv)

    import numpy as np

    import refind
    from benchmarks.embedcache import cached
    from refind.embed import default_embedder

    model = default_embedder(refind.Settings.from_env().embedder)
    if model is None:
        ap.error("no embedder (REFIND_EMBEDDER, or the local model is not installed)")
    embedder = cached(model)
    ds = load_dataset(args.dataset, args.data)
    questions = [q for q in ds.questions if q.gold_turns and not q.abstention]
    haystacks = {}
    for key, sessions in ds.haystacks({q.haystack for q in questions}):
        messages = [
            (m.id, m.content) for s in sessions for m in s.messages if m.content and m.content.strip()
        ]
        vectors = np.array(embedder.embed([c for _, c in messages]), dtype=np.float32)
        haystacks[key] = ([i for i, _ in messages], vectors)
    keys = sorted(haystacks)
    rows = []
    for q in questions:
        qv = np.array(embedder.embed([q.text])[0], dtype=np.float32)
        ids, vectors = haystacks[q.haystack]
        cos = vectors @ qv
        nearest = np.argsort(-cos)[: args.k]
        gold = set(q.gold_turns or ())
        found = [float(cos[i]) for i in nearest if ids[i] in gold]
        other = keys[(keys.index(q.haystack) + len(keys) // 2) % len(keys)]
        foreign = float((haystacks[other][1] @ qv).max()) if len(keys) > 1 else float("nan")
        rows.append((q.type, max(found) if found else None, foreign))
    with_gold = [r for r in rows if r[1] is not None]
    print(f"{args.dataset}: {len(rows)} questions, gold among the {args.k} nearest for {len(with_gold)}")
    for floor in FLOORS:
        kept = sum(1 for r in with_gold if r[1] >= floor)
        foreign = sum(1 for r in rows if r[2] >= floor)
        print(
            f"  floor {floor:.2f}: keeps {kept}/{len(with_gold)} ({kept / max(1, len(with_gold)):.2f}) of that gold; "
            f"a foreign haystack passes it for {foreign / max(1, len(rows)):.2f} of the questions"
        )
    for kind in sorted({r[0] for r in with_gold}):
        near = [r[1] for r in with_gold if r[0] == kind and r[1] is not None]
        print(f"  {kind}: {len(near)} with gold near, median cosine {statistics.median(near):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
