"""LuceneStore: the embedded default engine, one Lucene document per message (DESIGN §3).

Writes go through one IndexWriter per directory and are committed before ``add`` returns (durable), then
the near-real-time reader is refreshed (visible to the next search). Queries are bags of analyzed terms,
never parsed as Lucene syntax, with FILTER clauses for the user, time range, sessions and roles and a
MUST_NOT clause for excluded ids, all applied before top-k.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from refind import __version__
from refind.config import Settings
from refind.errors import (
    IndexFormatError,
    IndexLocked,
    InvalidInput,
    ReadOnlyError,
    StoreClosed,
    StoreError,
)
from refind.models import Hit
from refind.store._jvm import ensure_jvm, java_exception_class, jclass
from refind.store.base import Filters, Record, SessionUpdate

__all__ = ["ANALYZER_NAME", "FORMAT_VERSION", "LuceneStore"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 2  # 2: messages and request markers record when they were added ("added")
_READABLE_FORMATS = (1, 2)  # format 1 lacks "added": upgraded in place on the first writable open
ANALYZER_NAME = "colonSplit+standard+cjkWidth+lowercase+cjkBigram+englishPossessive+stop+porterStem"
_ANALYZER_FILTERS = ("cjkWidth", "lowercase", "cjkBigram", "englishPossessive", "stop", "porterStem")
_META_FILE = "refind.json"
_PID_FILE = "writer.pid"
_SEP = "\x1f"  # joins user id and message id into the per-index unique key
_MAX_TERMS = 64  # distinct query terms kept: a question has a few dozen; more only cost time
_KIND_MESSAGE = "m"
_KIND_REQUEST = "r"
_KIND_SESSION = "s"
_KIND_SESSION_TEXT = "t"
_SESSION_JOIN = "\n"


class _J:
    """Java classes used by the store, resolved once after the JVM is up."""

    def __init__(self) -> None:
        c = jclass
        self.HashMap = c("java.util.HashMap")

        self.ArrayList = c("java.util.ArrayList")
        self.File = c("java.io.File")
        self.CustomAnalyzer = c("org.apache.lucene.analysis.custom.CustomAnalyzer")
        self.CharTermAttribute = c("org.apache.lucene.analysis.tokenattributes.CharTermAttribute")
        self.FSDirectory = c("org.apache.lucene.store.FSDirectory")
        self.ByteBuffersDirectory = c("org.apache.lucene.store.ByteBuffersDirectory")
        self.IndexWriter = c("org.apache.lucene.index.IndexWriter")
        self.IndexWriterConfig = c("org.apache.lucene.index.IndexWriterConfig")
        self.LogByteSizeMergePolicy = c("org.apache.lucene.index.LogByteSizeMergePolicy")
        self.OpenMode = c("org.apache.lucene.index.IndexWriterConfig$OpenMode")
        self.DirectoryReader = c("org.apache.lucene.index.DirectoryReader")
        self.MultiTerms = c("org.apache.lucene.index.MultiTerms")
        self.Term = c("org.apache.lucene.index.Term")
        self.BM25Similarity = c("org.apache.lucene.search.similarities.BM25Similarity")
        self.SearcherManager = c("org.apache.lucene.search.SearcherManager")
        self.BooleanQueryBuilder = c("org.apache.lucene.search.BooleanQuery$Builder")
        self.Occur = c("org.apache.lucene.search.BooleanClause$Occur")
        self.TermQuery = c("org.apache.lucene.search.TermQuery")
        self.BoostQuery = c("org.apache.lucene.search.BoostQuery")
        self.TermInSetQuery = c("org.apache.lucene.search.TermInSetQuery")
        self.MatchAllDocsQuery = c("org.apache.lucene.search.MatchAllDocsQuery")
        self.ConstantScoreQuery = c("org.apache.lucene.search.ConstantScoreQuery")
        self.Sort = c("org.apache.lucene.search.Sort")
        self.SortField = c("org.apache.lucene.search.SortField")
        self.SortFieldType = c("org.apache.lucene.search.SortField$Type")
        self.Document = c("org.apache.lucene.document.Document")
        self.FieldStore = c("org.apache.lucene.document.Field$Store")
        self.FieldExistsQuery = c("org.apache.lucene.search.FieldExistsQuery")
        self.StringField = c("org.apache.lucene.document.StringField")
        self.TextField = c("org.apache.lucene.document.TextField")
        self.StoredField = c("org.apache.lucene.document.StoredField")
        self.IntPoint = c("org.apache.lucene.document.IntPoint")
        self.LongPoint = c("org.apache.lucene.document.LongPoint")
        self.NumericDocValuesField = c("org.apache.lucene.document.NumericDocValuesField")
        self.SortedDocValuesField = c("org.apache.lucene.document.SortedDocValuesField")
        self.BinaryDocValuesField = c("org.apache.lucene.document.BinaryDocValuesField")
        self.BytesRef = c("org.apache.lucene.util.BytesRef")
        self.LuceneVersion = c("org.apache.lucene.util.Version")


def _build_analyzer(j: _J) -> Any:
    # UAX#29 keeps "title:kayak" as one word (':' is MidLetter); chat text means two words there.
    colon = j.HashMap()
    colon.put("pattern", ":")
    colon.put("replacement", " ")
    builder = (
        j.CustomAnalyzer.builder()
        .addCharFilter("patternReplace", colon)
        .withTokenizer("standard", j.HashMap())
    )
    for name in _ANALYZER_FILTERS:
        builder = builder.addTokenFilter(name, j.HashMap())
    return builder.build()


class _MessageDoc:
    """One reusable Lucene Document with mutable fields: creating Java objects per message caps ingest
    near 4k docs/s, reusing them reaches ~30k/s (DESIGN §3)."""

    def __init__(self, j: _J) -> None:
        yes, no = j.FieldStore.YES, j.FieldStore.NO
        empty = j.BytesRef(b"")
        self.key = j.StringField("key", "", no)
        self.kind = j.StringField("kind", _KIND_MESSAGE, no)
        self.id = j.StringField("id", "", yes)
        self.id_dv = j.BinaryDocValuesField("id", empty)  # lets pyserini's LuceneSearcher open the index
        self.user = j.StringField("user_id", "", yes)
        self.session = j.StringField("session_id", "", yes)
        self.session_dv = j.SortedDocValuesField("session_id", empty)
        self.turn_pt = j.IntPoint("turn", 0)
        self.turn_dv = j.NumericDocValuesField("turn", 0)
        self.ts_pt = j.LongPoint("ts", 0)
        self.ts_dv = j.NumericDocValuesField("ts", 0)
        # when the message was written (epoch ms): retention sweeps by it, never by the message's own time
        self.added_pt = j.LongPoint("added", 0)
        self.added_dv = j.NumericDocValuesField("added", 0)
        self.role = j.StringField("role", "", yes)
        self.speaker = j.StringField("speaker", "", yes)
        self.contents = j.TextField("contents", "", no)
        self.raw = j.StoredField("raw", "", signature="(Ljava/lang/String;Ljava/lang/String;)V")
        # id, session, turn, time and role as one short stored string: a ranking pass reads it with one JNI
        # call per hit and never moves the (long) raw message across
        self.meta = j.StoredField("meta", "", signature="(Ljava/lang/String;Ljava/lang/String;)V")
        self.bytes_ref = j.BytesRef
        self._user: str | None = ""
        self._session: str | None = ""
        self._role: str | None = ""
        self._speaker: str | None = ""
        self._ts: int | None = 0
        self._added: int | None = 0
        self.doc = j.Document()
        for field in (
            self.key, self.kind, self.id, self.id_dv, self.user, self.session, self.session_dv,
            self.turn_pt, self.turn_dv, self.ts_pt, self.ts_dv, self.added_pt, self.added_dv,
            self.role, self.speaker, self.contents, self.raw, self.meta,
        ):  # fmt: skip
            self.doc.add(field)

    def fill(self, r: Record, added: int) -> None:
        # A reused field keeps its value between documents: skip the JNI call when it did not change
        # (user, session, role, speaker and time repeat across the turns of a session).
        self.key.setStringValue(r.user_id + _SEP + r.id)
        self.id.setStringValue(r.id)
        self.id_dv.setBytesValue(self.bytes_ref(r.id.encode()))
        if r.user_id != self._user:
            self._user = r.user_id
            self.user.setStringValue(r.user_id)
        if r.session_id != self._session:
            self._session = r.session_id
            self.session.setStringValue(r.session_id)
            self.session_dv.setBytesValue(self.bytes_ref(r.session_id.encode()))
        self.turn_pt.setIntValue(r.turn)
        self.turn_dv.setLongValue(r.turn)
        if r.timestamp != self._ts:
            self._ts = r.timestamp
            self.ts_pt.setLongValue(r.timestamp)
            self.ts_dv.setLongValue(r.timestamp)
        if added != self._added:
            self._added = added
            self.added_pt.setLongValue(added)
            self.added_dv.setLongValue(added)
        if r.role != self._role:
            self._role = r.role
            self.role.setStringValue(r.role)
        speaker = r.speaker or ""
        if speaker != self._speaker:
            self._speaker = speaker
            self.speaker.setStringValue(speaker)
        self.contents.setStringValue(r.content)
        self.raw.setStringValue(_encode_raw(r))
        self.meta.setStringValue(
            json.dumps([r.id, r.session_id, r.turn, r.timestamp, r.role], ensure_ascii=False)
        )


class _SessionDoc:
    """The reusable document of a whole session: its text under ``s_contents`` (session-level BM25). Its
    fields are distinct from the messages' so message statistics and filters never see it. The text is
    also stored, in a companion document (``kind=t``), so an append does not read every turn back and a
    ranking pass over session documents stays cheap (their stored part is just the session id)."""

    def __init__(self, j: _J) -> None:
        yes, no = j.FieldStore.YES, j.FieldStore.NO
        self.key = j.StringField("key", "", no)
        self.kind = j.StringField("kind", _KIND_SESSION, no)
        self.user = j.StringField("s_user", "", no)
        self.session = j.StringField("s_session", "", yes)
        self.contents = j.TextField("s_contents", "", no)
        self.doc = j.Document()
        for field in (self.key, self.kind, self.user, self.session, self.contents):
            self.doc.add(field)
        self.text_key = j.StringField("key", "", no)
        self.text_kind = j.StringField("kind", _KIND_SESSION_TEXT, no)
        self.text_user = j.StringField("s_user", "", no)
        self.text = j.StoredField("s_text", "", signature="(Ljava/lang/String;Ljava/lang/String;)V")
        self.text_doc = j.Document()
        for field in (self.text_key, self.text_kind, self.text_user, self.text):
            self.text_doc.add(field)


def _encode_raw(r: Record) -> str:
    raw: dict[str, Any] = {
        "id": r.id,
        "session_id": r.session_id,
        "turn": r.turn,
        "ts": r.timestamp,
        "role": r.role,
        "content": r.content,
    }
    if r.speaker:
        raw["speaker"] = r.speaker
    if r.time_text:
        raw["time_text"] = r.time_text
    return json.dumps(raw, ensure_ascii=False)


def _decode_raw(raw: str, score: float = 0.0) -> Hit:
    d = json.loads(raw)
    return Hit.model_construct(
        id=d["id"],
        session_id=d["session_id"],
        turn=d["turn"],
        timestamp=d["ts"],
        role=d["role"],
        speaker=d.get("speaker"),
        content=d["content"],
        score=score,
        time_text=d.get("time_text"),
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def _reading(method: _F) -> _F:
    """Serialize the read path. pyjnius binds the receiver of a Java method on the method object shared by
    every instance of a class (kivy/pyjnius#287, #563), so two threads calling e.g. ``Document.get`` at once
    can call it on each other's objects and crash the JVM. Reads share one lock; the write path uses other
    Java methods (field setters, IndexWriter) and its own lock, so searches still run while a commit does."""

    @functools.wraps(method)
    def wrapper(self: LuceneStore, *args: Any, **kwargs: Any) -> Any:
        with self._read_lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class LuceneStore:
    """Embedded Lucene index of chat messages.

    ``LuceneStore(path)`` opens (or creates) an index directory for writing; ``read_only=True`` opens an
    existing one without the write lock, so readers work while another process writes. ``path=None`` keeps
    the index in memory (notebooks, tests). Use as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        settings: Settings | None = None,
        read_only: bool = False,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.path = Path(path).expanduser().resolve() if path is not None else None
        self.read_only = read_only
        self._closed = False
        self._write_lock = threading.Lock()
        self._read_lock = threading.RLock()
        self._commit_lock = threading.Lock()
        self._writer: Any = None
        self._meta: dict[str, Any] | None = None
        self._legacy_added: int | None = None  # when a format-1 index was upgraded (its messages' "added")
        ensure_jvm(self.settings.jvm_heap, self.settings.anserini_jar)
        self._j = j = _J()
        self._analyzer = _build_analyzer(j)
        self._similarity = j.BM25Similarity(float(self.settings.bm25_k1), float(self.settings.bm25_b))
        self._occur = (j.Occur.MUST, j.Occur.SHOULD, j.Occur.FILTER, j.Occur.MUST_NOT)
        self._directory = self._open_directory()
        try:
            if read_only:
                if not j.DirectoryReader.indexExists(self._directory):
                    raise IndexFormatError(
                        f"no refind index at {self.path}; create one by adding messages (refind import ...)"
                    )
                self._manager = j.SearcherManager(self._directory, None)
            else:
                self._writer = self._open_writer()
                self._manager = j.SearcherManager(self._writer, None)
        except BaseException:
            self._directory.close()
            raise
        self._doc = _MessageDoc(j) if not read_only else None
        self._session_doc = _SessionDoc(j) if not read_only else None

    # ------------------------------------------------------------------ opening

    def _open_directory(self) -> Any:
        j = self._j
        if self.path is None:
            if self.read_only:
                raise InvalidInput("an in-memory store cannot be read-only")
            return j.ByteBuffersDirectory()
        if self.path.exists() and not self.path.is_dir():
            raise IndexFormatError(f"{self.path} is a file, not an index directory; choose another path")
        if not self.read_only:
            self.path.mkdir(parents=True, exist_ok=True)
        elif not self.path.is_dir():
            raise IndexFormatError(f"no refind index at {self.path}")
        self._check_meta()
        return j.FSDirectory.open(j.File(str(self.path)).toPath())

    def _check_meta(self) -> None:
        assert self.path is not None
        meta_path = self.path / _META_FILE
        has_segments = any(p.name.startswith("segments_") for p in self.path.iterdir())
        if not meta_path.exists():
            if has_segments:
                raise IndexFormatError(
                    f"{self.path} holds a Lucene index that refind did not write (no {_META_FILE}); "
                    "use an empty directory"
                )
            return
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise IndexFormatError(
                f"{meta_path} is unreadable ({exc}); restore it or use a new directory"
            ) from exc
        if meta.get("format") not in _READABLE_FORMATS or meta.get("analyzer") != ANALYZER_NAME:
            raise IndexFormatError(
                f"index at {self.path} has format {meta.get('format')} / analyzer {meta.get('analyzer')!r}; "
                f"this refind reads formats {', '.join(map(str, _READABLE_FORMATS))} / {ANALYZER_NAME!r}: "
                "use the refind version that wrote it, or re-import the data into a new directory"
            )
        self._meta = meta
        legacy = meta.get("legacy_added_ms")
        self._legacy_added = int(legacy) if isinstance(legacy, int) else None

    def _write_meta(self) -> None:
        """Record the index's format (new index), or upgrade a format-1 index in place: its messages did
        not record when they were added, so they count as added now (retention keeps them that long)."""
        if self.path is None:
            return
        meta_path = self.path / _META_FILE
        if self._meta is not None and self._meta.get("format") == FORMAT_VERSION:
            return
        if self._meta is None:
            meta: dict[str, Any] = {
                "format": FORMAT_VERSION,
                "refind_version": __version__,
                "lucene_version": str(self._j.LuceneVersion.LATEST.toString()),
                "analyzer": ANALYZER_NAME,
                "bm25": {"k1": self.settings.bm25_k1, "b": self.settings.bm25_b},
            }
        else:
            self._legacy_added = int(time.time() * 1000)
            meta = {
                **self._meta,
                "format": FORMAT_VERSION,
                "upgraded_from": self._meta.get("format"),
                "legacy_added_ms": self._legacy_added,
                "refind_version": __version__,
            }
            log.info(
                "upgraded the index at %s from format %s to %s",
                self.path,
                meta["upgraded_from"],
                FORMAT_VERSION,
            )
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(tmp, meta_path)
        self._meta = meta

    def _open_writer(self) -> Any:
        j = self._j
        config = j.IndexWriterConfig(self._analyzer)
        config.setOpenMode(j.OpenMode.CREATE_OR_APPEND)
        config.setSimilarity(self._similarity)
        config.setRAMBufferSizeMB(float(self.settings.ram_buffer_mb))
        # merges of adjacent segments only: documents keep their insertion order, so hits with equal scores
        # come back in the same order however many commits built the index (bulk import or one per add)
        config.setMergePolicy(j.LogByteSizeMergePolicy())
        try:
            writer = j.IndexWriter(self._directory, config)
        except Exception as exc:
            if "LockObtainFailedException" in java_exception_class(exc) or "LockObtainFailed" in str(exc):
                raise IndexLocked(self._locked_message()) from exc
            raise StoreError(f"cannot open the index at {self.path} for writing: {exc}") from exc
        if self.path is not None:
            (self.path / _PID_FILE).write_text(str(os.getpid()))
            if not j.DirectoryReader.indexExists(self._directory):
                writer.commit()  # an empty but valid index, so read-only openers find one
            self._write_meta()
        return writer

    def _locked_message(self) -> str:
        assert self.path is not None
        pid = ""
        with suppress(OSError):
            pid = (self.path / _PID_FILE).read_text().strip()
        holder = f"process {pid}" if pid else "another process"
        if pid == str(os.getpid()):
            holder = "another store in this process"
        return (
            f"index at {self.path} is locked by {holder} (lock file {self.path / 'write.lock'}); "
            "close that writer (e.g. stop `refind serve`), open this one read-only, or use a copy"
        )

    # ------------------------------------------------------------------ writing

    def add(
        self,
        records: Sequence[Record],
        *,
        marker: tuple[str, str, str] | None = None,
        sessions: dict[tuple[str, str], SessionUpdate] | None = None,
    ) -> int:
        """Write ``records`` (same id replaces), plus an optional request marker (user, request_id, payload),
        commit, and refresh the reader. Returns the number of records written."""
        return self.add_batches([records], marker=marker, sessions=sessions)

    def add_batches(
        self,
        batches: Iterable[Sequence[Record]],
        *,
        marker: tuple[str, str, str] | None = None,
        sessions: dict[tuple[str, str], SessionUpdate] | None = None,
        session_texts: dict[tuple[str, str], str] | None = None,
        commit: bool = True,
    ) -> int:
        """Like :meth:`add` over many batches with one commit at the end (bulk import).

        ``session_texts`` gives a session's whole text when the caller knows it (group commit: the stored
        text may lag behind writes not yet committed). ``commit=False`` leaves the commit (and the reader
        refresh that makes the writes visible) to a later :meth:`commit`.

        Each touched session's document (its whole text, for session-level BM25) is written in the same
        commit. ``sessions`` says, per (user, session), whether the session is ``new`` (its text is the new
        messages), grows by ``append`` (the stored text plus the new messages; the default), or must be
        ``rebuild``-t from its messages (after a replacement).
        """
        self._check_writable()
        j, doc = self._j, self._doc
        assert doc is not None
        sessions = sessions or {}
        written = 0
        texts: dict[tuple[str, str], list[str]] = {}
        with self._write_lock, self._java_errors("write"):
            writer = self._writer
            added = int(time.time() * 1000)  # one ingestion time for the whole write (and its marker)
            for records in batches:
                for r in records:
                    doc.fill(r, added)
                    if r.replace:
                        writer.updateDocument(j.Term("key", r.user_id + _SEP + r.id), doc.doc)
                    else:
                        writer.addDocument(doc.doc)
                    texts.setdefault((r.user_id, r.session_id), []).append(r.content)
                    written += 1
            if any(sessions.get(k, "append") == "rebuild" for k in texts):
                self._manager.maybeRefreshBlocking()  # the session's replaced turns, before reading them back
            for (user_id, session_id), parts in texts.items():
                how = sessions.get((user_id, session_id), "append")
                known = (session_texts or {}).get((user_id, session_id))
                if known is not None:
                    text = known
                elif how == "rebuild":
                    text = _SESSION_JOIN.join(h.content for h in self.session(user_id, session_id))
                elif how == "append":
                    previous = self._session_text(user_id, session_id)
                    text = _SESSION_JOIN.join(([previous] if previous else []) + parts)
                else:
                    text = _SESSION_JOIN.join(parts)
                self._write_session_doc(user_id, session_id, text, update=how != "new")
            if marker is not None:
                self._write_marker(*marker, added=added)
            if commit:
                with self._commit_lock:
                    writer.commit()
                    self._manager.maybeRefreshBlocking()
        return written

    def commit(self) -> None:
        """Make every write so far durable (fsync) and visible to searches. Writes may go on meanwhile: the
        commit takes its own lock, not the write lock (Lucene's IndexWriter allows both at once, and they
        use different Java methods, so pyjnius's shared method objects do not race)."""
        self._check_writable()
        with self._commit_lock, self._java_errors("commit"):
            self._writer.commit()
            self._manager.maybeRefreshBlocking()

    def session_text(self, user_id: str, session_id: str) -> str | None:
        """The stored whole text of a session (as of the last commit), or None."""
        return self._session_text(user_id, session_id)

    def _write_session_doc(self, user_id: str, session_id: str, text: str, *, update: bool) -> None:
        sd = self._session_doc
        assert sd is not None
        key = _SEP + "session" + _SEP + user_id + _SEP + session_id
        text_key = _SEP + "session-text" + _SEP + user_id + _SEP + session_id
        sd.key.setStringValue(key)
        sd.user.setStringValue(user_id)
        sd.session.setStringValue(session_id)
        sd.contents.setStringValue(text)
        sd.text_key.setStringValue(text_key)
        sd.text_user.setStringValue(user_id)
        sd.text.setStringValue(text)
        if update:
            self._writer.updateDocument(self._j.Term("key", key), sd.doc)
            self._writer.updateDocument(self._j.Term("key", text_key), sd.text_doc)
        else:
            self._writer.addDocument(sd.doc)
            self._writer.addDocument(sd.text_doc)

    @_reading
    def _session_text(self, user_id: str, session_id: str) -> str | None:
        j = self._j
        key = _SEP + "session-text" + _SEP + user_id + _SEP + session_id
        with self._searcher() as searcher:
            top = searcher.search(j.TermQuery(j.Term("key", key)), 1)
            if top.totalHits.value == 0:
                return None
            return str(searcher.storedFields().document(top.scoreDocs[0].doc).get("s_text"))

    @_reading
    def query_sessions(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over whole sessions (each session's text as one document): (session id, score), best first.
        ``session_ids`` restricts the ranking to those sessions."""
        terms = self.analyze(text)
        if not terms or k <= 0:
            return []
        j = self._j
        must, should, filt, _ = self._occur
        bag = j.BooleanQueryBuilder()
        for term, n in Counter(terms).most_common(_MAX_TERMS):
            tq = j.TermQuery(j.Term("s_contents", term))
            bag.add(j.BoostQuery(tq, float(n)) if n > 1 else tq, should)
        b = j.BooleanQueryBuilder()
        b.add(bag.build(), must)
        b.add(j.TermQuery(j.Term("s_user", user_id)), filt)
        if session_ids is not None:
            b.add(self._term_set("s_session", session_ids), filt)
        with self._java_errors("search"), self._searcher() as searcher:
            top = searcher.search(b.build(), k)
            stored = searcher.storedFields()
            return [(str(stored.document(sd.doc).get("s_session")), float(sd.score)) for sd in top.scoreDocs]

    def _write_marker(self, user_id: str, request_id: str, payload: str, *, added: int) -> None:
        j = self._j
        key = _SEP + "request" + _SEP + user_id + _SEP + request_id
        d = j.Document()
        d.add(j.StringField("key", key, j.FieldStore.NO))
        d.add(j.StringField("kind", _KIND_REQUEST, j.FieldStore.NO))
        d.add(j.StringField("req_user", user_id, j.FieldStore.NO))
        d.add(j.LongPoint("added", added))
        d.add(j.NumericDocValuesField("added", added))
        d.add(j.StoredField("raw", payload, signature="(Ljava/lang/String;Ljava/lang/String;)V"))
        self._writer.updateDocument(j.Term("key", key), d)

    @_reading
    def request_marker(self, user_id: str, request_id: str) -> str | None:
        """The payload stored with a request id by an earlier :meth:`add`, or None."""
        key = _SEP + "request" + _SEP + user_id + _SEP + request_id
        with self._searcher() as searcher:
            top = searcher.search(self._j.TermQuery(self._j.Term("key", key)), 1)
            if top.totalHits.value == 0:
                return None
            return str(searcher.storedFields().document(top.scoreDocs[0].doc).get("raw"))

    def delete_user(self, user_id: str) -> int:
        """Delete every message (and request marker) of ``user_id``; returns the number of messages removed."""
        self._check_writable()
        j = self._j
        with self._write_lock, self._read_lock, self._java_errors("delete"):
            before = self.count(user_id)
            b = j.BooleanQueryBuilder()
            b.add(j.TermQuery(j.Term("user_id", user_id)), self._occur[1])
            b.add(j.TermQuery(j.Term("req_user", user_id)), self._occur[1])
            b.add(j.TermQuery(j.Term("s_user", user_id)), self._occur[1])
            self._writer.deleteDocuments(b.build())
            with self._commit_lock:
                self._writer.commit()
                self._manager.maybeRefreshBlocking()
        return before

    def delete_added_before(self, cutoff_ms: int) -> int:
        """Retention: delete every message and request marker (of every user) that was *added* before
        ``cutoff_ms``, in one commit, so a request's marker never outlives its messages (a retried request
        then writes again). Messages written by a format-1 index, which did not record when, count as added
        when that index was upgraded. The session documents of the sessions touched are rebuilt from what
        remains (or removed). Returns the number of messages removed."""
        self._check_writable()
        j = self._j
        must, should, filt, must_not = self._occur
        with self._write_lock, self._read_lock, self._java_errors("delete"):
            old = j.BooleanQueryBuilder()
            old.add(j.LongPoint.newRangeQuery("added", -(2**63), int(cutoff_ms) - 1), should)
            if self._legacy_added is not None and self._legacy_added < cutoff_ms:
                legacy = j.BooleanQueryBuilder()
                legacy.add(j.MatchAllDocsQuery(), must)
                legacy.add(j.FieldExistsQuery("added"), must_not)
                old.add(legacy.build(), should)
            expired = old.build()
            messages = j.BooleanQueryBuilder()
            messages.add(j.TermQuery(j.Term("kind", _KIND_MESSAGE)), filt)
            messages.add(expired, filt)
            markers = j.BooleanQueryBuilder()
            markers.add(j.TermQuery(j.Term("kind", _KIND_REQUEST)), filt)
            markers.add(expired, filt)
            message_query, marker_query = messages.build(), markers.build()
            affected: set[tuple[str, str]] = set()
            with self._searcher() as searcher:
                n = int(searcher.count(message_query))
                n_markers = int(searcher.count(marker_query))
                if n == 0 and n_markers == 0:
                    return 0
                stored = searcher.storedFields()
                for sd in searcher.search(message_query, max(n, 1)).scoreDocs:
                    d = stored.document(sd.doc)
                    affected.add((str(d.get("user_id")), str(d.get("session_id"))))
            self._writer.deleteDocuments(message_query)
            self._writer.deleteDocuments(marker_query)
            self._manager.maybeRefreshBlocking()
            for user_id, session_id in sorted(affected):
                remaining = self.session(user_id, session_id)
                if remaining:
                    text = _SESSION_JOIN.join(h.content for h in remaining)
                    self._write_session_doc(user_id, session_id, text, update=True)
                else:
                    for kind in ("session", "session-text"):
                        key = _SEP + kind + _SEP + user_id + _SEP + session_id
                        self._writer.deleteDocuments(j.TermQuery(j.Term("key", key)))
            with self._commit_lock:
                self._writer.commit()
                self._manager.maybeRefreshBlocking()
        return n

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        if self.read_only:
            raise ReadOnlyError(
                f"index at {self.path} was opened read-only; open it without read_only to write"
            )

    # ------------------------------------------------------------------ reading

    @contextmanager
    def _searcher(self) -> Iterator[Any]:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        if self.read_only:
            self._manager.maybeRefresh()
        searcher = self._manager.acquire()
        try:
            searcher.setSimilarity(self._similarity)
            yield searcher
        finally:
            self._manager.release(searcher)

    @contextmanager
    def _java_errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            if java_exception_class(exc) or type(exc).__name__ == "JavaException":
                raise StoreError(f"Lucene failed during {what} on {self.path or 'memory'}: {exc}") from exc
            raise

    @_reading
    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text`` (tokenized, lowercased, CJK bigrams, stopwords dropped, stemmed)."""
        if not text or not text.strip():
            return []
        ts = self._analyzer.tokenStream("contents", text)
        term = ts.addAttribute(self._j.CharTermAttribute)
        out: list[str] = []
        try:
            ts.reset()
            while ts.incrementToken():
                out.append(term.toString())
            ts.end()
        finally:
            ts.close()
        return out

    def _filter_query(self, user_id: str, filters: Filters | None, text_query: Any | None) -> Any:
        j = self._j
        must, _should, filt, must_not = self._occur
        b = j.BooleanQueryBuilder()
        if text_query is not None:
            b.add(text_query, must)
        b.add(j.TermQuery(j.Term("user_id", user_id)), filt)
        if filters is not None:
            if filters.time_from is not None or filters.time_to is not None:
                lo = filters.time_from if filters.time_from is not None else -(2**63)
                hi = filters.time_to if filters.time_to is not None else 2**63 - 1
                b.add(j.LongPoint.newRangeQuery("ts", int(lo), int(hi)), filt)
            if filters.session_ids is not None:
                b.add(self._term_set("session_id", filters.session_ids), filt)
            if filters.roles is not None:
                b.add(self._term_set("role", [r.lower() for r in filters.roles]), filt)
            if filters.exclude_ids:
                b.add(self._term_set("key", [user_id + _SEP + i for i in filters.exclude_ids]), must_not)
            if filters.exclude_sessions:
                b.add(self._term_set("session_id", filters.exclude_sessions), must_not)
        return b.build()

    def _term_set(self, field: str, values: Iterable[str]) -> Any:
        j = self._j
        terms = j.ArrayList()
        for v in values:
            terms.add(j.BytesRef(v.encode()))
        return j.TermInSetQuery(field, terms)

    def _text_query(self, user_id: str, text: str, filters: Filters | None) -> Any | None:
        terms = self.analyze(text)
        if not terms:
            return None
        j = self._j
        should = self._occur[1]
        bag = j.BooleanQueryBuilder()
        for term, n in Counter(terms).most_common(_MAX_TERMS):
            tq = j.TermQuery(j.Term("contents", term))
            bag.add(j.BoostQuery(tq, float(n)) if n > 1 else tq, should)
        return self._filter_query(user_id, filters, bag.build())

    @_reading
    def query(self, user_id: str, text: str, k: int = 10, filters: Filters | None = None) -> list[Hit]:
        """BM25 over ``contents`` for ``user_id``: the analyzed terms of ``text`` as a bag of words (never
        Lucene syntax), filters applied before top-``k``. Empty or stopword-only text returns []."""
        if k <= 0:
            return []
        query = self._text_query(user_id, text, filters)
        if query is None:
            return []
        return self._run(query, k, scored=True)

    def _run(self, query: Any, k: int, *, scored: bool, sort: Any = None) -> list[Hit]:
        with self._java_errors("search"), self._searcher() as searcher:
            top = searcher.search(query, k) if sort is None else searcher.search(query, k, sort)
            stored = searcher.storedFields()
            return [
                _decode_raw(str(stored.document(sd.doc).get("raw")), float(sd.score) if scored else 0.0)
                for sd in top.scoreDocs
            ]

    @_reading
    def query_meta(self, user_id: str, text: str, k: int = 10, filters: Filters | None = None) -> list[Hit]:
        """Like :meth:`query` but the hits carry no content (``content == ""``): only id, session, turn,
        time, role and score, read from small stored fields. For ranking passes that never show the hits
        (a search round over-fetches 50 and shows a few, through :meth:`windows`)."""
        if k <= 0:
            return []
        query = self._text_query(user_id, text, filters)
        if query is None:
            return []
        with self._java_errors("search"), self._searcher() as searcher:
            top = searcher.search(query, k)
            stored = searcher.storedFields()
            out = []
            for sd in top.scoreDocs:
                msg_id, session_id, turn, ts, role = json.loads(str(stored.document(sd.doc).get("meta")))
                out.append(
                    Hit.model_construct(
                        id=msg_id,
                        session_id=session_id,
                        turn=turn,
                        timestamp=ts,
                        role=role,
                        speaker=None,
                        content="",
                        score=float(sd.score),
                        time_text=None,
                    )
                )
            return out

    @_reading
    def window(self, user_id: str, session_id: str, turn_from: int, turn_to: int) -> list[Hit]:
        """Turns ``turn_from..turn_to`` (inclusive) of one session, in turn order."""
        if turn_to < turn_from:
            return []
        j = self._j
        b = j.BooleanQueryBuilder()
        filt = self._occur[2]
        b.add(j.TermQuery(j.Term("user_id", user_id)), filt)
        b.add(j.TermQuery(j.Term("session_id", session_id)), filt)
        b.add(j.IntPoint.newRangeQuery("turn", int(max(turn_from, 0)), int(min(turn_to, 2**31 - 1))), filt)
        n = min(turn_to - turn_from + 1, 100_000)
        hits = self._run(b.build(), n, scored=False)
        return sorted(hits, key=lambda h: h.turn)

    def session(self, user_id: str, session_id: str) -> list[Hit]:
        """Every turn of one session, in order."""
        return self.window(user_id, session_id, 0, 2**31 - 1)

    @_reading
    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]:
        """Several windows ``(session_id, turn_from, turn_to)`` in one query; each list in turn order."""
        if not spans:
            return []
        j = self._j
        must, should, filt, _ = self._occur
        any_span = j.BooleanQueryBuilder()
        total = 0
        for session_id, lo, hi in spans:
            lo, hi = max(int(lo), 0), min(int(hi), 2**31 - 1)
            if hi < lo:
                continue
            total += hi - lo + 1
            one = j.BooleanQueryBuilder()
            one.add(j.TermQuery(j.Term("session_id", session_id)), filt)
            one.add(j.IntPoint.newRangeQuery("turn", lo, hi), filt)
            any_span.add(one.build(), should)
        if total == 0:
            return [[] for _ in spans]
        b = j.BooleanQueryBuilder()
        b.add(j.TermQuery(j.Term("user_id", user_id)), filt)
        b.add(j.ConstantScoreQuery(any_span.build()), must)
        hits = self._run(b.build(), min(total, 100_000), scored=False)
        out: list[list[Hit]] = []
        for session_id, lo, hi in spans:
            out.append(
                sorted(
                    (h for h in hits if h.session_id == session_id and lo <= h.turn <= hi),
                    key=lambda h: h.turn,
                )
            )
        return out

    @_reading
    def browse(
        self, user_id: str, k: int, filters: Filters | None = None, newest_first: bool = True
    ) -> list[Hit]:
        """Messages of ``user_id`` matching only ``filters`` (no keywords), newest (or oldest) first."""
        if k <= 0:
            return []
        j = self._j
        query = self._filter_query(user_id, filters, j.MatchAllDocsQuery())
        sort = j.Sort(j.SortField("ts", j.SortFieldType.LONG, newest_first))
        return self._run(query, k, scored=False, sort=sort)

    @_reading
    def term_counts(self, user_id: str, text: str) -> dict[str, int]:
        """For each analyzed term of ``text``: how many of ``user_id``'s messages contain it."""
        j = self._j
        filt = self._occur[2]
        counts: dict[str, int] = {}
        with self._java_errors("count"), self._searcher() as searcher:
            for term in dict.fromkeys(self.analyze(text)):
                b = j.BooleanQueryBuilder()
                b.add(j.TermQuery(j.Term("user_id", user_id)), filt)
                b.add(j.TermQuery(j.Term("contents", term)), filt)
                counts[term] = int(searcher.count(b.build()))
        return counts

    @_reading
    def get(self, user_id: str, ids: Iterable[str]) -> list[Hit]:
        """Messages of ``user_id`` by message id (missing ids are simply absent)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        q = self._filter_query(user_id, None, self._term_set("key", [user_id + _SEP + i for i in ids]))
        return self._run(q, len(ids), scored=False)

    @_reading
    def session_tail(self, user_id: str, session_id: str) -> Hit | None:
        """The last turn stored for a session, or None when the session is new."""
        j = self._j
        b = j.BooleanQueryBuilder()
        filt = self._occur[2]
        b.add(j.TermQuery(j.Term("user_id", user_id)), filt)
        b.add(j.TermQuery(j.Term("session_id", session_id)), filt)
        sort = j.Sort(j.SortField("turn", j.SortFieldType.INT, True))
        hits = self._run(b.build(), 1, scored=False, sort=sort)
        return hits[0] if hits else None

    @_reading
    def count(self, user_id: str | None = None) -> int:
        """Messages stored for ``user_id``, or in the whole index."""
        j = self._j
        q = (
            j.TermQuery(j.Term("user_id", user_id))
            if user_id is not None
            else j.TermQuery(j.Term("kind", _KIND_MESSAGE))
        )
        with self._java_errors("count"), self._searcher() as searcher:
            return int(searcher.count(q))

    @_reading
    def users(self) -> list[str]:
        """User ids with at least one message, sorted."""
        j = self._j
        out: list[str] = []
        with self._java_errors("stats"), self._searcher() as searcher:
            reader = searcher.getIndexReader()
            terms = j.MultiTerms.getTerms(reader, "user_id")
            if terms is None:
                return []
            it = terms.iterator()
            while True:
                ref = it.next()
                if ref is None:
                    break
                user = str(ref.utf8ToString())
                if searcher.count(j.TermQuery(j.Term("user_id", user))) > 0:
                    out.append(user)
        return out

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Commit nothing new, release the write lock and the directory. Safe to call twice."""
        if self._closed:
            return
        with self._write_lock, self._read_lock:  # always write -> read, as add does
            self._closed = True
            try:
                self._manager.close()
                if self._writer is not None:
                    self._writer.close()
                    if self.path is not None:
                        with suppress(OSError):
                            (self.path / _PID_FILE).unlink()
            finally:
                self._directory.close()

    def __enter__(self) -> LuceneStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"LuceneStore({str(self.path) if self.path else ':memory:'!r}, {mode})"
