"""Store throughput and latency on a synthetic corpus of realistic chat text.

    python -m benchmarks perf --messages 100000 --users 100,1 --longmemeval ../shared/data/longmemeval_s_dev.json.gz --out out/perf

Each ``--users`` value is one configuration (``--messages`` spread over that many users: 100 users is 1,000
messages per user, 1 user is 100,000), measured in a fresh process of its own, one after the other, so
their figures come from the same window and compare as ratios. Per configuration:

- the corpus (:mod:`benchmarks.corpus`) is generated first (deterministic, ``--seed``: templates with names,
  places, foods, numbers and dates, Zipf-like word use, sessions of 6-30 turns spread over a year per user)
  and kept in memory, so ingest times only refind; ``generate_s`` is reported apart. After the imports only user-00000's texts
  are kept (for ``refind_rebuild``): the rest is dropped before anything else is timed;
- ``ingest_fresh``: ``Memory.import_sessions`` of 80% of the messages into an empty index;
  ``ingest_existing``: the other 20% (new sessions of the same users, who already have messages);
  ``reimport``: the first 80% again (every id exists: nothing is written); each as msgs/s;
- ``add20``: ``Memory.add`` of 20 messages (durable and searchable on return), ``--adds`` times;
- ``query``: a keyword query with a user and a 30-day time filter, k=50;
- ``search``: a whole ``Memory.search`` with the offline agent (several rounds, windows, fusion), after
  ``--warmup`` untimed ones: a process's first searches, while the JVM's just-in-time compiler is still at
  work on the engine's code;
- ``search_steady``: the same, ``--searches`` more, after ``--steady`` further untimed searches: a process
  that has served its first thousand-odd searches (a server, an agent's long session), whose engine code
  is compiled. The JIT's work ends gradually (in ad hoc runs the p50 of successive blocks of 200 searches
  kept falling over the first thousand-odd searches, then held; docs/benchmarks/perf.md). ``--steady 0``
  leaves it out. With
  ``--freeze`` the process calls ``gc.freeze()`` first, as ``refind serve`` does once started;
  ``search_gc_ms`` and ``search_steady_gc_ms``: Python's garbage collector's time within each timed block,
  ``search_steady_over_30ms``: how many steady searches took over 30 ms;
- ``refind_rebuild``: the yardstick of the published ReFind system, which rebuilds BM25 in Python over the
  user's messages for every query (tokenize, document frequencies, score every message, top 50), timed on
  one user's whole history ``--rebuilds`` times; ``search_speedup_vs_rebuild`` is its p50 over the
  search p50;
- ``parse_time_range``: :func:`refind.query.timeparse.parse_time_range` alone on the same questions;
- ``rss_mb``: peak resident set of the process (JVM included), the corpus held in memory included;
- ``stream_msgs_per_s``, ``stream_rss_mb``: in a fresh process of its own, the fresh import of the same first
  80% as a stream (``import_sessions`` of the corpus generator: generation inside the timing, no message
  held but by the import, as ``refind import FILE`` reads a file), and that process's peak RSS: the import's
  own memory. A list of the corpus held in memory costs the import the garbage collector's scans of it (the
  difference between ``ingest_fresh`` and ``stream`` at a million messages).

With ``--meaning on`` each configuration is measured a second time with search by meaning (issue 36; ``both``
measures each with and without, one after the other, and reports the ratios). Its vectors come from a
stand-in (:class:`StandIn`: each message's hashed words in the local model's 384 dimensions, at no model
cost), so that 100,000 messages get their vectors in minutes: what a search costs does not depend on what the
vectors say (the engine compares a person's vectors one by one up to 20,000 of them, a graph search above),
and every question pays the real model's time (its vector is computed by the model, then replaced by the
stand-in's). What the model itself costs is measured apart: ``model_msgs_per_s`` (the local model on 1,024
of the corpus's messages, in the worker's batches), ``vectors_write_per_s`` (the engine writing the stand-in's
vectors: the ceiling the worker cannot pass whatever the model), and ``meaning_delay_ms`` (an add of 20
messages to a warm memory with the real model in the background, until a search by meaning can find them;
p50 and p95 of 10).

With ``--longmemeval PATH`` one more configuration imports that file's sessions (LongMemEval-S: one user
per question, many small sessions), loaded into memory first, into an empty index and again; ``index_mb``
is the index's size on disk after the first import. Beside it, each in a fresh process of its own, the
engine's own rate on the same messages (``lucene_alone``: ``io.refind.bench.Ceiling``, Lucene's
IndexWriter in one Java loop with the engine's analyzer and writer settings, one commit at the end, nothing
of refind's import around it; benchmark code, not refind's: compiled on demand by :mod:`benchmarks.javac`,
which needs a JDK 21+), for two shapes of document: ``text`` (each message one analyzed field and its
stored text) and ``refind`` (the documents refind writes: every field of a message, each session's two);
``import_over_lucene`` is refind's fresh import rate over the ``refind`` shape's.

``OUT/perf.json`` holds every configuration and, for the first and last ``--users`` values, the ratios the
store is held to (search and add of 20 at the larger history over the smaller).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import refind
from benchmarks.bridge import start_jvm
from benchmarks.corpus import (
    ACTIVITIES,
    FOODS,
    NAMES,
    PLACES,
    QUESTIONS,
    START_MS,
    THINGS,
    WORK,
    YEAR_MS,
    corpus,
    fill,
    message_texts,
)
from benchmarks.javac import bench_class
from refind.loaders import iter_longmemeval
from refind.models import SessionLog


class _Collector:
    """Milliseconds Python's garbage collector ran (all generations) while :meth:`timing` was open."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._start = 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.ms += (time.perf_counter() - self._start) * 1000

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        gc.callbacks.append(self._callback)
        try:
            yield
        finally:
            gc.callbacks.remove(self._callback)


