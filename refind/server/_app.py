"""The FastAPI application: routes, auth, error mapping and the Memory's lifetime.

Nothing here searches or stores; every route is one call on :class:`refind.Memory`, run in the thread pool
(the index calls block). Errors map as: field validation -> 422 with structured details;
:class:`refind.InvalidInput` -> 422, :class:`refind.RequestConflict` -> 409, :class:`refind.StoreError`
and :class:`refind.SetupError` -> 503 with ``Retry-After``; all as ``{"detail": {"reason": ...}}``.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio.to_thread
from fastapi import Depends, FastAPI, HTTPException, Request, Security
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader
from starlette.exceptions import HTTPException as StarletteHTTPException

import refind
from refind.server._config import ServerConfig
from refind.server._guard import Guard
from refind.server._models import (
    AddRequest,
    AddResponse,
    DeleteRequest,
    DeleteResponse,
    HealthResponse,
    InputMessage,
    SearchRequest,
    SearchResponse,
    StatsResponse,
    content_text,
    query_text,
)
from refind.server._pool import SearchPool, search_items, settle_heap

__all__ = ["build_app"]

log = logging.getLogger("refind.server")

_DAY_MS = 86_400_000
_ADD_PATHS = frozenset({"/add", "/v1/memories/add"})
_ERROR = {"description": '``{"detail": {"reason": ...}}``'}


def _reason(
    status: int,
    reason: str,
    headers: dict[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> JSONResponse:
    detail: dict[str, Any] = {"reason": reason}
    if errors is not None:
        detail["errors"] = errors
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("body", "messages", 0, "name")`` -> ``messages[0].name``."""
    out = ""
    for item in loc:
        if item == "body" and not out:
            continue
        out += f"[{item}]" if isinstance(item, int) else (f".{item}" if out else str(item))
    return out


