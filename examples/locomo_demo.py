"""`make demo` (until the search agent lands): import one LoCoMo dev conversation into a local index and
run a few keyword searches, printing each hit with the turns around it.

    python examples/locomo_demo.py [--data ../shared/data/locomo10_dev.json] [--index out/demo-index]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import refind
from refind.io import iter_locomo

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo10_dev.json"

SEARCHES = [
    ("LGBTQ support group", {}),
    ("painting sunrise", {}),
    ("camping with the kids", {"date_from": "2023-06-01", "date_to": "2023-08-31"}),
    ("adoption agencies", {}),
]


def day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%d %b %Y")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--index", type=Path, default=ROOT / "out" / "demo-index")
    args = ap.parse_args()
    if not args.data.exists():
        print(f"error: {args.data} not found (the shared dev data); pass --data", file=sys.stderr)
        return 2
    try:
        with refind.Memory(args.index) as mem:
            conversation = [s for s in iter_locomo(args.data) if s.user_id == "conv-26"]
            t = time.perf_counter()
            result = mem.import_sessions(conversation)
            print(
                f"imported {result.sessions} sessions of conv-26 into {args.index} "
                f"({result.added} new, {result.replaced} replaced) in {time.perf_counter() - t:.2f} s\n"
            )
            for text, filters in SEARCHES:
                t = time.perf_counter()
                hits = mem.query("conv-26", text, k=2, **filters)
                ms = (time.perf_counter() - t) * 1000
                where = f" between {filters['date_from']} and {filters['date_to']}" if filters else ""
                print(f"search {text!r}{where}: {len(hits)} hits in {ms:.1f} ms")
                for hit in hits:
                    print(f"  [{hit.session_id}, {day(hit.timestamp)}] score {hit.score:.2f}")
                    for turn in mem.window("conv-26", hit.session_id, hit.turn - 1, hit.turn + 1):
                        mark = ">" if turn.id == hit.id else " "
                        print(f"   {mark} {turn.id} {turn.speaker}: {turn.content[:110]}")
                print()
    except refind.RefindError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
