"""``python -m benchmarks dense-probe``: its refind ranking is the harness's, its fusion is refind's
reciprocal-rank fusion, and without sentence-transformers it says what to install. The model itself is not
run here (refind does not depend on one); docs/benchmarks/ablation.md has the command and its figures."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchmarks.adapters.bm25 import _USER, open_haystack
from benchmarks.catalog import load_dataset
from benchmarks.dense_probe import best_per_session, fuse, main, recall_all_by_type, refind_scores


def test_refind_ranking_is_the_search_results(shared_data: Path) -> None:
    ds = load_dataset("locomo", shared_data / "locomo10_dev.json")
    key = ds.questions[0].haystack
    questions = [q for q in ds.questions if q.haystack == key and not q.abstention][:25]
    (_, sessions), = ds.haystacks({key})  # fmt: skip
    memory = open_haystack(sessions)
    try:
        for q in questions:
            expected = memory.search(q.text, _USER, now=q.now, top_k=5).sessions()[:5]
            scores = refind_scores(memory, _USER, q.text, q.now, 5)
            assert fuse(scores, [], 0.0)[:5] == expected, q.id
            assert len(scores) >= len(expected)
    finally:
        memory.close()


def test_fusion_adds_reciprocal_ranks() -> None:
    scores = {"a": 0.03, "b": 0.02}
    assert fuse(scores, ["b", "a"], 0.0) == ["a", "b"]
    assert fuse(scores, ["b"], 1.0) == ["b", "a"]  # 0.02 + 1/61 > 0.03
    assert fuse(scores, ["b"], 0.5) == ["a", "b"]  # 0.02 + 0.5/61 < 0.03
    assert fuse(scores, ["c"], 1.0) == ["a", "b", "c"]  # a session only the dense ranking has joins last
    assert fuse({"b": 0.01, "a": 0.01}, [], 0.0) == ["a", "b"]  # ties: session id


def test_best_per_session_and_recall() -> None:
    assert best_per_session(["s1", "s1", "s2", "s3"], [0.1, 0.9, 0.5, 0.9]) == ["s1", "s3", "s2"]
    rows = [("x", ["s1"], ["s1", "s2"]), ("x", ["s1", "s3"], ["s1", "s2", "s3"]), ("y", ["s2"], ["s1"])]
    assert recall_all_by_type(rows, 2) == {"ALL": 0.333, "x": 0.5, "y": 0.0}


def test_bad_arguments_and_missing_dependency(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(shared_data / "locomo10_dev.json")
    with pytest.raises(SystemExit) as bad:
        main(["--dataset", "locomo", "--data", data, "--model", "m", "--weights", "one"])
    assert bad.value.code == 2 and "--weights" in capsys.readouterr().err
    # unreadable data is one line and exit 2, before any model is loaded
    assert main(["--dataset", "locomo", "--data", data + ".missing", "--model", "m"]) == 2
    assert "no such file" in capsys.readouterr().err
    if importlib.util.find_spec("sentence_transformers") is None:
        with pytest.raises(SystemExit) as missing:
            main(["--dataset", "locomo", "--data", data, "--model", "m"])
        assert "pip install sentence-transformers" in str(missing.value.code)
