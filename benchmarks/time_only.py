"""Time-only and weak-word questions (``python -m benchmarks run --dataset time-only``).

A question set written over the dev splits whose only cue is a period ("what did we talk about last week?",
"what happened in May 2023?") or a period with one weak word ("the party last week"): the questions a person
asks of a chat history that no keyword round can answer on its words alone. The set lives in the repository
(``benchmarks/data/time_only.json``, described in docs/benchmarks/time-only.md); the conversations it asks
about are read from the dev splits, by path.

The file is a JSON object: ``data_root`` (where the dev splits are, relative to the file; the environment
variable ``REFIND_SHARED_DATA`` overrides it) and ``questions``, each with

- ``id``, ``question``, ``kind`` (``period``: the question's only cue is the period; ``weak-words``: a period
  and one or two words that are not enough alone), ``cue`` (the time expression) and ``period`` (its first
  and last day, as the writer read it);
- ``dataset`` (``locomo``, ``longmemeval`` or ``beam``), ``data`` (the split's file or folder under
  ``data_root``) and ``haystack`` (the LoCoMo ``sample_id``, the LongMemEval ``question_id`` whose haystack is
  used, or the BEAM conversation ``<bucket>/<n>``), read by that dataset's own loader;
- ``now`` (ISO 8601) and ``gold_turns``: for a ``period`` question every message of the sessions dated in
  the period, for a ``weak-words`` question the messages in those sessions that mention the word
  (``sessions`` lists those sessions, for the reader).

The haystack is the conversation **as of ``now``**: sessions dated after ``now`` are left out, and messages
stamped after it (``sessions_after_now_dropped``, ``messages_after_now_dropped``), since a history cannot hold
messages from after the question. A question is skipped and counted when its haystack is not in the split
(``unknown_haystack``) or a gold id names no message of that haystack (``unresolved_gold``,
``gold_ids_unresolved``). ``type`` is the kind, ``bucket`` the source dataset.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.beam import load_beam
from benchmarks.datasets import Dataset, Question, Session, load_locomo, load_longmemeval
from refind.errors import InvalidInput
from refind.loaders import read_json
from refind.models import to_epoch_ms

__all__ = ["SOURCES", "load_time_only"]

# the datasets whose conversations the questions are asked of, each read by its own loader
SOURCES: dict[str, Callable[[str | Path], Dataset]] = {
    "locomo": load_locomo,
    "longmemeval": load_longmemeval,
    "beam": load_beam,
}
_FIELDS = ("id", "question", "kind", "dataset", "data", "haystack", "now", "gold_turns")


def _as_of(sessions: list[Session], now: int, notes: Counter[str]) -> list[Session]:
    """``sessions`` as a history seen at ``now``: later sessions and later messages left out."""
    out = []
    for s in sessions:
        if s.date is not None and s.date > now:
            notes["sessions_after_now_dropped"] += 1
            continue
        messages = tuple(m for m in s.messages if m.timestamp is None or m.timestamp <= now)
        notes["messages_after_now_dropped"] += len(s.messages) - len(messages)
        if messages:
            out.append(Session(s.id, s.text, messages, s.date, s.date_text) if messages != s.messages else s)
    return out


def _root(path: Path, raw: dict[str, Any]) -> Path:
    env = os.environ.get("REFIND_SHARED_DATA")
    if env:
        return Path(env)
    return (path.parent / str(raw.get("data_root") or ".")).resolve()


def load_time_only(path: str | Path) -> Dataset:
    """The time-only question set at ``path`` (see the module docstring)."""
    p = Path(path)
    raw = read_json(p)
    if not isinstance(raw, dict) or not isinstance(raw.get("questions"), list):
        raise InvalidInput(f"{p}: a time-only file is a JSON object with a list of questions")
    root = _root(p, raw)
    items: list[dict[str, Any]] = []
    for i, item in enumerate(raw["questions"]):
        if not isinstance(item, dict):
            raise InvalidInput(f"{p}: questions[{i}] must be an object")
        missing = [f for f in _FIELDS if item.get(f) in (None, "", [])]
        if missing:
            raise InvalidInput(f"{p}: questions[{i}] lacks {', '.join(missing)}")
        if item["dataset"] not in SOURCES:
            raise InvalidInput(f"{p}: questions[{i}].dataset must be one of {', '.join(SOURCES)}")
        items.append(item)
    if len({str(q["id"]) for q in items}) != len(items):
        raise InvalidInput(f"{p}: question ids must be unique")

    notes: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    sources: dict[tuple[str, str], dict[str, list[Session]]] = {}
    files: list[Path] = [p]
    for dataset, data in dict.fromkeys((str(q["dataset"]), str(q["data"])) for q in items):
        source = SOURCES[dataset](root / data)
        wanted = {str(q["haystack"]) for q in items if (q["dataset"], q["data"]) == (dataset, data)}
        sources[(dataset, data)] = {k: v for k, v in source.haystacks(wanted) if v}
        files += [f for f in source.files if f not in files]

    haystacks: dict[str, list[Session]] = {}
    questions: list[Question] = []
    for item in items:
        try:
            now = to_epoch_ms(str(item["now"]))
        except ValueError as exc:
            raise InvalidInput(f"{p}: question {item['id']}: now: {exc}") from exc
        sessions = sources[(str(item["dataset"]), str(item["data"]))].get(str(item["haystack"]))
        if sessions is None:
            skipped["unknown_haystack"] += 1
            continue
        key = f"{item['dataset']}:{item['haystack']}@{item['now']}"
        if key not in haystacks:
            haystacks[key] = _as_of(sessions, now, notes)
        session_of = {t: s.id for s in haystacks[key] for t in s.turn_ids}
        gold = [str(t) for t in item["gold_turns"]]
        unresolved = sum(1 for t in gold if t not in session_of)
        if unresolved:
            skipped["unresolved_gold"] += 1
            notes["gold_ids_unresolved"] += unresolved
            continue
        gold = list(dict.fromkeys(gold))
        questions.append(
            Question(
                id=str(item["id"]),
                type=str(item["kind"]),
                text=str(item["question"]).strip(),
                haystack=key,
                gold_sessions=tuple(dict.fromkeys(session_of[t] for t in gold)),
                gold_turns=tuple(gold),
                now=now,
                now_text=str(item["now"]),
                bucket=str(item["dataset"]),
            )
        )
    used = {q.haystack for q in questions}

    def stream() -> Iterator[tuple[str, list[Session]]]:
        for key, sessions in haystacks.items():
            if key in used:
                yield key, sessions

    return Dataset(
        name="time-only",
        path=p,
        questions=questions,
        turn_level=True,
        skipped=skipped,
        notes=notes,
        files=tuple(files),
        _haystacks=stream,
    )
