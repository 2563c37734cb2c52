"""ASGI middleware in front of the routes: the body size limit and deadline, overload shedding and a
last-resort 500.

Order per request: ``Content-Length`` over the limit -> 413 at once; otherwise the body is read here,
counting bytes as they stream in (a chunked body that grows past the limit -> 413), within
``read_timeout_s`` (else 408, connection closed); only then does the request count against
``max_in_flight``: over it -> 503 with ``Retry-After``, the body read, so the client reads its answer
rather than a reset connection. A request still sending its body holds no place, so connections that
never send theirs cannot starve the others (each costs a socket until its deadline). The body is then
replayed to the app. An exception no handler took becomes a 500 whose log line names the exception class
and its stack (code lines), never the request body or the exception's message, which may quote it
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


class Guard:
    """See the module docstring. ``exempt`` paths (health) skip the in-flight bound."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_in_flight: int,
        max_body_bytes: int,
        retry_after_s: int = 1,
        read_timeout_s: float = 30.0,
        exempt: frozenset[str] = frozenset({"/health"}),
    ) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.max_body_bytes = max_body_bytes
        self.retry_after = str(retry_after_s).encode()
        self.read_timeout_s = read_timeout_s
        self.exempt = exempt
        self.in_flight = 0  # only touched on the event loop thread

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        counted = False
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            replay = await self._read_body(scope, receive, tracking_send)
            if replay is None:
                return
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

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """A receive that replays the whole request body, or None when a 413 or 408 was sent instead (or
        the client disconnected)."""
        limit = self.max_body_bytes
        too_big = f"request body over {limit} bytes; send fewer messages per request"
        for name, value in scope.get("headers") or ():
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > limit:
                    await _reply(send, 413, too_big)
                    return None
        chunks: list[bytes] = []
        size = 0
        deadline = asyncio.get_running_loop().time() + self.read_timeout_s
        while True:
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
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await _reply(send, 413, too_big)
                return None
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()  # after the body: wait for the client to disconnect

        return replay
