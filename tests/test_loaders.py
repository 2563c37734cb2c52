"""The table of import formats (``refind.loaders.LOADERS``): every registered loader keeps the protocol, and
detection, ``--format``, the help and the import all come from the table, so a toy format registered with one
line is detected, read, imported again incrementally and offered by the CLI. The reference engine: no JVM."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import refind
from refind import loaders
from refind.loaders import LOADERS, Loader, Loaders, Sample, Skipped
from refind.models import Message, SessionLog

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"


def _locomo(tmp: Path) -> Path:
    path = tmp / "locomo.json"
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat"},
        {"speaker": "Bo", "text": "Nice!"},
    ]
    conversation = {"speaker_a": "Ann", "speaker_b": "Bo", "session_1": turns,
                    "session_1_date_time": "1:56 pm on 8 May, 2023"}  # fmt: skip
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conversation}]))
    return path


def _longmemeval(tmp: Path) -> Path:
    path = tmp / "haystack.json.gz"
    item = {"question_id": "q1", "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/30 (Tue) 23:40"],
            "haystack_sessions": [[{"role": "user", "content": "my cat is called Tom"}]]}  # fmt: skip
    path.write_bytes(gzip.compress(json.dumps([item]).encode()))
    return path


SAMPLES: dict[str, Any] = {
    "chatgpt": lambda tmp: FIXTURES / "chatgpt" / "conversations.json",
    "claude": lambda tmp: FIXTURES / "claude" / "conversations.json",
    "claude-code": lambda tmp: FIXTURES / "claude-code",
    "jsonl": lambda tmp: EXAMPLES / "chat_history.jsonl",
    "locomo": _locomo,
    "longmemeval": _longmemeval,
}
"""A file of each registered format. A new format adds one here: the contract below runs on it."""


def _overridden(loader: Loader, method: str) -> bool:
    return getattr(type(loader), method) is not getattr(Loader, method)


@pytest.mark.parametrize("loader", list(LOADERS), ids=lambda loader: loader.name)
def test_every_registered_loader_keeps_the_protocol(loader: Loader, tmp_path: Path) -> None:
    assert loader.name and loader.title and loader.about and loader.help, loader
    assert loader.name == loader.name.strip().lower() and " " not in loader.name
    assert _overridden(loader, "sniff"), f"{loader.name}: no sniff, so detection never picks it"
    if loader.lines:  # incremental: read_from, and read through it
        assert _overridden(loader, "read_from") and loader.member is None
    else:
        assert _overridden(loader, "read") and not _overridden(loader, "read_from")
    assert loader.name in SAMPLES, f"add a file of {loader.name!r} to SAMPLES in this test"
    path = SAMPLES[loader.name](tmp_path)
    assert loaders.detect_format(path) == loader.name
    skipped = Skipped()
    sessions = list(loaders.iter_sessions(path, loader.name, skipped, user_id="ann"))
    assert sessions and all(isinstance(s, SessionLog) and s.messages for s in sessions)
    assert all(s.user_id == "ann" for s in sessions) == loader.personal
    if loader.lines:
        for file, _ in loaders.sources(loader, path):
            whole, end = loader.read_from(file, None)
            assert json.loads(json.dumps(end)) == end and end["offset"] == file.stat().st_size
            again, same = loader.read_from(file, end)  # nothing after the end of the file
            assert not again and same["offset"] == end["offset"] and same["line"] == end["line"]


def test_the_table_is_what_dispatch_offers() -> None:
    assert loaders.FORMATS == tuple(LOADERS.names()) == tuple(sorted(loader.name for loader in LOADERS))
    assert set(loaders.FORMAT_NAMES) == set(LOADERS.names())
    from refind.cli import main

    command = main.get_command(click.Context(main), "import")
    assert command is not None
    [option] = [p for p in command.params if p.name == "fmt"]
    assert list(option.type.choices) == LOADERS.names()  # type: ignore[attr-defined]
    help_text = CliRunner().invoke(main, ["import", "--help"], terminal_width=100).output
    for loader in LOADERS:  # the formats block: one row each, its name then its help
        lines = loader.help.split("\n")
        assert f"\n    {loader.name:<11}  {lines[0]}\n" in help_text, loader.name
        assert all(f"\n    {'':<11}  {more}\n" in help_text for more in lines[1:]), loader.name
    personal = " or ".join([", ".join(["ChatGPT", "Claude"]), "Claude Code"])
    assert f"A {personal} history is stored as user 'me'" in " ".join(help_text.split())
    with pytest.raises(
        refind.InvalidInput, match=r"format: 'csv' is not one of chatgpt, claude, claude-code"
    ):
        LOADERS.get("csv")


# ---------------------------------------------------------------------------------------------- a toy format


class _Notes(Loader):
    """A toy document format: ``{"notebook": [{"page": "p1", "lines": ["..."]}]}``, one session a page."""

    name = "notebook"
    title = "Notebook"
    about = "a notebook (JSON with 'notebook')"
    help = "a notebook: JSON with a list of pages"
    personal = True

    def sniff(self, sample: Sample) -> bool:
        return '"notebook"' in sample.text

    def read(
        self,
        path: Path,
        skipped: Counter[str] | None = None,
        *,
        user_id: str = "me",
        member: str | None = None,
    ) -> Iterator[SessionLog]:
        for page in json.loads(path.read_text())["notebook"]:
            messages = [Message(role="user", content=line, id=f"{page['page']}/{i}") for i, line in
                        enumerate(page["lines"])]  # fmt: skip
            yield SessionLog(user_id=user_id, session_id=page["page"], messages=messages, source=self.name)


class _Diary(Loader):
    """A toy line format: one entry a line, ``{"diary": "day", "entry": "..."}``, one session a day."""

    name = "diary"
    title = "Diary"
    about = "a diary (JSON Lines with 'diary')"
    help = "a diary: one entry per line"
    personal = True
    lines = True

    def sniff(self, sample: Sample) -> bool:
        return sample.record is not None and "diary" in sample.record

    def read_from(
        self,
        path: Path,
        cursor: dict[str, Any] | None,
        skipped: Counter[str] | None = None,
        *,
        user_id: str = "me",
    ) -> tuple[list[SessionLog], dict[str, Any]]:
        offset, line = (cursor["offset"], cursor["line"]) if cursor else (0, 1)
        data = path.read_bytes()[offset:]
        whole = data[: data.rfind(b"\n") + 1]
        logs = []
        for n, raw in enumerate(whole.splitlines(), line):
            rec = json.loads(raw)
            message = Message(role="user", content=rec["entry"], id=f"{rec['diary']}/{n}")
            logs.append(SessionLog(user_id=user_id, session_id=rec["diary"], messages=[message]))
        return logs, {"offset": offset + len(whole), "line": line + len(whole.splitlines())}


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> Loaders:
    """The table with the two toy formats registered (one line each), restored afterwards."""
    monkeypatch.setattr(LOADERS, "_loaders", dict(LOADERS._loaders))
    LOADERS.register(_Notes())
    LOADERS.register(_Diary(), before="jsonl")  # asked before refind JSONL
    return LOADERS


def test_a_format_registered_with_one_line_is_detected_read_and_imported_again_incrementally(
    toys: Loaders, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"notebook": [{"page": "p1", "lines": ["buy oat milk", "call the vet"]}]}))
    diary = tmp_path / "days.log"
    diary.write_text('{"diary": "mon", "entry": "ran 5 km"}\n{"diary": "tue", "entry": "rested"}\n')
    assert loaders.detect_format(notes) == "notebook" and loaders.detect_format(diary) == "diary"
    assert [s.session_id for s in loaders.iter_sessions(notes)] == ["p1"]
    from refind.cli._import import _formats_help

    assert "  notebook     a notebook: JSON with a list of pages" in _formats_help()
    state = tmp_path / "state.json"
    with refind.Memory("reference://") as mem:
        first = loaders.import_path(mem, notes, state=state)
        assert (first.format, first.sessions, first.added, first.users) == ("notebook", 1, 2, ["me"])
        assert loaders.import_path(mem, notes, state=state).unchanged == 1  # same file: not read again
        days = loaders.import_path(mem, diary, as_user="ann", state=state)
        assert (days.format, days.sessions, days.added) == ("diary", 2, 2)
        with diary.open("a") as fh:
            fh.write('{"diary": "tue", "entry": "swam"}\n{"diary": "wed"')  # half a line waits
        more = loaders.import_path(mem, diary, as_user="ann", state=state)
        assert (more.sessions, more.added, more.unchanged) == (1, 1, 1)
        assert [t.content for t in mem.session("ann", "tue")] == ["rested", "swam"]
        recorded = json.loads(state.read_text())["files"]
        half = len('{"diary": "wed"')
        assert [f["offset"] for k, f in recorded.items() if k.startswith("diary|")] == [
            diary.stat().st_size - half
        ]


def test_a_loader_without_a_name_or_an_unknown_place_is_refused(toys: Loaders) -> None:
    with pytest.raises(refind.InvalidInput, match="expected a refind.loaders.Loader"):
        toys.register(Loader())
    with pytest.raises(refind.InvalidInput, match="no format named 'csv'"):
        toys.register(_Notes(), before="csv")
    assert [loader.name for loader in toys].index("diary") == [loader.name for loader in toys].index(
        "jsonl"
    ) - 1


# ---------------------------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("record", "name"),
    [
        ({"sessionId": "s", "type": "user"}, "claude-code"),
        ({"type": "summary", "leafUuid": "x"}, "claude-code"),
        ({"user_id": "u", "session_id": "s"}, "jsonl"),
        ({"event": "click"}, None),
    ],
)
def test_line_formats_are_told_by_one_record(record: dict[str, Any], name: str | None) -> None:
    claimed = [loader.name for loader in LOADERS if loader.lines and loader.sniff(Sample(record=record))]
    assert claimed == ([name] if name else [])


def test_document_formats_are_told_by_the_head_in_table_order() -> None:
    head = json.dumps([{"question_id": "q", "haystack_sessions": [[{"content": "conversation"}]]}])  # says it
    claimed = [loader.name for loader in LOADERS if not loader.lines and loader.sniff(Sample(text=head))]
    assert claimed[0] == "longmemeval"  # LoCoMo's weaker sign is asked after it
