"""Auth in each scheme against a real server: the right key gets 200, a wrong or missing one 401, health
stays open, and the key shows up in no response and no log line."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from benchmarks.adapters.http import SpawnedServer
from tests.server_helpers import add_body, running, search_body

pytestmark = pytest.mark.slow  # a spawned service per auth scheme: make test, not make check

KEY = "s3cr3t-Key_0123456789abcdef"
WRONG = "s3cr3t-Key_0123456789abcdeX"

SCHEMES = {
    "token": ("Authorization", "Token {}"),
    "bearer": ("Authorization", "Bearer {}"),
    "x-api-key": ("X-Api-Key", "{}"),
}


@pytest.fixture(scope="module", params=sorted(SCHEMES))
def secured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, SpawnedServer]]:
    tmp = tmp_path_factory.mktemp(f"auth-{request.param}")
    with running(tmp, "--auth", request.param, api_key=KEY) as server:
        yield request.param, server


def _calls(http: httpx.Client, headers: dict[str, str], n: int) -> list[httpx.Response]:
    return [
        http.post(
            "/add", json=add_body(f"r{n}", "auth-user", "s", ["the key is under the mat"]), headers=headers
        ),
        http.post("/v1/memories/add", json=add_body(f"v{n}", "auth-user", "s", ["more"]), headers=headers),
        http.post("/search", json=search_body("where is the key", "auth-user"), headers=headers),
        http.post("/v1/memories/search", json=search_body("key", "auth-user"), headers=headers),
        http.delete("/v1/users/nobody", headers=headers),
        http.post("/v1/memories/delete", json={"user_id": "nobody"}, headers=headers),
    ]


def test_right_key_passes_wrong_or_missing_key_is_401(secured: tuple[str, SpawnedServer]) -> None:
    scheme, server = secured
    header, form = SCHEMES[scheme]
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert all(r.status_code == 200 for r in _calls(http, {header: form.format(KEY)}, 0))
        assert http.get("/health").status_code == 200  # unauthenticated
        assert http.get("/openapi.json").status_code == 200
        # the scheme word in any case, more than one space: still the right key
        if scheme != "x-api-key":
            loose = f"{form.split()[0].lower()}   {KEY}"
            assert _calls(http, {header: loose}, 1)[0].status_code == 200
        others = [h for s, h in SCHEMES.items() if s != scheme]
        attempts: list[dict[str, str]] = [
            {},
            {header: form.format(WRONG)},
            {header: form.format("").strip()},
            {header: form.format(KEY[:-1])},
            {header: form.format(KEY + "x")},
            {header: KEY} if scheme != "x-api-key" else {"Authorization": f"Bearer {KEY}"},
            *({h: f.format(KEY)} for h, f in others if h != header or f != form),
        ]
        for n, headers in enumerate(attempts, 2):
            for r in _calls(http, headers, n):
                assert r.status_code == 401, (headers, r.status_code)
                assert r.json()["detail"]["reason"].startswith("missing or wrong API key")
                assert KEY not in r.text and WRONG not in r.text
                assert KEY not in str(r.headers)
        if scheme != "x-api-key":
            assert r.headers["www-authenticate"] == form.split()[0]
    log = server.log()
    assert "401" in log
    assert KEY not in log and WRONG not in log


def test_openapi_declares_the_scheme(secured: tuple[str, SpawnedServer]) -> None:
    scheme, server = secured
    schema = httpx.get(server.url + "/openapi.json").json()
    declared = schema["components"]["securitySchemes"][scheme]
    assert declared["type"] == "apiKey" and declared["name"] == SCHEMES[scheme][0]
    assert KEY not in str(schema)
