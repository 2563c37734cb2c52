"""The tools a model searches with (``search``, ``note``, ``finish``, and ``search_meaning`` when the search can
embed) and the code that runs them.

``TOOLS`` holds the OpenAI function-tool schemas of the three tools every search has (chat completions
``tools=``); ``MEANING_TOOL`` is the fourth, a round by meaning over the model's own words, offered only when
the search has an embedder (:attr:`ToolDispatcher.tools` is the list for one search). :class:`ToolDispatcher`
executes a call on a :class:`~refind.search.SearchSession` and returns the tool message text. The
:class:`~refind.agent.llm.LLMAgent` and users' own agents (through :mod:`refind.tools`) share this one
implementation, so a tool behaves the same whoever calls it.

A dispatcher never raises on bad arguments: it answers with a text that says what was wrong and what is
valid, so the model can correct itself (``ToolOutcome.error`` tells a caller that it did).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from refind.agent.kinds import KINDS
from refind.agent.kinds.meaning import MEANING
from refind.agent.kinds.tool import TOOL
from refind.errors import InvalidInput
from refind.evidence import format_date, pack, render_block
from refind.models import Evidence, Round, Turn, to_epoch_ms
from refind.result import SearchResult
from refind.search.session import SearchSession
from refind.tokens import count_tokens, truncate_to_tokens


class SessionOpener(Protocol):
    """What a dispatcher needs from a memory (:class:`refind.Memory` is one): a search session for one
    question of one user, with the memory's settings. Agents get a session, never the memory itself."""

    def open_session(
        self,
        question: str,
        user_id: str,
        *,
        now: int | None = ...,
        top_k: int | None = ...,
        window: int | None = ...,
        agent: str = ...,
    ) -> SearchSession: ...


SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": (
            "Keyword search over the user's past chat messages (BM25, like the search box of a chat app). "
            "Returns the best matching messages with the turns around them, as evidence blocks; each block "
            "starts with an [id ...] line. Every search skips messages that earlier searches already "
            "returned, so repeat a search with different words (synonyms, names, places, distinctive "
            "nouns) rather than the same ones. Optionally restrict to messages sent between date_from and "
            "date_to (inclusive)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "keywords": {
                    "type": "string",
                    "description": (
                        "Space-separated search words, e.g. 'Caroline speech school'. Plain words only: "
                        "no boolean operators or quotes are needed."
                    ),
                },
                "date_from": {
                    "type": "string",
                    "description": "Earliest day to include, as YYYY-MM-DD (e.g. 2023-05-01). Omit for no lower bound.",
                },
                "date_to": {
                    "type": "string",
                    "description": "Last day to include, as YYYY-MM-DD (inclusive). Omit for no upper bound.",
                },
                "breadth": {
                    "type": "boolean",
                    "description": (
                        "true when the answer is spread over many places (an order of events, a summary, a "
                        "count, 'all', 'every time', 'so far'): this and later searches return five times "
                        "as many short passages, without surrounding turns. Omit for one fact."
                    ),
                },
            },
            "required": ["keywords"],
            "additionalProperties": False,
        },
    },
}

NOTE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "note",
        "description": (
            "Keep evidence blocks that may help answer the question. Pass the ids from the [id ...] lines "
            "of earlier search results (a block id such as 'session_3#0-4', or the id of one message in it). "
            "Only kept blocks are handed on; if nothing is kept, everything found is handed on."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Block ids or message ids to keep.",
                },
                "reason": {"type": "string", "description": "Optional: why these blocks matter."},
            },
            "required": ["ids"],
            "additionalProperties": False,
        },
    },
}

FINISH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "finish",
        "description": (
            "Stop searching: the evidence collected so far is enough (or more searching will not help). "
            "Do not answer the question; the collected evidence is handed to whoever answers it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Optional: why the search is complete."},
            },
            "additionalProperties": False,
        },
    },
}

