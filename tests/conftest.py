"""Shared fixtures: real Lucene indexes in tmp_path, real data from ../shared/data, a real OpenSearch node."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import refind
from refind.config import Settings
from refind.store.base import Engine
from tests.engines import ENGINES, EngineKind, kind
from tests.fake_openai import FakeOpenAI
from tests.opensearch_helpers import DevCluster, session_cluster

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("REFIND_SHARED_DATA") or ROOT.parent / "shared" / "data")
PYTHON = sys.executable


@contextmanager
def lucene_reader(path: Path) -> Iterator[Any]:
    """Lucene's own DirectoryReader on the index at ``path`` (in refind's JVM), closed afterwards: for tests
    that check what was written as Lucene sees it."""
    from refind.store._jvm import ensure_jvm, jclass

    ensure_jvm()
    directory = jclass("org.apache.lucene.store.FSDirectory").open(
        jclass("java.nio.file.Paths").get(str(path))
    )
    reader = jclass("org.apache.lucene.index.DirectoryReader").open(directory)
    try:
        yield reader
    finally:
        reader.close()
        directory.close()


# Reading commands run in-process here (a CliRunner's monkeypatch must reach the code, and no background search
# process may outlive a test); tests/test_daemon.py turns the daemon on with a fixture that stops it.
os.environ["REFIND_DAEMON"] = "0"
# Memories in tests search by words unless a test gives them an embedder (tests/test_meaning.py runs the real
# local model end to end): the default model embeds every message added in a background thread, which would
# make every fixture that loads a conversation pay tens of seconds of CPU on these 2-core machines.
os.environ["REFIND_EMBEDDER"] = "off"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fast tier (``make check`` runs ``-m "not slow"``) leaves out, besides the tests marked ``slow`` by hand
    (a soak, a process kill, a notebook, a whole spawned server: anything over a few seconds), every test that
    needs a real part: the OpenSearch node (the ``opensearch`` fixture, or the ``opensearch`` engine of
    tests/engines.py), the local model (marker ``local_llm``) or Chromium (a module that drives it with
    ``tests.chromium_helpers.browser``)."""
    from tests.chromium_helpers import browser

    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if (
            "opensearch" in getattr(item, "fixturenames", ())
            or "opensearch" in params.values()
            or item.get_closest_marker("local_llm") is not None
            or getattr(getattr(item, "module", None), "browser", None) is browser
        ):
            item.add_marker(pytest.mark.slow)


