"""Rendering and packing evidence for a budget (refind.evidence): pure functions, checked on hand-made blocks
and on a real index holding a megabyte-long message."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import refind
from refind.evidence import CUT, excerpt, pack, render
from refind.models import Evidence, Turn
from refind.policy import POLICY
from refind.result import SearchResult
from refind.tokens import count_tokens
from tests.engines import engine_memory


def _turn(i: int, text: str, matched: bool = False, role: str = "user") -> Turn:
    return Turn(id=f"s:{i}", turn=i, role=role, content=text, timestamp=1_700_000_000_000, matched=matched)


def _block(sid: str, turns: list[Turn], score: float, terms: list[str] | None = None) -> Evidence:
    return Evidence(
        id=f"{sid}#{turns[0].turn}-{turns[-1].turn}",
        session_id=sid,
        session_date=1_700_000_000_000,
        turns=turns,
        score=score,
        rounds=[1],
        terms=terms or [],
    )


def _noise(n_words: int, seed: int = 3) -> str:
    rng = random.Random(seed)
    return " ".join(
        rng.choice(["lorem", "ipsum", "dolor", "sit", "amet", "tempor", "magna"]) for _ in range(n_words)
    )


def test_excerpt_keeps_short_text_whole_and_cuts_long_text_around_the_terms() -> None:
    assert excerpt("short and sweet", 50, terms=["sweet"]) == "short and sweet"
    text = _noise(20_000) + " the zebra unicorn lives here " + _noise(20_000, seed=4)
    cut = excerpt(text, 60, terms=["zebra", "unicorn"])
    assert "zebra unicorn" in cut
    assert cut.startswith(CUT) and cut.endswith(CUT)
    assert count_tokens(cut) <= 60
    head = excerpt(text, 40, keep="head")
    assert text.startswith(head.removesuffix(CUT).strip()) and not head.startswith(CUT)
    tail = excerpt(text, 40, keep="tail")
    assert text.endswith(tail.removeprefix(CUT).strip()) and not tail.endswith(CUT)
    # stems find their words: "hous" in "houses", Porter's "happi" in "happy"
    assert "houses" in excerpt(_noise(5000) + " two houses " + _noise(5000), 30, terms=["hous"])
    assert "happy" in excerpt(_noise(5000) + " so happy " + _noise(5000), 30, terms=["happi"])
    assert "杭州" in excerpt("字" * 20_000 + "我在杭州" + "字" * 20_000, 30, terms=["杭州"])


def test_excerpt_prefers_the_passage_with_most_distinct_terms() -> None:
    text = (
        _noise(3000) + " zebra " + _noise(3000, seed=5) + " zebra zebra " + _noise(3000, seed=6)
        + " zebra unicorn meadow " + _noise(3000, seed=7)
    )  # fmt: skip
    cut = excerpt(text, 40, terms=["zebra", "unicorn", "meadow"])
    assert "zebra unicorn meadow" in cut


def test_one_huge_hit_is_cut_to_its_passage_never_dropped() -> None:
    huge = _noise(180_000) + " the answer is forty two zebras " + _noise(180_000, seed=9)
    assert len(huge) > 1_000_000
    block = _block("s", [_turn(0, "what about the zebras?"), _turn(1, huge, matched=True)], 1.0, ["zebra"])
    result = SearchResult(question="q", user_id="u", agent="heuristic", evidence=[block])
    for budget in (2000, 300, 60):
        text = result.to_text(max_tokens=budget)
        assert text and count_tokens(text) <= budget
        assert "zebras" in text and CUT in text
    unbudgeted = result.to_text()  # without a budget the hit is still bounded by hit_tokens
    assert count_tokens(unbudgeted) <= result.hit_tokens + 100 and "zebras" in unbudgeted
    assert pack([block], 5) == []  # not even the header fits: nothing does


def test_pack_takes_every_hit_before_any_context_and_keeps_session_order() -> None:
    blocks = [
        _block("a", [_turn(0, _noise(80)), _turn(1, "alpha hit", True), _turn(2, _noise(80, 2))], 3.0),
        _block("b", [_turn(5, _noise(80, 3)), _turn(6, "beta hit", True), _turn(7, _noise(80, 4))], 2.0),
        _block("c", [_turn(9, _noise(80, 5)), _turn(10, "gamma hit", True)], 1.0),
    ]
    full = count_tokens(render(blocks))
    tight = pack(blocks, 75)
    shown = [t.content for b in tight for t in b.turns]
    assert {"alpha hit", "beta hit", "gamma hit"} <= set(shown)
    assert all(t.matched for b in tight for t in b.turns)  # no room left for context
    roomy = pack(blocks, full - 10)
    assert {"alpha hit", "beta hit", "gamma hit"} <= {t.content for b in roomy for t in b.turns}
    assert [b.session_id for b in roomy] == sorted(b.session_id for b in roomy)  # same dates: by id
    assert count_tokens(render(roomy)) <= full - 10
    assert pack(blocks, full + 5) == blocks  # everything fits: unchanged


@pytest.mark.parametrize("engine", ["reference", "lucene"])
def test_a_megabyte_message_in_a_real_index_is_searchable_and_bounded(engine: str, tmp_path: Path) -> None:
    huge = (
        _noise(85_000) + " the lighthouse keeper painted the door teal " + _noise(85_000, seed=11)
    )  # under the 1M-character cap
    with engine_memory(engine, tmp_path) as m:
        m.add("u", "s", [
            {"role": "user", "content": "which colour did the lighthouse keeper choose?"},
            {"role": "assistant", "content": huge},
            {"role": "user", "content": "thanks"},
        ])  # fmt: skip
        result = m.search("lighthouse keeper painted door", "u")
        text = result.to_text(max_tokens=2000)
        assert "painted the door teal" in text and count_tokens(text) <= 2000
        assert count_tokens(result.to_text()) < 3 * result.hit_tokens
        capped = m.search("lighthouse keeper painted door", "u", max_tokens=2000)
        assert capped.to_text() == text


@pytest.mark.parametrize("budget", [1, 10, 40, 200, 2000])
def test_pack_never_exceeds_the_budget(budget: int) -> None:
    blocks = [
        _block(
            f"s{i}",
            [_turn(j, _noise(30 + 20 * j, i * 10 + j), matched=j == 1) for j in range(4)],
            1.0 / (i + 1),
        )
        for i in range(6)
    ]
    packed = pack(blocks, budget)
    assert count_tokens(render(packed)) <= budget


def _scored(i: int, text: str, score: float, role: str = "user") -> Turn:
    return _turn(i, text, matched=True, role=role).model_copy(update={"score": score})


def test_pack_orders_hits_by_their_own_relevance_across_sessions() -> None:
    """A session's weak hits wait behind another session's strong hit: the top session's best hit comes
    first, and the strong hit of the second session before the top session's weakest hits (the hit's own
    rank and its session's rank are fused)."""
    top = _block(
        "a",
        [_scored(0, "alpha one " + _noise(8), 0.05), _scored(1, "alpha two " + _noise(8, 2), 0.02),
         _scored(2, "alpha three " + _noise(8, 3), 0.019), _scored(3, "alpha four " + _noise(8, 4), 0.018)],
        3.0,
    )  # fmt: skip
    second = _block("b", [_scored(7, "beta strong " + _noise(8, 5), 0.049)], 2.0)
    from refind.evidence import hit_order

    ranked = [top, second]
    order = [(ranked[bi].session_id, ranked[bi].turns[ti].turn) for bi, ti in hit_order(ranked)]
    assert order[0] == ("a", 0)
    assert order.index(("b", 7)) < order.index(("a", 2)) < order.index(("a", 3))
    room = count_tokens(render([top.model_copy(update={"turns": top.turns[:2]}), second])) + 8
    packed = pack([top, second], room)
    shown = {(b.session_id, t.turn) for b in packed for t in b.turns}
    assert {("a", 0), ("a", 1), ("b", 7)} <= shown and ("a", 3) not in shown


