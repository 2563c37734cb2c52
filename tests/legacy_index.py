"""Indexes as older refind versions wrote them (formats 1 and 2), built with Lucene itself, document for
document as ``refind/store/lucene.py`` wrote them then: the upgrade is tested on the real thing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from refind.store._jvm import ensure_jvm, jclass
from refind.store.lucene import ANALYZER_NAME

SEP = "\x1f"


def _analyzer() -> Any:
    hm = jclass("java.util.HashMap")
    colon = hm()
    colon.put("pattern", ":")
    colon.put("replacement", " ")
    b = jclass("org.apache.lucene.analysis.custom.CustomAnalyzer").builder()
    b = b.addCharFilter("patternReplace", colon).withTokenizer("standard", hm())
    for name in ("cjkWidth", "lowercase", "cjkBigram", "englishPossessive", "stop", "porterStem"):
        b = b.addTokenFilter(name, hm())
    return b.build()


def write_legacy_index(
    path: Path,
    fmt: int,
    messages: list[dict[str, Any]],
    markers: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    added: int = 0,
) -> None:
    """A format-``fmt`` (1 or 2) index at ``path``: ``messages`` (user_id, session_id, id, turn, ts, role,
    content, optional speaker), their session documents, and request markers (user, request id, payload).
    Format 2 records ``added`` on messages and markers."""
    ensure_jvm()
    L = lambda n: jclass("org.apache.lucene." + n)  # noqa: E731
    store = L("document.Field$Store")
    yes, no = store.YES, store.NO
    directory = L("store.FSDirectory").open(jclass("java.nio.file.Paths").get(str(path)))
    config = L("index.IndexWriterConfig")(_analyzer())
    writer = L("index.IndexWriter")(directory, config)
    sessions: dict[tuple[str, str], list[str]] = {}
    for m in messages:
        d = L("document.Document")()
        d.add(L("document.StringField")("key", m["user_id"] + SEP + m["id"], no))
        d.add(L("document.StringField")("kind", "m", no))
        d.add(L("document.StringField")("id", m["id"], yes))
        d.add(L("document.BinaryDocValuesField")("id", L("util.BytesRef")(m["id"])))
        d.add(L("document.StringField")("user_id", m["user_id"], yes))
        d.add(L("document.StringField")("session_id", m["session_id"], yes))
        d.add(L("document.SortedDocValuesField")("session_id", L("util.BytesRef")(m["session_id"])))
        d.add(L("document.IntPoint")("turn", m["turn"]))
        d.add(L("document.NumericDocValuesField")("turn", m["turn"]))
        d.add(L("document.LongPoint")("ts", m["ts"]))
        d.add(L("document.NumericDocValuesField")("ts", m["ts"]))
        if fmt >= 2:
            d.add(L("document.LongPoint")("added", added))
            d.add(L("document.NumericDocValuesField")("added", added))
        d.add(L("document.StringField")("role", m["role"], yes))
        d.add(L("document.StringField")("speaker", m.get("speaker") or "", yes))
        d.add(L("document.TextField")("contents", m["content"], no))
        raw = {k: m[k] for k in ("id", "session_id", "turn", "ts", "role", "content")}
        if m.get("speaker"):
            raw["speaker"] = m["speaker"]
        d.add(L("document.StoredField")("raw", json.dumps(raw)))
        d.add(
            L("document.StoredField")(
                "meta", json.dumps([m["id"], m["session_id"], m["turn"], m["ts"], m["role"]])
            )
        )
        writer.addDocument(d)
        sessions.setdefault((m["user_id"], m["session_id"]), []).append(m["content"])
    for (user, sid), contents in sessions.items():
        text = "\n".join(contents)
        d = L("document.Document")()
        d.add(L("document.StringField")("key", SEP + "session" + SEP + user + SEP + sid, no))
        d.add(L("document.StringField")("kind", "s", no))
        d.add(L("document.StringField")("s_user", user, no))
        d.add(L("document.StringField")("s_session", sid, yes))
        d.add(L("document.TextField")("s_contents", text, no))
        writer.addDocument(d)
        t = L("document.Document")()
        t.add(L("document.StringField")("key", SEP + "session-text" + SEP + user + SEP + sid, no))
        t.add(L("document.StringField")("kind", "t", no))
        t.add(L("document.StringField")("s_user", user, no))
        t.add(L("document.StoredField")("s_text", text))
        writer.addDocument(t)
    for user, request_id, payload in markers:
        d = L("document.Document")()
        d.add(L("document.StringField")("key", SEP + "request" + SEP + user + SEP + request_id, no))
        d.add(L("document.StringField")("kind", "r", no))
        d.add(L("document.StringField")("req_user", user, no))
        if fmt >= 2:
            d.add(L("document.LongPoint")("added", added))
            d.add(L("document.NumericDocValuesField")("added", added))
        d.add(L("document.StoredField")("raw", payload))
        writer.addDocument(d)
    writer.commit()
    writer.close()
    directory.close()
    meta = {
        "format": fmt,
        "refind_version": "0.1.0.dev0",
        "analyzer": ANALYZER_NAME,
        "bm25": {"k1": 1.2, "b": 0.75},
    }
    (path / "refind.json").write_text(json.dumps(meta, indent=2))
