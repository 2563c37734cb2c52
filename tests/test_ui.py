"""``refind ui``: the browsing page, over a real Lucene index of the demo history and the fixture exports,
served by the real ``refind ui`` command on loopback, read with httpx and in a real headless Chromium
(tests/chromium_helpers.py: Debian's chromium driven by Playwright)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from click.testing import CliRunner

import refind
from refind.cli import EXIT_ERROR, main
from refind.loaders import iter_sessions
from tests.chromium_helpers import browser

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
LONG = "long-thread"
HOSTILE = "hostile"
CODE_MAIN = "5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f"
T0 = 1_717_200_000_000  # 2024-06-01


def _build(index: Path) -> None:
    with refind.Memory(index) as mem:
        mem.import_sessions(iter_sessions(ROOT / "examples" / "data" / "chat_history.jsonl"))
        for source in (FIXTURES / "chatgpt" / "conversations.json", FIXTURES / "claude-code"):
            mem.import_sessions(s.model_copy(update={"user_id": "maya"}) for s in iter_sessions(source))
        mem.add(
            "maya",
            HOSTILE,
            [
                {
                    "role": "user",
                    "content": "<script>window.__pwned = 1</script> zanzibar plan",
                    "timestamp": T0,
                },
                {
                    "role": "assistant",
                    "content": '<img src=x onerror="window.__pwned = 2"> "quoted" & more',
                    "timestamp": T0 + 60_000,
                },
            ],  # fmt: skip
            title="<b>Zanzibar</b> & co",
            source="jsonl",
        )
        turns = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} of the long thread"
             + (" about the quokka sanctuary" if i == 77 else ""), "timestamp": T0 + 86_400_000 + i * 1000}
            for i in range(130)
        ]  # fmt: skip
        mem.add("maya", LONG, turns, title="A long thread")
        mem.add("someone-else", "theirs", [{"role": "user", "content": "zanzibar secret of someone else"}])


class UI:
    """A running page; ``get`` sends the cookie its printed link sets (``?token=``)."""

    def __init__(self, proc: subprocess.Popen[str], printed: str, log: Path) -> None:
        parts = urlsplit(printed)
        self.proc, self.log = proc, log
        self.url, self.port = f"http://127.0.0.1:{parts.port}", parts.port
        self.token = parse_qs(parts.query)["token"][0]
        self.cookies = {f"refind-ui-{parts.port}": self.token}

    def get(self, path: str, **kwargs: object) -> httpx.Response:
        return httpx.get(self.url + path, timeout=60.0, cookies=self.cookies, **kwargs)  # type: ignore[arg-type]


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    env["REFIND_DATA"] = str(tmp / "default-data")
    env["PYTHONPATH"] = str(ROOT)
    return env


def _start(
    args: list[str], tmp: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str, Path]:
    """``refind ARGS`` in a child; waits for its 'refind ui: ... at URL' line; (process, URL, log)."""
    log = tmp / f"ui-{os.urandom(3).hex()}.log"
    fh = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "refind.cli", *args], stdout=fh, stderr=subprocess.STDOUT, text=True,
        env=env or _env(tmp), cwd=tmp,
    )  # fmt: skip
    fh.close()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(r"at (http://\S+) \(Ctrl-C", log.read_text())
        if found:
            return proc, found.group(1), log
        if proc.poll() is not None:
            raise AssertionError(f"refind ui exited {proc.returncode}: {log.read_text()}")
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"refind ui did not start: {log.read_text()}")


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ui") / "index"
    _build(path)
    return path


@pytest.fixture(scope="module")
def ui(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UI]:
    tmp = tmp_path_factory.mktemp("ui-run")
    proc, url, log = _start(["--data", str(index), "ui", "--user", "maya", "--port", "0"], tmp)
    yield UI(proc, url, log)
    assert _stop(proc) in (0, 130), log.read_text()


# ---------------------------------------------------------------------------------------------- over HTTP


def test_what_the_history_holds_is_shown_as_text(ui: UI) -> None:
    page = ui.get("/search", params={"q": "zanzibar plan"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    body = re.sub(r"</?mark>", "", page.text)  # the words that matched are highlighted
    assert "<script>window" not in body and "<img src=x" not in body and "<b>Zanzibar" not in body
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt; zanzibar plan" in body
    assert "&lt;img src=x onerror=&quot;window.__pwned = 2&quot;&gt;" in body
    assert "&lt;b&gt;Zanzibar&lt;/b&gt; &amp; co" in body
    assert "someone else" not in body  # one person's history only
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp  # no script may run at all
    assert "<script" not in ui.get("/").text.lower()


def test_bad_input_is_a_page_that_says_so_with_a_4xx(ui: UI) -> None:
    cases = {
        "/search?q=": (400, "type some words"),
        "/search?q=%20%20": (400, "type some words"),
        "/search": (400, "type some words"),
        "/search?q=" + "word%20" * 1000: (400, "max_query_chars"),
        "/?offset=-3": (400, "not a page"),
        "/?offset=99999999999999999999": (400, "not a page"),
        "/session/" + LONG + "?from=abc": (400, "not a page"),
        "/session/" + LONG + "?from=%EF%BC%91": (400, "not a page"),  # a full-width digit
        "/session/" + LONG + "?from=100000": (404, "no turns from 100000"),
        "/session/" + LONG + "?hit=x": (400, "not a turn number"),
        "/session/no-such-session": (404, "there is no session"),
        "/session/theirs": (404, "there is no session"),  # someone else's session is not this user's
        "/session/bad%00id": (400, "session_id"),
        "/nowhere": (404, "there is no page"),
    }
    for path, (status, words) in cases.items():
        page = ui.get(path)
        assert page.status_code == status, (path, page.status_code, page.text[:500])
        assert page.headers["content-type"].startswith("text/html"), path
        assert words in page.text, (path, page.text[:2000])
        assert "Traceback" not in page.text
    assert httpx.post(ui.url + "/", timeout=30, cookies=ui.cookies).status_code == 405
    rebound = ui.get("/", headers={"Host": "attacker.example"})  # DNS rebinding: not a loopback name
    assert rebound.status_code == 400 and "loopback" in rebound.text


def test_the_home_page_lists_sessions_with_titles_sources_and_filters(ui: UI) -> None:
    home = ui.get("/").text
    assert "Lisbon in May" in home and "chatgpt" in home and "A long thread" in home
    assert '<option value="claude-code">' in home
    only = ui.get("/", params={"source": "chatgpt"}).text
    assert "Lisbon in May" in only and "A long thread" not in only
    found = ui.get("/search", params={"q": "lisbon", "source": "claude-code"}).text
    assert "Lisbon in May" not in found


def test_a_long_session_is_paged_and_its_hit_marked(ui: UI) -> None:
    found = ui.get("/search", params={"q": "quokka sanctuary"}).text
    link = re.search(r'<a href="(/session/long-thread[^"#]*)#t77">A long thread</a>', found)
    assert link, found
    first = ui.get(link.group(1).replace("&amp;", "&"))
    assert first.status_code == 200
    turns = re.findall(r'<li class="turn (hit|context)" id=t(\d+)', first.text)
    assert [int(n) for _, n in turns] == list(range(50, 100))
    assert [int(n) for kind, n in turns if kind == "hit"] == [77]
    assert '<option value="chatgpt">' in first.text  # the search box keeps its filters here too
    following = re.search(r'<a rel=next href="([^"]+)"', first.text)
    assert following
    last = ui.get(following.group(1).replace("&amp;", "&")).text
    assert [int(n) for n in re.findall(r"id=t(\d+)", last)] == list(range(100, 130))
    assert "rel=next" not in last and "rel=prev" in last


def test_a_host_off_loopback_is_refused_unless_allowed(index: Path) -> None:
    done = CliRunner().invoke(main, ["--data", str(index), "ui", "--host", "0.0.0.0", "--port", "0"])
    assert done.exit_code == EXIT_ERROR
    assert "not a loopback address" in done.output and "--allow-remote" in done.output
    missing = CliRunner().invoke(main, ["--data", str(index.parent / "nothing-here"), "ui", "--port", "0"])
    assert missing.exit_code == EXIT_ERROR and len(missing.output.strip().splitlines()) == 1


def test_a_host_header_that_is_not_host_and_port_is_refused(ui: UI) -> None:
    """Issue 39: the Host check took ``[::1]evil.com`` for the loopback ``::1``."""
    for host in ("[::1]evil.com", "[::1]:80evil.com", "127.0.0.1:80:80", "127.0.0.1@evil.com", "[evil.com]"):
        page = ui.get("/", headers={"Host": host})
        assert page.status_code == 400 and "loopback" in page.text, (host, page.status_code)
    for host in (f"127.0.0.1:{ui.port}", f"[::1]:{ui.port}", "localhost", "[::1]"):
        assert ui.get("/", headers={"Host": host}).status_code == 200, host


def test_without_this_starts_secret_nothing_is_read(ui: UI) -> None:
    """Issue 39: any local account read the history. The printed link's token sets the cookie; a
    request with neither, with a wrong token or another port's cookie gets 403 and nothing stored."""
    for path in ("/", "/search?q=zanzibar", f"/session/{HOSTILE}", "/nowhere"):
        bare = httpx.get(ui.url + path, timeout=60)
        assert bare.status_code == 403 and "zanzibar" not in bare.text.lower(), (path, bare.text[:300])
        assert "token" in bare.text and "Lisbon" not in bare.text
    wrong = httpx.get(ui.url + "/search", params={"q": "zanzibar", "token": "x" + ui.token}, timeout=60)
    assert wrong.status_code == 403 and "zanzibar" not in wrong.text.lower()
    other_port = httpx.get(ui.url + "/", cookies={"refind-ui-1": ui.token}, timeout=60)
    assert other_port.status_code == 403
    first = httpx.get(ui.url + "/search", params={"q": "zanzibar", "token": ui.token}, timeout=60)
    assert first.status_code == 200 and "zanzibar plan" in re.sub(r"</?mark>", "", first.text)  # highlighted
    cookie = first.headers["set-cookie"]
    assert (
        f"refind-ui-{ui.port}={ui.token}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    )
    assert httpx.get(ui.url + "/style.css", timeout=60).status_code == 200  # no secret in a style sheet


def test_another_account_on_this_machine_cannot_read_the_page(ui: UI) -> None:
    """The trial of issue 39: another uid fetched /search?q=kayak and got the owner's messages."""
    if os.getuid() != 0:
        pytest.skip("acting as another user needs root")
    probe = (
        "import encodings.idna, os, socket, sys\n"  # imported before the files become unreadable
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=60)\n"
        "s.sendall(b'GET /search?q=zanzibar HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n')\n"
        "print(b''.join(iter(lambda: s.recv(65536), b'')).decode())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(ui.port)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("HTTP/1.1 403 "), done.stdout[:500]
    assert "zanzibar plan" not in done.stdout
    assert ui.token not in Path(f"/proc/{ui.proc.pid}/cmdline").read_text()  # not in the process list


def test_no_token_serves_without_a_secret(index: Path, tmp_path: Path) -> None:
    proc, url, log = _start(
        ["--data", str(index), "ui", "--user", "maya", "--port", "0", "--no-token"], tmp_path
    )
    try:
        assert "token" not in url
        page = httpx.get(url + "search", params={"q": "zanzibar"}, timeout=60)
        assert page.status_code == 200 and "zanzibar plan" in re.sub(r"</?mark>", "", page.text)
    finally:
        assert _stop(proc) in (0, 130), log.read_text()


def test_connections_that_never_finish_their_headers_are_closed(ui: UI) -> None:
    """Issue 39: the page had no header timeout (19,990 half-sent requests made every GET fail until they
    were released). Each is now answered 408 and closed after the deadline (10 s), and a GET meanwhile
    is served."""
    host, port = "127.0.0.1", ui.port
    half = []
    try:
        for _ in range(200):
            s = socket.create_connection((host, port), timeout=30)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            half.append(s)
        silent = [socket.create_connection((host, port), timeout=30) for _ in range(20)]
        half += silent
        assert ui.get("/").status_code == 200
        started = time.monotonic()
        for s in half:
            s.settimeout(max(1.0, 25 - (time.monotonic() - started)))
            try:
                data = s.recv(65536)
            except TimeoutError:
                pytest.fail(f"a half-sent request still open after {time.monotonic() - started:.0f} s")
            except ConnectionResetError:
                data = b""
            assert data == b"" or data.startswith(b"HTTP/1.1 408 "), data[:100]
        assert time.monotonic() - started < 25
    finally:
        for s in half:
            s.close()
    assert ui.get("/").status_code == 200


# ---------------------------------------------------------------------------------------------- in Chromium


def test_search_and_open_a_session_in_a_real_browser(ui: UI) -> None:
    with browser() as context:
        page = context.new_page()
        page.goto(f"{ui.url}/?token={ui.token}")  # the link refind ui prints: it sets the cookie
        assert page.title() == "maya's sessions · refind"
        page.fill("input[name=q]", "what did the vet give Pixel?")
        page.press("input[name=q]", "Enter")
        page.wait_for_url(re.compile(r"/search\?q="))
        sessions = page.locator("section.session")
        assert sessions.count() >= 2
        titles = sessions.locator("h2").all_inner_texts()
        assert len(titles) == len(set(titles))  # grouped: one section per session
        assert all(sessions.nth(i).locator("li.turn.hit").count() >= 1 for i in range(sessions.count()))
        hit = page.locator("li.turn.hit").first
        context_turn = page.locator("li.turn.context").first
        style = "e => getComputedStyle(e).backgroundColor + ' ' + getComputedStyle(e).borderLeftColor"
        assert hit.evaluate(style) != context_turn.evaluate(style)  # hits are visibly marked
        meta = sessions.first.locator(".meta").inner_text()
        assert re.search(r"\b20\d\d\b", meta)  # the session's dates

        page.fill("input[name=q]", "zanzibar plan")
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert page.evaluate("typeof window.__pwned") == "undefined"
        shown = page.locator(f'section.session[data-session="{HOSTILE}"]')
        assert shown.locator("h2").inner_text() == "<b>Zanzibar</b> & co"
        assert "<script>window.__pwned = 1</script> zanzibar plan" in shown.inner_text()

        page.fill("input[name=q]", "quokka sanctuary")
        page.press("input[name=q]", "Enter")
        page.wait_for_url(re.compile(r"q=quokka"))
        page.click(f'section.session[data-session="{LONG}"] h2 a')
        page.wait_for_url(re.compile(r"/session/long-thread"))
        assert page.locator("h1").inner_text() == "A long thread"
        assert page.locator("li.turn.hit").get_attribute("id") == "t77"
        assert page.locator("li.turn").count() == 50
        page.click("a[rel=next]")
        page.wait_for_url(re.compile(r"from=100"))
        assert page.locator("li.turn").count() == 30
        page.click("a.home")
        page.wait_for_url(re.compile(r"/$"))
        assert page.locator("table.sessions tbody tr").count() >= 20


def test_the_page_separates_highlights_filters_and_orders_in_a_real_browser(ui: UI, index: Path) -> None:
    """Issue 38: separators between source, project and dates; the words that matched highlighted; compact
    date ranges; a period and an "as of" day; best first or time order; untitled sessions titled by their
    first message; a start of a session id opens the session."""
    with browser() as context:
        page = context.new_page()
        page.goto(f"{ui.url}/?token={ui.token}")  # the link refind ui prints: it sets the cookie
        derived = page.locator('tr[data-session="2024-01-07"] .derived')
        assert derived.inner_text().startswith("“Happy new year! I want to get more organised")
        code_row = page.locator(f'tr[data-session="{CODE_MAIN}"]')
        assert code_row.locator("td").nth(1).inner_text() == "claude-code · /home/maya/projects/weather"

        page.fill("input[name=q]", "flaky forecast cache")
        page.press("input[name=q]", "Enter")
        page.wait_for_url(re.compile(r"/search\?q="))
        code = page.locator(f'section.session[data-session="{CODE_MAIN}"]')
        meta = code.locator(".meta").inner_text()
        assert re.fullmatch(
            r"claude-code · /home/maya/projects/weather · Fri 20 Jun 2025, 09:00–09:\d\d UTC · session "
            + re.escape(CODE_MAIN),
            meta,
        ), meta  # separated, and one day written once
        marks = code.locator("li.turn.hit mark")
        assert marks.count() >= 2
        assert {m.lower() for m in marks.all_inner_texts()} >= {"forecast", "cache"}
        mark_bg = marks.first.evaluate("e => getComputedStyle(e).backgroundColor")
        hit_bg = code.locator("li.turn.hit").first.evaluate("e => getComputedStyle(e).backgroundColor")
        assert mark_bg != hit_bg and mark_bg not in ("rgba(0, 0, 0, 0)", "transparent")

        question = "what did the vet give Pixel?"
        with refind.Memory(index, read_only=True) as mem:
            best = mem.search(question, "maya").sessions()
        page.fill("input[name=q]", question)
        page.press("input[name=q]", "Enter")
        page.wait_for_url(re.compile(r"q=what"))
        shown = page.locator("section.session").evaluate_all("els => els.map(e => e.dataset.session)")
        assert shown == [s for s in best if s in shown] and shown[0] == best[0]  # best first by default
        assert "best first" in page.locator("main .meta").first.inner_text()
        page.select_option("select[name=order]", "time")
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r"order=time"))
        in_time = page.locator("section.session").evaluate_all("els => els.map(e => e.dataset.session)")
        dated = [s for s in in_time if re.fullmatch(r"2024-\d\d-\d\d", s)]
        assert sorted(in_time) == sorted(shown) and dated == sorted(dated) and in_time != shown

        page.fill("input[name=q]", "climbing")
        page.select_option("select[name=order]", "best")
        page.fill("header input[name=since]", "2024-06-01")
        page.fill("header input[name=until]", "2024-06-30")
        page.press("input[name=q]", "Enter")
        page.wait_for_url(re.compile(r"since=2024-06-01"))
        june = page.locator("section.session").evaluate_all("els => els.map(e => e.dataset.session)")
        assert june and all(s.startswith("2024-06-") for s in june), june
        assert "from 2024-06-01 to 2024-06-30" in page.locator("main .meta").first.inner_text()

        firsts = {}
        for day in ("2024-03-01", "2024-06-20"):
            page.goto(ui.url + "/")
            page.fill("input[name=q]", "what were our holiday plans last month?")
            page.fill("header input[name=asof]", day)
            page.press("input[name=q]", "Enter")
            page.wait_for_url(re.compile(r"asof=" + day))
            firsts[day] = page.locator("section.session").first.get_attribute("data-session")
            assert "as of " in page.locator("main .meta").first.inner_text()
        assert firsts == {"2024-03-01": "2024-02-04", "2024-06-20": "2024-05-26"}  # "last month" moved

        page.goto(ui.url + "/session/5f0c2d4e")  # the start of an id, as `refind sessions` shows it
        assert page.url.endswith("/session/" + CODE_MAIN)
        assert page.locator("h1").inner_text() == "Fix flaky forecast cache test"
        page.goto(ui.url + "/session/2024-01-0")
        assert page.locator("h1").inner_text().startswith("“Happy new year!")


