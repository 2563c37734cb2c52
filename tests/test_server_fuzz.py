"""Fuzzing the request bodies (hypothesis) against a real server: whatever comes in, the answer is never a
5xx; a 200 keeps the contract (ids echoed, at most top_k items), anything else is a 4xx with details."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refind.models import id_problem
from tests.server_helpers import T0, client, count, running

pytestmark = pytest.mark.slow  # property tests against a spawned service: make test, not make check

FUZZ = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
ALLOWED = {200, 400, 409, 413, 422}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\ud800",
            "a\udfffb",
            "*:*",
            "user_id:other",
            "🙂",
            "\u200b",
            "a\x01b",
            "a\x7fb",
            "a\x85b",
            "a\u2028b",
            "a\u202eb",
            "\ufeffa",
            "n" * 40_000,
        ]
    )
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

text_ids = st.text(min_size=1, max_size=24)
valid_parts = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "input_audio"])},
                          optional={"text": st.text(max_size=30), "image_url": json_values}),
    min_size=1, max_size=3,
)  # fmt: skip
good_times = st.integers(min_value=T0 - 10**12, max_value=T0 + 10**12) | st.sampled_from(
    ["2024-01-01T00:00:00Z", "1:56 pm on 8 May, 2023", "May 2023"]
)
bad_times = (
    st.integers()
    | st.floats()
    | st.sampled_from(
        [
            "yesterday?",
            "1704067200",
            "",
            "\x00",
            "9999-12-31T23:59:59Z",
            "0001-01-01",
            "-5000-01-01",
            "1e12",
            "9999-12-31",
            "2024-01-01 " + "x" * 100_000,
            "8 May",
        ]
    )
    | json_values
)
valid_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(min_size=1, max_size=40) | valid_parts},
    optional={"timestamp": good_times, "name": st.text(max_size=10), "id": json_values},
)  # fmt: skip
valid_add = st.fixed_dictionaries(
    {"request_id": text_ids, "user_id": text_ids, "session_id": text_ids,
     "messages": st.lists(valid_message, min_size=1, max_size=4)},
    optional={"metadata": json_values, "async_mode": json_values},
)  # fmt: skip
valid_search = st.fixed_dictionaries(
    {"query": st.text(min_size=1, max_size=40) | valid_parts | st.just("word " * 1000),
     "user_id": st.sampled_from(["fuzz", "other"]) | text_ids,
     "top_k": st.integers(min_value=1, max_value=1000)},
    optional={"options": st.lists(st.text(max_size=10), max_size=3), "now": good_times, "filters": json_values,
              "max_tokens": st.integers(min_value=-5, max_value=5000)},
)  # fmt: skip
DELETE = object()


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]]) -> Any:
    """A valid body, or one with a single field (top level or in the first message) replaced by something
    else or removed: deep fuzzing, since a body with many bad fields stops at the first check."""
    body = draw(valid)
    fields: list[tuple[Any, ...]] = [(k,) for k in body]
    if "messages" in body:  # an add: the first message's fields, its timestamp even when absent
        fields += [("messages", 0, k) for k in {*body["messages"][0], "timestamp", "name"}]
    else:
        fields += [("now",), ("options",)]
    fields = sorted(set(fields), key=str)
    choice = draw(st.sampled_from([None, *fields]))
    if choice is None:
        return body
    value = draw(st.just(DELETE) | json_values | bad_times | st.text(max_size=5))
    target = body
    for key in choice[:-1]:
        target = target[key]
    if value is DELETE:
        target.pop(choice[-1], None)
    else:
        target[choice[-1]] = value
    return body


add_bodies = mutated(valid_add)
search_bodies = mutated(valid_search)


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    with running(tmp_path_factory.mktemp("fuzz")) as server, client(server) as c:
        c.post("/add", json={"request_id": "seed", "user_id": "fuzz", "session_id": "s",
                             "messages": [{"role": "user", "content": "seed text about apples"}]})  # fmt: skip
        yield c


def _post(c: httpx.Client, path: str, body: Any) -> httpx.Response:
    raw = json.dumps(body, ensure_ascii=True, allow_nan=True)  # NaN and lone surrogates as JSON allows
    return c.post(path, content=raw.encode(), headers={"content-type": "application/json"})


def _check_error(r: httpx.Response) -> None:
    assert r.status_code in ALLOWED, (r.status_code, r.text)
    if r.status_code != 200:
        assert r.json()["detail"], r.text


@FUZZ
@given(body=add_bodies | json_values)
def test_fuzzed_add_bodies_never_5xx(http: httpx.Client, body: Any) -> None:
    r = _post(http, "/add", body)
    _check_error(r)
    if r.status_code == 200:
        out = r.json()
        assert out["success"] is True
        assert [out[k] for k in ("request_id", "user_id", "session_id")] == [
            body["request_id"],
            body["user_id"],
            body["session_id"],
        ]


@FUZZ
@given(body=search_bodies | json_values)
def test_fuzzed_search_bodies_never_5xx(http: httpx.Client, body: Any) -> None:
    r = _post(http, "/v1/memories/search", body)
    _check_error(r)
    if r.status_code == 200:
        data = r.json()["data"]
        assert isinstance(data, list) and len(data) <= body["top_k"]


@FUZZ
@given(raw=st.binary(max_size=200) | st.text(max_size=100).map(str.encode))
def test_fuzzed_raw_bytes_never_5xx(http: httpx.Client, raw: bytes) -> None:
    for path in ("/add", "/search", "/v1/memories/delete"):
        r = http.post(path, content=raw, headers={"content-type": "application/json"})
        _check_error(r)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    texts=st.lists(st.text(min_size=1, max_size=60).filter(str.strip), min_size=1, max_size=5),
    user=st.text(min_size=1, max_size=20).filter(lambda u: id_problem(u) is None),
)
def test_any_valid_add_is_stored_and_echoed(http: httpx.Client, texts: list[str], user: str) -> None:
    before = count(http)
    body = {
        "request_id": f"valid-{before}",
        "user_id": user,
        "session_id": "s",
        "messages": [{"role": "user", "content": t} for t in texts],
    }
    r = _post(http, "/add", body)
    assert r.status_code == 200, r.text
    assert r.json() == {"success": True, "request_id": body["request_id"], "user_id": user, "session_id": "s"}
    assert count(http) == before + len(texts)
    r = _post(http, "/search", {"query": texts[0], "user_id": user, "top_k": 5})
    assert r.status_code == 200 and len(r.json()["data"]) <= 5
