"""Store throughput and latency on a synthetic corpus of realistic chat text.

    python -m benchmarks perf --messages 1000000 --users 1000 --out out/perf

Writes ``OUT/perf.json`` with ``messages``, ``users``, ``ingest_msgs_per_s``, ``add20_p50_ms``,
``add20_p95_ms`` (a ``Memory.add`` of 20 messages, durable and searchable on return), ``query_p50_ms``,
``query_p95_ms`` (a keyword query with a user and a 30-day time filter, k=50), ``search_p50_ms`` /
``search_p95_ms`` (a whole ``Memory.search`` with the offline agent: several rounds, windows, fusion) and
``rss_mb`` (peak resident set of the process, JVM included), plus the settings used. The corpus is generated deterministically
(``--seed``) from templates with names, places, foods, numbers and dates, Zipf-like word use, sessions of
6-30 turns spread over a year per user. Ingest time includes generating the messages.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import refind
from refind.models import Message, SessionLog

NAMES = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Victor",
    "Walter",
    "Yara",
    "Zoe",
    "Priya",
    "Kenji",
    "Lucia",
    "Omar",
    "Fatima",
    "Diego",
    "Mei",
    "Sven",
    "Aisha",
]
PLACES = [
    "Lisbon",
    "Berlin",
    "Kyoto",
    "Austin",
    "Nairobi",
    "Oslo",
    "Lima",
    "Denver",
    "Porto",
    "Seoul",
    "Boston",
    "Prague",
    "Cairo",
    "Quito",
    "Hanoi",
    "Dublin",
    "Seattle",
    "Madrid",
    "Tunis",
    "Bergen",
]
FOODS = [
    "ramen",
    "tacos",
    "paella",
    "sushi",
    "curry",
    "pho",
    "lasagna",
    "falafel",
    "dumplings",
    "risotto",
    "pancakes",
    "burritos",
    "kimchi",
    "goulash",
    "bagels",
]
ACTIVITIES = [
    "hiking",
    "kayaking",
    "pottery",
    "climbing",
    "running",
    "painting",
    "chess",
    "yoga",
    "baking",
    "swimming",
    "cycling",
    "gardening",
    "salsa",
    "dancing",
    "photography",
]
THINGS = [
    "guitar",
    "laptop",
    "bike",
    "camera",
    "passport",
    "tent",
    "kettle",
    "notebook",
    "telescope",
    "backpack",
    "sofa",
    "printer",
    "drone",
    "violin",
    "blender",
]
WORK = [
    "deadline",
    "report",
    "launch",
    "migration",
    "interview",
    "review",
    "budget",
    "roadmap",
    "sprint",
    "release",
    "outage",
    "invoice",
    "contract",
    "audit",
]
FEELINGS = [
    "excited",
    "tired",
    "nervous",
    "happy",
    "stressed",
    "relieved",
    "curious",
    "proud",
    "anxious",
    "grateful",
]
TEMPLATES = [
    "I went {activity} with {name} in {place} last weekend and it was great.",
    "Can you remind me what {name} said about the {work} next week?",
    "We had {food} at that small place near the station in {place}, {name} loved it.",
    "My {thing} broke again, I think I need to buy a new one before the trip to {place}.",
    "Honestly I'm feeling {feeling} about the {work}, it is due on the {n}th.",
    "{name} recommended a {thing} that costs about {n}0 dollars, should I get it?",
    "I started {activity} classes on Tuesdays, the teacher is {name}.",
    "Remember that {name} is allergic to {food}, so let's not cook it for the party.",
    "The {work} moved to {place} office, and {name} will lead it from now on.",
    "I've been {activity} every morning for {n} weeks and I feel {feeling}.",
    "Let's plan a trip to {place} in the spring, maybe with {name} and {name2}.",
    "That sounds lovely. What did you think of the {food} there?",
    "Sure, I noted it: the {work} with {name} is on the {n}th at {h}pm.",
    "Good idea. You could also bring the {thing} for {activity}.",
    "I changed my mind about the {thing}; I'll keep the old one for now.",
]


def _message_texts(rng: random.Random) -> Iterator[str]:
    while True:
        t = TEMPLATES[
            min(int(rng.paretovariate(1.2)) - 1, len(TEMPLATES) - 1)
            if rng.random() < 0.5
            else rng.randrange(len(TEMPLATES))
        ]
        yield _fill(t, rng)


def _fill(template: str, rng: random.Random) -> str:
    """``template`` with random names, places, foods, ... (unused slots are ignored by str.format)."""
    return template.format(
        name=rng.choice(NAMES),
        name2=rng.choice(NAMES),
        place=rng.choice(PLACES),
        food=rng.choice(FOODS),
        activity=rng.choice(ACTIVITIES),
        thing=rng.choice(THINGS),
        work=rng.choice(WORK),
        feeling=rng.choice(FEELINGS),
        n=rng.randint(2, 28),
        h=rng.randint(1, 9),
    )


YEAR_MS = 365 * 86_400_000
START_MS = 1_672_531_200_000  # 2023-01-01


def corpus(n_messages: int, n_users: int, seed: int) -> Iterator[SessionLog]:
    """Sessions round-robin over users until ``n_messages`` messages were produced."""
    rng = random.Random(seed)
    texts = _message_texts(rng)
    produced = 0
    session_no = 0
    while produced < n_messages:
        user = f"user-{session_no % n_users:05d}"
        size = min(rng.randint(6, 30), n_messages - produced)
        day = START_MS + rng.randrange(YEAR_MS)
        messages = [
            Message.model_construct(
                role="user" if i % 2 == 0 else "assistant",
                content=next(texts),
                timestamp=day + i * 45_000,
                speaker=None,
                id=None,
                turn=i,
                time_text=None,
            )
            for i in range(size)
        ]
        yield SessionLog.model_construct(
            user_id=user, session_id=f"s{session_no}", messages=messages, date=day, date_text=None
        )
        produced += size
        session_no += 1


def _rss_peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run(
    messages: int,
    users: int,
    out: Path,
    seed: int = 7,
    adds: int = 200,
    queries: int = 500,
    index_dir: Path | None = None,
    searches: int = 200,
    store: str | None = None,
) -> dict:
    """``store``: a store URL (``opensearch://host:port/prefix``, a fresh prefix: it must hold nothing)
    instead of a temporary index directory."""
    from tqdm import tqdm

    tmp = Path(tempfile.mkdtemp(prefix="refind-perf-")) if index_dir is None else index_dir
    try:
        mem = refind.Memory(store if store is not None else tmp / "index")
        bar = tqdm(total=messages, unit="msg", desc="ingest", file=sys.stderr, mininterval=1.0)
        t0 = time.perf_counter()
        result = mem.import_sessions(corpus(messages, users, seed), progress=bar.update)
        ingest_s = time.perf_counter() - t0
        bar.close()
        assert mem.count() == messages == result.added, (mem.count(), messages, result)

        rng = random.Random(seed + 1)
        texts = _message_texts(rng)
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
        questions = [
            "When did I go {activity} with {name} in {place}?",
            "What did {name} say about the {work} last month?",
            "Where did we have {food} with {name}?",
            "Did I buy a new {thing} before the trip to {place}?",
            "How was I feeling about the {work} in March?",
        ]
        search_ms = []
        now = START_MS + YEAR_MS
        for i in tqdm(range(searches), desc="search", file=sys.stderr, mininterval=1.0):
            user = f"user-{rng.randrange(users):05d}"
            q = _fill(questions[i % len(questions)], rng)
            t = time.perf_counter()
            mem.search(q, user, now=now)
            search_ms.append((time.perf_counter() - t) * 1000)
        mem.close()
        report = {
            "messages": messages,
            "users": users,
            "ingest_msgs_per_s": round(messages / ingest_s, 1),
            "ingest_s": round(ingest_s, 2),
            "add20_p50_ms": round(statistics.median(add_ms), 2),
            "add20_p95_ms": round(_pct(add_ms, 95), 2),
            "query_p50_ms": round(statistics.median(query_ms), 3),
            "query_p95_ms": round(_pct(query_ms, 95), 3),
            "query_mean_hits": round(hits_total / max(queries, 1), 1),
            "search_p50_ms": round(statistics.median(search_ms), 2) if search_ms else None,
            "search_p95_ms": round(_pct(search_ms, 95), 2) if search_ms else None,
            "rss_mb": round(_rss_peak_mb(), 1),
            "settings": {
                "seed": seed,
                "adds": adds,
                "queries": queries,
                "searches": searches,
                **mem.settings.model_dump(),
            },
            "refind_version": refind.__version__,
            "store": mem.location if store is not None else "lucene (a temporary directory)",
        }
    finally:
        if index_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "perf.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks perf", description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--adds", type=int, default=200, help="timed adds of 20 messages")
    ap.add_argument("--queries", type=int, default=500, help="timed queries")
    ap.add_argument("--searches", type=int, default=200, help="timed Memory.search calls (heuristic agent)")
    ap.add_argument(
        "--store",
        default=None,
        help="a store URL with a fresh prefix (opensearch://host:9200/perf) instead of Lucene",
    )
    args = ap.parse_args(argv)
    if args.messages < 1 or args.users < 1:
        ap.error("--messages and --users must be positive")
    report = run(
        args.messages,
        args.users,
        args.out,
        args.seed,
        args.adds,
        args.queries,
        searches=args.searches,
        store=args.store,
    )
    print(json.dumps({k: v for k, v in report.items() if k != "settings"}, indent=2))
    return 0
