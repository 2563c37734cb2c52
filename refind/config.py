"""Settings in groups, each default written once, and the one place refind reads ``REFIND_*`` variables.

A setting is a field of one group, written once with its type, bound, default and docstring:

- :class:`StoreSettings`: how the index is kept (the JVM, BM25, the IndexWriter, the embedder);
- :class:`SearchSettings`: how a round searches (``top_k``, ``window``, the read-set, fusion);
- :class:`PackSettings`: how evidence is rendered and packed (token cuts, parts, what stands beside it);
- :class:`AgentSettings`: how the heuristic agent plans (every knob of :class:`refind.HeuristicAgent`).

:class:`Settings` is all four in one flat model (``Settings(top_k=3)``, ``settings.top_k``), with each group as
a view (``settings.search``). Each field's variable is derived from its name, ``REFIND_<NAME>``
(:func:`env_name`), and read by one generic reader (:func:`env_values`), which :meth:`Settings.from_env` and
:meth:`refind.LLMOptions.from_env` (``REFIND_LLM_<NAME>``) use. The variables that are not settings (where
the index is, keys and endpoints, the CLI's daemon) are listed once in :data:`ENVIRONMENT` and read through
:func:`env_var`; ``tests/test_config.py`` fails on a ``REFIND_*`` variable read anywhere else.
"""

from __future__ import annotations

import os
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from refind.errors import InvalidInput
from refind.policy import POLICY

__all__ = [
    "DEFAULTS",
    "ENVIRONMENT",
    "GROUPS",
    "AgentSettings",
    "PackSettings",
    "SearchSettings",
    "Settings",
    "StoreSettings",
    "default_data_dir",
    "env_name",
    "env_values",
    "env_var",
]

PREFIX = "REFIND_"

ENVIRONMENT: dict[str, str] = {
    "REFIND_DATA": "the index directory (default_data_dir; the CLI's --data)",
    "REFIND_STORE": "where the messages live when Memory gets no path (refind.store.open_engine; the CLI's --store)",
    "REFIND_TZ": "the time zone the CLI and the browsing page show dates in (the CLI's --tz)",
    "REFIND_DEBUG": "errors re-raise with their traceback (CLI), 500 bodies carry the message (service)",
    "REFIND_API_KEY": "the HTTP service's key (ServerConfig.build)",
    "REFIND_DAEMON": "0/off/false/no: the CLI runs every command in its own process (refind.cli._daemon)",
    "REFIND_DAEMON_IDLE": "seconds without a request before the CLI's background process exits",
    "REFIND_LLM_API_KEY": "the LLM agent's key (then OPENAI_API_KEY)",
    "REFIND_LLM_BASE_URL": "the LLM agent's OpenAI-compatible endpoint (then OPENAI_BASE_URL)",
    "OPENAI_API_KEY": "the LLM agent's and the embeddings endpoint's key when their own is unset",
    "OPENAI_BASE_URL": "the LLM agent's endpoint when REFIND_LLM_BASE_URL is unset",
    "REFIND_EMBED_MODEL": "the embeddings endpoint's model (EndpointEmbedder)",
    "REFIND_EMBED_BASE_URL": "the embeddings endpoint (EndpointEmbedder)",
    "REFIND_EMBED_API_KEY": "the embeddings endpoint's key (then OPENAI_API_KEY)",
    "REFIND_EMBED_THREADS": "the local embedding model's intra-op threads (LocalEmbedder)",
    "REFIND_MODEL_DIR": "where the local embedding model's files are (refind.embed.local)",
    "REFIND_OPENSEARCH_USER": "the OpenSearch engine's basic-auth user when the URL has none",
    "REFIND_OPENSEARCH_PASSWORD": "the OpenSearch engine's basic-auth password when the URL has none",
    "REFIND_OPENSEARCH_API_KEY": "sent to OpenSearch as Authorization: ApiKey <value>",
    "REFIND_OPENSEARCH_CA_CERTS": "a CA bundle for opensearchs://",
    "REFIND_OPENSEARCH_VERIFY": "0: do not verify the cluster's TLS certificate",
}
"""Every variable refind reads that is not a setting, with where it is read. Read with :func:`env_var`."""


