"""``refind ui``'s "About you" page (issue 37, item 4): what a person said that stands, with the forms that pin,
hide and unpin it, over a real Lucene index served by the real ``refind ui`` command, read with httpx and in
a real headless Chromium (tests/chromium_helpers.py). The corrections are the page's only writes: they need
the start's secret (the cookie) and the forms' own secret, and a page elsewhere cannot post one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

import refind
from tests.chromium_helpers import browser
from tests.test_ui import UI, _start, _stop

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _build(index: Path) -> None:
    with refind.Memory(index, embedder=None) as mem:
        mem.add("ana", "health", [
            {"role": "user", "content": "I'm type 1 diabetic, diagnosed when I was twelve.", "timestamp": "2024-01-02T10:00:00Z"},
            {"role": "assistant", "content": "Thanks, I'll keep carbs and insulin timing in mind.", "timestamp": "2024-01-02T10:01:00Z"},
        ], title="Diabetes and hiking")  # fmt: skip
        mem.add("ana", "home", [
            {"role": "user", "content": "We live in a third-floor walk-up apartment in Minneapolis.", "timestamp": "2024-02-02T10:00:00Z"},
            {"role": "user", "content": "Always answer in metric units.", "timestamp": "2024-02-02T10:02:00Z"},
        ], title="Apartment")  # fmt: skip
        mem.add("ana", "move", [
            {"role": "user", "content": "Update: we moved to Tucson last month.", "timestamp": "2024-05-02T10:00:00Z"},
            {"role": "user", "content": "I'm six foot seven, so most tents are too short for me.", "timestamp": "2024-05-02T10:05:00Z"},
        ], title="Moving <b>day</b>")  # fmt: skip
        mem.add("bo", "health", [{"role": "user", "content": "I'm allergic to peanuts."}])


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("about") / "index"
    _build(path)
    return path


@pytest.fixture
def ui(index: Path, tmp_path: Path) -> Iterator[UI]:
    proc, url, log = _start(["--data", str(index), "ui", "--user", "ana", "--port", "0"], tmp_path)
    try:
        yield UI(proc, url, log)
    finally:
        assert _stop(proc) in (0, 130), log.read_text()
    with refind.Memory(index, embedder=None) as mem:  # the next test starts without marks
        for m in mem.marks("ana"):
            mem.unpin("ana", m.message_id)


def _csrf(page: str) -> str:
    found = re.search(r'name=csrf value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


def _post(ui: UI, action: str, fields: dict[str, str], **kwargs: object) -> httpx.Response:
    return httpx.post(
        f"{ui.url}/about/{action}",
        data=fields,
        cookies=ui.cookies,
        timeout=60,
        **kwargs,  # type: ignore[arg-type]
    )


def _marks(index: Path) -> dict[str, str]:
    with refind.Memory(index, read_only=True, embedder=None) as mem:
        return {m.message_id: m.mark for m in mem.marks("ana")}


def test_the_about_page_lists_what_stands_and_corrects_it_over_http(ui: UI, index: Path) -> None:
    page = ui.get("/about")
    assert page.status_code == 200 and "<title>About you · refind</title>" in page.text
    rows = re.findall(r'data-message="([^"]+)"', page.text)
    assert rows == ["move:0", "home:1", "home:0", "health:0"]  # newest first; the tall one the rule misses
    assert re.search(r'id="m-home%3A0"[^>]*class=superseded', page.text)  # the move superseded it
    assert 'href="#m-move%3A0">a later one of' in page.text
    assert '/session/health?hit=0#t0">session health, turn 0' in page.text
    csrf = _csrf(page.text)

    # what protects a correction: the start's secret (cookie), the forms' secret, a small form
    bare = httpx.post(f"{ui.url}/about/hide", data={"id": "health:0", "csrf": csrf}, timeout=60)
    assert bare.status_code == 403 and "secret of the link" in bare.text
    forged = _post(ui, "hide", {"id": "health:0", "csrf": "x" + csrf})
    assert forged.status_code == 403 and "not one of this page&#x27;s" in forged.text
    assert _post(ui, "hide", {"id": "health:0"}).status_code == 403
    as_json = httpx.post(
        f"{ui.url}/about/hide", json={"id": "health:0", "csrf": csrf}, cookies=ui.cookies, timeout=60
    )
    assert as_json.status_code == 415
    big = _post(ui, "hide", {"id": "health:0", "csrf": csrf, "pad": "x" * 10_000})
    assert big.status_code == 413
    assert _marks(index) == {}

    # bad corrections say what is wrong, with a 4xx
    unknown = _post(ui, "pin", {"id": "nope:0", "csrf": csrf})
    assert (
        unknown.status_code == 400
        and "user &#x27;ana&#x27; has no message &#x27;nope:0&#x27;" in unknown.text
    )
    kind = _post(ui, "pin", {"id": "move:1", "kind": "opinion", "csrf": csrf})
    assert kind.status_code == 400 and "expected one of fact, instruction, preference" in kind.text
    assert _post(ui, "delete", {"id": "move:1", "csrf": csrf}).status_code == 404
    assert _post(ui, "pin", {"csrf": csrf}).status_code == 400
    assert ui.get("/about/pin").status_code == 405
    assert _marks(index) == {}

    hidden = _post(ui, "hide", {"id": "health:0", "csrf": csrf, "back": "/about#m-health%3A0"})
    assert hidden.status_code == 303 and hidden.headers["location"] == "/about?done=hide#m-health%3A0"
    pinned = _post(ui, "pin", {"id": "move:1", "kind": "fact", "csrf": csrf, "back": "//evil.example/x"})
    assert pinned.status_code == 303 and pinned.headers["location"] == "/about?done=pin"  # only its own paths
    assert _marks(index) == {"health:0": "hidden", "move:1": "pinned"}
    page = ui.get("/about", params={"done": "hide"})
    assert "Hidden: it no longer stands" in page.text
    listed, hidden_rows = page.text.split("<h2>Hidden</h2>")
    assert "diabetic" not in listed and "diabetic" in hidden_rows
    assert re.search(r'data-message="move:1".*?<span class=badge>pinned</span>', listed)
    session = ui.get("/session/move")
    assert "<span class='badge pinned'>pinned</span>" in session.text and ">Unpin</button>" in session.text
    unpinned = _post(ui, "unpin", {"id": "health:0", "csrf": csrf})
    assert unpinned.status_code == 303 and _marks(index) == {"move:1": "pinned"}


def test_a_correction_while_another_process_writes_the_index_is_a_409(ui: UI, index: Path) -> None:
    csrf = _csrf(ui.get("/about").text)
    with refind.Memory(index, embedder=None):  # holds the write lock, as refind serve or an import does
        locked = _post(ui, "hide", {"id": "home:1", "csrf": csrf})
    assert locked.status_code == 409 and "locked" in locked.text and "try again" in locked.text
    assert ui.get("/about").status_code == 200  # reads go on
    assert _post(ui, "hide", {"id": "home:1", "csrf": csrf}).status_code == 303


def test_pin_hide_and_unpin_in_a_real_browser(ui: UI, index: Path) -> None:
    with browser() as context:
        page = context.new_page()
        page.goto(f"{ui.url}/?token={ui.token}")  # the link refind ui prints: it sets the cookie
        page.click("a.about")
        page.wait_for_url(re.compile(r"/about$"))
        assert page.title() == "About you · refind"
        rows = page.locator("table.facts tbody tr")
        assert rows.count() == 4
        diabetic = page.locator('tr[data-message="health:0"]')
        assert "type 1 diabetic" in diabetic.inner_text() and "fact" in diabetic.inner_text()
        diabetic.locator("button", has_text="Hide").click()
        page.wait_for_url(re.compile(r"/about\?done=hide"))
        assert "it no longer stands" in page.locator(".notice").inner_text()
        assert page.locator('tr.hidden[data-message="health:0"]').count() == 1
        assert page.locator("table.facts").first.locator('tr[data-message="health:0"]').count() == 0

        page.locator('tr.hidden[data-message="health:0"] button', has_text="Unhide").click()
        page.wait_for_url(re.compile(r"done=unpin"))
        assert page.locator("tr.hidden").count() == 0 and rows.count() == 4

        # pin from a session's page: the tall one the rule does not read as standing
        page.click('tr[data-message="move:0"] a[href^="/session/move"]')
        page.wait_for_url(re.compile(r"/session/move"))
        assert page.locator("h1").inner_text() == "Moving <b>day</b>"
        page.locator("li#t1 button[value=pin]").click()
        page.wait_for_url(re.compile(r"/session/move#t1"))
        assert page.locator("li#t1 .badge").inner_text() == "pinned"
        page.click("a.about")
        tall = page.locator('tr[data-message="move:1"]')
        assert "six foot seven" in tall.inner_text() and "pinned" in tall.inner_text()
        tall.locator("select[name=kind]").select_option("preference")
        tall.locator("button[value=pin]").click()
        page.wait_for_url(re.compile(r"done=pin"))
        assert page.locator('tr[data-message="move:1"] td').nth(1).inner_text().startswith("preference")
    assert _marks(index) == {"move:1": "pinned"}
    with refind.Memory(index, read_only=True, embedder=None) as mem:
        assert [(f.kind, f.pinned) for f in mem.profile("ana") if f.message_id == "move:1"] == [
            ("preference", True)
        ]


@pytest.mark.parametrize("token", [True, False], ids=["token", "no-token"])
def test_a_page_elsewhere_cannot_post_a_correction(index: Path, tmp_path: Path, token: bool) -> None:
    """A site the person visits submits a form to the page (a cross-site POST, which a browser makes
    without asking): with the secret's cookie it is not sent (SameSite=Strict), and without a token the
    forms' secret is missing; either way a 403 and nothing changed."""
    args = ["--data", str(index), "ui", "--user", "ana", "--port", "0"] + ([] if token else ["--no-token"])
    proc, url, log = _start(args, tmp_path)
    ui_url = url.split("?", 1)[0].rstrip("/")
    try:
        with browser() as context:
            page = context.new_page()
            page.goto(url)  # the person opened the page: with a token, the cookie is set
            assert page.locator("a.about").count() == 1
            attack = (
                f'<form method=post action="{ui_url}/about/hide">'
                '<input name=id value="health:0"><input name=csrf value="guess"></form>'
                "<script>document.forms[0].submit()</script>"
            )
            page.goto("data:text/html," + quote(attack))
            page.wait_for_url(re.compile(re.escape(ui_url) + "/about/hide"))
            text = page.locator("body").inner_text()
            assert ("needs the secret" in text) if token else ("not one of this page's" in text), text
    finally:
        assert _stop(proc) in (0, 130), log.read_text()
    assert _marks(index) == {}
