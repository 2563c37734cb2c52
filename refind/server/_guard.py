"""ASGI middleware in front of the routes: the API key, the body size limits and deadline, overload
shedding and a last-resort 500.

Order per request:

1. the API key, from the headers (when auth is on, for every path but health and the API docs): missing or
   wrong -> 401 at once, before any of the body is read (the rest of it is read and dropped by the
   connection, within the read deadline: :mod:`refind.server._protocol`);
2. ``Content-Length`` over ``max_body_bytes`` -> 413 at once;
3. the body is read here, counting bytes as they stream in (a chunked body that grows past the limit ->
   413), within ``read_timeout_s`` (else 408, connection closed). The bytes of the bodies held at once,
   across connections, are bounded by ``max_body_bytes_in_flight`` (a ``Content-Length`` reserves its
   bytes before the body is read): a body that would pass it is read and dropped, then answered 503 with
   ``Retry-After`` (at once when the client waits for ``100 Continue``);
4. only then does the request count against ``max_in_flight``: over it -> 503 with ``Retry-After``, the
   body read, so the client reads its answer rather than a reset connection.

A request still sending its body holds no place, so connections that never send theirs cannot starve the
others (each costs a socket until its deadline, and at most 64 KiB of buffer in uvicorn, which stops reading
a connection whose body is not being read). The body is then replayed to the app; its bytes count until
the app is done with it. An exception no handler took becomes a 500 whose log line names the exception
class and its stack (code lines), never the request body or the exception's message, which may quote it
(``REFIND_DEBUG=1`` adds the message).
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from refind.config import Settings
from refind.server._trim import LARGE_BODY, Trimmer

__all__ = ["Guard"]

log = logging.getLogger("refind.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _reply(
    send: Send, status: int, reason: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"detail": {"reason": reason}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


Headers = list[tuple[bytes, bytes]]


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value)
    return None


def _declared(scope: Scope) -> int:
    """The request's ``Content-Length``, or -1 when it has none or a bad one."""
    raw = _header(scope, b"content-length")
    try:
        return int(raw) if raw is not None else -1
    except ValueError:
        return -1


