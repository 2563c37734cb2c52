"""A fake OpenAI-compatible chat completions server over real HTTP on 127.0.0.1, driven by a script.

Tests queue what the next requests get, in order::

    fake.enqueue(
        tool_reply(("search", {"keywords": "speech school"})),
        Failure(429, retry_after="0"),
        tool_reply(("finish", {})),
    )

Script items: :func:`tool_reply` / :func:`text_reply` (a ``Reply``), :class:`Failure` (an HTTP error status
with an OpenAI-style error body), :class:`Delay` (answer only after a pause, e.g. longer than the client's
timeout), or a callable taking the request body and returning one of those (to answer from what the
client sent, e.g. note the ids of the last observation). Tool-call arguments given as a ``str`` are sent
verbatim (malformed JSON included); a dict is JSON-encoded.

Tool modes: a request without ``tools=`` (refind's ``text`` and ``json`` modes) gets a scripted reply's
tool calls written as its text, one ``{"name": ..., "arguments": ...}`` object a line. A request with
``response_format={"type": "json_schema", ...}`` is answered as a server that constrains its output to
the schema would: the reply's text must be one JSON value valid against the schema, else the fake
answers HTTP 400 and counts the request in ``fake.unexpected`` (the test's script is wrong: a constrained
server cannot produce it).

``POST /v1/embeddings`` is answered without the script: each input text gets the vector of
:class:`tests.embedders.HashingTestEmbedder` (``embedding_dimensions``, default 32), unless
``fail_embeddings`` is above zero: that many embeddings requests get HTTP 500 first (a server that recovers).

Every request is recorded in ``fake.requests`` (path, headers, parsed JSON body). A request that arrives
when the script is empty gets HTTP 400 and is counted in ``fake.unexpected``.
"""

from __future__ import annotations

import base64
import itertools
import json
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Delay",
    "Failure",
    "FakeOpenAI",
    "Reply",
    "Request",
    "text_reply",
    "tool_reply",
]


@dataclass
class Reply:
    """An assistant message: ``content`` and/or ``tool_calls`` as (name, arguments) pairs."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    usage: bool = True  # False: the response has no usage field (the client must count)


@dataclass
class Failure:
    """An HTTP error response (429, 500, 401, ...) with an OpenAI-style error body."""

    status: int
    message: str = "injected failure"
    retry_after: str | None = None


@dataclass
class Delay:
    """Wait ``seconds`` (e.g. longer than the client timeout), then answer with ``then``."""

    seconds: float
    then: Reply | Failure = field(default_factory=lambda: Reply(content="late"))


Item = Reply | Failure | Delay | Callable[[dict[str, Any]], "Reply | Failure | Delay"]


def tool_reply(
    *calls: tuple[str, dict[str, Any] | str], content: str | None = None, usage: bool = True
) -> Reply:
    """A reply with tool calls, e.g. ``tool_reply(("search", {"keywords": "x"}), ("finish", {}))``."""
    return Reply(content=content, tool_calls=list(calls), usage=usage)


def text_reply(content: str, usage: bool = True) -> Reply:
    """A plain text reply (no tool calls)."""
    return Reply(content=content, usage=usage)


@dataclass
class Request:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


class FakeOpenAI:
    """Start with :meth:`start` (or ``with FakeOpenAI() as fake``); ``base_url`` is ``http://127.0.0.1:<port>/v1``."""

    def __init__(self) -> None:
        self._script: deque[Item] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self.requests: list[Request] = []
        self.unexpected = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.embedding_dimensions = 32
        self.fail_embeddings = 0

    # ------------------------------------------------------------------ control

    def enqueue(self, *items: Item) -> FakeOpenAI:
        with self._lock:
            self._script.extend(items)
        return self

    @property
    def pending(self) -> int:
        """Script items not yet consumed."""
        with self._lock:
            return len(self._script)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat completion requests, in order."""
        return [r.body for r in self.requests]

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                fake._handle(self)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.handle_error = lambda request, client_address: None  # a client that hung up mid-delay
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ serving

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        path = h.path.split("?")[0]
        if path in {"/v1/embeddings", "/embeddings"}:
            return self._embeddings(h, path, body)
        with self._lock:
            self.requests.append(
                Request(path, {k.lower(): v for k, v in h.headers.items()}, body, time.time())
            )
            item = self._script.popleft() if self._script else None
        if path not in {"/v1/chat/completions", "/chat/completions"}:
            return self._send(h, 404, _error(f"no route {path}", "not_found"))
        if item is None:
            with self._lock:
                self.unexpected += 1
            return self._send(h, 400, _error("fake server: the test script is empty", "script_exhausted"))
        if callable(item):
            item = item(body)
        if isinstance(item, Delay):
            if self._stopping.wait(item.seconds):
                return None
            item = item.then
        if isinstance(item, Reply) and "tools" not in body and item.tool_calls:
            item = Reply(content=_calls_as_text(item.tool_calls), usage=item.usage)
        if isinstance(item, Reply):
            broken = _schema_violation(body, item)
            if broken is not None:
                with self._lock:
                    self.unexpected += 1
                return self._send(h, 400, _error(f"fake server: {broken}", "schema_violation"))
        if isinstance(item, Failure):
            headers = {"retry-after": item.retry_after} if item.retry_after is not None else {}
            code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(item.status, "server_error")
            return self._send(h, item.status, _error(item.message, code), headers)
        return self._send(h, 200, self._completion(body, item))

    def _embeddings(self, h: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        from tests.embedders import HashingTestEmbedder

        with self._lock:
            self.requests.append(
                Request(path, {k.lower(): v for k, v in h.headers.items()}, body, time.time())
            )
            failing = self.fail_embeddings > 0
            self.fail_embeddings -= 1 if failing else 0
        if failing:
            return self._send(h, 500, _error("fake server: embeddings failing", "server_error"))
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts):
            return self._send(h, 400, _error("input: expected a non-empty string or list of them", "invalid"))
        model = HashingTestEmbedder(self.embedding_dimensions)
        vectors: list[Any] = [model.vector(t) for t in texts]
        if body.get("encoding_format") == "base64":  # what the openai client asks for unless told otherwise
            vectors = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        usage = {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0}
        return self._send(
            h, 200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}
        )

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        n = next(self._ids)
        tool_calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        completion: dict[str, Any] = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "system_fingerprint": "fp_fake",
        }
        if reply.usage:
            prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
            completion_tokens = max(1, len(json.dumps(message)) // 4)
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt + completion_tokens,
            }
        return completion

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass


def _calls_as_text(calls: list[tuple[str, dict[str, Any] | str]]) -> str:
    lines = []
    for name, args in calls:
        arguments = args if isinstance(args, str) else json.dumps(args)
        lines.append(f'{{"name": {json.dumps(name)}, "arguments": {arguments}}}')
    return "\n".join(lines)


def _schema_violation(body: dict[str, Any], reply: Reply) -> str | None:
    """Why ``reply`` could not come from a server constraining its output to the request's
    ``response_format`` json_schema (None when it could, or the request asks for no schema)."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    import jsonschema

    schema = (fmt.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return "response_format json_schema without a schema"
    try:
        value = json.loads(reply.content or "")
    except json.JSONDecodeError:
        return f"the scripted reply is not one JSON value: {reply.content!r}"
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        return f"the scripted reply does not match the schema: {exc.message}"
    return None


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
