"""The Add/Search HTTP contract (../shared/docs/aml-contract.md) against a real server: a
``python -m refind.server`` child on loopback, driven with httpx. Both path variants of every endpoint."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

import refind
from benchmarks.adapters.http import SpawnedServer
from tests.fake_openai import FakeOpenAI, tool_reply
from tests.server_helpers import T0, add_body, clean_env, client, count, running, search_body

ADD_PATHS = ["/add", "/v1/memories/add"]
SEARCH_PATHS = ["/search", "/v1/memories/search"]


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedServer]:
    with running(tmp_path_factory.mktemp("srv")) as server:
        yield server


@pytest.fixture
def c(srv: SpawnedServer) -> Iterator[httpx.Client]:
    with client(srv) as http:
        yield http


def _items(r: httpx.Response) -> list[dict]:
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"data"} and isinstance(body["data"], list)
    return body["data"]


# ---------------------------------------------------------------------------------------------- health


def test_health_is_unauthenticated_small_json_and_says_nothing_of_the_data(c: httpx.Client) -> None:
    r = c.get("/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "version": refind.__version__}
    stats = c.get("/v1/stats")  # the count lives behind the key (auth tests check the 401)
    assert stats.status_code == 200 and isinstance(stats.json()["messages"], int)


def test_openapi_lists_every_endpoint(c: httpx.Client) -> None:
    schema = c.get("/openapi.json").json()
    assert {
        "/add",
        "/v1/memories/add",
        "/search",
        "/v1/memories/search",
        "/v1/users/{user_id}",
        "/v1/memories/delete",
        "/v1/stats",
        "/health",
    } <= set(schema["paths"])
    add = schema["components"]["schemas"]["AddRequest"]
    assert set(add["required"]) == {"request_id", "messages", "user_id", "session_id"}
    search = schema["components"]["schemas"]["SearchRequest"]
    assert set(search["required"]) == {"query", "user_id", "top_k"}


# ---------------------------------------------------------------------------------------------- add


@pytest.mark.parametrize("path", ADD_PATHS)
def test_add_echoes_the_three_ids_exactly(c: httpx.Client, path: str) -> None:
    ids = {
        "request_id": f'eval:run_abc123:locomo_refined:conv-0:chunk-0 {path} ü 🙂 "q" \\ ',
        "user_id": " eval:run_abc123:locomo:conv-0 Ωmega ",
        "session_id": "eval:run_abc123:sample:0/x?y#z",
    }
    raw = json.dumps({**ids, "messages": [{"role": "user", "content": "memory text"}]}, ensure_ascii=False)
    r = c.post(path, content=raw.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body == {"success": True, **ids}
    assert body["success"] is True


@pytest.mark.parametrize(("add_path", "search_path"), list(zip(ADD_PATHS, SEARCH_PATHS, strict=True)))
def test_add_is_searchable_when_it_returns(c: httpx.Client, add_path: str, search_path: str) -> None:
    user = f"fresh-{add_path}"
    texts = ["I adopted a grey cat named Miso last week", "Lovely! How old is Miso?", "She is two"]
    r = c.post(add_path, json=add_body("r1", user, "s1", texts))
    assert r.status_code == 200
    items = _items(c.post(search_path, json=search_body("What is my cat called?", user)))
    assert items, "an acknowledged add must be searchable at once"
    top = items[0]
    assert top["id"] == "s1#0-2"
    assert "user: I adopted a grey cat named Miso last week" in top["content"]
    assert top["content"].startswith("[session s1 | 1 January 2024")
    assert isinstance(top["score"], float) and top["score"] > 0
    assert top["created_at"] == "2024-01-01T00:00:00Z"


def test_unknown_fields_are_accepted_and_ignored(c: httpx.Client) -> None:
    body = add_body("extra-1", "extra-user", "s", ["tea with lemon in Lisbon"])
    body |= {"metadata": {"a": 1}, "app_id": "x", "agent_id": "y", "async_mode": True}
    body["messages"][0] |= {"id": "m1", "meta": [1, 2], "tool_calls": None}
    assert c.post("/add", json=body).status_code == 200
    q = search_body("tea in Lisbon", "extra-user", filters={"x": 1}, rerank=True, keyword_search=False)
    assert _items(c.post("/search", json=q))


def test_content_parts_and_markers_keep_every_turn(c: httpx.Client) -> None:
    before = count(c)
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "look at my new bike"}, {"type": "text", "text": "it is red"}]},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "   "}]},
        {"role": "assistant", "content": [{"type": "input_audio", "input_audio": {}}, "and a plain string part"]},
        {"role": "user", "content": "   "},
    ]  # fmt: skip
    r = c.post("/add", json={"request_id": "mm", "user_id": "mm-user", "session_id": "s", "messages": msgs})
    assert r.status_code == 200, r.text
    assert count(c) == before + len(msgs), "no message may be dropped"
    content = _items(c.post("/search", json=search_body("red bike", "mm-user")))[0]["content"]
    assert content.splitlines()[1:] == [  # the hit and its window of ±2 turns
        "* user: look at my new bike",
        "it is red",
        "user: [image]",
        "assistant: [empty]",
    ]
    content = _items(c.post("/search", json=search_body("plain string part", "mm-user")))[0]["content"]
    assert content.splitlines()[1:] == [
        "user: [image]",
        "assistant: [empty]",
        "* assistant: [input_audio]",
        "and a plain string part",
        "user: [empty]",
    ]
    q = {"query": [{"type": "text", "text": "red bike"}, {"type": "image_url", "image_url": {"url": "x"}}]}
    assert _items(c.post("/search", json={**q, "user_id": "mm-user", "top_k": 3}))


def test_timestamps_missing_ones_follow_the_previous_or_now(c: httpx.Client) -> None:
    msgs = [
        {"role": "user", "content": "first note about kayaking", "timestamp": T0 + 86_400_000},
        {"role": "assistant", "content": "second note without a time"},
    ]
    c.post("/add", json={"request_id": "t1", "user_id": "ts-user", "session_id": "a", "messages": msgs})
    item = _items(c.post("/search", json=search_body("second note without a time", "ts-user")))[0]
    assert item["created_at"] == "2024-01-02T00:00:00Z"
    body = {"request_id": "t2", "user_id": "ts-now", "session_id": "b", "messages": [{"role": "user", "content": "orchids"}]}  # fmt: skip
    before = time.time()
    assert c.post("/add", json=body).status_code == 200
    created = _items(c.post("/search", json=search_body("orchids", "ts-now")))[0]["created_at"]
    seconds = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    assert before - 5 <= seconds <= time.time() + 5
    iso = {"request_id": "t3", "user_id": "ts-iso", "session_id": "c",
           "messages": [{"role": "user", "content": "tulips", "timestamp": "2023-05-08T13:56:00Z"}]}  # fmt: skip
    assert c.post("/add", json=iso).status_code == 200
    assert (
        _items(c.post("/search", json=search_body("tulips", "ts-iso")))[0]["created_at"]
        == "2023-05-08T13:56:00Z"
    )


# ---------------------------------------------------------------------------------------------- idempotency


def test_same_request_again_writes_nothing_and_another_body_is_409(c: httpx.Client) -> None:
    body = add_body("idem-1", "idem-user", "s", ["the wifi password is on the fridge", "thanks"])
    assert c.post("/add", json=body).status_code == 200
    after_first = count(c)
    for path in ADD_PATHS:  # a retry may come through either path
        r = c.post(path, json=body)
        assert r.status_code == 200 and r.json()["request_id"] == "idem-1"
    assert count(c) == after_first
    changed = add_body("idem-1", "idem-user", "s", ["something else entirely"])
    r = c.post("/add", json=changed)
    assert r.status_code == 409
    assert "request_id" in r.json()["detail"]["reason"]
    assert count(c) == after_first
    assert len(_items(c.post("/search", json=search_body("wifi password fridge", "idem-user")))) == 1


def test_concurrent_duplicate_adds_write_once(c: httpx.Client, srv: SpawnedServer) -> None:
    body = add_body("dup-1", "dup-user", "s", [f"line {i} about the garden shed" for i in range(20)])
    before = count(c)
    n = 16
    barrier = threading.Barrier(n)

    def one(_: int) -> int:
        with client(srv) as http:
            barrier.wait()
            return http.post("/add", json=body).status_code

    with ThreadPoolExecutor(n) as pool:
        assert list(pool.map(one, range(n))) == [200] * n
    assert count(c) == before + 20
    items = c.post("/search", json=search_body("garden shed", "dup-user", top_k=100)).json()["data"]
    turns = [line for it in items for line in it["content"].splitlines()[1:]]
    assert len(turns) == len(set(turns)), "each line once"


# ---------------------------------------------------------------------------------------------- search


def test_search_returns_at_most_top_k_relevance_ordered(c: httpx.Client) -> None:
    user = "many"
    for i in range(8):
        texts = [
            f"trip number {i} to the mountains with hiking boots",
            "filler " * 3,
            "x " * 5,
            "y " * 5,
            "z " * 5,
            "w",
        ]
        assert c.post("/add", json=add_body(f"m{i}", user, f"s{i}", texts)).status_code == 200
    for path in SEARCH_PATHS:
        for k in (1, 2, 5, 100):
            items = _items(c.post(path, json=search_body("mountains hiking boots trip", user, top_k=k)))
            assert 0 < len(items) <= k
            scores = [it["score"] for it in items]
            assert scores == sorted(scores, reverse=True)
            assert len({it["id"] for it in items}) == len(items)
            assert all(it["id"] and it["content"] for it in items)
    again = _items(c.post("/search", json=search_body("mountains hiking boots trip", user, top_k=5)))
    assert [i["id"] for i in again] == [i["id"] for i in items[:5]], "ids are stable"


def test_search_of_an_unknown_user_or_no_words_is_an_empty_list(c: httpx.Client) -> None:
    assert _items(c.post("/search", json=search_body("anything", "nobody-here"))) == []
    assert _items(c.post("/search", json=search_body("   ", "many"))) == []
    assert _items(c.post("/search", json=search_body("the of and", "many"))) == []


def test_search_accepts_options_and_returns_evidence_not_answers(c: httpx.Client) -> None:
    c.post("/add", json=add_body("o1", "mc-user", "s", ["I moved to Porto in March", "nice city"]))
    q = search_body("Where did I move?", "mc-user", options=["A. Porto", "B. Oslo"])
    items = _items(c.post("/search", json=q))
    assert items and all(i["content"].startswith("[session ") for i in items)
    assert "A. Porto" not in "".join(i["content"] for i in items)


ADVERSARIAL = [
    "zanzibar",
    "user_id:victim zanzibar",
    "*:*",
    "zanzibar OR user_id:*",
    "victim",
    "contents:zanzibar AND NOT user_id:attacker) OR (user_id:victim",
    "zanzibar~ zanz* z?nzibar /zan.*/",
    '\\" ( ) [ ] { } ^ ~ * ? : \\ / && || ! + -',
    "victim victim victim zanzibar zanzibar",
    "SELECT * FROM messages WHERE user_id='victim'",
]


def test_users_are_isolated_under_adversarial_queries(c: httpx.Client) -> None:
    secret = "the zanzibar vault code is 4417"
    assert c.post("/add", json=add_body("v1", "victim", "vs", [secret, "ok"])).status_code == 200
    c.post("/add", json=add_body("a1", "attacker", "as", ["I like zanzibar spice and the word victim"]))
    for query in ADVERSARIAL:
        for path in SEARCH_PATHS:
            items = _items(c.post(path, json=search_body(query, "attacker", top_k=100)))
            assert all("4417" not in i["content"] for i in items), query
    for other in ["victim ", " victim", "VICTIM", "victim*", "*"]:
        items = _items(c.post("/search", json=search_body("zanzibar vault", other, top_k=100)))
        assert items == [], repr(other)
    for other in ["victim\t", "victim\u202e", "\ufeffvictim"]:  # refused outright, never a near match
        r = c.post("/search", json=search_body("zanzibar vault", other, top_k=100))
        assert r.status_code == 422 and "4417" not in r.text, repr(other)
    found = _items(c.post("/search", json=search_body("zanzibar vault", "victim")))
    assert any("4417" in i["content"] for i in found)


# ---------------------------------------------------------------------------------------------- delete


def test_delete_one_user_both_ways(c: httpx.Client) -> None:
    user = "team/x:1 ü"
    c.post("/add", json=add_body("d1", user, "s", ["delete me please, saffron"]))
    c.post("/add", json=add_body("d1", "keeper", "s", ["keep me, saffron"]))
    r = c.delete(f"/v1/users/{quote(user, safe='')}")
    assert r.status_code == 200 and r.json() == {"success": True, "user_id": user, "deleted": 1}
    assert _items(c.post("/search", json=search_body("saffron", user))) == []
    assert _items(c.post("/search", json=search_body("saffron", "keeper")))
    r = c.post("/v1/memories/delete", json={"user_id": "keeper"})
    assert r.status_code == 200 and r.json()["deleted"] == 1
    assert _items(c.post("/search", json=search_body("saffron", "keeper"))) == []
    # the request markers went with the data: the same request adds again
    assert c.post("/add", json=add_body("d1", "keeper", "s", ["keep me, saffron"])).status_code == 200
    assert _items(c.post("/search", json=search_body("saffron", "keeper")))


# ---------------------------------------------------------------------------------------------- errors

INVALID = [
    ({"messages": [{"role": "user", "content": "x"}], "user_id": "u", "session_id": "s"}, "request_id"),
    ({"request_id": "r", "messages": [{"role": "user", "content": "x"}], "session_id": "s"}, "user_id"),
    ({"request_id": "r", "messages": [{"role": "user", "content": "x"}], "user_id": "u"}, "session_id"),
    ({"request_id": "r", "user_id": "u", "session_id": "s"}, "messages"),
    ({"request_id": "", "messages": [{"role": "user", "content": "x"}], "user_id": "u", "session_id": "s"}, "request_id"),
    ({"request_id": "r", "messages": [], "user_id": "u", "session_id": "s"}, "messages"),
    ({"request_id": "r", "messages": [{"role": "user", "content": ""}], "user_id": "u", "session_id": "s"}, "content"),
    ({"request_id": "r", "messages": [{"content": "x"}], "user_id": "u", "session_id": "s"}, "role"),
    ({"request_id": "r", "messages": [{"role": "user"}], "user_id": "u", "session_id": "s"}, "content"),
    ({"request_id": "r", "messages": [{"role": "user", "content": []}], "user_id": "u", "session_id": "s"}, "content"),
    ({"request_id": 7, "messages": [{"role": "user", "content": "x"}], "user_id": "u", "session_id": "s"}, "request_id"),
    ({"request_id": "r", "messages": "hello", "user_id": "u", "session_id": "s"}, "messages"),
    ({"request_id": "r", "messages": [{"role": "user", "content": 5}], "user_id": "u", "session_id": "s"}, "content"),
    ({"request_id": "r", "messages": [{"role": "user", "content": "x", "timestamp": True}], "user_id": "u", "session_id": "s"}, "timestamp"),
    ({"request_id": "r", "messages": [{"role": "user", "content": "x"}], "user_id": ["u"], "session_id": "s"}, "user_id"),
    ({"request_id": "r", "messages": [{"role": "user", "content": "x"}], "user_id": "u" * 1001, "session_id": "s"}, "user_id"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field"), INVALID)
def test_add_field_errors_are_422_with_structured_details(c: httpx.Client, body: dict, field: str) -> None:
    for path in ADD_PATHS:
        r = c.post(path, json=body)
        assert r.status_code == 422, r.text
        detail = r.json()["detail"]
        assert field in detail["reason"], detail  # one line, like every other error of the API
        errors = detail["errors"]
        assert isinstance(errors, list) and errors
        assert any(field in [str(p) for p in d["loc"]] for d in errors), errors
        assert all(set(d) == {"field", "loc", "msg", "type"} for d in errors)
        assert not any(m in r.text for m in ("function-after", "functools", "0x7f", "union", "[str]")), r.text


SEARCH_INVALID = [
    ({"user_id": "u", "top_k": 5}, "query"),
    ({"query": "q", "top_k": 5}, "user_id"),
    ({"query": "q", "user_id": "u"}, "top_k"),
    ({"query": "q", "user_id": "u", "top_k": 0}, "top_k"),
    ({"query": "q", "user_id": "u", "top_k": 1001}, "top_k"),
    ({"query": "q", "user_id": "u", "top_k": "5"}, "top_k"),
    ({"query": "q", "user_id": "u", "top_k": 2.5}, "top_k"),
    ({"query": "", "user_id": "u", "top_k": 5}, "query"),
    ({"query": 5, "user_id": "u", "top_k": 5}, "query"),
    ({"query": "q", "user_id": "u", "top_k": 5, "options": "A"}, "options"),
    ({"query": "q", "user_id": "u", "top_k": 5, "options": [1, 2]}, "options"),
    ({"query": "q", "user_id": "", "top_k": 5}, "user_id"),
]


@pytest.mark.parametrize(("body", "field"), SEARCH_INVALID)
def test_search_field_errors_are_422_with_structured_details(c: httpx.Client, body: dict, field: str) -> None:
    for path in SEARCH_PATHS:
        r = c.post(path, json=body)
        assert r.status_code == 422, r.text
        detail = r.json()["detail"]
        assert field in detail["reason"]
        assert any(field in [str(p) for p in d["loc"]] for d in detail["errors"])
        assert not any(m in r.text for m in ("function-after", "functools", "0x7f", "union")), r.text


@pytest.mark.parametrize(
    "raw",
    [b"{bad json", b"[1, 2]", b"null", b"", b'"string"', b"\xff\xfe\x00", b'{"request_id": "\\ud800"}'],
)
def test_malformed_bodies_are_422_never_5xx(c: httpx.Client, raw: bytes) -> None:
    for path in [*ADD_PATHS, *SEARCH_PATHS, "/v1/memories/delete"]:
        for ctype in ("application/json", "text/plain"):
            r = c.post(path, content=raw, headers={"content-type": ctype})
            assert r.status_code in (400, 422), (path, raw, r.status_code, r.text)
            assert r.json()["detail"]


def test_values_refind_rejects_are_422_with_a_reason(c: httpx.Client) -> None:
    seconds = add_body("sec", "u-sec", "s", ["hi"], ts=1_704_067_200)
    r = c.post("/add", json=seconds)
    assert r.status_code == 422 and "seconds" in r.json()["detail"]["reason"]
    for bad in ["u\x00x", "   ", "a\x1fb"]:
        r = c.post("/add", json=add_body("ctl", bad, "s", ["hi"]))
        assert r.status_code == 422 and r.json()["detail"]["reason"], bad
    r = c.post("/search", json=search_body("hi", "u", now="not a date at all"))
    assert r.status_code == 422 and r.json()["detail"]["reason"]


def test_wrong_paths_and_methods(c: httpx.Client) -> None:
    r = c.post("/v2/add", json={})
    assert r.status_code == 404 and r.json() == {"detail": {"reason": "Not Found"}}
    assert c.get("/add").status_code == 405


def test_logs_name_no_request_content(srv: SpawnedServer, c: httpx.Client) -> None:
    marker = "platypus-ultramarine-1234"
    c.post("/add", json=add_body("log-1", "log-user", "s", [f"content {marker}"]))
    c.post("/search", json=search_body(f"query {marker}", "log-user"))
    c.post("/add", json={"request_id": "log-2", "user_id": "log-user", "messages": [{"content": marker}]})
    log = srv.log()
    assert "POST /add" in log  # the access log is on, and names paths only
    assert marker not in log


# ---------------------------------------------------------------------------------------------- startup


def _run_server(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "refind.server", "--port", "0", *args],
        env={**clean_env(tmp), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_locked_index_is_a_one_line_startup_error(srv: SpawnedServer, tmp_path: Path) -> None:
    done = _run_server(tmp_path, "--data", str(srv.data_dir))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "locked" in lines[0] and lines[0].startswith("Error: ")


def test_bad_settings_are_one_line_startup_errors(tmp_path: Path) -> None:
    done = _run_server(tmp_path, "--data", str(tmp_path / "i"), "--auth", "bearer")
    assert done.returncode == 1 and "REFIND_API_KEY" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = _run_server(tmp_path, "--data", str(tmp_path / "i"), "--threads", "0")
    assert done.returncode == 1 and "threads" in done.stderr


@pytest.mark.slow
def test_llm_agent_plans_the_search_rounds(tmp_path: Path) -> None:
    llm_key = "sk-test-llm-key-0123456789"
    with FakeOpenAI() as fake:
        fake.enqueue(tool_reply(("search", {"keywords": "cat name"})), tool_reply(("finish", {})))
        env = {"REFIND_LLM_BASE_URL": fake.base_url, "REFIND_LLM_API_KEY": llm_key}
        with running(tmp_path, "--agent", "llm", env=env) as server, client(server) as http:
            texts = ["my cat's name is Miso", "cute", "we also have a dog called Rex"]
            assert http.post("/add", json=add_body("r", "llm-user", "s", texts)).status_code == 200
            q = search_body("What is my cat called?", "llm-user", options=["A. Miso", "B. Rex"])
            items = _items(http.post("/search", json=q))
        assert fake.pending == 0 and fake.unexpected == 0
        prompt = json.dumps(fake.bodies[0]["messages"])
        assert "What is my cat called?" in prompt and "A. Miso" in prompt
        assert any("Miso" in i["content"] for i in items)
        assert llm_key not in server.log()


def test_llm_agent_without_an_endpoint_is_a_startup_error(tmp_path: Path) -> None:
    done = _run_server(tmp_path, "--data", str(tmp_path / "i"), "--agent", "llm")
    assert done.returncode == 1 and "REFIND_LLM_API_KEY" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_started_server_freezes_its_heap_out_of_the_collectors_scans(tmp_path: Path) -> None:
    """Once started, the serving process (and each search worker) moves what startup left alive to the
    collector's permanent generation (refind.server._pool.settle_heap), says how much in its start line,
    and serves as before."""
    for workers in ("0", "1"):
        with running(tmp_path, "--search-workers", workers) as server, client(server) as http:
            frozen = re.findall(r"frozen_objects=(\d+)", server.log())
            assert len(frozen) == 1 and int(frozen[0]) > 10_000, server.log()[-2000:]
            add = http.post("/add", json=add_body(f"f{workers}", "u", "s", ["the kayak trip to the lake"]))
            assert add.status_code == 200
            found = http.post("/search", json=search_body("kayak trip", "u")).json()["data"]
            assert found and "kayak" in found[0]["content"]


def test_the_http_stack_loads_only_when_serving(tmp_path: Path) -> None:
    code = (
        "import sys, refind, refind.server\n"
        "assert not {'fastapi', 'uvicorn', 'starlette'} & set(sys.modules), sorted(sys.modules)\n"
        "refind.server.create_app(':memory:')\n"
        "assert 'fastapi' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=clean_env(tmp_path), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