def test_bad_periods_and_orders_are_pages_that_say_so(ui: UI) -> None:
    cases = {
        "/search?q=x&since=yesterday": (400, "is not a day: expected YYYY-MM-DD"),
        "/search?q=x&asof=2024-02-30": (400, "is not a day"),
        "/search?q=x&since=2024-06-02&until=2024-06-01": (400, "the period runs backwards"),
        "/search?q=x&order=random": (400, "is not an order: expected best or time"),
        "/search?q=x&source=bogus": (400, "source &#x27;bogus&#x27;: no session has it"),
        "/session/2024": (400, "is ambiguous"),
    }
    for path, (status, words) in cases.items():
        page = ui.get(path)
        assert page.status_code == status and words in page.text, (path, page.status_code, page.text[:800])


def test_the_page_shows_dates_in_the_zone_given(index: Path, tmp_path: Path) -> None:
    proc, url, log = _start(
        ["--data", str(index), "--tz", "America/Los_Angeles", "ui", "--user", "maya", "--port", "0"], tmp_path
    )
    try:
        base, _, token = url.partition("?")  # the printed link carries this start's secret
        page = httpx.get(f"{base}session/{CODE_MAIN}?{token}", timeout=60).text
        assert "Fri 20 Jun 2025, 02:00–02:" in page and "2025-06-20 02:00 PDT" in page, page[:3000]
    finally:
        assert _stop(proc) in (0, 130), log.read_text()


