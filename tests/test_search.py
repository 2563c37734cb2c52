"""One search round and the search session on real data: fusion, windows, read-set, evidence order.

Every test with an index runs on the reference engine and on Lucene (tests/engines.py): what they check is
the search layer's, the same over any engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import refind
from refind.evidence import order_evidence, render
from refind.fusion import Fusion
from refind.fusion import fuse_hits as fuse
from refind.loaders import iter_locomo
from refind.models import Hit, Round
from refind.query import read_question
from refind.search import SearchSession
from tests.engines import engine_memory

USER = "conv-26"


@pytest.fixture(scope="module", params=["reference", "lucene-disk"])
def engine_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def locomo(
    engine_name: str, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[refind.Memory]:
    mem = engine_memory(engine_name, tmp_path_factory.mktemp("locomo"))
    mem.import_sessions(
        s for s in iter_locomo(shared_data / "locomo10_dev.json") if s.user_id in {USER, "conv-30"}
    )
    yield mem
    mem.close()


def hit(session: str, turn: int, score: float) -> Hit:
    return Hit(
        id=f"{session}:{turn}",
        session_id=session,
        turn=turn,
        timestamp=0,
        role="user",
        content="x",
        score=score,
    )


def test_fusion_formula_by_hand() -> None:
    # BM25 order: a1 (3.0), b1 (2.5), a2 (2.0), c1 (1.0): session sums a=5.0, b=2.5, c=1.0
    hits = [hit("a", 1, 3.0), hit("b", 1, 2.5), hit("a", 2, 2.0), hit("c", 1, 1.0)]
    fused = dict((h.id, s) for h, s in fuse(hits, Fusion()))
    assert fused["a:1"] == pytest.approx(1 / 61 + 1 / 61)
    assert fused["b:1"] == pytest.approx(1 / 62 + 1 / 62)
    assert fused["a:2"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["c:1"] == pytest.approx(1 / 64 + 1 / 63)
    # a:2 overtakes b:1 because its session is stronger
    assert [h.id for h, _ in fuse(hits, Fusion())] == ["a:1", "a:2", "b:1", "c:1"]
    # with the session weight off, BM25 order is kept
    assert [h.id for h, _ in fuse(hits, Fusion(w_session=0))] == ["a:1", "b:1", "a:2", "c:1"]


def test_keyword_search_expands_windows_and_flags_hits(locomo: refind.Memory) -> None:
    blocks = locomo.keyword_search("LGBTQ support group", USER, top_k=3, window=2)
    assert 1 <= len(blocks) <= 3
    top = blocks[0]
    assert any("support group" in t.content for t in top.turns if t.matched)
    turns = [t.turn for t in top.turns]
    assert turns == list(range(turns[0], turns[-1] + 1))  # consecutive, in order
    matched = [t.turn for t in top.turns if t.matched]
    assert turns[0] <= matched[0] - 2 or turns[0] == 0
    assert top.id == f"{top.session_id}#{turns[0]}-{turns[-1]}"
    assert [b.score for b in blocks] == sorted((b.score for b in blocks), reverse=True)
    assert top.session_date_text and "2023" in top.session_date_text


def test_overlapping_windows_merge(locomo: refind.Memory) -> None:
    wide = locomo.keyword_search("Caroline Melanie", USER, top_k=10, window=3)
    by_session: dict[str, list[tuple[int, int]]] = {}
    for b in wide:
        by_session.setdefault(b.session_id, []).append((b.first_turn, b.last_turn))
    for spans in by_session.values():
        spans.sort()
        for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False):
            assert lo > hi + 1  # neither overlapping nor adjacent


def test_window_zero_returns_only_hits(locomo: refind.Memory) -> None:
    blocks = locomo.keyword_search("adoption agencies", USER, top_k=2, window=0)
    assert all(all(t.matched for t in b.turns) for b in blocks)


def test_time_filter_and_exclusions(locomo: refind.Memory) -> None:
    everything = locomo.keyword_search("camping", USER, top_k=20, window=0)
    summer = locomo.keyword_search(
        "camping", USER, date_from="2023-06-01", date_to="2023-08-31", top_k=20, window=0
    )
    assert summer and len(summer) < len(everything)
    assert all(1_685_577_600_000 <= b.session_date <= 1_693_526_399_999 for b in summer)
    first = locomo.keyword_search("camping", USER, top_k=2, window=0)
    seen = [t.id for b in first for t in b.turns]
    again = locomo.keyword_search("camping", USER, top_k=2, window=0, exclude=seen)
    assert not {t.id for b in again for t in b.turns} & set(seen)
    other = locomo.keyword_search(
        "camping", USER, top_k=5, window=0, exclude_sessions=[b.session_id for b in first]
    )
    assert not {b.session_id for b in other} & {b.session_id for b in first}


def words(session: SearchSession, keywords: str) -> list:
    """One words round of ``keywords`` on ``session`` (as a tool's search runs one)."""
    return session.words(Round(kind="tool", keywords=keywords))


def test_read_set_skips_what_was_read(locomo: refind.Memory) -> None:
    for readset in ("message", "session"):
        session = SearchSession(locomo.store, USER, read_question("q"), top_k=3, window=1, readset=readset)
        first = words(session, "painting")
        second = words(session, "painting")
        first_ids = {t.id for b in first for t in b.turns}
        assert first and second
        matched_second = {t.id for b in second for t in b.turns if t.matched and 2 in b.rounds}
        assert not matched_second & first_ids
        if readset == "session":
            assert not {b.session_id for b in second} & {b.session_id for b in first}
    # with the read-set off, the same query finds the same hits again and adds nothing
    session = SearchSession(locomo.store, USER, read_question("q"), top_k=3, window=1, readset="off")
    words(session, "painting")
    assert words(session, "painting") == []
    assert session.trace[-1].new_evidence == 0


def test_search_returns_evidence_in_session_and_time_order(locomo: refind.Memory) -> None:
    result = locomo.search("When did Caroline go to the LGBTQ support group?", USER, now="2023-11-01")
    assert result.evidence and result.agent == "heuristic"
    assert result.evidence == order_evidence(result.evidence)
    dates = [b.session_date for b in result.evidence]
    firsts: dict[str, int] = {}
    for b in result.evidence:
        if not b.standing:  # standing instructions come first, in a section of their own
            firsts.setdefault(b.session_id, b.session_date)
    assert list(firsts.values()) == sorted(firsts.values())
    for b in result.evidence:
        assert [t.turn for t in b.turns] == sorted(t.turn for t in b.turns)
    assert len(dates) == len(result.evidence)
    assert any(t.id == "D1:3" for b in result.evidence for t in b.turns)  # the evidence turn of this QA item
    trace = [r for r in result.trace if r.action == "search"]
    assert trace and trace[0].keywords and trace[0].hits > 0 and trace[0].tokens > 0 and trace[0].ms > 0
    assert result.trace[-1].action == "finish"
    # nothing is read twice: every turn appears in one block only
    ids = [t.id for b in result.evidence for t in b.turns]
    assert len(ids) == len(set(ids))


def test_to_text_packs_hits_first_then_the_nearest_context(locomo: refind.Memory) -> None:
    from refind.tokens import count_tokens

    result = locomo.search("camping with the kids and roasting marshmallows", USER, top_k=8)
    full = result.to_text()
    assert "[session " in full and "* " in full
    tier = {sid: i // 5 for i, sid in enumerate(result.sessions())}  # five sessions a tier (PACK_TIER)
    for budget in (count_tokens(full) // 2, count_tokens(full) // 5, 120):
        packed = result.packed(budget)
        text = result.to_text(max_tokens=budget)
        assert text == packed.to_text() and count_tokens(text) <= budget
        assert packed.evidence == order_evidence(packed.evidence)  # still by session and time
        shown = {t.id: t for b in packed.evidence for t in b.turns}
        assert shown, "something fits, so something is shown"
        context_tiers = [tier[b.session_id] for b in packed.evidence for t in b.turns if not t.matched]
        if context_tiers:  # context only takes tokens no hit of its tier (or a better one) could use
            only_hits = [
                b.model_copy(update={"turns": [t for t in b.turns if t.matched]})
                for b in packed.evidence
                if any(t.matched for t in b.turns)
            ]
            left = budget - count_tokens(render(only_hits))
            for b in result.evidence:
                if tier[b.session_id] > max(context_tiers):
                    continue
                for t in b.turns:
                    if t.matched and t.id not in shown:
                        header = count_tokens(f"[session {b.session_id} | {b.session_date_text}]")
                        least = header + count_tokens(f"* {t.speaker}: ") + min(24, count_tokens(t.content))
                        assert least > left, (t.id, least, left)
        for b in packed.evidence:  # context grows out of a hit: every run holds one
            assert any(t.matched for t in b.turns)
        # the search packs the same way for the same budget
        capped = locomo.search(
            "camping with the kids and roasting marshmallows", USER, top_k=8, max_tokens=budget
        )
        assert capped.to_text() == text


def test_session_dates_render_at_the_source_granularity(
    locomo: refind.Memory, engine_name: str, tmp_path: Path
) -> None:
    result = locomo.search("adoption agencies", USER)
    text = result.to_text()
    assert "| 3:31 pm on 23 August, 2023]" in text or "| 1:14 pm on 25 May, 2023]" in text
    with engine_memory(engine_name, tmp_path) as m:
        m.add("u", "s", [{"role": "user", "content": "moving to Porto"}], session_time="March 2024")
        assert "[session s | March 2024]" in m.search("Porto", "u").to_text()
        m.add(
            "u",
            "t",
            [
                {
                    "role": "user",
                    "content": "flat viewing in Lisbon",
                    "timestamp": 1_709_395_200_000 + 3_600_000,
                }
            ],
        )
        assert "[session t | 2 March 2024, 17:00 UTC]" in m.search("Lisbon flat", "u").to_text()
        m.add("u", "v", [{"role": "user", "content": "signed the Braga lease", "timestamp": "2024-03-05"}])
        assert "[session v | 5 March 2024]" in m.search("Braga lease", "u").to_text()


def test_search_validation(locomo: refind.Memory) -> None:
    with pytest.raises(refind.InvalidInput, match="top_k"):
        locomo.search("x", USER, top_k=0)
    with pytest.raises(refind.InvalidInput, match="now"):
        locomo.search("x", USER, now="someday maybe")
    with pytest.raises(refind.InvalidInput, match="options"):
        locomo.search("x", USER, options="A. yes")  # type: ignore[arg-type]
    with pytest.raises(refind.InvalidInput, match="agent"):
        locomo.search("x", USER, agent="gpt")  # type: ignore[arg-type]
    assert locomo.search("", USER).evidence == []
    assert locomo.search("the of and", USER).evidence == []
    assert locomo.search("LGBTQ", "nobody").evidence == []  # another user's data never leaks


def test_keyword_search_is_a_round_of_search_with_the_same_settings(locomo: refind.Memory) -> None:
    for keywords in ("LGBTQ support group", "camping kids marshmallows", "adoption agencies"):
        session = locomo.open_session(keywords, USER)
        in_search = words(session, keywords)
        alone = locomo.keyword_search(keywords, USER)
        assert [b.model_dump() for b in alone] == [b.model_dump() for b in in_search], keywords


def test_a_round_expands_every_hit_it_selects(
    engine_name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """top_k may be 1000: a round then asks the engine for up to 1000 windows in one call."""
    with engine_memory(engine_name, tmp_path) as m:
        texts = [f"zebra sighting number {i}" if i % 2 == 0 else "nothing to see" for i in range(1400)]
        m.add("u", "s", [{"role": "user", "content": t} for t in texts])
        blocks = m.keyword_search("zebra", "u", top_k=1000, window=0)
        assert len(blocks) == 700 and all(len(b.turns) == 1 and b.turns[0].matched for b in blocks)


@pytest.mark.parametrize("early_first", [True, False])
def test_current_state_questions_rank_the_later_of_equally_relevant_sessions_first(
    early_first: bool, tmp_path: Path
) -> None:
    """Two sessions state the same fact differently, equally relevant to the question: asked about the
    current state ("now"), the later one ranks first whichever was added first; dates are shown."""
    from refind.query.shape import asks_current_state

    assert asks_current_state("Where do I live now?") and asks_current_state("Do I still play chess?")
    assert asks_current_state("What is my latest car?") and not asks_current_state("Where did I live?")
    sessions = [
        ("early", "2023-01-10", "I moved my yoga practice to the Lotus studio downtown."),
        ("late", "2024-06-02", "I moved my yoga practice to the Cedar studio uptown."),
    ]
    with engine_memory("reference", tmp_path) as m:
        for sid, date, text in sessions if early_first else reversed(sessions):
            m.add("u", sid, [{"role": "user", "content": text}], session_time=date)
        now = m.search("Which studio do I practice yoga at now?", "u")
        assert now.sessions()[0] == "late"
        text = now.to_text()
        assert "2 June 2024" in text and "10 January 2023" in text
    with engine_memory("reference", tmp_path / "off", latest_boost=0.0) as m:
        for sid, date, text in sessions if early_first else reversed(sessions):
            m.add("u", sid, [{"role": "user", "content": text}], session_time=date)
        off = m.search("Which studio do I practice yoga at now?", "u")
        assert set(off.sessions()) == {"early", "late"}


NOISE = [
    (
        "dog",
        "2024-03-01",
        ["What is the best way to take a photo of my dog?", "Use natural light at eye level."],
    ),
    ("movie", "2024-03-02", ["What did you think of the ending?", "It was bittersweet, and it worked."]),
    ("plans", "2024-03-03", ["What did we say about the weekend?", "You wanted to hike on Saturday."]),
    ("cache", "2024-03-04", ["Let's settle the cache: Redis with a 10 minute TTL.", "Agreed, Redis it is."]),
    ("tea", "2024-03-05", ["What is the difference between green and black tea?", "Oxidation."]),
]


def test_a_hit_needs_a_content_word(engine_name: str, tmp_path: Path) -> None:
    """A message whose only words in common with the question are function words ("what", "did", "the") is
    not a hit: not in the round over the question's phrasing, not in a tool's search, not in one round on
    its own (issue 38: "what did we decide about the cache?" showed a photo question as a hit)."""
    with engine_memory(engine_name, tmp_path) as m:
        for sid, day, texts in NOISE:
            m.add("u", sid, [{"role": r, "content": t} for r, t in zip(("user", "assistant"), texts, strict=True)],
                  session_time=day)  # fmt: skip
        question = "what did we decide about the cache?"
        result = m.search(question, "u", now="2024-04-01")
        hit_sessions = {b.session_id for b in result.evidence if any(t.matched for t in b.turns)}
        assert hit_sessions == {"cache"}, hit_sessions
        phrasing = next(t for t in result.trace if t.kind == "phrasing")
        assert phrasing.content_terms == ["decid", "cach"]  # the trace says what a hit needed
        assert next(t for t in result.trace if t.kind == "broad").content_terms is None  # keywords only
        alone = m.keyword_search(question, "u", top_k=5, window=0)
        assert {b.session_id for b in alone} == {"cache"}
        from refind.tools import ToolDispatcher

        tools = ToolDispatcher(m, "u", question=question)
        tools.call("search", {"keywords": "what did we say"})  # nothing but function words
        assert tools.session.blocks == [] and tools.session.trace[-1].content_terms == []
