"""LLMAgent: an OpenAI-compatible chat model decides the search rounds with tool calls.

The model gets the question (and the multiple-choice options, as extra search material), today's date when
known, and the tools (:mod:`refind.agent._tools`): ``search``, ``note``, ``finish``, and ``search_meaning`` (a
round by meaning over the model's own words) when the search can embed. Each call runs on the question's
:class:`~refind.search.SearchSession` through the same :class:`~refind.agent._tools.ToolDispatcher` users' own
agents get, and its observation (the new blocks with their ids, packed for
``observation_tokens`` as :func:`refind.evidence.pack` packs a budget) goes back as the tool message.

The first prompt also carries the person's standing facts that bear on the question (those the search offers
beside the evidence: :meth:`~refind.search.SearchSession.facts`), marked, with the word that the model may
search for what one implies (asthma matters to a request about a pet); they stay in the final evidence
whatever the model does.

What it hands on is what the model saw: the blocks it noted, or, when it noted none, the turns its
observations showed plus at most ``unseen_tokens`` of the rest (packed, best first). Every request stays
within ``conversation_tokens`` (default 12,000 or ``REFIND_LLM_CONVERSATION_TOKENS``): the oldest
observations are replaced by the block ids they showed, and the agent stops when even that is not enough.

Failures, in one place:

* **Retries** live here only: the openai client is built (or re-optioned) with ``max_retries=0``, and
  tenacity retries 429, 5xx, timeouts and connection errors up to ``max_retries`` times, waiting a jittered
  exponential backoff (``retry_wait = (multiplier, max)`` seconds; a server's Retry-After is honoured up to
  that max).
* **Malformed tool calls** (arguments that are not JSON, unknown tools, missing keywords, impossible dates)
  get a corrective tool message; after ``max_corrections`` in a row (or one more than that in total) the
  agent stops asking.
* **Fallback**: when retries are exhausted, a call fails for good (401, 400, ...) or corrections run out,
  the heuristic plan (``fallback``, default :class:`~refind.agent.heuristic.HeuristicAgent`) runs on the same
  session, so what the model found is kept and not shown twice. The trace says so (action ``fallback``). A
  rejected key (401/403) is logged once at WARNING and later questions go straight to the fallback.

* **Tool modes** (``tool_mode``, :mod:`refind.agent.toolmodes`): ``native`` sends ``tools=``; ``text``
  writes the tool schemas into the system prompt and parses the reply's text; ``json`` does that and asks
  for output constrained to one valid call (``response_format`` json_schema), so a server that enforces
  the schema (llama.cpp, vLLM, LM Studio, OpenAI) always returns a usable call. The retry of a request
  that failed with a 5xx runs at temperature 0.7 (at 0 a format error on the model's output repeats).

Every model call is a trace entry (action ``llm``) with its tokens (the response's ``usage``, else counted
with tiktoken) and latency; retries (``retry``) and corrections (``error``) are recorded too.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from refind.agent._options import (
    DEFAULT_CONVERSATION_TOKENS,
    DEFAULT_MODEL,
    MODEL_ONLY_OBSERVATION_TOKENS,
    LLMOptions,
    ToolMode,
)
from refind.agent._tools import MEANING_TOOL_NAME, ToolDispatcher, _unpack_call
from refind.agent.base import Agent
from refind.agent.heuristic import HeuristicAgent
from refind.agent.textcalls import check_dates, text_tool_calls
from refind.agent.toolmodes import response_format, result_message, tools_prompt
from refind.config import env_var
from refind.errors import InvalidInput, LLMUnavailable
from refind.evidence import format_date
from refind.models import Evidence
from refind.query.reading import ReadingRules
from refind.search.session import SearchSession
from refind.tokens import count_tokens

__all__ = ["DEFAULT_MODEL", "SYSTEM_PROMPT", "LLMAgent", "LLMOptions"]

log = logging.getLogger(__name__)

RETRY_TEMPERATURE = 0.7  # the retry of a request the server failed with a 5xx

SYSTEM_PROMPT = """\
You are a research assistant searching one person's chat history. Your job is to collect the messages \
that could answer their question; you do not answer it yourself. Someone else reads what you collect.