# ---------------------------------------------------------------------------------------------- docs


def test_the_ui_examples_in_docs_cli_md_run(index: Path, tmp_path: Path) -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## refind ui\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("Examples:\n", 1)[1].split("\n\n", 1)[0]
    examples = [line.strip() for line in block.splitlines() if line.strip().startswith("refind ")]
    assert len(examples) >= 2
    env = {**_env(tmp_path), "REFIND_DATA": str(index)}
    for line in examples:
        proc, url, log = _start(shlex.split(line)[1:], tmp_path, env)
        try:
            home = httpx.get(url, timeout=60)
            assert home.status_code == 200 and "sessions · refind" in home.text, (line, home.text[:300])
        finally:
            assert _stop(proc) in (0, 130), log.read_text()


def test_a_missing_browser_skips_here_and_fails_where_it_is_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.chromium_helpers import REQUIRE_ENV, require_browser

    monkeypatch.delenv("REFIND_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no chromium on it
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium on PATH"):
        require_browser()
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="REFIND_REQUIRE_CHROMIUM=1 requires it"):
        require_browser()


def test_the_page_uses_only_the_public_facade() -> None:
    sources = sorted((ROOT / "refind" / "ui").glob("*.py"))
    imports = [
        line.strip()
        for p in sources
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith(("import ", "from ")) and "refind" in line
    ]
    allowed = {
        "import refind",
        "from refind.ui import _pages",
        # the header deadline of refind serve's HTTP protocol (the same part: refind/server and refind/ui)
        "from refind.server._protocol import protocol_class",
    }
    assert imports and set(imports) <= allowed, imports
