"""Stored text never writes to the terminal (issue 39): a message may hold escape sequences (clear screen,
a window title, a clipboard write), which every command that prints shows escaped (``\\x1b``, visible);
``--json`` and ``export`` keep the text exact (JSON escapes), and the stored text is unchanged.

The CLI runs in-process through click's CliRunner over a real Lucene index."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import main

T0 = 1_704_067_200_000
CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
TITLE = "\x1b]0;pwned\x07"  # OSC 0: the window title
CLIPBOARD = "\x1b]52;c;ZXZpbCBjb21tYW5k\x07"  # OSC 52: write the clipboard
CSI8 = "\x9b31m"  # the 8-bit CSI (C1)
CONTENT = f"the kayak rental {CLEAR}closes at six{TITLE} {CLIPBOARD} and {CSI8}red\x7f\x00 text"
SPEAKER = "bob\x1b[31m"
RAW = ("\x1b", "\x9b", "\x07", "\x00")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    logger = logging.getLogger("refind")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("terminal") / "index"
    with refind.Memory(path) as mem:
        mem.add(
            "me",
            "s1",
            [
                {"role": "user", "content": CONTENT, "timestamp": T0, "speaker": SPEAKER},
                {"role": "assistant", "content": "noted: kayak at six", "timestamp": T0 + 60_000},
            ],
        )
    return str(path)


def _no_raw_control(output: str) -> None:
    for char in RAW:
        assert char not in output, (char, output)


@pytest.mark.parametrize(
    "args",
    [
        ("show", "s1"),
        ("search", "kayak rental", "--now", "2024-02-01"),
        ("search", "kayak rental", "--now", "2024-02-01", "--trace"),
    ],
)
def test_stored_escape_sequences_are_shown_escaped(data: str, args: tuple[str, ...]) -> None:
    done = run("--data", data, *args)
    assert done.exit_code == 0, done.output
    _no_raw_control(done.output)
    flat = "".join(done.output.split())
    for shown in (r"\x1b[2J", r"\x1b]0;pwned", r"\x1b]52;c;ZXZpbCBjb21tYW5k", r"\x9b31m", r"\x00"):
        assert shown in flat, (shown, done.output)
    assert r"bob\x1b[31m" in flat


@pytest.mark.parametrize(
    "args",
    [("show", "s1", "--json"), ("search", "kayak rental", "--now", "2024-02-01", "--json"), ("export",)],
)
def test_json_and_export_keep_the_text_exact_and_write_no_control_character(
    data: str, args: tuple[str, ...]
) -> None:
    done = run("--data", data, *args)
    assert done.exit_code == 0, done.output
    _no_raw_control(done.output)
    assert "\x7f" not in done.output
    if args[0] == "export":
        records = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
        contents = {r["content"] for r in records}
        speakers = {r.get("speaker") for r in records}
    else:
        body = json.loads(done.output)
        turns = body["turns"] if "turns" in body else [t for e in body["evidence"] for t in e["turns"]]
        contents = {t["content"] for t in turns}
        speakers = {t.get("speaker") for t in turns}
    assert CONTENT in contents and SPEAKER in speakers


def test_the_stored_text_is_unchanged(data: str) -> None:
    run("--data", data, "show", "s1")
    with refind.Memory(data, read_only=True) as mem:
        turns = mem.window("me", "s1", 0, 2)
    assert turns[0].content == CONTENT and turns[0].speaker == SPEAKER


def test_an_error_naming_a_file_shows_its_control_characters_escaped(data: str, tmp_path: Path) -> None:
    named = tmp_path / f"notes{CLEAR}.json"
    named.write_text('{"notes": []}', encoding="utf-8")  # not a format refind reads: a one-line error
    done = run("--data", data, "import", str(named))
    assert done.exit_code == 1, done.output
    _no_raw_control(done.output)
    assert r"notes\x1b[2J\x1b[H.json" in done.output
