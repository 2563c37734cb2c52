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
