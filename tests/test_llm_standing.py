"""The LLM agent with a person's standing facts in its first prompt (issue 37 item 5) and the round by meaning as
a tool (issue 36 item 4): the real openai client over real HTTP to the scripted fake server, a small index of
one person's messages with (or without) vectors from the hashing test embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import refind
from refind.agent._tools import MEANING_TOOL, TOOLS
from refind.agent.llm import LLMAgent
from refind.result import SearchResult
from tests.conftest import DIABETIC, add_ana_and_bo, said
from tests.embedders import HashingTestEmbedder
from tests.fake_openai import FakeOpenAI, tool_reply

HIKE = "Can you put together snacks for an all-day hike?"
NOW = "2024-06-01"
SUGAR = "My blood sugar drops fast when I exercise, so I carry glucose tabs."


def agent_for(fake: FakeOpenAI, **kwargs: Any) -> LLMAgent:
    kwargs.setdefault("heuristic_first", False)
    return LLMAgent("test-model", base_url=fake.base_url, retry_wait=(0.001, 0.02), timeout=5.0, **kwargs)


def memory(tmp_path: Path, *, meaning: bool = False, **settings: int) -> refind.Memory:
    """Ana's history (conftest's, and a remark on her blood sugar) and Bo's allergy; with ``meaning``, every
    message has its vector (the hashing test embedder)."""
    embedder = HashingTestEmbedder() if meaning else None
    m = refind.Memory(tmp_path / "index", embedder=embedder, embed_in_background=False, **settings)
    add_ana_and_bo(m, s4=[said(SUGAR, "2024-04-02T10:00:00Z"), said("Good to know.", role="assistant")])
    if meaning:
        m.embed_pending()
    return m


def first_user_message(fake: FakeOpenAI) -> str:
    return str(fake.bodies[0]["messages"][1]["content"])


def facts_said(result: SearchResult) -> list[str]:
    return [t.content for b in result.evidence if b.standing_kind == "fact" for t in b.turns]


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


# ---------------------------------------------------------------------------------------------- standing facts


@pytest.mark.parametrize("heuristic_first", [False, True], ids=["model-only", "heuristic-first"])
def test_the_first_prompt_carries_the_persons_standing_facts(
    tmp_path: Path, fake: FakeOpenAI, heuristic_first: bool
) -> None:
    fake.enqueue(tool_reply(("search", {"keywords": "hike snacks"})), tool_reply(("finish", {})))
    with memory(tmp_path) as m:
        result = m.search(HIKE, "ana", now=NOW, agent=agent_for(fake, heuristic_first=heuristic_first))
    first = first_user_message(fake)
    assert first.startswith(f"Question: {HIKE}\n\nStanding facts this person told you")
    assert f"\n- 2024-01-02: {DIABETIC}\n" in first
    assert "We live in a third-floor walk-up apartment." in first
    assert "may search for what it implies" in first
    block = first[: first.index("A request can depend")]
    assert "peanuts" not in block and "tired" not in block  # another person's; passing
    if heuristic_first:  # the facts come before what the heuristic rounds found
        assert first.index("Standing facts") < first.index("Searches already run for you")
    # later requests keep the first prompt as it was; the block is still in the final evidence
    assert all(b["messages"][1]["content"] == first for b in fake.bodies)
    assert DIABETIC in facts_said(result)
    llm = [t for t in result.trace if t.action == "llm"]
    assert "standing fact(s) in the prompt" in (llm[0].note or "")
    assert all("standing fact" not in (t.note or "") for t in llm[1:])


def test_no_facts_block_when_turned_off_or_when_none_bear(tmp_path: Path, fake: FakeOpenAI) -> None:
    script = (tool_reply(("search", {"keywords": "hike snacks"})), tool_reply(("finish", {})))
    with memory(tmp_path) as m:
        fake.enqueue(*script)
        result = m.search(HIKE, "ana", now=NOW, agent=agent_for(fake, facts_in_prompt=False))
        assert "Standing facts" not in first_user_message(fake)
        assert DIABETIC in facts_said(result), "the evidence keeps its block whatever the prompt shows"
        # a question about what happened, on another topic: no fact bears on it
        fake.requests.clear()
        fake.enqueue(tool_reply(("search", {"keywords": "ridge trail"})), tool_reply(("finish", {})))
        m.search("What did we see on the ridge trail?", "ana", now=NOW, agent=agent_for(fake))
        assert "Standing facts" not in first_user_message(fake)
    with memory(tmp_path / "off", standing_facts=0) as m:  # the setting turns the block off everywhere
        fake.requests.clear()
        fake.enqueue(*script)
        result = m.search(HIKE, "ana", now=NOW, agent=agent_for(fake))
        assert "Standing facts" not in first_user_message(fake)
        assert facts_said(result) == []


def test_a_search_for_what_a_fact_implies_runs_as_any_search(tmp_path: Path, fake: FakeOpenAI) -> None:
    """The model reads the fact and searches for what it implies; what it finds joins the evidence."""
    fake.enqueue(
        tool_reply(("search", {"keywords": "blood sugar exercise"})),
        tool_reply(("finish", {"reason": "the diabetes matters for a hike"})),
    )
    with memory(tmp_path) as m:
        result = m.search(HIKE, "ana", now=NOW, agent=agent_for(fake))
    assert SUGAR in {t.content for b in result.evidence for t in b.turns}
    assert DIABETIC in facts_said(result)


# ---------------------------------------------------------------------------------------------- the meaning tool


def test_the_meaning_tool_is_offered_and_runs(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("search_meaning", {"text": "my blood sugar drops when I exercise"})),
        tool_reply(("finish", {})),
    )
    with memory(tmp_path, meaning=True) as m:
        result = m.search(HIKE, "ana", now=NOW, agent=agent_for(fake))
    assert offered(fake.bodies[0]) == ["search", "search_meaning", "note", "finish"]
    assert fake.bodies[0]["tools"][1] == MEANING_TOOL
    # the round ran through the kinds' door, by meaning, on the model's words, and is traced as the model's
    rounds = [t for t in result.trace if t.action == "search" and t.note == "llm"]
    assert len(rounds) == 1
    assert (rounds[0].kind, rounds[0].keywords) == ("meaning", "my blood sugar drops when I exercise")
    assert rounds[0].new_evidence >= 1
    observation = fake.bodies[1]["messages"][3]["content"]
    assert "search by meaning 'my blood sugar drops when I exercise'" in observation
    assert "[id s4#" in observation and "blood sugar" in observation
    assert SUGAR in {t.content for b in result.evidence for t in b.turns}
    assert "search_meaning offered" in (next(t for t in result.trace if t.action == "llm").note or "")


def test_a_meaning_call_is_checked_as_any_call(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("search_meaning", {"keywords": "blood sugar"})),
        tool_reply(("search_meaning", {"text": "sugar", "date_from": "2024-05-01", "date_to": "2024-04-01"})),
        tool_reply(("search_meaning", {"text": "blood sugar", "date_from": "2024-04-01"})),
        tool_reply(("finish", {})),
    )
    with memory(tmp_path, meaning=True) as m:
        result = m.search(HIKE, "ana", now=NOW, agent=agent_for(fake, max_actions=4, max_corrections=3))
    errors = [t.note or "" for t in result.trace if t.action == "error"]
    assert "search_meaning needs 'text'" in errors[0]
    assert "date_from 2024-05-01 is after date_to 2024-04-01" in errors[1]
    assert "search_meaning(text: string" in fake.bodies[1]["messages"][3]["content"]  # the usage names it
    (meaning,) = [t for t in result.trace if t.action == "search" and t.note == "llm"]
    assert meaning.kind == "meaning" and meaning.date_from is not None


@pytest.mark.parametrize("why", ["no-embedder", "turned-off"])
def test_the_meaning_tool_is_not_offered_without_an_embedder(
    tmp_path: Path, fake: FakeOpenAI, why: str
) -> None:
    fake.enqueue(
        tool_reply(("search_meaning", {"text": "my blood sugar"})),
        tool_reply(("search", {"keywords": "blood sugar"})),
        tool_reply(("finish", {})),
    )
    with memory(tmp_path, meaning=why == "turned-off") as m:
        agent = agent_for(fake, meaning_tool=why != "turned-off")
        result = m.search(HIKE, "ana", now=NOW, agent=agent)
    assert fake.bodies[0]["tools"] == TOOLS
    error = next(t for t in result.trace if t.action == "error")
    assert "there is no tool named 'search_meaning'" in (error.note or "")
    assert "search_meaning(" not in fake.bodies[1]["messages"][3]["content"]
    assert not any(t.kind == "meaning" and t.note == "llm" for t in result.trace)


@pytest.mark.parametrize("mode", ["text", "json"])
def test_the_meaning_tool_in_the_text_and_json_modes(tmp_path: Path, fake: FakeOpenAI, mode: str) -> None:
    """In the text modes the tool is in the prompt's schemas, and in ``json`` mode in the constrained call's
    schema (the fake refuses a reply outside it, as a constrained server cannot produce one)."""
    fake.enqueue(tool_reply(("search_meaning", {"text": "blood sugar exercise"})), tool_reply(("finish", {})))
    with memory(tmp_path, meaning=True) as m:
        result = m.search(HIKE, "ana", now=NOW, agent=agent_for(fake, tool_mode=mode))
    body = fake.bodies[0]
    assert "tools" not in body
    assert '"name": "search_meaning"' in body["messages"][0]["content"]
    if mode == "json":
        branches = body["response_format"]["json_schema"]["schema"]["anyOf"]
        names = [b["properties"]["name"]["const"] for b in branches]
        assert names == ["search", "search_meaning", "note", "finish"]
    assert any(t.kind == "meaning" and t.note == "llm" for t in result.trace)


def test_users_own_agents_get_the_meaning_tool_from_the_dispatcher(tmp_path: Path) -> None:
    """refind.tools: the dispatcher's ``tools`` offer ``search_meaning`` when the memory can embed, and run it."""
    from refind.tools import MEANING_TOOL as PUBLIC_MEANING_TOOL
    from refind.tools import ToolDispatcher, openai_tools

    assert [t["function"]["name"] for t in openai_tools(meaning=True)] == [
        "search",
        "search_meaning",
        "note",
        "finish",
    ]
    assert openai_tools() == TOOLS and PUBLIC_MEANING_TOOL == MEANING_TOOL
    with memory(tmp_path / "words") as m:
        tools = ToolDispatcher(m, "ana", now=NOW)
        assert tools.tools == TOOLS and not tools.meaning
        assert "there is no tool named 'search_meaning'" in tools.call(
            "search_meaning", {"text": "blood sugar"}
        )
    with memory(tmp_path / "vectors", meaning=True) as m:
        tools = ToolDispatcher(m, "ana", now=NOW)
        assert tools.tools == openai_tools(meaning=True)
        said = tools.call("search_meaning", {"text": "blood sugar drops exercise"})
        assert "new evidence block(s) for search by meaning 'blood sugar drops exercise':" in said
        assert "glucose tabs" in said
        assert ToolDispatcher(m, "ana", meaning=False).tools == TOOLS
