"""Hostile import input through the real ``refind import`` (real Lucene index): JSON nested 100,000 levels
in every form an import takes is a one-line error; a message too long for one document is cut with a mark
and named while the rest is imported; a large export is streamed (the same sessions as decoding it whole)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import EXIT_ERROR, main
from refind.loaders import _base, iter_chatgpt
from refind.models import MAX_MESSAGE_CHARS

DEEP = "[" * 100_000 + "]" * 100_000


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def _chatgpt(conversations: int, text: str = "a message about kayaks", big: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for c in range(conversations):
        mapping = {}
        for j in range(3):
            content = big if (big is not None and c == 0 and j == 1) else f"{text} {c} {j}"
            mapping[f"n{c}-{j}"] = {
                "id": f"n{c}-{j}",
                "parent": f"n{c}-{j - 1}" if j else None,
                "children": [f"n{c}-{j + 1}"] if j < 2 else [],
                "message": {
                    "id": f"n{c}-{j}",
                    "author": {"role": "user" if j % 2 == 0 else "assistant"},
                    "create_time": 1_700_000_000 + c * 100 + j,
                    "content": {"content_type": "text", "parts": [content]},
                },
            }
        out.append({"conversation_id": f"c{c}", "title": f"t{c}", "create_time": 1_700_000_000 + c * 100,
                    "current_node": f"n{c}-2", "mapping": mapping})  # fmt: skip
    return out


def _deep_inputs(tmp: Path) -> list[tuple[Path, list[str]]]:
    as_file = tmp / "deep.json"
    as_file.write_text(DEEP)
    line = tmp / "deep.jsonl"
    line.write_text('{"user_id": "u", "session_id": "s", "role": "user", "content": ' + DEEP + "}\n")
    archive = tmp / "deep.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", DEEP)
    folder = tmp / "claude-code" / "project"
    folder.mkdir(parents=True)
    (folder / "session.jsonl").write_text(
        '{"type": "user", "sessionId": "s1", "uuid": "a", "message": {"role": "user", "content": "hi"}}\n'
        + DEEP + "\n"
    )  # fmt: skip
    return [
        (as_file, []),
        *((as_file, ["--format", f]) for f in ("chatgpt", "claude", "locomo", "longmemeval")),
        (line, []),
        (line, ["--format", "jsonl"]),
        (archive, []),
        (folder.parent, []),
        (folder.parent, ["--format", "claude-code"]),
    ]


def test_json_nested_100000_levels_is_one_line_in_every_form(tmp_path: Path) -> None:
    for i, (path, extra) in enumerate(_deep_inputs(tmp_path)):
        result = run("--data", str(tmp_path / f"index-{i}"), "import", str(path), *extra)
        text = result.output.strip()
        assert "RecursionError" not in text and "this is a bug" not in text, (path, extra, text)
        assert result.exit_code in (0, EXIT_ERROR), (path, extra, text)
        if result.exit_code == EXIT_ERROR:
            assert text.startswith("Error: ") and "\n" not in text, (path, extra, text)
        else:  # a Claude Code log: the deep line is named, the readable one imported
            assert "nested too deeply" in text, text


@pytest.mark.parametrize("form", ["jsonl", "chatgpt"])
def test_a_message_too_long_for_one_document_is_cut_and_named_and_the_rest_imported(
    tmp_path: Path, form: str
) -> None:
    big = "kayak " * 3_600_000  # 21.6 million characters, over what one engine document may hold
    if form == "jsonl":
        src = tmp_path / "big.jsonl"
        lines = [{"user_id": "u", "session_id": "s", "role": "user", "content": f"line {i} about canoes"}
                 for i in range(3)]  # fmt: skip
        lines.insert(1, {"user_id": "u", "session_id": "s", "role": "user", "content": big})
        src.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
        user, expected = "u", 4
    else:
        src = tmp_path / "conversations.json"
        src.write_text(json.dumps(_chatgpt(3, big=big)))
        user, expected = "me", 9
    index = tmp_path / "index"
    result = run("--data", str(index), "import", str(src), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["added"] == expected and summary["skipped"]["cut_messages"] == 1, summary
    assert any("21,600,000 characters" in p for p in summary["problems"]), summary["problems"]
    with refind.Memory(index, read_only=True) as mem:
        assert mem.count(user) == expected
        turns = mem.session(user, "s" if form == "jsonl" else "c0")
        assert max(len(h.content) for h in turns) <= MAX_MESSAGE_CHARS
        assert any("cut by refind import" in h.content for h in turns)


def test_memory_add_refuses_a_message_too_long_naming_it(tmp_path: Path) -> None:
    with refind.Memory(tmp_path / "index") as mem:
        with pytest.raises(refind.InvalidInput, match=r"messages\[1\]\.content: 1,000,001 characters"):
            mem.add(
                "u", "s", [{"role": "user", "content": "ok"}, {"role": "user", "content": "x" * 1_000_001}]
            )
        assert mem.count() == 0


def test_a_large_export_is_streamed_and_gives_the_same_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _chatgpt(30)
    plain = tmp_path / "conversations.json"
    plain.write_text("  \n" + json.dumps(data))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"conversations": data}))
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", json.dumps(data))
    whole = [s.model_dump() for s in iter_chatgpt(plain)]
    monkeypatch.setattr(_base, "STREAM_BYTES", 1024)  # every file here is "large" now
    for path in (plain, wrapped, archive):
        streamed = [s.model_dump() for s in iter_chatgpt(path)]
        for s in streamed:
            s["file"] = None  # where each came from differs; nothing else may
        assert streamed == [{**s, "file": None} for s in whole], path
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data)[:-5000])
    with pytest.raises(refind.InvalidInput, match="not readable as JSON"):
        list(iter_chatgpt(broken))
