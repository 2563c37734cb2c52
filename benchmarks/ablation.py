"""Ablation of refind's controls, one switched off at a time, with one-shot BM25 beside them.

    python -m benchmarks ablation --dataset locomo --data ../shared/data/locomo10_dev.json --k 5 --out out/ablation/locomo

Each variant runs the harness (``python -m benchmarks run``) with the ``refind`` adapter under different
``REFIND_*`` settings (read by ``refind.Settings.from_env`` when each haystack's Memory opens), and the
variants' summaries are tabulated in ``OUT/ablation.md`` and ``OUT/ablation.json``:

| variant | what is switched off | setting |
|---|---|---|
| full | nothing (the defaults) | |
| no windows | context turns around hits | ``REFIND_WINDOW=0`` |
| one round | later rounds (time, question phrasing, rarer terms) | ``REFIND_MAX_ROUNDS=1`` |
| no read-set | skipping what earlier rounds returned | ``REFIND_READSET=off`` |
| session read-set | (a variant, not an ablation) skip whole sessions already read | ``REFIND_READSET=session`` |
| no fusion | session fusion (hit rank only; no session documents) | ``REFIND_FUSION_W_SESSION=0``, ``REFIND_FUSION_SESSIONS=hits`` |
| no time filters | the time-filtered round | ``REFIND_TIME_FILTERS=false`` |
| no latest-first | the recency tie-break of current-state questions | ``REFIND_LATEST_BOOST=0`` |
| feedback round | (off by default: switched on) the pseudo-relevance-feedback round | ``REFIND_FEEDBACK=true`` |
| no shapes | question shapes (breadth: more short places; period: the period's sessions) | ``REFIND_SHAPES=false`` |
| no standing | standing instructions offered beside the evidence | ``REFIND_STANDING=0`` |
| no segments | packing long threads in parts (each session packed whole) | ``REFIND_SEGMENT_TURNS=0`` |
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from benchmarks import runner

VARIANTS: dict[str, dict[str, str]] = {
    "full": {},
    "no windows": {"REFIND_WINDOW": "0"},
    "one round": {"REFIND_MAX_ROUNDS": "1"},
    "no read-set": {"REFIND_READSET": "off"},
    "session read-set": {"REFIND_READSET": "session"},
    "no fusion": {"REFIND_FUSION_W_SESSION": "0", "REFIND_FUSION_SESSIONS": "hits"},
    "no time filters": {"REFIND_TIME_FILTERS": "false"},
    "no latest-first": {"REFIND_LATEST_BOOST": "0"},
    "feedback round": {"REFIND_FEEDBACK": "true"},
    "no shapes": {"REFIND_SHAPES": "false"},
    "no standing": {"REFIND_STANDING": "0"},
    "no segments": {"REFIND_SEGMENT_TURNS": "0"},
}
METRICS = [
    ("recall_all_at_k", "recall_all@k"),
    ("recall_at_k", "R@k"),
    ("ndcg_at_k", "nDCG@k"),
    ("evidence_tokens_mean", "tokens"),
    ("latency_p50_ms", "p50 ms"),
]


@contextlib.contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _slug(name: str) -> str:
    return name.replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks ablation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated subset of: " + ", ".join(VARIANTS)
    )
    args = ap.parse_args(argv)
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants: {', '.join(unknown)}")
    base = ["--dataset", args.dataset, "--data", args.data, "--k", str(args.k), "--quiet"]
    if args.limit:
        base += ["--limit", str(args.limit)]
    rows: dict[str, dict] = {}
    # one-shot BM25 beside the variants, same questions
    code = runner.main([*base, "--adapters", "bm25", "--out", str(args.out / "bm25")])
    if code:
        return code
    rows["bm25 (one shot)"] = json.loads((args.out / "bm25" / "summary.json").read_text())["adapters"]["bm25"]
    for name in chosen:
        with _env(VARIANTS[name]):
            code = runner.main([*base, "--adapters", "refind", "--out", str(args.out / _slug(name))])
        if code:
            return code
        rows[name] = json.loads((args.out / _slug(name) / "summary.json").read_text())["adapters"]["refind"]
    turn_budget = any(r.get("turn_recall_at_budget") for r in rows.values())
    head = [
        "variant",
        "setting",
        *(label.replace("k", str(args.k)) if "@k" in label else label for _, label in METRICS),
    ]
    if turn_budget:
        head += ["turns@1000", "turns@2000", "turns@4000", "packed@1000", "packed@2000", "packed@4000"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "--:|" * (len(head) - 2)]
    for name, r in rows.items():
        setting = ", ".join(f"`{k}={v}`" for k, v in VARIANTS.get(name, {}).items()) or (
            "defaults" if name == "full" else ""
        )
        cells = [name, setting] + [
            f"{r[key]:.3f}" if "tokens" not in key and "ms" not in key else f"{r[key]:.1f}"
            for key, _ in METRICS
        ]
        if turn_budget:
            for key in ("turn_recall_at_budget", "packed_turn_recall_at_budget"):
                budget = r.get(key) or {}
                cells += [f"{budget.get(b, float('nan')):.3f}" for b in ("1000", "2000", "4000")]
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ablation.md").write_text(
        f"# Ablation on {args.dataset} (K = {args.k})\n\n```\npython -m benchmarks ablation "
        + " ".join(argv if argv is not None else sys.argv[1:])
        + f"\n```\n\n{table}\n"
    )
    (args.out / "ablation.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(table)
    return 0
