"""LLMAgent against a real local model (marker ``local_llm``; tests/local_llm_helpers.py): llama.cpp's
llama-server with Qwen2.5-Coder-1.5B-Instruct Q4_K_M and the repository's chat template, over the real
openai client. A few questions of the demo history and of LoCoMo: the replies' tool calls are parsed,
the evidence is never empty where the heuristic agent's is not, the heuristic floor is kept (heuristic
first: every turn the heuristic agent returns), and the trace says what happened.

The model's wording is not asserted (a model may change); what refind does with any reply is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import refind
from refind.agent.heuristic import HeuristicAgent
from refind.agent.llm import LLMAgent
from refind.loaders import iter_sessions
from refind.result import SearchResult
from tests import local_llm_helpers

pytestmark = pytest.mark.local_llm

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "data"
MODEL = "qwen2.5-coder-1.5b-instruct"
_CALLS = re.compile(r"; (\d+) tool call\(s\)")


@pytest.fixture(scope="module")
def llm_url(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch_module.setenv("NO_PROXY", "127.0.0.1,localhost")
    url, started = local_llm_helpers.start()
    yield url
    if started:
        local_llm_helpers.stop()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[refind.Memory, dict]]:
    spec = json.loads((DEMO / "demo_questions.json").read_text())
    mem = refind.Memory(tmp_path_factory.mktemp("demo") / "index")
    mem.import_sessions(iter_sessions(DEMO / spec["log"], "jsonl"))
    yield mem, spec
    mem.close()


def agent(url: str, **kwargs: object) -> LLMAgent:
    # a slow CPU model on a shared machine: long timeouts, one retry, small observations
    return LLMAgent(
        MODEL, base_url=url, timeout=600, max_retries=1, max_actions=3, observation_tokens=600, **kwargs
    )  # type: ignore[arg-type]


def replies(result: SearchResult) -> list[int]:
    """The tool calls counted in each model reply of the trace."""
    return [
        int(m.group(1)) for t in result.trace if t.action == "llm" for m in [_CALLS.search(t.note or "")] if m
    ]


def check_truthful(result: SearchResult) -> None:
    """The trace tells what happened: every model call is an ``llm`` entry with its tokens; a search
    after a model call is one of its calls; a fallback names its cause; the run finished."""
    actions = [t.action for t in result.trace]
    assert "finish" in actions
    for t in result.trace:
        if t.action == "llm":
            assert t.tokens > 0 and t.ms > 0 and MODEL in (t.note or "")
        if t.action == "fallback":
            assert t.note and ":" in t.note
    # no model search appears unless a reply carried a call
    if any(t.action == "search" and t.note == "llm" for t in result.trace):
        assert sum(replies(result)) > 0


def test_demo_questions_heuristic_first(llm_url: str, demo: tuple[refind.Memory, dict]) -> None:
    mem, spec = demo
    counted: list[int] = []
    for q in spec["questions"][:2]:
        heuristic = mem.search(q["question"], spec["user_id"], now=spec["now"], agent=HeuristicAgent())
        result = mem.search(q["question"], spec["user_id"], now=spec["now"], agent=agent(llm_url))
        check_truthful(result)
        assert result.evidence
        # the heuristic floor: every turn the heuristic agent hands on is handed on here too
        assert {t.id for e in heuristic.evidence for t in e.turns} <= {
            t.id for e in result.evidence for t in e.turns
        }
        counted += replies(result)
    assert counted, "the model was never called"
    assert any(n > 0 for n in counted), f"no reply of the real model held a usable tool call: {counted}"


def test_locomo_question_model_only(llm_url: str, shared_data: Path, tmp_path: Path) -> None:
    from refind.loaders import iter_locomo

    mem = refind.Memory(tmp_path / "index")
    try:
        mem.import_sessions(
            s for s in iter_locomo(shared_data / "locomo10_dev.json") if s.user_id == "conv-26"
        )
        question, now = "When did Caroline go to the LGBTQ support group?", "2023-10-01"
        heuristic = mem.search(question, "conv-26", now=now, agent=HeuristicAgent())
        result = mem.search(question, "conv-26", now=now, agent=agent(llm_url, heuristic_first=False))
        check_truthful(result)
        assert heuristic.evidence and result.evidence  # never empty where the heuristic agent's is not
        if "fallback" not in [t.action for t in result.trace]:
            assert sum(replies(result)) > 0
    finally:
        mem.close()