_FAST_TIER_SECONDS = 10.0  # over this, a test of `make check` belongs to `make test` only
_took: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _took[report.nodeid] = _took.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """In the fast tier, name the tests that took long enough to be marked ``slow`` (a new test is fast until
    someone marks it, so the tier stays under its 3 minutes only if this line is read)."""
    if "not slow" not in (config.option.markexpr or ""):
        return
    long = sorted((t, n) for n, t in _took.items() if t > _FAST_TIER_SECONDS)
    for took, nodeid in reversed(long):
        terminalreporter.write_line(f"fast tier: {nodeid} took {took:.0f} s; mark it @pytest.mark.slow")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "locomo10_dev.json").exists():
        pytest.fail(f"shared data not found at {SHARED_DATA}; set REFIND_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[refind.Memory]:
    m = refind.Memory(tmp_path / "index")
    yield m
    m.close()


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    """Environment for subprocesses that import refind (no inherited REFIND_* surprises)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    env["PYTHONPATH"] = str(ROOT)
    env["REFIND_DATA"] = str(tmp_path / "default-data")
    env["REFIND_DAEMON"] = "0"
    env["REFIND_EMBEDDER"] = "off"  # as in-process (above); tests/test_meaning.py turns the model on
    return env


@pytest.fixture(scope="module", params=["reference", "lucene"])
def locomo(
    request: pytest.FixtureRequest, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[refind.Memory]:
    """One real LoCoMo conversation (conv-26) in an in-memory index, shared by a test module: once in the
    reference engine, once in Lucene's (tests/engines.py), for the tests of what sits above the engine."""
    from refind.loaders import iter_locomo
    from tests.engines import engine_memory

    mem = engine_memory(request.param, tmp_path_factory.mktemp("locomo"))
    mem.import_sessions(s for s in iter_locomo(shared_data / "locomo10_dev.json") if s.user_id == "conv-26")
    yield mem
    mem.close()


@pytest.fixture(scope="session")
def opensearch() -> Iterator[DevCluster]:
    """A real 1-node OpenSearch dev cluster for the whole session (tests/opensearch_helpers.py): started on
    first use, stopped at the end; skipped when Java or mvn is missing unless REFIND_REQUIRE_OPENSEARCH=1.
    The OpenSearch engine's tests (tests/engines.py) use the same node."""
    cluster = session_cluster()
    yield cluster
    cluster.stop()


# ---------------------------------------------------------------------------------------------- engines
# The engine contract's fixtures (tests/test_engine_contract.py, tests/test_engine_vectors.py): every engine
# of tests/engines.py, new and empty in the test's directory; ``durable_kind``, those whose data outlives them.


@pytest.fixture(params=list(ENGINES))
def engine_kind(request: pytest.FixtureRequest) -> EngineKind:
    return kind(request.param)


@pytest.fixture
def engine(engine_kind: EngineKind, tmp_path: Path) -> Iterator[Engine]:
    e = engine_kind.make(tmp_path, Settings())
    yield e
    e.close()


@pytest.fixture(params=[name for name, k in ENGINES.items() if k.durable])
def durable_kind(request: pytest.FixtureRequest) -> EngineKind:
    return kind(request.param)


# ---------------------------------------------------------------------------------------------- the LLM agent


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """The scripted fake OpenAI server (tests/fake_openai.py) for the LLM agent's tests, with no LLM setting
    inherited from the environment; the test fails if a request came that the script did not expect."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in (
        "REFIND_LLM_API_KEY",
        "OPENAI_API_KEY",
        "REFIND_LLM_BASE_URL",
        "OPENAI_BASE_URL",
        "REFIND_LLM_MODEL",
        "REFIND_LLM_TOOL_MODE",
    ):
        monkeypatch.delenv(var, raising=False)
    server = FakeOpenAI().start()
    yield server
    server.stop()
    assert server.unexpected == 0, "a request the script did not expect, or a reply against the schema"


# ---------------------------------------------------------------------------------------------- histories


def said(content: str, timestamp: str | None = None, role: str = "user") -> dict[str, str]:
    """One message as ``Memory.add`` takes it (by the user unless ``role`` says otherwise)."""
    message = {"role": role, "content": content}
    if timestamp is not None:
        message["timestamp"] = timestamp
    return message


DIABETIC = "I'm type 1 diabetic, diagnosed when I was twelve."
ANA = {
    "s1": [said(DIABETIC, "2024-01-02T10:00:00Z"), said("Thanks for telling me.", role="assistant")],
    "s2": [said("We live in a third-floor walk-up apartment.", "2024-02-02T10:00:00Z")],
    "s3": [
        said("We hiked the ridge trail last fall, the views were great.", "2024-03-02T10:00:00Z"),
        said("I'm so tired today.", "2024-03-02T10:01:00Z"),
    ],
}
"""Ana's sessions for the tests of standing facts: a lasting fact, a home, a hike story with a passing remark."""


def add_ana_and_bo(m: refind.Memory, **more: list[dict[str, str]]) -> refind.Memory:
    """Add Ana's history (:data:`ANA`, then the sessions ``more``) and Bo's peanut allergy to ``m``."""
    for session, messages in {**ANA, **more}.items():
        m.add("ana", session, [dict(message) for message in messages])  # copies: ANA stays as it is
    m.add("bo", "b1", [said("I'm allergic to peanuts.", "2024-01-05T10:00:00Z")])
    return m
