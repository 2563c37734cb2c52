"""Import into a remote store against the cluster's own bulk rate, side by side in one run.

    python -m benchmarks import --store opensearch://127.0.0.1:9200/bench --messages 20000 --users 100 \\
        --pairs 3 --out out/import-os

Writes a deterministic (``--seed``) JSONL file of ``--messages`` chat messages (``--users`` users,
``--sessions`` sessions each, 8-40 words a message, with timestamps) to ``OUT/chat.jsonl``, then alternates,
``--pairs`` times, on the same cluster:

- ``refind``: :func:`refind.loaders.import_path` of the file into a new prefix (``PREFIX-rN``), the code
  ``refind --store URL import`` runs: parsing, the write path's lookups, session documents, request-free
  bulk writes and the commit (``refresh=wait_for``, translog durability ``request``): acknowledged means
  durable and searchable. Timed from the open store (indexes created) to the import's return;
- ``bulk``: opensearch-py's ``helpers.bulk`` of the same messages, as the same documents refind writes
  for them (every field, ``raw`` included), into a new index created with the mapping and settings read
  back from refind's messages index of the same pair (same analyzer, same translog durability), chunks of
  2,000, ``refresh=wait_for`` on every chunk. Timed from the file read to the last chunk's return.

The order within a pair alternates (refind first in odd pairs, bulk first in even ones) so a drift of the
machine's load does not favour one side. Reports each run's messages/s, the ratio refind/bulk per pair and
its median, and the cluster's indexes are deleted after each pair. Results go to ``OUT/import-store.json``.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import refind
from benchmarks.corpus import START_MS, YEAR_MS, message_texts
from refind import loaders as io

__all__ = ["generate_jsonl", "run_store"]


def generate_jsonl(path: Path, messages: int, users: int, sessions: int, seed: int) -> int:
    """Write ``messages`` JSONL chat messages over ``users`` x ``sessions`` sessions (8-40 words each);
    returns how many were written."""
    rng = random.Random(seed)
    texts = message_texts(rng)
    per_session = max(1, messages // (users * sessions))
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        for u in range(users):
            for s in range(sessions):
                t = START_MS + rng.randrange(YEAR_MS)
                n = per_session if (u, s) != (users - 1, sessions - 1) else messages - written
                for i in range(n):
                    words: list[str] = []
                    target = rng.randint(8, 40)
                    while len(words) < target:
                        words.extend(next(texts).split())
                    t += rng.randint(5_000, 120_000)
                    row = {
                        "user_id": f"u{u}",
                        "session_id": f"s{u}-{s}",
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": " ".join(words[:target]),
                        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t / 1000)) + "Z",
                    }
                    fh.write(json.dumps(row) + "\n")
                    written += 1
    return written


def _documents(path: Path, index: str) -> list[dict[str, Any]]:
    """The bulk actions of the baseline: each message as the document refind writes for it."""
    from datetime import datetime

    actions = []
    turns: dict[tuple[str, str], int] = {}
    seq = time.time_ns() // 1000
    added = int(time.time() * 1000)
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            key = (row["user_id"], row["session_id"])
            turn = turns.get(key, 0)
            turns[key] = turn + 1
            ts = int(datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)
            mid = f"{row['session_id']}:{turn}"
            raw = {"id": mid, "session_id": row["session_id"], "turn": turn, "ts": ts, "role": row["role"],
                   "content": row["content"]}  # fmt: skip
            seq += 1
            doc_id = hashlib.sha256(f"{row['user_id']}\x1f{mid}".encode()).hexdigest()[:40]
            actions.append({
                "_index": index, "_id": doc_id, "_routing": row["user_id"],
                "user_id": row["user_id"], "session_id": row["session_id"], "id": mid, "mid": doc_id,
                "role": row["role"], "turn": turn, "ts": ts, "added": added, "seq": seq,
                "contents": row["content"], "raw": json.dumps(raw, ensure_ascii=False),
            })  # fmt: skip
    return actions


def _copy_index(client: Any, source: str, target: str) -> None:
    """Create ``target`` with ``source``'s mapping and index settings (analysis, similarity, durability)."""
    settings = client.indices.get_settings(index=source)[source]["settings"]["index"]
    keep = {k: v for k, v in settings.items() if k in {
        "number_of_shards", "refresh_interval", "translog", "merge", "similarity", "analysis",
        "auto_expand_replicas", "number_of_replicas",
    }}  # fmt: skip
    mapping = client.indices.get_mapping(index=source)[source]["mappings"]
    client.indices.create(index=target, body={"settings": {"index": keep}, "mappings": mapping})
    client.cluster.health(
        index=target, wait_for_status="yellow", params={"timeout": "60s"}, request_timeout=70
    )


