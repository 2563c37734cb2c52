"""What stands (refind.standing): the rule on hand-written messages (instructions, preferences, a person's
lasting facts and their changes), and search offering standing instructions beside the evidence in a small
reserved share of the budget, marked, on a real index."""

from __future__ import annotations

from pathlib import Path

import pytest

import refind
from refind.lexicon import FACT_DOMAINS
from refind.standing import Standing, is_standing, read_standing, standing_sentence
from tests.conftest import add_ana_and_bo


@pytest.mark.parametrize(
    "text",
    [
        "Always format all code snippets with syntax highlighting when I ask about implementation details.",
        "From now on, include version numbers when you mention a library.",
        "Please never use emojis in your answers.",
        "Don't suggest paid services, I'm on a budget.",
        "I prefer simple, minimal dependencies to keep the app lightweight and easy to maintain.",
        "Thanks! Going forward, keep answers under 200 words.",
        "I'd rather you explain the trade-offs before giving code.",
        "Whenever you show a schedule, use the 24-hour clock.",
        "I've set a preference for CPU-only deployment due to hardware constraints.",
        "ok so make sure to cite the docs",
    ],
)
def test_standing_instructions_and_preferences(text: str) -> None:
    assert is_standing("user", text), text
    assert standing_sentence(text)


@pytest.mark.parametrize(
    "text",
    [
        "How do I set up Redis persistence using RDB snapshots?",
        "The first sprint ends on March 29.",
        "Can you show me how to implement a login feature?",
        "",
    ],
)
def test_ordinary_messages_are_not(text: str) -> None:
    assert not is_standing("user", text)


def test_only_the_persons_own_messages_count() -> None:
    text = "Always format code snippets with syntax highlighting."
    assert is_standing("user", text)
    assert not is_standing("assistant", text)


def test_a_long_story_sentence_is_not_an_instruction() -> None:
    story = "I always " + " ".join(["walked"] * 70) + " to school."
    assert not is_standing("user", story)


def test_search_offers_the_standing_instructions_marked_and_within_a_tenth_of_the_budget() -> None:
    with refind.Memory.in_memory() as mem:
        mem.add(
            "me",
            "s-rules",
            [
                {
                    "role": "user",
                    "content": "Always include version numbers when you recommend a library.",
                    "timestamp": "2024-03-01T10:00:00Z",
                },
                {
                    "role": "assistant",
                    "content": "Understood, I will include versions.",
                    "timestamp": "2024-03-01T10:01:00Z",
                },
            ],
        )
        filler = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"Step {i} of the logging setup: rotate files, ship to the collector, tag {i}. "
                * 6,
                "timestamp": f"2024-04-0{1 + i % 9}T10:00:00Z",
            }
            for i in range(40)
        ]
        mem.add("me", "s-logging", filler)
        result = mem.search("Please suggest a tool that ships logs to the collector.", "me", now="2024-05-01")
        standing = [e for e in result.evidence if e.standing]
        assert [t.content for e in standing for t in e.turns] == [
            "Always include version numbers when you recommend a library."
        ]
        assert result.sessions() == ["s-logging"]  # standing blocks do not enter the session ranking
        ranked = result.by_relevance()  # nor rank before the evidence (a harness ranks sessions from this)
        assert ranked[0].session_id == "s-logging" and ranked[-1].standing
        text = result.to_text(max_tokens=1000)
        assert text.startswith("[standing instruction | session s-rules |")
        packed = result.packed(1000)
        assert any(e.standing for e in packed.evidence)
        assert any(not e.standing for e in packed.evidence)
        off = refind.Memory.in_memory(standing=0)
        with off:
            off.import_sessions([])
        assert not refind.Settings(standing=0).standing


