"""Question shapes (refind.query.shape): a pure function, checked on questions of each kind, and the
heuristic agent's use of them on a real index (period questions browse the period; a zero-hit round never
ends a search while a time cue is unused; breadth spends the evidence on more places)."""

from __future__ import annotations

import pytest

import refind
from refind.query import read_question
from refind.query.keywords import strip_answer_form
from refind.query.shape import asks_beginning, question_shape, whose_words


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


@pytest.mark.parametrize(
    ("question", "who"),
    [
        ("Can you list the order in which I brought up different aspects of my app?", "user"),
        ("How many new columns did I want to add across my requests?", "user"),
        ("How many different stock symbols have I mentioned wanting to fetch?", "user"),
        ("What was the name of the restaurant you recommended?", "assistant"),
        ("Which book did you suggest I read first?", "assistant"),
        ("When did Caroline go to the support group?", None),
        # whether the person did something: their own messages say ("I've added…", "I've never…")
        ("Have I integrated Flask-Login for session management in my project?", "user"),
        ("Have I ever obtained an API key for this project?", "user"),
        ("Did I set up continuous integration?", "user"),
        ("Did Caroline go to the park?", None),
        ("Have you recommended a library for charts?", "assistant"),
        ("What did I say you recommended?", None),  # both sides: no preference
    ],
)
def test_whose_words(question: str, who: str | None) -> None:
    assert whose_words(question) == who


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which versions did I say I was using when I first described my setup?", True),
        ("What tools did I use to start my project?", True),
        ("What did I plan initially?", True),
        ("Which tournament did Nate win in the beginning of November 2022?", False),  # a date, not a start
        ("What did I eat for breakfast?", False),
    ],
)
def test_asks_beginning(question: str, expected: bool) -> None:
    assert asks_beginning(question) is expected


def _thread_memory() -> refind.Memory:
    """One person's two long threads: the assistant's long answers say "budget tracker" far more often than
    the person's own short messages do."""
    mem = refind.Memory.in_memory()
    for n, day in ((1, "2024-03-01"), (2, "2024-03-08")):
        msgs = []
        for i in range(60):
            if i < 6:  # the thread's opening says what it is about in other words
                text = "Hello there, good morning."
                if (n, i) == (1, 0):
                    text = "I'm starting a personal finance app with Flask 2.3 and SQLite 3.39."
            elif i % 2 == 0:
                text = f"For my budget tracker, step {n}-{i}: can you help me with part {i}?"
            else:
                text = "Sure. " + " ".join(["Your budget tracker budget tracker needs this change."] * 8)
            msgs.append(
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": text,
                    "timestamp": f"{day}T09:{i:02d}:00Z",
                }
            )
        mem.add("me", f"thread-{n}", msgs)
    return mem


def test_a_question_about_the_persons_own_words_gets_a_round_of_their_messages() -> None:
    with _thread_memory() as mem:
        result = mem.search(
            "In what order did I bring up the parts of my budget tracker?", "me", now="2024-04-01"
        )
        own = [t for t in result.trace if t.action == "search" and t.note and "user messages" in t.note]
        assert own and own[0].hits > 0
        assert any(t.role == "user" and t.matched for e in result.evidence for t in e.turns)


def test_a_question_about_how_it_began_reads_the_earliest_sessions_opening() -> None:
    with _thread_memory() as mem:
        result = mem.search(
            "Which versions did I use when I first described my budget tracker?", "me", now="2024-04-01"
        )
        assert any(t.note and t.note.startswith("beginning") for t in result.trace if t.action == "browse")
        assert "thread-1:0" in {t.id for e in result.evidence for t in e.turns}
        off = mem.search(
            "Which versions did I use when I first described my budget tracker?",
            "me",
            now="2024-04-01",
            agent=refind.HeuristicAgent(shapes=False),
        )
        assert not any(t.note and t.note.startswith("beginning") for t in off.trace)


@pytest.mark.parametrize(
    ("question", "keywords"),
    [
        (
            "Can you list the order in which I brought up different aspects of optimizing my resume analyzer "
            "throughout our conversations, in order (mention 10 items in order)?",
            ["optimizing", "resume", "analyzer"],
        ),
        (
            "Can you give me a comprehensive summary of how my stock trading bot project has progressed?",
            ["stock", "trading", "bot", "project"],
        ),
        ("Can you reconstruct the timeline of my garden? Mention ONLY and ONLY ten items.", ["garden"]),
        # the form words are kept where nothing else would remain, and in a question that is not breadth
        ("Can you list the items?", ["list", "items"]),
        ("Which items did I order from the bakery?", ["items", "order", "bakery"]),
    ],
)
def test_a_breadth_question_searches_its_topic_not_its_form(question: str, keywords: list[str]) -> None:
    assert list(read_question(question).keywords) == keywords


