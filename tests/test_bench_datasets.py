"""benchmarks.datasets on the real development splits (../shared/data) and on small hand-made files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.catalog import load_dataset
from benchmarks.datasets import LocomoEvidence, parse_locomo_evidence, select_questions
from refind.errors import InvalidInput
from refind.loaders import read_json


def _haystacks(ds) -> dict:
    return dict(ds.haystacks({q.haystack for q in ds.questions}))


def test_coding_life(shared_data: Path) -> None:
    ds = load_dataset("coding-life", shared_data / "coding-agent-life-v1")
    raw = read_json(shared_data / "coding-agent-life-v1" / "sessions.json")
    assert len(ds.questions) == 15 and not ds.skipped and not ds.turn_level
    (sessions,) = _haystacks(ds).values()
    assert [s.id for s in sessions] == [r["id"] for r in raw]  # file order: grep's tie order
    assert [s.text for s in sessions] == [r["content"] for r in raw]  # the content, verbatim
    assert {m.role for s in sessions for m in s.messages} == {"user", "assistant"}
    assert all(s.date is not None for s in sessions)
    known = {s.id for s in sessions}
    assert all(set(q.gold_sessions) <= known and q.gold_turns is None and q.now is None for q in ds.questions)


def test_locomo(shared_data: Path) -> None:
    path = shared_data / "locomo10_dev.json"
    ds = load_dataset("locomo", path)
    total = sum(len(c["qa"]) for c in read_json(path))
    assert total == 999
    assert len(ds.questions) == 995
    assert dict(ds.skipped) == {"no_evidence": 2, "unresolved_evidence": 2}
    assert len(ds.questions) + sum(ds.skipped.values()) == total
    assert ds.notes["evidence_spelling_normalized"] == 2  # "D8:6; D9:17" and "D:11:26"
    # the dev split holds no evidence range: the range notes are reported, and zero
    assert (ds.notes["evidence_range_expanded"], ds.notes["evidence_range_turns_added"]) == (0, 0)
    assert ds.turn_level
    assert Counter(q.type for q in ds.questions) == {
        "single-hop": 417,
        "adversarial": 237,
        "temporal": 156,
        "multi-hop": 141,
        "open-domain": 44,
    }
    haystacks = _haystacks(ds)
    assert len(haystacks) == 5
    for q in ds.questions:  # every gold turn resolves; gold sessions are exactly the sessions holding them
        turn_session = {t: s.id for s in haystacks[q.haystack] for t in s.turn_ids}
        assert q.gold_turns and all(t in turn_session for t in q.gold_turns)
        assert set(q.gold_sessions) == {turn_session[t] for t in q.gold_turns}
        assert q.now is None and not q.abstention


def test_longmemeval(shared_data: Path) -> None:
    ds = load_dataset("longmemeval", shared_data / "longmemeval_s_dev.json.gz")
    assert len(ds.questions) == 50 and not ds.skipped and ds.turn_level
    abstention = [q for q in ds.questions if q.abstention]
    assert [q.id.endswith("_abs") for q in abstention] == [True, True]
    assert all(q.gold_sessions == () and q.gold_turns is None for q in abstention)
    answerable = [q for q in ds.questions if not q.abstention]
    assert Counter(q.type for q in answerable) == {t: 8 for t in Counter(q.type for q in answerable)}
    haystacks = _haystacks(ds)
    assert set(haystacks) == {q.id for q in ds.questions}
    assert ds.notes["duplicate_sessions_coalesced"] == 2
    for q in answerable:
        sessions = {s.id: s for s in haystacks[q.haystack]}
        assert set(q.gold_sessions) <= set(sessions)
        assert q.gold_turns, q.id  # every answerable dev question has has_answer turns
        assert all(
            t.rsplit(":", 1)[0] in q.gold_sessions and t in sessions[t.rsplit(":", 1)[0]].turn_ids
            for t in q.gold_turns
        )
        assert q.now is not None and q.now_text
    assert len({s.id for s in haystacks["e47becba"]}) == len(haystacks["e47becba"])


def test_select_questions(shared_data: Path) -> None:
    ds = load_dataset("longmemeval", shared_data / "longmemeval_s_dev.json.gz")
    picked = select_questions(ds.questions, stratify=1)
    assert len(picked) == 7  # six types plus the abstention bucket
    assert sum(q.abstention for q in picked) == 1
    order = [q.id for q in ds.questions]
    assert [order.index(q.id) for q in picked] == sorted(order.index(q.id) for q in picked)
    assert (
        select_questions(ds.questions, stratify=2, limit=3) == select_questions(ds.questions, stratify=2)[:3]
    )
    assert select_questions(ds.questions, limit=4) == ds.questions[:4]


def test_a_random_sample_spreads_over_the_file_and_is_seeded(shared_data: Path) -> None:
    """``--sample`` draws per type from the whole file: LoCoMo's first questions of each category all come
    from its first conversation (what ``--stratify`` takes), a seeded sample from all five."""
    ds = load_dataset("locomo", shared_data / "locomo10_dev.json")
    first = select_questions(ds.questions, stratify=5)
    assert {q.haystack for q in first} == {ds.questions[0].haystack}
    picked = select_questions(ds.questions, sample=20, seed=0)
    assert len(picked) == 100 and len({q.haystack for q in picked}) == 5
    assert Counter(q.stratum for q in picked) == {s: 20 for s in {q.stratum for q in ds.questions}}
    order = [q.id for q in ds.questions]
    assert [order.index(q.id) for q in picked] == sorted(order.index(q.id) for q in picked)
    assert select_questions(ds.questions, sample=20, seed=0) == picked
    assert select_questions(ds.questions, sample=20, seed=1) != picked
    with pytest.raises(ValueError):
        select_questions(ds.questions, stratify=2, sample=2)


def _locomo_file(tmp_path: Path, evidence: list[list[str]]) -> Path:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "What is its name?"},
        ],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Her name is Miso."}],
    }
    qa = [
        {"question": f"q{i}", "answer": "a", "evidence": ev, "category": 4} for i, ev in enumerate(evidence)
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conv, "qa": qa}]))
    return path


def test_locomo_evidence_rules(tmp_path: Path) -> None:
    path = _locomo_file(tmp_path, [["D1:1", "D2:1"], ["D1:2; D2:1"], ["D:2:1"], ["D9:9"], ["D1:1", "D"], []])
    ds = load_dataset("locomo", path)
    assert [q.gold_turns for q in ds.questions] == [("D1:1", "D2:1"), ("D1:2", "D2:1"), ("D2:1",)]
    assert ds.questions[0].gold_sessions == ("session_1", "session_2")
    assert dict(ds.skipped) == {"unresolved_evidence": 2, "no_evidence": 1}
    assert ds.notes["evidence_spelling_normalized"] == 2
    assert ds.questions[0].id == "c1/qa0"


@pytest.mark.parametrize(
    ("text", "turns", "ends", "ranges", "canonical"),
    [
        ("D12:3", ["D12:3"], ["D12:3"], 0, True),
        ("D12:3-D12:5", ["D12:3", "D12:4", "D12:5"], ["D12:3", "D12:5"], 1, True),
        ("D12:3 - D12:5", ["D12:3", "D12:4", "D12:5"], ["D12:3", "D12:5"], 1, False),
        ("D12:3-5", ["D12:3", "D12:4", "D12:5"], ["D12:3", "D12:5"], 1, False),
        ("D12:3\u2013D12:5", ["D12:3", "D12:4", "D12:5"], ["D12:3", "D12:5"], 1, False),
        ("D12:3-D12:3", ["D12:3"], ["D12:3"], 1, True),
        ("D8:6; D9:17", ["D8:6", "D9:17"], ["D8:6", "D9:17"], 0, False),
        ("D:11:26", ["D11:26"], ["D11:26"], 0, False),
        (
            "D12:11-D12:14;D13:25-D13:33",
            [f"D12:{t}" for t in range(11, 15)] + [f"D13:{t}" for t in range(25, 34)],
            ["D12:11", "D12:14", "D13:25", "D13:33"],
            2,
            False,
        ),
        ("D1:2, D1:1-D1:3", ["D1:2", "D1:1", "D1:3"], ["D1:2", "D1:1", "D1:3"], 1, False),
    ],
)
def test_locomo_evidence_parsing(
    text: str, turns: list[str], ends: list[str], ranges: int, canonical: bool
) -> None:
    assert parse_locomo_evidence(text) == LocomoEvidence(tuple(turns), tuple(ends), ranges, canonical)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("D", "unresolved_evidence"),
        ("", "unresolved_evidence"),
        ("D12:5-D12:3", "unresolved_evidence_range"),  # backwards
        ("D12:3-D13:2", "unresolved_evidence_range"),  # across sessions
        ("D12:3-D13", "unresolved_evidence_range"),  # a dash that names no end
        ("D12:3-", "unresolved_evidence_range"),
    ],
)
def test_locomo_evidence_that_cannot_be_read(text: str, reason: str) -> None:
    assert parse_locomo_evidence(text) == reason


@given(
    st.integers(1, 40),
    st.integers(1, 60),
    st.integers(0, 30),
    st.sampled_from(["-", " - ", "\u2013", "- "]),
    st.booleans(),
)
def test_locomo_range_means_every_turn_in_it(
    session: int, first: int, span: int, dash: str, short: bool
) -> None:
    last = first + span
    end = str(last) if short else f"D{session}:{last}"
    read = parse_locomo_evidence(f"D{session}:{first}{dash}{end}")
    assert isinstance(read, LocomoEvidence)
    assert read.turns == tuple(f"D{session}:{t}" for t in range(first, last + 1))
    assert read.ranges == 1 and len(read.ends) == min(2, span + 1)
    assert read.canonical == (dash == "-" and not short)


def test_locomo_evidence_ranges_in_the_loader(tmp_path: Path) -> None:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann" if i % 2 else "Bob", "dia_id": f"D1:{i}", "text": f"turn {i} of session one"}
            for i in range(1, 7)
        ],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Her name is Miso."}],
    }
    evidence = [
        ["D1:2-D1:5"],  # 4 turns, 2 more than its ends
        ["D1:1-D1:3; D2:1"],  # 4 turns, 1 more; not canonical
        ["D1:4 - D1:6", "D1:5"],  # 3 turns, the middle one also named: 0 more
        ["D1:5-D1:9"],  # D1:7-D1:9 do not exist: skipped
        ["D1:5-D2:1"],  # across sessions: skipped
        ["D1:3-D1:1"],  # backwards: skipped
    ]
    qa = [
        {"question": f"q{i}", "answer": "a", "evidence": ev, "category": 4} for i, ev in enumerate(evidence)
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conv, "qa": qa}]))
    ds = load_dataset("locomo", path)
    assert [q.gold_turns for q in ds.questions] == [
        ("D1:2", "D1:3", "D1:4", "D1:5"),
        ("D1:1", "D1:2", "D1:3", "D2:1"),
        ("D1:4", "D1:5", "D1:6"),
    ]
    assert ds.questions[1].gold_sessions == ("session_1", "session_2")
    assert dict(ds.skipped) == {"unresolved_evidence": 1, "unresolved_evidence_range": 2}
    assert ds.notes["evidence_range_expanded"] == 3
    assert ds.notes["evidence_range_turns_added"] == 2 + 1 + 0
    assert ds.notes["evidence_spelling_normalized"] == 2  # "D1:1-D1:3; D2:1" and "D1:4 - D1:6"


def test_coding_life_gold_must_exist(tmp_path: Path) -> None:
    (tmp_path / "sessions.json").write_text(json.dumps([{"id": "s1", "content": "[user] hi there\nmore"}]))
    queries = [
        {"id": "a", "type": "t", "question": "hi?", "goldSessionIds": ["s1"]},
        {"id": "b", "type": "t", "question": "x?", "goldSessionIds": ["nope"]},
        {"id": "c", "type": "t", "question": "y?", "goldSessionIds": []},
    ]
    (tmp_path / "queries.json").write_text(json.dumps(queries))
    ds = load_dataset("coding-life", tmp_path)
    assert [q.id for q in ds.questions] == ["a"]
    assert dict(ds.skipped) == {"gold_not_in_haystack": 1, "no_gold": 1}
    (session,) = next(iter(ds.haystacks({ds.questions[0].haystack})))[1]
    assert session.messages[0].content == "hi there\nmore" and session.messages[0].id == "s1:0"
    with pytest.raises(InvalidInput):
        load_dataset("nope", tmp_path)


def test_longmemeval_rules_on_a_small_file(tmp_path: Path) -> None:
    def item(qid: str, gold: list[str], sessions: dict[str, list[dict]]) -> dict:
        return {
            "question_id": qid,
            "question_type": "single-session-user",
            "question": f"question {qid}?",
            "question_date": "2023/05/30 (Tue) 23:40",
            "answer": "x",
            "answer_session_ids": gold,
            "haystack_session_ids": list(sessions),
            "haystack_dates": ["2023/05/20 (Sat) 02:21"] * len(sessions),
            "haystack_sessions": list(sessions.values()),
        }

    said = [
        {"role": "user", "content": "I got a degree"},
        {"role": "assistant", "content": "ok", "has_answer": True},
    ]
    data = [
        item("q1", ["a"], {"a": said, "b": [{"role": "user", "content": "hi"}]}),
        item("q2_abs", ["a_abs"], {"a_abs": said}),
        item("q3", ["gone"], {"a": said}),
        item("q4", ["e"], {"e": [{"role": "user", "content": "   "}]}),
        item("q1", ["a"], {"a": said}),
    ]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    ds = load_dataset("longmemeval", path)
    assert [q.id for q in ds.questions] == ["q1", "q2_abs", "q4"]
    assert dict(ds.skipped) == {"gold_not_in_haystack": 1, "duplicate_question_id": 1}
    q1, q2, q4 = ds.questions
    assert q1.gold_turns == ("a:1",) and q1.now_text == "2023/05/30 (Tue) 23:40" and q1.now is not None
    assert q2.abstention and q2.gold_sessions == () and q2.gold_turns is None
    assert q4.gold_turns == ()  # its only has_answer-free session is empty
    haystacks = dict(ds.haystacks(["q1", "q4"]))
    assert [s.id for s in haystacks["q1"]] == ["a", "b"] and haystacks["q4"] == []
    assert ds.notes["empty_haystacks"] == 1
    assert select_questions(ds.questions, stratify=1) == [q1, q2]  # q4 shares q1's type
