"""Import speed on a synthetic ChatGPT-style export: the importer's own parsing rate, and end to end.

    python -m benchmarks import --mb 50 --out out/import-50mb

Writes a deterministic (``--seed``) export of about ``--mb`` MB to ``OUT/conversations.json`` (kept and
reused when it exists with the same size and seed), then measures:

- ``parse``: :func:`refind.loaders.iter_chatgpt` over the whole file without writing anything (JSON decoding,
  thread walking, markers, message validation), ``--runs`` times; messages/s and MB/s of the median run,
  by the wall clock and by the process's CPU time (on a shared machine the second is the steadier);
- ``import``: :func:`refind.loaders.import_path` into a new index at ``OUT/index`` (parsing, the import state,
  and ``Memory.import_sessions``: Lucene writes and commits), once; ``cpu_s`` is this process's CPU time
  (the JVM's threads included: it runs inside the process);
- ``engine_alone``: the engine's bulk rate on the same messages, parsed into memory first and then written
  with one :meth:`refind.Memory.import_sessions` into another new index (``import_over_engine``: the
  end-to-end rate over it; parsing runs beside the engine's writes, so it should be about 1);
- ``reimport_unchanged``: the same import again (the file has not changed: not even read);
- ``reimport_touched``: after changing only the file's time (read and compared with the import state,
  nothing written).

Results go to ``OUT/import.json``. With ``--store opensearch://...`` it compares refind's import with the
cluster's own bulk rate instead (:mod:`benchmarks.import_store`). The export imitates the shape of real ones: a tree per conversation
with a hidden system root, user and assistant messages with the metadata the app writes, a regenerated
answer in one conversation of ten, an image part in one user message of twenty.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import refind
from benchmarks.corpus import message_texts
from refind import loaders as io

START_S = 1_672_531_200  # 2023-01-01
YEAR_S = 365 * 86_400


def _node(
    nid: str, parent: str | None, children: list[str], message: dict[str, Any] | None
) -> dict[str, Any]:
    return {"id": nid, "message": message, "parent": parent, "children": children}


def _message(
    nid: str, role: str, t: float | None, parts: list[Any], parent: str, rng: random.Random
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"request_id": f"8a{rng.getrandbits(56):014x}-LHR", "timestamp_": "absolute"}
    if role == "assistant":
        metadata.update(
            {
                "finish_details": {"type": "stop", "stop_tokens": [200002]},
                "is_complete": True,
                "citations": [],
                "content_references": [],
                "model_slug": "gpt-4o",
                "default_model_slug": "gpt-4o",
                "parent_id": parent,
                "message_type": None,
            }
        )
    elif role == "user":
        metadata.update(
            {"selected_github_repos": [], "serialization_metadata": {"custom_symbol_offsets": []}}
        )
    return {
        "id": nid,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": t,
        "update_time": None,
        "content": {
            "content_type": "multimodal_text" if any(isinstance(p, dict) for p in parts) else "text",
            "parts": parts,
        },
        "status": "finished_successfully",
        "end_turn": True if role == "assistant" else None,
        "weight": 1.0,
        "metadata": metadata,
        "recipient": "all",
        "channel": None,
    }


def conversation(ci: int, rng: random.Random, texts: Any) -> tuple[dict[str, Any], int]:
    """One conversation in the export's shape, and how many messages its current thread holds."""
    cid = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-{ci:04x}-{rng.getrandbits(48):012x}"
    start = START_S + rng.random() * YEAR_S
    root, system = f"{cid}-root", f"{cid}-sys"
    mapping: dict[str, Any] = {
        root: _node(root, None, [system], None),
        system: _node(system, root, [], _message(system, "system", None, [""], root, rng)),
    }
    mapping[system]["message"]["metadata"]["is_visually_hidden_from_conversation"] = True
    parent, t, turns = system, start, rng.randint(2, 20)
    thread = 0
    for i in range(turns * 2):
        nid = f"{cid}-{i}"
        role = "user" if i % 2 == 0 else "assistant"
        n = rng.randint(1, 3) if role == "user" else rng.randint(3, 12)
        parts: list[Any] = [" ".join(next(texts) for _ in range(n))]
        if role == "user" and rng.random() < 0.05:
            pointer = {
                "content_type": "image_asset_pointer",
                "asset_pointer": f"file-service://file-{rng.getrandbits(40):x}",
            }
            parts.insert(0, pointer | {"size_bytes": 181_000, "width": 1024, "height": 768})
        t += rng.uniform(5, 120)
        mapping[nid] = _node(nid, parent, [], _message(nid, role, t, parts, parent, rng))
        mapping[parent]["children"].append(nid)
        if role == "assistant" and i == 1 and rng.random() < 0.1:  # a regenerated first answer
            old = f"{nid}-old"
            mapping[old] = _node(
                old, parent, [], _message(old, role, t - 1, ["An earlier answer."], parent, rng)
            )
            mapping[parent]["children"].insert(0, old)
        parent = nid
        thread += 1
    conv = {
        "title": " ".join(next(texts).split()[:5]),
        "create_time": start,
        "update_time": t,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": parent,
        "plugin_ids": None,
        "conversation_id": cid,
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": "gpt-4o",
        "id": cid,
    }
    return conv, thread


def generate(path: Path, mb: float, seed: int) -> dict[str, int]:
    """Write an export of about ``mb`` MB; returns its conversation and (current-thread) message counts."""
    rng = random.Random(seed)
    texts = message_texts(rng)
    target = int(mb * 1_000_000)
    size = conversations = messages = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        while size < target:
            conv, n = conversation(conversations, rng, texts)
            chunk = ("," if conversations else "") + json.dumps(conv, ensure_ascii=False)
            fh.write(chunk)
            size += len(chunk.encode())
            conversations += 1
            messages += n
        fh.write("]")
    return {"conversations": conversations, "messages": messages}


