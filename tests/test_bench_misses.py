"""``python -m benchmarks misses``: its counts are the harness's figures taken apart. On real LoCoMo
questions, the shown turns' per-question mean is ``packed@B`` of ``Memory.search(..., max_tokens=B)``, every
gold turn is counted in exactly one place, the unpacked share is that of the unbudgeted evidence, and the failing questions are those whose top-k sessions of
``Memory.search`` miss a gold session; the classification rules are pinned on small cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.adapters.bm25 import _USER, open_haystack
from benchmarks.catalog import load_dataset
from benchmarks.metrics import packed_turn_recall
from benchmarks.misses import (
    TURN_PLACES,
    main,
    miss_class,
    question_class,
    rank_bucket,
    run,
    session_scores,
    turn_place,
)

_LIMIT = 60  # the first conversation's first answerable questions


@pytest.mark.slow
def test_counts_are_the_harness_figures(shared_data: Path) -> None:
    data = shared_data / "locomo10_dev.json"
    report = run("locomo", str(data), 5, 2000, limit=_LIMIT)
    ds = load_dataset("locomo", data)
    questions = [q for q in ds.questions if not q.abstention and q.gold_sessions][:_LIMIT]
    assert report["questions"] == len(questions) == _LIMIT
    packed: list[float] = []
    unpacked: list[float] = []
    gold_turns, failing = 0, 0
    for key, sessions in ds.haystacks({q.haystack for q in questions}):
        memory = open_haystack(sessions)
        try:
            for q in (q for q in questions if q.haystack == key):
                result = memory.search(q.text, _USER, now=q.now, top_k=5)
                failing += not set(q.gold_sessions) <= set(result.sessions()[:5])
                if q.gold_turns:
                    found = {t.id for b in result.evidence for t in b.turns}
                    unpacked.append(packed_turn_recall(found, q.gold_turns))
                    shown = memory.search(q.text, _USER, now=q.now, top_k=5, max_tokens=2000)
                    delivered = {t.id for b in shown.evidence for t in b.turns}
                    packed.append(packed_turn_recall(delivered, q.gold_turns))
                    gold_turns += len(set(q.gold_turns))
        finally:
            memory.close()
    everything = report["by_type"]["ALL"]
    assert everything["packed_turn_recall"] == round(sum(packed) / len(packed), 3)
    assert everything["unpacked_turn_recall"] == round(sum(unpacked) / len(unpacked), 3)
    assert everything["unpacked_turn_recall"] >= everything["packed_turn_recall"]
    assert sum(everything["gold_turns"][p] for p in TURN_PLACES) == gold_turns
    assert sum(everything["recall_all_failures"].values()) == failing > 0
    missing = everything["missing_gold_sessions"]
    assert missing["6-10"] + missing["11-20"] + missing["21+"] + missing["unscored"] == (
        missing["no shared word"] + missing["tied"] + missing["separable"]
    )
    for place in TURN_PLACES[1:]:  # a turn that shares no word is one of its place's
        assert everything["gold_turns_no_shared_word"][place] <= everything["gold_turns"][place]
    by_type = [row for kind, row in report["by_type"].items() if kind != "ALL"]
    assert sum(row["questions"] for row in by_type) == _LIMIT


def test_places_buckets_and_classes() -> None:
    assert turn_place("t1", "s1", {"t1"}, {"t1"}, {"s1"}) == "shown"
    assert turn_place("t1", "s1", set(), {"t1"}, {"s1"}) == "cut"
    assert turn_place("t1", "s1", set(), set(), {"s1"}) == "session"
    assert turn_place("t1", "s1", set(), set(), {"s2"}) == "absent"
    assert [rank_bucket(r) for r in (6, 10, 11, 20, 21, None)] == [
        "6-10",
        "6-10",
        "11-20",
        "11-20",
        "21+",
        "unscored",
    ]
    assert miss_class(set(), [[{"camp"}]]) == "no shared word"
    assert miss_class({"camp"}, [[{"melani"}], [{"camp", "melani"}]]) == "tied"
    # a rival holding the words only across two of its messages does not tie
    assert miss_class({"charity", "event"}, [[{"charity"}, {"event"}]]) == "separable"
    assert question_class(7, 5, ["separable"]) == "more gold than k"
    assert question_class(2, 5, ["separable", "tied"]) == "tied"
    assert question_class(3, 5, ["tied", "no shared word", "separable"]) == "no shared word"
    with pytest.raises(ValueError):
        question_class(2, 5, [])


def test_session_ranking_puts_evidence_sessions_at_their_block_score() -> None:
    class Block:
        def __init__(self, session_id: str, score: float) -> None:
            self.session_id, self.score = session_id, score

    fused = {"a": 0.03, "b": 0.02, "c": 0.01}
    assert session_scores(fused, []) == ["a", "b", "c"]
    assert session_scores(fused, [Block("c", 0.05), Block("c", 0.04)]) == ["c", "a", "b"]
    assert session_scores({"b": 0.01, "a": 0.01}, []) == ["a", "b"]  # ties: session id


def test_command_writes_its_tables(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(shared_data / "locomo10_dev.json")
    for bad in (["--k", "0"], ["--budget", "0"], ["--limit", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(["--dataset", "locomo", "--data", data, *bad])
        assert exc.value.code == 2 and bad[0] in capsys.readouterr().err
    assert main(["--dataset", "locomo", "--data", str(tmp_path / "none.json")]) == 2
    assert "none.json: no such file" in capsys.readouterr().err
    assert main(["--dataset", "locomo", "--data", data, "--limit", "10", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "misses.md").read_text()
    assert "| ALL | 10 |" in table and "Questions failing recall_all@5" in table
    assert (tmp_path / "misses.json").read_text().startswith("{")
    assert table in capsys.readouterr().out