def test_the_answer_form_phrase_is_cut() -> None:
    assert strip_answer_form("the steps (mention 5 items in order)?").split() == ["the", "steps", "(", ")?"]
    assert strip_answer_form("Mention ONLY and ONLY ten items.").strip() == "."
    assert strip_answer_form("I mentioned 10 items") == "I mentioned 10 items"


def test_a_breadth_question_about_the_persons_own_words_searches_only_their_messages() -> None:
    with _thread_memory() as mem:
        result = mem.search(
            "In what order did I bring up the parts of my budget tracker?", "me", now="2024-04-01"
        )
        searches = [t for t in result.trace if t.action == "search"]
        assert searches and all(t.note and t.note.endswith("(user messages)") for t in searches)
        hits = [t for e in result.evidence for t in e.turns if t.matched and not e.standing]
        assert hits and {t.role for t in hits} == {"user"}
        # a lookup keeps one round of the person's messages and searches both sides otherwise
        lookup = mem.search("Which step did I ask about for my budget tracker?", "me", now="2024-04-01")
        notes = [t.note or "" for t in lookup.trace if t.action == "search"]
        assert any(n.endswith("(user messages)") for n in notes)
        assert not all(n.endswith("(user messages)") for n in notes)


def test_a_summary_reads_the_openings_of_the_best_sessions() -> None:
    """'A summary of how my garden project went': each conversation says what it is about in its opening
    messages, which share few words with the question; the agent reads them after its rounds."""
    from refind.query.shape import asks_summary

    assert asks_summary("Can you give me a detailed summary of my garden project?")
    assert asks_summary("Walk me through the evolution of my garden layout")
    assert not asks_summary("When did I plant the tomatoes?")
    openings = {
        "g1": "I'm starting a vegetable patch behind the shed this spring.",
        "g2": "New plan: raised beds instead of the patch, cedar boards.",
        "g3": "We are moving the compost heap next to the raised beds.",
    }
    with refind.Memory.in_memory() as mem:
        for n, (sid, first) in enumerate(openings.items()):
            msgs = [{"role": "user", "content": first, "timestamp": f"2024-0{n + 3}-01T09:00:00Z"}]
            msgs += [
                {
                    "role": "assistant" if i % 2 else "user",
                    "content": f"Garden project detail {i}: watering, soil and the garden project budget.",
                    "timestamp": f"2024-0{n + 3}-01T09:{i + 1:02d}:00Z",
                }
                for i in range(12)
            ]
            mem.add("me", sid, msgs)
        question = "Can you give me a summary of how my garden project went?"
        result = mem.search(question, "me", now="2024-06-01")
        assert result.shape == "breadth"
        browse = [t for t in result.trace if t.action == "browse" and (t.note or "").startswith("summary")]
        assert len(browse) == 1 and browse[0].new_evidence >= 1
        shown = {t.content for e in result.evidence for t in e.turns}
        assert set(openings.values()) <= shown
        off = mem.search(question, "me", now="2024-06-01", agent=refind.HeuristicAgent(openings=False))
        assert not any((t.note or "").startswith("summary") for t in off.trace)
        assert not set(openings.values()) <= {t.content for e in off.evidence for t in e.turns}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What chronic condition did I tell you I have?", True),
        ("Does my son have any allergies right now?", True),
        ("Where did we stay in Lisbon?", True),
        ("What’s my dentist’s name?", True),
        ("I'm looking for a gift idea", True),
        ("When did Caroline go to the LGBTQ support group?", False),
        ("What did Melanie paint last year?", False),
        ("Is the Imperial system used in Myanmar?", False),
        ("Idaho or Iowa: which is larger?", False),  # "I" inside a word is not the asker
    ],
)
def test_names_asker(question: str, expected: bool) -> None:
    """A question about the asker (their facts may bear on it) or about someone else (they bear on it only
    when it asks for something)."""
    assert read_question(question).names_asker is expected
