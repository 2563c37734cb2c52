"""``python -m benchmarks dense-probe``: would a sentence-embedding ranking, fused with refind's, help?

A probe, not an adapter: it asks whether a dense signal adds what refind's keyword rounds miss, before
anyone builds one into the store. Per question it runs refind's default agent (the harness's haystack,
``SearchSession.session_score``: the sessions' fused scores across rounds), ranks the haystack's sessions by
the best cosine similarity of any of their messages to the question (a sentence-transformers model), and
scores recall_all@k by question type for

- ``refind``: refind's fused session ranking alone (the harness's figure for the default agent);
- ``dense``: the embedding ranking alone;
- ``fused w=W``: refind's scores plus ``W / (60 + dense rank)``, the reciprocal-rank fusion refind's rounds
  use, at each weight given (a round of weight 1 adds ``1 / (60 + rank)``).

It needs ``sentence-transformers`` and a model directory, neither of which refind depends on
(``pip install sentence-transformers``; ``--model`` is a local model directory, read with
``HF_HUB_OFFLINE=1``: nothing is downloaded). Messages are embedded in full up to the model's own length
limit, normalized, once per haystack. Figures are deterministic for a model and data.

    python -m benchmarks dense-probe --dataset locomo --data ../shared/data/locomo10_dev.json --model DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from refind.fusion import credit

__all__ = ["best_per_session", "fuse", "main", "recall_all_by_type", "refind_scores"]

_K0 = 60  # refind's fusion constant (Fusion.k0)


def best_per_session(session_ids: Sequence[str], similarities: Iterable[float]) -> list[str]:
    """Sessions ranked by their best message similarity (ties: session id)."""
    best: dict[str, float] = {}
    for sid, sim in zip(session_ids, similarities, strict=True):
        if sid not in best or sim > best[sid]:
            best[sid] = float(sim)
    return sorted(best, key=lambda s: (-best[s], s))


def fuse(scores: Mapping[str, float], dense: Sequence[str], weight: float, k0: int = _K0) -> list[str]:
    """Sessions by ``scores`` plus ``weight / (k0 + rank)`` of their rank in ``dense`` (ties: session id):
    :func:`refind.fusion.credit`, as refind's rounds are fused."""
    total = dict(scores)
    credit(total, dense, weight, k0)
    return sorted(total, key=lambda s: (-total[s], s))


def recall_all_by_type(rows: Sequence[tuple[str, Sequence[str], Sequence[str]]], k: int) -> dict[str, float]:
    """recall_all@k (every gold session in the first k) per question type and ``ALL``, from
    ``(type, gold sessions, ranking)`` rows."""
    n: Counter[str] = Counter()
    ok: Counter[str] = Counter()
    for kind, gold, ranking in rows:
        hit = set(gold) <= set(ranking[:k])
        for key in (kind, "ALL"):
            n[key] += 1
            ok[key] += hit
    return {key: round(ok[key] / n[key], 3) for key in sorted(n)}


def refind_scores(memory: Any, user_id: str, question: str, now: int | None, k: int) -> dict[str, float]:
    """refind's session scores for ``question`` with the default agent, as ``Memory.search`` runs it:
    each evidence session's best block score (its fused score across rounds with the latest-first factor,
    what ``SearchResult.sessions()`` orders by), and every other session the rounds scored at its fused
    score, so that a dense ranking can lift a session the rounds ranked low. The first ``k`` of this ranking
    are the result's first ``k`` sessions: the best ``k`` fused sessions always have evidence
    (``SearchSession.complete``), and the latest-first factor only raises a score."""
    session = memory.open_session(question, user_id, now=now, top_k=k)
    memory.default_agent().run(session)
    scores = dict(session.session_score)
    shown: dict[str, float] = {}
    for block in session.result().evidence:
        if block.standing:  # offered beside the evidence; SearchResult.sessions() leaves them out
            continue
        shown[block.session_id] = max(shown.get(block.session_id, block.score), block.score)
    return {**scores, **shown}


def _encoder(model: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise SystemExit(
            "dense-probe needs sentence-transformers (pip install sentence-transformers), "
            "which refind does not depend on"
        ) from None
    try:
        return SentenceTransformer(model, device="cpu")
    except (OSError, ValueError) as exc:  # no such directory, or not a model (nothing is downloaded)
        raise SystemExit(
            f"dense-probe: cannot load the model {model!r} (a local model directory): {exc}"
        ) from None


def run(dataset: str, data: str, model: str, weights: Sequence[float], k: int) -> dict[str, Any]:
    from benchmarks.adapters.bm25 import _USER, open_haystack
    from benchmarks.catalog import load_dataset

    ds = load_dataset(dataset, data)  # bad data fails before the model loads
    encoder = _encoder(model)
    wanted = [q for q in ds.questions if not q.abstention and q.gold_sessions]
    runs: dict[str, list[tuple[str, Sequence[str], Sequence[str]]]] = defaultdict(list)
    for key, sessions in ds.haystacks({q.haystack for q in wanted}):
        mine = [q for q in wanted if q.haystack == key]
        if not mine:
            continue
        session_ids = [s.id for s in sessions for _ in s.messages]
        vectors = encoder.encode(
            [m.content for s in sessions for m in s.messages],
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        asked = encoder.encode([q.text for q in mine], normalize_embeddings=True, convert_to_numpy=True)
        memory = open_haystack(sessions)
        try:
            for q, qv in zip(mine, asked, strict=True):
                scores = refind_scores(memory, _USER, q.text, q.now, k)
                dense = best_per_session(session_ids, vectors @ qv)
                runs["refind"].append((q.type, q.gold_sessions, fuse(scores, [], 0.0)))
                runs["dense"].append((q.type, q.gold_sessions, dense))
                for w in weights:
                    runs[f"fused w={w:g}"].append((q.type, q.gold_sessions, fuse(scores, dense, w)))
        finally:
            memory.close()
        print(f"{key}: {len(mine)} questions", file=sys.stderr, flush=True)
    return {
        "dataset": dataset,
        "model": model,
        "k": k,
        "questions": len(runs["refind"]),
        "recall_all_at_k": {name: recall_all_by_type(rows, k) for name, rows in runs.items()},
    }


def main(argv: list[str] | None = None) -> int:
    from benchmarks.catalog import DATASETS

    doc = __doc__ or ""
    p = argparse.ArgumentParser(prog="python -m benchmarks dense-probe", description=doc.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--data", required=True, help="the dataset file (or directory)")
    p.add_argument("--model", required=True, help="a local sentence-transformers model directory")
    p.add_argument(
        "--weights", default="0.5,1,2,4", help="fusion weights of the dense ranking (default 0.5,1,2,4)"
    )
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--out", type=Path, default=None, help="also write the report here (a directory)")
    args = p.parse_args(argv)
    try:
        weights = [float(w) for w in args.weights.split(",") if w.strip()]
    except ValueError:
        p.error("--weights: expected comma-separated numbers")
    if any(w < 0 for w in weights):
        p.error("--weights: expected numbers >= 0")
    if args.k < 1:
        p.error("--k must be at least 1")
    from refind.errors import RefindError

    try:
        report = run(args.dataset, args.data, args.model, weights, args.k)
    except RefindError as exc:  # unreadable data: one line, like `benchmarks run`
        print(f"benchmarks: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(report, indent=2)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "dense_probe.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
