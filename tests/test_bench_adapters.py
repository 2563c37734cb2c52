"""The adapters: grep against the published scorecard, bm25 through refind's store, the refind wiring with
a stand-in ``search``, and vector with the real openai client against a local fake embeddings server."""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import refind
from benchmarks import adapters as registry
from benchmarks import metrics
from benchmarks.adapters.base import AdapterConfig
from benchmarks.adapters.grep import tokenize
from benchmarks.catalog import load_dataset
from benchmarks.datasets import Question, Session


def test_grep_tokenize_matches_the_seed() -> None:
    assert tokenize("Where's the PR #11? run_history, K8s") == ["where", "the", "run_history", "k8s"]
    assert tokenize("the THE the") == ["the", "the", "the"]  # repeats kept


def test_grep_reproduces_the_published_coding_life_scorecard(shared_data: Path) -> None:
    ds = load_dataset("coding-life", shared_data / "coding-agent-life-v1")
    ((_, sessions),) = ds.haystacks({q.haystack for q in ds.questions})
    grep = registry.create("grep")
    state = grep.init(sessions, AdapterConfig("coding-life", 5, turn_level=False))
    p, r, hits = [], [], 0
    for q in ds.questions:
        ranked = [item.session_id for item in grep.query(q, state, 5)]
        p.append(metrics.precision_at_k(ranked, q.gold_sessions, 5))
        r.append(metrics.recall_at_k(ranked, q.gold_sessions, 5))
        hits += int(metrics.hit_at_k(ranked, q.gold_sessions, 5))
    assert round(sum(p) / len(p), 3) == 0.227
    assert round(sum(r) / len(r), 3) == 0.967
    assert (hits, len(ds.questions)) == (15, 15)


def _session(sid: str, *texts: str) -> Session:
    messages = tuple(
        refind.Message(role="user" if i % 2 == 0 else "assistant", content=t, id=f"{sid}:{i}", turn=i)
        for i, t in enumerate(texts)
    )
    return Session(id=sid, text="\n".join(f"[{m.role}] {m.content}" for m in messages), messages=messages)


SESSIONS = [
    _session("s1", "the docker build is slow", "cache the layers"),
    _session("s2", "my cat is named Miso", "nice name"),
    _session("s3", "docker compose broke", "pin the version of docker compose"),
]


def _q(text: str, gold: tuple[str, ...] = ("s3",)) -> Question:
    return Question(id="q", type="t", text=text, haystack="h", gold_sessions=gold)


def test_grep_ties_keep_input_order() -> None:
    grep = registry.create("grep")
    state = grep.init(SESSIONS, AdapterConfig("x", 5, turn_level=False))
    items = grep.query(_q("docker name"), state, 5)
    assert [(i.session_id, i.score) for i in items] == [("s1", 1.0), ("s2", 1.0), ("s3", 1.0)]
    assert items[0].text == SESSIONS[0].text and items[0].turn_ids == ("s1:0", "s1:1")


@pytest.mark.parametrize("turn_level", [True, False])
def test_bm25_ranks_sessions_by_best_message(turn_level: bool) -> None:
    bm25 = registry.create("bm25")
    state = bm25.init(SESSIONS, AdapterConfig("x", 5, turn_level=turn_level))
    try:
        items = bm25.query(_q("docker compose version"), state, 5)
    finally:
        bm25.teardown(state)
    assert items[0].session_id == "s3"
    assert "s2" not in [i.session_id for i in items]  # no shared term, no match
    if turn_level:  # the matched messages themselves, BM25 order
        assert (
            items[0].turn_ids == ("s3:1",)
            and items[0].text == "[assistant] pin the version of docker compose"
        )
        assert {i.turn_ids[0] for i in items} == {"s3:0", "s3:1", "s1:0"}
    else:  # one item per session, rendered whole
        assert [i.session_id for i in items] == ["s3", "s1"]
        assert items[0].text == SESSIONS[2].text and items[0].turn_ids == ("s3:0", "s3:1")
    assert [i.score for i in items] == sorted((i.score for i in items), reverse=True)


def test_refind_is_skipped_until_memory_has_search() -> None:
    reason = registry.unavailable("refind")
    assert (reason is None) == hasattr(refind.Memory, "search")
    if reason:
        assert "search" in reason and "\n" not in reason


def test_refind_adapter_returns_memory_search_blocks_by_relevance() -> None:
    """The adapter is a thin wrapper: its items are SearchResult.by_relevance(), rendered by refind."""
    assert registry.unavailable("refind") is None
    adapter = registry.create("refind")
    state = adapter.init(SESSIONS, AdapterConfig("x", 5, turn_level=True))
    try:
        q = Question(id="q", type="t", text="docker build", haystack="h", gold_sessions=("s3",), now=None)
        items = adapter.query(q, state, 5)
        expected = state.memory.search("docker build", "haystack", top_k=5)
    finally:
        adapter.teardown(state)
    blocks = expected.by_relevance()
    assert items and len(items) == len(blocks)
    assert [i.session_id for i in items] == [b.session_id for b in blocks]
    assert [i.turn_ids for i in items] == [tuple(t.id for t in b.turns) for b in blocks]
    assert items[0].text == expected.render_block(blocks[0])
    assert [i.score for i in items] == sorted((i.score for i in items), reverse=True)


def test_openai_adapters_skip_without_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("REFIND_LLM_API_KEY", raising=False)
    monkeypatch.delenv("REFIND_LLM_BASE_URL", raising=False)
    for name in ("vector", "refind-llm"):
        reason = registry.unavailable(name)
        assert reason and "OPENAI_API_KEY" in reason and "\n" not in reason


def _fake_embedding(text: str, dim: int = 64) -> list[float]:
    """A bag-of-words hashing embedding: texts sharing words have positive cosine."""
    vec = [0.0] * dim
    for word in re.findall(r"[a-z]+", text.lower()):
        vec[int(hashlib.sha1(word.encode()).hexdigest(), 16) % dim] += 1.0
    return vec


class _Embeddings(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.server.requests.append(body)  # type: ignore[attr-defined]
        data = [
            {"object": "embedding", "index": i, "embedding": _fake_embedding(t)} for i, t in enumerate(inputs)
        ]
        payload = json.dumps(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    yield server.requests  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize("turn_level", [True, False])
def test_vector_ranks_by_cosine(fake_openai: list[dict], turn_level: bool) -> None:
    assert registry.unavailable("vector") is None
    adapter = registry.create("vector")
    state = adapter.init(SESSIONS, AdapterConfig("x", 5, turn_level=turn_level))
    try:
        items = adapter.query(_q("pin docker compose version"), state, 5)
    finally:
        adapter.teardown(state)
    assert fake_openai[0]["model"] == "text-embedding-3-small"
    assert len(fake_openai[0]["input"]) == (6 if turn_level else 3)  # messages, or sessions
    assert items[0].session_id == "s3"
    assert len(items) == (6 if turn_level else 3)
    assert items[0].turn_ids == (("s3:1",) if turn_level else ("s3:0", "s3:1"))
    scores = [i.score for i in items]
    assert scores == sorted(scores, reverse=True) and all(-1 - 1e-9 <= s <= 1 + 1e-9 for s in scores)
    assert not math.isnan(scores[0])
