"""The MCP server: refind's search tools for one user and one index, on the official ``mcp`` SDK
(``MCPServer``), over stdio or streamable HTTP. A thin front over :class:`refind.Memory`: public names only."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

import refind

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS, ToolAnnotations
except ImportError as exc:  # pragma: no cover - exercised by the CLI test with the SDK hidden
    raise ImportError(
        f"refind's MCP server needs the mcp SDK ({exc}): pip install 'refind[mcp]'", name="mcp"
    ) from exc

__all__ = ["MAX_READ_TURNS", "NewMessage", "build_server", "serve"]

log = logging.getLogger(__name__)

MAX_READ_TURNS = 40
DEFAULT_PORT = 8766
"""``refind mcp --transport http``'s port: beside ``refind ui``'s 8765, so both can run at once."""
_DAY = timedelta(days=1)

INSTRUCTIONS = """\
This server searches the user's own past conversations: their chats with ChatGPT or Claude and their
coding-agent sessions, stored verbatim (nothing summarized). Use it when the user refers to something from
an earlier conversation ("what did we decide about...", "the script you wrote me last month", "when did I
last..."), or when an answer depends on what they said before. Start with `search` (a question in plain
words); follow up with `keyword_search` (distinctive words, optionally a date range) and `read_turns` (the
turns around a hit). Results are evidence with dates, not answers: read them and answer yourself, and say
when the history does not hold the answer."""

SEARCH_DESCRIPTION = """\
Search the user's past conversations for what answers a question. Use it first whenever the user refers \
to something discussed before, or an answer depends on their history. Several keyword searches run (with \
a time filter when the question says "last week", "in May", ...), and the evidence comes back grouped by \
conversation in time order: the matching messages (marked *) with the turns around them, each \
conversation with its date. The list at the end gives each block's session id and turns, for read_turns. \
Returns evidence, never an answer."""

KEYWORD_DESCRIPTION = """\
One keyword search over the user's past messages, like the search box of a chat app: the best matches for \
the words, each with the turns around it. Use it when you know distinctive words (a name, a file, an error \
message, a place) or want to try other words after search, and to restrict to a period with date_from / \
date_to (YYYY-MM-DD, inclusive). Plain words only: no quotes or operators."""

READ_DESCRIPTION = f"""\
Read consecutive turns of one past conversation, in order, with their times: what came before or after a \
hit of search or keyword_search. Take session_id and the turn numbers from those results (turns start at \
0); at most {MAX_READ_TURNS} turns per call."""

ADD_DESCRIPTION = """\
Save messages to the user's history so that later searches find them. Use it only when the user asks you \
to remember something, or to log the current conversation. session_id groups the messages of one \
conversation (reuse it to append); each message has a role (user or assistant), its content and, \
optionally, an ISO 8601 timestamp. Pass a request_id to make a retry safe (the same id is written once)."""


SESSIONS_DESCRIPTION = """\
List the user's stored conversations, most recent first: each with its session id, title, source app \
(chatgpt, claude, claude-code, ...), project, dates and message count. Use it when the user asks what is \
in their history, or to find a conversation by its title; read one with read_turns."""

ABOUT_DESCRIPTION = """\
What the user has said that stands: their standing instructions and preferences ("always answer in \
metric") and lasting facts about themselves, their household or their work (a condition, a medication, a \
diet, children, where they live, an employer's rules, a value they hold), each with its date, newest first. \
Use it before advising on food, travel, health, money, work or plans, even when the request does not name \
such a fact: a search cannot find what the question gives no word for. A fact that a later one changed is \
marked superseded; one the user pinned is marked pinned."""

PIN_DESCRIPTION = """\
Make one of the user's past messages stand: it is then listed by about_user and offered with every search, \
as a fact (the default), an instruction or a preference, whatever refind's rule reads in it. Use it only \
when the user asks you to remember something they said as lasting ("remember that I'm allergic to \
penicillin", "that rule about commit messages holds from now on"). Give the message's session_id and turn \
(from about_user, search results or read_turns). unpin_fact undoes it."""