def test_a_question_about_what_happened_gets_only_an_on_topic_instruction() -> None:
    from refind.query.shape import is_request

    assert is_request("Could you show me how to implement a login feature?")
    assert is_request("Which HTML elements should I use for the header?")
    assert is_request("I'm planning to add analytics; what would you suggest?")
    assert not is_request("When did Caroline go to the support group?")
    assert not is_request("What did the vet give Pixel?")
    # advice asked the way people ask it, not only "could you..."
    for asked in (
        "Anything we should pack for a rainy camping trip?",
        "What's a good way to keep basil alive indoors?",
        "Our flight lands at 6am. Plan me a first day in Lisbon.",
        "Any tips for a first half marathon?",
        "Is it okay to freeze cooked rice?",
        "Where should we stay in Kyoto?",
        "What do I need to renew my driving licence?",
        "Is a three-day trip to Lisbon doable with a toddler?",
        "Is the Louvre worth it on a crowded Saturday?",
        "Is a vegetable garden feasible on a north-facing balcony?",
    ):
        assert is_request(asked), asked
    for asked in (
        "What is Melanie's favorite book?",
        "What was the best part of the concert for Gina?",
        "Who is the top scorer on my team?",
        "What did I say about the best way to cook rice?",
        "Which city did I move to?",
    ):
        assert not is_request(asked), asked
    # a known over-read of the cue words: a question about what was said that uses one reads as a request
    assert is_request("What did I say was doable for the move?")


def test_an_instruction_given_after_a_search_is_offered_by_the_next(tmp_path) -> None:
    """A store that says which version of the index it searches finds a person's standing instructions once
    per version; a new message is a new version, so the next search offers the new instruction, and a
    reader in another process sees it after the writer's commit."""
    from refind.search.standing import standing_candidates

    mem = refind.Memory(tmp_path / "index")
    ask = "Please suggest a tool that ships logs to the collector."
    for s in range(8):  # enough sessions on the question's topic that a new unrelated one ranks below them
        mem.add(
            "me",
            f"s-logs-{s}",
            [
                {
                    "role": "user",
                    "content": f"Logs ship to the collector {s} {i}.",
                    "timestamp": f"2024-04-0{1 + s}T10:0{i}:00Z",
                }
                for i in range(3)
            ],
        )
    first = mem.search(ask, "me", now="2024-05-01")
    assert not [e for e in first.evidence if e.standing]
    before = mem.store.generation()
    assert standing_candidates(mem.store, "me") == []
    rule = "Always answer in British English."
    mem.add("me", "s-rules", [{"role": "user", "content": rule, "timestamp": "2024-04-20T10:00:00Z"}])
    assert mem.store.generation() != before
    reader = refind.Memory(tmp_path / "index", read_only=True)
    for m in (mem, reader):
        again = m.search(ask, "me", now="2024-05-01")
        assert [t.content for e in again.evidence if e.standing for t in e.turns] == [rule]
        assert [h.content for h in standing_candidates(m.store, "me")] == [rule]
    assert standing_candidates(mem.store, "me") is standing_candidates(mem.store, "me")  # kept per version
    mem.delete_session("me", "s-rules")
    assert standing_candidates(mem.store, "me") == []
    assert not [e for e in mem.search(ask, "me", now="2024-05-01").evidence if e.standing]
    reader.close()
    mem.close()


# ------------------------------------------------------------------------------------------ standing facts
# (text, domain, subject): sentences written for these tests, in every domain and shape the rule reads

