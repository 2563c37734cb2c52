"""The embedding worker and Memory's vector calls (issue 36): nobody waits for a vector, the queue fills in
in the background, a kill -9 loses nothing and leaves no message without a vector after a restart, a
read-only memory never embeds, another model is refused, an index from before vectors gets them.

Text -> vector comes from a test tool (tests/embedders.py: hashed words), so the checks are exact and fast.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import textwrap
import threading
import time
from pathlib import Path

import pytest

import refind
from refind.errors import EmbedderUnavailable, IndexFormatError, InvalidInput
from refind.models import SessionLog
from refind.store.base import VectorCounts
from tests.conftest import PYTHON, ROOT
from tests.embedders import HashingTestEmbedder

ENGINES = ["reference", "lucene-disk"]


def memory(name: str, tmp: Path, **kw: object) -> refind.Memory:
    if name == "reference":
        return refind.Memory("reference://", **kw)  # type: ignore[arg-type]
    return refind.Memory(tmp / "index", **kw)  # type: ignore[arg-type]


def texts(n: int, start: int = 0) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"note {i}: the colour of boat {i} is teal"}
        for i in range(start, start + n)
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_worker_fills_in_vectors_in_the_background(engine: str, tmp_path: Path) -> None:
    emb = HashingTestEmbedder()
    m = memory(engine, tmp_path, embedder=emb)
    try:
        m.add("u", "s1", texts(40))
        m.add("u", "s2", [{"role": "user", "content": "I am type 1 diabetic"}])
        assert m.wait_for_vectors(timeout=60)
        assert m.vector_counts() == VectorCounts(41, 0) and m.vector_counts("u") == VectorCounts(41, 0)
        stats = m.stats()
        assert (stats.vectors, stats.pending_vectors) == (41, 0)
        assert stats.vector_model == f"{emb.name} ({emb.dimensions} dims)"
        hits = m.store.knn("u", emb.vector("diabetic type 1"), 3)
        assert hits[0].id == "s2:0" and hits[0].score > 0.5
        assert m.store.knn("someone-else", emb.vector("diabetic type 1"), 3) == []
    finally:
        m.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_an_add_is_searchable_by_words_at_once_while_the_model_is_stalled(
    engine: str, tmp_path: Path
) -> None:
    emb = HashingTestEmbedder()
    emb.gate = threading.Event()  # the model takes as long as we like
    m = memory(engine, tmp_path, embedder=emb)
    try:
        m.add("u", "s", texts(3))
        deadline = time.monotonic() + 10
        while emb.calls == 0 and time.monotonic() < deadline:  # the worker is inside embed()
            time.sleep(0.01)
        assert emb.calls == 1
        started = time.perf_counter()
        m.add("u", "s", [{"role": "user", "content": "the kayak is yellow"}])
        assert time.perf_counter() - started < 5  # the add did not wait for the model
        assert [h.id for h in m.query("u", "kayak yellow", 5)] == ["s:3"]
        assert m.vector_counts("u").pending == 4
        assert not m.wait_for_vectors(timeout=0.2)
        emb.gate.set()
        assert m.wait_for_vectors(timeout=60)
        assert m.vector_counts("u") == VectorCounts(4, 0)
    finally:
        emb.gate.set()
        m.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_embed_pending_runs_in_the_calling_thread(engine: str, tmp_path: Path) -> None:
    emb = HashingTestEmbedder()
    m = memory(engine, tmp_path, embedder=emb, embed_in_background=False)
    try:
        m.import_sessions(
            [SessionLog(user_id="u", session_id=f"s{i}", messages=texts(10, 10 * i)) for i in range(10)]
        )
        assert m.vector_counts() == VectorCounts(0, 100)
        assert not m.wait_for_vectors(timeout=0.1)  # no background worker: it would never empty
        seen: list[tuple[int, int]] = []
        assert m.embed_pending(40, progress=lambda done, left: seen.append((done, left))) == 40
        assert seen[-1] == (40, 60) and m.vector_counts() == VectorCounts(40, 60)
        assert m.embed_pending(should_stop=lambda: True) == 0
        assert m.embed_pending() == 60 and m.vector_counts() == VectorCounts(100, 0)
        assert m.embed_pending() == 0 and m.wait_for_vectors(timeout=0)
    finally:
        m.close()


def test_without_an_embedder_messages_wait_and_a_later_embedder_fills_them_in(tmp_path: Path) -> None:
    with refind.Memory(tmp_path / "index") as m:
        m.add("u", "s", texts(5))
        assert m.vector_counts() == VectorCounts(0, 5) and m.stats().vector_model is None
        with pytest.raises(EmbedderUnavailable, match="embedder="):
            m.embed_pending()
    emb = HashingTestEmbedder()
    with refind.Memory(tmp_path / "index", embedder=emb) as m:
        assert m.wait_for_vectors(timeout=60) and m.vector_counts() == VectorCounts(5, 0)


def test_a_read_only_memory_never_embeds(tmp_path: Path) -> None:
    emb = HashingTestEmbedder()
    with refind.Memory(tmp_path / "index", embedder=emb, embed_in_background=False) as writer:
        writer.add("u", "s", texts(3))
        with refind.Memory(tmp_path / "index", read_only=True, embedder=emb) as reader:
            assert reader.vector_counts() == VectorCounts(0, 3)
            assert not reader.wait_for_vectors(timeout=0.1)
            with pytest.raises(InvalidInput, match="read-only"):
                reader.embed_pending()
            time.sleep(0.3)
            assert emb.calls == 0 and reader.vector_counts() == VectorCounts(0, 3)
            assert writer.embed_pending() == 3
            assert reader.vector_counts() == VectorCounts(3, 0)
            assert reader.store.knn("u", emb.vector("boat 1 teal"), 1)[0].id == "s:1"
        other = HashingTestEmbedder(dimensions=16, name="another-model")
        with pytest.raises(IndexFormatError, match="refind vectors reset"):
            refind.Memory(tmp_path / "index", read_only=True, embedder=other)


def test_another_model_is_refused_until_the_vectors_are_reset(tmp_path: Path) -> None:
    with refind.Memory(tmp_path / "index", embedder=HashingTestEmbedder()) as m:
        m.add("u", "s", texts(4))
        assert m.wait_for_vectors(timeout=60)
    other = HashingTestEmbedder(dimensions=16, name="another-model")
    with pytest.raises(IndexFormatError) as err:
        refind.Memory(tmp_path / "index", embedder=other)
    message = str(err.value)
    assert "test-hashing-bow" in message and "another-model" in message and "refind vectors reset" in message
    with refind.Memory(tmp_path / "index") as m:  # no embedder: the index opens; reset drops the vectors
        assert m.reset_vectors() == 4 and m.vector_counts() == VectorCounts(0, 4)
    with refind.Memory(tmp_path / "index", embedder=other) as m:
        assert m.wait_for_vectors(timeout=60) and m.vector_counts() == VectorCounts(4, 0)
        assert m.stats().vector_model == "another-model (16 dims)"


def test_a_failing_embedder_leaves_the_queue_and_the_worker_tries_again(tmp_path: Path) -> None:
    emb = HashingTestEmbedder()
    emb.fail.set()
    m = refind.Memory("reference://", embedder=emb)
    try:
        m.add("u", "s", texts(3))
        deadline = time.monotonic() + 10
        while m._worker is not None and m._worker.error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert m._worker is not None and isinstance(m._worker.error, EmbedderUnavailable)
        assert m.vector_counts() == VectorCounts(0, 3)
        emb.fail.clear()
        m.add("u", "s", texts(1, 3))  # an add wakes it
        assert m.wait_for_vectors(timeout=60) and m.vector_counts() == VectorCounts(4, 0)
        assert m._worker.error is None
    finally:
        m.close()


def test_an_index_from_before_vectors_queues_its_messages_on_open(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with refind.Memory(index) as m:
        m.add("u", "s", texts(6))
        m.add("w", "s", texts(2))
    # what an index written before vectors looks like: no vector index, nothing about vectors in refind.json
    shutil.rmtree(index / "vectors")
    meta = json.loads((index / "refind.json").read_text())
    del meta["vectors"]
    (index / "refind.json").write_text(json.dumps(meta))
    with refind.Memory(index, read_only=True) as reader:  # before its first writable open
        assert reader.vector_counts() == VectorCounts(0, 8) and reader.vector_counts("w") == VectorCounts(
            0, 2
        )
        assert reader.store.knn("u", [1.0] + [0.0] * 31, 3) == []
    emb = HashingTestEmbedder()
    with refind.Memory(index, embedder=emb, embed_in_background=False) as m:
        assert m.vector_counts() == VectorCounts(0, 8)
        assert m.embed_pending() == 8 and m.vector_counts() == VectorCounts(8, 0)
    assert "vectors" in json.loads((index / "refind.json").read_text())


_CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    import refind
    from tests.embedders import HashingTestEmbedder
    m = refind.Memory({index!r}, embedder=HashingTestEmbedder(delay=0.05))
    i = 0
    while True:
        m.add("u", f"s{{i // 7}}", [{{"role": "user", "content": f"message {{i}} about boats"}}])
        print(i, flush=True)  # acknowledged
        i += 1
        time.sleep(0.005)
    """
)


