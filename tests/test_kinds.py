"""Rounds as named kinds (refind.agent.kinds) and a question read once (refind.query), on a real LoCoMo
conversation in the reference engine and in Lucene.

A new kind of round is one file and one registration line: the toy kind here (the question's capitalised
names on their own, a round docs/design.md shows as the worked example) is registered on a copy of the
registry, runs in the plan where it was put, shows in the trace as the same value the plan made, and changes
nothing for agents that were not given it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import refind
from refind.agent.kinds import KINDS, Kind, Kinds, PlanContext
from refind.errors import InvalidInput
from refind.loaders import iter_locomo
from refind.models import Round
from refind.query import ReadingRules, read_question
from tests.engines import engine_memory

USER = "conv-26"
NOW = "2023-11-01T12:00:00Z"


class Names(Kind):
    """The toy kind of docs/design.md: the question's capitalised words on their own."""

    name = "names"

    def propose(self, plan: PlanContext) -> Sequence[Round]:
        names = [w for w in plan.reading.keywords if w[:1].isupper()]
        return [plan.words_round(self.name, " ".join(names), "names")] if names else []


@pytest.fixture(scope="module", params=["reference", "lucene-disk"])
def mem(
    request: pytest.FixtureRequest, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[refind.Memory]:
    m = engine_memory(request.param, tmp_path_factory.mktemp("kinds"))
    m.import_sessions(s for s in iter_locomo(shared_data / "locomo10_dev.json") if s.user_id == USER)
    yield m
    m.close()


def test_a_toy_kind_is_one_registration_line(mem: refind.Memory) -> None:
    kinds = KINDS.copy()
    kinds.register(Names(), before="rarer")  # the one line
    question = "What did Caroline tell Melanie about the adoption agencies?"
    toy = refind.HeuristicAgent(kinds=kinds, max_rounds=6)
    plan = toy.plan(mem.open_session(question, USER, now=NOW))
    assert [r.kind for r in plan][:4] == ["broad", "phrasing", "names", "rarer"]
    names = plan[2]
    assert names == Round(kind="names", keywords="Caroline Melanie", label="names")
    result = mem.search(question, USER, now=NOW, agent=toy)
    ran = [t for t in result.trace if t.kind == "names"]
    assert len(ran) == 1 and ran[0].as_round() == names and ran[0].action == "search" and ran[0].hits > 0
    # every other agent is untouched: the global registry does not know the toy
    assert "names" not in KINDS and "names" not in [r.kind for r in refind.HeuristicAgent().plan(
        mem.open_session(question, USER, now=NOW)
    )]  # fmt: skip


def test_the_registry_refuses_what_it_cannot_place() -> None:
    kinds = Kinds()
    with pytest.raises(InvalidInput, match="expected a named"):
        kinds.register(Kind())
    with pytest.raises(InvalidInput, match="no kind named 'nowhere'"):
        kinds.register(Names(), before="nowhere")
    with pytest.raises(InvalidInput, match="round kind 'names' is not registered; known: "):
        kinds.get("names")
    kinds.register(Names())
    kinds.register(Names())  # the same name again replaces it in place
    assert kinds.names() == ["names"]


def test_every_round_of_a_search_is_a_kind_and_the_trace_records_its_value(mem: refind.Memory) -> None:
    question = (
        "Can you walk me through a summary of how Melanie's painting went, from when I first mentioned it?"
    )
    agent = refind.HeuristicAgent(feedback=True)
    session = mem.open_session(question, USER, now=NOW, rules=agent.reading_rules)
    plan = agent.plan(session)
    kinds = [r.kind for r in plan]
    assert set(kinds) <= set(KINDS.names())
    # the rounds that run after the budget are in the plan too
    assert kinds[-3:] == ["beginning", "openings", "feedback"]
    agent.run(session)
    rounds = [t for t in session.trace if t.is_round]
    assert rounds and all(t.kind in KINDS for t in rounds)
    by_kind = {r.kind: r for r in plan}
    for t in rounds:
        value = t.as_round()
        assert value is not None
        if t.kind in {"broad", "phrasing", "rarer", "relaxed"}:
            assert value == by_kind[t.kind]  # what the plan made, as it ran
    assert {"beginning", "openings"} <= {t.kind for t in rounds}


def test_a_question_is_read_once_per_rules(mem: refind.Memory) -> None:
    question = "In order, list every place Melanie went camping last summer"
    session = mem.open_session(question, USER, now=NOW)
    reading = session.reading
    assert session.reading_for(ReadingRules()) is reading
    assert reading.shape_name == "breadth" and reading.time_range is not None
    assert "camping" in reading.keywords and "list" not in reading.keywords  # the answer's form dropped
    off = session.reading_for(ReadingRules(shapes=False, time_filters=False))
    assert off.shape_name == "lookup" and off.time_range is None and off.time_cue == reading.time_cue
    assert session.reading_for(ReadingRules(shapes=False, time_filters=False)) is off  # read once


@pytest.mark.parametrize(
    ("question", "shape", "whose", "flags"),
    [
        ("What did I tell you about my sister's wedding?", "lookup", "user", set()),
        ("Which restaurant did you recommend last week?", "lookup", "assistant", {"request"}),  # "recommend"
        ("What did we talk about last week?", "period", None, set()),
        ("Give me an overview of how my garden project progressed", "breadth", None, {"summary", "request"}),
        ("Where do I live now?", "lookup", None, {"current"}),
        ("Could you suggest a recipe for tonight?", "lookup", None, {"request"}),
        ("When I first described my setup, what OS did I use?", "lookup", "user", {"beginning"}),
    ],
)
def test_reading_a_question(question: str, shape: str, whose: str | None, flags: set[str]) -> None:
    r = read_question(question, now=1_700_000_000_000)
    assert (r.shape_name, r.whose) == (shape, whose)
    got = {
        name
        for name, on in (
            ("summary", r.asks_summary),
            ("current", r.asks_current),
            ("request", r.is_request),
            ("beginning", r.asks_beginning),
        )
        if on
    }
    assert got == flags


def test_only_the_reading_reads_the_question() -> None:
    """Below the facade, no module parses a question's text: the planners, the session and the LLM agent
    take what read_question read (the text itself is only searched as a round's words, analysed by the
    engine once, and shown to a model)."""
    root = Path(__file__).resolve().parents[1] / "refind"
    readers = re.compile(
        r"\b(?:parse_time_range|strip_time_expressions|extract_keywords|quoted_phrases|question_shape|"
        r"breadth_cue|whose_words|asks_beginning|asks_summary|asks_current_state|is_request|names_asker|read_cues|"
        r"question_words|content_stems)\("
    )
    allowed = {"refind/query/reading.py", "refind/query/shape.py", "refind/query/keywords.py",
               "refind/query/timeparse.py", "refind/search/standing.py"}  # fmt: skip
    offenders = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel in allowed:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if readers.search(line) and not line.lstrip().startswith(("#", "def ")):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
