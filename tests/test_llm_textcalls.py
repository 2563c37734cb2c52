"""Tool calls written as text (refind.agent.textcalls) and the date filters checked against the question."""

from __future__ import annotations

import json

import pytest

from refind.agent.textcalls import check_dates, text_tool_calls
from refind.models import to_epoch_ms
from refind.query import read_question
from refind.query.timeparse import TimeRange

NOW = to_epoch_ms("2024-06-20")


def calls(text: str) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in text_tool_calls(text)]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"name": "search", "arguments": {"keywords": "hiking trip"}}\n```',
        'Let me search.\n```\n{"name": "search", "arguments": {"keywords": "hiking trip"}}\n```\nDone.',
        '<tool_call>\n{"name": "search", "arguments": {"keywords": "hiking trip"}}\n</tool_call>',
        '<tools>{"name": "search", "arguments": {"keywords": "hiking trip"}}</tools>',
        '{"name": "search", "arguments": {"keywords": "hiking trip"}}',
        'I will call {"name": "search", "arguments": {"keywords": "hiking trip"}} now',
        '{"name": "search", "parameters": {"keywords": "hiking trip"}}',
        '{"name": "search", "arguments": "{\\"keywords\\": \\"hiking trip\\"}"}',
        '{"tool_call": {"name": "search", "arguments": {"keywords": "hiking trip"}}}',
        '{"function": {"name": "search", "arguments": {"keywords": "hiking trip"}}}',
        '[{"name": "search", "arguments": {"keywords": "hiking trip"}}]',
        '<tool_call>\n{"name": "search", "arguments": {"keywords": "hiking trip"}}',  # unclosed tag
    ],
)
def test_the_shapes_open_models_write(text: str) -> None:
    assert calls(text) == [("search", {"keywords": "hiking trip"})]


def test_several_calls_in_order_with_ids() -> None:
    text = (
        '<tool_call>{"name": "search", "arguments": {"keywords": "a"}}</tool_call>\n'
        '<tool_call>{"name": "note", "arguments": {"ids": ["s1#0-2"]}}</tool_call>'
    )
    found = text_tool_calls(text)
    assert [(c.id, c.name) for c in found] == [("text-call-1", "search"), ("text-call-2", "note")]
    assert found[1].as_dict() == {
        "id": "text-call-2",
        "type": "function",
        "function": {"name": "note", "arguments": '{"ids": ["s1#0-2"]}'},
    }


def test_a_call_without_arguments_is_an_empty_object() -> None:
    assert calls('{"name": "finish"}') == [("finish", {})]


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "The answer is June.",
        '{"answer": "June"}',
        '{"name": 3}',
        "```json\n{not json}\n```",
        "[1, 2]",
    ],
)
def test_no_usable_call(text: str | None) -> None:
    assert text_tool_calls(text) == []


def test_the_work_is_bounded() -> None:
    many = " ".join('{"name": "finish", "arguments": {}}' for _ in range(100))
    assert len(text_tool_calls(many)) == 8
    assert text_tool_calls("{" * 50_000) == []


def cue(question: str, now: int | None) -> TimeRange | None:
    """The question's time cue, as its reading gives it to the LLM agent."""
    return read_question(question, now=now).time_cue


def search_args(**dates: str) -> str:
    return json.dumps({"keywords": "concert", **dates})


def test_dates_outside_the_questions_period_are_corrected() -> None:
    # the model's choices seen on a real model for "last month" with now = 2024-06-20
    question = "What concert did I go to last month?"
    for wrong in ({"date_from": "2024-06-15", "date_to": "2024-06-20"}, {"date_from": "2023-01-01"}):
        fixed, note = check_dates(search_args(**wrong), cue(question, NOW), NOW)
        assert json.loads(fixed) == {
            "keywords": "concert",
            "date_from": "2024-05-01",
            "date_to": "2024-05-31",
        }
        assert note is not None and "last month" in note and "corrected" in note


def test_dates_inside_the_period_stand() -> None:
    args = search_args(date_from="2024-05-10", date_to="2024-05-20")
    assert check_dates(args, cue("What concert did I go to last month?", NOW), NOW) == (args, None)


def test_without_a_cue_bounds_after_now_are_dropped() -> None:
    question = "What concert did I go to?"
    fixed, note = check_dates(
        search_args(date_from="2024-01-01", date_to="2024-12-31"), cue(question, NOW), NOW
    )
    assert json.loads(fixed) == {"keywords": "concert", "date_from": "2024-01-01"}
    assert note is not None and "date_to dropped" in note
    fixed, note = check_dates(search_args(date_from="2025-01-01"), cue(question, NOW), NOW)
    assert json.loads(fixed) == {"keywords": "concert"}
    assert note is not None and "2024-06-20" in note
    args = search_args(date_from="2024-01-01", date_to="2024-03-01")
    assert check_dates(args, cue(question, NOW), NOW) == (args, None)


def test_without_now_or_dates_nothing_changes() -> None:
    args = search_args(date_from="2031-01-01")
    assert check_dates(args, cue("What concert did I go to last month?", None), None) == (args, None)
    assert check_dates(search_args(), cue("last month?", NOW), NOW) == (search_args(), None)
    assert check_dates("{not json", cue("last month?", NOW), NOW) == ("{not json", None)
    as_dict = {"keywords": "x", "date_from": "2023-01-01"}
    fixed, note = check_dates(as_dict, cue("What did I do last month?", NOW), NOW)
    assert fixed == {"keywords": "x", "date_from": "2024-05-01", "date_to": "2024-05-31"} and note
