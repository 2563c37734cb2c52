"""The benchmark formats: LoCoMo and LongMemEval (see :mod:`refind.loaders` for what each yields)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from refind.errors import InvalidInput
from refind.loaders._base import message, parse_date, read_json
from refind.models import SessionLog

__all__ = ["iter_locomo", "iter_longmemeval"]


def _session_number(key: str) -> int:
    return int(key.split("_")[1])


def iter_locomo(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[SessionLog]:
    """Sessions of a LoCoMo file, conversation by conversation, session by session."""
    data = read_json(path)
    if not isinstance(data, list):
        raise InvalidInput(f"{path}: a LoCoMo file is a JSON list of conversations")
    for ci, sample in enumerate(data):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict):
            raise InvalidInput(f"{path}[{ci}]: missing 'conversation'")
        user = str(sample.get("sample_id") or f"conv-{ci}")
        roles = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
        keys = sorted(
            (k for k in conv if k.startswith("session_") and k.split("_")[1].isdigit() and k.count("_") == 1),
            key=_session_number,
        )
        for key in keys:
            turns = conv[key]
            if not isinstance(turns, list) or not turns:
                continue
            date_text = conv.get(f"{key}_date_time")
            where = f"{path}[{ci}].conversation.{key}"
            messages = []
            for ti, t in enumerate(turns):
                text = str(t.get("text") or "").strip()
                caption = t.get("blip_caption")
                if caption:
                    text = f"{text} [image: {caption}]".strip()
                if not text:
                    if skipped is not None:
                        skipped["empty_content"] += 1
                    continue
                speaker = t.get("speaker")
                messages.append(
                    message(
                        {
                            "role": roles.get(speaker, "user"),
                            "speaker": speaker,
                            "content": text,
                            "id": t.get("dia_id") or f"{key}:{ti}",
                            "turn": ti,
                        },
                        f"{where}[{ti}]",
                    )
                )
            if messages:
                yield SessionLog(
                    user_id=user,
                    session_id=key,
                    messages=messages,
                    date=parse_date(date_text, f"{where}_date_time"),
                    date_text=date_text,
                )


def iter_longmemeval(path: str | Path, skipped: Counter[str] | None = None) -> Iterator[SessionLog]:
    """Haystack sessions of a LongMemEval file; each question's haystack is its own user."""
    data = read_json(path)
    if not isinstance(data, list):
        raise InvalidInput(f"{path}: a LongMemEval file is a JSON list of questions")
    for qi, item in enumerate(data):
        try:
            user = str(item["question_id"])
            sids, dates, sessions = (
                item["haystack_session_ids"],
                item["haystack_dates"],
                item["haystack_sessions"],
            )
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"{path}[{qi}]: missing LongMemEval field {exc}") from exc
        if not len(sids) == len(dates) == len(sessions):
            raise InvalidInput(f"{path}[{qi}]: haystack ids, dates and sessions differ in length")
        for si, (sid, date_text, turns) in enumerate(zip(sids, dates, sessions, strict=True)):
            where = f"{path}[{qi}].haystack_sessions[{si}]"
            messages = []
            for ti, t in enumerate(turns):
                if not str(t.get("content") or "").strip():
                    if skipped is not None:
                        skipped["empty_content"] += 1
                    continue
                messages.append(
                    message({"role": t.get("role"), "content": t["content"], "turn": ti}, f"{where}[{ti}]")
                )
            if messages:
                yield SessionLog(
                    user_id=user,
                    session_id=str(sid),
                    messages=messages,
                    date=parse_date(date_text, f"{path}[{qi}].haystack_dates[{si}]"),
                    date_text=date_text,
                )
            elif skipped is not None:
                skipped["empty_session"] += 1
