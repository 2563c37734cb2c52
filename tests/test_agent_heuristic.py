"""The offline HeuristicAgent and its keyword extraction, on a real LoCoMo conversation (in the reference
engine and in Lucene: the agent's plans and results are the same over any engine)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import refind
from refind.loaders import iter_locomo
from refind.models import to_epoch_ms
from refind.query.keywords import extract_keywords, quoted_phrases
from tests.engines import engine_memory

USER = "conv-26"
NOW = "2023-11-01T12:00:00Z"


@pytest.fixture(scope="module", params=["reference", "lucene-disk"])
def mem(
    request: pytest.FixtureRequest, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[refind.Memory]:
    m = engine_memory(request.param, tmp_path_factory.mktemp("agent"))
    m.import_sessions(s for s in iter_locomo(shared_data / "locomo10_dev.json") if s.user_id == USER)
    yield m
    m.close()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did Caroline say about the LGBTQ support group?", ["Caroline", "LGBTQ", "support", "group"]),
        ("How many months have passed since I adopted Miso?", ["adopted", "Miso"]),
        ('Did I ever mention "Blue Bottle" coffee in 2022?', ["Blue", "Bottle", "coffee", "2022"]),
        ("Can you recommend a hotel in Lisbon?", ["hotel", "Lisbon"]),
        ("我上个月在杭州买了什么？", ["我上个月在杭州买了什么"]),
        ("the and of to", []),
    ],
)
def test_keywords_keep_content_names_numbers(question: str, expected: list[str]) -> None:
    assert extract_keywords(question) == expected


def test_quoted_phrases() -> None:
    assert quoted_phrases('the "red kayak" and “Blue Bottle”') == ["red kayak", "Blue Bottle"]


def test_plan_adds_a_time_round_for_a_time_cue(mem: refind.Memory) -> None:
    agent = refind.HeuristicAgent()
    session = mem.open_session("What did Melanie paint last week?", USER, now=NOW)
    rounds = agent.plan(session)
    labels = [r.label for r in rounds]
    assert labels[0] == "broad" and any(label.startswith("time: last week") for label in labels)
    time_round = next(r for r in rounds if r.date_from is not None)
    assert (time_round.date_from, time_round.date_to) == (
        to_epoch_ms("2023-10-23T00:00:00Z"),
        to_epoch_ms("2023-10-29T23:59:59.999Z"),
    )
    assert "last week" not in (time_round.keywords or "")
    no_cue = agent.plan(mem.open_session("What did Melanie paint?", USER, now=NOW))
    assert all(r.date_from is None for r in no_cue)
    no_time = refind.HeuristicAgent(time_filters=False).plan(session)
    assert all(r.date_from is None for r in no_time)


def test_time_round_only_returns_evidence_in_range(mem: refind.Memory) -> None:
    result = mem.search("What did Caroline and Melanie talk about in August 2023?", USER, now=NOW)
    time_rounds = [t for t in result.trace if t.action in ("search", "browse") and t.date_from is not None]
    assert time_rounds and time_rounds[0].date_from == to_epoch_ms("2023-08-01")
    in_range = [b for b in result.evidence if 2 in b.rounds or (time_rounds[0].round in b.rounds)]
    assert in_range
    assert all(
        to_epoch_ms("2023-08-01") <= b.session_date <= to_epoch_ms("2023-08-31T23:59:59Z")
        for b in result.evidence
        if b.rounds == [time_rounds[0].round]
    )


def test_options_are_extra_search_material(mem: refind.Memory) -> None:
    result = mem.search(
        "Which hobby does Melanie enjoy?", USER, options=["A. pottery classes", "B. skydiving"], now=NOW
    )
    searches = [t for t in result.trace if t.action == "search"]
    assert "pottery" in searches[0].keywords and "skydiving" in searches[0].keywords
    assert any(t.note == "option" for t in searches)


def test_rounds_are_bounded_and_deterministic(mem: refind.Memory) -> None:
    question = "What books has Melanie read and recommended to Caroline?"
    one = mem.search(question, USER, now=NOW, agent=refind.HeuristicAgent(max_rounds=1))
    assert sum(1 for t in one.trace if t.action in ("search", "browse")) == 1
    a = mem.search(question, USER, now=NOW)
    b = mem.search(question, USER, now=NOW)
    assert [e.id for e in a.evidence] == [e.id for e in b.evidence]
    assert [(t.action, t.keywords, t.hits) for t in a.trace] == [
        (t.action, t.keywords, t.hits) for t in b.trace
    ]
    assert sum(1 for t in a.trace if t.action in ("search", "browse")) <= mem.settings.max_rounds
    assert a.trace[-1].action in ("finish", "complete")


def test_stops_when_a_round_adds_nothing(mem: refind.Memory) -> None:
    result = mem.search("zyzzyva quetzalcoatl", USER, now=NOW)
    searches = [t for t in result.trace if t.action == "search"]
    assert len(searches) == 1 and searches[0].hits == 0
    assert any(t.action == "finish" and t.note == "a round added nothing" for t in result.trace)
    assert result.evidence == []


def test_browse_when_only_a_time_cue(mem: refind.Memory) -> None:
    result = mem.search("What happened on 20 July 2023?", USER, now=NOW)
    browse = [t for t in result.trace if t.action in ("browse", "search") and t.date_from is not None]
    assert browse and result.evidence
    assert all(b.session_date_text and "July, 2023" in b.session_date_text for b in result.evidence)


def test_later_rounds_find_more_than_one_round(mem: refind.Memory) -> None:
    question = "What did Caroline research about adoption agencies and what did Melanie think?"
    one = mem.search(question, USER, now=NOW, agent=refind.HeuristicAgent(max_rounds=1))
    many = mem.search(question, USER, now=NOW)
    turns_one = {t.id for b in one.evidence for t in b.turns}
    turns_many = {t.id for b in many.evidence for t in b.turns}
    assert turns_one < turns_many


def test_feedback_round_follows_a_rare_name_from_the_best_hits(tmp_path: Path) -> None:
    """Off by default; when on, one more round searches the question's keywords plus the rare terms of the
    best hits, with the read-set, reaching a session that only names what the first hit named."""
    from refind.agent.heuristic import HeuristicAgent
    from tests.engines import engine_memory

    with engine_memory("reference", tmp_path) as m:
        m.add("u", "a", [{"role": "user", "content": "My pottery teacher is called Ximena Oduya."}])
        m.add("u", "b", [{"role": "user", "content": "Ximena Oduya invited me to her gallery opening."}])
        for i in range(5):
            m.add("u", f"n{i}", [{"role": "user", "content": f"Unrelated chat number {i} about lunch."}])
        question = "Who is my pottery teacher?"
        plain = m.search(question, "u", agent=HeuristicAgent())
        assert all(r.note != "feedback" for r in plain.trace)
        fed = m.search(question, "u", agent=HeuristicAgent(feedback=True))
        rounds = [r for r in fed.trace if r.note == "feedback"]
        assert len(rounds) == 1 and rounds[0].keywords and "ximena" in rounds[0].keywords.lower()
        assert "b" in fed.sessions()


def test_default_agent_is_what_search_runs_from_the_settings(tmp_path: Path) -> None:
    """``Memory.default_agent()`` carries the memory's round settings, and ``search`` without an agent runs
    exactly it (same trace, same evidence)."""
    with engine_memory("reference", tmp_path, max_rounds=2, feedback=True, time_filters=False) as m:
        m.add("u", "a", [{"role": "user", "content": "My pottery teacher is called Ximena Oduya."}])
        m.add("u", "b", [{"role": "user", "content": "Ximena Oduya invited me to her gallery opening."}])
        agent = m.default_agent()
        assert (agent.max_rounds, agent.knobs.feedback, agent.reading_rules.time_filters) == (2, True, False)
        question = "Who is my pottery teacher last week?"
        implicit = m.search(question, "u", now=NOW)
        explicit = m.search(question, "u", now=NOW, agent=agent)
        assert [(r.action, r.keywords, r.date_from) for r in implicit.trace] == [
            (r.action, r.keywords, r.date_from) for r in explicit.trace
        ]
        assert implicit.evidence == explicit.evidence and "feedback" in [r.note for r in implicit.trace]
