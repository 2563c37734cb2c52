"""Tool calls written as text, and date filters checked against the question.

Open models served without a tool-call parser for their format (or with a chat template that does not
declare one) write the call into the reply's text. :func:`text_tool_calls` finds the calls such a reply
holds, in the shapes seen in practice:

* a fenced block: ````` ```json {"name": "search", "arguments": {...}} ``` `````;
* ``<tool_call>{...}</tool_call>`` (Qwen, Hermes), also ``<tools>…</tools>`` and ``<function_call>``;
* a bare JSON object ``{"name": ..., "arguments": ...}`` anywhere in the text, or a list of them;

with the arguments under ``arguments`` or ``parameters`` (an object, or a JSON string), and the
``{"function": {...}}``, ``{"tool_call": {...}}`` and ``{"tool_calls": [...]}`` wrappers. Only objects
whose ``name`` is a string count; whether the name and arguments are valid is the dispatcher's business.

:func:`check_dates` keeps a model's ``date_from`` / ``date_to`` consistent with the question's own time
cue (:func:`refind.query.timeparse.parse_time_range`) and with ``now``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from refind.query.timeparse import TimeRange

__all__ = ["TextCall", "check_dates", "text_tool_calls"]

_TAGGED = re.compile(r"<(tool_call|tools|function_call)>\s*(.*?)\s*(?:</\1>|$)", re.DOTALL)
_FENCED = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", re.DOTALL)
_MAX_TEXT = 20_000  # a reply longer than this is not searched past this point
_MAX_CALLS = 8


@dataclass(frozen=True, slots=True)
class TextCall:
    """One tool call found in a reply's text, in the shape of an openai tool call's dict form."""

    id: str
    name: str
    arguments: str  # JSON text, as native tool calls carry it

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


def _call_of(obj: Any) -> list[tuple[str, Any]]:
    """(name, arguments) pairs held by one parsed JSON value."""
    if isinstance(obj, list):
        return [c for item in obj[:_MAX_CALLS] for c in _call_of(item)]
    if not isinstance(obj, dict):
        return []
    for wrapper in ("tool_call", "function_call"):
        if isinstance(obj.get(wrapper), dict):
            return _call_of(obj[wrapper])
    if isinstance(obj.get("tool_calls"), list):
        return _call_of(obj["tool_calls"])
    if isinstance(obj.get("function"), dict) and "name" not in obj:
        return _call_of(obj["function"])
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return []
    args = obj.get("arguments", obj.get("parameters", {}))
    return [(name.strip(), args)]


def _json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array that parses inside ``text``, in order."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    while len(values) < _MAX_CALLS:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        values.append(value)
        pos = end
    return values


def text_tool_calls(content: str | None) -> list[TextCall]:
    """The tool calls written in a reply's text (tagged, fenced or bare JSON), in order; [] when none."""
    if not content or not content.strip():
        return []
    text = content[:_MAX_TEXT]
    pieces = [m.group(2) for m in _TAGGED.finditer(text)] or [m.group(1) for m in _FENCED.finditer(text)]
    found: list[tuple[str, Any]] = []
    for piece in pieces or [text]:
        for value in _json_values(piece):
            found.extend(_call_of(value))
    if not found and pieces:  # a tag or fence that held no call: the call may be outside it
        for value in _json_values(text):
            found.extend(_call_of(value))
    calls = []
    for i, (name, args) in enumerate(found[:_MAX_CALLS]):
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        calls.append(TextCall(id=f"text-call-{i + 1}", name=name, arguments=arguments))
    return calls


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _ms(day: Any) -> int | None:
    if not isinstance(day, str):
        return None
    try:
        parsed = datetime.strptime(day.strip()[:10], "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(parsed.timestamp() * 1000)


def check_dates(arguments: Any, time_cue: TimeRange | None, now: int | None) -> tuple[Any, str | None]:
    """``arguments`` of a ``search`` call with its date filter made consistent with the question.

    When the question names a period (``time_cue``: its time cue resolved against ``now``, from its
    :class:`~refind.query.QuestionReading`) and the model's range is not
    inside it, the range becomes that period ("corrected"). Without a cue, a bound after ``now`` is
    dropped. Returns the (possibly new) arguments, as JSON text when they came as text, and a note for
    the trace (None when nothing changed). Arguments that do not parse are returned as they are: the
    dispatcher explains what is wrong with them.
    """
    as_text = isinstance(arguments, str)
    try:
        args = json.loads(arguments) if as_text else arguments
    except (TypeError, ValueError):
        return arguments, None
    if not isinstance(args, dict):
        return arguments, None
    lo, hi = args.get("date_from"), args.get("date_to")
    lo_ms, hi_ms = _ms(lo), _ms(hi)
    if lo_ms is None and hi_ms is None:
        return arguments, None
    cue = time_cue if now is not None else None
    fixed = dict(args)
    if cue is not None:
        inside = (lo_ms is None or cue.start <= lo_ms <= cue.end) and (
            hi_ms is None or cue.start <= hi_ms <= cue.end
        )
        if inside:
            return arguments, None
        fixed["date_from"], fixed["date_to"] = _day(cue.start), _day(cue.end)
        note = (
            f"date filter {lo or '…'}..{hi or '…'} is outside the question's '{cue.text}' "
            f"({fixed['date_from']}..{fixed['date_to']}): corrected"
        )
    elif now is not None:
        today = _day(now)
        dropped = [
            name for name, ms in (("date_from", lo_ms), ("date_to", hi_ms)) if ms is not None and ms > now
        ]
        if not dropped:
            return arguments, None
        if "date_from" in dropped:  # the whole range lies after now: search without it
            fixed.pop("date_from", None)
            fixed.pop("date_to", None)
        else:
            fixed.pop("date_to", None)
        note = f"date filter {lo or '…'}..{hi or '…'} reaches past today ({today}): {' and '.join(dropped)} dropped"
    else:
        return arguments, None
    return (json.dumps(fixed, ensure_ascii=False) if as_text else fixed), note
