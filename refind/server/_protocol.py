"""The HTTP/1.1 connection protocol the service runs under uvicorn: uvicorn's httptools protocol with two
changes, so that a hostile or broken client always gets a status in the one JSON error shape and never
holds a connection forever:

- a request that is not valid HTTP (uvicorn answers a plain-text 400) gets ``400`` with
  ``{"detail": {"reason": ...}}``;
- a request's headers must arrive within ``read_timeout_s`` of its first byte (or of the connection's
  opening): otherwise ``408`` in the same shape, and the connection is closed. (The body's own deadline is
  kept by :class:`refind.server._guard.Guard`.) Between requests uvicorn's keep-alive timeout applies;
- a request answered before its body was read (a 401, a 413 by ``Content-Length``) has the rest of its
  body read and dropped by uvicorn, so a client still writing reads its answer rather than a reset; that
  rest must arrive within ``read_timeout_s`` of the answer, else the connection is closed, and then the
  keep-alive timeout applies again.

Only the event loop thread touches a protocol object.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["error_bytes", "protocol_class"]

_REASONS = {400: b"Bad Request", 408: b"Request Timeout"}


def error_bytes(status: int, reason: str) -> bytes:
    """A whole HTTP/1.1 response with the JSON error body, closing the connection."""
    body = json.dumps({"detail": {"reason": reason}}).encode()
    return b"".join(
        [
            b"HTTP/1.1 %d %s\r\n" % (status, _REASONS[status]),
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
    )


def protocol_class(read_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the JSON 400 and the header deadline (module docstring)."""

    class Protocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None
        _drain_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(read_timeout_s, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            if self.cycle is not None and not self.cycle.response_complete:
                return  # a request is being served: its body's deadline is the Guard's
            self.transport.write(
                error_bytes(
                    408,
                    f"the request's headers did not arrive within {read_timeout_s:g} seconds; "
                    "send the whole request at once",
                )
            )
            self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._header_timer is None:  # a new request on a kept-alive connection
                self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.cycle is not None and self.cycle.more_body and not self.transport.is_closing():
                # answered before its body: the rest is dropped as it comes, until the deadline
                self._drain_timer = self.loop.call_later(read_timeout_s, self._drain_too_slow)

        def _drain_too_slow(self) -> None:
            self._drain_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def on_message_complete(self) -> None:
            drained = self._drain_timer is not None
            if drained:
                self._drain_timer.cancel()  # type: ignore[union-attr]
                self._drain_timer = None
            super().on_message_complete()
            if drained and not self.transport.is_closing() and not self.pipeline:
                # the body's bytes cancelled the keep-alive timeout that the answer had set: set it again
                self._unset_keepalive_if_required()
                self.timeout_keep_alive_task = self.loop.call_later(
                    self.timeout_keep_alive, self.timeout_keep_alive_handler
                )

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._drain_timer is not None:
                self._drain_timer.cancel()
                self._drain_timer = None
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            self._disarm()
            self.transport.write(
                error_bytes(
                    400, "the request is not valid HTTP/1.1 (malformed request line, header or body framing)"
                )
            )
            self.transport.close()

    return Protocol


def uvicorn_options(read_timeout_s: float) -> dict[str, Any]:
    """What :class:`uvicorn.Config` needs to run the service's protocol."""
    return {"http": protocol_class(read_timeout_s)}