def _rss_peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def _dist(name: str, ms: list[float]) -> dict[str, float]:
    return {f"{name}_p50_ms": round(statistics.median(ms), 3), f"{name}_p95_ms": round(_pct(ms, 95), 3)}


class StandIn:
    """The perf corpus's vectors at no model cost (see the module's doc): a text's hashed words in ``model``'s
    dimensions, unit length; a call for one text (a question) also runs ``model`` on it, for its time."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name = "perf-stand-in"
        self.dimensions = int(model.dimensions)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) == 1:
            self.model.embed(texts)  # a question: the real model's time, its vector unused
        return [self._vector(t) for t in texts]

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * self.dimensions
        for word in _WORD.findall(text.lower()):
            h = zlib.crc32(word.encode())
            v[h % self.dimensions] += 1.0 if h & 0x80000000 else -1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]


def _meaning_costs(texts: list[str]) -> dict[str, float]:
    """The local model's rate on ``texts`` (the worker's batches), and the delay from an add of 20 messages to
    a search by meaning finding them, with the model in the background of a warm memory (module doc)."""
    from refind.embed.local import LocalEmbedder
    from refind.embed.worker import BATCH

    model = LocalEmbedder()
    model.embed(texts[:BATCH])  # the session's first run
    t0 = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        model.embed(texts[i : i + BATCH])
    rate = len(texts) / (time.perf_counter() - t0)
    delays = []
    with (
        tempfile.TemporaryDirectory(prefix="refind-perf-delay-") as tmp,
        refind.Memory(Path(tmp) / "index", embedder=model) as mem,
    ):
        for i in range(11):
            batch = [
                {
                    "role": "user" if j % 2 == 0 else "assistant",
                    "content": texts[(i * 20 + j) % len(texts)],
                }
                for j in range(20)
            ]
            t = time.perf_counter()
            mem.add("delay", f"s{i}", batch)
            if not mem.wait_for_vectors(120):
                raise RuntimeError("the embedding worker did not finish within 120 s")
            if i:  # the first add opens the model's session
                delays.append((time.perf_counter() - t) * 1000)
    return {"model_msgs_per_s": round(rate, 1), **_dist("meaning_delay", delays)}


def _import_rate(mem: refind.Memory, logs: list[SessionLog], desc: str) -> tuple[float, int]:
    """msgs/s of one ``import_sessions`` of ``logs`` (messages read, whether or not written), and how many
    were added."""
    from tqdm import tqdm

    n = sum(len(log.messages) for log in logs)
    bar = tqdm(total=n, unit="msg", desc=desc, file=sys.stderr, mininterval=1.0)
    t0 = time.perf_counter()
    result = mem.import_sessions(logs, progress=bar.update)
    seconds = time.perf_counter() - t0
    bar.close()
    return round(n / seconds, 1), result.added


_WORD = re.compile(r"\w+")


def refind_rebuild(texts: list[str], query: str, k: int = 50, k1: float = 1.2, b: float = 0.75) -> list[int]:
    """What the published ReFind does per query: BM25 recomputed in Python over all of the user's messages
    (tokenize each, count document frequencies, score every message), then the top ``k``."""
    docs = [Counter(_WORD.findall(t.lower())) for t in texts]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    lengths = [sum(d.values()) for d in docs]
    avgdl = sum(lengths) / max(len(docs), 1)
    n = len(docs)
    terms = _WORD.findall(query.lower())
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    scores = []
    for i, d in enumerate(docs):
        s = 0.0
        for t in terms:
            f = d.get(t, 0)
            if f:
                s += idf[t] * f * (k1 + 1) / (f + k1 * (1 - b + b * lengths[i] / avgdl))
        scores.append(s)
    return sorted(range(n), key=scores.__getitem__, reverse=True)[:k]


def measure(
    messages: int,
    users: int,
    seed: int = 7,
    adds: int = 200,
    queries: int = 500,
    searches: int = 200,
    warmup: int = 30,
    rebuilds: int = 5,
    store: str | None = None,
    steady: int = 1500,
    freeze: bool = False,
    meaning: bool = False,
) -> dict:
    """One configuration, in this process (see the module's doc). ``meaning``: with search by meaning (the
    stand-in's vectors, the model's time per question). ``store``: a store URL
    (``opensearch://host:port/prefix``) instead of a temporary index directory; ``-{users}u`` is appended
    to its prefix, which must hold nothing."""
    from tqdm import tqdm

    t0 = time.perf_counter()
    second_n = messages // 5
    first = list(corpus(messages - second_n, users, seed))
    second = list(corpus(second_n, users, seed + 1, prefix="t"))
    generate_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="refind-perf-"))
    try:
        embedder = None
        if meaning:
            from refind.embed.local import LocalEmbedder

            embedder = StandIn(LocalEmbedder())
        mem = refind.Memory(
            f"{store}-{users}u" if store is not None else tmp / "index",
            embedder=embedder,
            embed_in_background=False,
        )
        fresh, added1 = _import_rate(mem, first, "ingest fresh")
        existing, added2 = _import_rate(mem, second, "ingest existing")
        again, added3 = _import_rate(mem, first, "re-import")
        assert added1 + added2 == messages == mem.count() and added3 == 0, (added1, added2, added3)
        costs: dict[str, float] = {}
        if meaning:
            bar = tqdm(
                total=messages, unit="vec", desc="vectors (stand-in)", file=sys.stderr, mininterval=1.0
            )
            t = time.perf_counter()
            written = mem.embed_pending(progress=lambda done, total: bar.update(done - bar.n))
            costs["vectors_write_per_s"] = round(written / (time.perf_counter() - t), 1)
            bar.close()
            sample = [m.content for log in first[:400] for m in log.messages][:1024]
            costs.update(_meaning_costs(sample))
        # the rebuild's yardstick needs one user's texts (strings: nothing for the garbage collector to
        # scan); the corpus itself goes, so the timings below are refind's and not the collector's scans
        # of the benchmark's own millions of objects (they made search p95 ten times p50)
        history = [m.content for log in first + second if log.user_id == "user-00000" for m in log.messages]
        del first, second
        gc.collect()

        rng = random.Random(seed + 2)
        texts = message_texts(rng)
        add_ms = []
        for i in tqdm(range(adds), desc="add20", file=sys.stderr, mininterval=1.0):
            user = f"user-{rng.randrange(users):05d}"
            batch = [
                {
                    "role": "user" if j % 2 == 0 else "assistant",
                    "content": next(texts),
                    "timestamp": START_MS + YEAR_MS + i * 60_000 + j,
                }
                for j in range(20)
            ]
            t = time.perf_counter()
            mem.add(user, f"live-{i}", batch)
            add_ms.append((time.perf_counter() - t) * 1000)
        if meaning:
            mem.embed_pending()  # the adds' vectors, so every search below can find everything by meaning

        vocab = NAMES + PLACES + FOODS + ACTIVITIES + THINGS + WORK
        query_ms = []
        hits_total = 0
        for _ in tqdm(range(queries), desc="query", file=sys.stderr, mininterval=1.0):
            user = f"user-{rng.randrange(users):05d}"
            words = " ".join(rng.sample(vocab, rng.randint(2, 4)))
            start = START_MS + rng.randrange(YEAR_MS - 30 * 86_400_000)
            t = time.perf_counter()
            hits = mem.query(
                user, f"what about {words}?", k=50, date_from=start, date_to=start + 30 * 86_400_000
            )
            query_ms.append((time.perf_counter() - t) * 1000)
            hits_total += len(hits)

        now = START_MS + YEAR_MS
        for i in range(warmup):
            mem.search(fill(QUESTIONS[i % len(QUESTIONS)], rng), f"user-{rng.randrange(users):05d}", now=now)

        def timed_searches(desc: str) -> tuple[list[float], float]:
            """``searches`` timed searches, and the collector's milliseconds within them."""
            collector = _Collector()
            out: list[float] = []
            with collector.timing():
                for i in tqdm(range(searches), desc=desc, file=sys.stderr, mininterval=1.0):
                    user = f"user-{rng.randrange(users):05d}"
                    q = fill(QUESTIONS[i % len(QUESTIONS)], rng)
                    t = time.perf_counter()
                    mem.search(q, user, now=now)
                    out.append((time.perf_counter() - t) * 1000)
            return out, collector.ms

        search_ms, search_gc_ms = timed_searches("search")
        steady_ms: list[float] = []
        steady_gc_ms = 0.0
        if steady > 0:
            for i in tqdm(range(steady), desc="steady warm-up", file=sys.stderr, mininterval=1.0):
                mem.search(
                    fill(QUESTIONS[i % len(QUESTIONS)], rng), f"user-{rng.randrange(users):05d}", now=now
                )
            if freeze:  # as refind serve does once started: what lives on leaves the collector's scans
                gc.collect()
                gc.freeze()
            steady_ms, steady_gc_ms = timed_searches("search (steady)")
            if freeze:
                gc.unfreeze()
        settings = mem.settings.model_dump()
        mem.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    from refind.query.timeparse import parse_time_range

    parse_ms = []
    for i in range(2000):
        q = fill(QUESTIONS[i % len(QUESTIONS)], rng)
        t = time.perf_counter()
        parse_time_range(q, now)
        parse_ms.append((time.perf_counter() - t) * 1000)

    rebuild_ms = []
    for i in range(rebuilds):
        q = fill(QUESTIONS[i % len(QUESTIONS)], rng)
        t = time.perf_counter()
        refind_rebuild(history, q)
        rebuild_ms.append((time.perf_counter() - t) * 1000)
    report = {
        "messages": messages,
        "users": users,
        "messages_per_user": messages // users,
        "generate_s": round(generate_s, 2),
        "ingest_fresh_msgs_per_s": fresh,
        "ingest_existing_msgs_per_s": existing,
        "reimport_msgs_per_s": again,
        **_dist("add20", add_ms),
        **_dist("query", query_ms),
        "query_mean_hits": round(hits_total / max(queries, 1), 1),
        **_dist("search", search_ms),
        "search_gc_ms": round(search_gc_ms, 1),
        **_dist("parse_time_range", parse_ms),
        "refind_rebuild_messages": len(history),
        **_dist("refind_rebuild", rebuild_ms),
        "search_speedup_vs_rebuild": round(statistics.median(rebuild_ms) / statistics.median(search_ms), 1),
        **(
            {
                **_dist("search_steady", steady_ms),
                "search_steady_gc_ms": round(steady_gc_ms, 1),
                "search_steady_over_30ms": sum(1 for ms in steady_ms if ms > 30),
                "search_steady_speedup_vs_rebuild": round(
                    statistics.median(rebuild_ms) / statistics.median(steady_ms), 1
                ),
            }
            if steady_ms
            else {}
        ),
        "rss_mb": round(_rss_peak_mb(), 1),
        "meaning": meaning,
        **costs,
        "store": store or "lucene (a temporary directory)",
        "settings": {
            "seed": seed,
            "adds": adds,
            "queries": queries,
            "searches": searches,
            "warmup": warmup,
            "steady": steady,
            "freeze": freeze,
            "rebuilds": rebuilds,
            **settings,
        },
        "refind_version": refind.__version__,
    }
    return report


def measure_stream(messages: int, users: int, seed: int = 7, store: str | None = None) -> dict:
    """The fresh import of the configuration's first 80% as a stream: ``import_sessions`` of the corpus
    generator itself, so nothing but the import holds messages (as ``refind import FILE`` reads a file)
    and the process's peak RSS is the import's own; the generation is inside the timing."""
    first_n = messages - messages // 5
    tmp = Path(tempfile.mkdtemp(prefix="refind-perf-"))
    try:
        mem = refind.Memory(f"{store}-{users}u-stream" if store is not None else tmp / "index", embedder=None)
        t0 = time.perf_counter()
        added = mem.import_sessions(corpus(first_n, users, seed)).added
        seconds = time.perf_counter() - t0
        mem.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert added == first_n, (added, first_n)
    return {
        "messages": first_n,
        "users": users,
        "stream_msgs_per_s": round(first_n / seconds, 1),
        "stream_rss_mb": round(_rss_peak_mb(), 1),
    }


def measure_dataset(path: Path) -> dict:
    """Bulk import of a LongMemEval file's sessions (loaded into memory first) into an empty index, then
    the same import again."""
    t0 = time.perf_counter()
    logs = list(iter_longmemeval(path))
    load_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="refind-perf-"))
    try:
        mem = refind.Memory(tmp / "index", embedder=None)
        fresh, added = _import_rate(mem, logs, "longmemeval fresh")
        index_mb = _dir_mb(tmp / "index")
        again, added_again = _import_rate(mem, logs, "longmemeval re-import")
        mem.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "dataset": str(path),
        "users": len({log.user_id for log in logs}),
        "sessions": len(logs),
        "messages": sum(len(log.messages) for log in logs),
        "added": added,
        "added_again": added_again,
        "load_s": round(load_s, 2),
        "ingest_fresh_msgs_per_s": fresh,
        "reimport_msgs_per_s": again,
        "index_mb": index_mb,
        "rss_mb": round(_rss_peak_mb(), 1),
    }


