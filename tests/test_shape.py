"""Question shapes (refind.agent.shape): a pure function, checked on questions of each kind, and the
heuristic agent's use of them on a real index (period questions browse the period; a zero-hit round never
ends a search while a time cue is unused; breadth spends the evidence on more places)."""

from __future__ import annotations

import pytest

import refind
from refind.agent.shape import question_shape


@pytest.mark.parametrize(
    "question",
    [
        "Can you list the order in which I brought up different aspects of my budget tracker?",
        "In what order did I visit Paris, Rome and Berlin?",
        "Which came first, the job offer or the move?",
        "Can you provide a comprehensive summary of how my project has progressed?",
        "Summarize what we decided about the cache.",
        "How has my training plan changed over the months?",
        "How many times did I mention my sister?",
        "How often do I go running?",
        "List all the books I said I was reading.",
        "What are all the places I have camped so far?",
        "Every time I asked about Flask, what did you recommend?",
        "What features did I add across the sessions?",
    ],
)
def test_breadth_questions(question: str) -> None:
    reading = question_shape(question, ["topic"])
    assert reading.shape == "breadth", (question, reading)
    assert reading.reason.startswith("cue ")


@pytest.mark.parametrize(
    "question",
    [
        "Where did I adopt my cat?",
        "What did the vet give Pixel?",
        "When does my first sprint end?",
        "What is the average response time of the dashboard API?",
        "Could you show me how to implement a login feature?",
    ],
)
def test_lookup_questions(question: str) -> None:
    assert question_shape(question, ["topic"]).shape == "lookup"


def test_period_needs_a_time_cue_and_no_topic_words() -> None:
    assert question_shape("What did we talk about last week?", ["talk"], has_time_cue=True).shape == "period"
    assert question_shape("What happened in May 2023?", ["happened"], has_time_cue=True).shape == "period"
    assert question_shape("last week?", [], has_time_cue=True).shape == "period"
    # topic words make it a lookup in a period; without a time cue it is never a period question
    assert question_shape("the plant last week", ["plant"], has_time_cue=True).shape == "lookup"
    assert question_shape("What did we talk about?", ["talk"]).shape == "lookup"


HISTORY = [
    # (session, date, messages): three conversations a week apart, and one a month before
    (
        "s-garden",
        "2024-06-10T18:00:00Z",
        ["I repotted the fiddle leaf fig today", "Nice, it likes bright light"],
    ),
    ("s-trip", "2024-06-12T09:00:00Z", ["Booked the train to Lyon for July", "Great, window seat?"]),
    ("s-code", "2024-06-03T10:00:00Z", ["The cache keeps evicting hot keys", "Try an LFU policy"]),
    ("s-old", "2024-05-01T10:00:00Z", ["My sourdough starter died", "Feed it twice a day next time"]),
]
NOW = "2024-06-17T12:00:00Z"  # a Monday: "last week" is 10-16 June


def _memory() -> refind.Memory:
    mem = refind.Memory.in_memory()
    for sid, when, texts in HISTORY:
        msgs = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": t, "timestamp": when}
            for i, t in enumerate(texts)
        ]
        mem.add("me", sid, msgs)
    return mem


def test_a_period_question_gets_the_periods_sessions() -> None:
    with _memory() as mem:
        result = mem.search("What did we talk about last week?", "me", now=NOW)
        assert result.shape == "period"
        assert {e.session_id for e in result.evidence} == {"s-garden", "s-trip"}
        assert any(t.action == "shape" and t.note and t.note.startswith("period") for t in result.trace)


def test_a_zero_hit_round_does_not_end_the_search_while_a_time_cue_is_unused() -> None:
    with _memory() as mem:
        # "plant" is in no message: the word rounds find nothing, the period's sessions still come back
        result = mem.search("the plant last week", "me", now=NOW)
        assert result.evidence, result.trace
        assert {e.session_id for e in result.evidence} <= {"s-garden", "s-trip"}
        assert any(t.date_from is not None for t in result.trace if t.action in {"search", "browse"})


def test_shapes_can_be_turned_off() -> None:
    with _memory() as mem:
        agent = refind.HeuristicAgent(shapes=False)
        result = mem.search("What did we talk about last week?", "me", now=NOW, agent=agent)
        assert result.shape == "lookup"
        assert not any(t.action == "shape" for t in result.trace)