def run(mb: float, out: Path, seed: int = 7, runs: int = 3) -> dict[str, Any]:
    export = out / "conversations.json"
    meta_path = out / "export.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() and export.exists() else {}
    if meta.get("mb") != mb or meta.get("seed") != seed:
        started = time.perf_counter()
        counts = generate(export, mb, seed)
        meta = {"mb": mb, "seed": seed, **counts, "generate_s": round(time.perf_counter() - started, 2)}
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    size_mb = export.stat().st_size / 1_000_000
    print(
        f"export: {export} ({size_mb:.1f} MB, {meta['conversations']} conversations, {meta['messages']} messages)"
    )

    parse_s: list[float] = []
    parse_cpu: list[float] = []
    sessions = messages = 0
    for i in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        sessions = messages = 0
        for s in io.iter_chatgpt(export):
            sessions += 1
            messages += len(s.messages)
        parse_s.append(time.perf_counter() - started)
        parse_cpu.append(time.process_time() - cpu)
        print(
            f"parse run {i + 1}: {parse_s[-1]:.2f} s, cpu {parse_cpu[-1]:.2f} s ({messages / parse_s[-1]:,.0f} msg/s)"
        )
    median = statistics.median(parse_s)
    median_cpu = statistics.median(parse_cpu)

    # the engine's bulk rate on these same messages: parsed into memory first, then one import_sessions
    logs = list(io.iter_chatgpt(export))
    engine_index = out / "engine-index"
    shutil.rmtree(engine_index, ignore_errors=True)
    with refind.Memory(engine_index) as mem:
        started = time.perf_counter()
        engine = mem.import_sessions(logs)
        engine_s = time.perf_counter() - started
    shutil.rmtree(engine_index, ignore_errors=True)
    del logs
    print(f"engine alone (pre-parsed): {engine_s:.2f} s ({engine.added / engine_s:,.0f} msg/s)")

    index = out / "index"
    shutil.rmtree(index, ignore_errors=True)
    with refind.Memory(index) as mem:
        started, cpu = time.perf_counter(), time.process_time()
        first = io.import_path(mem, export)
        import_s, import_cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"import: {import_s:.2f} s ({first.added / import_s:,.0f} msg/s)")
        started = time.perf_counter()
        unchanged = io.import_path(mem, export)
        unchanged_s = time.perf_counter() - started
        os.utime(export)
        started = time.perf_counter()
        touched = io.import_path(mem, export)
        touched_s = time.perf_counter() - started
        print(f"re-import unchanged: {unchanged_s:.3f} s; touched: {touched_s:.2f} s")
        stored = mem.count()
    result = {
        "export": {
            "path": str(export),
            "mb": round(size_mb, 1),
            **{k: meta[k] for k in ("conversations", "messages", "seed")},
        },
        "parse": {
            "runs_s": [round(x, 3) for x in parse_s],
            "median_s": round(median, 3),
            "sessions": sessions,
            "messages": messages,
            "msgs_per_s": round(messages / median),
            "mb_per_s": round(size_mb / median, 1),
            "cpu_s": [round(x, 3) for x in parse_cpu],
            "msgs_per_cpu_s": round(messages / median_cpu),
        },
        "import": {
            "s": round(import_s, 2),
            "added": first.added,
            "msgs_per_s": round(first.added / import_s),
            "cpu_s": round(import_cpu, 2),
            "stored": stored,
        },
        "engine_alone": {
            "s": round(engine_s, 2),
            "added": engine.added,
            "msgs_per_s": round(engine.added / engine_s),
        },
        "import_over_engine": round((first.added / import_s) / (engine.added / engine_s), 2),
        "reimport_unchanged": {
            "s": round(unchanged_s, 3),
            "added": unchanged.added,
            "files_unchanged": unchanged.files_unchanged,
        },
        "reimport_touched": {
            "s": round(touched_s, 2),
            "added": touched.added,
            "unchanged_sessions": touched.unchanged,
        },
        "python": sys.version.split()[0],
    }
    (out / "import.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks import", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the synthetic export (default 50)")
    parser.add_argument(
        "--out", type=Path, default=Path("out/import"), help="where the export, index and results go"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3, help="parse runs (the median is reported)")
    remote = parser.add_argument_group(
        "a remote store (benchmarks/import_store.py): refind's import against the cluster's helpers.bulk"
    )
    remote.add_argument(
        "--store", help="opensearch://host:port/prefix: compare there instead of the export run"
    )
    remote.add_argument(
        "--messages", type=int, default=20_000, help="messages in the JSONL file (default 20000)"
    )
    remote.add_argument("--users", type=int, default=100, help="users in it (default 100)")
    remote.add_argument("--sessions", type=int, default=10, help="sessions per user (default 10)")
    remote.add_argument("--pairs", type=int, default=3, help="alternating refind/bulk pairs (default 3)")
    args = parser.parse_args(argv)
    if args.store:
        from benchmarks.import_store import run_store

        if not args.store.lower().startswith(("opensearch://", "opensearchs://")):
            parser.error("--store: an opensearch:// or opensearchs:// location")
        if min(args.messages, args.users, args.sessions, args.pairs) < 1:
            parser.error("--messages, --users, --sessions and --pairs must be at least 1")
        run_store(args.store, args.out, args.messages, args.users, args.sessions, args.pairs, args.seed)
        return 0
    run(args.mb, args.out, args.seed, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
