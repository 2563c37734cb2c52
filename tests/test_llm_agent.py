"""LLMAgent end to end: the real openai client over real HTTP to a scripted fake server, an index holding
one LoCoMo conversation (the reference engine and Lucene, conftest's ``locomo``). Retries, timeouts,
corrections, fallback, budgets, configuration."""

from __future__ import annotations

import inspect
import json
import logging
import re
import socket
import subprocess
import sys
import time
from typing import Any

import openai
import pydantic
import pytest

import refind
from refind.agent._tools import TOOLS
from refind.agent.heuristic import HeuristicAgent
from refind.agent.llm import LLMAgent
from refind.models import RoundTrace, to_epoch_ms
from refind.result import SearchResult
from refind.tokens import count_tokens
from tests.fake_openai import Delay, Failure, FakeOpenAI, text_reply, tool_reply

USER = "conv-26"
QUESTION = "When did Caroline give a speech at a school?"
NOW = "2023-07-10"  # a Monday
KEY = "sk-test-0123456789abcdef"
FAST = (0.001, 0.02)  # retry_wait for tests: (multiplier, max) seconds
DAY_MS = 86_400_000


def agent_for(fake: FakeOpenAI, **kwargs: Any) -> LLMAgent:
    kwargs.setdefault("retry_wait", FAST)
    kwargs.setdefault("timeout", 5.0)
    # these tests script the model-only loop exactly; heuristic first (the default) has its own tests
    kwargs.setdefault("heuristic_first", False)
    return LLMAgent("test-model", base_url=fake.base_url, api_key=KEY, **kwargs)


def steps(result: SearchResult) -> list[RoundTrace]:
    """The trace entries of the agent's run (without what SearchSession.result adds afterwards)."""
    return [t for t in result.trace if t.action != "complete"]


def actions(result: SearchResult) -> list[str]:
    return [t.action for t in steps(result)]


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def block_ids(observation: str) -> list[str]:
    return re.findall(r"^\[id ([^\]\s]+)\]", observation, flags=re.MULTILINE)


def heuristic_ids(mem: refind.Memory, question: str = QUESTION) -> list[str]:
    return [e.id for e in mem.search(question, USER, now=NOW, agent=HeuristicAgent()).evidence]


# ---------------------------------------------------------------------------------------------- happy path