FACTS = [
    # short declaratives
    ("I keep kosher.", "diet", "kosher"),
    ("I'm type 2 diabetic.", "health", "diabetic"),
    ("I'm allergic to penicillin.", "diet", "allergic"),
    ("I'm vegan.", "diet", "vegan"),
    ("We're Catholic, so Fridays in Lent are meatless for us.", "religion", "catholic"),
    ("I'm a pacifist.", "values", "pacifist"),
    ("I'm a night-shift nurse.", "work", "nurse"),
    ("I'm deaf in one ear.", "health", "deaf"),
    ("I have epilepsy.", "health", "epilepsy"),
    ("I'm pregnant with twins!", "health", "pregnant"),
    ("I don't drink.", "diet", "don't drink"),
    ("I'm on metformin.", "medication", "metformin"),
    ("I'm on sertraline now.", "medication", "sertraline"),
    ("I take levothyroxine every morning.", "medication", "morning"),
    # the household
    ("My son is 4.", "family", "son"),
    ("Our 6-year-old has a peanut allergy.", "diet", "peanut"),
    ("My wife uses a wheelchair.", "health", "wheelchair"),
    ("We have two kids under five.", "family", "kids"),
    ("My daughter is autistic and hates crowds.", "health", "autistic"),
    ("My husband works night shifts at the hospital.", "family", "husband"),  # the first domain wins
    ("I'm a single mom with three kids.", "family", "single mom"),
    # pets
    ("My dog is reactive around other dogs.", "pets", "dog"),
    ("We keep backyard chickens.", "pets", "backyard chickens"),
    # home
    ("We live in a third-floor walk-up.", "home", "we live"),
    ("I live in Anchorage.", "home", "i live"),
    ("I rent, and my landlord bans pets.", "home", "landlord"),
    ("We're in Denver, by the way.", "home", "denver"),
    # work and its rules
    ("My employer bans personal devices on the factory floor.", "work", "employer"),
    ("At my firm, we're not allowed to use cloud storage for client files.", "work", "firm"),
    ("I work from home three days a week.", "work", "work from home"),
    ("I'm self-employed, so I pay my own health insurance.", "work", "self-employed"),
    # money
    ("I'm on a tight budget until my student loans are paid.", "money", "tight budget"),
    ("We're still paying off $30k of credit card debt.", "money", "debt"),
    ("I'm retired and live on a fixed income.", "money", "retired"),
    # legal
    ("I'm on a student visa, so I can't work off campus.", "legal", "visa"),
    ("I have a felony conviction from 2015.", "legal", "felony"),
    # commitment, routine
    ("I play in a rec league every Thursday.", "commitment", "rec league"),
    ("I'm training for a half marathon in the spring.", "commitment", "training for"),
    ("I volunteer at the food bank every Saturday.", "commitment", "volunteer"),
    # recovery, lessons, values
    ("I've been sober since 2019.", "health", "sober"),
    ("I learned the hard way to say no, and I'm much less stressed now.", "values", "learned the hard way"),
    ("After learning to set boundaries at work I'm much calmer.", "values", "after learning"),
    ("I refuse to buy fast fashion.", "values", "i refuse"),
    ("I won't fly anymore for climate reasons.", "values", "fly"),
    # buried in a longer request
    ("Plan my meals for the week; keep in mind I'm on warfarin.", "medication", "warfarin"),
    ("Can you suggest a weekend trip? Also, I use a wheelchair.", "health", "wheelchair"),
    ("Write a cover letter for me - I'm a nurse with 10 years in the ER.", "work", "nurse"),
    ("Help me pick a desk chair. I have a herniated disc.", "health", "herniated"),
    ("Give me a week of dinners, I'm lactose intolerant.", "diet", "lactose"),
    ("Suggest some day trips; my daughter is in a wheelchair.", "health", "wheelchair"),
]


@pytest.mark.parametrize(("text", "domain", "subject"), FACTS)
def test_standing_facts(text: str, domain: str, subject: str) -> None:
    s = read_standing("user", text)
    assert s is not None, text
    assert (s.kind, s.domain, s.subject) == ("fact", domain, subject), (text, s)
    assert s.sentence in text and s.sentence == s.sentence.strip()
    assert s.domain in FACT_DOMAINS


NOT_STANDING = [
    # passing: today, a mood, an errand, what one is doing now
    "I'm so tired today.",
    "I have a question about my visa.",
    "I have a meeting in ten minutes, so quick one.",
    "My coffee went cold while I was reading, ha.",
    "I'm at the airport right now, the wifi is awful.",
    "I'm watching the game tonight with my kids.",
    "My dog knocked over my coffee this morning.",
    "I'm starving, it's been a while since lunch.",
    "I took my dog to the beach last weekend.",
    "We're having pizza tonight.",
    # questions
    "Is it safe to take ibuprofen with warfarin?",
    "What's a good diet for someone with diabetes?",
    "Do you think my landlord can raise the rent?",
    "How do I apply for a green card",
    "Can you recommend a vegan restaurant in Denver?",
    # hypotheticals and stories
    "If I were allergic to nuts, what could I eat?",
    "Imagine my character is a diabetic detective.",
    "Suppose we moved to Canada; how would taxes work?",
    # plans, wishes and requests in the first person
    "I'm thinking of getting a dog.",
    "I'd love to adopt a cat someday.",
    "I want to start a vegan diet.",
    "I'm planning to visit my sister in Boston.",
    "I need ideas for my son's birthday party.",
    # requests that name the person and a domain but state nothing
    "Give me ten names for a baby boy born in spring.",
    "Write a wedding toast for my sister and her wife.",
    "List some gift ideas for my dad's retirement party.",
    "Tell me the visa rules for a work trip to Japan.",
    "I need you to act as my tax advisor for this year.",
    "I have a couple of questions about my mortgage.",
    "I'll be working from home on Friday.",
    # chit-chat with no lasting fact in it
    "I always lose my keys, haha.",
    "I can never remember whether it's affect or effect.",
    "My package was delayed again.",
    "I just finished mowing the lawn.",
    "Thanks, that was helpful!",
    # a breed word or "new" that is not the person's pet or thing
    "I have a mix of furniture, decorative arts, and jewelry.",
    "I have a lab report due Friday.",
    "The new job market report is out.",
    "New phone, who dis",
    "I adopted a new habit of journaling every night.",
    "The report is due on the 12th.",
    "",
]


