"""The synthetic corpus every store benchmark writes and asks: realistic chat text, generated, deterministic.

:func:`corpus` yields sessions of 6-30 turns spread over a year per user, round-robin over users, each message a
template filled with names, places, foods, numbers and dates (:func:`fill`), templates drawn with Zipf-like
skew (:func:`message_texts`); :data:`QUESTIONS` are the templates of the questions asked of it. The same seed
gives the same corpus. ``python -m benchmarks perf``, ``bridge``, ``load``, ``shell``, ``import`` and
``scripts/bench_vectors.py`` read it from here.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from refind.models import Message, SessionLog

__all__ = [
    "ACTIVITIES",
    "FEELINGS",
    "FOODS",
    "NAMES",
    "PLACES",
    "QUESTIONS",
    "START_MS",
    "TEMPLATES",
    "THINGS",
    "WORK",
    "YEAR_MS",
    "corpus",
    "fill",
    "message_texts",
]

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


def message_texts(rng: random.Random) -> Iterator[str]:
    while True:
        t = TEMPLATES[
            min(int(rng.paretovariate(1.2)) - 1, len(TEMPLATES) - 1)
            if rng.random() < 0.5
            else rng.randrange(len(TEMPLATES))
        ]
        yield fill(t, rng)


def fill(template: str, rng: random.Random) -> str:
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


def corpus(n_messages: int, n_users: int, seed: int, prefix: str = "s") -> Iterator[SessionLog]:
    """Sessions round-robin over users until ``n_messages`` messages were produced (session ids
    ``{prefix}{n}``)."""
    rng = random.Random(seed)
    texts = message_texts(rng)
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
            user_id=user, session_id=f"{prefix}{session_no}", messages=messages, date=day, date_text=None
        )
        produced += size
        session_no += 1


QUESTIONS = [
    "When did I go {activity} with {name} in {place}?",
    "What did {name} say about the {work} last month?",
    "Where did we have {food} with {name}?",
    "Did I buy a new {thing} before the trip to {place}?",
    "How was I feeling about the {work} in March?",
]
