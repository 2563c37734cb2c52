"""``refind`` and ``refind-llm``: refind's own search (the agent loop), through ``Memory.search``.

The wiring is refind's public API (docs/api.md):
``mem.search(question, user_id, now=ms_or_None, top_k=k[, agent=...]) -> SearchResult`` whose
``evidence`` is a list of blocks with ``session_id``, ``turns`` (each with ``id``, ``turn``, ``content``,
``role``/``speaker``) and ``score``. An installed refind without ``Memory.search`` (or ``LLMAgent``) has the
adapters skipped with a one-line reason. Everything that touches that API is in
:meth:`RefindAdapter._search` and :func:`_items`.

Items are the evidence blocks, most relevant first (the order ``to_text`` keeps when it has to drop
blocks); each is rendered exactly as refind renders it for a prompt (``SearchResult.render_block``:
session header with its date, speaker-prefixed turns, context turns cut to ``context_tokens``).

Packed for a reader's budget B (:meth:`RefindAdapter.pack`), the evidence is refind's own: the
question's search packed with ``SearchResult.packed(B)``, which is what ``Memory.search(...,
max_tokens=B)`` returns (a test asserts it on real data); its text is ``to_text()`` and its turns those of
the blocks it holds (a turn refind cut, to ``context_tokens`` or to a passage, still counts). One search
serves every budget, so ``refind-llm`` is packed from the very plan it was scored on.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.adapters.base import AdapterConfig, PackedEvidence, RankedItem
from benchmarks.adapters.bm25 import _USER, open_haystack
from benchmarks.datasets import Question, Session
from refind.tokens import count_tokens

_USAGE = re.compile(r"prompt (\d+) \+ completion (\d+) tokens")
_NO_CALL = re.compile(r"; 0 tool call\(s\)")

__all__ = [
    "RefindAdapter",
    "RefindLLMAdapter",
    "RefindOpenSearchAdapter",
    "openai_configured",
    "packed",
    "usable_replies",
]


def usable_replies(trace: Sequence[Any]) -> int:
    """Model replies (``llm`` trace entries) with a usable tool call: at least one call was parsed and no
    call of the reply was rejected by the dispatcher (an ``error`` entry before the next reply: malformed
    arguments, an unknown tool, an impossible date)."""
    usable = 0
    pending = False
    for t in trace:
        if t.action == "llm":
            usable += pending
            pending = not _NO_CALL.search(t.note or "")
        elif t.action == "error":
            pending = False
    return usable + pending


def openai_configured() -> bool:
    """True when an OpenAI key or an OpenAI-compatible base URL is set in the environment (refind's own
    ``REFIND_LLM_*`` variables or openai's ``OPENAI_*``)."""
    names = ("REFIND_LLM_API_KEY", "REFIND_LLM_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")
    return any(os.environ.get(n) for n in names)


def _flag(value: str) -> bool:
    """An environment switch: false for 0, false, no or off (any case), true otherwise."""
    return value.strip().lower() not in {"0", "false", "no", "off"}


@dataclass
class _State:
    memory: Any
    last: tuple[str, Any] | None = None  # (question id, its SearchResult) for pack()


def _items(result: Any) -> list[RankedItem]:
    blocks = result.by_relevance()
    return [
        RankedItem(
            session_id=str(b.session_id),
            score=float(getattr(b, "score", 0.0) or 0.0),
            text=result.render_block(b),
            turn_ids=tuple(str(t.id) for t in b.turns if getattr(t, "id", None) is not None),
        )
        for b in blocks
    ]


def packed(result: Any) -> PackedEvidence:
    """A budgeted ``SearchResult`` as the reader gets it: its text, tokens, turns and blocks."""
    text = result.to_text()
    return PackedEvidence(
        text=text,
        tokens=count_tokens(text),
        turn_ids=frozenset(str(t.id) for b in result.evidence for t in b.turns),
        items=len(result.evidence),
    )


class RefindAdapter:
    name = "refind"

    @staticmethod
    def unavailable() -> str | None:
        import refind

        if not hasattr(refind.Memory, "search"):
            return "refind.Memory has no search() yet (the search agent is a separate issue)"
        return None

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        return _State(open_haystack(sessions, meaning=True))

    def _search(self, state: _State, question: Question, k: int, max_tokens: int | None = None) -> Any:
        return state.memory.search(question.text, _USER, now=question.now, top_k=k, max_tokens=max_tokens)

    def query(self, question: Question, state: _State, k: int) -> list[RankedItem]:
        result = self._search(state, question, k)
        state.last = (question.id, result)
        return _items(result)

    def pack(
        self,
        question: Question,
        state: _State,
        k: int,
        items: Sequence[RankedItem],
        budgets: Sequence[int],
    ) -> dict[int, PackedEvidence]:
        """What refind hands a reader for each budget: the question's result packed for it
        (``SearchResult.packed(B)``, equal to ``Memory.search(..., max_tokens=B)``)."""
        if state.last is not None and state.last[0] == question.id:
            result = state.last[1]
        else:
            result = self._search(state, question, k)
        return {b: packed(result.packed(b)) for b in budgets}

    def teardown(self, state: _State) -> None:
        state.memory.close()


class RefindLLMAdapter(RefindAdapter):
    """refind's search with the LLM planner (``refind.LLMAgent``), configured from the environment."""

    name = "refind-llm"

    @staticmethod
    def unavailable() -> str | None:
        import refind

        reasons = []
        if not openai_configured():
            reasons.append("needs OPENAI_API_KEY or OPENAI_BASE_URL (an OpenAI-compatible endpoint)")
        if not hasattr(refind.Memory, "search"):
            reasons.append("refind.Memory has no search() yet")
        elif not hasattr(refind, "LLMAgent"):
            reasons.append("refind has no LLMAgent yet")
        return "; ".join(reasons) or None

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        import refind

        # a slow local model: the benchmark may bound what each question costs (REFIND_BENCH_LLM_*)
        options: dict[str, Any] = {}
        for key, env, kind in (
            ("max_actions", "REFIND_BENCH_LLM_MAX_ACTIONS", int),
            ("observation_tokens", "REFIND_BENCH_LLM_OBSERVATION_TOKENS", int),
            ("timeout", "REFIND_BENCH_LLM_TIMEOUT", float),
            ("max_retries", "REFIND_BENCH_LLM_MAX_RETRIES", int),
            ("facts_in_prompt", "REFIND_BENCH_LLM_FACTS_IN_PROMPT", _flag),
            ("meaning_tool", "REFIND_BENCH_LLM_MEANING_TOOL", _flag),
        ):
            if os.environ.get(env):
                options[key] = kind(os.environ[env])
        self._agent = refind.LLMAgent(**options)  # type: ignore[attr-defined]
        self.info = {
            "model": self._agent.model,
            "heuristic_first": self._agent.heuristic_first,
            "max_actions": self._agent.max_actions,
            "observation_tokens": self._agent.observation_tokens,
            "tool_mode": self._agent.tool_mode,
            "facts_in_prompt": self._agent.facts_in_prompt,
            "meaning_tool": self._agent.meaning_tool,
        }
        return super().init(sessions, config)

    def row_extra(self, question: Question, state: _State) -> dict[str, Any]:
        """The model calls of the question's search: how many, how many replies held a usable tool call
        (native or written as text), their tokens, and whether the plan fell back."""
        result = state.last[1] if state.last is not None and state.last[0] == question.id else None
        trace = list(result.trace) if result is not None else []
        calls = [t for t in trace if t.action == "llm"]
        prompt = completion = 0
        for t in calls:
            m = _USAGE.search(t.note or "")
            if m:
                prompt += int(m.group(1))
                completion += int(m.group(2))
        # a request that failed (an HTTP 500 on a reply the server could not parse, a timeout) is a reply
        # without a usable call too: each retry, and the last attempt when the plan fell back on it
        failed = sum(1 for t in trace if t.action == "retry") + sum(
            1 for t in trace if t.action == "fallback" and "model call failed" in (t.note or "")
        )
        return {
            "llm_calls": len(calls) + failed,
            "llm_failed": failed,
            "llm_usable": usable_replies(trace),
            "llm_prompt_tokens": prompt,
            "llm_completion_tokens": completion,
            "llm_fallback": any(t.action == "fallback" for t in trace),
        }

    def _search(self, state: _State, question: Question, k: int, max_tokens: int | None = None) -> Any:
        return state.memory.search(
            question.text, _USER, now=question.now, top_k=k, agent=self._agent, max_tokens=max_tokens
        )


class RefindOpenSearchAdapter(RefindAdapter):
    """refind's search (the heuristic agent) over the OpenSearch engine: each haystack in a fresh index
    prefix on the cluster ``$REFIND_BENCH_OPENSEARCH`` names (``opensearch://host:port[/prefix][?shards=N]``),
    dropped after the haystack. Start a dev cluster with ``scripts/opensearch-dev start``
    (docs/scale-out.md)."""

    name = "refind-opensearch"

    @staticmethod
    def unavailable() -> str | None:
        if not os.environ.get("REFIND_BENCH_OPENSEARCH"):
            return "needs REFIND_BENCH_OPENSEARCH=opensearch://host:port (a cluster; scripts/opensearch-dev start)"
        import importlib.util

        if importlib.util.find_spec("opensearchpy") is None:
            return "needs opensearch-py: pip install 'refind[opensearch]'"
        return None

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        import uuid
        from urllib.parse import urlsplit, urlunsplit

        import refind

        base = urlsplit(os.environ["REFIND_BENCH_OPENSEARCH"])
        prefix = f"{base.path.strip('/') or 'bench'}-{uuid.uuid4().hex[:10]}"
        memory = refind.Memory(urlunsplit((base.scheme, base.netloc, "/" + prefix, base.query, "")))
        self.info = {"store": memory.location.rsplit("-", 1)[0] + "-*", "query": base.query or "shards=1"}
        try:
            memory.import_sessions(s.to_log(_USER) for s in sessions)
        except BaseException:
            self._drop(memory)
            raise
        return _State(memory)

    @staticmethod
    def _drop(memory: Any) -> None:
        try:
            memory.drop()
        finally:
            memory.close()

    def teardown(self, state: _State) -> None:
        self._drop(state.memory)
