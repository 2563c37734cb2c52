"""``python -m benchmarks run``: evaluate adapters on a dataset and write scores, summary, scorecard, plot.

    python -m benchmarks run --dataset coding-life --data ../shared/data/coding-agent-life-v1 \\
        --adapters grep,bm25,refind --k 5 --out out/bench/coding-life

Outputs in ``--out``: ``scores.ndjson`` (one row per question x adapter), ``summary.json`` (fixed keys:
``dataset``, ``k``, ``n_questions``, ``adapters`` -> name -> metrics and ``by_type``; plus
``skipped_adapters``, ``skipped_questions`` and run details), ``scorecard.md`` and ``plot.png``.
Adapters that cannot run here are skipped with a one-line reason (stderr and summary). An adapter error on
a question is recorded in its row and scores as a miss; the exit code is then 1.

Each haystack is indexed once per adapter (``init``), its questions are asked (``query``, the only timed
part), the evidence for each token budget is packed (questions with turn gold only: the adapter's ``pack``,
else :func:`benchmarks.packing.pack_in_order` over the ranked items), then ``teardown``. Same inputs give
the same numbers; only latencies vary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import adapters as registry
from benchmarks.adapters.base import PackedEvidence
from benchmarks.catalog import DATASETS, load_dataset
from benchmarks.datasets import Dataset, Question, select_questions
from benchmarks.metrics import BUDGETS, aggregate, failed_question, score_question
from benchmarks.packing import pack_in_order
from refind.tokens import count_tokens, tokenizer_name

__all__ = ["main", "run"]

DEFAULT_ADAPTERS = "grep,bm25,refind"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks run",
        description="Evaluate retrieval adapters on a dataset (scores.ndjson, summary.json, scorecard.md, plot.png).",
    )
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS), help="dataset format")
    p.add_argument("--data", required=True, help="path of the dataset (file, or directory for coding-life)")
    p.add_argument(
        "--adapters",
        default=DEFAULT_ADAPTERS,
        help=f"comma-separated adapters, from {', '.join(registry.ADAPTERS)} (default {DEFAULT_ADAPTERS})",
    )
    p.add_argument("--k", type=int, default=5, help="cutoff K for the session metrics (default 5)")
    p.add_argument(
        "--limit", type=int, default=None, help="evaluate only the first N questions (after --stratify)"
    )
    p.add_argument(
        "--stratify", type=int, default=None, help="at most N questions per type, the first in dataset order"
    )
    p.add_argument(
        "--time-budget",
        type=int,
        default=None,
        metavar="SECONDS",
        help="start no question after this many seconds; score only the questions every adapter was asked "
        "(the first ones in order: for slow adapters such as a local model)",
    )
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        help="at most N questions per type drawn at random (--seed), dataset order kept; not with --stratify",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--fetch", type=int, default=200, help="messages over-fetched by message-level adapters")
    p.add_argument("--out", required=True, help="output directory (created; existing files are replaced)")
    p.add_argument("--no-plot", action="store_true", help="skip plot.png")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _positive(p: argparse.ArgumentParser, name: str, value: int | None, upper: int = 10_000) -> None:
    if value is not None and not 1 <= value <= upper:
        p.error(f"--{name} must be between 1 and {upper}")


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _file_names(files: Sequence[Path]) -> dict[Path, str]:
    """How ``summary.json`` names each data file: its name, or as many of its last path parts as make it
    unique among ``files`` (BEAM holds many files of one name: ``100K/1/chat.json``)."""
    names: dict[Path, str] = {}
    for f in files:
        parts = f.parts
        for n in range(1, len(parts) + 1):
            tail = parts[-n:]
            if all(g == f or g.parts[-n:] != tail for g in files):
                names[f] = "/".join(tail)
                break
        else:
            names[f] = f.as_posix()
    return names


def _environment() -> dict[str, Any]:
    import refind

    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "refind": refind.__version__,
    }


def _progress(total: int, desc: str, quiet: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="q", file=sys.stderr, disable=quiet, dynamic_ncols=True)


def _row(
    question: Question, adapter: str, k: int, scored: dict[str, Any], latency_ms: float | None
) -> dict[str, Any]:
    return {
        "question_id": question.id,
        "type": question.type,
        "adapter": adapter,
        "k": k,
        "abstention": question.abstention,
        "status": "ok",
        "error": None,
        "gold_sessions": list(question.gold_sessions),
        "n_gold_turns": None if question.gold_turns is None else len(question.gold_turns),
        **scored,
        "latency_ms": latency_ms,
    } | ({} if question.bucket is None else {"bucket": question.bucket})


def _pack(
    adapter: Any, question: Question, state: Any, k: int, items: list[Any], tokens: list[int]
) -> dict[int, PackedEvidence]:
    """The evidence ``adapter`` hands a reader for each budget: its own packer (``pack``) when it has one,
    else its ranked items by :func:`benchmarks.packing.pack_in_order`."""
    pack = getattr(adapter, "pack", None)
    if pack is None:
        return {b: pack_in_order(items, tokens, b) for b in BUDGETS}
    packed = dict(pack(question, state, k, items, BUDGETS))
    missing = [b for b in BUDGETS if b not in packed]
    if missing:
        raise RuntimeError(f"{adapter.name}.pack returned no evidence for budgets {missing}")
    return packed


def _ask(adapter: Any, question: Question, state: Any, k: int) -> dict[str, Any]:
    start = time.perf_counter()
    items = adapter.query(question, state, k)
    latency_ms = (time.perf_counter() - start) * 1000.0
    tokens = [count_tokens(item.text) for item in items]
    # packing is untimed and only where turn gold can score it (refind's packer searches once per budget)
    packed = _pack(adapter, question, state, k, items, tokens) if question.gold_turns else None
    scored = score_question(
        [item.session_id for item in items],
        [item.turn_ids for item in items],
        tokens,
        question.gold_sessions,
        question.gold_turns,
        k,
        packed_turns=None if packed is None else {b: p.turn_ids for b, p in packed.items()},
        packed_tokens=None if packed is None else {b: p.tokens for b, p in packed.items()},
    )
    row = _row(question, adapter.name, k, scored, latency_ms)
    row["n_items"] = len(items)
    extra = getattr(adapter, "row_extra", None)  # e.g. refind-llm: the model calls of this question
    if extra is not None:
        row.update(extra(question, state))
    return row


def _error_row(question: Question, adapter: str, k: int, exc: BaseException) -> dict[str, Any]:
    row = _row(question, adapter, k, failed_question(question.gold_sessions, question.gold_turns), None)
    row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:500])
    return row


def run(
    dataset: Dataset,
    questions: Sequence[Question],
    adapter_names: Sequence[str],
    k: int,
    *,
    fetch: int = 200,
    quiet: bool = False,
    time_budget: float | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ask ``questions`` of every adapter in ``adapter_names`` (all available); returns the score rows in
    (question, adapter) order and each adapter's ``info`` (settings it reported). With ``time_budget``
    (seconds), no question is started after it is spent, and only the questions every adapter was asked
    keep their rows."""
    deadline = time.monotonic() + time_budget if time_budget is not None else None
    config = registry.AdapterConfig(dataset=dataset.name, k=k, turn_level=dataset.turn_level, fetch=fetch)
    adapters = [registry.create(name) for name in adapter_names]
    if not adapters:
        return [], {}
    by_haystack: dict[str, list[Question]] = {}
    for q in questions:
        by_haystack.setdefault(q.haystack, []).append(q)
    rows: list[dict[str, Any]] = []
    bar = _progress(len(questions) * len(adapters), dataset.name, quiet)
    try:
        for key, sessions in dataset.haystacks(by_haystack):
            if deadline is not None and time.monotonic() > deadline:
                break
            for adapter in adapters:
                asked = by_haystack[key]
                try:
                    state = adapter.init(sessions, config)
                except Exception as exc:
                    rows.extend(_error_row(q, adapter.name, k, exc) for q in asked)
                    bar.update(len(asked))
                    continue
                try:
                    for q in asked:
                        if deadline is not None and time.monotonic() > deadline:
                            break
                        try:
                            rows.append(_ask(adapter, q, state, k))
                        except Exception as exc:
                            rows.append(_error_row(q, adapter.name, k, exc))
                        bar.update(1)
                finally:
                    teardown = getattr(adapter, "teardown", None)
                    if teardown is not None:
                        teardown(state)
    finally:
        bar.close()
    if deadline is not None:
        asked_of: dict[str, int] = {}
        for r in rows:
            asked_of[r["question_id"]] = asked_of.get(r["question_id"], 0) + 1
        rows = [r for r in rows if asked_of[r["question_id"]] == len(adapters)]
    order = {q.id: i for i, q in enumerate(questions)}
    rank = {name: i for i, name in enumerate(adapter_names)}
    rows.sort(key=lambda r: (order[r["question_id"]], rank[r["adapter"]]))
    info = {a.name: getattr(a, "info", None) for a in adapters if getattr(a, "info", None)}
    return rows, info


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def llm_summary(rows: Sequence[dict[str, Any]], adapter_names: Sequence[str]) -> dict[str, Any]:
    """For adapters whose rows carry model calls (``llm_calls``): calls, the share of replies with a
    usable tool call, tokens and wall time per question, fallbacks, and the questions that ended with no
    evidence where the first other adapter (the heuristic ``refind``, when run) had some."""
    out: dict[str, Any] = {}
    items = {(r["question_id"], r["adapter"]): r.get("n_items") for r in rows}
    for name in adapter_names:
        mine = [r for r in rows if r["adapter"] == name and r.get("llm_calls") is not None]
        if not mine:
            continue
        calls = sum(r["llm_calls"] for r in mine)
        usable = sum(r["llm_usable"] for r in mine)
        base = "refind" if "refind" in adapter_names and name != "refind" else None
        empty_vs = (
            sum(1 for r in mine if not r.get("n_items") and items.get((r["question_id"], base)))
            if base
            else None
        )
        n = len(mine)
        out[name] = {
            "questions": n,
            "calls": calls,
            "calls_per_question": calls / n,
            "usable_tool_call_replies": usable,
            "usable_share": usable / calls if calls else None,
            "prompt_tokens_per_question": sum(r["llm_prompt_tokens"] for r in mine) / n,
            "completion_tokens_per_question": sum(r["llm_completion_tokens"] for r in mine) / n,
            "wall_ms_per_question": sum(r["latency_ms"] or 0.0 for r in mine) / n,
            "fallbacks": sum(1 for r in mine if r.get("llm_fallback")),
            "empty_evidence": sum(1 for r in mine if not r.get("n_items")),
            "empty_where_baseline_not": empty_vs,
            "baseline": base,
        }
    return out


