"""How :class:`~refind.agent.llm.LLMAgent` asks a model for a tool call: three tool modes.

* ``native`` (the default): the tool schemas go in the request's ``tools=``, the call comes back in the
  response's ``tool_calls`` (OpenAI, vLLM with a tool-call parser, Ollama, LM Studio for tool-capable
  models). A call the model writes as text instead is parsed too (:mod:`refind.agent.textcalls`).
* ``text``: no ``tools=``; the schemas are written into the system prompt and the reply's text is parsed.
  The server's own tool-call parser is out of the way (llama.cpp answers HTTP 500 when the model's output
  does not match the format it expects).
* ``json``: as ``text``, and the request asks for constrained output,
  ``response_format={"type": "json_schema", ...}`` with :func:`call_schema`: one JSON object
  ``{"name": <a tool>, "arguments": {...}}`` whose arguments match that tool's parameters (dates as
  ``YYYY-MM-DD``). A server that turns the schema into a grammar (llama.cpp, vLLM, LM Studio, OpenAI's
  structured outputs) can then only produce a valid call: every reply is usable by construction.

In ``text`` and ``json`` mode the conversation carries no ``tool_calls`` or ``tool`` messages (servers
without tools= need not render them): the model's call is its assistant message, as JSON text, and each
tool result is a user message that names the tool (:func:`result_message`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, get_args

from refind.agent._options import ToolMode
from refind.agent._tools import TOOLS

__all__ = ["TOOL_MODES", "call_schema", "response_format", "result_message", "tools_prompt"]

TOOL_MODES: tuple[str, ...] = get_args(ToolMode)

_DAY_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
# bounds of a constrained call: the longest one is a few hundred tokens, within LLMAgent's reply_tokens
MAX_KEYWORDS_CHARS = 200
MAX_NOTE_IDS = 10
MAX_ID_CHARS = 64


def call_schema(tools: Sequence[dict[str, Any]] = TOOLS) -> dict[str, Any]:
    """The JSON schema of one call of ``tools`` (default :data:`~refind.agent._tools.TOOLS`; the LLM agent
    passes its dispatcher's): ``{"name": <tool>, "arguments": <that tool's parameters>}``, one
    ``anyOf`` branch per tool, no other keys; descriptions dropped (they are in the prompt), dates
    constrained to ``YYYY-MM-DD``, keywords (and a meaning search's text) and ids non-empty and bounded (at
    most 200 characters of keywords, 10 ids of 64): every call fits in a reply, so a model cannot be cut off mid-call by
    ``max_tokens`` (one that lists ids without end would be); no optional ``reason``."""
    branches = []
    for tool in tools:
        fn = tool["function"]
        params = copy.deepcopy(fn["parameters"])
        # an optional free-text reason costs generated tokens and changes nothing: not in the schema
        params["properties"].pop("reason", None)
        for key, prop in params.get("properties", {}).items():
            prop.pop("description", None)
            if key.startswith("date_"):
                prop["pattern"] = _DAY_PATTERN
            if key in ("keywords", "text"):
                prop.update(minLength=1, maxLength=MAX_KEYWORDS_CHARS)
            if prop.get("type") == "array":
                # bounded, so a call always fits in a reply: a small model may list ids until max_tokens
                prop.update(minItems=1, maxItems=MAX_NOTE_IDS)
                prop["items"] = {**prop.get("items", {}), "maxLength": MAX_ID_CHARS}
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"const": fn["name"]}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": branches}


def response_format(tools: Sequence[dict[str, Any]] = TOOLS) -> dict[str, Any]:
    """The request's ``response_format`` in ``json`` mode (OpenAI's structured-output shape)."""
    return {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": call_schema(tools)}}


def tools_prompt(tools: Sequence[dict[str, Any]] = TOOLS) -> str:
    """The tools section of the system prompt in ``text`` and ``json`` mode."""
    lines = [json.dumps(t["function"], ensure_ascii=False) for t in tools]
    return (
        "\n\n# Tools\n\nYou call tools. The tools, as JSON schemas:\n"
        + "\n".join(lines)
        + '\n\nTo call a tool, reply with only one JSON object {"name": <tool name>, "arguments": '
        "<arguments object>} and nothing else. The tool's result comes back in the next message."
    )


def result_message(name: str, content: str) -> dict[str, Any]:
    """A tool's result as the user message of ``text`` and ``json`` mode."""
    return {"role": "user", "content": f"Result of {name or 'the call'}:\n{content}"}
