"""The standing rule (:func:`refind.read_standing`) on hand-written facts and on real user messages.

    python -m benchmarks standing-rule [--tasks PATH] [--longmemeval PATH] [--show N] [--out FILE]

Two checks, no index:

- **the implicit set's tasks** (``../shared/data/implicit/tasks.jsonl``): each task's ``fact`` and ``update``
  should be read as a standing fact (``kind == "fact"``; an instruction or preference is counted apart), each
  distractor's ``text`` (transient self-disclosure: "I'm so sleepy this afternoon") should not stand at all;
  an ``update`` read with ``change`` set is counted too;
- **real user messages**: the share of the distinct user messages of the LongMemEval-S dev histories
  (``../shared/data/longmemeval_s_dev.json.gz``) that the rule flags, by kind and by domain (the rule's cost:
  each flagged message is offered beside every search of that person), and the rule's time per message.

``--show N`` prints N flagged real messages of each kind (seeded sample) and every missed fact, to read by
hand. Paths default to the shared data folder (``REFIND_SHARED_DATA`` overrides it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from refind.standing import read_standing

__all__ = ["measure"]


def _shared() -> Path:
    env = os.environ.get("REFIND_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def _user_messages(path: Path) -> list[str]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    seen: dict[str, None] = {}
    for q in data:
        for session in q["haystack_sessions"]:
            for m in session:
                if m.get("role") == "user" and m.get("content"):
                    seen.setdefault(m["content"], None)
    return list(seen)


def measure(tasks_path: Path, lme_path: Path | None, show: int = 0) -> dict[str, Any]:
    """The figures (and, with ``show``, the misses and samples printed to stderr)."""
    tasks = [json.loads(line) for line in tasks_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict[str, Any] = {}
    counts: Counter[str] = Counter()
    missed: list[str] = []
    for t in tasks:
        if t.get("kind", "task") == "distractor":
            counts["distractors"] += 1
            s = read_standing("user", t["text"])
            if s is not None:
                counts["distractors_flagged"] += 1
                missed.append(f"distractor read as {s.kind}/{s.domain}: {t['text']}")
            continue
        for field in ("fact", "update"):
            if not t.get(field):
                continue
            counts[f"{field}s"] += 1
            s = read_standing("user", t[field])
            if s is None:
                missed.append(f"{field} missed: {t[field]}")
            elif s.kind == "fact":
                counts[f"{field}s_read"] += 1
                counts[f"{field}s_change"] += s.change
            else:
                counts[f"{field}s_{s.kind}"] += 1
                missed.append(f"{field} read as {s.kind}: {t[field]}")
    out["tasks"] = dict(sorted(counts.items()))
    if lme_path is not None:
        messages = _user_messages(lme_path)
        kinds: Counter[str] = Counter()
        domains: Counter[str] = Counter()
        flagged: dict[str, list[str]] = {}
        start = time.perf_counter()
        read = [read_standing("user", m) for m in messages]
        seconds = time.perf_counter() - start
        for s in read:
            if s is None:
                continue
            kinds[s.kind] += 1
            if s.domain:
                domains[s.domain] += 1
            flagged.setdefault(s.kind, []).append(
                f"[{s.domain}/{s.subject}{' change' if s.change else ''}] {s.sentence}"
            )
        n = len(messages)
        out["longmemeval"] = {
            "user_messages": n,
            "flagged": sum(kinds.values()),
            "flagged_share": round(sum(kinds.values()) / n, 4),
            "by_kind": dict(kinds.most_common()),
            "fact_share": round(kinds["fact"] / n, 4),
            "facts_by_domain": dict(domains.most_common()),
            "us_per_message": round(seconds / n * 1e6, 1),
        }
        if show:
            rng = random.Random(37)
            for kind, lines in flagged.items():
                print(f"\n## {kind}: {len(lines)} flagged, {min(show, len(lines))} shown", file=sys.stderr)
                for line in rng.sample(lines, min(show, len(lines))):
                    print("  " + line[:200], file=sys.stderr)
    if show:
        print("\n## tasks: misses", file=sys.stderr)
        for line in missed:
            print("  " + line, file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    shared = _shared()
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks standing-rule", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--tasks", type=Path, default=shared / "implicit" / "tasks.jsonl")
    ap.add_argument("--longmemeval", type=Path, default=shared / "longmemeval_s_dev.json.gz")
    ap.add_argument("--no-longmemeval", action="store_true", help="the tasks only")
    ap.add_argument(
        "--show", type=int, default=0, help="print this many flagged messages per kind, and the misses"
    )
    ap.add_argument("--out", type=Path, default=None, help="also write the figures here (JSON)")
    args = ap.parse_args(argv)
    figures = measure(args.tasks, None if args.no_longmemeval else args.longmemeval, args.show)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
