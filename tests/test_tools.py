"""refind.tools: the OpenAI schemas and the dispatcher, as a user's own agent would use them (real LoCoMo
data in the reference engine and in Lucene, and for the tool loop the real openai client against the fake
server)."""

from __future__ import annotations

import json
import re
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refind
from refind.models import to_epoch_ms
from refind.tokens import count_tokens
from refind.tools import (
    FINISH_TOOL,
    NOTE_TOOL,
    SEARCH_TOOL,
    TOOL_NAMES,
    TOOLS,
    ToolDispatcher,
    openai_tools,
)
from tests.fake_openai import FakeOpenAI, tool_reply

USER = "conv-26"
DAY_MS = 86_400_000


@pytest.fixture
def tools(locomo: refind.Memory) -> ToolDispatcher:
    return ToolDispatcher(locomo, USER, now="2023-07-10")


def ids_in(observation: str) -> list[str]:
    return re.findall(r"^\[id ([^\]\s]+)\]", observation, flags=re.MULTILINE)


# ---------------------------------------------------------------------------------------------- schemas


def test_schemas_are_openai_function_tools() -> None:
    assert TOOLS == [SEARCH_TOOL, NOTE_TOOL, FINISH_TOOL]
    assert TOOL_NAMES == ("search", "note", "finish")
    for tool in TOOLS:
        assert tool["type"] == "function"
        fn = tool["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert len(fn["description"]) > 40
        params = fn["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params.get("required", [])) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["description"]
    search = SEARCH_TOOL["function"]["parameters"]
    assert search["required"] == ["keywords"]
    assert {"keywords", "date_from", "date_to", "breadth"} == set(search["properties"])
    assert search["properties"]["breadth"]["type"] == "boolean"
    assert "YYYY-MM-DD" in search["properties"]["date_from"]["description"]
    assert "inclusive" in search["properties"]["date_to"]["description"]
    note = NOTE_TOOL["function"]["parameters"]
    assert note["required"] == ["ids"] and note["properties"]["ids"]["items"] == {"type": "string"}
    assert "required" not in FINISH_TOOL["function"]["parameters"]
    assert json.loads(json.dumps(TOOLS)) == TOOLS


def test_openai_tools_is_a_deep_copy() -> None:
    copy = openai_tools()
    assert copy == TOOLS
    copy[0]["function"]["strict"] = True
    copy[0]["function"]["parameters"]["properties"]["keywords"]["description"] = "changed"
    assert "strict" not in TOOLS[0]["function"]
    assert SEARCH_TOOL["function"]["parameters"]["properties"]["keywords"]["description"] != "changed"


def test_public_module_exports() -> None:
    import refind.tools as public

    assert sorted(public.__all__) == public.__all__
    for name in public.__all__:
        assert getattr(public, name) is not None


# ---------------------------------------------------------------------------------------------- dispatcher


def test_search_shows_blocks_with_ids_and_skips_what_was_read(tools: ToolDispatcher) -> None:
    first = tools.call("search", {"keywords": "LGBTQ support group"})
    shown = ids_in(first)
    assert shown and "[session session_" in first
    assert any("support group" in t.content for b in tools.session.blocks for t in b.turns if t.matched)
    read = set(tools.session.read_ids)
    second = tools.call("search", '{"keywords": "LGBTQ support group"}')
    # the repeat returns only unread messages: new blocks or extensions, never a first-round block as is
    for block_id in ids_in(second):
        assert block_id not in shown
    new_turns = {t.id for b in tools.session.blocks for t in b.turns} - read
    assert new_turns or second.startswith("No new messages")
    assert tools.session.rounds == 2
    assert [t.note for t in tools.session.trace] == ["tool", "tool"]


def test_breadth_search_takes_more_short_places_and_says_so(locomo: refind.Memory) -> None:
    plain = ToolDispatcher(locomo, USER, now="2023-07-10")
    plain.call("search", {"keywords": "painting"})
    wide = ToolDispatcher(locomo, USER, now="2023-07-10")
    wide.call("search", {"keywords": "painting", "breadth": True})
    hits = [sum(t.matched for b in d.session.blocks for t in b.turns) for d in (plain, wide)]
    assert hits[1] > hits[0]
    assert all(t.matched for b in wide.session.blocks for t in b.turns)  # no surrounding turns
    result = wide.result()
    assert result.shape == "breadth"
    assert any(t.action == "shape" and t.note and "search tool" in t.note for t in result.trace)
    assert plain.result().shape == "lookup"
    assert wide.call("search", {"keywords": "painting", "breadth": "yes"}).startswith("Error")


def test_breadth_asked_after_the_heuristic_rounds_keeps_all_they_found(locomo: refind.Memory) -> None:
    # an LLM plan starts from the heuristic agent's rounds: a later breadth search drops near duplicates
    # among its own hits only, so every turn the heuristic rounds found is still handed on
    question = "What did Caroline say about the LGBTQ support group?"
    tools = ToolDispatcher(locomo, USER, now="2023-07-10", question=question)
    refind.HeuristicAgent().run_rounds(tools.session)
    before = {t.id for e in tools.result().evidence for t in e.turns}
    tools.call("search", {"keywords": "support group LGBTQ", "breadth": True})
    tools.call("search", {"keywords": "support group Caroline", "breadth": True})
    after = {t.id for e in tools.result().evidence for t in e.turns}
    assert before and before <= after
    assert tools.result().shape == "breadth"


def test_search_with_dates_filters_inclusive_days(tools: ToolDispatcher) -> None:
    text = tools.call(
        "search", {"keywords": "Caroline Melanie", "date_from": "2023-06-09", "date_to": "2023-06-27"}
    )
    assert "from 2023-06-09 to 2023-06-27" in text
    search = tools.session.trace[-1]
    assert search.date_from == to_epoch_ms("2023-06-09")
    assert search.date_to == to_epoch_ms("2023-06-27") + DAY_MS - 1
    assert tools.session.blocks
    # sessions 3 (9 June, 7:55 pm) and 4 (27 June, 10:37 am): both ends of the range are whole days
    assert {b.session_id for b in tools.session.blocks} == {"session_3", "session_4"}


def test_open_ended_date_ranges(tools: ToolDispatcher) -> None:
    text = tools.call("search", {"keywords": "Caroline", "date_from": "2023-10-01"})
    assert "from 2023-10-01 to now" in text
    assert all(b.session_date >= to_epoch_ms("2023-10-01") for b in tools.session.blocks)
    text = tools.call("search", {"keywords": "Melanie", "date_to": "2023-05-31", "date_from": ""})
    assert "from the start to 2023-05-31" in text
    search = tools.session.trace[-1]
    assert search.date_from is None and search.date_to == to_epoch_ms("2023-05-31") + DAY_MS - 1


def test_nothing_new_says_what_to_try(tools: ToolDispatcher) -> None:
    text = tools.call("search", {"keywords": "zeppelin quasar"})
    assert text.startswith("No new messages for search 'zeppelin quasar'")
    assert "different words" in text


def test_long_or_odd_keywords_stay_within_budget(locomo: refind.Memory) -> None:
    tools = ToolDispatcher(locomo, USER, observation_tokens=100)
    words = " ".join(f"word{i}" for i in range(3000))
    text = tools.call("search", {"keywords": words})
    assert count_tokens(text) <= 100 and "…" in text
    text = tools.call("search", {"keywords": 'AND OR NOT ( ) " * ? ~ ^ [ ] { } : \\ / Caroline'})
    assert count_tokens(text) <= 100 and ids_in(text)  # query syntax is just text
    error = tools.call("search", {"keywords": "x", "date_from": "y" * 5000})
    assert error.startswith("Error:") and count_tokens(error) < 150


def test_bad_arguments_return_error_texts(tools: ToolDispatcher) -> None:
    cases: list[tuple[str, Any, str]] = [
        ("lookup", {"keywords": "x"}, "there is no tool named 'lookup'"),
        ("search", '{"keywords": "x"', "not valid JSON"),
        ("search", "[1, 2]", "must be a JSON object"),
        ("search", {}, "search needs 'keywords'"),
        ("search", {"keywords": "   "}, "search needs 'keywords'"),
        ("search", {"keywords": 42}, "search needs 'keywords'"),
        ("search", {"keywords": "x", "date_from": "May 2023"}, "not a date in the form YYYY-MM-DD"),
        ("search", {"keywords": "x", "date_from": "2023-13-01"}, "not a real calendar day"),
        ("search", {"keywords": "x", "date_to": "2023-02-29"}, "not a real calendar day"),
        ("search", {"keywords": "x", "date_to": 20230501}, "must be a string 'YYYY-MM-DD'"),
        ("search", {"keywords": "x", "date_from": "1800-01-01"}, "outside the years 1900-2199"),
        (
            "search",
            {"keywords": "x", "date_from": "2023-06-02", "date_to": "2023-06-01"},
            "date_from 2023-06-02 is after date_to 2023-06-01",
        ),
        ("note", {}, "note needs 'ids'"),
        ("note", {"ids": []}, "note needs 'ids'"),
        ("note", {"ids": [1, 2]}, "note needs 'ids'"),
        ("note", "nope", "not valid JSON"),
    ]
    for name, arguments, expected in cases:
        outcome = tools.execute(name, arguments)
        assert outcome.error is not None, (name, arguments)
        assert expected in outcome.content, (name, arguments, outcome.content)
        assert outcome.content.startswith("Error: ") and "Nothing was run" in outcome.content
        assert "search(keywords: string" in outcome.content  # what is valid
        assert tools.call(name, arguments) == outcome.content
    assert tools.session.trace == [] and tools.session.blocks == []  # nothing ran


def test_lenient_forms_are_accepted(tools: ToolDispatcher) -> None:
    assert tools.execute("search", {"keywords": ["support", "group"]}).error is None
    assert tools.session.trace[-1].keywords == "support group"
    assert (
        tools.execute("search", {"keywords": "adoption", "date_from": "2023-01-01T00:00:00Z"}).error is None
    )
    assert tools.execute("search", {"keywords": "x", "date_from": None, "date_to": None}).error is None
    block = tools.session.blocks[0]
    assert tools.execute("note", {"ids": block.id}).noted == [block.id]  # one id as a string
    outcome = tools.execute("finish", "")  # empty arguments for a call without parameters
    assert outcome.error is None and outcome.finished


def test_note_by_block_id_or_turn_id_and_unknown_ids(tools: ToolDispatcher) -> None:
    assert "nothing has been found yet" in tools.call("note", {"ids": ["session_1#0-3"]})
    shown = ids_in(tools.call("search", {"keywords": "adoption agencies"}))
    assert shown
    text = tools.call("note", {"ids": [shown[0], "no-such-id"], "reason": "adoption"})
    assert f"Kept 1 block(s): {shown[0]}" in text
    assert "Unknown id(s): no-such-id" in text and shown[0] in text.split("found so far:")[1]
    assert tools.session.trace[-1].action == "note" and tools.session.trace[-1].note == "adoption"
    turn = next(t.id for b in tools.session.blocks if b.id != shown[0] for t in b.turns)
    assert "Kept 1 block(s)" in tools.call("note", {"ids": [turn]})
    result = tools.result()
    assert len(result.evidence) == 2 and all(e.noted for e in result.evidence)


def test_ids_shown_before_a_block_grew_still_work(tools: ToolDispatcher) -> None:
    """A later round can extend a block (new id); the id the model saw must still note it."""
    seen: list[str] = []
    for _ in range(3):
        june = {"keywords": "mentors family friends", "date_from": "2023-06-01", "date_to": "2023-06-30"}
        seen += ids_in(tools.call("search", june))
    current = {b.id for b in tools.session.blocks}
    stale = [i for i in seen if i not in current]
    assert stale, "the repeated search should have extended a block shown before"
    text = tools.call("note", {"ids": stale})
    assert "Unknown" not in text and "Kept" in text
    kept = {b.id for b in tools.session.blocks if b.noted}
    assert kept and kept <= current


def test_grown_blocks_do_not_repeat_turns(tools: ToolDispatcher) -> None:
    shown_turns: list[str] = []
    for words in ("mentors family friends", "family friends mentors support", "family motivate love happy"):
        text = tools.call("search", {"keywords": words, "date_from": "2023-06-01", "date_to": "2023-06-30"})
        shown_turns += re.findall(r"^\*? ?(?:Caroline|Melanie): (.{40})", text, flags=re.MULTILINE)
    assert len(shown_turns) == len(set(shown_turns))


def test_observation_budget(locomo: refind.Memory) -> None:
    for budget in (50, 80, 200, 400):
        tools = ToolDispatcher(locomo, USER, top_k=10, observation_tokens=budget)
        text = tools.call("search", {"keywords": "Caroline Melanie painting art family kids"})
        assert count_tokens(text) <= budget
        assert re.match(r"\d+ new evidence block\(s\) for search ", text)
        assert ids_in(text)  # at least the best block's id line survives the cut


def test_finish_and_result(tools: ToolDispatcher) -> None:
    assert tools.result().evidence == []
    tools.call("search", {"keywords": "adoption"})
    outcome = tools.execute("finish", {"reason": "enough"})
    assert outcome.finished and tools.session.finished
    assert outcome.content.startswith("Finished with ")
    result = tools.result(max_tokens=200)
    assert result.user_id == USER and result.agent == "tool" and result.evidence
    assert count_tokens(result.to_text()) <= 200
    assert [t.action for t in result.trace][:2] == ["search", "finish"]


def test_constructor_validates(locomo: refind.Memory) -> None:
    with pytest.raises(refind.InvalidInput, match="user_id"):
        ToolDispatcher(locomo, "")
    with pytest.raises(refind.InvalidInput, match="now"):
        ToolDispatcher(locomo, USER, now="not a date at all")
    with pytest.raises(refind.InvalidInput, match="top_k"):
        ToolDispatcher(locomo, USER, top_k=0)
    with pytest.raises(refind.InvalidInput, match="observation_tokens"):
        ToolDispatcher(locomo, USER, observation_tokens=10)
    tools = ToolDispatcher(locomo, USER, now=1688947200000, top_k=2, window=0, question="q?")
    assert tools.session.now == to_epoch_ms("2023-07-10")
    assert tools.session.top_k == 2 and tools.session.window == 0 and tools.session.question == "q?"
    tools.call("search", {"keywords": "Caroline"})
    assert all(len(b.turns) == 1 for b in tools.session.blocks)


def test_other_users_are_invisible(locomo: refind.Memory) -> None:
    tools = ToolDispatcher(locomo, "someone-else")
    assert tools.call("search", {"keywords": "Caroline"}).startswith("No new messages")


def test_handle_accepts_dicts(tools: ToolDispatcher) -> None:
    calls = [
        {
            "id": "a",
            "type": "function",
            "function": {"name": "search", "arguments": '{"keywords": "adoption"}'},
        },
        {"id": "b", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
        {"id": "c", "type": "function", "function": {"name": "finish", "arguments": "{}"}},
    ]
    messages = tools.handle(calls)
    assert [m["tool_call_id"] for m in messages] == ["a", "b", "c"]
    assert all(m["role"] == "tool" for m in messages)
    assert "[id " in messages[0]["content"] and messages[1]["content"].startswith("Error:")
    assert tools.session.finished
    assert tools.handle(None) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["search", "note", "finish", "other", ""]),
    arguments=st.one_of(
        st.text(max_size=40),
        st.dictionaries(
            st.sampled_from(["keywords", "date_from", "date_to", "ids", "reason", "x"]),
            st.one_of(
                st.none(), st.integers(), st.text(max_size=12), st.lists(st.text(max_size=6), max_size=3)
            ),
            max_size=4,
        ),
    ),
)
def test_dispatcher_never_raises(locomo: refind.Memory, name: str, arguments: Any) -> None:
    tools = ToolDispatcher(locomo, USER, observation_tokens=100)
    outcome = tools.execute(name, arguments)
    assert isinstance(outcome.content, str) and outcome.content
    if outcome.error is None and name == "search":
        assert count_tokens(outcome.content) <= 100


# ---------------------------------------------------------------------------------------------- a user's loop


def test_a_hand_written_tool_loop_with_the_openai_client(
    locomo: refind.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the module docstring shows: the user's own loop, real client, the dispatcher doing the work."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    def note_first_shown(body: dict[str, Any]) -> Any:
        observation = next(m for m in body["messages"] if m["role"] == "tool")["content"]
        return tool_reply(("note", {"ids": ids_in(observation)[:1]}))

    with FakeOpenAI() as fake:
        fake.enqueue(
            tool_reply(
                ("search", {"keywords": "charity race"}), ("search", {"keywords": "bad", "date_to": "x"})
            ),
            note_first_shown,
            tool_reply(("finish", {"reason": "found the race"})),
        )
        client = openai.OpenAI(api_key="sk-user", base_url=fake.base_url, max_retries=0, timeout=5.0)
        tools = ToolDispatcher(locomo, USER, now="2023-07-10")
        messages: list[Any] = [{"role": "user", "content": "When did Melanie run a charity race?"}]
        for _ in range(5):
            reply = client.chat.completions.create(
                model="user-model", messages=messages, tools=openai_tools()
            )
            msg = reply.choices[0].message
            if not msg.tool_calls:
                break
            messages.append(msg)
            messages.extend(tools.handle(msg.tool_calls))
            if tools.session.finished:
                break
        assert fake.pending == 0 and fake.unexpected == 0
        second = fake.bodies[1]["messages"]
        assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
        assert second[2]["tool_call_id"] == second[1]["tool_calls"][0]["id"]
        assert "[id " in second[2]["content"]
        assert second[3]["content"].startswith("Error: date_to 'x' is not a date")
    result = tools.result()
    assert len(result.evidence) == 1 and result.evidence[0].noted
    assert any("charity race" in t.content.lower() for t in result.evidence[0].turns)
    finish = [t for t in result.trace if t.action == "finish"]
    assert len(finish) == 1 and finish[0].note == "found the race"
