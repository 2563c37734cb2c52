"""Message validation and timestamp normalization."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

import refind
from refind.models import to_epoch_ms

T = 1_683_554_160_000  # 2023-05-08T13:56:00Z


@pytest.mark.parametrize(
    "value",
    [
        T,
        float(T),
        str(T),
        "2023-05-08T13:56:00Z",
        "2023-05-08T15:56:00+02:00",
        "2023-05-08 13:56",
        "1:56 pm on 8 May, 2023",
        "2023/05/08 (Mon) 13:56",
        datetime(2023, 5, 8, 13, 56),
        datetime(2023, 5, 8, 9, 56, tzinfo=timezone(timedelta(hours=-4))),
    ],
)
def test_timestamps_normalize_to_epoch_ms_utc(value: object) -> None:
    assert to_epoch_ms(value) == T  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["", "not a date at all", True, 1_683_554_160, [1]])
def test_bad_timestamps_are_refused(value: object) -> None:
    with pytest.raises(ValueError):
        to_epoch_ms(value)  # type: ignore[arg-type]


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)))
def test_iso_round_trip(dt: datetime) -> None:
    assert to_epoch_ms(dt.isoformat()) == int(dt.timestamp() * 1000)


def test_validation_errors_name_the_field(mem: refind.Memory) -> None:
    cases = [
        ([{"role": "user"}], r"messages\[0\]\.content"),
        ([{"role": "user", "content": "ok"}, {"role": "", "content": "x"}], r"messages\[1\]\.role"),
        ([{"role": "user", "content": "   "}], r"messages\[0\]\.content: .*blank"),
        ([{"role": "user", "content": "x", "timestamp": "soon-ish?"}], r"messages\[0\]\.timestamp"),
        ([{"role": "user", "content": 5}], r"messages\[0\]\.content"),
        ([], r"messages: at least one"),
        ("just a string", r"messages: expected a list"),
    ]
    for messages, pattern in cases:
        with pytest.raises(refind.InvalidInput, match=pattern):
            mem.add("u", "s", messages)  # type: ignore[arg-type]
    with pytest.raises(refind.InvalidInput, match="user_id"):
        mem.add("", "s", [{"role": "user", "content": "x"}])
    with pytest.raises(refind.InvalidInput, match="session_id"):
        mem.add("u", 7, [{"role": "user", "content": "x"}])  # type: ignore[arg-type]
    with pytest.raises(refind.InvalidInput, match="date_from"):
        mem.query("u", "x", date_from="whenever")
    assert mem.count() == 0  # nothing half-written


def test_missing_timestamps_are_filled_in_order(mem: refind.Memory) -> None:
    mem.add(
        "u",
        "s",
        [
            {"role": "user", "content": "first, no time"},
            {"role": "user", "content": "second, timed", "timestamp": "2023-05-09T00:00:00Z"},
            {"role": "user", "content": "third, no time"},
        ],
        session_time="8 May 2023",
    )
    turns = mem.session("u", "s")
    day = to_epoch_ms("2023-05-08")
    assert [h.timestamp for h in turns] == [day, day + 86_400_000, day + 86_400_000]
    assert turns[0].time_text == "8 May 2023"  # kept for rendering at the source's granularity
    mem.add("u", "s", [{"role": "user", "content": "fourth, later add"}])
    assert mem.session("u", "s")[-1].timestamp == day + 86_400_000  # the session's last message time
    before = int(datetime.now(UTC).timestamp() * 1000)
    mem.add("u", "fresh", [{"role": "user", "content": "no dates anywhere"}])
    assert mem.session("u", "fresh")[0].timestamp >= before


def test_message_model_accepts_objects_and_dicts(mem: refind.Memory) -> None:
    m = refind.Message(role="Assistant", content="hi", timestamp="2023-01-01T00:00:00Z", speaker="Bot")
    assert m.role == "assistant" and m.timestamp == 1_672_531_200_000
    res = mem.add("u", "s", [m, {"role": "user", "content": "there", "unknown_field": 1}])
    assert res.added == 2
    assert [h.speaker for h in mem.session("u", "s")] == ["Bot", None]


@pytest.mark.parametrize(
    "value",
    ["9999-12-31", "0001-01-01", "-5000-01-01", "1e12", "2024-01-01 <any text>", "8 May", "12", "10:00",
     "2024-01-01 " + "x" * 100, 10**16, -(10**15), float("nan"), float("inf"), datetime(2300, 1, 1),
     datetime(1800, 1, 1)],
)  # fmt: skip
def test_one_rule_refuses_out_of_range_and_trailing_text(value: object) -> None:
    with pytest.raises(ValueError, match="1900|seconds|finite|64 characters"):
        to_epoch_ms(value)  # type: ignore[arg-type]


def test_out_of_range_times_are_invalid_input_naming_the_field(mem: refind.Memory) -> None:
    mem.add("u", "s", [{"role": "user", "content": "last month ts test"}])
    for now in ("9999-12-31T23:59:59Z", "0001-01-01", "-5000-01-01"):
        with pytest.raises(refind.InvalidInput, match="now") as info:
            mem.search("last month ts test", "u", now=now)
        assert info.value.field == "now"
    with pytest.raises(refind.InvalidInput) as info:
        mem.add("u", "s", [{"role": "user", "content": "x", "timestamp": "9999-12-31"}])
    assert info.value.field == "messages[0].timestamp"
    with pytest.raises(refind.InvalidInput, match="session_time"):
        mem.add("u", "s", [{"role": "user", "content": "x"}], session_time="2024-01-01 and more text")


@pytest.mark.parametrize("bad", ["a\x01", "a\x7f", "\x9fa", "a\u2028", "a\u202e", "\ufeffa", "a\tb"])
def test_ids_with_control_or_bidi_characters_are_refused(mem: refind.Memory, bad: str) -> None:
    for args in ((bad, "s"), ("u", bad)):
        with pytest.raises(refind.InvalidInput, match="control"):
            mem.add(*args, [{"role": "user", "content": "x"}])
    with pytest.raises(refind.InvalidInput, match="control"):
        mem.add("u", "s", [{"role": "user", "content": "x"}], request_id=bad)
    with pytest.raises(refind.InvalidInput, match=r"messages\[0\]\.id"):
        mem.add("u", "s", [{"role": "user", "content": "x", "id": bad}])
    with pytest.raises(refind.InvalidInput, match="user_id"):
        mem.search("x", bad)
    assert mem.count() == 0


def test_queries_over_the_cap_are_refused(mem: refind.Memory) -> None:
    limit = mem.settings.max_query_chars
    mem.search("w " * (limit // 2), "u")
    with pytest.raises(refind.InvalidInput, match="max_query_chars") as info:
        mem.search("w " * (limit // 2 + 1), "u")
    assert info.value.field == "question"
    with pytest.raises(refind.InvalidInput, match="options"):
        mem.search("q", "u", options=["o" * limit])
    with pytest.raises(refind.InvalidInput, match="keywords"):
        mem.keyword_search("w " * limit, "u")
