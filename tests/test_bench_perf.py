"""The import benchmark's yardstick (``python -m benchmarks perf --longmemeval``): Lucene alone
(``io.refind.bench.Ceiling``, compiled on demand from benchmarks/java: benchmarks/javac.py) writes the very
documents refind writes, so refind's import rate is measured against the engine's own rate on the same
documents, not against a cheaper shape."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import refind
from benchmarks.perf import LUCENE_SHAPES, lucene_alone, measure_stream
from refind.models import Message, SessionLog
from refind.store._jvm import jclass
from tests.conftest import lucene_reader

_T0 = 1_700_000_000_000


def _logs() -> list[SessionLog]:
    return [
        SessionLog(
            user_id=f"u{u}",
            session_id=f"s{s}",
            messages=[
                Message(
                    role="user" if i % 2 == 0 else "assistant",
                    content=f"message {i} of session {s}: the kayak trip to Lake {u}{s}, and bread recipes",
                    timestamp=_T0 + (s * 10 + i) * 60_000,
                )
                for i in range(4)
            ],
        )
        for u in range(2)
        for s in range(3)
    ]


def _index(path: Path) -> tuple[list[str], dict[str, int], int]:
    """The field names of the index at ``path``, its documents of each kind, and all its documents."""
    with lucene_reader(path) as reader:
        infos = jclass("org.apache.lucene.index.FieldInfos").getMergedFieldInfos(reader)
        fields = sorted(str(info.name) for info in infos)
        searcher = jclass("org.apache.lucene.search.IndexSearcher")(reader)
        term = jclass("org.apache.lucene.index.Term")
        query = jclass("org.apache.lucene.search.TermQuery")
        kinds = {k: int(searcher.count(query(term("kind", k)))) for k in ("m", "s", "t")}
        return fields, kinds, int(reader.numDocs())


def test_lucene_alone_writes_the_documents_refind_writes(tmp_path: Path) -> None:
    logs = _logs()
    with refind.Memory(tmp_path / "refind") as mem:
        result = mem.import_sessions(logs)
    assert result.added == 24
    write_s, commit_s = lucene_alone(logs, "refind", tmp_path / "alone")
    assert write_s > 0 and commit_s > 0
    own_fields, own_kinds, own_docs = _index(tmp_path / "refind")
    fields, kinds, docs = _index(tmp_path / "alone")
    assert kinds == own_kinds == {"m": 24, "s": 6, "t": 6}  # a document per message, two per session
    assert docs == own_docs
    assert fields == own_fields  # every field refind writes, and no other


def test_lucene_alone_text_shape_is_one_document_per_message(tmp_path: Path) -> None:
    lucene_alone(_logs(), "text", tmp_path / "text")
    fields, kinds, docs = _index(tmp_path / "text")
    assert docs == 24 and kinds == {"m": 0, "s": 0, "t": 0}
    assert fields == ["contents", "raw"]
    assert LUCENE_SHAPES == ("text", "refind")


def test_lucene_alone_refuses_an_unknown_shape(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="shape: expected text or refind"):
        lucene_alone(_logs(), "sessions", tmp_path / "x")


def test_the_streamed_import_holds_no_corpus_and_imports_every_message() -> None:
    """``stream``: the fresh import of a configuration's first 80% straight from the corpus generator."""
    report = measure_stream(2_000, 5)
    assert report["messages"] == 1_600 and report["users"] == 5
    assert report["stream_msgs_per_s"] > 0 and report["stream_rss_mb"] > 0


@pytest.mark.slow
def test_perf_measures_the_first_searches_and_the_steady_state_apart() -> None:
    """``search`` is a process's first searches (the JIT still compiling); ``search_steady`` the same number
    again after ``steady`` more: both are real searches' timings, and ``steady=0`` leaves the second out."""
    from benchmarks.perf import measure

    small = {"adds": 2, "queries": 3, "searches": 6, "warmup": 1, "rebuilds": 1}
    report = measure(600, 3, steady=4, freeze=True, **small)
    assert report["settings"]["steady"] == 4 and report["settings"]["freeze"] is True
    assert report["search_gc_ms"] >= 0 and report["search_steady_gc_ms"] >= 0
    assert 0 <= report["search_steady_over_30ms"] <= 6
    assert gc.get_freeze_count() == 0  # the benchmark's freeze is undone: nothing else is affected
    for name in ("search", "search_steady"):
        assert 0 < report[f"{name}_p50_ms"] <= report[f"{name}_p95_ms"]
    ratio = report["refind_rebuild_p50_ms"] / report["search_steady_p50_ms"]
    assert report["search_steady_speedup_vs_rebuild"] == pytest.approx(ratio, rel=0.01, abs=0.1)
    none = measure(600, 3, steady=0, **small)
    assert "search_steady_p50_ms" not in none and none["search_p50_ms"] > 0
