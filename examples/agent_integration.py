"""Your own OpenAI tool-calling agent, searching a chat history with refind's tools.

    OPENAI_API_KEY=sk-... python examples/agent_integration.py
    OPENAI_BASE_URL=http://localhost:8000/v1 python examples/agent_integration.py   # any OpenAI-compatible server
    OPENAI_MODEL=gpt-4o python examples/agent_integration.py "Did I beat my target at the Bath Half?"

The model gets refind's three tools (``search``, ``note``, ``finish``: ``refind.tools.openai_tools()``). A
``ToolDispatcher`` runs the calls on a Memory and keeps a read-set for the conversation, so each search
returns only messages the model has not seen. When the model finishes (or the call budget is spent), the
evidence it kept is rendered within a token budget and handed back to it to answer.

Without OPENAI_API_KEY or OPENAI_BASE_URL the script says so and exits with 0.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import refind
from refind.loaders import iter_sessions
from refind.tools import ToolDispatcher, openai_tools

HISTORY = Path(__file__).resolve().parent / "data" / "chat_history.jsonl"  # Maya's chats, Jan-Jun 2024
USER, NOW = "maya", "2024-06-20"
QUESTION = "Where are Tom and I going on our summer holiday?"
MAX_CALLS = 6  # model calls allowed for the search

SEARCH_PROMPT = (
    "You look things up in the user's past chats. Search with a few keywords at a time (names, places, "
    "distinctive nouns); narrow with date_from/date_to when the question names a time. Each search skips "
    "messages you have already seen, so try other words if one finds nothing. Note the ids of the blocks "
    "that help, then call finish. Do not answer yet."
)
ANSWER_PROMPT = "Answer the question from the chat excerpts only, in one or two sentences. Later sessions override earlier plans."


def main(argv: list[str]) -> int:
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        print(
            "agent_integration: set OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server, to run it"
        )
        return 0
    import openai

    question = argv[0] if argv else QUESTION
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    # the client reads OPENAI_BASE_URL itself; a local server needs no key, but the client wants one
    client = openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "unused", timeout=60)

    with refind.Memory.in_memory() as mem:
        mem.import_sessions(iter_sessions(HISTORY, "jsonl"))
        tools = ToolDispatcher(mem, USER, now=NOW, question=question)
        messages: list[Any] = [
            {"role": "system", "content": f"{SEARCH_PROMPT} Today is {NOW}."},
            {"role": "user", "content": question},
        ]
        for _ in range(MAX_CALLS):
            reply = client.chat.completions.create(
                model=model, messages=messages, tools=openai_tools(), temperature=0
            )
            msg = reply.choices[0].message
            if not msg.tool_calls:
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": msg.content,
                    "tool_calls": [call.model_dump() for call in msg.tool_calls],
                }
            )
            for call in msg.tool_calls:
                print(f"  {call.function.name}({call.function.arguments})")
            messages.extend(tools.handle(msg.tool_calls))  # one tool message per call
            if tools.session.finished:
                break

        evidence = tools.result().to_text(max_tokens=2000)  # the kept blocks, or all found if none kept
        print(f"\nEvidence for {question!r}:\n{evidence}\n")
        answer = client.chat.completions.create(
            model=model,
            messages=[
                {"role": "system", "content": ANSWER_PROMPT},
                {"role": "user", "content": f"Chat excerpts:\n{evidence}\n\nQuestion: {question}"},
            ],
            temperature=0,
        )
        print("Answer:", answer.choices[0].message.content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
