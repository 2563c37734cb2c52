"""Standing instructions and preferences (refind.standing): the rule on hand-written messages, and search
offering them beside the evidence in a small reserved share of the budget, marked, on a real index."""

from __future__ import annotations

import pytest

import refind
from refind.standing import is_standing, standing_sentence


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