class Guard:
    """See the module docstring. ``exempt`` paths (health) skip the in-flight bound; ``open_paths`` skip
    the key (``authorized`` tells whether a request's raw headers carry it; ``unauthorized`` is the 401's
    reason and headers)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_in_flight: int,
        max_body_bytes: int,
        max_body_bytes_in_flight: int | None = None,
        retry_after_s: int = 1,
        read_timeout_s: float = 30.0,
        exempt: frozenset[str] = frozenset({"/health"}),
        authorized: Callable[[Headers], bool] | None = None,
        unauthorized: tuple[str, Headers] | None = None,
        open_paths: frozenset[str] = frozenset({"/health"}),
    ) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.max_body_bytes = max_body_bytes
        self.body_limit = max_body_bytes_in_flight or max(64 * 1024 * 1024, max_body_bytes)
        self.retry_after = str(retry_after_s).encode()
        self.read_timeout_s = read_timeout_s
        self.exempt = exempt
        self.authorized = authorized
        self.unauthorized = unauthorized or ("missing or wrong API key", [])
        self.open_paths = open_paths
        self.in_flight = 0  # only touched on the event loop thread
        self.body_bytes = 0  # bytes of bodies held (or reserved) now; the event loop thread too
        self.trimmer = Trimmer()  # gives large bodies' memory back once none is held

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        counted = False
        started = False
        held = 0

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            if (
                self.authorized is not None
                and scope.get("path") not in self.open_paths
                and not self.authorized(list(scope.get("headers") or []))
            ):
                reason, headers = self.unauthorized
                await _reply(tracking_send, 401, reason, [*headers, *_closing(scope)])
                return
            body = await self._read_body(scope, receive, tracking_send)
            if body is None:
                return
            replay, held = body
            if scope.get("path") not in self.exempt:
                if self.in_flight >= self.max_in_flight:
                    await _reply(
                        tracking_send,
                        503,
                        f"over capacity ({self.max_in_flight} requests in flight); nothing was stored; "
                        f"retry after {int(self.retry_after)} s",
                        [(b"retry-after", self.retry_after)],
                    )
                    return
                self.in_flight += 1
                counted = True
            await self.app(scope, replay, tracking_send)
        except Exception as exc:
            detail = f": {exc}" if Settings.debug_enabled() else " (REFIND_DEBUG=1 adds its message)"
            log.error(
                "unexpected %s on %s %s%s\n%s",
                type(exc).__name__,
                scope.get("method"),
                scope.get("path"),
                detail,
                "".join(traceback.format_tb(exc.__traceback__)).rstrip(),
            )
            if not started:
                await _reply(send, 500, "internal error; the server log names it")
        finally:
            if counted:
                self.in_flight -= 1
            self.body_bytes -= held
            if self.body_bytes == 0 and (held >= LARGE_BODY or _declared(scope) >= LARGE_BODY):
                self.trimmer.request()  # a large body, held or read and dropped: its memory goes back

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> tuple[Receive, int] | None:
        """A receive that replays the whole request body and the bytes it holds (counted in
        ``body_bytes`` until the caller gives them back), or None when a 413, 408 or 503 was sent instead
        (or the client disconnected)."""
        limit = self.max_body_bytes
        too_big = f"request body over {limit} bytes; send fewer messages per request"
        declared = _declared(scope)
        if declared > limit:
            await _reply(send, 413, too_big, _closing(scope))
            return None
        deadline = asyncio.get_running_loop().time() + self.read_timeout_s
        held = 0
        if declared > 0:
            if self.body_bytes + declared > self.body_limit:
                await self._shed(scope, receive, send, deadline, 0)
                return None
            self.body_bytes += declared
            held = declared
        kept = False
        try:
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await self._receive(receive, send, deadline)
                if message is None:
                    return None
                body = message.get("body", b"")
                size += len(body)
                if size > limit:
                    await _reply(send, 413, too_big)
                    return None
                if size > held:  # a chunked body: its bytes are counted as they come
                    if self.body_bytes + size - held > self.body_limit:
                        chunks.clear()
                        if message.get("more_body", False):
                            await self._shed(scope, receive, send, deadline, size)
                        else:
                            await self._over(send)
                        return None
                    self.body_bytes += size - held
                    held = size
                chunks.append(body)
                if not message.get("more_body", False):
                    break
            kept = True
        finally:
            if not kept:
                self.body_bytes -= held
        whole = b"".join(chunks)
        chunks.clear()
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()  # after the body: wait for the client to disconnect

        return replay, held

    async def _receive(self, receive: Receive, send: Send, deadline: float) -> Message | None:
        """The next body message, or None after a 408 (the deadline passed) or a disconnect."""
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            await _reply(
                send,
                408,
                f"the request body did not arrive within {self.read_timeout_s:g} seconds; "
                "send the whole request at once",
                [(b"connection", b"close")],
            )
            return None
        if message["type"] == "http.disconnect":
            return None  # the client left before sending its body: nothing to answer
        return message

    async def _shed(self, scope: Scope, receive: Receive, send: Send, deadline: float, size: int) -> None:
        """Over the bytes of bodies in flight: the rest of the body is read and dropped (so the client,
        still writing, reads its answer), then 503; at once for a client waiting for ``100 Continue``."""
        if _header(scope, b"expect") != b"100-continue":
            while True:
                message = await self._receive(receive, send, deadline)
                if message is None:
                    return
                size += len(message.get("body", b""))
                if size > self.max_body_bytes:
                    await _reply(send, 413, f"request body over {self.max_body_bytes} bytes")
                    return
                if not message.get("more_body", False):
                    break
        await self._over(send, _closing(scope))

    async def _over(self, send: Send, headers: Headers | None = None) -> None:
        await _reply(
            send,
            503,
            f"over capacity ({self.body_limit} bytes of request bodies held at once); nothing was stored; "
            f"retry after {int(self.retry_after)} s",
            [(b"retry-after", self.retry_after), *(headers or [])],
        )


def _closing(scope: Scope) -> Headers:
    """``Connection: close`` for an answer sent before the body to a client that waits for ``100
    Continue``: it will not send that body, which the connection would otherwise wait for."""
    return [(b"connection", b"close")] if _header(scope, b"expect") == b"100-continue" else []
