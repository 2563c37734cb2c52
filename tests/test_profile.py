"""A person's profile (refind.profile, Memory.profile): what they said that stands, newest first, each marked
current or superseded by a later fact on the same subject or a change in the same domain."""

from __future__ import annotations

from pathlib import Path

import pytest

import refind
from refind.profile import supersede
from refind.standing import read_standing
from refind.store.base import StandingHit
from tests.conftest import said

T0 = 1_700_000_000_000
DAY = 86_400_000


def hit(i: int, text: str, day: int, session: str = "s") -> StandingHit:
    s = read_standing("user", text)
    assert s is not None, text
    return StandingHit.of(
        refind.Hit.trusted(f"{session}:{i}", session, i, T0 + day * DAY, "user", None, text, 0.0, None), s
    )


def test_a_later_fact_on_the_same_subject_supersedes_the_earlier() -> None:
    vegan, ok = hit(0, "I'm vegan.", 0), hit(1, "I'm no longer vegan, I eat fish now.", 5)
    assert supersede([ok, vegan]) == {"s:0": "s:1"}


def test_a_change_in_the_same_domain_supersedes_the_earlier_fact() -> None:
    lives = hit(0, "We live in a walk-up in Minneapolis.", 0)
    moved = hit(1, "Update: we moved to Tucson last month.", 9)
    other = hit(2, "I'm allergic to penicillin.", 3)  # another domain: untouched
    assert (lives.domain, moved.domain, moved.change) == ("home", "home", True)
    assert supersede([moved, other, lives]) == {"s:0": "s:1"}


def test_supersession_follows_the_chain_and_leaves_the_newest_current() -> None:
    a = hit(0, "I'm vegan.", 0)
    b = hit(1, "I'm no longer vegan.", 10)
    c = hit(2, "I'm vegan again, since March.", 20)
    assert supersede([c, b, a]) == {"s:0": "s:1", "s:1": "s:2"}
    visa = hit(3, "I'm on a student visa.", 0)
    h1b = hit(4, "I'm on an H-1B visa now.", 10)  # its subject is "h-1b": no change word, another subject
    card = hit(5, "Green card approved, I'm officially a permanent resident now.", 20)
    assert (h1b.subject, card.change, card.domain) == ("h-1b", True, "legal")
    assert supersede([visa, h1b, card]) == {"s:3": "s:5", "s:4": "s:5"}


def test_an_earlier_fact_never_supersedes_a_later_one_and_instructions_never_supersede() -> None:
    rule, rule2 = hit(0, "Always answer in metric units.", 0), hit(1, "Always answer in British English.", 1)
    old = hit(2, "I'm no longer vegan.", 2)
    new = hit(3, "I'm vegan.", 1)  # earlier in time though written later: the newer one stands
    assert supersede([rule, rule2, old, new]) == {"s:3": "s:2"}


def test_memory_profile_lists_what_stands_newest_first_with_what_supersedes_it() -> None:
    with refind.Memory.in_memory() as mem:
        mem.add("me", "s1", [
            said("Plan my meals. Keep in mind I'm vegan.", "2024-03-01T10:00:00Z"),
            said("I'm vegan too, in spirit.", "2024-03-01T10:01:00Z", role="assistant"),
            said("Always give quantities in grams.", "2024-03-01T10:02:00Z"),
        ])  # fmt: skip
        mem.add("me", "s2", [
            said("Heads up, I'm no longer vegan.", "2024-05-01T10:00:00Z"),
            said("What's a good lasagna?", "2024-05-01T10:01:00Z"),
        ])  # fmt: skip
        facts = mem.profile("me")
        assert [(f.message_id, f.kind, f.current, f.superseded_by) for f in facts] == [
            ("s2:0", "fact", True, None),
            ("s1:2", "instruction", True, None),
            ("s1:0", "fact", False, "s2:0"),
        ]
        assert facts[-1].sentence == "Keep in mind I'm vegan." and facts[-1].domain == "diet"
        assert facts[0].change and facts[0].session_id == "s2"
        assert [f.message_id for f in mem.profile("me", limit=1)] == ["s2:0"]
        assert mem.profile("someone else") == []
        with pytest.raises(refind.InvalidInput):
            mem.profile("me", limit=-1)
        mem.delete_session("me", "s2")
        assert [(f.message_id, f.current) for f in mem.profile("me")] == [("s1:2", True), ("s1:0", True)]


def test_refind_profile_lists_what_stands_and_hides_superseded_facts_unless_asked(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from refind.cli import main

    with refind.Memory(tmp_path / "idx") as mem:
        mem.add(
            "me",
            "s1",
            [said("I'm vegan.", "2024-03-01T10:00:00Z"), said("Always use grams.", "2024-03-01T10:01:00Z")],
        )
        mem.add("me", "s2", [said("I'm no longer vegan.", "2024-05-01T10:00:00Z")])
    data = str(tmp_path / "idx")
    shown = CliRunner().invoke(main, ["--data", data, "profile", "me"])
    assert shown.exit_code == 0, shown.output
    assert "I'm no longer vegan." in shown.stdout and "Always use grams." in shown.stdout
    assert "I'm vegan." not in shown.stdout.replace("I'm no longer vegan.", "")
    assert "1 superseded fact not shown" in shown.stdout
    every = CliRunner().invoke(main, ["--data", data, "profile", "me", "--all"])
    assert "[superseded by s2:0]" in every.stdout
    rows = json.loads(CliRunner().invoke(main, ["--data", data, "profile", "me", "--json"]).stdout)
    assert [(r["message_id"], r["current"]) for r in rows] == [
        ("s2:0", True),
        ("s1:1", True),
        ("s1:0", False),
    ]
    assert "Nothing that stands" in CliRunner().invoke(main, ["--data", data, "profile", "nobody"]).stdout
