"""``refind mcp`` driven by the MCP SDK's own client: over stdio (the server is a real ``refind`` process with
its own JVM, reading a real index built from the fixtures) and over streamable HTTP."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import refind
from refind import loaders as io

from .conftest import ROOT, said

pytestmark = pytest.mark.slow  # MCP servers in processes of their own: make test, not make check

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LISBON = "6612f0a1-2222-4c1e-9e0a-000000000002"
CODE_SESSION = "5f0c2d4e-7a1b-4c3d-9e8f-0a1b2c3d4e5f"
PLAN_WEEK = said("Plan my week. Keep in mind I'm vegan.", "2024-03-01T10:00:00Z")  # a fact in a request


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the ChatGPT export and the Claude Code logs (user 'me')."""
    path = tmp_path_factory.mktemp("mcp") / "index"
    with refind.Memory(path) as mem:
        io.import_path(mem, FIXTURES / "chatgpt" / "conversations.json")
        io.import_path(mem, FIXTURES / "claude-code")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    env["PYTHONPATH"] = str(ROOT)
    env["REFIND_DATA"] = str(tmp_path / "unused-default")
    return env


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    """The tool's result, or the JSON-RPC error (``MCPError``) the server answered the call with."""
    try:
        return await session.call_tool(tool, args)
    except MCPError as exc:
        return exc


def _invalid_params(outcome: Any, words: str) -> bool:
    """Whether ``outcome`` is a JSON-RPC invalid-params error (-32602) whose short message holds ``words``
    and none of pydantic's text (its header, its URL)."""
    assert isinstance(outcome, MCPError), outcome
    message = outcome.error.message
    assert outcome.error.code == -32602, outcome.error
    assert words in message, message
    assert "pydantic" not in message and "validation error" not in message and "\n" not in message, message
    return True