def test_long_hits_are_cut_to_their_passage_so_every_hit_fits() -> None:
    """Five sessions, each hit a long assistant answer: under a tight budget each is cut to the passage
    around its matched word (the cut marked) instead of the first one taking the whole budget."""
    blocks = [
        _block(
            f"s{i}",
            [_turn(0, f"question {i}?"),
             _turn(1, _noise(600, i) + f" keyword{i} answer " + _noise(600, i + 50), matched=True,
                   role="assistant")],
            1.0 - i / 10,
            [f"keyword{i}"],
        )
        for i in range(5)
    ]  # fmt: skip
    packed = pack(blocks, 1000)
    assert count_tokens(render(packed)) <= 1000
    hits = [t for b in packed for t in b.turns if t.matched]
    assert len(hits) == 5
    for i, t in enumerate(sorted(hits, key=lambda t: t.content.split(" answer")[0][-1])):
        assert f"keyword{i} answer" in t.content and CUT in t.content
    # the context (the short questions) comes after every hit; leftover tokens then grow the hits
    assert sum(1 for b in packed for t in b.turns if not t.matched) == 5
    roomy = pack(blocks, 3000)
    assert sum(count_tokens(t.content) for b in roomy for t in b.turns if t.matched) > sum(
        count_tokens(t.content) for t in hits
    )