def lucene_alone(
    logs: list[SessionLog], shape: str, path: Path, ram_buffer_mb: float = 64.0
) -> tuple[float, float]:
    """Write the messages of ``logs`` with Lucene alone (``io.refind.bench.Ceiling``) in ``shape`` (``text``
    or ``refind``) into a new index at ``path``; returns the seconds spent writing and committing."""
    import jpype

    if not jpype.isJVMStarted():  # in this process refind has not started it: start it as refind would
        start_jvm("jpype")

    columns = (
        [log.user_id for log in logs for _ in log.messages],
        [log.session_id for log in logs for _ in log.messages],
        [m.role for log in logs for m in log.messages],
        [m.content for log in logs for m in log.messages],
    )
    arrays = [jpype.JArray(jpype.JString)(column) for column in columns]
    write_ns, commit_ns = bench_class("io.refind.bench.Ceiling").run(
        str(path), *arrays, shape, float(ram_buffer_mb)
    )
    return int(write_ns) / 1e9, int(commit_ns) / 1e9


def measure_lucene_alone(path: Path, shape: str) -> dict:
    """The messages of a LongMemEval file written by Lucene alone (:func:`lucene_alone`) into a new index:
    the rate refind's import of the same messages is measured against."""
    logs = list(iter_longmemeval(path))
    tmp = Path(tempfile.mkdtemp(prefix="refind-perf-"))
    try:
        write_s, commit_s = lucene_alone(logs, shape, tmp / "index")
        index_mb = _dir_mb(tmp / "index")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = sum(len(log.messages) for log in logs)
    return {
        "shape": shape,
        "messages": n,
        "write_s": round(write_s, 2),
        "commit_s": round(commit_s, 2),
        "msgs_per_s": round(n / (write_s + commit_s), 1),
        "index_mb": index_mb,
    }