@pytest.mark.parametrize("text", NOT_STANDING)
def test_passing_questions_plans_and_chatter_do_not_stand(text: str) -> None:
    assert read_standing("user", text) is None, (text, read_standing("user", text))


def test_only_the_persons_own_facts_stand() -> None:
    text = "I'm allergic to shellfish."
    assert read_standing("user", text) is not None
    assert read_standing("assistant", text) is None
    assert read_standing("system", text) is None


@pytest.mark.parametrize(
    ("text", "domain"),
    [
        ("I'm no longer vegan.", "diet"),
        ("Update: we moved to Tucson and we're renting again.", "home"),
        ("I quit my job at the bank.", "work"),
        ("Turns out I'm not allergic to penicillin after all.", "diet"),
        ("Good news: the surgeon cleared me today and the crutches are gone.", "health"),
        ("We paid off the last of our student loans today. Officially debt-free!", "money"),
        ("Switched jobs! I'm now a nurse at the children's hospital.", "work"),
        ("Our baby girl was born on Tuesday, and we're exhausted but happy.", "family"),
        # a change that says when it happened still stands ("yesterday" is the day of the change)
        ("Guess what, we adopted a two-year-old beagle on Sunday!", "pets"),
        ("I rescued a husky mix last week and he's settling in.", "pets"),
        # news written without "my": "New passport arrived today" is the person's new passport
        ("New visa arrived yesterday, valid for five years.", "legal"),
        ("New job starts Monday, I'm a paralegal now.", "work"),
    ],
)
def test_a_change_of_a_standing_fact_is_read_as_one(text: str, domain: str) -> None:
    s = read_standing("user", text)
    assert s is not None and s.kind == "fact" and s.change and s.domain == domain, (text, s)


def test_a_fact_without_change_words_is_no_change() -> None:
    s = read_standing("user", "I'm allergic to penicillin.")
    assert s is not None and not s.change


def test_instructions_and_preferences_come_before_facts_and_keep_their_kind() -> None:
    assert read_standing("user", "I'm vegan. Always suggest plant-based recipes.") == Standing(
        "instruction", "Always suggest plant-based recipes.", None, None, False
    )
    pref = read_standing("user", "I prefer short answers.")
    assert pref is not None and pref.kind == "preference" and pref.domain is None
    assert is_standing("user", "I prefer short answers.")
    assert not is_standing("user", "I'm vegan.")  # is_standing: instructions and preferences only


def test_the_standing_sentence_is_verbatim() -> None:
    text = "Could you plan a two-week dinner rotation?   Keep in mind I've been on warfarin since 2020.  "
    s = read_standing("user", text)
    assert s is not None and s.sentence == "Keep in mind I've been on warfarin since 2020."
    assert (
        read_standing("user", "Python 3.6 is what we have: our codebase is pinned to Python 3.6.") is not None
    )


# ---------------------------------------------------------------------------------------------- facts in a search


def _fact_memory(tmp_path: Path, **settings: int) -> refind.Memory:
    return add_ana_and_bo(refind.Memory(tmp_path / "facts", embedder=None, **settings))