def test_pack_shows_the_nearest_context_first_and_keeps_header_and_date() -> None:
    turns = [_turn(i, f"context {i} " + _noise(30, i)) for i in range(7)]
    turns[3] = _turn(3, "the hit itself", matched=True)
    block = _block("s", turns, 1.0)
    hit_only = count_tokens(render([block.model_copy(update={"turns": [turns[3]]})]))
    near = count_tokens(render([block.model_copy(update={"turns": turns[2:5]})]))
    # context turns shown whole from the start (the packing before POLICY.context_passage_tokens): the two
    # neighbours take the budget
    packed = pack([block], near + 2, context_passage_tokens=POLICY.context_tokens)
    shown = [t.turn for b in packed for t in b.turns]
    assert 3 in shown and set(shown) <= {1, 2, 3, 4, 5}
    assert {2, 4} <= set(shown) or hit_only + 2 > near  # both neighbours before anything further
    text = render(packed)
    assert text.startswith("[session s | 14 November 2023")
    # by default a long context turn is first cut to a passage on the hit's side, so the budget of two
    # whole neighbours reaches further out, still nearest first: a run around the hit, both neighbours in it
    turns = [_turn(i, f"context {i} " + _noise(90, i)) for i in range(7)]
    turns[3] = _turn(3, "the hit itself", matched=True)
    block = _block("s", turns, 1.0)
    near = count_tokens(render([block.model_copy(update={"turns": turns[2:5]})]))
    packed = pack([block], near + 2)
    shown = sorted(t.turn for b in packed for t in b.turns)
    assert {2, 3, 4} <= set(shown) and len(shown) > 3 and shown == list(range(shown[0], shown[-1] + 1))
    assert count_tokens(render(packed)) <= near + 2