def _dir_mb(path: Path) -> float:
    """The size of the files in ``path`` (an index directory), in MB."""
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1)


def _child(args: list[str]) -> dict:
    """One configuration in a fresh interpreter (its own JVM, cold caches, its own peak RSS)."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "perf", "--one", *args],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def run(
    messages: int,
    users: list[int],
    out: Path,
    seed: int = 7,
    adds: int = 200,
    queries: int = 500,
    searches: int = 200,
    warmup: int = 30,
    rebuilds: int = 5,
    longmemeval: Path | None = None,
    store: str | None = None,
    steady: int = 1500,
    freeze: bool = False,
    meaning: str = "off",
) -> dict:
    configs = []
    with_meaning = []
    where = [f"--store={store}"] if store is not None else []
    for u in users:
        args = [
            f"--messages={messages}",
            f"--users={u}",
            f"--seed={seed}",
            f"--adds={adds}",
            f"--queries={queries}",
            f"--searches={searches}",
            f"--warmup={warmup}",
            f"--rebuilds={rebuilds}",
            f"--steady={steady}",
            *(["--freeze"] if freeze else []),
            *where,
        ]
        if meaning in ("on", "both"):
            with_meaning.append(_child([*args, "--meaning=on"]))
            if meaning == "on":
                continue
        config = _child(args)
        stream = _child([f"--messages={messages}", f"--users={u}", f"--seed={seed}", "--stream", *where])
        config.update({k: v for k, v in stream.items() if k.startswith("stream_")})
        configs.append(config)
    report: dict = {"configs": configs}
    if with_meaning:
        report["with_meaning"] = with_meaning
    if configs and len(with_meaning) == len(configs):  # --meaning both: search by meaning over words only
        report["meaning_over_words"] = [
            {
                "messages_per_user": w["messages_per_user"],
                **{
                    key: round(m[f"{key}_ms"] / w[f"{key}_ms"], 2)
                    for key in ("search_p50", "search_steady_p50", "search_steady_p95", "add20_p50")
                    if f"{key}_ms" in w and f"{key}_ms" in m
                },
            }
            for w, m in zip(configs, with_meaning, strict=True)
        ]
    if longmemeval is not None:
        report["longmemeval"] = _child([f"--longmemeval={longmemeval}"])
        alone = {
            shape: _child([f"--longmemeval={longmemeval}", f"--lucene-alone={shape}"])
            for shape in LUCENE_SHAPES
        }
        report["longmemeval"]["lucene_alone"] = alone
        report["longmemeval"]["import_over_lucene"] = round(
            report["longmemeval"]["ingest_fresh_msgs_per_s"] / alone["refind"]["msgs_per_s"], 2
        )
    if len(configs) > 1:
        small, large = configs[0], configs[-1]
        report["ratios"] = {
            "per_user": f"{large['messages_per_user']} / {small['messages_per_user']}",
            "search_p50": round(large["search_p50_ms"] / small["search_p50_ms"], 2),
            **(
                {"search_steady_p50": round(large["search_steady_p50_ms"] / small["search_steady_p50_ms"], 2)}
                if "search_steady_p50_ms" in small and "search_steady_p50_ms" in large
                else {}
            ),
            "add20_p50": round(large["add20_p50_ms"] / small["add20_p50_ms"], 2),
            "query_p50": round(large["query_p50_ms"] / small["query_p50_ms"], 2),
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / "perf.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


LUCENE_SHAPES = ("text", "refind")


def _users(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("user counts must be positive")
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks perf", description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--users", type=_users, default=[100], help="user counts, comma-separated: one run each")
    ap.add_argument("--out", type=Path, help="where perf.json goes (required but with --one)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--adds", type=int, default=200, help="timed adds of 20 messages")
    ap.add_argument("--queries", type=int, default=500, help="timed queries")
    ap.add_argument("--searches", type=int, default=200, help="timed Memory.search calls (heuristic agent)")
    ap.add_argument("--warmup", type=int, default=30, help="untimed searches before the timed ones")
    ap.add_argument(
        "--steady",
        type=int,
        default=1500,
        help="untimed searches after the timed ones, then --searches timed again: the steady state (0: none)",
    )
    ap.add_argument(
        "--freeze",
        action="store_true",
        help="gc.freeze() before the steady searches, as refind serve does once started",
    )
    ap.add_argument("--rebuilds", type=int, default=5, help="timed ReFind-style BM25 rebuilds")
    ap.add_argument("--longmemeval", type=Path, help="also measure importing this LongMemEval file")
    ap.add_argument(
        "--store", help="a store URL with a fresh prefix (opensearch://host:9200/perf) instead of Lucene"
    )
    ap.add_argument(
        "--meaning",
        choices=("off", "on", "both"),
        default="off",
        help="search by meaning too (the stand-in's vectors, the model's time per question); both: "
        "each configuration with and without, and their ratios",
    )
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--lucene-alone", choices=LUCENE_SHAPES, help=argparse.SUPPRESS)
    ap.add_argument("--stream", action="store_true", help=argparse.SUPPRESS)
    argv = list(sys.argv[2:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.messages < 1:
        ap.error("--messages must be positive")
    if args.steady < 0:
        ap.error("--steady must not be negative")
    if args.one:
        if args.longmemeval is not None and args.lucene_alone is not None:
            report = measure_lucene_alone(args.longmemeval, args.lucene_alone)
        elif args.longmemeval is not None:
            report = measure_dataset(args.longmemeval)
        elif args.stream:
            report = measure_stream(args.messages, args.users[0], args.seed, store=args.store)
        else:
            report = measure(
                args.messages,
                args.users[0],
                args.seed,
                args.adds,
                args.queries,
                args.searches,
                args.warmup,
                args.rebuilds,
                store=args.store,
                steady=args.steady,
                freeze=args.freeze,
                meaning=args.meaning == "on",
            )
        print(json.dumps(report))
        return 0
    if args.out is None:
        ap.error("--out is required")
    report = run(
        args.messages,
        args.users,
        args.out,
        args.seed,
        args.adds,
        args.queries,
        args.searches,
        args.warmup,
        args.rebuilds,
        args.longmemeval,
        store=args.store,
        steady=args.steady,
        freeze=args.freeze,
        meaning=args.meaning,
    )
    report = {"command": "python -m benchmarks perf " + " ".join(argv), **report}
    (args.out / "perf.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "configs"}, indent=2))
    for c in report["configs"]:
        print(json.dumps({k: v for k, v in c.items() if k != "settings"}))
    return 0