def env_var(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The value of ``name`` (one of :data:`ENVIRONMENT`) in ``env`` (default: the process's environment);
    None when unset or empty."""
    if name not in ENVIRONMENT:
        raise KeyError(f"{name} is not listed in refind.config.ENVIRONMENT")
    return (os.environ if env is None else env).get(name) or None


def default_data_dir() -> Path:
    """``$REFIND_DATA``, else the per-user data directory (``$XDG_DATA_HOME/refind`` or ``~/.local/share/refind``)."""
    env = env_var("REFIND_DATA")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "refind"


# ---------------------------------------------------------------------------------------------- the reader

_TRUE = {"1", "true", "yes", "on", "t", "y"}
_FALSE = {"0", "false", "no", "off", "f", "n"}


def env_name(field: str, prefix: str = "") -> str:
    """The variable of a field: ``REFIND_`` + ``prefix`` + its name in capitals (``top_k``: ``REFIND_TOP_K``;
    an LLM option, prefix ``LLM_``: ``REFIND_LLM_MODEL``)."""
    return f"{PREFIX}{prefix}{field.upper()}"


def env_values(
    model: type[BaseModel],
    prefix: str = "",
    *,
    env: Mapping[str, str] | None = None,
    only: Any = None,
) -> dict[str, Any]:
    """The fields of ``model`` (those in ``only`` when given) whose variable (:func:`env_name`) is set and not
    empty, each parsed from text by its field's type: a boolean from ``1/0``, ``true/false``, ``yes/no``,
    ``on/off``; a choice case-blind; a pair as ``a,b``. Bounds are the model's to check. A value that is not of
    its type is an :class:`~refind.InvalidInput` naming the variable."""
    source = os.environ if env is None else env
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if only is not None and name not in only:
            continue
        var = env_name(name, prefix)
        raw = source.get(var)
        if raw is None or not raw.strip():
            continue
        values[name] = _parse(var, raw, field.annotation)
    return values


def _scalar(annotation: Any) -> Any:
    """``annotation`` without ``Annotated[...]`` and ``| None``."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _scalar(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _scalar(args[0])
    return annotation


def _parse(var: str, raw: str, annotation: Any) -> Any:
    kind = _scalar(annotation)
    text = raw.strip()
    if get_origin(kind) is Literal:
        choices = [str(c) for c in get_args(kind)]
        if text.lower() not in choices:
            raise InvalidInput(f"{var}: expected one of {', '.join(choices)}, got {raw!r}")
        return text.lower()
    if get_origin(kind) is tuple:
        parts = text.split(",")
        kinds = get_args(kind)
        if len(parts) != len(kinds):
            raise InvalidInput(f"{var}: expected {len(kinds)} values separated by commas, got {raw!r}")
        return tuple(_parse(var, p, k) for p, k in zip(parts, kinds, strict=True))
    if kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise InvalidInput(f"{var}: expected true or false (1/0, yes/no, on/off), got {raw!r}")
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise InvalidInput(f"{var}: expected an integer, got {raw!r}") from None
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise InvalidInput(f"{var}: expected a number, got {raw!r}") from None
    if kind is str:
        return text
    raise TypeError(f"{var}: a field of type {kind!r} cannot be read from the environment")


# ---------------------------------------------------------------------------------------------- the groups


class _Group(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class StoreSettings(_Group):
    """How the index is kept: the JVM, BM25, the IndexWriter, and where messages get their vectors."""

    jvm_heap: str = Field(default="1g", pattern=r"^[0-9]+[kKmMgG]?$")
    """The JVM's maximum heap (``-Xmx``: ``512m``, ``2g``); one JVM per process, so the first Memory's counts."""
    anserini_jar: str | None = None
    """The Anserini/Lucene fatjar on the JVM's classpath (None: the jar inside the installed pyserini package)."""
    bm25_k1: float = Field(default=1.2, ge=0.0, le=10.0)
    """BM25 term-frequency saturation; applies at query time."""
    bm25_b: float = Field(default=0.75, ge=0.0, le=1.0)
    """BM25 length normalisation; applies at query time."""
    ram_buffer_mb: float = Field(default=64.0, gt=1.0, le=4096.0)
    """The IndexWriter's buffer (MB) before it flushes a segment."""
    embedder: Literal["local", "endpoint", "off"] = "local"
    """Where messages get vectors, for a round by meaning: ``local`` (refind.embed.local), ``endpoint`` (an
    OpenAI-compatible embeddings endpoint: ``REFIND_EMBED_MODEL``, ``REFIND_EMBED_BASE_URL``,
    ``REFIND_EMBED_API_KEY``) or ``off`` (words only)."""


class SearchSettings(_Group):
    """How one round searches and how rounds are fused."""

    top_k: int = Field(default=5, ge=1, le=1000)
    """Hits opened per search round."""
    window: int = Field(default=2, ge=0, le=100)
    """Turns shown on each side of a hit."""
    readset: Literal["message", "session", "off"] = "message"
    """What later rounds skip: ``message``s already returned, whole ``session``s, or ``off``."""
    overfetch: int = Field(default=30, ge=1, le=10_000)
    """Messages fetched per round before fusion picks ``top_k``."""
    fusion_k0: float = Field(default=60.0, gt=0.0)
    """The constant of reciprocal-rank fusion, ``1/(k0 + rank)``."""
    fusion_w_hit: float = Field(default=1.0, ge=0.0)
    """Weight of a hit's own BM25 rank."""
    fusion_w_session: float = Field(default=1.0, ge=0.0)
    """Weight of its session's rank (0: BM25 order only)."""
    fusion_sessions: Literal["hits", "documents"] = "documents"
    """A session's rank from BM25 over its whole text (``documents``) or the sum of its hits' scores (``hits``)."""
    latest_boost: float = Field(default=0.02, ge=0.0, le=1.0)
    """For a question about the current state ("now", "still", "latest"...), a session's fused score is raised
    by up to this share by its recency (0: off)."""
    max_query_chars: int = Field(default=4000, ge=16, le=1_000_000)
    """The longest question (its options included) or keyword text a search accepts; longer is refused."""


class PackSettings(_Group):
    """How evidence is rendered and packed under a budget, and what is offered beside it."""

    context_tokens: int | None = Field(default=POLICY.context_tokens, ge=1, le=100_000)
    """A context turn (window, not a hit) is cut to this many tokens when rendered."""
    window_tokens: int | None = Field(default=150, ge=0, le=1_000_000)
    """Context kept on each side of a hit, in tokens (within ±``window`` turns)."""
    hit_tokens: int | None = Field(default=POLICY.hit_tokens, ge=16, le=1_000_000)
    """A hit longer than this is cut to the passage around the matched words when rendered."""
    segment_turns: int = Field(default=POLICY.segment_turns, ge=0, le=100_000)
    """A long thread (evidence at turn 50 or later) is packed in parts of fewer than this many turns (0: whole
    sessions)."""
    standing: int = Field(default=3, ge=0, le=20)
    """Standing instructions and preferences of the person offered beside the evidence, in at most a tenth of
    a budget (0: off)."""
    standing_facts: int = Field(default=4, ge=0, le=20)
    """The person's lasting facts (health, diet, household, work rules, money, ...) offered beside the evidence
    in the same share: those sharing a word with the question first, then those with consequences (0: off)."""


class AgentSettings(_Group):
    """How the heuristic agent plans: every knob of :class:`refind.HeuristicAgent`."""

    max_rounds: int = Field(default=4, ge=1, le=20)
    """Budgeted searches per question."""
    time_filters: bool = True
    """A time-filtered round when the question has a time cue."""
    time_weight: float = Field(default=POLICY.weight_question, ge=0.0, le=100.0)
    """The time round's weight in the session ranking."""
    shapes: bool = True
    """Read the question's shape first (breadth: more places, each shorter; period: the period's sessions)."""
    breadth_k: int = Field(default=POLICY.breadth_k, ge=1, le=100)
    """A breadth round takes this many times ``top_k`` hits."""
    breadth_window: int = Field(default=POLICY.breadth_window, ge=0, le=100)
    """Turns around each breadth hit."""
    form_words: bool = True
    """Drop a breadth question's form words ("list the order in which...") from its keywords."""
    openings: bool = True
    """A summary question reads the openings of its best sessions."""
    feedback: bool = False
    """A pseudo-relevance-feedback round (rare terms of the best hits)."""
    feedback_terms: int = Field(default=POLICY.feedback_terms, ge=1, le=100)
    """Terms the feedback round adds."""


GROUPS: dict[str, type[_Group]] = {
    "store": StoreSettings,
    "search": SearchSettings,
    "pack": PackSettings,
    "agent": AgentSettings,
}
"""The groups by the name of their view on :class:`Settings`."""


class Settings(StoreSettings, SearchSettings, PackSettings, AgentSettings):
    """Every tunable of a memory: the fields of :class:`StoreSettings`, :class:`SearchSettings`,
    :class:`PackSettings` and :class:`AgentSettings` in one flat, frozen model (``Settings(top_k=3)``,
    ``settings.top_k``), each group also as a view (``settings.search.top_k``).

    Arguments win over the environment, which wins over the defaults: :meth:`from_env` reads each field's
    ``REFIND_<NAME>`` (``top_k``: ``REFIND_TOP_K``); docs/configuration.md has the table. Unknown names and
    values out of bounds are refused.
    """

    @property
    def store(self) -> StoreSettings:
        """The store's settings."""
        return StoreSettings(**self._group(StoreSettings))

    @property
    def search(self) -> SearchSettings:
        """The search's settings."""
        return SearchSettings(**self._group(SearchSettings))

    @property
    def pack(self) -> PackSettings:
        """The packing's settings."""
        return PackSettings(**self._group(PackSettings))

    @property
    def agent(self) -> AgentSettings:
        """The heuristic agent's settings."""
        return AgentSettings(**self._group(AgentSettings))

    def _group(self, group: type[_Group]) -> dict[str, Any]:
        return {name: getattr(self, name) for name in group.model_fields}

    def with_values(self, **values: Any) -> Settings:
        """These settings with ``values`` changed, validated (``None`` values are ignored)."""
        given = {k: v for k, v in values.items() if v is not None}
        return type(self).model_validate({**self.model_dump(), **given}) if given else self

    @staticmethod
    def debug_enabled() -> bool:
        """``$REFIND_DEBUG`` is set to anything but empty or ``0``: the CLI re-raises unexpected errors with
        their traceback and the HTTP service adds an internal error's message to its 500 body (read at each
        call, so it is never part of a store's settings)."""
        return (env_var("REFIND_DEBUG") or "0") != "0"

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Build settings from ``REFIND_*`` variables (:func:`env_values`), then ``overrides`` (``None`` values
        are ignored)."""
        values = env_values(cls)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)

    @classmethod
    def variable(cls, name: str) -> str:
        """The environment variable of setting ``name`` (``top_k``: ``REFIND_TOP_K``)."""
        if name not in cls.model_fields:
            raise InvalidInput(f"{name}: unknown setting; known: {', '.join(sorted(cls.model_fields))}")
        return env_name(name)

    @classmethod
    def parse(cls, name: str, text: str) -> Any:
        """The value of setting ``name`` written as ``text`` (as its variable would hold it), checked against
        the field's bounds: what ``refind --set NAME=TEXT`` passes on. Unknown names are refused."""
        if name not in cls.model_fields:
            raise InvalidInput(f"{name}: unknown setting; known: {', '.join(sorted(cls.model_fields))}")
        value = _parse(name, text, cls.model_fields[name].annotation)
        try:
            cls.model_validate({name: value})
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]["msg"]
            raise InvalidInput(f"{name}: {problem[:1].lower()}{problem[1:]} (got {text!r})") from None
        return value


DEFAULTS = Settings()
"""The defaults, for the layers below :class:`refind.Memory` (their keyword arguments default to these)."""
