"""LLMAgent against a real local model (marker ``local_llm``; tests/local_llm_helpers.py): llama.cpp's
llama-server with Qwen2.5-Coder-1.5B-Instruct Q4_K_M and the repository's chat template, over the real
openai client, in the ``json`` tool mode (output constrained to one valid call: the mode the docs name
for llama.cpp). A few questions of the demo history and of LoCoMo: every reply holds a usable tool call
(by construction, so at temperature 0 the suite is deterministic), the evidence is never empty where
the heuristic agent's is not, the heuristic floor is kept (heuristic first: every turn the heuristic
agent returns), and the trace says what happened.

The model's wording is not asserted (a model may change); what refind does with any reply is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import refind
from benchmarks.adapters.refind_agent import usable_replies
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
    local_llm_helpers.require_tools()
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
    # a slow CPU model on a shared machine: long timeouts, one retry, small observations, two calls
    return LLMAgent(
        MODEL,
        base_url=url,
        timeout=600,
        max_retries=1,
        max_actions=2,
        observation_tokens=600,
        tool_mode="json",
        **kwargs,  # type: ignore[arg-type]
    )


def replies(result: SearchResult) -> list[int]:
    """The tool calls counted in each model reply of the trace."""
    return [
        int(m.group(1)) for t in result.trace if t.action == "llm" for m in [_CALLS.search(t.note or "")] if m
    ]


def check_every_reply_usable(result: SearchResult) -> None:
    """Constrained output: every request got a reply, every reply one call, every call accepted."""
    actions = [t.action for t in result.trace]
    assert "retry" not in actions and "error" not in actions, result.trace
    assert replies(result) and all(n == 1 for n in replies(result)), result.trace
    assert usable_replies(result.trace) == len(replies(result))
    assert not any(t.action == "fallback" and "tool call" in (t.note or "") for t in result.trace)


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
        with agent(llm_url) as model:
            result = mem.search(q["question"], spec["user_id"], now=spec["now"], agent=model)
        check_truthful(result)
        check_every_reply_usable(result)
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
        with agent(llm_url, heuristic_first=False) as model:
            result = mem.search(question, "conv-26", now=now, agent=model)
        check_truthful(result)
        check_every_reply_usable(result)
        assert heuristic.evidence and result.evidence  # never empty where the heuristic agent's is not
        # the model planned alone: its own searches ran
        assert any(t.action == "search" and t.note == "llm" for t in result.trace), result.trace
    finally:
        mem.close()