def _refind_run(location: str, jsonl: Path, state: Path) -> dict[str, Any]:
    with refind.Memory(location) as mem:
        started, cpu = time.perf_counter(), time.process_time()
        summary = io.import_path(mem, jsonl, state=state)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        stored = mem.count()
    return {
        "s": round(seconds, 3),
        "cpu_s": round(cpu, 2),
        "added": summary.added,
        "stored": stored,
        "msgs_per_s": round(summary.added / seconds),
    }


def _bulk_run(client: Any, jsonl: Path, index: str, source: str) -> dict[str, Any]:
    from opensearchpy import helpers

    _copy_index(client, source, index)
    started, cpu = time.perf_counter(), time.process_time()
    actions = _documents(jsonl, index)
    ok, errors = helpers.bulk(client, actions, chunk_size=2000, refresh="wait_for", max_retries=3)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    stored = int(client.count(index=index)["count"])
    if errors or stored != len(actions):
        raise RuntimeError(f"helpers.bulk wrote {stored} of {len(actions)}: {errors!r:.300}")
    return {
        "s": round(seconds, 3),
        "cpu_s": round(cpu, 2),
        "added": ok,
        "stored": stored,
        "msgs_per_s": round(ok / seconds),
    }


@dataclass(frozen=True)
class _DevLocation:
    hosts: list[str]
    prefix: str


def _dev_location(store: str) -> _DevLocation:
    """Hosts and prefix of a dev cluster's ``opensearch://host:port[,host:port]/prefix`` (no TLS, no
    credentials: the baseline client talks to the cluster itself; benchmarks never reach into the store)."""
    parts = urlsplit(store)
    if parts.scheme != "opensearch" or not parts.netloc or not parts.path.strip("/"):
        raise SystemExit(f"benchmarks import-store: {store!r} is not opensearch://host:port/prefix")
    return _DevLocation([f"http://{h}" for h in parts.netloc.split(",")], parts.path.strip("/"))


def run_store(
    store: str, out: Path, messages: int, users: int, sessions: int, pairs: int, seed: int
) -> dict[str, Any]:
    from opensearchpy import OpenSearch

    loc = _dev_location(store)
    client = OpenSearch(hosts=loc.hosts, timeout=120)
    jsonl = out / "chat.jsonl"
    written = generate_jsonl(jsonl, messages, users, sessions, seed)
    base = store.split("?", 1)[0].rstrip("/")
    print(f"file: {jsonl} ({written} messages, {users} users x {sessions} sessions)")
    rows: list[dict[str, Any]] = []
    for n in range(1, pairs + 1):
        prefix = f"{loc.prefix}-r{n}"
        location = f"{base.rsplit('/', 1)[0]}/{prefix}"
        bulk_index = f"{loc.prefix}-b{n}"
        client.indices.delete(index=f"{prefix}-*,{bulk_index}", ignore_unavailable=True)  # an earlier run's
        (out / f"state-{prefix}.json").unlink(missing_ok=True)
        # refind's indexes, created (untimed) first, so the baseline can copy the messages index
        refind.Memory(location).close()
        order = ("refind", "bulk") if n % 2 else ("bulk", "refind")
        got: dict[str, Any] = {}
        for side in order:
            if side == "refind":
                got["refind"] = _refind_run(location, jsonl, out / f"state-{prefix}.json")
            else:
                got["bulk"] = _bulk_run(client, jsonl, bulk_index, f"{prefix}-messages")
        ratio = got["refind"]["msgs_per_s"] / got["bulk"]["msgs_per_s"]
        rows.append({"pair": n, "order": list(order), **got, "ratio": round(ratio, 3)})
        print(
            f"pair {n} ({' then '.join(order)}): refind {got['refind']['msgs_per_s']:,} msg/s "
            f"({got['refind']['s']:.2f} s, cpu {got['refind']['cpu_s']:.2f} s), helpers.bulk "
            f"{got['bulk']['msgs_per_s']:,} docs/s ({got['bulk']['s']:.2f} s, cpu {got['bulk']['cpu_s']:.2f} s), "
            f"ratio {ratio:.2f}"
        )
        client.indices.delete(index=f"{prefix}-*,{bulk_index}", ignore_unavailable=True)
        (out / f"state-{prefix}.json").unlink(missing_ok=True)
    result = {
        "store": base,  # a dev cluster: no credentials to leave out
        "file": {
            "path": str(jsonl),
            "messages": written,
            "users": users,
            "sessions_per_user": sessions,
            "seed": seed,
        },
        "pairs": rows,
        "median_ratio": round(statistics.median(r["ratio"] for r in rows), 3),
        "python": sys.version.split()[0],
    }
    print(f"median ratio refind / helpers.bulk: {result['median_ratio']:.2f}")
    (out / "import-store.json").write_text(json.dumps(result, indent=2) + "\n")
    client.close()
    return result
