"""Tools for your own agent: the OpenAI function schemas refind's LLM agent uses, and a dispatcher.

Give a model ``tools=openai_tools()`` and run what it calls with a :class:`ToolDispatcher`; the dispatcher
keeps the read-set for the conversation, so each search returns only messages not shown before::

    from refind.tools import ToolDispatcher, openai_tools

    tools = ToolDispatcher(mem, "alice", now="2024-05-08")
    messages = [{"role": "user", "content": question}]
    while True:
        reply = client.chat.completions.create(model=..., messages=messages, tools=openai_tools())
        msg = reply.choices[0].message
        if not msg.tool_calls:
            break
        messages.append(msg)
        messages.extend(tools.handle(msg.tool_calls))
        if tools.session.finished:
            break
    evidence = tools.result().to_text(max_tokens=2000)

Bad arguments never raise: the tool message says what was wrong and what is valid. When the memory has an
embedder, ``tools.tools`` (the dispatcher's list) adds ``search_meaning`` (:data:`MEANING_TOOL`: a round by meaning
over the model's own words); pass ``tools=tools.tools`` to offer it.
"""

from __future__ import annotations

from refind.agent._tools import (
    FINISH_TOOL,
    MEANING_TOOL,
    NOTE_TOOL,
    SEARCH_TOOL,
    TOOL_NAMES,
    TOOLS,
    ToolDispatcher,
    ToolOutcome,
    openai_tools,
)

__all__ = [
    "FINISH_TOOL",
    "MEANING_TOOL",
    "NOTE_TOOL",
    "SEARCH_TOOL",
    "TOOLS",
    "TOOL_NAMES",
    "ToolDispatcher",
    "ToolOutcome",
    "openai_tools",
]