def summarize(
    dataset: Dataset,
    questions: Sequence[Question],
    rows: Sequence[dict[str, Any]],
    adapter_names: Sequence[str],
    skipped_adapters: dict[str, str],
    k: int,
    *,
    selection: dict[str, Any],
    command: str,
    adapter_info: dict[str, Any],
) -> dict[str, Any]:
    """summary.json's content."""
    skipped = dict(sorted(dataset.skipped.items()))
    summary = {
        "dataset": dataset.name,
        "k": k,
        "n_questions": len(questions),
        "n_answerable": sum(1 for q in questions if not q.abstention),
        "n_abstention": sum(1 for q in questions if q.abstention),
        "adapters": {name: aggregate([r for r in rows if r["adapter"] == name]) for name in adapter_names},
        "llm": llm_summary(rows, adapter_names),
        "skipped_adapters": skipped_adapters,
        "skipped_questions": {"total": sum(skipped.values()), "by_reason": skipped},
        "data_notes": dict(sorted(dataset.notes.items())),
        "selection": selection,
        "turn_level": dataset.turn_level,
        "budgets": list(BUDGETS),
        "tokenizer": tokenizer_name(),
        "adapter_settings": adapter_info,
        "data": {
            "path": str(dataset.path),
            "sha256": {name: _sha256(f) for f, name in _file_names(dataset.files).items()},
        },
        "environment": _environment(),
        "command": command,
    }
    return _round(summary)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks run``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(argv)
    _positive(parser, "k", args.k, 100)
    _positive(parser, "limit", args.limit, 10**7)
    _positive(parser, "stratify", args.stratify, 10**7)
    _positive(parser, "sample", args.sample, 10**7)
    if args.sample is not None and args.stratify is not None:
        parser.error("give --stratify or --sample, not both")
    _positive(parser, "fetch", args.fetch, 100_000)
    _positive(parser, "time-budget", args.time_budget, 10**7)
    names = list(dict.fromkeys(n.strip() for n in args.adapters.split(",") if n.strip()))
    unknown = [n for n in names if n not in registry.ADAPTERS]
    if not names or unknown:
        parser.error(
            f"--adapters: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(registry.ADAPTERS)}"
        )

    from refind.errors import RefindError

    try:
        dataset = load_dataset(args.dataset, args.data)
    except RefindError as exc:
        print(f"benchmarks: {exc}", file=sys.stderr)
        return 2
    questions = select_questions(
        dataset.questions, args.stratify, args.limit, sample=args.sample, seed=args.seed
    )
    skipped_adapters: dict[str, str] = {}
    active = []
    for name in names:
        reason = registry.unavailable(name)
        if reason:
            skipped_adapters[name] = reason
            print(f"benchmarks: skipping adapter {name}: {reason}", file=sys.stderr)
        else:
            active.append(name)
    if dataset.skipped:
        detail = ", ".join(f"{v} {k}" for k, v in sorted(dataset.skipped.items()))
        print(
            f"benchmarks: {dataset.name}: skipped {sum(dataset.skipped.values())} QA items ({detail})",
            file=sys.stderr,
        )

    try:
        rows, info = run(
            dataset,
            questions,
            active,
            args.k,
            fetch=args.fetch,
            quiet=args.quiet,
            time_budget=args.time_budget,
        )
    except RefindError as exc:
        print(f"benchmarks: {exc}", file=sys.stderr)
        return 2
    command = "python -m benchmarks run " + shlex.join(argv)
    selection: dict[str, Any] = {
        "stratify": args.stratify,
        "limit": args.limit,
        "n_available": len(dataset.questions),
    }
    if args.sample is not None:
        selection.update(sample=args.sample, seed=args.seed)
    if args.time_budget is not None:
        answered = {r["question_id"] for r in rows}
        selection.update(time_budget=args.time_budget, selected=len(questions))
        questions = [q for q in questions if q.id in answered]
    summary = summarize(
        dataset,
        questions,
        rows,
        active,
        skipped_adapters,
        args.k,
        selection=selection,
        command=command,
        adapter_info=info,
    )

    from benchmarks import report

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "scores.ndjson").open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(_round(row), ensure_ascii=False) + "\n")
    (out / "summary.json").write_text(
        json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "scorecard.md").write_text(report.scorecard(summary), encoding="utf-8")
    if not args.no_plot:
        report.plot(summary, out / "plot.png")
    errors = sum(1 for r in rows if r["status"] == "error")
    print(
        f"benchmarks: {len(questions)} questions x {len(active)} adapters -> {out}"
        + (f" ({errors} errors)" if errors else ""),
        file=sys.stderr,
    )
    return 1 if errors else 0