def _json_content(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return not kind or kind == "application/json" or kind.endswith("+json")


def _validation_errors(request: Request, exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    """One line naming every bad field, and the structured list (field, loc, msg, type); never the input
    (it may be large or secret) and never pydantic's internals."""
    errors: list[dict[str, Any]] = []
    for e in exc.errors():
        loc = list(e.get("loc", ()))
        if loc and loc[0] == "body":
            loc = loc[1:]
        kind = str(e.get("type", ""))
        msg = str(e.get("msg", "")).removeprefix("Value error, ")
        if kind == "json_invalid":
            ctx = e.get("ctx") or {}
            where = f" at character {loc[0]}" if loc and isinstance(loc[0], int) else ""
            msg = f"the body is not valid JSON ({ctx.get('error', msg)}{where})"
            loc = []
        elif not loc and kind in {"model_attributes_type", "dict_type"}:
            msg = "the body must be a JSON object"
            if not _json_content(request):
                got = request.headers.get("content-type", "")
                msg += (
                    f", sent with 'Content-Type: application/json' (this request said {got!r}; "
                    "with curl, add -H 'content-type: application/json')"
                )
        errors.append({"field": _field(loc) or "body", "loc": loc, "msg": msg, "type": kind})
    reason = "; ".join(f"{e['field']}: {e['msg']}" for e in errors) or "invalid request"
    return reason, errors


def _message(m: InputMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": content_text(m.content)}
    if m.timestamp is not None:
        out["timestamp"] = m.timestamp
    if m.name is not None and m.name.strip():
        out["speaker"] = m.name
    return out


class _Retention(threading.Thread):
    """Deletes what was added more than ``days`` ago, now and then every ``interval`` seconds, until
    stopped (messages together with their requests' markers: :meth:`refind.Memory.delete_added_before`)."""

    def __init__(self, delete_added_before: Callable[[int], Any], days: float, interval: float) -> None:
        super().__init__(name="refind-retention", daemon=True)
        self._sweep = delete_added_before  # (names clear of threading.Thread's own _stop, _delete, ...)
        self._days = days
        self._interval = interval
        # not "_stop": threading.Thread has a method of that name, which join() calls
        self._halt = threading.Event()

    def run(self) -> None:
        while True:
            cutoff = int(time.time() * 1000 - self._days * _DAY_MS)
            try:
                removed = self._sweep(cutoff)
                level = logging.INFO if removed else logging.DEBUG
                log.log(
                    level, "retention: removed %s messages added more than %s days ago", removed, self._days
                )
            except Exception as exc:  # keep serving; the next sweep tries again
                log.error("retention sweep failed: %s", type(exc).__name__)
            if self._halt.wait(self._interval):
                return

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)


class _Runtime:
    """What the routes share: the Memory (opened by the lifespan unless one was given), config, agent."""

    def __init__(
        self,
        memory: refind.Memory | None,
        path: str | os.PathLike[str] | None,
        config: ServerConfig,
        settings: refind.Settings | None,
        owns: bool,
    ) -> None:
        self.memory = memory
        self.owns = owns or memory is None
        self.path = path
        self.config = config
        self.settings = settings
        self.agent: refind.Agent | None = None  # the memory's default: the heuristic agent of its settings
        if config.agent == "llm":  # its heuristic rounds (first, and its fallback) are that agent too
            seed = refind.HeuristicAgent.from_settings(settings or refind.Settings.from_env())
            self.agent = refind.LLMAgent(fallback=seed)
        self.retention: _Retention | None = None
        self.pool: SearchPool | None = None

    def open(self) -> refind.Memory:
        if self.memory is None:
            self.memory = refind.Memory(self.path, settings=self.settings)
        return self.memory

    def get(self) -> refind.Memory:
        if self.memory is None:
            raise refind.StoreClosed("the service is starting or stopping; retry")
        return self.memory


def _check_retention(memory_type: type, config: ServerConfig) -> None:
    if config.retention_days is not None and getattr(memory_type, "delete_added_before", None) is None:
        raise refind.SetupError(
            "retention (--retention-days) needs Memory.delete_added_before(epoch_ms), which this refind "
            f"version ({refind.__version__}) lacks; run without --retention-days and delete users "
            "with DELETE /v1/users/{user_id}"
        )


class _Key:
    """How ``config.auth`` carries the key, and the check of one header value (constant time)."""

    def __init__(self, config: ServerConfig) -> None:
        assert config.api_key is not None
        self.key = config.api_key.get_secret_value().encode()
        if config.auth == "x-api-key":
            self.header, self.prefix, self.how = "X-Api-Key", None, "X-Api-Key: <key>"
        else:
            self.prefix = "Token" if config.auth == "token" else "Bearer"
            self.header, self.how = "Authorization", f"Authorization: {self.prefix} <key>"
        self.reason = f"missing or wrong API key; send {self.how}"
        self.challenge = {"WWW-Authenticate": self.prefix} if self.prefix else None

    def accepts(self, value: str | None) -> bool:
        given: str | None = value.strip() if value else None
        if given is not None and self.prefix is not None:
            word, _, rest = given.partition(" ")
            given = rest.strip() if word.lower() == self.prefix.lower() else None
        return given is not None and hmac.compare_digest(given.encode(), self.key)

    def authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """Whether raw ASGI ``headers`` carry the key (what :class:`Guard` checks before any body)."""
        name = self.header.lower().encode()
        values = [v for k, v in headers if k == name]
        return len(values) == 1 and self.accepts(values[0].decode("latin-1"))


def _auth(config: ServerConfig) -> tuple[Callable[..., Any], _Key] | None:
    """The dependency that checks the API key for ``config.auth`` (it declares the scheme in the OpenAPI
    schema; :class:`Guard` has checked the same key from the headers before the body), or None when auth
    is off."""
    if config.auth == "none":
        return None
    key = _Key(config)
    scheme = APIKeyHeader(name=key.header, auto_error=False, scheme_name=config.auth, description=key.how)

    async def check(value: str | None = Security(scheme)) -> None:
        if not key.accepts(value):
            raise HTTPException(401, {"reason": key.reason}, headers=key.challenge)

    return check, key


def build_app(
    memory: refind.Memory | str | os.PathLike[str] | None,
    config: ServerConfig,
    settings: refind.Settings | None = None,
    *,
    owns: bool = False,
) -> FastAPI:
    """See :func:`refind.server.create_app`. ``owns``: close a given Memory at shutdown too (serve() opens
    it before uvicorn starts, for a one-line error when the index is locked)."""
    given = memory if isinstance(memory, refind.Memory) else None
    path = None if isinstance(memory, refind.Memory) else memory
    _check_retention(type(given) if given is not None else refind.Memory, config)
    runtime = _Runtime(given, path, config, settings, owns)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = config.threads
        mem = runtime.open()  # on the event loop thread, before any request: the JVM starts here
        if config.search_processes > 0 and mem.path is not None:
            runtime.pool = SearchPool(
                mem.path,
                config.search_processes,
                agent=config.agent,
                settings=runtime.settings or mem.settings,
                warm_up_s=config.warm_up_s,
            )
            runtime.pool.warm()  # each worker opens the index read-only, starts its JVM (and warms up)
        elif config.warm_up_s > 0:  # searches run here: warm this process before the first request
            done = await anyio.to_thread.run_sync(refind.warm_up, config.warm_up_s)
            log.info("warmed up: %d searches in %.1f s", done.searches, done.seconds)
        sweep = getattr(mem, "delete_added_before", None)
        if config.retention_days is not None and sweep is not None:
            runtime.retention = _Retention(sweep, config.retention_days, config.retention_interval_s)
            runtime.retention.start()
        where = mem.location
        frozen = settle_heap()  # last: what startup left alive is out of the collector's scans from here
        log.info(
            "refind %s serving %s: auth=%s agent=%s threads=%d search_workers=%d max_in_flight=%d "
            "max_body_bytes=%d max_body_bytes_in_flight=%d retention_days=%s frozen_objects=%d",
            refind.__version__,
            where,
            config.auth,
            config.agent,
            config.threads,
            runtime.pool.workers if runtime.pool is not None else 0,
            config.in_flight_limit,
            config.max_body_bytes,
            config.body_bytes_limit,
            config.retention_days,
            frozen,
        )
        try:
            yield
        finally:
            if runtime.pool is not None:
                runtime.pool.close()
                runtime.pool = None
            if runtime.retention is not None:
                runtime.retention.stop()
            if isinstance(runtime.agent, refind.LLMAgent):
                runtime.agent.close()
            if runtime.owns and runtime.memory is not None:
                runtime.memory.close()
                runtime.memory = None

    app = FastAPI(
        title="refind",
        version=refind.__version__,
        summary="Add/Search memory service (Agent Memory Leaderboard contract) over refind.Memory",
        lifespan=lifespan,
    )
    app.state.refind = runtime

    # ------------------------------------------------------------------ errors

    @app.exception_handler(RequestValidationError)
    async def _invalid_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        # field/loc/msg/type only: "input" would echo the request body back (and into proxies' logs)
        reason, errors = _validation_errors(request, exc)
        return _reason(422, reason, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # one shape for every error: {"detail": {"reason": ...}} (404, 405, 400 for an undecodable body)
        detail = exc.detail if isinstance(exc.detail, dict) else {"reason": str(exc.detail)}
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(refind.RequestConflict)
    async def _conflict(request: Request, exc: refind.RequestConflict) -> JSONResponse:
        return _reason(409, str(exc))

    @app.exception_handler(refind.InvalidInput)
    async def _bad_input(request: Request, exc: refind.InvalidInput) -> JSONResponse:
        field = getattr(exc, "field", None)
        msg = str(exc)
        if field and msg.startswith(field + ": "):
            msg = msg[len(field) + 2 :]
        return _reason(422, str(exc), errors=[{"field": field or "body", "msg": msg, "type": "invalid"}])

    retry = {"Retry-After": str(config.retry_after_s)}

    @app.exception_handler(refind.StoreError)
    async def _store(request: Request, exc: refind.StoreError) -> JSONResponse:
        log.error("store error on %s: %s", request.url.path, type(exc).__name__)
        if request.url.path in _ADD_PATHS:
            # the engine discards what no commit covers, but a commit can fail after it became durable
            return _reason(
                503,
                f"the index could not confirm this add ({type(exc).__name__}); outcome unknown: retry "
                "with the same request_id (a stored add answers 200 as a duplicate, one that was not is "
                "written)",
                retry,
            )
        return _reason(503, f"the index is unavailable ({type(exc).__name__}); retry later", retry)

    @app.exception_handler(refind.SetupError)
    async def _setup(request: Request, exc: refind.SetupError) -> JSONResponse:
        log.error("setup error on %s: %s", request.url.path, type(exc).__name__)
        return _reason(503, f"a backend is unavailable ({type(exc).__name__}); retry later", retry)

    # ------------------------------------------------------------------ routes

    auth = _auth(config)
    secured = [Depends(auth[0])] if auth is not None else []
    errors: dict[int | str, dict[str, Any]] = {
        401: _ERROR,
        409: _ERROR,
        413: _ERROR,
        503: _ERROR,
    }

    def add(body: AddRequest) -> AddResponse:
        """Store the messages (in order) for ``user_id``; 200 once they are durable and searchable.
        The same ``request_id`` with the same body again writes nothing; with another body: 409."""
        messages = [_message(m) for m in body.messages]
        runtime.get().add(body.user_id, body.session_id, messages, request_id=body.request_id)
        return AddResponse(request_id=body.request_id, user_id=body.user_id, session_id=body.session_id)

    async def search(body: SearchRequest) -> Any:
        """Evidence for ``query`` from ``user_id``'s memory: at most ``top_k`` blocks of consecutive
        turns, most relevant first, each rendered with its session date and speakers (long turns cut to
        the passage that matched). With ``max_tokens``, the evidence is packed for that budget exactly as
        ``SearchResult.to_text(max_tokens)`` packs it."""
        memory = runtime.get()
        text = query_text(body.query)
        limit = memory.settings.max_query_chars
        size = len(text) + sum(len(o) for o in body.options or ())
        if size > limit:
            raise refind.InvalidInput(
                f"query: {size} characters (options included), more than the {limit} a search accepts; "
                "send a shorter question",
                field="query",
            )
        if not text.strip() and not body.options:
            return SearchResponse(data=[])
        request = {
            "query": text,
            "user_id": body.user_id,
            "top_k": body.top_k,
            "now": body.now,
            "options": body.options or None,
            "max_tokens": body.max_tokens,
        }
        if runtime.pool is not None:
            items = await runtime.pool.search(**request)
        else:
            items = await anyio.to_thread.run_sync(lambda: search_items(memory, runtime.agent, **request))
        # the items are built by refind itself (SearchResponse's shape, declared for the schema): sent as
        # they are, not validated and re-encoded a second time
        return JSONResponse({"data": items})

    def delete_user(user_id: Annotated[str, PathParam(min_length=1, max_length=1000)]) -> DeleteResponse:
        """Delete every message of ``user_id`` (durably)."""
        return DeleteResponse(user_id=user_id, deleted=runtime.get().delete_user(user_id))

    def delete_memories(body: DeleteRequest) -> DeleteResponse:
        """Delete every message of ``user_id`` (durably)."""
        return delete_user(body.user_id)

    def health() -> HealthResponse:
        """Unauthenticated liveness: says nothing about what is stored."""
        runtime.get()
        return HealthResponse(status="ok", version=refind.__version__)

    def stats() -> StatsResponse:
        """How many messages the index holds (all users), and their vectors; needs the key."""
        memory = runtime.get()
        counts = memory.vector_counts()
        embedder = memory.embedder.name if memory.embedder is not None else None
        return StatsResponse(
            messages=memory.count(),
            vectors=counts.vectors,
            awaiting_vectors=counts.pending if embedder is not None else 0,
            embedder=embedder,
        )

    routes: list[tuple[str, Callable[..., Any], str, str, str]] = [
        ("/add", add, "POST", "add", "memory"),
        ("/v1/memories/add", add, "POST", "add_v1", "memory"),
        ("/search", search, "POST", "search", "memory"),
        ("/v1/memories/search", search, "POST", "search_v1", "memory"),
        ("/v1/users/{user_id:path}", delete_user, "DELETE", "delete_user", "retention"),
        ("/v1/memories/delete", delete_memories, "POST", "delete_memories", "retention"),
        ("/v1/stats", stats, "GET", "stats", "health"),
    ]
    for route, endpoint, method, operation, tag in routes:
        app.add_api_route(
            route,
            endpoint,
            methods=[method],
            dependencies=secured,
            responses=errors,
            operation_id=operation,
            tags=[tag],
            response_model=SearchResponse if endpoint is search else None,
        )
    app.add_api_route("/health", health, methods=["GET"], operation_id="health", tags=["health"])

    key = auth[1] if auth is not None else None
    app.add_middleware(
        Guard,
        max_in_flight=config.in_flight_limit,
        max_body_bytes=config.max_body_bytes,
        max_body_bytes_in_flight=config.body_bytes_limit,
        retry_after_s=config.retry_after_s,
        read_timeout_s=config.read_timeout_s,
        authorized=key.authorized if key is not None else None,
        unauthorized=(
            (key.reason, [(k.lower().encode(), v.encode()) for k, v in (key.challenge or {}).items()])
            if key is not None
            else None
        ),
        open_paths=frozenset(
            {
                "/health",
                app.openapi_url or "",
                app.docs_url or "",
                app.redoc_url or "",
                app.swagger_ui_oauth2_redirect_url or "",
            }
        )
        - {""},
    )
    return app
