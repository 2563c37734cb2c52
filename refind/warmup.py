"""Warm-up: run the search paths once on a small synthetic history, so that the first real searches of a
process do not pay for the JVM's just-in-time compilation.

The Java engine runs interpreted until its methods have been called often enough to be compiled: in a
fresh process the first hundred-odd searches are slower than later ones (LongMemEval-S search p50 in
the harness, `python -m benchmarks run ... --adapters bm25,refind`: 37-39 ms cold with
``REFIND_BENCH_WARMUP=0``, 29-30 ms after this warm-up; docs/benchmarks/README.md). A long-running process (``refind serve``, an agent) pays that once; this
function lets it pay before its first question instead of during it. Nothing of the caller's data is read
or written: the history lives in a throw-away in-memory index.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

__all__ = ["WarmUp", "warm_up"]

_DAY = 86_400_000
_START = 1_672_531_200_000  # 2023-01-01T00:00:00Z
_TOPICS = [
    "garden tomatoes compost watering",
    "marathon training shoes knee",
    "python script database migration",
    "trip Lisbon hotel flights",
    "guitar lessons chords practice",
    "budget rent savings groceries",
    "sourdough bread oven flour",
    "dog vet vaccine walks",
    "novel chapter editor deadline",
    "bike chain tune-up lights",
    "conference talk slides research",
    "apartment move boxes landlord",
]
_FILLER = [
    "really",
    "think",
    "maybe",
    "today",
    "later",
    "week",
    "thanks",
    "great",
    "sounds",
    "plan",
    "idea",
    "help",
    "sure",
    "first",
]
_QUESTIONS = [
    "What did I say about {a} and {b}?",
    "How many times did we talk about {a}?",
    "What did I decide about {a} last month?",
    "When did I mention {b} in March 2023?",
    "Which {a} did you recommend for my {b}?",
    "What am I currently doing about {a}?",
    'Did I ever tell you about "{a} {b}"?',
]


@dataclass(frozen=True, slots=True)
class WarmUp:
    """What :func:`warm_up` ran: searches, and seconds spent (index build included)."""

    searches: int
    seconds: float


def warm_up(seconds: float = 3.0, *, max_searches: int = 200) -> WarmUp:
    """Run searches (rounds with time filters, read-sets, windows, packing) over a synthetic history in a
    throw-away in-memory index until ``seconds`` of searching have passed or ``max_searches`` ran, whichever
    is first (starting the JVM and building the index come before and are not counted in ``seconds``).
    Returns what ran. Safe to call from a background thread; it shares nothing with other indexes."""
    if seconds < 0 or max_searches < 0:
        raise ValueError("seconds and max_searches must not be negative")
    from refind.memory import Memory
    from refind.models import Message, SessionLog

    t0 = time.perf_counter()
    rng = random.Random(2608)
    logs = []
    for s in range(36):
        topic = _TOPICS[s % len(_TOPICS)].split()
        date = _START + s * 9 * _DAY
        messages = []
        for t in range(12):
            words = rng.sample(topic, 2) + rng.sample(_FILLER, 6)
            rng.shuffle(words)
            body = " ".join(words)
            if t % 2:  # an assistant answer: longer than the question, as they are
                body = f"{body}. " + " ".join(rng.choice(_FILLER + topic) for _ in range(60))
            role = "user" if t % 2 == 0 else "assistant"
            messages.append(
                Message.model_validate({"role": role, "content": body, "timestamp": date + t * 60_000})
            )
        logs.append(SessionLog(user_id="warm-up", session_id=f"s{s}", messages=messages, date=date))
    searches = 0
    with Memory.in_memory() as memory:
        memory.import_sessions(logs)
        now = _START + 400 * _DAY
        deadline = time.perf_counter() + seconds
        while searches < max_searches and time.perf_counter() < deadline:
            topic = _TOPICS[searches % len(_TOPICS)].split()
            a, b = rng.sample(topic, 2)
            question = _QUESTIONS[searches % len(_QUESTIONS)].format(a=a, b=b)
            result = memory.search(question, "warm-up", now=now, max_tokens=1000 if searches % 2 else None)
            result.to_text(max_tokens=500)
            searches += 1
    return WarmUp(searches=searches, seconds=round(time.perf_counter() - t0, 3))