@pytest.mark.slow
def test_a_kill_9_loses_no_message_and_leaves_none_without_a_vector(tmp_path: Path) -> None:
    """A child adds messages one by one (printing each acknowledged add) while its worker embeds them; it
    is killed with SIGKILL mid-stream. Every acknowledged message is there after a restart, and once the
    new worker ran, every message has its vector."""
    index = tmp_path / "index"
    code = _CHILD.format(root=str(ROOT), index=str(index))
    errors = tmp_path / "child.err"
    acked: list[int] = []
    with (
        errors.open("w") as err,
        subprocess.Popen(
            [PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT
        ) as child,
    ):
        try:
            assert child.stdout is not None
            deadline = time.monotonic() + 120
            while len(acked) < 80 and time.monotonic() < deadline:
                line = child.stdout.readline()
                if not line:
                    break
                acked.append(int(line))
            assert len(acked) >= 80, errors.read_text()
            os.kill(child.pid, signal.SIGKILL)
        finally:
            if child.poll() is None:
                child.kill()
            child.wait(30)
    assert child.returncode == -signal.SIGKILL
    emb = HashingTestEmbedder()
    with refind.Memory(index, embedder=emb, embed_in_background=False) as m:
        stored = m.count("u")
        assert stored >= len(acked)  # nothing acknowledged is lost (one more may have landed unacknowledged)
        for i in acked[-20:]:
            assert m.query("u", f"message {i}", 50, session_ids=[f"s{i // 7}"])
        counts = m.vector_counts()
        assert counts.vectors + counts.pending == stored  # every message has its vector or awaits it
        assert counts.vectors > 0  # the child's worker had written some
        m.embed_pending()
        assert m.vector_counts() == VectorCounts(stored, 0)


def test_a_deleted_session_stays_without_vectors_when_its_export_is_imported_again(tmp_path: Path) -> None:
    emb = HashingTestEmbedder()
    logs = [
        SessionLog(
            user_id="u",
            session_id=f"s{i}",
            messages=[{**m, "id": f"m{3 * i + j}"} for j, m in enumerate(texts(3, 3 * i))],
        )  # an export's messages carry their ids: importing it again replaces them
        for i in range(3)
    ]
    with refind.Memory(tmp_path / "index", embedder=emb, embed_in_background=False) as m:
        m.import_sessions(logs)
        assert m.embed_pending() == 9
        assert m.delete_session("u", "s1") == 3
        assert m.vector_counts("u") == VectorCounts(6, 0)
        again = m.import_sessions(logs)  # the same export: s1 is left out, s0 and s2 unchanged
        assert again.deleted == 1
        assert m.count("u") == 6 and m.vector_counts("u") == VectorCounts(6, 0) and m.embed_pending() == 0
        assert {h.session_id for h in m.store.knn("u", emb.vector("boat 4 teal"), 10)} == {"s0", "s2"}
