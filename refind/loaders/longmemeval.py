"""LongMemEval, a benchmark's JSON or .json.gz (see :mod:`refind.loaders` for what it yields)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from refind.errors import InvalidInput
from refind.loaders._base import Loader, Sample, message, parse_date, read_json
from refind.models import SessionLog

__all__ = ["LOADER", "iter_longmemeval"]


class _LongMemEval(Loader):
    name = "longmemeval"
    title = "LongMemEval"
    about = "a LongMemEval file (.json or .json.gz)"
    help = "LongMemEval JSON or .json.gz (one user per question's haystack)"

    def sniff(self, sample: Sample) -> bool:
        return '"haystack_sessions"' in sample.text

    def read(self, path: Path, skipped: Counter[str] | None = None, **options: Any) -> Iterator[SessionLog]:
        return iter_longmemeval(path, skipped)  # the file names its users


LOADER = _LongMemEval()


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