How to search:
- Start broad: one search with several keywords from the question (names, places, distinctive nouns, \
the activity asked about). Plain words work best; the search matches word stems.
- Every search skips messages that earlier searches already returned, so search again with different \
words: synonyms, related terms, the other person's name, words from the answer options if given.
- When the question has a time cue ("last week", "in May", "before the trip"), narrow a search with \
date_from/date_to (YYYY-MM-DD, inclusive), worked out from today's date. Messages are dated by their \
conversation; a fact mentioned later may refer to an earlier event, so keep an undated search too.
- After searching, call note with the ids (from the [id ...] lines) of the blocks that might help.
- Call finish when the collected evidence is enough or further searches keep finding nothing new.
{today}"""

_USER_TEMPLATE = "Question: {question}"

_FACTS = """

Standing facts this person told you in earlier conversations (their own words; the reader gets them with \
the evidence, so do not note them):
{facts}
A request can depend on one of these without naming it (asthma matters to a request about getting a pet, a \
bad back to a plan for moving house). When one bears on the question, you may search for what it implies \
or for where they said more about it, {how}."""
_FACT_CHARS = 300  # a fact's sentence in the prompt is cut past this many characters

_SEEDED = """

Searches already run for you: {searched}.
{seen}

Search again with other words (or a date range) if something is missing, note the ids of the blocks \
that help, and call finish when the evidence is enough."""


def _today_line(now: int | None) -> str:
    if now is None:
        return "Today's date is not known; use dates only when the question names them."
    day = datetime.fromtimestamp(now / 1000, UTC)
    return f"Today is {day:%Y-%m-%d} ({day:%A})."


class _BadResponse(Exception):
    """The endpoint answered 200 with something that is not a usable chat completion."""


class _Fallback(Exception):
    """Stop asking the model; run the fallback plan. The message is the trace note."""


class LLMAgent:
    """Plans the search rounds with an OpenAI-compatible chat model (native tool calls, temperature 0).

    ``model``, the key and the endpoint come from the arguments, else ``REFIND_LLM_MODEL`` (default
    ``gpt-4o-mini``), ``REFIND_LLM_API_KEY`` / ``OPENAI_API_KEY`` and ``REFIND_LLM_BASE_URL`` /
    ``OPENAI_BASE_URL``; or pass a ready ``client`` (``openai.OpenAI``; it is used with ``max_retries=0``
    because retries happen here). A base URL without a key is fine for local servers. With none of them,
    :class:`~refind.SetupError` says how to configure one.

    ``max_actions`` bounds the tool actions per question (each model call costs at least one, so it bounds
    the calls too); ``timeout`` is seconds per request; ``max_retries`` the retries of one request;
    ``retry_wait`` the backoff's (multiplier, max) seconds; ``observation_tokens`` the size of each search
    result shown to the model; ``max_corrections`` the malformed calls corrected in a row before falling
    back to ``fallback`` (default :class:`~refind.HeuristicAgent`); ``conversation_tokens`` the most tokens
    one request may send; ``unseen_tokens`` the evidence the model was not shown that may still be handed
    on when it noted nothing.

    ``heuristic_first`` (default True, ``REFIND_LLM_HEURISTIC_FIRST``): the heuristic agent's rounds run
    first, the model's first request shows what they found, and the model adds rounds (counted
    ``model_weight``, default 0, in the session ranking) and decides when to stop; all evidence is kept, so
    it holds every turn the heuristic agent returns. ``observation_tokens`` then defaults to 600 (else
    1500). ``reply_tokens`` bounds each reply (``max_tokens`` of the request).

    ``tool_mode`` (default ``native``, ``REFIND_LLM_TOOL_MODE``): how the model is asked for a call,
    ``native`` (``tools=``), ``text`` (schemas in the prompt, the text parsed) or ``json`` (as text, with
    output constrained to one valid call): :mod:`refind.agent.toolmodes`; docs/local-models.md says which
    to pick for which server.

    ``facts_in_prompt`` (default True): the first prompt shows the person's standing facts that the search
    offers beside the evidence (the ``standing_facts`` setting), marked, and says the model may search for
    what one implies. ``meaning_tool`` (default True): the model is offered ``search_meaning`` when the
    search can embed (the memory has an embedder and the index its vectors).

    The options (all but the endpoint's and ``fallback``) are validated by :class:`~refind.LLMOptions`, which
    holds each one's type, bound and default: a bad value is an :class:`~refind.InvalidInput` that names it.
    :attr:`options` are the validated options with the environment's filled in;
    ``LLMAgent(**options.model_dump())`` makes the same agent.
    """

    name = "llm"

    def __init__(
        self,
        model: str | None = None,
        *,
        client: Any | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_actions: int = 4,
        timeout: float = 30.0,
        max_retries: int = 3,
        observation_tokens: int | None = None,
        fallback: Agent | None = None,
        retry_wait: tuple[float, float] = (0.5, 8.0),
        max_corrections: int = 2,
        conversation_tokens: int | None = None,
        unseen_tokens: int = 500,
        heuristic_first: bool | None = None,
        model_weight: float = 0.0,
        reply_tokens: int = 400,
        tool_mode: ToolMode | None = None,
        facts_in_prompt: bool = True,
        meaning_tool: bool = True,
    ) -> None:
        # one validation, by the options model (its defaults are these; tests/test_llm_agent.py keeps them equal)
        options = LLMOptions.from_env(
            model=model,
            max_actions=max_actions,
            timeout=timeout,
            max_retries=max_retries,
            observation_tokens=observation_tokens,
            retry_wait=retry_wait,
            max_corrections=max_corrections,
            conversation_tokens=conversation_tokens,
            unseen_tokens=unseen_tokens,
            heuristic_first=heuristic_first,
            model_weight=model_weight,
            reply_tokens=reply_tokens,
            tool_mode=tool_mode,
            facts_in_prompt=facts_in_prompt,
            meaning_tool=meaning_tool,
        )
        if fallback is not None and not isinstance(fallback, Agent):
            raise InvalidInput(f"fallback: expected an Agent, got {type(fallback).__name__}")
        self.options = options
        """The validated options, those given as None filled from the environment (:class:`LLMOptions`)."""
        self.model: str = options.model or DEFAULT_MODEL
        self.max_actions = options.max_actions
        self.timeout = float(options.timeout)
        self.max_retries = options.max_retries
        self.retry_wait = (float(options.retry_wait[0]), float(options.retry_wait[1]))
        self.observation_tokens: int = options.observation_tokens or MODEL_ONLY_OBSERVATION_TOKENS
        self.max_corrections = options.max_corrections
        self.conversation_tokens: int = options.conversation_tokens or DEFAULT_CONVERSATION_TOKENS
        self.unseen_tokens = options.unseen_tokens
        self.fallback: Agent = fallback or HeuristicAgent()
        self.heuristic_first = bool(options.heuristic_first)
        self.model_weight = float(options.model_weight)
        self.reply_tokens = options.reply_tokens
        self.tool_mode: ToolMode = options.tool_mode or "native"
        self.facts_in_prompt = options.facts_in_prompt
        self.meaning_tool = options.meaning_tool
        self._unavailable: str | None = None  # set once the endpoint refused the credentials (401/403)
        self._openai = _import_openai()
        self._owns_client = client is None  # a client passed in is the caller's to close
        if client is not None:
            secret = getattr(client, "api_key", None)
            self._secret = secret if isinstance(secret, str) and len(secret) >= 8 else None
            self.client = client.with_options(max_retries=0) if hasattr(client, "with_options") else client
            self.base_url = str(getattr(client, "base_url", "")) or None
            return
        key = api_key or env_var("REFIND_LLM_API_KEY") or env_var("OPENAI_API_KEY")
        url = base_url or env_var("REFIND_LLM_BASE_URL") or env_var("OPENAI_BASE_URL")
        if not key and not url:
            raise LLMUnavailable(
                "LLMAgent has no model endpoint: set REFIND_LLM_API_KEY (or OPENAI_API_KEY) for OpenAI, or "
                "REFIND_LLM_BASE_URL for an OpenAI-compatible server (e.g. http://localhost:8000/v1), or "
                "pass LLMAgent(api_key=..., base_url=...) or client=openai.OpenAI(...); "
                "without one, use the offline HeuristicAgent"
            )
        self._secret = key or None
        self.base_url = url
        self.client = self._openai.OpenAI(
            api_key=key or "unused",  # local servers ignore it; the client insists on one
            base_url=url,
            timeout=self.timeout,
            max_retries=0,
        )

    def __repr__(self) -> str:
        return f"LLMAgent(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the HTTP connections of the client it made (a ``client`` passed in is the caller's to
        close). The agent may still be used: the client opens new connections as it needs them."""
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> LLMAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the loop

    @property
    def reading_rules(self) -> ReadingRules:
        """How the questions it plans for are read: as its heuristic seed reads them."""
        return self._seed_agent().reading_rules

    def run(self, session: SearchSession) -> None:
        if self.heuristic_first:
            return self._run_seeded(session)
        if self._unavailable is not None:
            return self._fall_back(session, self._unavailable)
        tools = ToolDispatcher.for_session(
            session, observation_tokens=self.observation_tokens, label="llm", meaning=self.meaning_tool
        )
        try:
            self._converse(session, tools)
        except _Fallback as exc:
            self._fall_back(session, str(exc))
            return
        if not session.blocks:  # the model's searches found nothing: the heuristic plan may
            self._fall_back(session, "the model's searches found no evidence")
            return
        # what it hands on is what the model saw (or noted)
        session.keep_seen(tools.shown, self.unseen_tokens)

    def _seed_agent(self) -> HeuristicAgent:
        return self.fallback if isinstance(self.fallback, HeuristicAgent) else HeuristicAgent()

    def _run_seeded(self, session: SearchSession) -> None:
        """Heuristic first: the heuristic plan's rounds (milliseconds), then the model sees what they found
        and may add rounds (weighted ``model_weight`` in the session ranking) or stop. All evidence is
        kept and fused as the heuristic agent's is; the model's notes are recorded, not used as a filter,
        so the result holds at least what the heuristic agent returns."""
        seed = self._seed_agent()
        seed.run_rounds(session)
        session.keep_floor()  # within a budget the model's rounds add to the heuristic evidence, never displace it
        heuristic_rounds = session.rounds
        if self._unavailable is not None:
            return self._stand(session, self._unavailable)
        tools = ToolDispatcher.for_session(
            session,
            observation_tokens=self.observation_tokens,
            label="llm",
            weight=self.model_weight,
            meaning=self.meaning_tool,
        )
        ranked = sorted(
            session.blocks, key=lambda b: (-session.session_score.get(b.session_id, 0.0), -b.score, b.id)
        )
        searched = [t.keywords for t in session.trace if t.action == "search" and t.keywords]
        seen = tools.show(ranked, "the searches already run")
        try:
            self._converse(session, tools, seeded=(searched, seen))
        except _Fallback as exc:
            self._stand(session, str(exc))
            return
        session.unnote("noted block(s) kept with the rest: heuristic first keeps all evidence")
        log.debug("LLMAgent: %d heuristic round(s), %d in all", heuristic_rounds, session.rounds)

    def _stand(self, session: SearchSession, cause: str) -> None:
        """Heuristic first and the model stopped early: the heuristic rounds' evidence stands (traced)."""
        if cause == self._unavailable:
            log.debug("LLMAgent keeps the heuristic evidence: %s", cause)
        else:
            log.warning("LLMAgent keeps the heuristic evidence: %s", cause)
        session.step("fallback", f"{self._seed_agent().name} rounds' evidence stands: {cause}")
        if not session.finished:
            session.finish("heuristic rounds done; the model added nothing")

    def _fit(self, messages: list[dict[str, Any]]) -> bool:
        """Keep the conversation within ``conversation_tokens``: the oldest observations are replaced by
        the ids they showed until it fits. False when even that is not enough."""

        def size() -> int:
            return sum(count_tokens(json.dumps(m, ensure_ascii=False)) for m in messages)

        total = size()
        for m in messages:
            if total <= self.conversation_tokens:
                break
            if m.get("role") != "tool" or m.get("content", "").startswith(_TRIMMED):
                continue
            ids = re.findall(r"^\[id ([^\]\s]+)\]", m["content"], flags=re.MULTILINE)
            m["content"] = f"{_TRIMMED} it showed block(s) {', '.join(ids) or '(none)'}.]"
            total = size()
        return total <= self.conversation_tokens

    def _converse(
        self,
        session: SearchSession,
        tools: ToolDispatcher,
        seeded: tuple[list[str], str] | None = None,
    ) -> None:
        reading = session.reading
        offered = tools.tools
        user = _user_message(reading.text, reading.options)
        facts = session.facts() if self.facts_in_prompt else []
        user += _facts_block(facts, meaning=tools.meaning)
        if seeded is not None:
            searched, seen = seeded
            user += _SEEDED.format(searched="; ".join(repr(k) for k in searched) or "(none)", seen=seen)
        system = SYSTEM_PROMPT.format(today=_today_line(session.now))
        if self.tool_mode != "native":
            system += tools_prompt(offered)
        told = [f"{len(facts)} standing fact(s) in the prompt"] if facts else []
        if tools.meaning:
            told.append(f"{MEANING_TOOL_NAME} offered")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        actions = 0
        in_row = total = 0
        while actions < self.max_actions:
            if not self._fit(messages):
                session.finish(f"conversation budget spent: {self.conversation_tokens} tokens")
                return
            message, calls = self._complete(session, messages, offered, "; ".join(told))
            told = []
            if not calls:
                if seeded is not None:
                    raise _Fallback("the model replied without a usable tool call")
                if not session.blocks:
                    raise _Fallback("the model replied without a usable tool call and nothing was found")
                session.finish("the model replied without a tool call; the evidence found so far stands")
                return
            messages.append(
                _assistant_message(message, calls) if self.tool_mode == "native" else _call_text(calls)
            )
            for call in calls:
                if actions >= self.max_actions:
                    break
                actions += 1
                call_id, name, arguments = _unpack_call(call)
                if name in ("search", MEANING_TOOL_NAME):
                    arguments, fixed = check_dates(arguments, reading.time_cue, session.now)
                    if fixed is not None:
                        session.step("dates", fixed)
                outcome = tools.execute(name, arguments)
                if outcome.error is not None:
                    session.step("error", f"{name}: {outcome.error}")
                    if in_row >= self.max_corrections or total > self.max_corrections:
                        raise _Fallback(f"malformed tool calls ({name}: {outcome.error})")
                    in_row += 1
                    total += 1
                else:
                    in_row = 0
                if self.tool_mode == "native":
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": outcome.content})
                else:
                    messages.append(result_message(name, outcome.content))
                if outcome.finished:
                    return
        session.finish(f"budget spent: {self.max_actions} actions")

    def _fall_back(self, session: SearchSession, cause: str) -> None:
        if cause == self._unavailable:  # the rejected key was logged once already
            log.debug("LLMAgent falls back to %s: %s", self.fallback.name, cause)
        else:
            log.warning("LLMAgent falls back to %s: %s", self.fallback.name, cause)
        session.step("fallback", f"{self.fallback.name} plan: {cause}")
        self.fallback.run(session)

    # ------------------------------------------------------------------ one model call, with retries

    def _complete(
        self,
        session: SearchSession,
        messages: list[dict[str, Any]],
        offered: list[dict[str, Any]],
        told: str = "",
    ) -> tuple[Any, list[Any]]:
        """One chat completion offering the tools ``offered`` (retried on transient failures) and its tool
        calls (native, else written in the text); records an ``llm`` trace entry (``told``: what the prompt
        carried beyond the question, said in it)."""
        from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

        openai = self._openai

        temperature = [0.0]

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            wait = state.next_action.sleep if state.next_action else 0.0
            if isinstance(exc, openai.APIStatusError) and exc.status_code >= 500:
                # a server error on the model's output repeats at temperature 0: sample the retry
                temperature[0] = RETRY_TEMPERATURE
            session.step(
                "retry",
                f"attempt {state.attempt_number} failed ({self._describe(exc)}); retrying in {wait:.2f} s"
                + (f" at temperature {temperature[0]}" if temperature[0] else ""),
            )

        retrying = Retrying(
            retry=retry_if_exception(self._retryable),
            wait=self._wait,
            stop=stop_after_attempt(self.max_retries + 1),
            before_sleep=before_sleep,
            reraise=True,
        )
        mode: dict[str, Any] = {}
        if self.tool_mode == "native":
            mode = {"tools": offered, "tool_choice": "auto"}
        elif self.tool_mode == "json":
            mode = {"response_format": response_format(offered)}
        t0 = time.perf_counter()
        try:
            response = retrying(
                lambda: self.client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    temperature=temperature[0],
                    max_tokens=self.reply_tokens,
                    timeout=self.timeout,
                    **mode,
                )
            )
            message = _first_message(response)
        except openai.OpenAIError as exc:
            if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
                refused = "rejected the API key" if exc.status_code == 401 else "denied access"
                cause = f"the endpoint {refused} (HTTP {exc.status_code})"
                if self._unavailable is None:
                    log.warning(
                        "LLMAgent: %s at %s; check REFIND_LLM_API_KEY / OPENAI_API_KEY. "
                        "Later questions use the %s plan without calling the model",
                        cause,
                        self.base_url or "api.openai.com",
                        self.fallback.name,
                    )
                self._unavailable = cause
                raise _Fallback(cause) from exc
            retried = " after retries" if self._retryable(exc) and self.max_retries else ""
            raise _Fallback(f"model call failed{retried}: {self._describe(exc)}") from exc
        except _BadResponse as exc:
            raise _Fallback(f"unusable model response: {exc}") from exc
        ms = round((time.perf_counter() - t0) * 1000, 3)
        prompt, completion, source = _usage(response, messages, message, offered)
        calls: list[Any] = list(getattr(message, "tool_calls", None) or [])
        how = ""
        if not calls:
            calls = [c.as_dict() for c in text_tool_calls(getattr(message, "content", None))]
            how = " written as text" if calls else ""
        session.step(
            "llm",
            f"{self.model}: prompt {prompt} + completion {completion} tokens ({source}); "
            f"{len(calls)} tool call(s){how}" + (f"; {told}" if told else ""),
            tokens=prompt + completion,
            ms=ms,
        )
        return message, calls

    def _retryable(self, exc: BaseException) -> bool:
        openai = self._openai
        if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
            return True
        return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500

    def _wait(self, state: Any) -> float:
        """Jittered exponential backoff (tenacity's ``wait_random_exponential``), at least the server's
        Retry-After, never more than the configured max."""
        from tenacity import wait_random_exponential

        multiplier, cap = self.retry_wait
        wait = wait_random_exponential(multiplier=multiplier, max=cap)(state)
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after(exc)
        if after is not None:
            wait = max(wait, after)
        return min(wait, cap)

    def _describe(self, exc: BaseException | None) -> str:
        """A short cause for the trace and the log (the key, if any, is masked)."""
        if exc is None:
            return "unknown error"
        status = getattr(exc, "status_code", None)
        text = type(exc).__name__ + (f" (HTTP {status})" if status is not None else "")
        message = str(getattr(exc, "message", "") or exc)
        if message:
            text += f": {message[:200]}"
        if self._secret:
            text = text.replace(self._secret, "***")
        return text


