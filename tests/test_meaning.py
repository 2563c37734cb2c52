"""Search by meaning (issue 36) end to end, with the real local model (refind/embed/local.py, all-MiniLM-L6-v2
int8 under onnxruntime, built by scripts/setup.sh), the real Lucene engine, the real ``openai`` client against
the fake server's embeddings route, the real HTTP server and the real CLI.

The rest of the suite searches by words (tests/conftest.py sets ``REFIND_EMBEDDER=off``): here the model is on.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import refind
from refind.embed import choose
from refind.embed.endpoint import EndpointEmbedder
from refind.embed.local import MODEL_NAME, LocalEmbedder
from refind.errors import IndexFormatError
from refind.models import Round
from refind.policy import POLICY
from tests.fake_openai import FakeOpenAI
from tests.server_helpers import add_body, client, running, search_body

pytestmark = pytest.mark.slow  # the real embedding model: make test, not make check

ROOT = Path(__file__).resolve().parents[1]

# A person's history: the fact the questions need says it in other words than they do.
SESSIONS = {
    "2024-03-02": [
        ("user", "I'm type 1 diabetic, diagnosed when I was twelve."),
        ("assistant", "Thanks for telling me. I'll keep it in mind."),
    ],
    "2024-03-09": [
        ("user", "Can you suggest a sourdough starter schedule? I bake on Sundays."),
        ("assistant", "Feed it Saturday morning and again Saturday night; bake Sunday at noon."),
        ("user", "My oven runs hot, maybe 15 degrees over what the dial says."),
        ("assistant", "Then set it 15 degrees lower and check the loaf ten minutes early."),
    ],
    "2024-04-14": [
        ("user", "We adopted a grey whippet named Biscuit from the rescue on Elm Street."),
        ("assistant", "Congratulations! Whippets love a warm blanket."),
        ("user", "He already stole my spot on the sofa."),
    ],
    "2024-05-01": [
        ("user", "Help me plan the team offsite agenda: two days, twelve people."),
        ("assistant", "Day one for strategy, day two for workshops and a dinner."),
    ],
}
FACT = SESSIONS["2024-03-02"][0][1]
QUESTION = "What chronic condition did I tell you I have?"  # no content word in common with FACT


def _load(memory: refind.Memory, user: str = "ana") -> None:
    for day, turns in SESSIONS.items():
        memory.add(
            user,
            day,
            [
                {"role": role, "content": text, "timestamp": f"{day}T10:{i:02d}:00Z"}
                for i, (role, text) in enumerate(turns)
            ],
        )


def _turns(result: refind.SearchResult) -> dict[str, refind.Turn]:
    return {t.content: t for e in result.evidence for t in e.turns}


@pytest.fixture(scope="module")
def model() -> LocalEmbedder:
    return LocalEmbedder()  # fails (never skips) when the model is not installed: make setup builds it


@pytest.fixture
def meaning(tmp_path: Path, model: LocalEmbedder) -> Iterator[refind.Memory]:
    with refind.Memory(tmp_path / "index", embedder=model) as m:
        _load(m)
        assert m.wait_for_vectors(120), "the embedding worker did not finish"
        yield m


def test_the_words_alone_miss_the_fact(tmp_path: Path) -> None:
    """The control: the same history searched by words does not bring the fact."""
    with refind.Memory(tmp_path / "index", embedder=None) as m:
        _load(m)
        result = m.search(QUESTION, "ana", now="2024-06-01")
        assert FACT not in _turns(result)
        assert all(r.kind != "meaning" for r in result.trace)


def test_a_fact_in_other_words_is_found_by_meaning(meaning: refind.Memory) -> None:
    result = meaning.search(QUESTION, "ana", now="2024-06-01")
    kinds = [r.kind for r in result.trace if r.is_round]
    assert "meaning" in kinds and kinds[-1] == "meaning", kinds  # after the word rounds
    trace = next(r for r in result.trace if r.kind == "meaning")
    assert trace.weight == POLICY.weight_meaning and trace.hits >= 1
    turn = _turns(result)[FACT]
    assert turn.matched and turn.nearness is not None and turn.nearness >= POLICY.meaning_floor
    block = next(e for e in result.evidence if any(t.content == FACT for t in e.turns))
    assert block.meaning  # no word round returned it
    # a reader's small budget still gets it (the share reserved for what meaning found)
    small = meaning.search(QUESTION, "ana", now="2024-06-01", max_tokens=150)
    assert FACT in _turns(small), [t.content for e in small.evidence for t in e.turns]


def test_the_round_by_meaning_never_crosses_users(meaning: refind.Memory) -> None:
    _load(meaning, user="bo")
    meaning.add(
        "bo", "bo-extra", [{"role": "user", "content": "I was diagnosed with celiac disease in 2019."}]
    )
    assert meaning.wait_for_vectors(120)
    # ana never said "celiac": bo's message is never hers
    ana = meaning.search("Which illness do I have?", "ana", now="2024-06-01")
    assert not any("celiac" in t.content for e in ana.evidence for t in e.turns)
    assert all(e.session_id in SESSIONS for e in ana.evidence)
    bo = meaning.search("Which illness do I have?", "bo", now="2024-06-01")
    assert any("celiac" in t.content for e in bo.evidence for t in e.turns)


def test_a_question_nothing_answers_gets_nothing_by_meaning(meaning: refind.Memory) -> None:
    result = meaning.search("lattice gauge theory of quark confinement", "ana", now="2024-06-01")
    trace = next(r for r in result.trace if r.kind == "meaning")
    assert trace.hits == 0 and trace.new_evidence == 0
    assert not [e for e in result.evidence if e.meaning]


def test_without_vectors_the_memory_searches_by_words(tmp_path: Path, model: LocalEmbedder) -> None:
    """An index written without an embedder and opened with one gets its vectors queued; until they are
    written, a search still answers (by words) and proposes no round it cannot run."""
    path = tmp_path / "index"
    with refind.Memory(path, embedder=None) as m:
        _load(m)
    with refind.Memory(path, embedder=model, embed_in_background=False) as m:
        assert m.vector_counts().pending == sum(len(t) for t in SESSIONS.values())
        before = m.search("sourdough starter", "ana", now="2024-06-01")
        assert before.evidence
        assert m.embed_pending() == sum(len(t) for t in SESSIONS.values())
        after = m.search(QUESTION, "ana", now="2024-06-01")
        assert FACT in _turns(after)


# ---------------------------------------------------------------------------------------------- the choice


@pytest.fixture
def fresh_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(choose, "_CHOSEN", {})
    monkeypatch.setattr(choose, "_SAID", set())


def test_a_missing_endpoint_means_words_only_said_once(
    fresh_choice: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("REFIND_EMBED_BASE_URL", "REFIND_EMBED_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REFIND_EMBED_MODEL", "nomic-embed-text")
    with caplog.at_level(logging.WARNING, logger="refind.embed.choose"):
        assert choose.default_embedder("endpoint") is None
        assert choose.default_embedder("endpoint") is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "REFIND_EMBED_BASE_URL" in said[0], said


def test_a_missing_local_model_means_words_only_with_the_fix(
    fresh_choice: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A model directory where the model is not and cannot be built (here: a file's path)."""
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("REFIND_MODEL_DIR", str(blocked / "models"))
    with caplog.at_level(logging.WARNING, logger="refind.embed.choose"):
        assert choose.default_embedder("local") is None
    said = " ".join(r.getMessage() for r in caplog.records if r.name == "refind.embed.choose")
    assert "REFIND_MODEL_DIR" in said and "searches by words" in said, said
    with refind.Memory(tmp_path / "index", settings=refind.Settings(embedder="local")) as m:
        assert m.embedder is None
        _load(m)
        assert m.search("sourdough", "ana").evidence  # words still work


