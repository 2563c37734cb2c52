"""LoCoMo, a benchmark's JSON (see :mod:`refind.loaders` for what it yields)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from refind.errors import InvalidInput
from refind.loaders._base import Loader, Sample, message, parse_date, read_json
from refind.models import SessionLog

__all__ = ["LOADER", "iter_locomo"]


class _LoCoMo(Loader):
    name = "locomo"
    title = "LoCoMo"
    about = "a LoCoMo file"
    help = "LoCoMo JSON (one user per conversation)"

    def sniff(self, sample: Sample) -> bool:
        return '"conversation"' in sample.text and sample.text.lstrip().startswith("[")

    def read(self, path: Path, skipped: Counter[str] | None = None, **options: Any) -> Iterator[SessionLog]:
        return iter_locomo(path, skipped)  # the file names its users


LOADER = _LoCoMo()


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
