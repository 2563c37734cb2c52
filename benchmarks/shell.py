"""The shell's speed: ``refind search`` as a whole process, in-process (``--no-daemon``) beside the daemon.

    python -m benchmarks shell --messages 10000 --runs 15 --out out/shell

Builds (once, in ``OUT/index``) an index of ``--messages`` synthetic messages of user ``me`` (the generator of
``benchmarks perf``: sessions of 6-30 turns over a year, ``--seed``), then runs ``refind search QUESTION``
as a fresh process each time, wall time from start to exit, output discarded:

- ``cold``: the first command with no daemon running: it starts the daemon and waits for it (``--cold``
  times, the daemon stopped before each);
- ``A`` (``--no-daemon``) and ``B`` (the daemon warm) alternately, A B A B ..., ``--runs`` pairs, after one
  untimed pair; the ratio A/B is taken pair by pair and its median reported beside each side's p50.

The questions cycle through the perf benchmark's templates, so the daemon never answers the same question
twice in a row. ``OUT/shell.json`` holds every run. The daemon gets its own runtime directory under OUT and
is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import refind
from benchmarks.corpus import QUESTIONS, corpus, fill


def build(index: Path, messages: int, seed: int) -> int:
    """An index of ``messages`` messages of user ``me`` at ``index`` (kept when it already holds them)."""
    with refind.Memory(index) as mem:
        if mem.count("me") < messages:
            logs = [log.model_copy(update={"user_id": "me"}) for log in corpus(messages, 1, seed)]
            mem.import_sessions(logs)
        return mem.count("me")


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0, done.returncode


def _stop(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "refind.cli", "daemon", "stop", "--all"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks shell", description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15, help="timed A/B pairs")
    ap.add_argument("--cold", type=int, default=3, help="timed first commands (daemon stopped before each)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    index = args.out / "index"
    n = build(index, args.messages, args.seed)
    runtime = Path(tempfile.mkdtemp(prefix="rfsh"))  # short: a socket's path is at most 108 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    env.update({"REFIND_DATA": str(index), "XDG_RUNTIME_DIR": str(runtime), "REFIND_DAEMON_IDLE": "600"})
    rng = random.Random(args.seed)
    base = [sys.executable, "-m", "refind.cli", "search", "--now", "2024-01-01"]

    def question() -> str:
        return fill(rng.choice(QUESTIONS), rng)

    codes: set[int] = set()
    try:
        cold = []
        for _ in range(args.cold):
            _stop(env)
            seconds, code = _run([*base, question()], env)
            cold.append(seconds)
            codes.add(code)
        a, b = [], []
        for i in range(args.runs + 1):
            sa, ca = _run([*base, "--no-daemon", question()], env)
            sb, cb = _run([*base, question()], env)
            codes |= {ca, cb}
            if i:  # the first pair is the warm-up
                a.append(sa)
                b.append(sb)
    finally:
        _stop(env)
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    summary = {
        "messages": n,
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "exit_codes": sorted(codes),
        "cold_p50_s": round(statistics.median(cold), 3) if cold else None,
        "no_daemon_p50_s": round(statistics.median(a), 3),
        "daemon_p50_s": round(statistics.median(b), 3),
        "ratio_p50": round(statistics.median(ratios), 2),
        "cold_s": [round(x, 3) for x in cold],
        "no_daemon_s": [round(x, 3) for x in a],
        "daemon_s": [round(x, 3) for x in b],
    }
    (args.out / "shell.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(
        f"refind search on {n} messages, {args.runs} pairs: --no-daemon p50 {summary['no_daemon_p50_s']} s, "
        f"daemon warm p50 {summary['daemon_p50_s']} s, ratio {summary['ratio_p50']}x; "
        f"first command (cold) p50 {summary['cold_p50_s']} s; exit codes {summary['exit_codes']}"
    )
    return 0 if codes == {0} else 1
