"""Hostile import input through the real ``refind import`` (real Lucene index): JSON nested 100,000 levels
in every form an import takes is a one-line error; a message too long for one document is cut with a mark
and named while the rest is imported; a large export is streamed (the same sessions as decoding it whole)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import EXIT_ERROR, main
from refind.loaders import _base, iter_chatgpt
from refind.models import MAX_MESSAGE_CHARS

ROOT = Path(__file__).resolve().parents[1]
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


@pytest.mark.parametrize("form", ["jsonl", "chatgpt", "chatgpt-zip", "longmemeval-gz"])
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
    elif form == "chatgpt":
        src = tmp_path / "conversations.json"
        src.write_text(json.dumps(_chatgpt(3, big=big)))
        user, expected = "me", 9
    elif form == "chatgpt-zip":  # unpacked: read through the cut (refind.loaders._cut)
        src = tmp_path / "export.zip"
        with zipfile.ZipFile(src, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("conversations.json", json.dumps(_chatgpt(3, big=big)))
        user, expected = "me", 9
    else:
        src = tmp_path / "haystack.json.gz"
        turns = [{"role": "user", "content": f"turn {i} about canoes"} for i in range(3)]
        turns.insert(1, {"role": "assistant", "content": big})
        item = {"question_id": "q1", "haystack_session_ids": ["s"], "haystack_dates": ["2023/05/30 (Tue) 23:40"],
                "haystack_sessions": [turns]}  # fmt: skip
        src.write_bytes(gzip.compress(json.dumps([item]).encode(), compresslevel=1))
        user, expected = "q1", 4
    index = tmp_path / "index"
    result = run("--data", str(index), "import", str(src), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["added"] == expected and summary["skipped"]["cut_messages"] == 1, summary
    assert any("21,600,000 characters" in p for p in summary["problems"]), summary["problems"]
    with refind.Memory(index, read_only=True) as mem:
        assert mem.count(user) == expected
        turns = mem.session(user, "c0" if form.startswith("chatgpt") else "s")
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


def _zip_with_a_huge_message(path: Path, repeat: int) -> int:
    """A ChatGPT export .zip whose one conversation holds a message of ``repeat`` MiB of "kayak " (written a
    piece at a time, never held); how many characters that message has."""
    piece = b"kayak " * 174_762
    head, tail = json.dumps(_chatgpt(1, big="BIG")).encode().split(b'"BIG"')
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf,
        zf.open("conversations.json", "w", force_zip64=True) as fh,
    ):
        fh.write(head + b'"')
        for _ in range(repeat):
            fh.write(piece)
        fh.write(b'"' + tail)
    return len(piece) * repeat


@pytest.mark.slow
def test_a_zip_holding_a_2_gib_message_is_imported_in_bounded_memory(tmp_path: Path) -> None:
    """Issue 39: a 2 MB zip holding one 2 GiB message peaked at 4.37 GB resident, the string read whole
    before it was cut. Every string is now cut while it is read: the importer process (Python and its JVM)
    stays under 500 MB, and the message is stored cut with its mark and true length, as before."""
    archive = tmp_path / "bigstring.zip"
    chars = _zip_with_a_huge_message(archive, 2048)  # 2,147,475,456 characters, a 9 MB zip
    index = tmp_path / "index"
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(done.stdout)\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode, done.stderr)\n"
    )
    command = [sys.executable, "-m", "refind.cli", "--data", str(index), "import", str(archive), "--json"]
    env = {**os.environ, "REFIND_DAEMON": "0"}
    done = subprocess.run([sys.executable, "-c", measure, *command], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out, _, peak_line = done.stdout.rpartition("PEAK ")
    peak_kib, code = (int(v) for v in peak_line.split()[:2])
    assert code == 0, done.stdout
    assert peak_kib * 1024 < 500 * 1024 * 1024, f"peak {peak_kib / 1024:.0f} MiB"
    summary = json.loads(out)
    assert summary["added"] == 3 and summary["skipped"] == {"cut_messages": 1}, summary
    assert f"has {chars:,} characters" in summary["problems"][0]
    with refind.Memory(index, read_only=True) as mem:
        [cut] = [t for t in mem.session("me", "c0") if len(t.content) > 1000]
    mark = f"\n[… cut by refind import: {chars - MAX_MESSAGE_CHARS:,} more characters]"
    assert len(cut.content) == MAX_MESSAGE_CHARS and cut.content.endswith(mark)
    assert cut.content.startswith("kayak kayak ")


@pytest.mark.parametrize("piece", [1, 2, 5, 7, 64])
def test_cutting_strings_while_reading_keeps_json_and_counts_exactly(piece: int) -> None:
    """refind.loaders._cut on every kind of string byte (escapes, surrogate pairs, UTF-8 of 1 to 4 bytes,
    a quote or backslash escaped), split across pieces anywhere: short strings pass unchanged; a long one
    keeps a prefix of at least the limit, and the prefix plus the characters its mark counts is the whole."""
    import io
    import random

    from refind.loaders._cut import CutStrings, uncut

    rng = random.Random(piece)
    alphabet = ["a", "é", "€", "😀", "\n", '"', "\\", "\x1b", "\ud83d", " ", "\u2028"]
    for _ in range(300):
        values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(4)]
        raw = json.dumps({"v": values, "n": [1, {"x": "ok"}]}, ensure_ascii=rng.random() < 0.5)
        limit = rng.randint(1, 20)
        stream = CutStrings(io.BytesIO(raw.encode("utf-8", "surrogatepass")), limit=limit, piece=piece)
        got = json.loads(stream.read().decode("utf-8", "surrogatepass"))
        assert got["n"] == [1, {"x": "ok"}]
        for value, kept in zip(values, got["v"], strict=True):
            text, dropped = uncut(kept)
            assert value.startswith(text) and len(text) + dropped == len(value), (value, kept, limit)
            assert dropped == 0 or len(text) >= limit
    forged = json.dumps(["\x00refind-cut-0000000000000000:5\x00"])  # a mark in the input is text
    assert uncut(json.loads(CutStrings(io.BytesIO(forged.encode())).read())[0])[1] == 0
