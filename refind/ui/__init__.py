"""``refind ui``: a small server-rendered page to browse one person's history on loopback.

    GET /                      the sessions, the most recent first (``offset``, ``source``, ``project``,
                               ``since``, ``until``)
    GET /search?q=...          the evidence for a query, grouped by session, hit turns marked and their
                               matching words highlighted (``source``, ``project``, ``since``/``until``: a
                               period, ``asof``: the day the question is asked as of, ``order``: ``best``
                               first or ``time``)
    GET /session/{id}          one session in full, paged (``from``; ``hit`` marks turns); a unique start
                               of an id redirects to the session; each turn has a form to pin it
    GET /about                 "About you": what the person said that stands (kind, sentence, date, session,
                               current or superseded, pinned), and what they hid, with the forms to correct it
    POST /about/pin|hide|unpin a correction (form fields ``id``, ``kind`` for pin, ``csrf``, ``back``), then a
                               303 to ``back`` (a path of this page)
    GET /style.css             the one style sheet (the pages carry no script)

Dates are shown in the time zone given (``refind --tz``, else ``$TZ``, else this machine's); days given in the
page (``since``, ``until``, ``asof``) are days in that zone.

Built on the public facade only (:class:`refind.Memory`, opened read-only so it works beside a running
``refind serve`` or import) and on FastAPI/uvicorn, the ``serve`` extra. Every value is HTML-escaped; the
Content-Security-Policy allows no script. Bad input (an empty query, a page number that is not one, an
unknown session or path) is a page that says what was wrong, with a 4xx status, never a 5xx. It listens on
a loopback address unless ``allow_remote`` is given, and answers only requests addressed to it by a
loopback name (a web page elsewhere cannot read it through DNS rebinding).

Another account on the same machine reaches loopback too, so each start makes a secret: the URL it prints
carries it (``?token=...``), the first page read with it sets a cookie, and a request with neither gets 403
(``token=False``: no secret, as a notebook server's ``--no-token``).

The corrections (pin, hide, unpin: :meth:`refind.Memory.pin`) are the page's only writes. Each is a form
post that must carry, besides the secret's cookie (``SameSite=Strict``: a page elsewhere cannot send it), a
second secret made at each start and written only into this page's forms (``csrf``), so that even without a
token (``--no-token``) a page elsewhere cannot post one; a post without it is a 403, a body that is not a
small URL-encoded form a 4xx. A correction opens the index for writing for that moment (``writer``), so a
process that holds the write lock (``refind serve``, an import) makes it a 409 that says so; reads stay
read-only. A request's headers must arrive within
``read_timeout_s`` of the connection (else 408 and the connection is closed), and an idle kept-alive
connection is closed after 5 s, so connections that never finish their headers cannot pile up.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import re
import secrets
import socket
from collections.abc import Callable
from datetime import date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

import refind
from refind.server._protocol import protocol_class
from refind.ui import _pages

__all__ = ["build_app", "loopback", "serve"]

log = logging.getLogger("refind.ui")

MAX_OFFSET = 10**6
"""The largest ``offset`` of the session list (and ``from`` of a session page: :data:`MAX_TURN`)."""
MAX_TURN = 2**31 - 1
MAX_HITS = 200
"""At most this many ``hit`` turns are marked on a session page; more is a bad request."""
MAX_FORM = 8192
"""Bytes of a correction's form at most (a message id is at most 512 characters)."""
_DONE = {
    "pin": "Pinned: it stands as you chose, whatever the rule reads in it.",
    "hide": "Hidden: it no longer stands (searches still find it).",
    "unpin": "Unmarked: what stands in it is again what the rule reads.",
}
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.hint = status, message, hint


def loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_HOST = re.compile(r"\[(?P<v6>[0-9A-Fa-f:.]+)\](?::[0-9]{1,5})?|(?P<name>[^\s:/@\[\]?#]+)(?::[0-9]{1,5})?")