MEANING_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_meaning",
        "description": (
            "Search the user's past chat messages by meaning: the messages that say what 'text' says, in any "
            "words (a sentence-embedding model ranks them by similarity). Use it when the words of a message "
            "cannot be guessed, e.g. 'I have a health condition that limits what I can eat'. Returns evidence "
            "blocks as search does, skipping messages already returned. Optionally restrict to messages sent "
            "between date_from and date_to (inclusive)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "description": (
                        "A sentence saying what the message you look for would say, e.g. "
                        "'I am allergic to cats' or 'my employer does not allow side jobs'."
                    ),
                },
                "date_from": SEARCH_TOOL["function"]["parameters"]["properties"]["date_from"],
                "date_to": SEARCH_TOOL["function"]["parameters"]["properties"]["date_to"],
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    },
}

TOOLS: list[dict[str, Any]] = [SEARCH_TOOL, NOTE_TOOL, FINISH_TOOL]
TOOL_NAMES: tuple[str, ...] = tuple(t["function"]["name"] for t in TOOLS)
MEANING_TOOL_NAME: str = MEANING_TOOL["function"]["name"]

_USAGE = (
    "The tools are: search(keywords: string, date_from?: 'YYYY-MM-DD', date_to?: 'YYYY-MM-DD', "
    "breadth?: boolean), "
    "{meaning}note(ids: list of block or message ids), finish(reason?: string)."
)
_MEANING_USAGE = "search_meaning(text: string, date_from?: 'YYYY-MM-DD', date_to?: 'YYYY-MM-DD'), "
_DAY_MS = 86_400_000
_MAX_MEANING_CHARS = 1000  # a search_meaning text: a sentence, not a document
_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ][0-9:.+\-Z]*)?$")
_MIN_YEAR, _MAX_YEAR = 1900, 2199


def openai_tools(meaning: bool = False) -> list[dict[str, Any]]:
    """A fresh deep copy of :data:`TOOLS` (safe to modify, e.g. to add ``"strict": True``); with ``meaning``,
    :data:`MEANING_TOOL` after ``search`` (offer it only when the memory has an embedder:
    :attr:`ToolDispatcher.tools` does)."""
    tools = [SEARCH_TOOL, MEANING_TOOL, NOTE_TOOL, FINISH_TOOL] if meaning else TOOLS
    return copy.deepcopy(tools)


@dataclass(slots=True)
class ToolOutcome:
    """What one tool call did. ``content`` is the tool message for the model; ``error`` is set (and
    ``content`` explains it) when the call was malformed and nothing ran; ``finished`` after ``finish``."""

    name: str
    content: str
    error: str | None = None
    finished: bool = False
    new_evidence: list[Evidence] = field(default_factory=list)
    noted: list[str] = field(default_factory=list)


class _BadCall(Exception):
    """A malformed tool call; the message is what the model is told."""


def _day(value: object, name: str) -> date | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise _BadCall(f"{name} must be a string 'YYYY-MM-DD', got {_clip(json.dumps(value))}")
    m = _DATE.match(value.strip())
    if m is None:
        raise _BadCall(f"{name} {_clip(value)!r} is not a date in the form YYYY-MM-DD (e.g. 2023-05-08)")
    try:
        day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError as exc:
        raise _BadCall(f"{name} {value!r} is not a real calendar day ({exc})") from None
    if not _MIN_YEAR <= day.year <= _MAX_YEAR:
        raise _BadCall(f"{name} {value!r} is outside the years {_MIN_YEAR}-{_MAX_YEAR}")
    return day


