"""Render a run's summary as a markdown scorecard and a plot (matplotlib, Agg backend, imported lazily)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot", "scorecard", "table"]

_METRICS = (
    ("precision_at_k", "P@K"),
    ("recall_at_k", "R@K"),
    ("recall_all_at_k", "recall_all@K"),
    ("hit_rate", "hit@K"),
    ("ndcg_at_k", "nDCG@K"),
    ("mrr", "MRR"),
)


def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


_TURN_METRICS = (("turn_recall_at_budget", "turns"), ("packed_turn_recall_at_budget", "packed"))


def _turn_head(budgets: list[int]) -> list[str]:
    return [f"{label}@{b}" for _, label in _TURN_METRICS for b in budgets] + [f"all@{max(budgets)}"]


def _turns(stats: dict[str, Any], budgets: list[int]) -> list[str]:
    cells = []
    for key, _ in _TURN_METRICS:
        t = stats.get(key)
        cells += [_f(t.get(str(b)) if t else None) for b in budgets]
    every = stats.get("packed_all_at_budget")  # share of questions whose gold turns all fit the largest B
    return cells + [_f(every.get(str(max(budgets))) if every else None)]


def _grouped(
    adapters: dict[str, Any],
    key: str,
    what: str,
    label: Any,
    budgets: list[int],
    turn_level: bool,
    latency: bool = False,
) -> list[str]:
    """The per-``what`` table (``key``: ``by_type`` or ``by_bucket``), or nothing when no adapter has one;
    ``latency`` adds the p50/p95 columns (per bucket: BEAM's sizes differ by 10x)."""
    groups = _keys(adapters, key)
    if not groups:
        return []
    timing = ["p50 ms", "p95 ms"] if latency else []
    head = [what, "adapter", "n", *(label(t) for _, t in _METRICS), *timing, "evidence tokens"]
    if turn_level:
        head += _turn_head(budgets)
    rows = []
    for g in groups:
        for name, stats in adapters.items():
            s = (stats.get(key) or {}).get(g)
            if s is None:
                continue
            row = [
                g,
                f"`{name}`",
                _f(s["n"]),
                *(_f(s[m]) for m, _ in _METRICS),
                *([_f(s["latency_p50_ms"], 1), _f(s["latency_p95_ms"], 1)] if latency else []),
                _f(s["evidence_tokens_mean"], 0),
            ]
            if turn_level:
                row += _turns(s, budgets)
            rows.append(row)
    return table(head, rows)


def _keys(adapters: dict[str, Any], key: str) -> list[str]:
    keys: list[str] = []
    for stats in adapters.values():
        keys += [k for k in stats.get(key) or {} if k not in keys]
    return keys


def table(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 2) -> list[str]:
    """A markdown table's lines: the first ``left`` columns aligned left, the rest (figures) right."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < left else "--:" for i in range(len(header))) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def scorecard(summary: dict[str, Any]) -> str:
    """The scorecard markdown of a summary (deterministic apart from the latency columns)."""
    k = summary["k"]
    budgets = summary.get("budgets", [1000, 2000, 4000])
    turn_level = summary.get("turn_level")
    adapters: dict[str, Any] = summary["adapters"]

    def label(text: str) -> str:
        return text.replace("K", str(k))

    out = [f"# Scorecard: {summary['dataset']}, K = {k}", ""]
    sel = summary.get("selection", {})
    picked = [
        f"stratify {sel['stratify']}" if sel.get("stratify") else "",
        f"random sample {sel['sample']} per type (seed {sel.get('seed', 0)})" if sel.get("sample") else "",
        f"limit {sel['limit']}" if sel.get("limit") else "",
        f"time budget {sel['time_budget']} s: {summary['n_questions']} of {sel.get('selected')} selected asked"
        if sel.get("time_budget")
        else "",
    ]
    picked_text = ", ".join(p for p in picked if p)
    out.append(
        f"- questions: {summary['n_questions']} ({summary.get('n_answerable', '?')} answerable, "
        f"{summary.get('n_abstention', 0)} abstention) of {sel.get('n_available', '?')} loaded"
        + (f" ({picked_text})" if picked_text else "")
    )
    sq = summary.get("skipped_questions", {})
    if sq.get("total"):
        reasons = ", ".join(f"{v} {r}" for r, v in sq["by_reason"].items())
        out.append(f"- QA items skipped while loading: {sq['total']} ({reasons})")
    else:
        out.append("- QA items skipped while loading: 0")
    if summary.get("data_notes"):
        out.append("- data notes: " + ", ".join(f"{v} {n}" for n, v in summary["data_notes"].items()))
    out.append("- adapters run: " + (", ".join(adapters) or "none"))
    for name, reason in summary.get("skipped_adapters", {}).items():
        out.append(f"- adapter skipped: `{name}`: {reason}")
    for name, settings in summary.get("adapter_settings", {}).items():
        out.append(f"- `{name}` settings: " + ", ".join(f"{k_}={v}" for k_, v in settings.items()))
    data = summary.get("data", {})
    if data:
        digests = ", ".join(f"{n} sha256 {d[:12]}…" for n, d in data.get("sha256", {}).items())
        out.append(f"- data: `{data.get('path')}` ({digests})")
    out.append(f"- tokens: {summary.get('tokenizer')}")
    env = summary.get("environment", {})
    if env:
        out.append(
            f"- environment: Python {env.get('python')}, {env.get('platform')}, {env.get('cpus')} CPUs, "
            f"refind {env.get('refind')}"
        )
    if summary.get("command"):
        out += ["", "```", summary["command"], "```"]

    head = ["adapter", "n", *(label(t) for _, t in _METRICS), "p50 ms", "p95 ms", "evidence tokens"]
    if turn_level:
        head += _turn_head(budgets)
    rows = []
    for name, stats in adapters.items():
        row = [f"`{name}`", _f(stats["n"]), *(_f(stats[m]) for m, _ in _METRICS)]
        row += [
            _f(stats["latency_p50_ms"], 1),
            _f(stats["latency_p95_ms"], 1),
            _f(stats["evidence_tokens_mean"], 0),
        ]
        if turn_level:
            row += _turns(stats, budgets)
        rows.append(row)
    out += ["", "## All answerable questions", "", *table(head, rows)]
    errors = {n: s.get("errors") for n, s in adapters.items() if s.get("errors")}
    if errors:
        out += ["", "Errors (scored as misses): " + ", ".join(f"`{n}` {e}" for n, e in errors.items())]
    if turn_level and any(s.get("packed_tokens_at_budget") for s in adapters.values()):
        head = ["adapter", *(f"packed tokens@{b}" for b in budgets), "over budget"]
        rows = [
            [
                f"`{name}`",
                *(_f((s.get("packed_tokens_at_budget") or {}).get(str(b)), 0) for b in budgets),
                _f(s.get("packed_over_budget")),
            ]
            for name, s in adapters.items()
        ]
        out += [
            "",
            "Packed evidence, mean tokens per budget (over budget: question-budget pairs above B):",
            "",
        ]
        out += table(head, rows)

    by_type = _grouped(adapters, "by_type", "type", label, budgets, bool(turn_level))
    if by_type:
        out += ["", "## By type", "", *by_type]
    by_bucket = _grouped(adapters, "by_bucket", "bucket", label, budgets, bool(turn_level), latency=True)
    if by_bucket:
        out += ["", "## By bucket", "", *by_bucket]
    if turn_level and any(s.get("turn_hit_rate") is not None for s in adapters.values()):
        groups = [("all", "", "")]
        groups += [(t, "by_type", t) for t in _keys(adapters, "by_type")]
        groups += [(b, "by_bucket", b) for b in _keys(adapters, "by_bucket")]
        rows = []
        for group, key, name_ in groups:
            for name, stats in adapters.items():
                s = stats if not key else (stats.get(key) or {}).get(name_)
                if s is None:
                    continue
                hits = s.get("packed_hit_at_budget") or {}
                rows.append(
                    [group, f"`{name}`", _f(s["n"]), _f(s.get("nonempty_rate")), _f(s.get("turn_hit_rate"))]
                    + [_f(hits.get(str(b))) for b in budgets]
                )
        head = [
            "questions",
            "adapter",
            "n",
            "non-empty",
            "holds a gold turn",
            *(f"gold@{b}" for b in budgets),
        ]
        out += ["", "## Evidence that holds a gold turn", "", *table(head, rows)]

    abst = {n: s["abstention"] for n, s in adapters.items() if s.get("abstention")}
    if abst:
        rows = [
            [f"`{n}`", _f(a["n"]), _f(a["returned_sessions_mean"], 2), _f(a["evidence_tokens_mean"], 0)]
            for n, a in abst.items()
        ]
        out += [
            "",
            "## Abstention questions (no gold; excluded from the metrics above)",
            "",
            *table(["adapter", "n", f"sessions returned (of {k})", "evidence tokens"], rows),
        ]
    llm = summary.get("llm") or {}
    if llm:
        rows = [
            [
                f"`{n}`",
                _f(v["questions"]),
                _f(v["calls_per_question"], 2),
                f"{v['usable_tool_call_replies']}/{v['calls']}"
                + (f" ({100 * v['usable_share']:.1f}%)" if v["usable_share"] is not None else ""),
                _f(v["prompt_tokens_per_question"], 0),
                _f(v["completion_tokens_per_question"], 0),
                _f(v["wall_ms_per_question"] / 1000, 1),
                _f(v["fallbacks"]),
                _f(v["empty_evidence"]),
                "-" if v["empty_where_baseline_not"] is None else _f(v["empty_where_baseline_not"]),
            ]
            for n, v in llm.items()
        ]
        head = [
            "adapter",
            "questions",
            "model calls / q",
            "replies with a usable tool call",
            "prompt tokens / q",
            "completion tokens / q",
            "wall s / q",
            "fell back",
            "empty evidence",
            "empty where refind's is not",
        ]
        out += ["", "## The model's calls", "", *table(head, rows, left=1)]
    out += [
        "",
        f"P@{k} counts empty slots as misses; recall_all@{k} = every gold session in the top {k}; hit@{k} = any. "
        f"Evidence tokens: the items up to the {k}-th distinct session. turns@B: share of gold turns inside the "
        "items that fit whole in the first B tokens (rank order, stopping at the first that does not fit). "
        "packed@B: share of gold turns in the evidence the adapter hands a reader for B tokens (refind: "
        "`Memory.search(..., max_tokens=B)`; the others: their items in rank order, first fit). "
        "all@B: share of questions whose gold turns are all in that packed evidence. "
        "Evidence that holds a gold turn: share of questions with any item (non-empty), with a gold turn among "
        "all the items, and with one in the evidence packed for B tokens (gold@B). "
        "Definitions: docs/benchmarks/README.md.",
        "",
    ]
    return "\n".join(out)


def plot(summary: dict[str, Any], path: str | Path) -> None:
    """Bar charts, one panel per metric: adapters side by side, over all questions and per type."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = summary["k"]
    adapters: dict[str, Any] = summary["adapters"]
    metrics = [(m, t.replace("K", str(k))) for m, t in _METRICS]
    if summary.get("turn_level"):
        budgets = summary.get("budgets", [])
        metrics += [(f"turns@{b}", f"turn recall within {b} tokens (ranked items)") for b in budgets]
        metrics += [
            (f"packed@{b}", f"packed turn recall within {b} tokens (what a reader gets)") for b in budgets
        ]
    types: list[str] = []
    for stats in adapters.values():
        types += [t for t in stats["by_type"] if t not in types]
    groups = ["all", *types]
    width = max(8.0, 0.9 * len(groups) * max(1, len(adapters)) * 0.45 + 3)
    height = 2.3 * len(metrics)
    fig, axes = plt.subplots(len(metrics), 1, figsize=(width, height), squeeze=False)
    bar = 0.8 / max(1, len(adapters))

    def value(stats: dict[str, Any] | None, metric: str) -> float:
        if stats is None:
            return 0.0
        if metric.startswith(("turns@", "packed@")):
            key = "turn_recall_at_budget" if metric.startswith("turns@") else "packed_turn_recall_at_budget"
            t = stats.get(key) or {}
            return float(t.get(metric.split("@")[1]) or 0.0)
        return float(stats.get(metric) or 0.0)

    for ax, (metric, title) in zip(axes[:, 0], metrics, strict=True):
        for i, (name, stats) in enumerate(adapters.items()):
            ys = [value(stats, metric)] + [value(stats["by_type"].get(t), metric) for t in types]
            xs = [g + (i - (len(adapters) - 1) / 2) * bar for g in range(len(groups))]
            ax.bar(xs, ys, width=bar, label=name)
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_ylim(0, 1.05)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=25, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    if adapters:
        axes[0, 0].legend(loc="upper right", fontsize=8, ncol=len(adapters))
    else:
        axes[0, 0].text(0.5, 0.5, "no adapter ran", ha="center", va="center", transform=axes[0, 0].transAxes)
    fig.suptitle(f"{summary['dataset']}: {summary['n_questions']} questions, K = {k}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))  # room for the title
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)