def _host_name(header: str) -> str | None:
    """The host of a ``Host`` header without its port (``[::1]:8000`` -> ``::1``), or None when the
    header is not ``host[:port]`` (``[::1]evil.com``)."""
    found = _HOST.fullmatch(header)
    if found is None:
        return None
    return found.group("v6") or found.group("name")


def _int_param(params: Any, name: str, default: int, limit: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isascii() or not raw.isdigit() or len(raw) > 12 or int(raw) > limit:
        raise _BadRequest(
            400, f"{name}={raw[:40]!r} is not a page: expected a whole number from 0 to {limit}"
        )
    return int(raw)


def _text_param(params: Any, name: str) -> str | None:
    raw = params.get(name)
    if raw is None or not raw.strip():
        return None
    if len(raw) > 1000:
        raise _BadRequest(400, f"{name}: at most 1000 characters")
    return str(raw.strip())


def _day_param(params: Any, name: str) -> str | None:
    """A day given as ``YYYY-MM-DD`` (what a date input sends), or None when left empty."""
    raw = params.get(name)
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise _BadRequest(400, f"{name}={raw[:40]!r} is not a day: expected YYYY-MM-DD, such as 2024-05-08")


def _day_ms(day: str, tz: tzinfo, *, end: bool = False) -> int:
    """The first (or, with ``end``, the last) millisecond of ``day`` in ``tz``, epoch ms."""
    d = date.fromisoformat(day) + (timedelta(days=1) if end else timedelta(0))
    ms = int(datetime(d.year, d.month, d.day, tzinfo=tz).timestamp() * 1000)
    return ms - 1 if end else ms


TOKEN_PARAM = "token"


def _cookie(port: int | None) -> str:
    """The cookie of the page on ``port`` (cookies do not tell ports apart: one name per port)."""
    return f"refind-ui-{port or 0}"


async def _form(request: Request) -> dict[str, str]:
    """A correction's fields: a URL-encoded form of at most :data:`MAX_FORM` bytes, else a 4xx."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise _BadRequest(415, "a correction is a form of this page (application/x-www-form-urlencoded)")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise _BadRequest(413, f"a correction's form holds at most {MAX_FORM} bytes")
    try:
        return dict(
            parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=8, strict_parsing=False)
        )
    except (UnicodeDecodeError, ValueError):
        raise _BadRequest(400, "the form could not be read: reload the page and try again") from None


def _back(raw: str | None) -> str:
    """Where a correction returns: a path of this page (``/...``, not ``//host``), else the About you page."""
    if not raw or not raw.startswith("/") or raw.startswith("//") or "\\" in raw or len(raw) > 2000:
        return "/about"
    return raw if raw.isascii() and raw.isprintable() else "/about"


def build_app(
    memory: refind.Memory,
    user_id: str = "me",
    *,
    allow_remote: bool = False,
    tz: tzinfo | None = None,
    token: str | None = None,
    writer: Callable[[], refind.Memory] | None = None,
) -> FastAPI:
    """The FastAPI application of the browsing page over ``memory``, for ``user_id``'s history.

    ``allow_remote`` answers requests addressed to any host name (else only to a loopback one). Dates are
    shown in ``tz`` (default: :func:`refind.time_zone`'s, this machine's). With ``token``, a request must
    carry it, as ``?token=`` (which sets the cookie) or in the cookie; else 403. ``writer`` opens the memory
    writable for one correction (closed after it); without it a writable ``memory`` makes them itself, and a
    read-only one makes none (the About you page lists only)."""
    zone = tz if tz is not None else refind.time_zone()
    app = FastAPI(title="refind ui", docs_url=None, redoc_url=None, openapi_url=None)
    csrf = secrets.token_urlsafe(24)  # the forms' secret (module docstring)
    can_correct = writer is not None or not memory.read_only

    def corrections() -> _pages.Corrections | None:
        if not can_correct:
            return None
        return _pages.Corrections(csrf, {m.message_id: m.mark for m in memory.marks(user_id)})

    def page(status: int, body: str) -> HTMLResponse:
        return HTMLResponse(body, status_code=status, headers=_HEADERS)

    def problem(status: int, message: str, hint: str = "", query: str = "") -> HTMLResponse:
        return page(status, _pages.problem_page(status, message, hint=hint, user=user_id, query=query))

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Any:
        header = request.headers.get("host", "")
        host = _host_name(header)
        if host is None or (not allow_remote and not loopback(host)):
            return problem(400, f"this page answers only on a loopback address, not {header[:80]!r}")
        if token is None or request.url.path == "/style.css":
            return await call_next(request)
        cookie = _cookie(request.scope.get("server", (None, None))[1])
        given = request.query_params.get(TOKEN_PARAM)
        held = request.cookies.get(cookie)
        if given is not None and hmac.compare_digest(given.encode(), token.encode()):
            response = await call_next(request)
            response.set_cookie(cookie, token, httponly=True, samesite="strict", path="/")
            return response
        if given is None and held is not None and hmac.compare_digest(held.encode(), token.encode()):
            return await call_next(request)
        return page(
            403,
            _pages.problem_page(
                403,
                "this page needs the secret of the link refind ui printed when it started"
                + (" (this one is not it)" if given is not None else ""),
                hint="open the URL with ?token=... from the terminal that runs refind ui; it changes each "
                "time refind ui starts",
            ),
        )

    @app.exception_handler(_BadRequest)
    async def bad_request(request: Request, exc: _BadRequest) -> HTMLResponse:
        return problem(exc.status, exc.message, exc.hint, query=request.query_params.get("q", "")[:1000])

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> HTMLResponse:
        if exc.status_code == 404:
            return problem(404, f"there is no page {request.url.path[:200]!r} here")
        if exc.status_code == 405:
            return problem(
                405,
                f"{request.method} is not allowed here: the pages are read with GET (the corrections are the "
                "forms of the About you page)",
            )
        return problem(exc.status_code, str(exc.detail))

    @app.exception_handler(refind.RefindError)
    async def store_error(request: Request, exc: refind.RefindError) -> HTMLResponse:
        if isinstance(exc, refind.InvalidInput):
            return problem(400, str(exc), query=request.query_params.get("q", "")[:1000])
        log.warning("refind ui: %s", exc)
        return problem(503, str(exc), "the index could not be read; try again, or check the terminal")

    def labels() -> tuple[list[str], list[str]]:
        return memory.labels(user_id)

    def view(params: Any, query: str = "") -> _pages.View:
        order = params.get("order") or "best"
        if order not in ("best", "time"):
            raise _BadRequest(400, f"order={order[:40]!r} is not an order: expected best or time")
        since, until = _day_param(params, "since"), _day_param(params, "until")
        if since and until and since > until:
            raise _BadRequest(400, f"the period runs backwards: from {since} to {until}")
        sources, projects = labels()
        return _pages.View(
            query=query, source=_text_param(params, "source"), project=_text_param(params, "project"),
            since=since, until=until, asof=_day_param(params, "asof"), order=order, sources=sources,
            projects=projects, tz=zone,
        )  # fmt: skip

    def period(v: _pages.View) -> tuple[int | None, int | None]:
        """The view's period as epoch ms: the first millisecond of ``since``, the last of ``until``."""
        return (
            _day_ms(v.since, zone) if v.since else None,
            _day_ms(v.until, zone, end=True) if v.until else None,
        )

    @app.get("/style.css")
    def style() -> Response:
        return Response(_pages.STYLE, media_type="text/css", headers=_HEADERS)

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request) -> HTMLResponse:
        params = request.query_params
        offset = _int_param(params, "offset", 0, MAX_OFFSET)
        v = view(params)
        rows = memory.sessions(
            user_id, source=v.source, project=v.project, limit=_pages.LIST_PAGE + 1, offset=offset,
            date_from=period(v)[0], date_to=period(v)[1],
        )  # fmt: skip
        body = _pages.home_page(
            user_id, rows[: _pages.LIST_PAGE], offset=offset, more=len(rows) > _pages.LIST_PAGE, view=v
        )
        return page(200, body)

    @app.get("/search", response_class=HTMLResponse)
    async def search(request: Request) -> HTMLResponse:
        params = request.query_params
        query = params.get("q", "")
        if not query.strip():
            raise _BadRequest(
                400, "type some words to search for", "for example: what did I decide about the trip?"
            )

        def run() -> HTMLResponse:
            v = view(params, query)
            now = _day_ms(v.asof, zone, end=True) if v.asof else None
            lo, hi = period(v)
            result = memory.search(
                query, user_id, source=v.source, project=v.project, now=now, date_from=lo, date_to=hi
            )
            untitled = [e.session_id for e in result.evidence if not e.title]
            titles = memory.derived_titles(user_id, untitled)
            return page(200, _pages.results_page(user_id, result, v, titles))

        return await run_in_threadpool(run)

    @app.get("/session/{session_id:path}", response_class=HTMLResponse)
    def session(request: Request, session_id: str) -> Response:
        params = request.query_params
        turn_from = _int_param(params, "from", 0, MAX_TURN)
        raw_hits = params.getlist("hit")
        if len(raw_hits) > MAX_HITS:
            raise _BadRequest(400, f"at most {MAX_HITS} hit turns can be marked")
        hits = []
        for raw in raw_hits:
            if not raw.isascii() or not raw.isdigit() or len(raw) > 10:
                raise _BadRequest(400, f"hit={raw[:40]!r} is not a turn number")
            hits.append(int(raw))
        info = memory.session_info(user_id, session_id)
        if info is None:
            named = memory.resolve_session(user_id, session_id)  # the start of an id: its page
            if named != session_id:
                query = urlencode(list(params.multi_items()))
                return RedirectResponse(
                    _pages.session_path(named) + (f"?{query}" if query else ""), status_code=307,
                    headers=_HEADERS,
                )  # fmt: skip
            raise _BadRequest(
                404, f"there is no session {session_id[:200]!r}", "the list of sessions is at /"
            )
        turns = memory.window(user_id, session_id, turn_from, min(MAX_TURN, turn_from + _pages.SESSION_PAGE))
        if not turns:
            raise _BadRequest(
                404,
                f"session {session_id[:200]!r} has no turns from {turn_from} on",
                "its first page is ?from=0",
            )
        more = len(turns) > _pages.SESSION_PAGE
        sources, projects = labels()
        body = _pages.session_page(
            user_id, info, turns[: _pages.SESSION_PAGE], turn_from=turn_from, more=more, hits=hits,
            view=_pages.View(sources=sources, projects=projects, tz=zone), corrections=corrections(),
        )  # fmt: skip
        return page(200, body)

    @app.get("/about", response_class=HTMLResponse)
    def about(request: Request) -> HTMLResponse:
        done = request.query_params.get("done")
        facts = memory.profile(user_id)
        hidden = [m for m in memory.marks(user_id) if m.mark == "hidden"]
        sources, projects = labels()
        body = _pages.about_page(
            user_id, facts, hidden, view=_pages.View(sources=sources, projects=projects, tz=zone),
            corrections=corrections(), notice=_DONE.get(done or "", ""),
        )  # fmt: skip
        return page(200, body)

    @app.post("/about/{action}")
    async def correct(request: Request, action: str) -> Response:
        if action not in _DONE:
            raise _BadRequest(404, f"there is no correction {action[:40]!r}: pin, hide or unpin")
        form = await _form(request)
        given = form.get("csrf", "")
        if not hmac.compare_digest(given.encode(), csrf.encode()):
            raise _BadRequest(
                403,
                "this form is not one of this page's: its secret changes each time refind ui starts",
                "reload the page and try again",
            )
        message_id = form.get("id", "")
        if not message_id:
            raise _BadRequest(
                400, "which message? the form names none", "use the forms of the About you page"
            )
        kind = form.get("kind") or "fact"
        if not can_correct:
            raise _BadRequest(403, "this page was started without a way to write the index: it lists only")

        def run() -> None:
            target = writer() if writer is not None else memory
            try:
                if action == "pin":
                    target.pin(user_id, message_id, kind)  # type: ignore[arg-type]  # Memory checks it
                elif action == "hide":
                    target.hide(user_id, message_id)
                else:
                    target.unpin(user_id, message_id)
            finally:
                if target is not memory:
                    target.close()

        try:
            await run_in_threadpool(run)
        except refind.IndexLocked as exc:
            raise _BadRequest(
                409, str(exc), "a correction writes the index: try again once the other process is done"
            ) from None
        back = _back(form.get("back"))
        if back == "/about" or back.startswith("/about#"):
            back = f"/about?done={action}" + back[len("/about") :]
        return RedirectResponse(back, status_code=303, headers=_HEADERS)

    return app


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)  # now: the URL is printed before uvicorn starts, and a browser may come at once
    except OSError as exc:
        sock.close()
        raise refind.SetupError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port (0: any free one)"
        ) from exc
    return sock


