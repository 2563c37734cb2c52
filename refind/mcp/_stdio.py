"""Stdio for the MCP server: the SDK's transport, with every line checked before the SDK reads it.

The SDK's stdio transport drops a line it cannot read without a reply, so a client that sent a malformed
request with an id waits for ever. Here such a line gets the JSON-RPC error the specification names: -32700
(parse error) for a line that is not JSON, -32600 (invalid request) for JSON that is not a JSON-RPC message,
with the request's id when it has one (else ``null``); a line nested too deeply to decode (``[[[[...``) is a
parse error like any other, and the server goes on. Valid lines go to the SDK unchanged."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterable, AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["line_error", "run_stdio"]

_MAX_SHOWN = 200


def line_error(line: str) -> types.JSONRPCError | None:
    """The error reply a line of the stdio wire deserves, or None when the SDK can read it."""
    try:
        value = json.loads(line)
    except ValueError as exc:
        return _error(None, types.PARSE_ERROR, f"Parse error: the line is not JSON ({exc})")
    except RecursionError:
        return _error(
            None,
            types.PARSE_ERROR,
            "Parse error: the line is nested too deeply to decode (arrays or objects about 1,000 levels deep)",
        )
    rid = value.get("id") if isinstance(value, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        rid = None
    problem = _shape_problem(value)
    if problem is None:
        try:
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:  # pydantic's ValidationError, or anything the adapter refuses
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if problem is not None:
        return _error(rid, types.INVALID_REQUEST, f"Invalid request: {problem[:_MAX_SHOWN]}")
    return None


def _shape_problem(value: Any) -> str | None:
    """What makes ``value`` no JSON-RPC 2.0 message (the checks the SDK's lax parsing leaves out)."""
    if not isinstance(value, dict):
        return "a JSON-RPC 2.0 message is a JSON object (batches are not supported)"
    if value.get("jsonrpc") != "2.0":
        return 'a JSON-RPC 2.0 message has "jsonrpc": "2.0"'
    rid = value.get("id")
    bad_id = "id" in value and (isinstance(rid, bool) or not isinstance(rid, str | int))
    if bad_id and not (rid is None and "error" in value and "method" not in value):  # null: an error's
        return "an id is a string or an integer"
    if "method" in value:
        if not isinstance(value["method"], str):
            return "a method is a string"
        if "params" in value and not isinstance(value["params"], dict | list):
            return "params are an object or an array"
        return None
    if ("result" in value) == ("error" in value):
        return "a message has a method, or exactly one of result and error"
    if "id" not in value:
        return "a response has an id"
    return None


def _error(rid: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))


class _Checked:
    """The lines of ``source`` that the SDK can read; the others are answered on ``reply`` (set once the
    transport is open) and not passed on."""

    def __init__(self, source: AsyncIterable[str]) -> None:
        self.source = source
        self.reply: Any = None
        self.ready = anyio.Event()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            if not line.strip():
                continue
            try:
                error = line_error(line)
            except Exception as exc:  # whatever a line does, it gets an answer and the server goes on
                error = _error(
                    None, types.PARSE_ERROR, f"Parse error: the line cannot be read ({type(exc).__name__})"
                )
            if error is None:
                yield line
                continue
            await self.ready.wait()
            await self.reply.send(SessionMessage(error))


async def run_stdio(lowlevel: Any) -> None:
    """Serve ``lowlevel`` (the SDK's low-level ``Server``) over this process's stdin and stdout."""
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    checked = _Checked(stdin)
    async with stdio_server(stdin=checked) as (read_stream, write_stream):  # type: ignore[arg-type]
        checked.reply = write_stream
        checked.ready.set()
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