def test_scripted_search_search_note_finish(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    noted: list[str] = []

    def note_what_was_shown(body: dict[str, Any]) -> Any:
        first, second = tool_messages(body)
        noted.extend([block_ids(first["content"])[0], block_ids(second["content"])[0], "D3:1"])
        return tool_reply(("note", {"ids": noted, "reason": "the talk and the June meetup"}))

    fake.enqueue(
        tool_reply(("search", {"keywords": "Caroline speech school"})),
        tool_reply(
            (
                "search",
                {"keywords": "mentors family friends", "date_from": "2023-06-01", "date_to": "2023-06-30"},
            )
        ),
        note_what_was_shown,
        tool_reply(("finish", {"reason": "enough"})),
    )
    agent = agent_for(fake, observation_tokens=600)
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent)

    # evidence: exactly the noted blocks, the school talk (D3:1) among them
    assert result.agent == "llm"
    assert all(e.noted for e in result.evidence)
    turn_ids = {t.id for e in result.evidence for t in e.turns}
    assert "D3:1" in turn_ids
    assert 1 <= len(result.evidence) <= 3
    # trace: a model call before every action, with tokens; searches with their keywords and dates
    assert actions(result) == ["llm", "search", "llm", "search", "llm", "note", "llm", "finish"]
    llm = [t for t in result.trace if t.action == "llm"]
    assert all(t.tokens > 0 and t.ms > 0 for t in llm)
    assert all("(usage)" in (t.note or "") for t in llm)
    searches = [t for t in result.trace if t.action == "search"]
    assert [s.keywords for s in searches] == ["Caroline speech school", "mentors family friends"]
    assert searches[0].date_from is None and searches[0].date_to is None
    assert searches[1].date_from == to_epoch_ms("2023-06-01")
    assert searches[1].date_to == to_epoch_ms("2023-06-30") + DAY_MS - 1
    assert searches[1].new_evidence >= 1
    june = [e for e in result.evidence if e.id == noted[1]] or [
        e for e in result.evidence if any(t.id == noted[1] for t in e.turns)
    ]
    assert june and all(to_epoch_ms("2023-06-01") <= e.session_date < to_epoch_ms("2023-07-01") for e in june)
    assert [t.action for t in result.trace if t.action == "finish"] == ["finish"]
    assert steps(result)[-1].note == "enough"

    # what the model was sent
    bodies = fake.bodies
    assert len(bodies) == 4 and fake.pending == 0
    for body in bodies:
        assert body["model"] == "test-model"
        assert body["temperature"] == 0
        assert body["tools"] == TOOLS
        assert body["tool_choice"] == "auto"
        assert body["messages"][0]["role"] == "system"
    system = bodies[0]["messages"][0]["content"]
    assert "Today is 2023-07-10 (Monday)" in system
    assert "not answer" in system or "do not answer" in system
    assert bodies[0]["messages"][1] == {"role": "user", "content": f"Question: {QUESTION}"}
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    # each later request carries the assistant's tool call and the observation for it
    assistant = bodies[1]["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["function"]["name"] == "search"
    observation = bodies[1]["messages"][3]
    assert observation["role"] == "tool" and observation["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "[id " in observation["content"] and "[session session_" in observation["content"]
    for body in bodies[1:]:
        for m in tool_messages(body):
            assert count_tokens(m["content"]) <= 600
    assert "from 2023-06-01 to 2023-06-30" in tool_messages(bodies[2])[1]["content"]
    assert "Kept" in tool_messages(bodies[3])[2]["content"]


def test_options_are_given_as_search_material(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(tool_reply(("finish", {})))
    locomo.search(
        QUESTION, USER, now=NOW, agent=agent_for(fake), options=["7 May 2023", "the week before 9 June"]
    )
    user = fake.bodies[0]["messages"][1]["content"]
    assert user.startswith(f"Question: {QUESTION}")
    assert "- 7 May 2023" in user and "- the week before 9 June" in user


def test_without_now_the_prompt_says_the_date_is_unknown(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(tool_reply(("finish", {})))
    locomo.search(QUESTION, USER, agent=agent_for(fake))
    system = fake.bodies[0]["messages"][0]["content"]
    assert "not known" in system and "Today is" not in system


def test_observation_respects_the_token_budget(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("search", {"keywords": "Caroline Melanie family art painting support"})),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, top_k=10, agent=agent_for(fake, observation_tokens=120))
    content = tool_messages(fake.bodies[1])[0]["content"]
    assert count_tokens(content) <= 120
    search = next(t for t in result.trace if t.action == "search")
    assert search.new_evidence > 1 and search.tokens > 120  # there was more than the budget to show
    assert "not shown" in content or content.endswith("…")


def test_text_reply_without_tool_calls_falls_back(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    # a reply with no usable call never ends a search with empty evidence: the heuristic plan runs
    fake.enqueue(text_reply("The answer is probably June."))
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    assert actions(result)[:2] == ["llm", "fallback"]
    assert "without a usable tool call" in (steps(result)[1].note or "")
    assert "0 tool call(s)" in (steps(result)[0].note or "")
    assert [e.id for e in result.evidence] == heuristic_ids(locomo)
    assert result.evidence


def test_tokens_are_counted_when_the_response_has_no_usage(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(tool_reply(("finish", {}), usage=False))
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    llm = steps(result)[0]
    assert llm.action == "llm" and llm.tokens > count_tokens(QUESTION)
    assert "(counted)" in (llm.note or "")


def test_llm_agent_is_an_agent(fake: FakeOpenAI) -> None:
    agent = agent_for(fake)
    assert isinstance(agent, refind.Agent)
    assert agent.name == "llm"
    assert KEY not in repr(agent)


# ---------------------------------------------------------------------------------------------- retries


def test_close_ends_the_connections_of_the_client_it_made_not_one_passed_in(
    locomo: refind.Memory, fake: FakeOpenAI
) -> None:
    fake.enqueue(tool_reply(("finish", {})))
    with agent_for(fake) as made:
        locomo.search(QUESTION, USER, now=NOW, agent=made)
        assert not made.client.is_closed()
    assert made.client.is_closed()  # the connection to the server is not left for the collector
    given = openai.OpenAI(api_key="unused", base_url=fake.base_url)
    LLMAgent("test-model", client=given).close()
    assert not given.is_closed()  # the caller's client is the caller's to close
    given.close()


def test_retries_on_429_and_500_then_succeeds(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        Failure(429, "slow down", retry_after="0"),
        Failure(500, "boom"),
        tool_reply(("search", {"keywords": "speech school"})),
        Failure(503, "overloaded"),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    assert len(fake.requests) == 5 and fake.pending == 0
    assert actions(result) == ["retry", "retry", "llm", "search", "retry", "llm", "finish"]
    retries = [t.note or "" for t in result.trace if t.action == "retry"]
    assert "RateLimitError (HTTP 429)" in retries[0]
    assert "InternalServerError (HTTP 500)" in retries[1]
    assert "HTTP 503" in retries[2]
    assert "fallback" not in actions(result)
    # one retry layer: openai's own retries are off (its retry-count header stays 0)
    assert {r.headers.get("x-stainless-retry-count") for r in fake.requests} <= {"0", None}


def test_retry_after_is_honoured_up_to_the_max_wait(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(Failure(429, retry_after="0.3"), tool_reply(("finish", {})))
    locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, retry_wait=(0.001, 2.0)))
    first, second = fake.requests
    assert second.at - first.at >= 0.28


def test_timeout_then_success(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(Delay(3.0), tool_reply(("finish", {"reason": "ok"})))
    t0 = time.perf_counter()
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, timeout=0.5))
    assert time.perf_counter() - t0 < 2.5
    assert len(fake.requests) == 2
    # the retried call finished without a search: the heuristic rounds run, so the evidence is never empty
    assert actions(result)[:4] == ["retry", "llm", "finish", "fallback"]
    assert result.evidence
    assert "APITimeoutError" in (steps(result)[0].note or "")


def test_connection_errors_are_retried_then_fall_back(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    agent = LLMAgent(
        base_url=f"http://127.0.0.1:{port}/v1",
        retry_wait=FAST,
        max_retries=2,
        timeout=2.0,
        heuristic_first=False,
    )
    assert agent.client.max_retries == 0
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent)
    assert actions(result)[:3] == ["retry", "retry", "fallback"]
    assert all("APIConnectionError" in (t.note or "") for t in steps(result)[:3])
    assert result.evidence


def test_retries_exhausted_fall_back_to_the_heuristic_plan(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(*[Failure(500, "down")] * 3)
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, max_retries=2))
    assert len(fake.requests) == 3
    assert actions(result)[:3] == ["retry", "retry", "fallback"]
    fallback = steps(result)[2]
    assert "heuristic" in (fallback.note or "") and "HTTP 500" in (fallback.note or "")
    assert "after retries" in (fallback.note or "")
    assert "search" in actions(result) and actions(result)[-1] == "finish"
    # the same evidence as the heuristic agent on its own (the model found nothing before failing)
    assert [e.id for e in result.evidence] == heuristic_ids(locomo)
    assert result.evidence


def test_fallback_keeps_what_the_model_found(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(tool_reply(("search", {"keywords": "necklace grandma Sweden"})), *[Failure(502)] * 2)
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, max_retries=1))
    assert len(fake.requests) == 3
    first = next(t for t in result.trace if t.action == "search")
    assert first.note == "llm" and first.new_evidence >= 1
    assert "fallback" in actions(result)
    after = steps(result)[actions(result).index("fallback") + 1 :]
    assert any(t.action == "search" for t in after)
    turns = {t.id for e in result.evidence for t in e.turns}
    assert {"D4:3", "D3:1"} <= turns  # the model's necklace search and the heuristic's speech search
    # the read-set held across the hand-over: no message is in two blocks
    all_turns = [t.id for e in result.evidence for t in e.turns]
    assert len(all_turns) == len(set(all_turns))


def test_401_falls_back_at_once_and_never_logs_the_key(
    locomo: refind.Memory, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.enqueue(Failure(401, f"Incorrect API key provided: {KEY}"))
    agent = agent_for(fake, max_retries=3)
    with caplog.at_level(logging.DEBUG, logger="refind"):
        result = locomo.search(QUESTION, USER, now=NOW, agent=agent)
        assert len(fake.requests) == 1  # no retry
        assert actions(result)[0] == "fallback"
        assert "HTTP 401" in (steps(result)[0].note or "")
        assert [e.id for e in result.evidence] == heuristic_ids(locomo)
        # a second question goes straight to the fallback, without calling the endpoint again
        again = locomo.search(QUESTION, USER, now=NOW, agent=agent)
        assert len(fake.requests) == 1
        assert actions(again)[0] == "fallback"
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "401" in warnings[0].getMessage()
    assert KEY not in caplog.text
    assert all(KEY not in (t.note or "") for t in [*result.trace, *again.trace])


def test_bad_request_is_not_retried(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(Failure(400, "model does not support tools"))
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    assert len(fake.requests) == 1
    assert actions(result)[0] == "fallback" and "HTTP 400" in (steps(result)[0].note or "")


def test_a_passed_client_is_used_without_its_own_retries(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    client = openai.OpenAI(api_key=KEY, base_url=fake.base_url, max_retries=5, timeout=5.0)
    fake.enqueue(Failure(500), Failure(500))
    agent = LLMAgent("client-model", client=client, retry_wait=FAST, max_retries=1)
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent)
    assert agent.client.max_retries == 0 and client.max_retries == 5
    assert len(fake.requests) == 2  # our one retry, none of openai's five
    assert "fallback" in actions(result)
    assert fake.bodies[0]["model"] == "client-model"
    fake.enqueue(tool_reply(("finish", {})))
    locomo.search(QUESTION, USER, agent=agent)
    assert fake.pending == 0


# ---------------------------------------------------------------------------------------------- corrections


def test_malformed_arguments_get_a_correction_then_recover(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("search", '{"keywords": "speech school"')),  # cut-off JSON
        tool_reply(("search", {"keywords": "speech school"})),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    correction = tool_messages(fake.bodies[1])[-1]["content"]
    assert correction.startswith("Error: the arguments are not valid JSON")
    assert "search(keywords" in correction  # says what is valid
    assert actions(result) == ["llm", "error", "llm", "search", "llm", "finish"]
    assert "fallback" not in actions(result)
    assert result.evidence


def test_unknown_tool_and_impossible_dates_are_corrected(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("answer", {"text": "June"})),
        tool_reply(("search", {"keywords": "speech", "date_from": "2023-02-30"})),
        tool_reply(("search", {"keywords": "speech school"})),
        tool_reply(("search", {"keywords": "speech", "date_from": "2023-06-30", "date_to": "2023-06-01"})),
        tool_reply(
            ("search", {"keywords": "talk students", "date_from": "2023-06-01", "date_to": "2023-06-30"})
        ),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, max_actions=8))
    corrections = [tool_messages(b)[-1]["content"] for b in fake.bodies[1:]]
    assert "no tool named 'answer'" in corrections[0]
    assert "not a real calendar day" in corrections[1]
    assert "Error" not in corrections[2]
    assert "date_from 2023-06-30 is after date_to 2023-06-01" in corrections[3]
    assert actions(result).count("error") == 3
    assert "fallback" not in actions(result) and actions(result)[-1] == "finish"
    assert [t.keywords for t in result.trace if t.action == "search"] == ["speech school", "talk students"]


def test_repeated_malformed_calls_fall_back(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("search", "not json")),
        tool_reply(("search", {"query": "speech"})),  # no keywords
        tool_reply(("search", {"keywords": "speech", "date_to": "June 2023"})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, max_actions=6))
    assert len(fake.requests) == 3 and fake.pending == 0
    assert actions(result)[:6] == ["llm", "error", "llm", "error", "llm", "error"]
    fallback = steps(result)[6]
    assert fallback.action == "fallback" and "malformed" in (fallback.note or "")
    assert "YYYY-MM-DD" in (fallback.note or "")
    assert [e.id for e in result.evidence] == heuristic_ids(locomo)


def test_corrections_are_bounded_in_total(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    bad = tool_reply(("search", {"keywords": ""}))
    good = [tool_reply(("search", {"keywords": w})) for w in ("speech", "school", "students")]
    fake.enqueue(bad, good[0], bad, good[1], bad, good[2], bad)
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, max_actions=20))
    assert len(fake.requests) == 7
    assert actions(result).count("error") == 4
    assert "fallback" in actions(result)


# ---------------------------------------------------------------------------------------------- budget


def test_max_actions_bounds_calls_and_actions(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        tool_reply(("search", {"keywords": "speech"}), ("search", {"keywords": "school"})),
        tool_reply(("search", {"keywords": "students"}), ("search", {"keywords": "talk"})),
        tool_reply(("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, max_actions=3))
    assert len(fake.requests) == 2 and fake.pending == 1
    assert [t.keywords for t in result.trace if t.action == "search"] == ["speech", "school", "students"]
    assert steps(result)[-1].action == "finish" and "budget" in (steps(result)[-1].note or "")


def test_default_budget_is_four_model_calls(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        *[tool_reply(("search", {"keywords": w})) for w in ("speech", "school", "talk", "event", "x")]
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    assert len(fake.requests) == 4 and actions(result).count("search") == 4 and fake.pending == 1
    assert "budget" in (steps(result)[-1].note or "")


# ---------------------------------------------------------------------------------------------- configuration


def test_missing_configuration_is_a_clear_error(fake: FakeOpenAI) -> None:
    with pytest.raises(refind.SetupError, match="REFIND_LLM_API_KEY") as info:
        LLMAgent()
    message = str(info.value)
    assert "REFIND_LLM_BASE_URL" in message and "HeuristicAgent" in message
    assert isinstance(info.value, refind.RefindError)


def test_bad_arguments_are_invalid_input(fake: FakeOpenAI) -> None:
    for kwargs in ({"max_actions": 0}, {"timeout": 0}, {"max_retries": -1}, {"observation_tokens": 5}):
        with pytest.raises(refind.InvalidInput):
            LLMAgent(base_url=fake.base_url, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"max_actions": True}, "max_actions: input should be a valid integer (got True)"),
        ({"max_actions": 2.0}, "max_actions: input should be a valid integer (got 2.0)"),
        ({"reply_tokens": 8}, "reply_tokens: input should be greater than or equal to 16 (got 8)"),
        ({"timeout": "30"}, "timeout: input should be a valid number (got '30')"),
        ({"model_weight": -1}, "model_weight: input should be greater than or equal to 0 (got -1)"),
        ({"retry_wait": (1, -2)}, "retry_wait.1: input should be greater than or equal to 0 (got -2)"),
        ({"retry_wait": (1, 2, 3)}, "retry_wait: tuple should have at most 2 items"),
        ({"heuristic_first": "yes"}, "heuristic_first: input should be a valid boolean (got 'yes')"),
        ({"conversation_tokens": 100}, "conversation_tokens: input should be greater than or equal to 500"),
        ({"unseen_tokens": -1, "max_corrections": -1}, "max_corrections: input should be greater than or"),
    ],
)
def test_a_bad_option_says_which_what_it_got_and_what_is_valid(
    fake: FakeOpenAI, kwargs: dict[str, Any], said: str
) -> None:
    with pytest.raises(refind.InvalidInput) as info:
        LLMAgent("m", base_url=fake.base_url, **kwargs)
    assert said in str(info.value)
    assert str(info.value).startswith("LLMAgent options: ")
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no pydantic trace for users


def test_the_options_model_holds_the_constructors_defaults(fake: FakeOpenAI) -> None:
    """``LLMAgent(...)`` keeps its keyword arguments; each default is the options model's (checked here, so the
    two cannot drift), and the agent's ``options`` are the validated ones with the environment's filled in."""
    signature = inspect.signature(LLMAgent.__init__).parameters
    fields = refind.LLMOptions.model_fields
    assert set(fields) <= set(signature)
    assert set(signature) - set(fields) == {"self", "client", "api_key", "base_url", "fallback"}
    for name, field in fields.items():
        assert signature[name].default == field.default, name
    agent = LLMAgent(base_url=fake.base_url)
    assert agent.options == refind.LLMOptions(
        model="gpt-4o-mini",
        heuristic_first=True,
        observation_tokens=600,
        conversation_tokens=12_000,
        tool_mode="native",
    )
    with pytest.raises(pydantic.ValidationError, match="extra"):
        refind.LLMOptions(max_action=3)  # type: ignore[call-arg]
    with pytest.raises(refind.InvalidInput, match="max_action: unknown option; known: model, max_actions"):
        refind.LLMOptions.checked(max_action=3)
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        agent.options.max_actions = 9  # type: ignore[misc]
    # the same options make the same agent
    again = LLMAgent(base_url=fake.base_url, **agent.options.model_dump())
    assert again.options == agent.options


def test_options_from_the_environment(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFIND_LLM_HEURISTIC_FIRST", "off")
    monkeypatch.setenv("REFIND_LLM_CONVERSATION_TOKENS", "8000")
    monkeypatch.setenv("REFIND_LLM_TOOL_MODE", "Text")
    monkeypatch.setenv("REFIND_LLM_MODEL", "env-model")
    options = LLMAgent(base_url=fake.base_url).options
    assert (options.model, options.heuristic_first, options.conversation_tokens) == ("env-model", False, 8000)
    assert (options.tool_mode, options.observation_tokens) == ("text", 1500)
    # arguments win over the environment
    given = LLMAgent("m", base_url=fake.base_url, heuristic_first=True, tool_mode="json").options
    assert (given.model, given.heuristic_first, given.tool_mode, given.observation_tokens) == (
        "m",
        True,
        "json",
        600,
    )
    monkeypatch.setenv("REFIND_LLM_CONVERSATION_TOKENS", "lots")
    with pytest.raises(refind.InvalidInput, match="REFIND_LLM_CONVERSATION_TOKENS: expected an integer"):
        LLMAgent(base_url=fake.base_url)
    monkeypatch.setenv("REFIND_LLM_CONVERSATION_TOKENS", "100")
    with pytest.raises(
        refind.InvalidInput, match="conversation_tokens: input should be greater than or equal"
    ):
        LLMAgent(base_url=fake.base_url)


def test_configuration_from_the_environment(
    locomo: refind.Memory, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFIND_LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("REFIND_LLM_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_API_KEY", "not-this-one")
    monkeypatch.setenv("REFIND_LLM_MODEL", "env-model")
    fake.enqueue(tool_reply(("finish", {})))
    locomo.search(QUESTION, USER, agent=LLMAgent(retry_wait=FAST))
    assert fake.bodies[0]["model"] == "env-model"
    assert fake.requests[0].headers["authorization"] == "Bearer env-key"


def test_base_url_without_a_key_is_enough(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(tool_reply(("finish", {})))
    agent = LLMAgent(base_url=fake.base_url, retry_wait=FAST)
    assert agent.model == "gpt-4o-mini"
    locomo.search(QUESTION, USER, agent=agent)
    assert len(fake.requests) == 1 and fake.requests[0].path == "/v1/chat/completions"


def test_openai_is_imported_lazily(child_env: dict[str, str]) -> None:
    code = (
        "import sys, refind, refind.tools, refind.agent.llm, refind.agent._tools; "
        "assert 'openai' not in sys.modules, 'openai imported at import time'; "
        "assert 'tenacity' not in sys.modules, 'tenacity imported at import time'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_request_bodies_are_json_round_trippable(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    """The conversation the agent sends is plain JSON (no client objects leak into it)."""
    fake.enqueue(tool_reply(("search", {"keywords": "speech"})), tool_reply(("finish", {})))
    locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    last = fake.bodies[-1]
    assert json.loads(json.dumps(last)) == last
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "tool"]


# ---------------------------------------------------------------------------------------------- budgets


def test_without_notes_the_evidence_is_what_the_model_saw(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    """Blocks an observation left out for length are not handed on unseen: the evidence is the turns the
    model was shown, plus at most ``unseen_tokens`` of the rest."""
    fake.enqueue(
        tool_reply(("search", {"keywords": "Caroline Melanie family art painting support kids"})),
        tool_reply(("finish", {})),
    )
    agent = agent_for(fake, observation_tokens=300, unseen_tokens=0)
    result = locomo.search(QUESTION, USER, now=NOW, top_k=10, agent=agent)
    observation = tool_messages(fake.bodies[1])[0]["content"]
    assert "not shown for length" in observation  # there was more than the model saw
    assert result.evidence

    def spans(ids: list[str]) -> list[tuple[str, int, int]]:
        return [(i.rpartition("#")[0], *map(int, i.rpartition("#")[2].split("-"))) for i in ids]  # type: ignore[misc]

    shown = spans(block_ids(observation))
    left_out = spans(re.findall(r"(session_\d+#\d+-\d+)", observation.rpartition("not shown for length")[2]))
    assert shown and left_out
    for b in result.evidence:
        for t in b.turns:
            assert any(s == b.session_id and lo <= t.turn <= hi for s, lo, hi in shown), t.id
            assert not any(s == b.session_id and lo <= t.turn <= hi for s, lo, hi in left_out), t.id
    assert count_tokens(result.to_text()) <= 300
    fake.enqueue(
        tool_reply(("search", {"keywords": "Caroline Melanie family art painting support kids"})),
        tool_reply(("finish", {})),
    )
    roomier = locomo.search(
        QUESTION, USER, now=NOW, top_k=10, agent=agent_for(fake, observation_tokens=300, unseen_tokens=200)
    )
    extra = count_tokens(roomier.to_text()) - count_tokens(result.to_text())
    assert 0 < extra <= 200 + 20  # the documented remainder, packed


def test_the_conversation_stays_within_its_token_budget(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    words = ["Caroline speech school", "Melanie painting", "adoption agency", "pottery class", "camping"]
    fake.enqueue(*[tool_reply(("search", {"keywords": w})) for w in words])
    agent = agent_for(fake, observation_tokens=600, conversation_tokens=1500, max_actions=5)
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent)
    assert len(fake.bodies) == 5
    for body in fake.bodies:
        size = sum(count_tokens(json.dumps(m, ensure_ascii=False)) for m in body["messages"])
        assert size <= 1500
    last = tool_messages(fake.bodies[-1])
    assert last[0]["content"].startswith("[earlier observation trimmed")  # the oldest went first
    assert not last[-1]["content"].startswith("[earlier observation trimmed")
    assert result.evidence
    with pytest.raises(refind.InvalidInput):
        agent_for(fake, conversation_tokens=10)


# ---------------------------------------------------------------------------------------------- open models


def test_a_call_written_as_text_is_parsed_and_run(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(
        text_reply('```json\n{"name": "search", "arguments": {"keywords": "Caroline school speech"}}\n```'),
        text_reply('<tool_call>{"name": "finish", "arguments": {}}</tool_call>'),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    assert actions(result) == ["llm", "search", "llm", "finish"]
    assert "1 tool call(s) written as text" in (steps(result)[0].note or "")
    assert steps(result)[1].keywords == "Caroline school speech"
    assert result.evidence
    # the call goes back to the model as a tool call of its own, answered by a tool message
    second = fake.requests[1].body["messages"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "search" and second[2]["content"] is None
    assert second[3]["role"] == "tool" and second[3]["tool_call_id"] == "text-call-1"


def test_a_date_filter_against_the_questions_cue_is_corrected(
    locomo: refind.Memory, fake: FakeOpenAI
) -> None:
    question = "What did Caroline do last month?"  # now 2023-07-10: June 2023
    fake.enqueue(
        tool_reply(("search", {"keywords": "Caroline", "date_from": "2022-01-01", "date_to": "2022-02-01"})),
        tool_reply(("finish", {})),
    )
    result = locomo.search(question, USER, now=NOW, agent=agent_for(fake))
    assert actions(result)[:3] == ["llm", "dates", "search"]
    assert "corrected" in (steps(result)[1].note or "")
    search = steps(result)[2]
    assert (search.date_from, search.date_to) == (to_epoch_ms("2023-06-01"), to_epoch_ms("2023-07-01") - 1)


def test_a_5xx_format_error_falls_back(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    # llama.cpp answers 500 when the model's output does not parse as its tool-call format
    failure = Failure(500, "model produced output that does not match the expected peg-native format")
    fake.enqueue(failure, failure)
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake, max_retries=1))
    assert actions(result)[:2] == ["retry", "fallback"]
    assert "peg-native" in (steps(result)[1].note or "")
    assert [e.id for e in result.evidence] == heuristic_ids(locomo)


def test_searches_that_find_nothing_fall_back(locomo: refind.Memory, fake: FakeOpenAI) -> None:
    fake.enqueue(tool_reply(("search", {"keywords": "zzyzx qqxjv"})), tool_reply(("finish", {})))
    result = locomo.search(QUESTION, USER, now=NOW, agent=agent_for(fake))
    assert "fallback" in actions(result)
    assert "found no evidence" in (next(t for t in steps(result) if t.action == "fallback").note or "")
    assert result.evidence


# ---------------------------------------------------------------------------------------------- heuristic first


def seeded(fake: FakeOpenAI, **kwargs: Any) -> LLMAgent:
    return agent_for(fake, heuristic_first=True, **kwargs)


def test_heuristic_first_is_the_default(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    assert LLMAgent("m", base_url=fake.base_url).heuristic_first is True
    monkeypatch.setenv("REFIND_LLM_HEURISTIC_FIRST", "false")
    assert LLMAgent("m", base_url=fake.base_url).heuristic_first is False


def test_heuristic_first_shows_the_rounds_then_adds_the_models(
    locomo: refind.Memory, fake: FakeOpenAI
) -> None:
    heuristic = locomo.search(QUESTION, USER, now=NOW, agent=HeuristicAgent())
    fake.enqueue(
        tool_reply(("search", {"keywords": "Caroline talk students"})),
        tool_reply(("note", {"ids": [heuristic.evidence[0].id]}), ("finish", {})),
    )
    result = locomo.search(QUESTION, USER, now=NOW, agent=seeded(fake))
    heuristic_rounds = [t.keywords for t in heuristic.trace if t.action == "search"]
    searches = [t for t in steps(result) if t.action == "search"]
    assert [t.keywords for t in searches[: len(heuristic_rounds)]] == heuristic_rounds
    assert searches[-1].keywords == "Caroline talk students" and searches[-1].note == "llm"
    # the model saw the rounds' evidence with usable ids, and what was searched
    first = fake.requests[0].body["messages"][1]["content"]
    assert "Searches already run for you" in first
    shown = re.findall(r"^\[id ([^\]\s]+)\]", first, flags=re.MULTILINE)
    assert shown and {i.split("#")[0] for i in shown} <= {e.session_id for e in heuristic.evidence}
    assert all(repr(k) in first for k in heuristic_rounds)
    # every heuristic turn is kept (notes do not filter), the heuristic ranking first
    turns = {t.id for e in result.evidence for t in e.turns}
    assert {t.id for e in heuristic.evidence for t in e.turns} <= turns
    assert not any(e.noted for e in result.evidence)
    assert "heuristic first keeps all evidence" in (
        next(t for t in steps(result) if t.action == "note" and t.note and "kept with" in t.note).note or ""
    )
    # the model's round counts for nothing in the session ranking (model_weight 0): the order is the heuristic's
    ranked = [s for s in dict.fromkeys(e.session_id for e in result.by_relevance())]
    before = [s for s in dict.fromkeys(e.session_id for e in heuristic.by_relevance())]
    assert [s for s in ranked if s in before] == before


@pytest.mark.parametrize(
    "script",
    [
        [text_reply("The answer is June.")],
        [Failure(500, "model produced output that does not match the expected peg-native format")] * 2,
        [tool_reply(("search", "{not json"))] * 4,
    ],
    ids=["no-call", "format-error", "malformed"],
)
def test_heuristic_first_keeps_its_evidence_when_the_model_fails(
    locomo: refind.Memory, fake: FakeOpenAI, script: list[Any]
) -> None:
    fake.enqueue(*script)
    result = locomo.search(QUESTION, USER, now=NOW, agent=seeded(fake, max_retries=1))
    assert [e.id for e in result.evidence] == heuristic_ids(locomo)
    fallback = next(t for t in steps(result) if t.action == "fallback")
    assert "heuristic rounds' evidence stands" in (fallback.note or "")
    assert actions(result)[-1] == "finish"


@pytest.mark.parametrize("breadth", [False, True], ids=["lookup", "model-asks-breadth"])
def test_heuristic_first_adds_to_what_a_budget_shows_never_displaces_it(
    locomo: refind.Memory, fake: FakeOpenAI, breadth: bool
) -> None:
    """On the real model the added rounds' strong hits took budget from the heuristic evidence (LoCoMo, 30
    questions: packed @2k 0.758 heuristic, 0.742 with the model); what a budget shows of the heuristic
    evidence is now shown first, whatever the model adds, also when the model switches the question to the
    breadth shape (the floor is packed as the shape it was found under)."""
    heuristic = locomo.search(QUESTION, USER, now=NOW, agent=HeuristicAgent())
    first: dict[str, Any] = {"keywords": "Caroline Melanie painting LGBTQ support group school"}
    if breadth:
        first["breadth"] = True
    script = (
        tool_reply(("search", first)),
        tool_reply(("search", {"keywords": "Caroline Melanie kids camping beach"})),
        tool_reply(("finish", {})),
    )
    fake.enqueue(*script)
    result = locomo.search(QUESTION, USER, now=NOW, agent=seeded(fake))
    assert sum(1 for t in steps(result) if t.action == "search" and t.note == "llm") == 2
    assert result.shape == ("breadth" if breadth else heuristic.shape)
    added = {t.id for e in result.evidence for t in e.turns} - {
        t.id for e in heuristic.evidence for t in e.turns
    }
    assert added, "the model's rounds added nothing: the test shows nothing"
    for budget in (300, 600, 1000, 2000, 4000):
        floor = {t.id for e in heuristic.packed(budget).evidence for t in e.turns}
        packed = result.packed(budget)
        assert floor <= {t.id for e in packed.evidence for t in e.turns}, budget
        assert count_tokens(packed.to_text()) <= budget
    # Memory.search(max_tokens=B) packs the same way
    fake.enqueue(*script)
    direct = locomo.search(QUESTION, USER, now=NOW, agent=seeded(fake), max_tokens=1000)
    assert [e.id for e in direct.evidence] == [e.id for e in result.packed(1000).evidence]
    assert result.model_dump().keys() == heuristic.model_dump().keys()  # the floor is not serialized