def test_a_request_gets_the_persons_lasting_facts_in_view(tmp_path: Path) -> None:
    with _fact_memory(tmp_path) as m:
        r = m.search("Can you put together snacks for an all-day hike?", "ana", now="2024-06-01")
        facts = [t for b in r.evidence if b.standing_kind == "fact" for t in b.turns]
        said = [t.content for t in sorted(facts, key=lambda t: -t.score)]  # offered best first
        assert said[0] == "I'm type 1 diabetic, diagnosed when I was twelve."  # health has consequences
        assert "We live in a third-floor walk-up apartment." in said
        assert not any("tired" in s or "peanuts" in s for s in said)  # passing; another person's
        text = r.to_text(2000)
        assert text.startswith("[standing fact | session s1 | 2 January 2024")
        assert "[session s3" in text  # the evidence keeps its room


def test_a_question_about_what_happened_gets_only_facts_on_its_topic(tmp_path: Path) -> None:
    with _fact_memory(tmp_path) as m:
        r = m.search("What did we see on the ridge trail?", "ana", now="2024-06-01")
        assert not [b for b in r.evidence if b.standing_kind == "fact"]
        r = m.search("Which apartment floor do we live on?", "ana", now="2024-06-01")
        facts = [t.content for b in r.evidence if b.standing_kind == "fact" for t in b.turns]
        assert facts == [] or facts == ["We live in a third-floor walk-up apartment."]


def test_a_question_about_someone_else_that_asks_for_nothing_gets_no_facts(tmp_path: Path) -> None:
    """The asker's facts bear on a question about the asker or on a request, not on a question about another
    person ("When did Caroline…?": a conversation between two people, one of them the 'user')."""
    with _fact_memory(tmp_path) as m:
        m.add("ana", "s4", [
            {"role": "assistant", "content": "Caroline said she joined a diabetes support group.", "timestamp": "2024-04-02T10:00:00Z"},
        ])  # fmt: skip
        r = m.search("When did Caroline join the diabetes support group?", "ana", now="2024-06-01")
        assert r.evidence and not [b for b in r.evidence if b.standing_kind == "fact"]
        r = m.search("What did I say about being diabetic?", "ana", now="2024-06-01")
        said = [t.content for b in r.evidence for t in b.turns]
        assert "I'm type 1 diabetic, diagnosed when I was twelve." in said


def test_a_later_fact_on_the_same_subject_is_the_one_shown(tmp_path: Path) -> None:
    with _fact_memory(tmp_path) as m:
        m.add("ana", "s4", [
            {"role": "user", "content": "I'm no longer diabetic after the transplant, believe it or not.", "timestamp": "2024-05-02T10:00:00Z"},
        ])  # fmt: skip
        profile = {f.sentence: f for f in m.profile("ana")}
        older = next(f for s, f in profile.items() if s.startswith("I'm type 1 diabetic"))
        assert not older.current and older.superseded_by == "s4:0"
        r = m.search("Can you put together snacks for an all-day hike?", "ana", now="2024-06-01")
        said = [t.content for b in r.evidence if b.standing_kind == "fact" for t in b.turns]
        assert not any(s.startswith("I'm type 1 diabetic") for s in said)
        assert any(s.startswith("I'm no longer diabetic") for s in said)


def test_standing_facts_can_be_turned_off(tmp_path: Path) -> None:
    with _fact_memory(tmp_path, standing_facts=0) as m:
        r = m.search("Can you put together snacks for an all-day hike?", "ana", now="2024-06-01")
        assert not [b for b in r.evidence if b.standing_kind == "fact"]


def test_a_fact_told_after_a_search_is_in_the_next_one(tmp_path: Path) -> None:
    """The person's facts are read once per version of the index (refind.search.standing.current_facts):
    a write makes a new version, so a fact told after a search is in the next search's block."""
    with _fact_memory(tmp_path) as m:
        ask = "Can you put together snacks for an all-day hike?"
        before = [
            t.content
            for b in m.search(ask, "ana", now="2024-06-01").evidence
            if b.standing_kind == "fact"
            for t in b.turns
        ]
        m.add("ana", "s5", [
            {"role": "user", "content": "I'm severely allergic to tree nuts, I carry an EpiPen.", "timestamp": "2024-05-20T10:00:00Z"},
        ])  # fmt: skip
        after = [
            t.content
            for b in m.search(ask, "ana", now="2024-06-01").evidence
            if b.standing_kind == "fact"
            for t in b.turns
        ]
        assert not any("tree nuts" in s for s in before)
        assert any("tree nuts" in s for s in after), after
