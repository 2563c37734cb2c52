"""LLMOptions: what :class:`~refind.LLMAgent` can be told, as one pydantic model (issue 35).

Every option's type, bound and default is written here once; ``LLMAgent(...)`` takes the same names as keyword
arguments and validates them through this model, so a bad value is an :class:`~refind.InvalidInput` that names
the option, what it got and what is valid. Options left ``None`` come from their ``REFIND_LLM_<NAME>`` variable
(:meth:`LLMOptions.from_env`, through refind.config's one reader), else their default.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError

from refind.config import env_values
from refind.errors import InvalidInput

__all__ = ["DEFAULT_MODEL", "LLMOptions", "ToolMode"]

DEFAULT_MODEL = "gpt-4o-mini"
HEURISTIC_FIRST_OBSERVATION_TOKENS = 600  # heuristic first: the first request shows the rounds
MODEL_ONLY_OBSERVATION_TOKENS = 1500
DEFAULT_CONVERSATION_TOKENS = 12_000

ToolMode = Literal["native", "text", "json"]
"""How the model is asked for a call (:mod:`refind.agent.toolmodes`)."""

_Int = Annotated[int, Strict()]  # 4, not True, 4.0 or "4"
_Number = Annotated[float, Strict()]  # 4 or 4.5, not True or "4"
_Bool = Annotated[bool, Strict()]  # True, not 1 or "yes"
_Wait = Annotated[float, Strict(), Field(ge=0)]


class LLMOptions(BaseModel):
    """The options of :class:`~refind.LLMAgent` (its keyword arguments but the endpoint's: ``client``,
    ``api_key``, ``base_url``, and ``fallback``). Frozen; unknown names are refused.

    ``None`` means "from the environment, else the default": ``model`` (``REFIND_LLM_MODEL``, else
    ``gpt-4o-mini``), ``heuristic_first`` (``REFIND_LLM_HEURISTIC_FIRST``, else true),
    ``conversation_tokens`` (``REFIND_LLM_CONVERSATION_TOKENS``, else 12,000), ``tool_mode``
    (``REFIND_LLM_TOOL_MODE``, else ``native``) and ``observation_tokens`` (``REFIND_LLM_OBSERVATION_TOKENS``,
    else 600 heuristic first, else 1,500). :meth:`from_env` fills them in; :attr:`refind.LLMAgent.options`
    holds the filled-in options. These are the LLM agent's group of settings, as :class:`refind.Settings`
    holds the store's, the search's, the packing's and the heuristic agent's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model: str | None = None
    """The chat model's name, as the endpoint knows it."""
    max_actions: _Int = Field(4, ge=1)
    """Tool actions per question (each model call costs at least one, so it bounds the calls too)."""
    timeout: _Number = Field(30.0, gt=0)
    """Seconds per request."""
    max_retries: _Int = Field(3, ge=0)
    """Retries of one request (429, 5xx, timeouts, connection errors)."""
    retry_wait: tuple[_Wait, _Wait] = (0.5, 8.0)
    """The backoff's (multiplier, max) seconds."""
    observation_tokens: _Int | None = Field(None, ge=50)
    """The size of each search result shown to the model."""
    max_corrections: _Int = Field(2, ge=0)
    """Malformed calls corrected in a row before falling back."""
    conversation_tokens: _Int | None = Field(None, ge=500)
    """The most tokens one request may send."""
    unseen_tokens: _Int = Field(500, ge=0)
    """Evidence the model was not shown that may still be handed on when it noted nothing."""
    heuristic_first: _Bool | None = None
    """The heuristic agent's rounds first, then the model adds rounds and decides when to stop."""
    model_weight: _Number = Field(0.0, ge=0)
    """How much the model's rounds count in the session ranking when heuristic first."""
    reply_tokens: _Int = Field(400, ge=16)
    """The most tokens of each reply (the request's ``max_tokens``)."""
    tool_mode: ToolMode | None = None
    """``native`` (``tools=``), ``text`` (schemas in the prompt) or ``json`` (as text, output constrained)."""
    facts_in_prompt: _Bool = True
    """The first prompt shows the person's standing facts that the search offers beside the evidence (the
    ``standing_facts`` setting's), and says the model may search for what one implies."""
    meaning_tool: _Bool = True
    """Offer the ``search_meaning`` tool (a round by meaning over the model's words) when the search can
    embed."""

    @classmethod
    def checked(cls, **values: Any) -> LLMOptions:
        """The options for ``values``; a bad value is an :class:`~refind.InvalidInput` naming each problem."""
        try:
            return cls(**values)
        except ValidationError as exc:
            raise InvalidInput(f"LLMAgent options: {_problems(exc)}") from None

    @classmethod
    def from_env(cls, **values: Any) -> LLMOptions:
        """The options for ``values``, those left ``None`` filled from their ``REFIND_LLM_<NAME>`` variable
        (read by :func:`refind.config.env_values`), else their defaults (see the class docstring)."""
        given = cls.checked(**values)
        unset = {name for name, value in given if value is None}
        env = env_values(cls, "LLM_", only=unset)
        filled = {**given.model_dump(), **env}
        heuristic_first = filled["heuristic_first"] is not False
        defaults = {
            "model": DEFAULT_MODEL,
            "heuristic_first": True,
            "conversation_tokens": DEFAULT_CONVERSATION_TOKENS,
            "tool_mode": "native",
            "observation_tokens": (
                HEURISTIC_FIRST_OBSERVATION_TOKENS if heuristic_first else MODEL_ONLY_OBSERVATION_TOKENS
            ),
        }
        return cls.checked(**{k: defaults.get(k) if v is None else v for k, v in filled.items()})


def _problems(exc: ValidationError) -> str:
    """A ValidationError as one line: each option, what it got and what is valid."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "options"
        if err["type"] == "extra_forbidden":
            parts.append(f"{where}: unknown option; known: {', '.join(LLMOptions.model_fields)}")
            continue
        got = err.get("input")
        parts.append(f"{where}: {err['msg'][:1].lower()}{err['msg'][1:]} (got {got!r})")
    return "; ".join(parts)
