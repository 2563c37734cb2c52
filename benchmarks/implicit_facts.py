"""A person's lasting facts in the evidence, on the implicit set (issue 37): updates and distractors.

    python3 ../shared/data/implicit/build.py ../shared/data/longmemeval_s_dev.json.gz out/implicit.json
    python -m benchmarks implicit-facts --data out/implicit.json --tasks ../shared/data/implicit/tasks.jsonl

``python -m benchmarks run`` scores the gold turns as a whole; this reads the evidence refind hands a reader
(``Memory.search``, k=5, packed at each ``--budgets``) for what the run's scores do not say:

- for the tasks whose fact was later changed (``update`` in ``tasks.jsonl``): the share of their questions
  whose evidence holds the newer statement, and the share that holds the older one;
- of the standing facts shown (``[standing fact …]`` blocks), the share that are the set's look-alike
  distractors (transient or second-hand remarks written to look like self-disclosure), and how many facts a
  search shows;
- the share of questions whose fact is in the standing facts block itself (not only in the evidence).

Vectors come through the benchmarks' cache (:mod:`benchmarks.embedcache`, ``REFIND_BENCH_EMBED_CACHE``), so a
second run embeds nothing.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.adapters.bm25 import _USER, open_haystack
from benchmarks.catalog import load_dataset

BUDGETS = (1000, 2000, 4000)


def _distractors(tasks: Path) -> set[str]:
    texts = set()
    for line in tasks.read_text().splitlines():
        if line.strip():
            task = json.loads(line)
            if task.get("kind") == "distractor":
                texts.add(" ".join(str(task["text"]).split()))
    return texts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks implicit-facts", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--data", type=Path, required=True, help="the implicit set, built by its build.py")
    ap.add_argument("--tasks", type=Path, required=True, help="the set's tasks.jsonl (its distractors)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--out", type=Path, help="also write the figures here (JSON)")
    args = ap.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    distractors = _distractors(args.tasks)
    ds = load_dataset("longmemeval", args.data)
    by_haystack: dict[str, list[Any]] = defaultdict(list)
    for q in ds.questions:
        by_haystack[q.haystack].append(q)

    rows = []
    for key, sessions in ds.haystacks(by_haystack.keys()):
        when = {m.id: (s.date or 0, i) for s in sessions for i, m in enumerate(s.messages)}
        text = {m.id: " ".join(m.content.split()) for s in sessions for m in s.messages}
        memory = open_haystack(sessions, meaning=True)
        try:
            for q in by_haystack[key]:
                gold = sorted(q.gold_turns or (), key=lambda t: when.get(t, (0, 0)))
                result = memory.search(q.text, _USER, now=q.now, top_k=5)
                for budget in budgets:
                    packed = result.packed(budget)
                    shown = {t.id for b in packed.evidence for t in b.turns}
                    facts = [t.id for b in packed.evidence if b.standing_kind == "fact" for t in b.turns]
                    rows.append(
                        {
                            "question": q.id,
                            "type": q.type,
                            "budget": budget,
                            "update": len(gold) > 1,
                            "newer": gold[-1] in shown if gold else None,
                            "older": gold[0] in shown if len(gold) > 1 else None,
                            "facts_shown": len(facts),
                            "distractors_shown": sum(text.get(f) in distractors for f in facts),
                            "fact_in_block": any(f in gold for f in facts),
                        }
                    )
        finally:
            memory.close()

    report: dict[str, Any] = {}
    print(f"{len({r['question'] for r in rows})} questions; budgets {budgets}")
    for budget in budgets:
        at = [r for r in rows if r["budget"] == budget]
        updates = [r for r in at if r["update"]]
        shown = sum(r["facts_shown"] for r in at)
        wrong = sum(r["distractors_shown"] for r in at)
        figures = {
            "update_questions": len(updates),
            "newer_in_evidence": sum(r["newer"] for r in updates) / max(1, len(updates)),
            "older_in_evidence": sum(r["older"] for r in updates) / max(1, len(updates)),
            "facts_shown_per_search": shown / max(1, len(at)),
            "distractor_share_of_facts_shown": wrong / max(1, shown),
            "distractors_shown": wrong,
        }
        for kind in sorted({r["type"] for r in at}):
            of = [r for r in at if r["type"] == kind]
            figures[f"fact_in_block_{kind}"] = sum(r["fact_in_block"] for r in of) / max(1, len(of))
        report[str(budget)] = figures
        print(
            f"@{budget}: "
            + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
        )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