def test_long_context_is_cut_first_so_the_next_places_hits_fit_then_grows_back() -> None:
    """A long context turn (an assistant's long answer beside a hit) is first shown as the passage on its
    hit's side (POLICY.context_passage_tokens), so the context of the best five places does not take the room of
    the sixth place's hit; what is left at the end grows it back."""

    blocks = []
    for s in range(6):
        turns = [
            _turn(0, f"asked {s} " + _noise(200, s)),
            _turn(1, f"needle {s} " + _noise(12, s + 10), matched=True),
            _turn(2, f"answer {s} " + _noise(200, s + 20)),
        ]
        blocks.append(
            Evidence(
                id=f"s{s}#0-2",
                session_id=f"s{s}",
                session_date=1_700_000_000_000 + s * 86_400_000,
                turns=[t.model_copy(update={"id": f"s{s}:{t.turn}", "score": 1.0 - s / 10}) for t in turns],
                score=1.0 - s / 10,
                rounds=[1],
                terms=["needl"],
            )
        )
    sixth = "s5:1"

    def hits_and_context(packed: list[Evidence]) -> tuple[set[str], list[int]]:
        hits = {t.id for b in packed for t in b.turns if t.matched}
        context = [count_tokens(t.content) for b in packed for t in b.turns if not t.matched]
        return hits, context

    budget = 1000
    whole_first, _ = hits_and_context(pack(blocks, budget, context_passage_tokens=POLICY.context_tokens))
    assert sixth not in whole_first  # the five places' whole context took the room
    hits, context = hits_and_context(pack(blocks, budget))
    assert sixth in hits and len(hits) == 6
    assert context and max(context) <= POLICY.context_tokens
    assert count_tokens(render(pack(blocks, budget))) <= budget
    # with room to spare, every context turn grows back to the context cap, and nothing is cut shorter
    _, roomy = hits_and_context(pack(blocks, 3000))
    assert len(roomy) == 12 and min(roomy) > POLICY.context_passage_tokens + 20


def test_a_lasting_fact_a_round_read_is_shown_once_and_kept_when_its_session_falls_out() -> None:
    """A fact's block stays beside the evidence even when a round returned its message: where the packed
    evidence shows the fact's sentence the block is left out (shown once), and where a small budget leaves
    the fact's session out the block still shows it (issue 37: the newer of two facts was lost that way)."""
    fact = "I'm type 1 diabetic, diagnosed when I was twelve."

    def turn(sid: str, i: int, text: str, matched: bool = False) -> Turn:
        return Turn(
            id=f"{sid}:{i}", turn=i, role="user", content=text, timestamp=1_700_000_000_000, matched=matched
        )

    block = _block("s0", [turn("s0", 0, fact, matched=True), turn("s0", 1, _noise(30))], 0.2, ["diabet"])
    fact_block = _block("s0", [turn("s0", 0, fact)], 2.0).model_copy(
        update={"standing": True, "standing_kind": "fact", "id": "s0#0-0"}
    )
    evidence = [
        _block(f"s{i}", [turn(f"s{i}", j, f"needle {i} {j} " + _noise(60, i * 10 + j), matched=j == 1) for j in range(3)],
               1.0 - i / 10, ["needl"])
        for i in range(1, 9)
    ]  # fmt: skip
    whole = pack([block, fact_block, *evidence], 100_000)
    assert count_tokens(render(whole)) > 1000
    assert render(whole).count(fact) == 1 and not any(b.standing for b in whole)
    small = pack([block, fact_block, *evidence], 1000)
    assert "s0" not in {b.session_id for b in small if not b.standing}
    assert [b.standing_kind for b in small if b.standing] == ["fact"] and render(small).count(fact) == 1


def test_a_small_budget_still_reserves_room_for_standing_instructions() -> None:
    """A tenth of 1,000 tokens holds hardly one standing sentence with its header; the reserve is at least
    POLICY.standing_tokens (at most a quarter of the budget), and the evidence keeps the rest."""

    sentence = (
        "I prefer simple, minimal dependencies so the app stays lightweight, quick to install on a small "
        "server and easy for one person to maintain and upgrade"
    )
    standing = [
        _block(f"rules{i}", [_turn(i, f"{sentence} ({i}).", matched=True)], 0.5).model_copy(
            update={"standing": True}
        )
        for i in range(3)
    ]
    evidence = [
        _block(
            f"s{i}",
            [_turn(j, f"needle {i} {j} " + _noise(40, i * 10 + j), matched=j == 1) for j in range(3)],
            1.0 - i / 10,
            ["needl"],
        )
        for i in range(8)
    ]
    packed = pack([*evidence, *standing], 1000)
    offered = [b for b in packed if b.standing]
    shown = count_tokens(render(offered))
    assert (
        1000 // POLICY.standing_share < shown <= POLICY.standing_tokens
    )  # more than a tenth, within the reserve
    assert len(offered) >= 2
    assert any(not b.standing for b in packed)
    assert count_tokens(render(packed)) <= 1000