HIDE_DESCRIPTION = """\
Make one of the user's past messages never stand: it is no longer listed by about_user nor offered with \
searches (searches still find it as any message). Use it when the user says something about_user lists is \
wrong or no longer holds and they want it out ("I'm not vegan any more, stop assuming it"). Give the \
message's session_id and turn as about_user shows them. unpin_fact undoes it."""

UNPIN_DESCRIPTION = """\
Take a pin_fact or hide_fact off one of the user's messages: what stands in it is again what refind's rule \
reads. Give the message's session_id and turn (about_user with hidden=true lists the hidden ones)."""

# a marked message, as the tools that pin, hide and unpin take it
_SessionOf = Annotated[str, Field(description="The message's session id (or a unique start of one).")]
_TurnOf = Annotated[int, Field(ge=0, description="The message's turn in that session (turns start at 0).")]

SOURCE_FILTER = (
    "Only conversations from this app: chatgpt, claude, claude-code, jsonl, ... (see list_sessions)."
)
PROJECT_FILTER = "Only conversations of this project (a working directory, as list_sessions shows it)."


def _summary_line(r: refind.SessionSummary) -> str:
    first, last = refind.format_date(r.first, "day"), refind.format_date(r.last, "day")
    when = first if first == last else f"{first} - {last}"
    parts = [r.session_id, when, f"{r.messages} messages"]
    parts += [v for v in (r.source, r.project) if v]
    title = f"“{r.title}” (its first message; no title)" if r.title_derived else r.title
    return f"- {' | '.join(parts)}" + (f": {title}" if title else "")


class NewMessage(BaseModel):
    """A message for ``add_messages``."""

    role: str = Field(description="user or assistant")
    content: str = Field(description="the message text, verbatim")
    timestamp: str | None = Field(None, description="when it was sent, ISO 8601; default: now")


def _invalid(message: str) -> MCPError:
    """A JSON-RPC invalid-params error (-32602) with ``message``: the call's arguments are wrong."""
    return MCPError(code=INVALID_PARAMS, message=message)