def _range(args: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """A call's ``date_from`` / ``date_to`` as inclusive epoch ms (either may be None)."""
    day_from = _day(args.get("date_from"), "date_from")
    day_to = _day(args.get("date_to"), "date_to")
    if day_from is not None and day_to is not None and day_from > day_to:
        raise _BadCall(f"date_from {day_from} is after date_to {day_to}; date_from must come first")
    ms_from = to_epoch_ms(day_from) if day_from is not None else None
    ms_to = to_epoch_ms(day_to) + _DAY_MS - 1 if day_to is not None else None
    return ms_from, ms_to


def _clip(text: str, n: int = 80) -> str:
    """``text`` shortened for echoing back to the model."""
    return text if len(text) <= n else text[: n - 1] + "…"


def _parse_arguments(arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str):
        raise _BadCall(f"arguments must be a JSON object, got {type(arguments).__name__}")
    if not arguments.strip():
        return {}
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise _BadCall(
            f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}); send one JSON object, "
            'e.g. {"keywords": "birthday party", "date_from": "2023-05-01"}'
        ) from None
    if not isinstance(parsed, dict):
        raise _BadCall(f"the arguments must be a JSON object, got {type(parsed).__name__}")
    return parsed


class ToolDispatcher:
    """Runs ``search`` / ``note`` / ``finish`` calls for one question of one user.

    ``ToolDispatcher(memory, user_id, now=..., top_k=..., window=...)`` keeps one
    :class:`~refind.search.SearchSession`, so repeated searches in one conversation skip what was already
    returned; :meth:`for_session` wraps an existing session (this is what :class:`LLMAgent` does).
    ``observation_tokens`` bounds each search's tool message (the new blocks packed for it, as
    :func:`refind.evidence.pack` packs a budget; the ids of blocks left out listed at the end).

    :meth:`call` returns the tool message text and never raises on bad arguments; :meth:`execute` returns a
    :class:`ToolOutcome`; :meth:`handle` turns an assistant message's ``tool_calls`` into tool messages;
    :meth:`result` gives the :class:`~refind.SearchResult` (noted blocks, or all when none were noted).

    :attr:`tools` are the schemas to offer the model: the three of :data:`TOOLS`, and ``search_meaning``
    (:data:`MEANING_TOOL`) when the memory can embed the model's words and ``meaning`` is true (the default).
    A ``search_meaning`` call to a dispatcher that does not offer it is answered as an unknown tool.
    """

    def __init__(
        self,
        memory: SessionOpener,
        user_id: str,
        *,
        now: int | float | str | datetime | date | None = None,
        top_k: int | None = None,
        window: int | None = None,
        question: str = "",
        observation_tokens: int = 1500,
        label: str = "tool",
        meaning: bool = True,
    ) -> None:
        session = _open_session(memory, user_id, question, now=now, top_k=top_k, window=window, label=label)
        self._init(session, observation_tokens, label, meaning)

    @classmethod
    def for_session(
        cls,
        session: SearchSession,
        *,
        observation_tokens: int = 1500,
        label: str = "tool",
        weight: float = 1.0,
        meaning: bool = True,
    ) -> ToolDispatcher:
        """A dispatcher over an existing session (the session's read-set and evidence are shared).
        ``weight`` is how much its searches count in the session's fused ranking."""
        self = cls.__new__(cls)
        self._init(session, observation_tokens, label, meaning)
        self.weight = weight
        return self

    def _init(self, session: SearchSession, observation_tokens: int, label: str, meaning: bool) -> None:
        if not isinstance(observation_tokens, int) or observation_tokens < 50:
            raise InvalidInput("observation_tokens: expected an integer of at least 50")
        self.session = session
        self.observation_tokens = observation_tokens
        self.label = label
        self.weight = 1.0
        self.meaning = bool(meaning) and session.can_embed  # search_meaning is offered
        self._shown: set[str] = set()  # turn ids already put in front of the model
        self._aliases: dict[str, str] = {}  # every block id shown -> one of its turn ids

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas to offer the model for this search (a fresh copy): :func:`openai_tools`, with
        ``search_meaning`` when this search can embed."""
        return openai_tools(meaning=self.meaning)

    @property
    def names(self) -> tuple[str, ...]:
        """The names of :attr:`tools`."""
        return (*TOOL_NAMES, MEANING_TOOL_NAME) if self.meaning else TOOL_NAMES

    # ------------------------------------------------------------------ calls

    def call(self, name: str, arguments: str | Mapping[str, Any] | None = None) -> str:
        """Run one tool call; returns the tool message text (an explanation when the call was malformed)."""
        return self.execute(name, arguments).content

    def execute(self, name: str, arguments: str | Mapping[str, Any] | None = None) -> ToolOutcome:
        """Run one tool call; ``arguments`` is the JSON text a model sent, or a dict."""
        try:
            if name not in self.names:
                raise _BadCall(f"there is no tool named {_clip(str(name))!r}")
            args = _parse_arguments(arguments)
            if name == "search":
                return self._search(args)
            if name == MEANING_TOOL_NAME:
                return self._search_meaning(args)
            if name == "note":
                return self._note(args)
            return self._finish(args)
        except _BadCall as exc:
            problem = str(exc)
            usage = _USAGE.format(meaning=_MEANING_USAGE if self.meaning else "")
            return ToolOutcome(
                name=str(name), content=f"Error: {problem}. Nothing was run. {usage}", error=problem
            )

    def handle(self, tool_calls: Iterable[Any] | None) -> list[dict[str, str]]:
        """Tool messages (``{"role": "tool", "tool_call_id": ..., "content": ...}``) for the ``tool_calls`` of
        an assistant message (openai objects or dicts), in order."""
        messages = []
        for tc in tool_calls or []:
            call_id, name, arguments = _unpack_call(tc)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": self.call(name, arguments)})
        return messages

    def show(self, blocks: Sequence[Evidence], where: str) -> str:
        """An observation of ``blocks`` (already found, e.g. by an earlier plan) in the form a search's
        takes, their ids usable in ``note``; ``where`` names what found them."""
        self._aliases.update((b.id, b.turns[0].id) for b in blocks if b.turns)
        return self._observation(where, None, None, blocks, described=True)

    @property
    def shown(self) -> set[str]:
        """Ids of the turns observations have put in front of the model (whole or as a passage)."""
        return set(self._shown)

    def result(self, max_tokens: int | None = None) -> SearchResult:
        """The evidence collected so far (noted blocks, or all when nothing was noted) and the trace."""
        return self.session.result(max_tokens=max_tokens)

    # ------------------------------------------------------------------ the tools

    def _search(self, args: dict[str, Any]) -> ToolOutcome:
        keywords = args.get("keywords")
        if isinstance(keywords, list) and all(isinstance(k, str) for k in keywords):
            keywords = " ".join(keywords)
        if not isinstance(keywords, str) or not keywords.strip():
            raise _BadCall("search needs 'keywords': a non-empty string of search words")
        keywords = " ".join(keywords.split())
        ms_from, ms_to = _range(args)
        breadth = args.get("breadth")
        if breadth is not None and not isinstance(breadth, bool):
            raise _BadCall("breadth must be true or false (or left out)")
        if breadth:  # many places, each short (as the heuristic agent's breadth)
            self.session.widen("asked for by the search tool")
        new = self._run(TOOL.name, keywords, ms_from, ms_to)
        return ToolOutcome(
            name="search", content=self._observation(keywords, ms_from, ms_to, new), new_evidence=new
        )

    def _search_meaning(self, args: dict[str, Any]) -> ToolOutcome:
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _BadCall("search_meaning needs 'text': a sentence saying what the message would say")
        text = " ".join(text.split())
        if len(text) > _MAX_MEANING_CHARS:
            raise _BadCall(
                f"text is {len(text)} characters long; one sentence of at most {_MAX_MEANING_CHARS}"
            )
        ms_from, ms_to = _range(args)
        new = self._run(MEANING.name, text, ms_from, ms_to)
        where = f"search by meaning {_clip(text)!r}"
        return ToolOutcome(
            name=MEANING_TOOL_NAME,
            content=self._observation(where, ms_from, ms_to, new, described=True),
            new_evidence=new,
        )

    def _run(self, kind: str, words: str, ms_from: int | None, ms_to: int | None) -> list[Evidence]:
        """One round of ``kind`` with the model's ``words`` and time range, at this agent's weight; its new
        blocks."""
        new = KINDS.run(
            self.session,
            Round(
                kind=kind,
                keywords=words,
                date_from=ms_from,
                date_to=ms_to,
                weight=self.weight,
                label=self.label,
            ),
        )
        # a block's id changes when a later round extends it; the ids the model saw must still work
        self._aliases.update((b.id, b.turns[0].id) for b in new if b.turns)
        return new

    def _observation(
        self,
        keywords: str,
        ms_from: int | None,
        ms_to: int | None,
        new: Sequence[Evidence],
        *,
        described: bool = False,
    ) -> str:
        """The new blocks packed for ``observation_tokens`` (hits first, long turns cut around the matched
        words), each block's parts under its ``[id ...]`` line, then the ids of blocks left out. Turns shown
        by earlier observations are not repeated when a block grows."""
        where = keywords if described else f"search {_clip(keywords)!r}"
        if ms_from is not None or ms_to is not None:
            lo = format_date(ms_from, "day") if ms_from is not None else "the start"
            hi = format_date(ms_to, "day") if ms_to is not None else "now"
            where += f" from {lo} to {hi}"
        budget = self.observation_tokens
        if not new:
            return truncate_to_tokens(
                f"No new messages for {where}: nothing unread matches. Try different words (synonyms, names, "
                "related nouns), or a wider date range or none.",
                budget,
            )
        head = f"{len(new)} new evidence block(s) for {where}:"
        # the new blocks packed for what is left of the budget, as a reader would get them (hits first, long
        # turns cut around the matched words; refind.evidence.pack), each part under its own [id ...] line
        footer_room = count_tokens(_footer([b.id for b in new], with_ids=False)) + 4
        room = budget - count_tokens(head) - footer_room - 8
        packed = (
            pack(
                self._fresh(new),
                room,
                context_tokens=self.session.context_tokens,
                hit_tokens=self.session.hit_tokens,
                segment_turns=self.session.segment_turns,
            )
            if room > 0
            else []
        )
        owner = {t.id: b.id for b in new for t in b.turns}  # each turn's block, whose id the model can note
        while True:
            groups: dict[str, list[Evidence]] = {}
            for b in packed:
                groups.setdefault(owner[b.turns[0].id], []).append(b)
            pieces = [
                f"[id {bid}]\n"
                + "\n...\n".join(
                    render_block(run, header=i == 0, context_tokens=None, hit_tokens=None)
                    for i, run in enumerate(runs)
                )
                for bid, runs in groups.items()
            ]
            shown_turns = {t.id for b in packed for t in b.turns}
            omitted = [b.id for b in new if not any(t.id in shown_turns for t in b.turns)]
            text = "\n\n".join([head, *pieces, *([_footer(omitted)] if omitted else [])])
            if omitted and count_tokens(text) > budget:  # no room to list them: say how many
                text = "\n\n".join([head, *pieces, _footer(omitted, with_ids=False)])
            if count_tokens(text) <= budget or not packed:
                break
            packed = packed[:-1]
        if not packed:  # not even a passage of the best block fits: its beginning, the id line first
            footer = _footer([b.id for b in new[1:]], with_ids=False)
            left = budget - count_tokens(head) - count_tokens(footer) - 4
            piece = truncate_to_tokens(f"[id {new[0].id}]\n{render_block(new[0])}", max(left, 1))
            text = "\n\n".join([head, piece, *([footer] if len(new) > 1 else [])])
        self._shown.update(shown_turns)
        return truncate_to_tokens(text, budget)

    def _fresh(self, blocks: Sequence[Evidence]) -> list[Evidence]:
        """``blocks`` without the turns earlier observations showed (a block that grew shows only its new
        turns), as runs of consecutive turns, each with its own span id."""
        out: list[Evidence] = []
        for block in blocks:
            runs: list[list[Turn]] = []
            for t in block.turns:
                if t.id in self._shown:
                    continue
                if runs and t.turn == runs[-1][-1].turn + 1:
                    runs[-1].append(t)
                else:
                    runs.append([t])
            for run in runs:
                span = f"{block.session_id}#{run[0].turn}-{run[-1].turn}"
                out.append(
                    block
                    if len(run) == len(block.turns)
                    else block.model_copy(update={"id": span, "turns": run})
                )
        return out

    def _note(self, args: dict[str, Any]) -> ToolOutcome:
        ids = args.get("ids")
        if isinstance(ids, str):
            ids = [ids]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i.strip() for i in ids):
            raise _BadCall("note needs 'ids': a non-empty list of block ids or message ids (strings)")
        reason = args.get("reason")
        reason = reason if isinstance(reason, str) and reason.strip() else None
        wanted = list(dict.fromkeys(i.strip() for i in ids))
        known = {b.id for b in self.session.blocks} | {t.id for b in self.session.blocks for t in b.turns}
        unknown = [i for i in wanted if i not in known and i not in self._aliases]
        kept = self.session.note([self._aliases.get(i, i) for i in wanted], note=reason)
        parts = []
        if kept:
            parts.append(f"Kept {len(kept)} block(s): {', '.join(kept)}.")
        else:
            parts.append("Nothing was kept.")
        if unknown:
            parts.append(
                f"Unknown id(s): {', '.join(unknown)}. Use the ids from the [id ...] lines of search results"
                + (
                    f"; found so far: {', '.join(b.id for b in self.session.blocks)}."
                    if self.session.blocks
                    else "; nothing has been found yet."
                )
            )
        return ToolOutcome(name="note", content=" ".join(parts), noted=kept)

    def _finish(self, args: dict[str, Any]) -> ToolOutcome:
        reason = args.get("reason")
        reason = reason if isinstance(reason, str) and reason.strip() else None
        self.session.finish(note=reason)
        blocks = self.session.blocks
        noted = sum(1 for b in blocks if b.noted)
        return ToolOutcome(
            name="finish",
            content=f"Finished with {len(blocks)} evidence block(s), {noted} of them kept.",
            finished=True,
        )


def _open_session(
    memory: SessionOpener,
    user_id: str,
    question: str,
    *,
    now: int | float | str | datetime | date | None,
    top_k: int | None,
    window: int | None,
    label: str,
) -> SearchSession:
    """A SearchSession set up the way ``Memory.search`` sets one up (the memory's settings)."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInput("user_id: expected a non-empty string")
    try:
        now_ms = to_epoch_ms(now) if now is not None else None
    except ValueError as exc:
        raise InvalidInput(f"now: {exc}") from exc
    for name, value, lo, hi in (("top_k", top_k, 1, 1000), ("window", window, 0, 100)):
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi
        ):
            raise InvalidInput(f"{name}: expected an integer between {lo} and {hi}")
    return memory.open_session(question, user_id, now=now_ms, top_k=top_k, window=window, agent=label)


def _footer(omitted: Sequence[str], *, with_ids: bool = True) -> str:
    if not omitted:
        return ""
    ids = f": {', '.join(omitted)}" if with_ids else ""
    return f"({len(omitted)} more block(s) not shown for length{ids}; they count as read.)"


def _unpack_call(tc: Any) -> tuple[str, str, Any]:
    """(id, name, arguments) of an openai tool call object or its dict form."""
    if isinstance(tc, Mapping):
        fn = tc.get("function") or {}
        return str(tc.get("id", "")), str(fn.get("name", "")), fn.get("arguments")
    fn = getattr(tc, "function", None)
    return str(getattr(tc, "id", "")), str(getattr(fn, "name", "")), getattr(fn, "arguments", None)
