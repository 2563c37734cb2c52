"""``python -m benchmarks.shard_stats``: what per-shard BM25 statistics do to refind's answers.

The harness gives each haystack an index of its own, where one user's documents are the whole index and a
shard's statistics are the index's. A real deployment keeps many users in one index: the embedded engine
scores with statistics over every user's messages, OpenSearch with those of the shard a user is routed to.
This puts every haystack of a dataset, one user each, into one embedded index and into one OpenSearch
prefix per ``--shards`` value, asks every question of its own user with ``Memory.search`` (the heuristic
agent, top 5) and reports recall_all@5, hit@5 and how many questions got other sessions than the embedded
engine's.

    python -m benchmarks.shard_stats --dataset locomo --data ../shared/data/locomo10_dev.json \\
        --store opensearch://127.0.0.1:9200 --shards 1,3 [--limit N] --out out/shard-stats
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path
from typing import Any

import refind
from benchmarks.catalog import load_dataset
from benchmarks.metrics import hit_at_k, recall_all_at_k

K = 5


def _ranked(mem: refind.Memory, user: str, text: str, now: int | None) -> list[str]:
    result = mem.search(text, user, now=now, top_k=K)
    return [str(b.session_id) for b in result.by_relevance()]


def run(
    dataset: str, data: Path, store: str, shards: list[int], out: Path, limit: int | None = None
) -> dict[str, Any]:
    ds = load_dataset(dataset, data)
    asked = [q for q in ds.questions if q.gold_sessions]
    keys = sorted({q.haystack for q in asked})  # every user's haystack is in the index, asked or not
    questions = asked[:limit]
    logs = [
        s.to_log(f"h:{key}") for key, sessions in ds.haystacks(keys) for s in sessions
    ]  # one user per haystack
    memories: dict[str, refind.Memory] = {"embedded": refind.Memory.in_memory()}
    for n in shards:
        memories[f"opensearch shards={n}"] = refind.Memory(
            f"{store.rstrip('/')}/shardstats-{uuid.uuid4().hex[:8]}?shards={n}&replicas=0"
        )
    report: dict[str, Any] = {"dataset": dataset, "questions": len(questions), "users": len(keys), "k": K}
    try:
        for mem in memories.values():
            mem.import_sessions(iter(logs))
        answers: dict[str, list[list[str]]] = {name: [] for name in memories}
        for name, mem in memories.items():
            t0 = time.perf_counter()
            for q in questions:
                answers[name].append(_ranked(mem, f"h:{q.haystack}", q.text, q.now))
            report[f"{name} seconds"] = round(time.perf_counter() - t0, 1)
        base = answers["embedded"]
        for name, ranked in answers.items():
            report[name] = {
                "recall_all_at_5": round(
                    sum(
                        recall_all_at_k(r, q.gold_sessions, K) for r, q in zip(ranked, questions, strict=True)
                    )
                    / len(questions),
                    4,
                ),
                "hit_at_5": round(
                    sum(hit_at_k(r, q.gold_sessions, K) for r, q in zip(ranked, questions, strict=True))
                    / len(questions),
                    4,
                ),
                "questions_with_other_top5_list_than_embedded": sum(
                    1 for a, b in zip(ranked, base, strict=True) if a[:K] != b[:K]
                ),
            }
    finally:
        for name, mem in memories.items():
            if name != "embedded":
                mem.drop()
            mem.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / "shard_stats.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.shard_stats", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--dataset", default="locomo")
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument(
        "--store", required=True, help="opensearch://host:port (prefixes are created and dropped)"
    )
    ap.add_argument("--shards", default="1,3", help="primary shard counts to compare (default 1,3)")
    ap.add_argument("--limit", type=int, default=None, help="the first N questions with gold (default all)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    shards = [int(x) for x in args.shards.split(",")]
    report = run(args.dataset, args.data, args.store, shards, args.out, args.limit)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
