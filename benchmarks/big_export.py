"""``python -m benchmarks.big_export OUT.zip``: a ChatGPT export ``.zip`` that is small on disk and large
unpacked (by default about 8-9 MB holding 1.2 GiB of ``conversations.json``), for measuring what importing it
costs in memory (docs/import.md):

    python -m benchmarks.big_export out/big-export.zip
    /usr/bin/time -v refind --data out/big-index import out/big-export.zip

The conversations are valid ChatGPT conversations (a ``mapping`` tree, ``current_node``), each message a
paragraph repeated many times (hence the ratio) with a line of its own in front, so every message is
distinct. Written as a stream: generating it takes little memory.
"""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path

__all__ = ["main", "write_export"]

_PARAGRAPHS = [
    "We walked along the harbour after dinner and talked about the new job, the move in spring and whether "
    "the old bicycle would survive another winter in the shed behind the bakery. ",
    "The recipe needs two cups of flour, a pinch of salt, butter cut into cubes and cold water added slowly "
    "until the dough holds together; rest it in the fridge for an hour before rolling. ",
    "Remember that the quarterly report is due on Friday, that the numbers for the northern region still "
    "need checking, and that Priya asked for the slides a day early this time. ",
    "My sister's cat, a grey tabby called Miso, refuses every food except one brand of salmon pate, which "
    "the corner shop stopped selling last month, so we order it online now. ",
]


def _conversation(ci: int, messages: int, repeat: int) -> dict[str, object]:
    mapping: dict[str, object] = {}
    parent = None
    t0 = 1_700_000_000 + ci * 3600
    for j in range(messages):
        node = f"c{ci}-m{j}"
        text = f"Conversation {ci}, message {j}.\n" + _PARAGRAPHS[(ci + j) % len(_PARAGRAPHS)] * repeat
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [f"c{ci}-m{j + 1}"] if j + 1 < messages else [],
            "message": {
                "id": node,
                "author": {"role": "user" if j % 2 == 0 else "assistant"},
                "create_time": t0 + j * 30,
                "content": {"content_type": "text", "parts": [text]},
            },
        }
        parent = node
    return {
        "title": f"conversation {ci}",
        "create_time": t0,
        "conversation_id": f"conv-{ci:06d}",
        "current_node": parent,
        "mapping": mapping,
    }


def write_export(out: Path, unpacked_bytes: int, messages: int = 20, repeat: int = 240) -> tuple[int, int]:
    """Write the zip; returns (conversations, bytes of conversations.json)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    n = 0
    with (
        zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf,
        zf.open("conversations.json", "w", force_zip64=True) as fh,
    ):
        fh.write(b"[")
        written += 1
        while written < unpacked_bytes:
            chunk = (b"," if n else b"") + json.dumps(_conversation(n, messages, repeat)).encode()
            fh.write(chunk)
            written += len(chunk)
            n += 1
        fh.write(b"]")
        written += 1
    return n, written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.big_export", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="the .zip to write")
    p.add_argument("--gib", type=float, default=1.2, help="size of conversations.json, GiB (default 1.2)")
    p.add_argument("--messages", type=int, default=20, help="messages per conversation (default 20)")
    args = p.parse_args(argv)
    n, size = write_export(args.out, int(args.gib * 1024**3), messages=args.messages)
    print(
        f"wrote {args.out}: {args.out.stat().st_size:,} bytes holding {n:,} conversations, {size:,} bytes of JSON"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