def test_the_standing_share_takes_the_best_ranked_standing_blocks_not_the_oldest() -> None:
    """Standing blocks rank by their turn's score (their block score, 0, ranks no session): the reserved
    share shows the best ranked first, whatever their dates (issue 37: the newer of two facts, ranked first,
    fell out of the share behind older, lower ranked ones)."""
    day = 86_400_000

    def fact(i: int, score: float) -> Evidence:
        text = (
            f"I'm on medication number {i} for a condition that lasts, and it matters for every plan I make."
        )
        turn = Turn(id=f"f{i}:0", turn=0, role="user", content=text, timestamp=1_700_000_000_000 + i * day,
                    matched=True, score=score)  # fmt: skip
        return Evidence(
            id=f"f{i}#0-0",
            session_id=f"f{i}",
            session_date=turn.timestamp,
            turns=[turn],
            rounds=[0],
            standing=True,
            standing_kind="fact",
        )

    facts = [fact(i, score=float(2 * i)) for i in range(8)]  # the newest ranked best
    evidence = [
        _block(f"s{i}", [_turn(j, f"needle {i} {j} " + _noise(60, i * 10 + j), matched=j == 1) for j in range(3)],
               1.0 - i / 10, ["needl"])
        for i in range(8)
    ]  # fmt: skip
    packed = pack([*facts, *evidence], 1000)
    shown = [b.session_id for b in packed if b.standing]
    assert shown and len(shown) < len(facts)
    assert set(shown) == {f"f{i}" for i in range(7, 7 - len(shown), -1)}  # the best ranked, not the oldest
    assert all(b.score == 0.0 for b in packed if b.standing)  # they still rank no session


def test_pack_is_never_empty_when_a_passage_fits() -> None:
    huge = _block("s", [_turn(0, _noise(5000) + " zebra " + _noise(5000, 2), matched=True)], 1.0, ["zebra"])
    for budget in (40, 60, 100):
        packed = pack([huge], budget)
        assert packed and count_tokens(render(packed)) <= budget


def test_format_date_is_the_one_date_formatter_and_keeps_the_sources_granularity() -> None:
    from refind.evidence import format_date

    day = 1_683_504_000_000  # 2023-05-08T00:00:00Z, a Monday
    at = day + (14 * 60 + 30) * 60_000  # 14:30 UTC
    assert format_date(day) == "8 May 2023"
    assert format_date(at) == "8 May 2023, 14:30 UTC"
    assert format_date(at, text="2023-05-08") == "8 May 2023"  # a date-only source shows a day
    assert format_date(at, text="2023-05-08T14:30:00Z") == "8 May 2023, 14:30 UTC"
    assert format_date(at, text="1:56 pm on 8 May, 2023") == "1:56 pm on 8 May, 2023"  # human text as written
    assert format_date(at, "weekday") == "Mon 8 May 2023, 14:30 UTC"
    assert format_date(day, "weekday", text="2023-05-08") == "Mon 8 May 2023"
    assert format_date(at, "day") == "2023-05-08"
    assert format_date(at, "minute") == "2023-05-08 14:30 UTC"
    assert format_date(-126_230_400_000, "day") == "1966-01-01"
    with pytest.raises(ValueError, match="unknown date form"):
        format_date(day, "fortnight")  # type: ignore[arg-type]