def test_an_embedder_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="embedder"):
        refind.Settings(embedder="bert")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- an endpoint


def test_an_openai_compatible_endpoint_gives_the_vectors(tmp_path: Path, model: LocalEmbedder) -> None:
    with FakeOpenAI() as fake:
        fake.fail_embeddings = 1  # the client's retry gets past one server error
        endpoint = EndpointEmbedder("fake-embed", base_url=fake.base_url, api_key="k")
        assert endpoint.dimensions == fake.embedding_dimensions
        with refind.Memory(tmp_path / "index", embedder=endpoint) as m:
            _load(m)
            assert m.wait_for_vectors(60)
            assert m.vector_counts() == refind.VectorCounts(sum(len(t) for t in SESSIONS.values()), 0)
            result = m.search("whippet rescue Biscuit", "ana", now="2024-06-01")
            assert any(r.kind == "meaning" and r.hits for r in result.trace)
        sent = [r for r in fake.requests if r.path.endswith("/embeddings")]
        assert sent and all(r.body["model"] == "fake-embed" for r in sent)
        assert all(r.headers["authorization"] == "Bearer k" for r in sent)
    # the index records the model: another one is a clear error that names the fix
    with pytest.raises(IndexFormatError, match="refind vectors reset"):
        refind.Memory(tmp_path / "index", embedder=model)


