"""Hostile input to the one timestamp rule (``refind.models.to_epoch_ms``), property-tested against the rule
as docs/service.md states it: a string is at most 64 printable ASCII characters without surrounding spaces;
unsigned digits are epoch ms; otherwise ISO 8601 or a chat-log date with a four-digit year 1900-2199, the
whole string being the date, and a weekday it names must be the date's. Errors never quote the value."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refind.models import TIME_FORMS, to_epoch_ms

RULE = settings(max_examples=300, deadline=None, derandomize=True)
_ASCII_PRINTABLE = re.compile(r"[\x20-\x7e]*")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")

dates = st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2199, 12, 30)).map(
    lambda d: d.replace(microsecond=0, tzinfo=UTC)
)


def spellings(dt: datetime) -> list[tuple[str, int]]:
    """Spellings of ``dt`` the rule accepts, each with the epoch ms it must give."""
    ms = int(dt.timestamp() * 1000)
    minute = int(dt.replace(second=0).timestamp() * 1000)
    day = int(dt.replace(hour=0, minute=0, second=0).timestamp() * 1000)
    hour12 = dt.hour % 12 or 12
    ampm = "am" if dt.hour < 12 else "pm"
    return [
        (dt.strftime("%Y-%m-%dT%H:%M:%SZ"), ms),
        (dt.strftime("%Y-%m-%d"), day),
        (f"{hour12}:{dt.minute:02d} {ampm} on {dt.day} {dt.strftime('%B')}, {dt.year}", minute),
        (dt.strftime("%Y/%m/%d (%a) %H:%M"), minute),
        (f"{dt.strftime('%A')}, {dt.day} {dt.strftime('%B')} {dt.year}", day),
    ]


@RULE
@given(dates)
def test_every_documented_spelling_gives_its_time(dt: datetime) -> None:
    for text, ms in spellings(dt):
        assert to_epoch_ms(text) == ms, text


@RULE
@given(dates, st.integers(1, 6))
def test_a_weekday_that_is_not_the_dates_is_refused(dt: datetime, shift: int) -> None:
    wrong = _WEEKDAYS[(dt.weekday() + shift) % 7]
    for text in (
        f"{dt:%Y/%m/%d} ({wrong[:3]}) {dt:%H:%M}",
        f"{wrong}, {dt.day} {dt:%B} {dt.year}",
    ):
        with pytest.raises(ValueError, match="weekday"):
            to_epoch_ms(text)


@RULE
@given(dates, st.sampled_from(["\x00", " ", "\t", "\n", "\u00a0", "\u200b", "\ufeff"]), st.booleans())
def test_control_characters_and_surrounding_spaces_are_refused(dt: datetime, junk: str, front: bool) -> None:
    for text, _ in spellings(dt):
        bad = junk + text if front else text + junk
        with pytest.raises(ValueError) as err:
            to_epoch_ms(bad)
        assert text not in str(err.value)  # never quoted back


@RULE
@given(dates)
def test_other_scripts_digits_are_refused(dt: datetime) -> None:
    for text, _ in spellings(dt):
        with pytest.raises(ValueError):
            to_epoch_ms(text.translate(_ARABIC_INDIC))
    with pytest.raises(ValueError):
        to_epoch_ms(str(int(dt.timestamp() * 1000) or 10**12).translate(_ARABIC_INDIC))


@RULE
@given(st.integers(min_value=100_000_000_000, max_value=7_258_118_399_999))
def test_digits_are_epoch_ms_and_a_sign_is_refused(ms: int) -> None:
    assert to_epoch_ms(str(ms)) == ms
    assert to_epoch_ms(ms) == ms
    for signed in (f"-{ms}", f"+{ms}"):
        with pytest.raises(ValueError):
            to_epoch_ms(signed)


@RULE
@given(st.text(max_size=70))
def test_any_text_is_refused_or_a_time_the_rule_allows(text: str) -> None:
    try:
        ms = to_epoch_ms(text)
    except ValueError as exc:
        message = str(exc).replace(TIME_FORMS, "")
        assert len(text.strip()) < 8 or text.strip() not in message  # the value is never quoted back
        return
    assert 1 <= len(text) <= 64
    assert _ASCII_PRINTABLE.fullmatch(text) and text == text.strip()
    assert text[0] not in "+-"
    assert -2_208_988_800_000 <= ms < 7_258_118_400_000
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    for word in re.findall(r"[A-Za-z]+", text):
        named = [i for i, n in enumerate(_WEEKDAYS) if word.lower() in {n.lower(), n[:3].lower()}]
        if named:  # the date's own weekday (give or take the day a UTC offset moves it)
            assert named[0] in {(when.weekday() + d) % 7 for d in (-1, 0, 1)}, text


@pytest.mark.parametrize(
    "value",
    [
        "-1704067200000",
        "2024-05-08T14:30:00\x00",
        "٢٠٢٤-٠٥-٠٨",
        " 2024-05-08",
        "2024-05-08 ",
        "2024/05/08 (Tue) 14:30",  # 8 May 2024 was a Wednesday
        "Tuesday, 8 May 2024",
    ],
)
def test_the_values_the_trial_found_are_refused(value: str) -> None:
    with pytest.raises(ValueError) as err:
        to_epoch_ms(value)
    assert value.strip("\x00 ") not in str(err.value).replace(TIME_FORMS, "")