def test_a_breadth_question_gets_every_sessions_hits_before_any_context() -> None:
    from refind.evidence import pack_for

    blocks = []
    for s in range(8):  # eight sessions, each a hit between two long context turns
        turns = [
            _turn(0, "context " * 120),
            _turn(1, f"the hit of session {s} about the garden " * 3, matched=True),
            _turn(2, "context " * 120),
        ]
        blocks.append(_block(f"s{s}", turns, score=1.0 - s / 10, terms=["garden"]))
    budget = 700
    lookup = pack_for(blocks, budget, "lookup")
    breadth = pack_for(blocks, budget, "breadth")
    hits = lambda packed: {b.session_id for b in packed for t in b.turns if t.matched}  # noqa: E731
    assert len(hits(breadth)) == 8  # every session's hit fits once context waits
    assert len(hits(breadth)) > len(hits(lookup))
    assert count_tokens(render(breadth)) <= budget


def _thread_block(
    sid: str, first: int, hit: int, last: int, score: float, ts: int = 1_700_000_000_000
) -> Evidence:
    turns = [
        Turn(
            id=f"{sid}:{i}",
            turn=i,
            role="user" if i % 2 == 0 else "assistant",
            content=f"{'needle' if i == hit else 'context'} {_noise(30, seed=i)}",
            timestamp=ts + i * 60_000,
            matched=i == hit,
            score=score if i == hit else 0.0,
        )
        for i in range(first, last + 1)
    ]
    return Evidence(
        id=f"{sid}#{first}-{last}",
        session_id=sid,
        session_date=ts,
        turns=turns,
        score=score,
        rounds=[1],
        terms=["needl"],
    )


def test_segments_cut_long_threads_by_size_and_any_session_at_a_long_pause() -> None:
    from refind.evidence import segments

    short = [_thread_block("a", 20 * j, 20 * j + 1, 20 * j + 2, 1.0 - j / 10) for j in range(3)]
    assert segments(short) == [("a", 0)] * 3  # a conversation of a sitting (no turn 50) is one part
    long = short + [_thread_block("a", 60, 61, 62, 0.7)]
    assert segments(long) == [("a", 0), ("a", 1), ("a", 2), ("a", 3)]
    assert segments(long, 0) == [("a", 0)] * 4  # 0: no cut by size
    assert segments(long, 50) == [("a", 0), ("a", 0), ("a", 0), ("a", 1)]
    day = 24 * 3600 * 1000
    resumed = [_thread_block("b", 0, 1, 2, 1.0), _thread_block("b", 4, 5, 6, 0.9, ts=1_700_000_000_000 + day)]
    assert segments(resumed) == [("b", 0), ("b", 1)]  # resumed a day later: a new part, however short


def test_a_long_thread_is_packed_in_parts_as_sessions_are() -> None:
    # one 200-turn thread with a hit in each of seven places: packing tiers five parts at a time, so the
    # five best places get their context before the hits of the sixth and seventh; as one session (0) the
    # seven hits all come first
    blocks = [_thread_block("t", 20 * j, 20 * j + 1, 20 * j + 2, 1.0 - j / 10) for j in range(7)]

    def shown(packed: list[Evidence]) -> tuple[list[int], list[int]]:
        turns = sorted((t for b in packed for t in b.turns), key=lambda t: t.turn)
        return [t.turn for t in turns if t.matched], [t.turn for t in turns if not t.matched]

    hits, context = shown(pack(blocks, 450, segment_turns=10))
    assert hits == [1, 21, 41, 61, 81] and context[:6] == [0, 2, 20, 22, 40, 42]
    hits, context = shown(pack(blocks, 450, segment_turns=0))
    assert hits == [1, 21, 41, 61, 81, 101, 121] and len(context) < 6