# ---------------------------------------------------------------------------------------------- fronts


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    env.update(PYTHONPATH=str(ROOT), REFIND_DAEMON="0", REFIND_DATA=str(tmp_path / "index"), **extra)
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "refind.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_the_cli_imports_with_vectors_and_finds_by_meaning(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    with history.open("w") as f:
        for day, turns in SESSIONS.items():
            for i, (role, text) in enumerate(turns):
                row = {"user_id": "ana", "session_id": day, "role": role, "content": text}
                f.write(json.dumps({**row, "timestamp": f"{day}T10:{i:02d}:00Z"}) + "\n")
    env = _env(tmp_path, REFIND_EMBEDDER="local")
    done = _cli(env, "import", str(history))
    assert done.returncode == 0, done.stderr
    assert f"vectors     {sum(len(t) for t in SESSIONS.values())} made by {MODEL_NAME}" in done.stdout, (
        done.stdout
    )
    stats = _cli(env, "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    got = json.loads(stats.stdout)
    assert got["vectors"] == got["messages"] and got["pending_vectors"] == 0, got
    found = _cli(env, "search", QUESTION, "--user", "ana", "--now", "2024-06-01", "--json")
    assert found.returncode == 0, found.stderr
    blocks = json.loads(found.stdout)["evidence"]
    assert any(b["meaning"] and any(t["content"] == FACT for t in b["turns"]) for b in blocks), blocks
    # the same search with the model off: words only, the fact not there
    off = _cli({**env, "REFIND_EMBEDDER": "off"}, "search", QUESTION, "--user", "ana", "--json")
    assert FACT not in off.stdout


def test_the_service_embeds_after_it_answers_and_says_how_far_it_is(tmp_path: Path) -> None:
    with running(tmp_path, env={"REFIND_EMBEDDER": "local"}) as server, client(server) as c:
        for n, (day, turns) in enumerate(SESSIONS.items()):
            body = add_body(f"r{n}", "ana", day, [text for _, text in turns])
            assert c.post("/add", json=body).status_code == 200
        deadline = time.monotonic() + 120
        while True:
            stats = c.get("/v1/stats").json()
            assert stats["embedder"] == MODEL_NAME, stats
            if stats["awaiting_vectors"] == 0:
                break
            assert time.monotonic() < deadline, stats
            time.sleep(0.2)
        assert stats["vectors"] == stats["messages"] == sum(len(t) for t in SESSIONS.values())
        r = c.post("/search", json=search_body(QUESTION, "ana"))
        assert r.status_code == 200, r.text
        assert any(FACT in item["content"] for item in r.json()["data"]), r.json()


def test_a_words_only_service_says_so(tmp_path: Path) -> None:
    with running(tmp_path, env={"REFIND_EMBEDDER": "off"}) as server, client(server) as c:
        assert c.post("/add", json=add_body("r", "ana", "s", ["hello there"])).status_code == 200
        stats = c.get("/v1/stats").json()
        assert stats == {"messages": 1, "vectors": 0, "awaiting_vectors": 0, "embedder": None}


def test_a_user_without_messages_gets_nothing_by_meaning(tmp_path: Path) -> None:
    with running(tmp_path, env={"REFIND_EMBEDDER": "local"}) as server, client(server) as c:
        assert c.post("/add", json=add_body("r", "ana", "s", [FACT])).status_code == 200
        r = c.post("/search", json=search_body(QUESTION, "nobody"))
        assert r.status_code == 200 and r.json()["data"] == []


def test_the_nearest_found_beside_the_word_rounds_are_the_rounds_own(
    meaning: refind.Memory, model: LocalEmbedder
) -> None:
    """The question is embedded and its nearest messages found while the word rounds run
    (SearchSession.start_meaning): a round by meaning without a filter of its own reads exactly what a vector
    search of its own would find; one with a time filter searches under it."""
    session = meaning.open_session(QUESTION, "ana", now="2024-06-01")
    found = session.meaning(Round(kind="meaning", weight=POLICY.weight_meaning))
    vector = model.embed([QUESTION])[0]
    own = [
        h for h in meaning.store.knn("ana", vector, POLICY.meaning_fetch) if h.score >= POLICY.meaning_floor
    ]
    trace = session.trace[-1]
    assert trace.kind == "meaning" and trace.hits == len(own) > 0
    assert FACT in {t.content for e in found for t in e.turns}
    # a time filter of its own: only March 2024 (the fact's day) is searched
    march = meaning.open_session(QUESTION, "ana", now="2024-06-01")
    start, end = 1709251200000, 1711929599999  # 2024-03-01 .. 2024-03-31 (UTC)
    got = march.meaning(Round(kind="meaning", weight=POLICY.weight_meaning, date_from=start, date_to=end))
    shown = [t for e in got for t in e.turns]
    assert shown and all(start <= t.timestamp <= end for t in shown)
    assert FACT in {t.content for t in shown}


def _facts_memory(path: Path, model: LocalEmbedder) -> refind.Memory:
    m = refind.Memory(path, embedder=model)
    told = [
        ("2024-01-02", "I'm type 1 diabetic, diagnosed when I was twelve."),
        ("2024-01-20", "We live in a third-floor walk-up apartment."),
        ("2024-02-03", "Our dog Pepper is a 9-year-old beagle with a sensitive stomach."),
        ("2024-02-18", "I work as a night-shift nurse at the county hospital."),
        ("2024-03-09", "I'm allergic to penicillin."),
    ]
    m.add("ana", "dinner", [
        {"role": "user", "content": "The team dinner at Luigi's ran late, and the tiramisu was gone by nine.", "timestamp": "2024-04-11T21:00:00Z"},
    ])  # fmt: skip
    for i, (day, text) in enumerate(told):
        m.add("ana", f"f{i}", [
            {"role": "user", "content": text, "timestamp": f"{day}T10:00:00Z"},
            {"role": "assistant", "content": "Thanks, noted.", "timestamp": f"{day}T10:00:05Z"},
        ])  # fmt: skip
    assert m.wait_for_vectors(120)
    return m


def _offered_facts(memory: refind.Memory, question: str) -> list[str]:
    """The facts a search of ``question`` offers once a round has found the dinner (and no fact), best first."""
    session = memory.open_session(question, "ana", now="2024-06-01")
    assert session.words(Round(kind="broad", keywords="tiramisu"))
    blocks = [b for b in session.standing_blocks() if b.standing_kind in ("fact", "earlier fact")]
    return [t.content for b in sorted(blocks, key=lambda b: -b.turns[0].score) for t in b.turns]


def test_lasting_facts_are_offered_nearest_the_question_first(tmp_path: Path, model: LocalEmbedder) -> None:
    """With an embedder the person's facts are ranked by their sentence's nearness to the question (a domain
    with consequences raised a little); a question that is not a request gets the nearest few."""
    with _facts_memory(tmp_path / "index", model) as m:
        request = _offered_facts(m, "Can you suggest a food to buy for my pet?")
        assert request[0].startswith("Our dog Pepper"), request
        assert len(request) == 4  # a request: standing_facts (4) of the five
        # a question about what happened: at most the nearest few, and only those near it
        assert len(_offered_facts(m, "What happened at the last team dinner?")) <= POLICY.facts_not_requested
        asked = _offered_facts(m, "Which antibiotic gives me a reaction?")
        assert asked[0] == "I'm allergic to penicillin." and len(asked) <= POLICY.facts_not_requested, asked


def test_a_changed_fact_is_shown_with_the_one_it_changed(tmp_path: Path, model: LocalEmbedder) -> None:
    with _facts_memory(tmp_path / "index", model) as m:
        m.add("ana", "f9", [
            {"role": "user", "content": "Update: we moved out of the walk-up, we live in a ground-floor flat now.", "timestamp": "2024-05-02T10:00:00Z"},
        ])  # fmt: skip
        assert m.wait_for_vectors(120)
        ask = "Can you help me plan moving a heavy sofa into our home?"
        shown = _offered_facts(m, ask)
        newer = next(i for i, s in enumerate(shown) if "ground-floor flat" in s)
        assert shown[newer + 1] == "We live in a third-floor walk-up apartment.", shown
        text = m.search(ask, "ana", now="2024-06-01").to_text(4000)
        assert "walk-up" in text and "ground-floor flat" in text