def over_stdio(
    index: Path, tmp_path: Path, body: Callable[[ClientSession], Awaitable[None]], *args: str
) -> str:
    """Start ``refind --data INDEX mcp ARGS`` as the SDK's stdio client does and run ``body`` on a session;
    returns what the server wrote to stderr."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "refind.cli", "--data", str(index), "mcp", *args],
        env=_env(tmp_path),
        cwd=str(ROOT),
    )
    errlog = tmp_path / "stderr.txt"

    async def main() -> None:
        with errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.fail_after(120):
                    await body(session)

    anyio.run(main)
    return errlog.read_text()


def test_stdio_lists_tools_searches_and_reads_turns(index: Path, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        tools = (await session.list_tools()).tools
        seen["tools"] = {t.name: t for t in tools}
        seen["search"] = await session.call_tool(
            "search",
            {"question": "Which neighbourhood in Lisbon is easier with a stroller?", "today": "2024-05-10"},
        )
        seen["keywords"] = await session.call_tool(
            "keyword_search",
            {"keywords": "flaky forecast cache", "date_from": "2025-06-01", "date_to": "2025-06-30"},
        )
        seen["empty"] = await session.call_tool(
            "keyword_search", {"keywords": "flaky forecast cache", "date_to": "2024-01-01"}
        )
        seen["turns"] = await session.call_tool(
            "read_turns", {"session_id": LISBON, "turn_from": 0, "turn_to": 3}
        )
        seen["bad"] = await _call(session, "keyword_search", {"keywords": "lisbon", "date_from": "May 2024"})
        seen["add"] = await _call(
            session, "add_messages", {"session_id": "x", "messages": [{"role": "user", "content": "hi"}]}
        )

    stderr = over_stdio(index, tmp_path, body)
    tools = seen["tools"]
    assert set(tools) == {
        "search",
        "keyword_search",
        "read_turns",
        "list_sessions",
        "about_user",
    }  # read-only: no add
    assert "past conversations" in (tools["search"].description or "")
    assert tools["search"].annotations.read_only_hint is True
    assert set(tools["keyword_search"].input_schema["properties"]) >= {"keywords", "date_from", "date_to"}

    search = seen["search"]
    assert not search.is_error
    text = _text(search)
    assert f"[session {LISBON}" in text
    assert "Príncipe Real is flatter than Alfama, so yes, easier with a stroller." in text
    assert f"- {LISBON}: turns " in text  # the blocks' spans, for read_turns

    keywords = _text(seen["keywords"])
    assert f"[session {CODE_SESSION}" in keywords and "test_forecast_cache" in keywords
    assert "No messages match 'flaky forecast cache' between the start and 2024-01-01" in _text(seen["empty"])

    turns = _text(seen["turns"])
    assert turns.splitlines()[0] == f"[session {LISBON} | turns 0-3]"
    assert turns.splitlines()[1] == (
        "0 user (2024-05-01 08:00 UTC): Where should we stay in Lisbon for four nights in May?"
    )
    assert turns.splitlines()[3].startswith(
        "2 user (2024-05-01 08:02 UTC): Book-wise"
    )  # time of the previous

    assert _invalid_params(seen["bad"], "date_from 'May 2024' is not a date in the form YYYY-MM-DD")
    assert _invalid_params(
        seen["add"], "unknown tool 'add_messages'; the tools are: about_user, keyword_search, list_sessions"
    )
    assert "Traceback" not in stderr


def test_about_user_lists_what_stands_newest_first_and_superseded_facts_on_request(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with refind.Memory(index) as mem:
        mem.add("me", "s1", [PLAN_WEEK, said("Always answer in metric units.", "2024-03-01T10:01:00Z")])
        mem.add("me", "s2", [said("I'm no longer vegan.", "2024-05-01T10:00:00Z")])
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["current"] = await session.call_tool("about_user", {})
        seen["all"] = await session.call_tool("about_user", {"superseded": True})

    over_stdio(index, tmp_path, body, "--user", "me")
    assert _text(seen["current"]).splitlines() == [
        "- 2024-05-01 [fact, diet] I'm no longer vegan. (session s2, turn 0)",
        "- 2024-03-01 [instruction] Always answer in metric units. (session s1, turn 1)",
    ]
    assert _text(seen["all"]).splitlines()[-1] == (
        "- 2024-03-01 [fact, diet] Keep in mind I'm vegan. (superseded by s2:0) (session s1, turn 0)"
    )


def test_stdio_with_allow_add_saves_messages_that_search_finds(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with refind.Memory(index) as mem:
        io.import_path(mem, FIXTURES / "claude" / "conversations.json")
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["tools"] = {t.name for t in (await session.list_tools()).tools}
        message = {
            "role": "user",
            "content": "Remember: the spare bike key is in the blue jar.",
            "timestamp": "2025-01-05T10:00:00Z",
        }
        seen["add"] = await session.call_tool(
            "add_messages", {"session_id": "notes", "messages": [message], "request_id": "r1"}
        )
        seen["again"] = await session.call_tool(
            "add_messages", {"session_id": "notes", "messages": [message], "request_id": "r1"}
        )
        seen["found"] = await session.call_tool("keyword_search", {"keywords": "spare bike key"})

    over_stdio(index, tmp_path, body, "--allow-add", "--user", "me")
    assert seen["tools"] == {
        "search",
        "keyword_search",
        "read_turns",
        "list_sessions",
        "about_user",
        "add_messages",
        "pin_fact",
        "hide_fact",
        "unpin_fact",
    }
    assert _text(seen["add"]) == "Saved 1 new and 0 replaced message(s) in session 'notes'."
    assert "already saved" in _text(seen["again"])
    assert "the spare bike key is in the blue jar" in _text(seen["found"])
    with refind.Memory(index, read_only=True) as mem:
        assert [h.content for h in mem.session("me", "notes")] == [
            "Remember: the spare bike key is in the blue jar."
        ]


def test_with_allow_add_the_agent_pins_hides_and_unpins_what_stands(tmp_path: Path) -> None:
    """Issue 37: the corrections of what stands, by session and turn as about_user shows them; they are
    durable in the index (a later reader sees them); a turn that is not there is invalid params."""
    index = tmp_path / "index"
    with refind.Memory(index) as mem:
        mem.add("me", "s1", [PLAN_WEEK, said("My sister Ines visits every May.", "2024-03-01T10:01:00Z")])
        mem.add("bo", "s1", [said("I'm allergic to peanuts.")])
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["before"] = await session.call_tool("about_user", {})
        seen["pin"] = await session.call_tool(
            "pin_fact", {"session_id": "s1", "turn": 1, "kind": "preference"}
        )
        seen["hide"] = await session.call_tool("hide_fact", {"session_id": "s1", "turn": 0})
        seen["after"] = await session.call_tool("about_user", {"hidden": True})
        seen["unpin"] = await session.call_tool("unpin_fact", {"session_id": "s1", "turn": 0})
        seen["again"] = await session.call_tool("unpin_fact", {"session_id": "s1", "turn": 0})
        seen["missing"] = await _call(session, "hide_fact", {"session_id": "s1", "turn": 7})
        seen["kind"] = await _call(session, "pin_fact", {"session_id": "s1", "turn": 1, "kind": "opinion"})

    over_stdio(index, tmp_path, body, "--allow-add", "--user", "me")
    assert _text(seen["before"]).splitlines() == [
        "- 2024-03-01 [fact, diet] Keep in mind I'm vegan. (session s1, turn 0)"
    ]
    assert _text(seen["pin"]) == (
        "Pinned as a standing preference: My sister Ines visits every May. (session s1, turn 1)"
    )
    assert "no longer stands" in _text(seen["hide"])
    assert _text(seen["after"]).splitlines() == [
        "- 2024-03-01 [preference, pinned] My sister Ines visits every May. (session s1, turn 1)",
        "- 2024-03-01 [hidden] Keep in mind I'm vegan. (session s1, turn 0)",
    ]
    assert "the rule's again" in _text(seen["unpin"]) and "nothing changed" in _text(seen["again"])
    assert _invalid_params(seen["missing"], "no turn 7 in session 's1'")
    assert _invalid_params(seen["kind"], "kind")
    with refind.Memory(index, read_only=True) as mem:  # durable, and Bo's s1 untouched
        assert [(f.message_id, f.pinned) for f in mem.profile("me")] == [("s1:1", True), ("s1:0", False)]
        assert mem.marks("bo") == []


def test_a_missing_index_is_one_line_on_stderr(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "refind.cli", "--data", str(tmp_path / "none"), "mcp"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # stdout is the protocol's, even when failing
    assert "no refind index at" in done.stderr and "refind import" in done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http(index: Path, tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "refind.cli",
            "--data",
            str(index),
            "mcp",
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            time.sleep(0.2)
        seen: dict[str, Any] = {}

        async def main() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                seen["tools"] = {t.name for t in (await session.list_tools()).tools}
                seen["search"] = await session.call_tool("keyword_search", {"keywords": "sourdough acetone"})

        anyio.run(main)
        assert seen["tools"] == {"search", "keyword_search", "read_turns", "list_sessions", "about_user"}
        assert "Not dead, just hungry!" in _text(seen["search"])
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stderr:
            server.stderr.close()


def test_without_the_mcp_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from refind.cli import EXIT_ERROR, main

    for name in ("refind.mcp", "refind.mcp.server"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # makes the SDK's import fail
    result = CliRunner().invoke(main, ["mcp"])
    assert result.exit_code == EXIT_ERROR
    assert result.stderr.strip() == "Error: the MCP server needs the mcp SDK: pip install 'refind[mcp]'"


# ---------------------------------------------------------------------------------------------- a host can trust it


def test_read_turns_says_only_what_is_true_and_bad_arguments_are_tool_errors(
    index: Path, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        calls = {
            "past_end": ("read_turns", {"session_id": LISBON, "turn_from": 2, "turn_to": 100}),
            "long": ("read_turns", {"session_id": CODE_SESSION, "turn_from": 0, "turn_to": 100}),
            "no_session": ("read_turns", {"session_id": "no-such-session", "turn_from": 0, "turn_to": 3}),
            "no_turns": ("read_turns", {"session_id": LISBON, "turn_from": 50, "turn_to": 60}),
            "negative_turn": ("read_turns", {"session_id": LISBON, "turn_from": -2, "turn_to": 3}),
            "negative_budget": ("search", {"question": "lisbon", "max_tokens": -5}),
            "zero_top_k": ("keyword_search", {"keywords": "lisbon", "top_k": 0}),
            "sessions": ("list_sessions", {}),
            "code_only": ("list_sessions", {"source": "claude-code", "limit": 1}),
            "filtered": ("keyword_search", {"keywords": "cache test", "source": "chatgpt"}),
            "titled": ("search", {"question": "sourdough starter acetone", "today": "2024-03-10"}),
        }
        for name, (tool, args) in calls.items():
            seen[name] = await _call(session, tool, args)

    over_stdio(index, tmp_path, body)
    past_end = _text(seen["past_end"])
    assert not seen["past_end"].is_error and "more turns follow" not in past_end  # 4 turns: 2-3 is all
    assert past_end.splitlines()[0] == f"[session {LISBON} | turns 2-3]"
    assert (
        "(more turns follow: read_turns from 40)" in _text(seen["long"])
        or len(_text(seen["long"]).splitlines()) <= 41
    )
    assert seen["no_session"].is_error and "no session 'no-such-session'" in _text(seen["no_session"])
    assert seen["no_turns"].is_error and "has turns 0-3, none in 50-60" in _text(seen["no_turns"])
    assert _invalid_params(seen["negative_turn"], "turn_from: input should be greater than or equal to 0")
    assert _invalid_params(
        seen["negative_budget"], "max_tokens: input should be greater than or equal to 100"
    )
    assert _invalid_params(seen["zero_top_k"], "top_k: input should be greater than or equal to 1")
    sessions = _text(seen["sessions"])
    assert f"- {LISBON} | 2024-05-01 | 4 messages | chatgpt: Lisbon in May" in sessions.splitlines()
    assert "claude-code | /home/maya/projects/weather" in sessions
    code_only = _text(seen["code_only"]).splitlines()
    assert len(code_only) == 2 and "claude-code" in code_only[0]
    assert code_only[1].startswith("(more sessions: list_sessions with offset 1)")
    assert "No messages match" in _text(seen["filtered"])  # the cache test is a Claude Code session
    assert "| chatgpt | Sourdough starter smells like nail polish]" in _text(seen["titled"])


MALFORMED = [
    ("not json at all", None, -32700),
    ("{", None, -32700),
    ('{"jsonrpc": "2.0", "id": 7}', 7, -32600),
    ('{"jsonrpc": "1.0", "id": 8, "method": "tools/list"}', 8, -32600),
    ('{"id": "nine", "method": "tools/list"}', "nine", -32600),
    ("[]", None, -32600),
    ("[1, 2]", None, -32600),
    ('"a string"', None, -32600),
    ("42", None, -32600),
    ("null", None, -32600),
    ('{"jsonrpc": "2.0", "id": 10, "method": 5}', 10, -32600),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": 3}', 11, -32600),
    ("{'single': 'quotes'}", None, -32700),
    ('{"jsonrpc": "2.0", "id": 12, "result": {}, "error": {}}', 12, -32600),
    ("\u0000\u0001", None, -32700),
    ('{"jsonrpc": "2.0", "id": 13, "method": "tools/list"', None, -32700),
    ('{"jsonrpc": "2.0", "id": 14}', 14, -32600),
    ("nan", None, -32700),
]


def _replies(index: Path, tmp_path: Path, lines: list[str]) -> list[dict[str, Any]]:
    """Send ``lines`` and then a ping to a real ``refind mcp`` over stdio; every reply, the ping's last
    (fails when one is missing: the server must answer each line and go on)."""
    import json

    server = subprocess.Popen(
        [sys.executable, "-m", "refind.cli", "mcp", "--data", str(index)],  # --data after mcp, too
        env=_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        ping = '{"jsonrpc": "2.0", "id": 99, "method": "ping"}'
        server.stdin.write("\n".join([*lines, ping]) + "\n")
        server.stdin.flush()
        replies = []
        deadline = time.monotonic() + 120  # the JVM starts first; a missing reply must fail, not hang
        while len(replies) < len(lines) + 1 and time.monotonic() < deadline:
            ready, _, _ = select.select([server.stdout], [], [], 1.0)
            if ready:
                line = server.stdout.readline()
                if not line:
                    break
                replies.append(json.loads(line))
        assert len(replies) == len(lines) + 1, (replies, server.poll())
    finally:
        server.kill()
        server.wait(timeout=30)
        for stream in (server.stdin, server.stdout, server.stderr):
            if stream:
                stream.close()
    assert replies[-1]["id"] == 99  # and the server still answers what is well formed
    return replies[:-1]


def test_every_malformed_json_rpc_line_gets_an_error_reply(index: Path, tmp_path: Path) -> None:
    replies = _replies(index, tmp_path, [line for line, _, _ in MALFORMED])
    got = [(r.get("id"), r["error"]["code"]) for r in replies]
    assert got == [(rid, code) for _, rid, code in MALFORMED]
    assert all(r["jsonrpc"] == "2.0" and r["error"]["message"] for r in replies)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


DEEP = [
    ("[" * 1000, None, -32700),  # issue 39: a RecursionError ended the server (exit 3)
    ('{"a":' * 1000, None, -32700),
    ("[" * 100_000, None, -32700),
    (_deep(1000), None, -32700),
    ('{"jsonrpc": "2.0", "id": 21, "method": "ping", "params": {"a": ' + _deep(5000) + "}}", None, -32700),
    ('{"jsonrpc": "2.0", "id": 22, "method": "ping", "params": {"a": ' + _deep(300) + "}}", 22, -32600),
]


def test_a_line_nested_however_deep_gets_an_error_reply_and_the_server_goes_on(
    index: Path, tmp_path: Path
) -> None:
    """docs/mcp.md: every unreadable line gets a JSON-RPC error, nested 300 or 100,000 levels deep; a
    deep but readable request (150 levels) gets its answer."""
    readable = '{"jsonrpc": "2.0", "id": 23, "method": "ping", "params": {"a": ' + _deep(150) + "}}"
    replies = _replies(index, tmp_path, [line for line, _, _ in DEEP] + [readable])
    got = [(r.get("id"), r["error"]["code"]) for r in replies[:-1]]
    assert got == [(rid, code) for _, rid, code in DEEP]
    assert all("deep" in r["error"]["message"] for r in replies[:5]), replies
    assert replies[-1]["id"] == 23 and ("result" in replies[-1] or "error" in replies[-1])


def test_the_docs_sdk_client_example_passes_the_index_by_env_or_data(index: Path, tmp_path: Path) -> None:
    """The SDK's stdio client passes only HOME, PATH, SHELL and TERM: REFIND_DATA must go in ``env=`` (or
    the index in ``--data``), as docs/mcp.md shows."""
    found: dict[str, str] = {}
    for how, args, extra in (("env", [], {"REFIND_DATA": str(index)}), ("data", ["--data", str(index)], {})):
        env = {**_env(tmp_path), **extra}
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "refind.cli", "mcp", *args], env=env, cwd=str(ROOT)
        )

        async def main(params: StdioServerParameters = params, how: str = how) -> None:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("keyword_search", {"keywords": "sourdough acetone"})
                found[how] = _text(result)

        anyio.run(main)
    assert all("Not dead, just hungry!" in text for text in found.values()), found


def test_bad_calls_are_json_rpc_invalid_params_in_a_short_sentence(index: Path, tmp_path: Path) -> None:
    """Issue 38: arguments that do not fit (the schema's, an empty question, a bad date, a source no session
    has) and an unknown tool are JSON-RPC invalid-params errors in short human words, never pydantic's
    text; what the history does not hold stays a tool result. A start of a session id reads its turns."""
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        calls = {
            "empty": ("search", {"question": "   "}),
            "empty_keywords": ("keyword_search", {"keywords": ""}),
            "missing": ("search", {}),
            "wrong_type": ("read_turns", {"session_id": LISBON, "turn_from": "zero", "turn_to": 3}),
            "unknown_tool": ("delete_everything", {"x": 1}),
            "bogus_source": ("list_sessions", {"source": "bogus"}),
            "no_session": ("read_turns", {"session_id": "no-such-session", "turn_from": 0, "turn_to": 3}),
            "prefix": ("read_turns", {"session_id": "6612f0a1-2", "turn_from": 0, "turn_to": 1}),
            "sessions": ("list_sessions", {}),
        }
        for name, (tool, args) in calls.items():
            seen[name] = await _call(session, tool, args)

    over_stdio(index, tmp_path, body)
    assert _invalid_params(seen["empty"], "question is empty: give some words to search for")
    assert _invalid_params(seen["empty_keywords"], "keywords is empty")
    assert _invalid_params(seen["missing"], "invalid arguments for search: question: field required")
    assert _invalid_params(seen["wrong_type"], "turn_from: input should be a valid integer")
    assert _invalid_params(
        seen["unknown_tool"], "unknown tool 'delete_everything'; the tools are: about_user, keyword_search"
    )
    assert _invalid_params(seen["bogus_source"], "source 'bogus': no session has it; the sources of the")
    assert seen["no_session"].is_error and "no session 'no-such-session'" in _text(seen["no_session"])
    assert _text(seen["prefix"]).splitlines()[0] == f"[session {LISBON} | turns 0-1]"
    listed = _text(seen["sessions"])
    assert "“Add a --units flag to the CLI (metric or imperial).” (its first message; no title)" in listed