def _arguments_problem(tool: str, exc: ValidationError) -> str:
    """What is wrong with a call's arguments, in a line: each field and its problem, without pydantic's
    header, the rejected values or a documentation URL."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        msg = str(error["msg"]).split("\n", 1)[0]
        parts.append(f"{where}: {msg[:1].lower()}{msg[1:]}")
    more = len(exc.errors()) - 5
    return f"invalid arguments for {tool}: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


class _Server(MCPServer[Any]):
    """The SDK's server, with a call's argument problems answered as JSON-RPC invalid params (-32602, in
    short human text) instead of a tool result: an unknown tool, arguments that do not fit its schema,
    and what a tool itself refuses as bad input. A tool's failure on good input stays a tool result with
    ``isError`` (the model reads it, e.g. "no session ... in this history")."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if self._tool_manager.get_tool(name) is None:
            tools = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
            raise _invalid(f"unknown tool {name[:100]!r}; the tools are: {tools}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise _invalid(_arguments_problem(name, exc.__cause__)) from None
            raise


def _day(value: str | None, name: str) -> date | None:
    if value is None or not value.strip():
        return None
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        shown = value if len(value) <= 40 else value[:39] + "…"
        raise _invalid(f"{name} {shown!r} is not a date in the form YYYY-MM-DD (e.g. 2024-05-08)") from None


def _words(value: str, name: str) -> str:
    """``value`` when it holds something to search for; an empty one is refused (it would find nothing
    and cost a search)."""
    if not value.strip():
        raise _invalid(f"{name} is empty: give some words to search for")
    return value


def _ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def _blocks_index(blocks: list[refind.Evidence]) -> str:
    if not blocks:
        return ""
    spans = [f"{b.session_id}: turns {b.first_turn}-{b.last_turn}" for b in blocks]
    return "\n\nBlocks (session id: turns, for read_turns):\n" + "\n".join(f"- {s}" for s in spans)


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """refind's errors: bad input (:class:`refind.InvalidInput`) is a JSON-RPC invalid-params error, any
    other a tool error; either way the message says what to change."""
    try:
        yield
    except refind.InvalidInput as exc:
        raise _invalid(str(exc)) from exc
    except refind.RefindError as exc:
        raise ToolError(str(exc)) from exc


def build_server(
    mem: refind.Memory, user_id: str, *, allow_add: bool = False, name: str = "refind"
) -> MCPServer[Any]:
    """An ``MCPServer`` whose tools search ``user_id``'s history in ``mem``: ``search``, ``keyword_search``
    ``read_turns``, ``list_sessions`` and ``about_user``, plus, when ``allow_add`` (``mem`` must then be
    writable), ``add_messages`` and the corrections of what stands: ``pin_fact``, ``hide_fact``,
    ``unpin_fact``."""
    server: MCPServer[Any] = _Server(
        name, instructions=INSTRUCTIONS, version=refind.__version__, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=read_only)
    def search(
        question: Annotated[str, Field(description="What to find, in plain words (a question is fine).")],
        today: Annotated[
            str | None,
            Field(
                description='Today as YYYY-MM-DD, for "last week" and the like. Default: the current date.'
            ),
        ] = None,
        max_tokens: Annotated[
            int,
            Field(
                ge=100,
                le=20_000,
                description="Budget of the evidence; the least relevant blocks are left out first.",
            ),
        ] = 2000,
        source: Annotated[str | None, Field(description=SOURCE_FILTER)] = None,
        project: Annotated[str | None, Field(description=PROJECT_FILTER)] = None,
    ) -> str:
        _words(question, "question")
        now = _day(today, "today")
        budget = max_tokens
        with _errors():
            result = mem.search(
                question, user_id, now=_ms(now + _DAY) - 1 if now else datetime.now(UTC), max_tokens=budget,
                source=source, project=project,
            )  # fmt: skip
        if not result.evidence:
            return f"Nothing in the history matches {question!r}. Try keyword_search with other words."
        return result.to_text(max_tokens=budget) + _blocks_index(result.by_relevance())

    @server.tool(description=KEYWORD_DESCRIPTION, annotations=read_only)
    def keyword_search(
        keywords: Annotated[
            str, Field(description="Space-separated search words, e.g. 'lisbon flat stroller'.")
        ],
        date_from: Annotated[str | None, Field(description="First day to include, YYYY-MM-DD.")] = None,
        date_to: Annotated[str | None, Field(description="Last day to include, YYYY-MM-DD.")] = None,
        top_k: Annotated[
            int, Field(ge=1, le=50, description="How many hits, each shown with its neighbouring turns.")
        ] = 5,
        max_tokens: Annotated[
            int, Field(ge=100, le=20_000, description="Budget of the result in tokens.")
        ] = 2000,
        source: Annotated[str | None, Field(description=SOURCE_FILTER)] = None,
        project: Annotated[str | None, Field(description=PROJECT_FILTER)] = None,
    ) -> str:
        _words(keywords, "keywords")
        lo, hi = _day(date_from, "date_from"), _day(date_to, "date_to")
        if lo and hi and lo > hi:
            raise _invalid(f"date_from {lo} is after date_to {hi}")
        with _errors():
            blocks = mem.keyword_search(
                keywords,
                user_id,
                date_from=_ms(lo) if lo else None,
                date_to=_ms(hi + _DAY) - 1 if hi else None,
                top_k=top_k,
                source=source,
                project=project,
            )
        if not blocks:
            period = f" between {lo or 'the start'} and {hi or 'now'}" if lo or hi else ""
            return f"No messages match {keywords!r}{period}. Try other words, or a wider date range."
        result = refind.SearchResult(question=keywords, user_id=user_id, agent="keyword", evidence=blocks)
        return result.to_text(max_tokens=max_tokens) + _blocks_index(blocks)

    @server.tool(description=READ_DESCRIPTION, annotations=read_only)
    def read_turns(
        session_id: Annotated[
            str, Field(description="A session id from a search result (or a unique start of one).")
        ],
        turn_from: Annotated[int, Field(ge=0, description="First turn to read (turns start at 0).")],
        turn_to: Annotated[int, Field(ge=0, description="Last turn to read, inclusive.")],
    ) -> str:
        if turn_to < turn_from:
            raise _invalid(f"turn_to {turn_to} is before turn_from {turn_from}")
        last = min(turn_to, turn_from + MAX_READ_TURNS - 1)
        with _errors():
            hits = mem.window(user_id, session_id, turn_from, last)
            stored = mem.session(user_id, session_id)[-1:] if not hits else []
            if not hits and not stored:  # no such session: the start of an id, as list_sessions shows it?
                named = mem.resolve_session(user_id, session_id)
                if named != session_id:
                    session_id = named
                    hits = mem.window(user_id, session_id, turn_from, last)
                    stored = mem.session(user_id, session_id)[-1:] if not hits else []
            after = mem.window(user_id, session_id, last + 1, turn_to)[:1] if last < turn_to else []
        if not hits:
            if after:
                return f"Session {session_id!r} has no turns {turn_from}-{last}; read_turns from {after[0].turn}."
            if not stored:
                raise ToolError(
                    f"no session {session_id!r} in this history: take session ids from search results"
                )
            raise ToolError(
                f"session {session_id!r} has turns 0-{stored[0].turn}, none in {turn_from}-{turn_to}"
            )
        lines = [f"[session {session_id} | turns {hits[0].turn}-{hits[-1].turn}]"]
        lines += [
            f"{h.turn} {h.speaker or h.role} ({refind.format_date(h.timestamp, 'minute')}): {h.content}"
            for h in hits
        ]
        if after:
            lines.append(f"(more turns follow: read_turns from {after[0].turn})")
        return "\n".join(lines)

    @server.tool(description=SESSIONS_DESCRIPTION, annotations=read_only)
    def list_sessions(
        source: Annotated[
            str | None, Field(description="Only this app: chatgpt, claude, claude-code, jsonl, ...")
        ] = None,
        project: Annotated[str | None, Field(description="Only this project (a working directory).")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="How many, most recent first.")] = 20,
        offset: Annotated[int, Field(ge=0, description="How many to skip (for the next page).")] = 0,
    ) -> str:
        with _errors():
            rows = mem.sessions(user_id, source=source, project=project, limit=limit + 1, offset=offset)
        if not rows:
            return "No sessions." if offset == 0 else f"No sessions after the first {offset}."
        lines = [_summary_line(r) for r in rows[:limit]]
        if len(rows) > limit:
            lines.append(f"(more sessions: list_sessions with offset {offset + limit})")
        return "\n".join(lines)

    @server.tool(description=ABOUT_DESCRIPTION, annotations=read_only)
    def about_user(
        superseded: Annotated[
            bool, Field(description="Also list the facts that a later one changed.")
        ] = False,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many, newest first.")] = 100,
        hidden: Annotated[
            bool, Field(description="Also list the messages the user hid (hide_fact), which never stand.")
        ] = False,
    ) -> str:
        with _errors():
            facts = mem.profile(user_id, limit=limit)
            marked = [m for m in mem.marks(user_id) if m.mark == "hidden"] if hidden else []
        lines = []
        for f in facts:
            if not f.current and not superseded:
                continue
            kind = ", ".join([f.kind, *([f.domain] if f.domain else []), *(["pinned"] if f.pinned else [])])
            note = "" if f.current else f" (superseded by {f.superseded_by})"
            lines.append(
                f"- {refind.format_date(f.timestamp, 'day')} [{kind}] {f.sentence}{note} "
                f"(session {f.session_id}, turn {f.turn})"
            )
        for m in marked:
            lines.append(
                f"- {refind.format_date(m.timestamp, 'day')} [hidden] {m.sentence} "
                f"(session {m.session_id}, turn {m.turn})"
            )
        return "\n".join(lines) if lines else "Nothing that stands is recorded for this user."

    if allow_add:

        @server.tool(
            description=ADD_DESCRIPTION,
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
        )
        def add_messages(
            session_id: Annotated[str, Field(description="The conversation to add to (reuse it to append).")],
            messages: Annotated[list[NewMessage], Field(description="The messages, in order.")],
            request_id: Annotated[
                str | None, Field(description="Makes a retry safe: the same id is written once.")
            ] = None,
        ) -> str:
            with _errors():
                result = mem.add(
                    user_id,
                    session_id,
                    [m.model_dump(exclude_none=True) for m in messages],
                    request_id=request_id,
                )
            if result.duplicate_request:
                return f"Request {request_id!r} was already saved; nothing was written again."
            return f"Saved {result.added} new and {result.replaced} replaced message(s) in session {session_id!r}."

        corrects = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

        def message_id(session_id: str, turn: int) -> str:
            """The id of the message at ``turn`` of ``session_id`` (a unique start of an id accepted)."""
            hits = mem.window(user_id, session_id, turn, turn)
            if not hits:
                named = mem.resolve_session(user_id, session_id)
                hits = mem.window(user_id, named, turn, turn) if named != session_id else []
            if not hits:
                raise _invalid(
                    f"no turn {turn} in session {session_id!r} of this history: take session ids and turns "
                    "from about_user, search results or read_turns"
                )
            return hits[0].id

        @server.tool(description=PIN_DESCRIPTION, annotations=corrects)
        def pin_fact(
            session_id: _SessionOf,
            turn: _TurnOf,
            kind: Annotated[
                Literal["fact", "instruction", "preference"],
                Field(description="What the message stands as."),
            ] = "fact",
        ) -> str:
            with _errors():
                marked = mem.pin(user_id, message_id(session_id, turn), kind)
            return (
                f"Pinned as a standing {kind}: {marked.sentence} (session {marked.session_id}, turn {turn})"
            )

        @server.tool(description=HIDE_DESCRIPTION, annotations=corrects)
        def hide_fact(
            session_id: _SessionOf,
            turn: _TurnOf,
        ) -> str:
            with _errors():
                marked = mem.hide(user_id, message_id(session_id, turn))
            return f"Hidden: {marked.sentence} (session {marked.session_id}, turn {turn}) no longer stands."

        @server.tool(description=UNPIN_DESCRIPTION, annotations=corrects)
        def unpin_fact(
            session_id: _SessionOf,
            turn: _TurnOf,
        ) -> str:
            with _errors():
                undone = mem.unpin(user_id, message_id(session_id, turn))
            if not undone:
                return f"Turn {turn} of session {session_id} was neither pinned nor hidden; nothing changed."
            return f"Unpinned turn {turn} of session {session_id}: what stands in it is the rule's again."

    return server


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While starting up (the JVM, the index), anything written to file descriptor 1 goes to stderr: over
    stdio, stdout carries the protocol and nothing else."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def serve(
    data: str | os.PathLike[str] | None,
    *,
    user_id: str,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    allow_add: bool = False,
) -> None:
    """Run the MCP server over ``data`` (an index directory; None: the default) until the client goes away
    (stdio) or Ctrl-C (HTTP, at ``http://host:port/mcp``). Read-only unless ``allow_add``."""
    try:
        with _stdout_to_stderr():
            mem = refind.Memory(Path(data) if data is not None else None, read_only=not allow_add)
    except refind.IndexFormatError as exc:
        if allow_add or "no refind index" not in str(exc):
            raise
        raise refind.IndexFormatError(
            f"{exc}: import a history into it first (refind import PATH), or start with --allow-add"
        ) from exc
    try:
        log.info("refind MCP server: user %r, index %s, %s", user_id, mem.path, transport)
        server = build_server(mem, user_id, allow_add=allow_add)
        if transport == "stdio":
            import anyio

            from refind.mcp._stdio import run_stdio

            anyio.run(run_stdio, server._lowlevel_server)  # the SDK's server behind MCPServer
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        mem.close()