def serve(
    location: str | os.PathLike[str] | None,
    *,
    user_id: str = "me",
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_remote: bool = False,
    port_file: str | os.PathLike[str] | None = None,
    ready: Callable[[str], object] | None = None,
    tz: tzinfo | None = None,
    token: bool = True,
    read_timeout_s: float = 10.0,
) -> None:
    """Serve the browsing page of ``user_id``'s history in ``location`` until Ctrl-C or SIGTERM.

    A host that is not loopback is refused unless ``allow_remote`` (anyone who reaches the page and holds
    its secret reads the history). The index is opened read-only; a correction (pin, hide) opens it for
    writing for that moment. ``port=0`` picks a free port; ``ready``
    is called with the page's URL once the socket is bound (and the port written to ``port_file``): with
    ``token`` (the default) the URL carries this start's secret, which every request needs (module
    docstring). ``read_timeout_s``: a request's headers must arrive within it (else 408, closed). Dates are
    shown in ``tz`` (default: this machine's zone, or ``$TZ``)."""
    import uvicorn

    if not loopback(host) and not allow_remote:
        raise refind.InvalidInput(
            f"--host {host} is not a loopback address: the page is plain HTTP, so anyone who reaches it and "
            "sees its link reads the history; use 127.0.0.1 (the default), or add --allow-remote if you mean it",
            field="host",
        )
    memory = refind.Memory(location, read_only=True)
    sock: socket.socket | None = None
    try:
        memory.session_info(user_id, "-")  # checks the user id now, not at the first request
        sock = _bind(host, port)
        bound = sock.getsockname()[1]
        secret = secrets.token_urlsafe(24) if token else None
        app = build_app(
            memory, user_id, allow_remote=allow_remote, tz=tz, token=secret,
            writer=lambda: refind.Memory(location, embedder=None),
        )  # fmt: skip
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="off",
                server_header=False,
                http=protocol_class(read_timeout_s),
                timeout_keep_alive=5,
            )
        )
        url = f"http://{f'[{host}]' if ':' in host else host}:{bound}/"
        if secret is not None:
            url += f"?{TOKEN_PARAM}={secret}"
        if ready is not None:
            ready(url)
        if port_file is not None:
            Path(port_file).write_text(f"{bound}\n", encoding="utf-8")
        server.run(sockets=[sock])
    finally:
        memory.close()
        if sock is not None:
            sock.close()
        if port_file is not None:
            Path(port_file).unlink(missing_ok=True)
