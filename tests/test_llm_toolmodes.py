"""LLMAgent's tool modes (refind/agent/toolmodes.py) over the real openai client and the fake server:
``text`` (schemas in the prompt, the reply's text parsed) and ``json`` (the same, with output constrained
to one valid call by ``response_format`` json_schema, which the fake enforces as a constrained server
does); the schema itself; the sampled retry of a 5xx; the benchmark's count of usable replies."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

import refind
from benchmarks.adapters.refind_agent import usable_replies
from refind.agent._tools import TOOL_NAMES, TOOLS
from refind.agent.heuristic import HeuristicAgent
from refind.agent.llm import RETRY_TEMPERATURE, LLMAgent
from refind.agent.toolmodes import TOOL_MODES, call_schema, tools_prompt
from refind.errors import InvalidInput
from refind.models import RoundTrace
from refind.result import SearchResult
from tests.fake_openai import Failure, FakeOpenAI, text_reply, tool_reply

USER = "conv-26"
QUESTION = "When did Caroline give a speech at a school?"
NOW = "2023-07-10"


def agent_for(fake: FakeOpenAI, mode: str, **kwargs: Any) -> LLMAgent:
    kwargs.setdefault("heuristic_first", False)
    return LLMAgent(
        "test-model", base_url=fake.base_url, retry_wait=(0.001, 0.02), timeout=5.0, tool_mode=mode, **kwargs
    )


def actions(result: SearchResult) -> list[str]:
    return [t.action for t in result.trace if t.action != "complete"]


# ---------------------------------------------------------------------------------------------- the schema


def test_the_call_schema_accepts_valid_calls_only() -> None:
    schema = call_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    good = [
        {"name": "search", "arguments": {"keywords": "speech school"}},
        {
            "name": "search",
            "arguments": {"keywords": "x", "date_from": "2023-05-01", "date_to": "2023-05-31"},
        },
        {"name": "note", "arguments": {"ids": ["D1:3"]}},
        {"name": "finish", "arguments": {}},
    ]
    bad = [
        {"name": "answer", "arguments": {}},  # not a tool
        {"name": "search", "arguments": {}},  # keywords required
        {"name": "search", "arguments": {"keywords": ""}},
        {"name": "search", "arguments": {"keywords": "x", "date_from": "May 2023"}},
        {"name": "search", "arguments": {"keywords": "x", "limit": 3}},  # no other keys
        {"name": "note", "arguments": {"ids": []}},
        {"name": "note", "arguments": {"ids": [f"D1:{i}" for i in range(11)]}},  # bounded: fits a reply
        {"name": "note", "arguments": {"ids": ["x" * 65]}},
        {"name": "search", "arguments": {"keywords": "word " * 41}},
        {"name": "finish", "arguments": {"reason": "done"}},  # optional free text costs tokens: not allowed
        {"name": "finish"},
        {"name": "finish", "arguments": {}, "extra": 1},
    ]
    for value in good:
        jsonschema.validate(value, schema)
    for value in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(value, schema)
    assert [b["properties"]["name"]["const"] for b in schema["anyOf"]] == list(TOOL_NAMES)


def test_the_tools_prompt_holds_every_schema() -> None:
    text = tools_prompt()
    for tool in TOOLS:
        assert json.dumps(tool["function"], ensure_ascii=False) in text


def test_tool_mode_is_checked_and_read_from_the_environment(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert TOOL_MODES == ("native", "text", "json")
    assert LLMAgent("m", base_url=fake.base_url).tool_mode == "native"
    with pytest.raises(
        InvalidInput, match="tool_mode: input should be 'native', 'text' or 'json' .got 'grammar'."
    ):
        LLMAgent("m", base_url=fake.base_url, tool_mode="grammar")  # type: ignore[arg-type]
    monkeypatch.setenv("REFIND_LLM_TOOL_MODE", "JSON")
    assert LLMAgent("m", base_url=fake.base_url).tool_mode == "json"
    monkeypatch.setenv("REFIND_LLM_TOOL_MODE", "xml")
    with pytest.raises(
        InvalidInput, match="REFIND_LLM_TOOL_MODE: expected one of native, text, json, got 'xml'"
    ):
        LLMAgent("m", base_url=fake.base_url)


# ---------------------------------------------------------------------------------------------- the modes


@pytest.mark.parametrize("mode", ["text", "json"])
def test_text_and_json_modes_send_the_schemas_in_the_prompt(
    locomo: refind.Memory, fake: FakeOpenAI, mode: str
) -> None:
    fake.enqueue(
        tool_reply(("search", {"keywords": "Caroline speech school"})),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, mode))
    assert actions(result) == ["llm", "search", "llm", "finish"]
    assert "1 tool call(s) written as text" in (result.trace[0].note or "")
    assert result.trace[1].keywords == "Caroline speech school" and result.evidence
    first, second = fake.bodies
    for body in (first, second):
        assert "tools" not in body and "tool_choice" not in body
        assert tools_prompt() in body["messages"][0]["content"]
        if mode == "json":
            assert body["response_format"] == {
                "type": "json_schema",
                "json_schema": {"name": "tool_call", "schema": call_schema()},
            }
        else:
            assert "response_format" not in body
    # no tool_calls or tool messages: the call is the assistant's text, its result a user message
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert json.loads(second["messages"][2]["content"]) == {
        "name": "search",
        "arguments": {"keywords": "Caroline speech school"},
    }
    assert "tool_calls" not in second["messages"][2]
    result_text = second["messages"][3]["content"]
    assert result_text.startswith("Result of search:\n") and "[id " in result_text


def test_text_mode_runs_several_calls_of_one_reply(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        text_reply(
            'I will search.\n{"name": "search", "arguments": {"keywords": "Caroline speech"}}\n'
            '{"name": "finish", "arguments": {}}'
        )
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, "text"))
    assert actions(result) == ["llm", "search", "finish"]
    assert "2 tool call(s) written as text" in (result.trace[0].note or "")


def test_json_mode_heuristic_first_keeps_the_floor(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(tool_reply(("search", {"keywords": "school talk"})), tool_reply(("finish", {})))
    heuristic = locomo.search(QUESTION, USER, now=NOW, agent=HeuristicAgent())
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, "json", heuristic_first=True))
    assert [t.action for t in result.trace].count("llm") == 2
    assert {t.id for e in heuristic.evidence for t in e.turns} <= {
        t.id for e in result.evidence for t in e.turns
    }
    assert "Searches already run for you" in fake.bodies[0]["messages"][1]["content"]


def test_a_malformed_text_call_is_corrected_in_text_mode(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("search", {"keywords": "x", "date_from": "someday"})),
        tool_reply(("search", {"keywords": "Caroline school"})),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, "text"))
    assert actions(result) == ["llm", "error", "llm", "search", "llm", "finish"]
    correction = fake.bodies[1]["messages"][-1]
    assert correction["role"] == "user" and "someday" in correction["content"]
    assert usable_replies(result.trace) == 2  # the rejected call's reply is not usable


# ---------------------------------------------------------------------------------------------- retries


def test_a_5xx_is_retried_at_a_sampling_temperature(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        Failure(500, "The model produced output that does not match the expected peg-native format"),
        tool_reply(("search", {"keywords": "Caroline school"})),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, "native", max_retries=1))
    assert actions(result) == ["retry", "llm", "search", "llm", "finish"]
    assert f"at temperature {RETRY_TEMPERATURE}" in (result.trace[0].note or "")
    assert [b["temperature"] for b in fake.bodies] == [0, RETRY_TEMPERATURE, 0]


def test_a_429_retry_stays_at_temperature_zero(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(Failure(429, retry_after="0"), tool_reply(("finish", {})))
    locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, "json", max_retries=1))
    assert [b["temperature"] for b in fake.bodies] == [0, 0]


# ---------------------------------------------------------------------------------------------- counting


def test_usable_replies_count_parsed_and_valid_calls_only() -> None:
    def llm(n: int) -> RoundTrace:
        return RoundTrace(
            round=0, action="llm", note=f"m: prompt 1 + completion 1 tokens (usage); {n} tool call(s)"
        )

    trace = [
        llm(1),
        RoundTrace(round=0, action="search", keywords="a"),
        llm(0),  # no call
        llm(1),
        RoundTrace(round=0, action="error", note="search: bad date"),  # rejected
        llm(2),
        RoundTrace(round=1, action="finish"),
    ]
    assert usable_replies(trace) == 2
    assert usable_replies([]) == 0


def test_the_longest_constrained_call_fits_the_default_reply() -> None:
    # a reply cut off by max_tokens is not a call: the schema bounds every call below reply_tokens
    from refind.agent.toolmodes import MAX_ID_CHARS, MAX_KEYWORDS_CHARS, MAX_NOTE_IDS
    from refind.tokens import count_tokens

    longest = [
        {"name": "note", "arguments": {"ids": ["~" * MAX_ID_CHARS] * MAX_NOTE_IDS}},
        {
            "name": "search",
            "arguments": {
                "keywords": "~ " * (MAX_KEYWORDS_CHARS // 2),
                "date_from": "2023-05-01",
                "date_to": "2023-05-31",
            },
        },
    ]
    reply_tokens = LLMAgent("m", base_url="http://127.0.0.1:9/v1").reply_tokens
    for call in longest:
        jsonschema.validate(call, call_schema())
        assert count_tokens(json.dumps(call, indent=1)) < reply_tokens