def test_packing_over_a_floor_shows_what_the_floor_alone_shows_then_adds() -> None:
    """A plan that only adds rounds (an LLM plan after the heuristic rounds) cannot push the floor's
    evidence out of a budget, even where its own hits rank first; what the budget has left goes to them."""
    from refind.evidence import pack_for

    def pack_over_floor(
        floor: list[Evidence], blocks: list[Evidence], budget: int, shape: str
    ) -> list[Evidence]:
        return pack_for(blocks, budget, shape, floor=floor)

    floor = [_block("a", [_scored(0, "alpha " + _noise(60, 1), 0.01), _turn(1, _noise(40, 2))], 1.0)]
    added = [_block(f"b{i}", [_scored(5, f"beta{i} " + _noise(60, 3 + i), 0.5)], 2.0 + i) for i in range(6)]
    blocks = [*floor, *added]
    tight = count_tokens(render(pack_for(floor, 10_000, "lookup"))) + 4
    assert "s:0" not in {t.id for b in pack_for(blocks, tight, "lookup") for t in b.turns}  # displaced
    over = pack_over_floor(floor, blocks, tight, "lookup")
    assert {t.id for b in over for t in b.turns} >= {"s:0", "s:1"}
    roomy = pack_over_floor(floor, blocks, 2_000, "lookup")
    assert {(b.session_id, t.id) for b in roomy for t in b.turns} == {
        ("a", "s:0"),
        ("a", "s:1"),
        *((f"b{i}", "s:5") for i in range(6)),
    }
    for budget in (40, 80, 120, 200, 400, 800):
        shown = pack_over_floor(floor, blocks, budget, "lookup")
        assert count_tokens(render(shown)) <= budget
        assert {t.id for b in pack_for(floor, budget, "lookup") for t in b.turns} <= {
            t.id for b in shown if b.session_id == "a" for t in b.turns
        }


def test_dates_for_people_in_a_zone_and_compact_ranges() -> None:
    """Issue 38: format_date in a zone when one is given (the CLI and the page), UTC as always when not;
    a date without a time of day (midnight UTC) stays its day; format_range writes a period once."""
    from refind.evidence import format_date, format_range, time_zone

    la = time_zone("America/Los_Angeles")
    ms = 1_717_255_800_000  # 2024-06-01 15:30 UTC
    assert format_date(ms) == "1 June 2024, 15:30 UTC" and format_date(ms, "minute") == "2024-06-01 15:30 UTC"
    assert format_date(ms, tz=la) == "1 June 2024, 08:30 PDT"
    assert format_date(ms, "minute", tz=time_zone("Asia/Dubai")) == "2024-06-01 19:30 UTC+04"
    midnight = 1_717_200_000_000  # 2024-06-01, a day without a time
    assert (
        format_date(midnight, "day", tz=la) == "2024-06-01" and format_date(midnight, tz=la) == "1 June 2024"
    )
    assert format_range(ms, ms + 3_600_000, tz=la) == "Sat 1 Jun 2024, 08:30–09:30 PDT"
    assert (
        format_range(ms, ms) == "Sat 1 Jun 2024, 15:30 UTC"
        and format_range(midnight, midnight) == "Sat 1 Jun 2024"
    )
    assert format_range(ms, ms + 3 * 86_400_000) == "1–4 Jun 2024"
    assert format_range(ms, ms + 30 * 86_400_000) == "1 Jun – 1 Jul 2024"
    assert format_range(ms, ms + 300 * 86_400_000) == "1 Jun 2024 – 28 Mar 2025"
    with pytest.raises(refind.InvalidInput, match="time zone 'Mars/Olympus' is unknown"):
        time_zone("Mars/Olympus")


def test_match_spans_finds_the_words_the_terms_came_from() -> None:
    text = "We decided: the Cache houses caching; I am giving Pixel the pills"
    spans = refind.match_spans(text, ["decid", "cach", "hous", "give", "pixel"])
    assert [text[a:b] for a, b in spans] == ["decided", "Cache", "houses", "caching", "giving", "Pixel"]
    assert refind.match_spans(text, []) == [] and refind.match_spans("", ["x"]) == []
