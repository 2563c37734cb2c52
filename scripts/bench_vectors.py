"""What vectors cost (issue 36): each measurement in a process of its own (its peak RSS is its own), printed
as one JSON line. docs/benchmarks/vectors.md holds the figures and the commands that made them.

    python scripts/bench_vectors.py import --messages 100000 --users 1      # import msgs/s (queue included)
    PYTHONPATH=OLD_CHECKOUT python scripts/bench_vectors.py import ...        # the same, before vectors
    python scripts/bench_vectors.py worker --messages 20000 [--model local]  # the worker's msgs/s
    python scripts/bench_vectors.py adds --messages 20000 --ms-per-message 5  # add latency while it works
    python scripts/bench_vectors.py knn --vectors 100000 --users 1 --dims 384 # KNN p50 per user

The synthetic messages are the perf benchmark's (benchmarks.corpus.corpus). Without ``--model``, text ->
vector is a stand-in that costs ``--ms-per-message`` of sleep per message plus a hashed bag of words: it
measures what the worker, the engine and the write path cost around a model, and what adds see while a
model of that speed runs (the local model, measured alone, embeds about 1 / (its ms per message)).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # benchmarks/, tests/ (after PYTHONPATH: an older checkout's refind wins)


def rss_peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))], 3)


class StandIn:
    """A stand-in model: ``ms`` of sleep per text (the model's compute, with the GIL released as
    onnxruntime releases it) and a hashed bag of words for the vector."""

    def __init__(self, dims: int, ms: float) -> None:
        from tests.embedders import HashingTestEmbedder

        self.inner = HashingTestEmbedder(dimensions=dims, name=f"stand-in-{ms}ms")
        self.name = self.inner.name
        self.dimensions = dims
        self.ms = ms
        self.seconds = 0.0

    def embed(self, texts: Any) -> list[list[float]]:
        t0 = time.perf_counter()
        time.sleep(self.ms * len(texts) / 1000)
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - t0
        return out


class Timed:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.seconds = 0.0

    def embed(self, texts: Any) -> list[list[float]]:
        t0 = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - t0
        return list(out)


def model(args: argparse.Namespace) -> Any:
    if args.model == "local":
        from refind.embed.local import LocalEmbedder  # type: ignore[import-not-found]

        return Timed(LocalEmbedder())
    return StandIn(args.dims, args.ms_per_message)


def logs(messages: int, users: int, seed: int = 7) -> list[Any]:
    from benchmarks.corpus import corpus

    return list(corpus(messages, users, seed))


def cmd_import(args: argparse.Namespace) -> dict[str, Any]:
    import refind

    data = logs(args.messages, args.users)
    n = sum(len(s.messages) for s in data)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        mem = refind.Memory(Path(tmp) / "index")
        t0 = time.perf_counter()
        mem.import_sessions(data)
        seconds = time.perf_counter() - t0
        queued = mem.store.vector_counts().pending if hasattr(mem.store, "vector_counts") else None
        mem.close()
    return {
        "import_msgs_per_s": round(n / seconds, 1),
        "messages": n,
        "queued": queued,
        "rss_mb": rss_peak_mb(),
    }


def cmd_worker(args: argparse.Namespace) -> dict[str, Any]:
    import refind

    data = logs(args.messages, args.users)
    emb = model(args)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        mem = refind.Memory(Path(tmp) / "index", embedder=emb, embed_in_background=False)
        if args.batch:
            mem._worker.batch = args.batch  # type: ignore[union-attr]
        mem.import_sessions(data)
        t0 = time.perf_counter()
        written = mem.embed_pending()
        seconds = time.perf_counter() - t0
        counts = mem.vector_counts()
        mem.close()
    return {
        "embedded": written, "seconds": round(seconds, 1), "worker_msgs_per_s": round(written / seconds, 1),
        "embedding_seconds": round(emb.seconds, 1), "store_seconds": round(seconds - emb.seconds, 1),
        "left": counts.pending, "model": emb.name, "batch": args.batch or "default", "rss_mb": rss_peak_mb(),
    }  # fmt: skip


def cmd_adds(args: argparse.Namespace) -> dict[str, Any]:
    import refind

    data = logs(args.messages, args.users)
    rng = random.Random(3)
    emb = model(args)
    out: dict[str, Any] = {"model": emb.name}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        mem = refind.Memory(Path(tmp) / "index", embedder=emb, embed_in_background=False)
        mem.import_sessions(data)

        def adds(label: str) -> None:
            ms = []
            for i in range(args.adds):
                user = f"user-{rng.randrange(args.users):05d}"
                t0 = time.perf_counter()
                mem.add(
                    user, f"live-{label}-{i % 20}", [{"role": "user", "content": f"live message {i} {label}"}]
                )
                ms.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.02)
            out[f"add_{label}_p50_ms"] = round(statistics.median(ms), 2)
            out[f"add_{label}_p95_ms"] = pct(ms, 95)
            out[f"add_{label}_max_ms"] = round(max(ms), 1)

        adds("idle")
        stop = threading.Event()
        worker = threading.Thread(target=lambda: mem.embed_pending(should_stop=stop.is_set), daemon=True)
        before = mem.vector_counts().vectors
        t0 = time.perf_counter()
        worker.start()
        adds("worker")
        stop.set()
        worker.join()
        out["worker_msgs_per_s_during"] = round(
            (mem.vector_counts().vectors - before) / (time.perf_counter() - t0), 1
        )
        mem.close()
    out["rss_mb"] = rss_peak_mb()
    return out


def cmd_knn(args: argparse.Namespace) -> dict[str, Any]:
    import refind
    from refind.store.base import Filters, VectorRecord

    data = logs(args.vectors * args.users, args.users)
    rng = random.Random(5)

    def unit() -> list[float]:
        v = [rng.gauss(0, 1) for _ in range(args.dims)]
        n = sum(x * x for x in v) ** 0.5
        return [x / n for x in v]

    out: dict[str, Any] = {"vectors_per_user": args.vectors, "users": args.users, "dims": args.dims}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        where = "reference://" if args.engine == "reference" else Path(tmp) / "index"
        mem = refind.Memory(where)
        store = mem.store
        mem.import_sessions(data)
        store.use_vector_model("random", args.dims)
        t0 = time.perf_counter()
        n = 0
        while True:
            pending = store.pending_vectors(1000)
            if not pending:
                break
            n += store.write_vectors([VectorRecord(p.user_id, p.id, p.token, unit()) for p in pending])
            store.commit()
        out["write_vectors_per_s"] = round(n / (time.perf_counter() - t0), 1)
        users = store.users()
        month = Filters(
            time_from=1_672_531_200_000 + 150 * 86_400_000, time_to=1_672_531_200_000 + 180 * 86_400_000
        )
        for label, flt in (("", None), ("_30_days", month)):
            ms = []
            for i in range(args.queries):
                q = unit()
                t = time.perf_counter()
                store.knn(users[i % len(users)], q, args.k, flt)
                ms.append((time.perf_counter() - t) * 1000)
            out[f"knn{label}_p50_ms"] = round(statistics.median(ms[5:]), 2)
            out[f"knn{label}_p95_ms"] = pct(ms[5:], 95)
        mem.close()
    out["rss_mb"] = rss_peak_mb()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["import", "worker", "adds", "knn"])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=1)
    parser.add_argument("--vectors", type=int, default=1000, help="knn: vectors per user")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--engine", choices=["lucene", "reference"], default="lucene")
    parser.add_argument("--model", choices=["stand-in", "local"], default="stand-in")
    parser.add_argument("--ms-per-message", type=float, default=0.0)
    parser.add_argument(
        "--batch", type=int, default=0, help="worker: messages per step (default: the worker's)"
    )
    parser.add_argument("--tmp", default=None, help="where the temporary index goes")
    args = parser.parse_args()
    result = {
        "what": args.what,
        **{"import": cmd_import, "worker": cmd_worker, "adds": cmd_adds, "knn": cmd_knn}[args.what](args),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