# ---------------------------------------------------------------------------------------------- helpers


_TRIMMED = "[earlier observation trimmed to keep the conversation within its token budget;"


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - openai is a dependency
        raise LLMUnavailable("LLMAgent needs the openai package: pip install openai") from exc
    return openai


def _user_message(question: str, options: Sequence[str] | None) -> str:
    text = _USER_TEMPLATE.format(question=question)
    if options:
        listed = "\n".join(f"- {o}" for o in options)
        text += (
            "\n\nAnswer options (one is right; their words are useful search material, but do not pick one):\n"
            + listed
        )
    return text


def _facts_block(facts: Sequence[Evidence], *, meaning: bool) -> str:
    """The person's standing facts for the first prompt, marked, with what the model may do with them; ""
    when there are none."""
    lines = []
    for block in facts:
        for t in block.turns:
            said = " ".join(t.content.split())
            if len(said) > _FACT_CHARS:
                said = said[: _FACT_CHARS - 1] + "…"
            lines.append(f"- {format_date(t.timestamp, 'day')}: {said}")
    if not lines:
        return ""
    how = (
        "with other words, or with search_meaning and a sentence about it" if meaning else "with other words"
    )
    return _FACTS.format(facts="\n".join(lines), how=how)


def _first_message(response: Any) -> Any:
    choices = getattr(response, "choices", None)
    if not choices:
        raise _BadResponse("no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise _BadResponse("the first choice has no message")
    return message


def _assistant_message(message: Any, calls: Sequence[Any]) -> dict[str, Any]:
    tool_calls = []
    for c in calls:
        call_id, name, arguments = _unpack_call(c)
        tool_calls.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments or ""}}
        )
    # calls parsed from the text replace it: the text would repeat them to a server that renders both
    native = bool(getattr(message, "tool_calls", None))
    return {"role": "assistant", "content": message.content if native else None, "tool_calls": tool_calls}


