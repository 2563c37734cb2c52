"""One rule for input at the service's boundary: timestamps, ids, query size, and 422 bodies that read like
the rest of the API (a reason line and the fields, named as the client sent them)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

import refind
from benchmarks.adapters.http import SpawnedServer
from tests.server_helpers import T0, add_body, client, count, running, search_body

PYDANTIC_INTERNALS = ("function-after", "functools", "partial(", "0x7f", "validator", "union", "[str]")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedServer]:
    with running(tmp_path_factory.mktemp("input")) as server:
        yield server


@pytest.fixture
def c(srv: SpawnedServer) -> Iterator[httpx.Client]:
    with client(srv) as http:
        yield http


def _422(r: httpx.Response, field: str) -> dict:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail["reason"], str) and field in detail["reason"], detail
    assert [e["field"] for e in detail["errors"]] == [field], detail
    assert not any(m in r.text for m in PYDANTIC_INTERNALS), r.text
    return detail


@pytest.mark.parametrize(
    "now", ["9999-12-31T23:59:59Z", "0001-01-01", "-5000-01-01", "1e12", 10**16, -(10**15)]
)
def test_an_out_of_range_now_is_422_naming_the_field(c: httpx.Client, now: object) -> None:
    for path in ("/search", "/v1/memories/search"):
        detail = _422(c.post(path, json=search_body("last month ts test", "fz", top_k=5, now=now)), "now")
        assert "1900" in detail["reason"]  # the accepted forms are named


@pytest.mark.parametrize(
    "ts",
    ["9999-12-31", "0001-01-01", "-5000-01-01", "1e12", "2024-01-01 " + "x" * 1_000_000, "2024-01-01 tea?",
     "8 May", 1_704_067_200, float("inf"), True, [T0], {"ms": T0}],
)  # fmt: skip
def test_timestamps_follow_one_rule_for_numbers_and_strings(c: httpx.Client, ts: object) -> None:
    before = count(c)
    body = add_body("ts-bad", "ts-rule", "s", ["a note"])
    body["messages"][0]["timestamp"] = ts
    raw = json.dumps(body, allow_nan=True)  # Infinity as JSON parsers read it
    r = c.post("/add", content=raw.encode(), headers={"content-type": "application/json"})
    detail = _422(r, "messages[0].timestamp")
    assert len(r.content) < 2000, "the offending text is never echoed back"
    assert detail and count(c) == before


def test_accepted_timestamp_spellings_are_stored(c: httpx.Client) -> None:
    for i, ts in enumerate([T0, float(T0), str(T0), "2024-01-01T00:00:00Z", "2024-01-01", "1:56 pm on 8 May, 2023",
                            "2023/05/30 (Tue) 23:40", "May 2023"]):  # fmt: skip
        body = add_body(f"ts-ok-{i}", "ts-ok", f"s{i}", ["a note"])
        body["messages"][0]["timestamp"] = ts
        assert c.post("/add", json=body).status_code == 200, ts


@pytest.mark.parametrize("bad", ["a\x01b", "a\x7fb", "a\x85b", "a\u2028b", "a\u2029b", "a\u202eb", "a\u2066b",
                                 "\ufeffab", "a\tb", "a\nb", "a\x00b"])  # fmt: skip
def test_ids_refuse_control_and_bidirectional_characters(c: httpx.Client, bad: str) -> None:
    for field in ("user_id", "session_id", "request_id"):
        body = add_body("ids", "ids-user", "s", ["hello"])
        body[field] = bad
        detail = _422(c.post("/add", json=body), field)
        assert "control" in detail["reason"]
    _422(c.post("/search", json=search_body("hello", bad)), "user_id")
    _422(c.post("/v1/memories/delete", json={"user_id": bad}), "user_id")


def test_ids_with_emoji_joiners_and_other_scripts_are_fine(c: httpx.Client) -> None:
    for user in ["👩\u200d💻 dev", "用户-42", "Ωmega:ü", "team/x y"]:
        assert c.post("/add", json=add_body("ok-" + user, user, "s", ["hello"])).status_code == 200, user


def test_422_names_the_field_as_sent_and_never_pydantic_internals(c: httpx.Client) -> None:
    body = add_body("name", "names", "s", ["hello"])
    body["messages"][0]["name"] = "n" * 40_000
    _422(c.post("/add", json=body), "messages[0].name")
    for content in (5, [], [{"text": "no type"}], None, {"type": "text"}):
        body = add_body("content", "names", "s", ["hello"])
        body["messages"][0]["content"] = content
        _422(c.post("/add", json=body), "messages[0].content")
    _422(c.post("/search", json={"query": [], "user_id": "u", "top_k": 3}), "query")
    _422(c.post("/search", json={"query": {"a": 1}, "user_id": "u", "top_k": 3}), "query")


def test_a_body_that_is_not_json_gets_a_hint(c: httpx.Client) -> None:
    raw = b'{"query": "hi", "user_id": "u", "top_k": 3}'
    r = c.post("/search", content=raw, headers={"content-type": "application/x-www-form-urlencoded"})
    detail = _422(r, "body")
    assert "application/json" in detail["reason"] and "curl" in detail["reason"]
    r = c.post("/search", content=b'{"query": "hi",', headers={"content-type": "application/json"})
    assert "not valid JSON" in _422(r, "body")["reason"]


def test_the_query_is_capped_and_the_cap_is_named(c: httpx.Client) -> None:
    limit = refind.Settings().max_query_chars
    assert c.post("/search", json=search_body("word " * (limit // 5), "capped")).status_code == 200
    detail = _422(c.post("/search", json=search_body("word " * (limit // 5 + 1), "capped")), "query")
    assert str(limit) in detail["reason"]
    options = ["x" * (limit // 2)] * 3
    _422(c.post("/search", json=search_body("q", "capped", options=options)), "query")
    _422(c.post("/search", json=search_body("q", "capped", options=["a"] * 33)), "options")


def test_search_packs_for_max_tokens_as_to_text_does(c: httpx.Client, srv: SpawnedServer) -> None:
    texts = [f"turn {i} about the harbour kayak trip and the weather over the hills" for i in range(12)]
    for s in range(6):
        assert c.post("/add", json=add_body(f"pk{s}", "packer", f"s{s}", texts)).status_code == 200
    full = c.post("/search", json=search_body("harbour kayak weather", "packer", top_k=100)).json()["data"]
    packed = c.post(
        "/search", json=search_body("harbour kayak weather", "packer", top_k=100, max_tokens=300)
    ).json()["data"]
    from refind.tokens import count_tokens

    assert packed and sum(count_tokens(i["content"]) for i in packed) <= 300 + 2 * len(packed)
    assert sum(len(i["content"]) for i in packed) < sum(len(i["content"]) for i in full)
    _422(c.post("/search", json=search_body("kayak", "packer", max_tokens=0)), "max_tokens")


@pytest.mark.slow
def test_health_reveals_nothing_and_stats_need_the_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    key = "k" * 24
    with running(tmp_path, "--auth", "bearer", api_key=key) as server:
        with httpx.Client(base_url=server.url) as anonymous:
            assert set(anonymous.get("/health").json()) == {"status", "version"}
            assert anonymous.get("/v1/stats").status_code == 401
        with client(server, key) as http:
            assert http.post("/add", json=add_body("h", "u", "s", ["one", "two"])).status_code == 200
            assert count(http) == 2