def _call_text(calls: Sequence[Any]) -> dict[str, Any]:
    """The model's call(s) as the assistant message of ``text`` / ``json`` mode: one JSON object a line."""
    lines = []
    for c in calls:
        _, name, arguments = _unpack_call(c)
        try:
            args = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else arguments
        except ValueError:
            args = arguments
        lines.append(json.dumps({"name": name, "arguments": args or {}}, ensure_ascii=False))
    return {"role": "assistant", "content": "\n".join(lines)}


def _usage(
    response: Any, messages: list[dict[str, Any]], message: Any, offered: list[dict[str, Any]]
) -> tuple[int, int, str]:
    """(prompt, completion) tokens: the response's ``usage`` when present, else counted with tiktoken."""
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    if isinstance(prompt, int) and isinstance(completion, int):
        return prompt, completion, "usage"
    # counted: the messages' text plus the tool schemas (the model sees both)
    prompt_text = "\n".join(str(m.get("content") or "") for m in messages) + json.dumps(offered)
    reply = message.content or ""
    for c in message.tool_calls or []:
        _, name, arguments = _unpack_call(c)
        reply += f"{name}({arguments or ''})"
    return count_tokens(prompt_text), count_tokens(reply), "counted"


def _retry_after(exc: BaseException | None) -> float | None:
    """Seconds a 429/503 asks the client to wait (``retry-after-ms`` or ``retry-after``), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max((when - datetime.now(when.tzinfo or UTC)).total_seconds(), 0.0)
