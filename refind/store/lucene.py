"""LuceneStore: the embedded default engine, a thin Python face on refind's Java engine.

The design: docs/design.md § "Engines".

The index itself (document layout, analyzer, queries, writes) lives in ``io.refind.lucene.Engine``
(``refind/store/java/src``): each method here is one call across the bridge with JSON in and out, so a
search round costs a few calls whatever the number of hits; what crosses, record by record, is
:mod:`refind.store._wire`. This module keeps what is Python's: the index directory's lifecycle (format file,
lock messages, upgrades of older formats) and the translation of Java errors into :class:`refind.StoreError`.

Any number of stores and threads may use it at once: the JVM gate (:mod:`refind.store._jvm`) is
thread-safe and releases the GIL during Java calls, so reads run in parallel (docs/store.md).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import refind.store._wire as wire
from refind.config import Settings
from refind.errors import IndexFormatError, IndexLocked, InvalidInput, ReadOnlyError, StoreClosed, StoreError
from refind.models import Hit
from refind.standing import RULE_VERSION
from refind.store._jvm import ensure_jvm, java_bytes, java_exception_class, java_floats, jclass
from refind.store._standing import classify_stored, read_standing_now, with_marks
from refind.store.base import (
    ANALYZER_NAME,
    Expired,
    Filters,
    PendingVector,
    RoundFound,
    RoundSpec,
    SessionCounts,
    SessionInfo,
    SessionState,
    StandingHit,
    StandingMark,
    VectorCounts,
    VectorRecord,
    WriteBatch,
    model_mismatch,
    standing_of,
)

__all__ = ["ANALYZER_NAME", "FORMAT_VERSION", "LuceneStore"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 4
"""The format of a new index. 4: the analyzed fields without positions (no query reads them); 3: hit fields
as doc values (a ranking pass reads no stored message); 2: messages and request markers record when they
were added; 1: the first. Formats 1-2 are upgraded in place to 3 on a writable open; a format-3 index is
read and written as it is (Lucene keeps a field's positions for the life of an index: importing the data
into a new directory makes a format-4 one)."""
_UPGRADABLE = (1, 2)
_POSITIONED = (1, 2, 3)  # formats whose analyzed fields hold positions
_META_FILE = "refind.json"
_PID_FILE = "writer.pid"
_TOMBSTONES_FILE = "tombstones.json"
"""The deleted sessions kept out of later imports (the engine protocol's tombstones), beside the index:
``{"format": 1, "users": {user: {session: deleted_ms}}}``, replaced atomically (written, fsynced, renamed)."""
_MARKS_FILE = "marks.json"
"""A person's marks on what stands (pinned, hidden: the engine protocol's marks), beside the index as the
tombstones are, so no write of messages touches them: ``{"format": 1, "users": {user: {message id: {"kind":
kind or null, "at": marked_ms}}}}`` (``kind`` null: hidden), replaced atomically."""


def _mark_kind(value: object) -> Any:
    """A stored mark's kind (None: hidden); anything else is a ValueError."""
    if value is None or value in ("instruction", "preference", "fact"):
        return value
    raise ValueError(f"not a kind of standing: {value!r}")


def _replace_durably(file: Path, payload: object, failure: str) -> None:
    """Replace ``file`` with ``payload`` as JSON atomically and durably (written, fsynced, renamed, the
    directory fsynced): a crash leaves the old one or the new one. ``failure``: the start of the error."""
    tmp = file.with_suffix(".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, file)
        fd = os.open(file.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        with suppress(OSError):
            tmp.unlink()
        raise StoreError(f"{failure} {file}: {exc.strerror or exc}") from exc


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("refind")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "unknown"


class LuceneStore:
    """Embedded Lucene index of chat messages (the :class:`~refind.store.base.Engine` protocol).

    ``LuceneStore(path)`` opens (or creates) an index directory for writing; ``read_only=True`` opens an
    existing one without the write lock, so readers work while another process writes (each read sees the
    latest commit). ``path=None`` keeps the index in memory. Use as a context manager or call :meth:`close`.
    """

    shared_writers = False  # one IndexWriter per directory: a second writer gets IndexLocked
    commit_slices = False  # writes are indexed as they come; an import commits every 200,000 messages

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        settings: Settings | None = None,
        read_only: bool = False,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.path = Path(path).expanduser().resolve() if path is not None else None
        self.location = str(self.path) if self.path is not None else ":memory:"
        self.read_only = read_only
        self._closed = False
        self._meta: dict[str, Any] | None = None
        self._legacy_added: int | None = None  # when an index without add times was upgraded
        self._tombstone_lock = threading.Lock()
        self._memory_tombstones: dict[str, dict[str, int]] = {}  # an in-memory index's
        self._marks_lock = threading.Lock()
        self._memory_marks: dict[str, dict[str, StandingMark]] = {}  # an in-memory index's
        self._marks_seen: tuple[tuple[int, ...], dict[str, dict[str, StandingMark]]] | None = None
        self._memory_model: tuple[str, int] | None = None  # an in-memory index's vector model
        if self.path is None and read_only:
            raise InvalidInput("an in-memory store cannot be read-only")
        ensure_jvm(self.settings.jvm_heap, self.settings.anserini_jar)
        self._check_directory()
        upgrade_from = self._meta.get("format") if self._meta is not None else None
        if read_only and upgrade_from in _UPGRADABLE:
            raise IndexFormatError(
                f"index at {self.path} was written by an older refind (format {upgrade_from}); open it once "
                "for writing (refind import or refind serve on it, or refind.Memory(path)) to upgrade it in "
                "place, then read it"
            )
        self._engine = self._open_engine()
        if not read_only:
            # the vector queue is written once a model is recorded; before, it is implicit (every message
            # awaits its vector), so an index without a model pays nothing for vectors
            self._engine.setQueueing(self.vector_model() is not None)
        if not read_only and self.path is not None:
            (self.path / _PID_FILE).write_text(str(os.getpid()))
            if isinstance(upgrade_from, int) and upgrade_from in _UPGRADABLE:
                self._upgrade(upgrade_from)
            if self._meta is not None and self._meta.get("standing") != RULE_VERSION:
                self._classify_stored()
            self._write_meta()

    # ------------------------------------------------------------------ opening

    def _check_directory(self) -> None:
        if self.path is None:
            return
        if self.path.exists() and not self.path.is_dir():
            raise IndexFormatError(f"{self.path} is a file, not an index directory; choose another path")
        if self.read_only and not self.path.is_dir():
            raise IndexFormatError(
                f"no refind index at {self.path}; create one by adding messages (refind import ...)"
            )
        if not self.read_only:
            self.path.mkdir(parents=True, exist_ok=True)
        meta_path = self.path / _META_FILE
        has_segments = any(p.name.startswith("segments_") for p in self.path.iterdir())
        if not meta_path.exists():
            if has_segments:
                raise IndexFormatError(
                    f"{self.path} holds a Lucene index that refind did not write (no {_META_FILE}); "
                    "use an empty directory"
                )
            if self.read_only:
                raise IndexFormatError(
                    f"no refind index at {self.path}; create one by adding messages (refind import ...)"
                )
            return
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise IndexFormatError(
                f"{meta_path} is unreadable ({exc}); restore it or use a new directory"
            ) from exc
        readable = (*_POSITIONED, FORMAT_VERSION)
        if meta.get("format") not in readable or meta.get("analyzer") != ANALYZER_NAME:
            raise IndexFormatError(
                f"index at {self.path} has format {meta.get('format')} / analyzer {meta.get('analyzer')!r}; "
                f"this refind reads formats {', '.join(map(str, readable))} / {ANALYZER_NAME!r}: use the "
                "refind version that wrote it, or re-import the data into a new directory"
            )
        self._meta = meta
        legacy = meta.get("legacy_added_ms")
        self._legacy_added = int(legacy) if isinstance(legacy, int) else None

    def _open_engine(self) -> Any:
        engine = jclass("io.refind.lucene.Engine")
        s = self.settings
        where = str(self.path) if self.path is not None else None
        try:
            if self.read_only and not engine.exists(where):
                raise IndexFormatError(
                    f"no refind index at {self.path}; create one by adding messages (refind import ...)"
                )
            return engine.open(
                where, self.read_only, float(s.bm25_k1), float(s.bm25_b), float(s.ram_buffer_mb),
                self._format() in _POSITIONED,
            )  # fmt: skip
        except StoreError:
            raise
        except Exception as exc:
            cls = java_exception_class(exc)
            if "LockObtainFailed" in cls:
                raise IndexLocked(self._locked_message()) from None
            raise StoreError(f"cannot open the index at {self.path or 'memory'}: {exc}") from exc

    def _format(self) -> int:
        """The index's format once opened: what ``refind.json`` records (formats 1-2 become 3 by their
        upgrade), or :data:`FORMAT_VERSION` for a new index."""
        fmt = self._meta.get("format") if self._meta is not None else None
        if fmt in _UPGRADABLE:
            return 3
        return fmt if isinstance(fmt, int) else FORMAT_VERSION

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

    def _upgrade(self, old: int) -> None:
        """Rewrite an older format's documents in this format (their stored messages hold every field);
        those without an add time count as added now, or when a format-1 index was upgraded to 2."""
        started = time.perf_counter()
        when = self._legacy_added if self._legacy_added is not None else int(time.time() * 1000)
        with self._java("upgrade"):
            n = int(self._engine.upgrade(when))
            self._engine.commit()
        self._legacy_added = when
        assert self._meta is not None
        self._meta = {**self._meta, "upgraded_from": old, "legacy_added_ms": when}
        log.info(
            "upgraded the index at %s from format %s to %s (%d documents, %.1f s)",
            self.path, old, self._format(), n, time.perf_counter() - started,
        )  # fmt: skip

    def _classify_stored(self) -> None:
        """An index written before standing messages were stored (or by another version of the rule): read
        every person's own messages with the rule once and store what stands, without a re-import."""
        with self._java("reading standing messages"):
            classify_stored(self, self._set_standing, self._stored_standing, str(self.path))
            self._engine.commit()

    def _set_standing(self, records: list[list[Any]]) -> int:
        return int(self._engine.setStanding(java_bytes(wire.standing_changes(records))))

    def _stored_standing(self, user_id: str) -> dict[str, dict[str, object] | None]:
        n = self.count(user_id)
        with self._java("search"):
            out = self._reading().standing(user_id, int(n)) if n else b"[]"
        return {str(d["id"]): wire.stored_standing(d) for d in wire.hit_objects(out)}

    def _stores_standing(self) -> bool:
        """Whether the index stores what its messages say that stands, by this rule (a read-only open of an
        index a writer has not yet upgraded reads it with the rule instead)."""
        if self.path is None or not self.read_only:
            return True
        record = self._meta.get("standing") if self._meta is not None else None
        if record != RULE_VERSION:  # the writer may have upgraded it since: read the file again
            with suppress(OSError, ValueError):
                record = json.loads((self.path / _META_FILE).read_text()).get("standing")
        return record == RULE_VERSION

    def standing(self, user_id: str, k: int) -> list[StandingHit]:
        if k <= 0:
            return []
        marks = self.marks(user_id)
        n = k + len(marks)  # enough left once the marked ones are taken out
        if not self._stores_standing():
            return with_marks(self, user_id, read_standing_now(self, user_id, n), marks, k)
        with self._java("search"):
            out = self._reading().standing(user_id, int(n))
        found = []
        for d in wire.hit_objects(out):
            s = standing_of(wire.stored_standing(d))
            if s is not None:
                found.append(StandingHit.of(wire.hit(d), s))
        return with_marks(self, user_id, found, marks, k)

    def _write_meta(self, vectors: dict[str, Any] | None = None) -> None:
        """Write ``refind.json`` when the format or the vectors' record (``vectors``: the model's name and
        dimensions, or ``{}`` before any) changes, atomically."""
        assert self.path is not None
        fmt = self._format()
        if vectors is None:
            vectors = (self._meta or {}).get("vectors", {})
        if (
            self._meta is not None
            and self._meta.get("format") == fmt
            and self._meta.get("vectors") == vectors
            and self._meta.get("standing") == RULE_VERSION
        ):
            return
        meta: dict[str, Any] = {
            **(self._meta or {}),
            "format": fmt,
            "refind_version": _version(),
            "lucene_version": str(jclass("io.refind.lucene.Engine").luceneVersion()),
            "analyzer": ANALYZER_NAME,
            "bm25": {"k1": self.settings.bm25_k1, "b": self.settings.bm25_b},
            "vectors": vectors,
            "standing": RULE_VERSION,
        }
        meta_path = self.path / _META_FILE
        tmp = meta_path.with_suffix(".tmp")
        with tmp.open("w") as fh:
            fh.write(json.dumps(meta, indent=2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, meta_path)
        self._meta = meta

    # ------------------------------------------------------------------ calls

    @contextmanager
    def _java(self, what: str) -> Iterator[None]:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        try:
            yield
        except (StoreError, InvalidInput):
            raise
        except Exception as exc:
            if java_exception_class(exc):
                raise StoreError(f"Lucene failed during {what} on {self.path or 'memory'}: {exc}") from exc
            raise

    def _reading(self) -> Any:
        return self._engine

    def refresh(self) -> None:
        """Read-only: see the latest commit of the process that writes (cheap when nothing changed, but
        not free: a directory listing). :class:`refind.Memory` calls it once per read it serves."""
        if self.read_only:
            with self._java("refresh"):
                self._engine.refresh()

    def generation(self) -> int:
        """The version of the index that searches see now: it changes whenever a write becomes visible to
        them, so what was computed from the index at one generation holds while it does."""
        with self._java("search"):
            return int(self._reading().version())

    def _writable(self) -> Any:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        if self.read_only:
            raise ReadOnlyError(
                f"index at {self.path} was opened read-only; open it without read_only to write"
            )
        return self._engine

    # ------------------------------------------------------------------ reading

    def analyze(self, text: str) -> list[str]:
        """The index terms of ``text`` (tokenized, lowercased, CJK bigrams, stopwords dropped, stemmed)."""
        if not text or not text.strip():
            return []
        with self._java("analysis"):
            return wire.terms(self._engine.analyze(text))

    def query(
        self, user_id: str, text: str, k: int = 10, filters: Filters | None = None, *, content: bool = True
    ) -> list[Hit]:
        """BM25 over ``contents`` for ``user_id``: the analyzed terms of ``text`` as a bag of words (never
        Lucene syntax), filters applied before top-``k``. Empty or stopword-only text returns []."""
        if k <= 0 or not text or not text.strip():
            return []
        with self._java("search"):
            out = self._reading().search(user_id, text, int(k), wire.filters(filters), bool(content))
        return wire.hits(out)

    def round(self, user_id: str, spec: RoundSpec) -> RoundFound:
        """A whole search round in one call (``Engine.round``): equal to
        :func:`refind.search.round.round_by_calls` on this store, with one crossing instead of four to six."""
        if not spec.text or not spec.text.strip():
            return RoundFound([], [], {}, [], [], [], [])
        with self._java("search"):
            return wire.round_found(self._reading().round(user_id, wire.round_spec(spec)))

    def query_sessions(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0 or not text or not text.strip():
            return []
        with self._java("search"):
            out = self._reading().searchSessions(user_id, text, int(k), wire.optional_ids(session_ids))
        return wire.scored_sessions(out)

    def windows(self, user_id: str, spans: Sequence[tuple[str, int, int]]) -> list[list[Hit]]:
        if not spans:
            return []
        with self._java("search"):
            out = self._reading().windows(user_id, wire.windows(spans))
        return wire.windows_found(out)

    def browse(
        self, user_id: str, k: int, filters: Filters | None = None, newest_first: bool = True
    ) -> list[Hit]:
        if k <= 0:
            return []
        with self._java("search"):
            out = self._reading().browse(user_id, int(k), wire.filters(filters), bool(newest_first))
        return wire.hits(out)

    def term_counts(self, user_id: str, text: str) -> dict[str, int]:
        if not text or not text.strip():
            return {}
        with self._java("count"):
            out = self._reading().termCounts(user_id, text)
        return wire.term_counts(out)

    def get(self, user_id: str, ids: Sequence[str]) -> list[Hit]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        with self._java("search"):
            out = self._reading().get(user_id, wire.ids(ids))
        return wire.hits(out)

    def session(self, user_id: str, session_id: str) -> list[Hit]:
        """Every turn of one session, in order."""
        return self.windows(user_id, [(session_id, 0, 2**31 - 1)])[0]

    def count(self, user_id: str | None = None) -> int:
        with self._java("count"):
            return int(self._reading().count(user_id))

    def users(self) -> list[str]:
        with self._java("stats"):
            return wire.users(self._reading().users())

    def session_infos(self, user_id: str, session_ids: Sequence[str] | None = None) -> dict[str, SessionInfo]:
        if session_ids is not None and not session_ids:
            return {}
        with self._java("search"):
            out = self._reading().sessionInfos(user_id, wire.optional_ids(session_ids))
        return wire.session_infos(user_id, out)

    def query_titles(
        self, user_id: str, text: str, k: int = 50, session_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0 or not text or not text.strip() or (session_ids is not None and not session_ids):
            return []
        with self._java("search"):
            out = self._reading().searchTitles(user_id, text, int(k), wire.optional_ids(session_ids))
        return wire.scored_sessions(out)

    def session_summaries(self, user_id: str) -> list[SessionCounts]:
        with self._java("search"):
            out = self._reading().sessionSummaries(user_id)
        return wire.session_summaries(out)

    # ------------------------------------------------------------------ vectors (issue 36)

    def knn(self, user_id: str, vector: Sequence[float], k: int, filters: Filters | None = None) -> list[Hit]:
        """The nearest of ``user_id``'s vectors (HNSW, the user and filters inside the KNN query:
        ``Vectors.knn``), best first, scored by cosine."""
        if filters is not None and filters.any_terms is not None:
            raise InvalidInput("knn: any_terms is not a filter of a vector search", field="any_terms")
        model = self.vector_model()
        if k <= 0 or model is None:
            return []
        _, dims = model
        if len(vector) != dims:
            raise InvalidInput(
                f"knn: a vector of {len(vector)} dimensions; this index's vectors have {dims}",
                field="vector",
            )
        with self._java("search"):
            out = self._reading().knn(user_id, java_floats(vector), int(k), wire.filters(filters))
        return wire.hits(out)

    def vector_counts(self, user_id: str | None = None) -> VectorCounts:
        with self._java("count"):
            return wire.vector_counts(self._reading().vectorCounts(user_id, self.vector_model() is None))

    def vector_model(self) -> tuple[str, int] | None:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        if self.path is None:
            return self._memory_model
        record = self._meta.get("vectors", {}) if self._meta is not None else {}
        if self.read_only:  # the writer may have recorded one since: read the file again
            with suppress(OSError, ValueError):
                record = json.loads((self.path / _META_FILE).read_text()).get("vectors", {})
        name, dims = record.get("model"), record.get("dimensions")
        return (str(name), int(dims)) if isinstance(name, str) and isinstance(dims, int) else None

    def use_vector_model(self, name: str, dimensions: int) -> None:
        self._writable()
        given = (str(name), int(dimensions))
        stored = self.vector_model()
        if stored is not None and stored != given:
            raise IndexFormatError(model_mismatch(self.location, stored, given))
        if stored is None:
            started = time.perf_counter()
            with self._java("queueing messages for vectors"):
                # every message queued, durably, before the model is recorded (a crash between: no model)
                n = int(self._engine.startQueueing())
            self._record_model(given)
            if n:
                log.info(
                    "queued the %d messages of the index at %s for their vectors (%.1f s); the embedding "
                    "worker fills them in", n, self.location, time.perf_counter() - started,
                )  # fmt: skip

    def _record_model(self, model: tuple[str, int] | None) -> None:
        if self.path is None:
            self._memory_model = model
        else:
            self._write_meta({} if model is None else {"model": model[0], "dimensions": model[1]})

    def reset_vectors(self) -> int:
        engine = self._writable()
        with self._java("reset of the vectors"):
            n = int(engine.queueAll(True))  # the queue written whole: a crash before the model is
            engine.commit()  # forgotten leaves every message queued
        self._record_model(None)
        engine.setQueueing(False)
        return n

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        engine = self._writable()
        if limit <= 0:
            return []
        with self._java("read of the vector queue"):
            return wire.pending(engine.pendingVectors(int(limit)))

    def write_vectors(self, vectors: Sequence[VectorRecord]) -> int:
        engine = self._writable()
        model = self.vector_model()
        if model is None:
            raise StoreError("no vector model recorded for this index: call use_vector_model first")
        _, dims = model
        for v in vectors:
            if len(v.vector) != dims:
                raise InvalidInput(
                    f"vector of {v.user_id!r}/{v.id!r}: {len(v.vector)} dimensions, the model has {dims}",
                    field="vector",
                )
        if not vectors:
            return 0
        data = java_bytes(wire.vectors(vectors))
        with self._java("write of vectors"):
            return int(engine.writeVectors(data))

    # ------------------------------------------------------------------ writing

    def session_states(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], SessionState]:
        wanted = {u: list(s) for u, s in wanted.items() if s}
        if not wanted:
            return {}
        with self._java("search"):
            return wire.session_states(self._reading().sessionStates(wire.by_user(wanted)))

    def existing(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Hit]:
        wanted = {u: list(dict.fromkeys(i)) for u, i in wanted.items() if i}
        if not wanted:
            return {}
        with self._java("search"):
            return wire.existing(self._reading().existing(wire.by_user(wanted)))

    def session_turns(self, wanted: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], list[Hit]]:
        wanted = {u: list(s) for u, s in wanted.items() if s}
        if not wanted:
            return {}
        with self._java("search"):
            return wire.session_turns(self._reading().sessionTurns(wire.by_user(wanted)))

    def request_marker(self, user_id: str, request_id: str) -> str | None:
        with self._java("search"):
            out = self._reading().requestMarker(user_id, request_id)
        return None if out is None else str(out)

    def write(self, batch: WriteBatch) -> None:
        engine = self._writable()
        # one ingestion time for the batch and its marker; ASCII-escaped UTF-8: one copy across
        data = java_bytes(wire.write_batch(batch, int(time.time() * 1000)))
        with self._java("write"):
            engine.write(data)

    def commit(self) -> None:
        engine = self._writable()
        with self._java("commit"):
            engine.commit()

    def delete_user(self, user_id: str) -> int:
        engine = self._writable()
        with self._java("delete"):
            removed = int(engine.deleteUser(user_id))
        with self._marks_lock:
            every = self._load_marks()
            if user_id in every:
                self._save_marks({u: m for u, m in every.items() if u != user_id})
        return removed

    def delete_session(self, user_id: str, session_id: str) -> int:
        engine = self._writable()
        with self._java("delete"):
            return int(engine.deleteSessionOf(user_id, session_id))

    def expire(self, cutoff_ms: int) -> Expired:
        engine = self._writable()
        with self._java("delete"):
            return wire.expired(engine.expire(int(cutoff_ms)))

    # ------------------------------------------------------------------ tombstones (beside the index)

    def tombstones(self, user_id: str | None = None) -> dict[str, dict[str, int]]:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        with self._tombstone_lock:
            every = self._load_tombstones()
        users = [user_id] if user_id is not None else sorted(every)
        return {u: dict(every[u]) for u in users if every.get(u)}

    def add_tombstones(self, user_id: str, session_ids: Sequence[str], when: int) -> None:
        self._writable()
        if not session_ids:
            return
        with self._tombstone_lock:
            every = self._load_tombstones()
            every.setdefault(user_id, {}).update(dict.fromkeys(session_ids, int(when)))
            self._save_tombstones(every)

    def remove_tombstones(self, user_id: str, session_ids: Sequence[str] | None = None) -> int:
        self._writable()
        with self._tombstone_lock:
            every = self._load_tombstones()
            mine = every.get(user_id, {})
            gone = list(mine) if session_ids is None else [s for s in dict.fromkeys(session_ids) if s in mine]
            if not gone:
                return 0
            for sid in gone:
                del mine[sid]
            if not mine:
                del every[user_id]
            self._save_tombstones(every)
            return len(gone)

    def _load_tombstones(self) -> dict[str, dict[str, int]]:
        if self.path is None:
            return {u: dict(s) for u, s in self._memory_tombstones.items()}
        file = self.path / _TOMBSTONES_FILE
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"{file} (the deleted sessions that imports leave out) is unreadable ({exc}); restore it from "
                "a backup, or delete it to forget every deletion (a later import then brings those sessions "
                "back)"
            ) from exc
        users = raw.get("users") if isinstance(raw, dict) and raw.get("format") == 1 else None
        if not isinstance(users, dict) or not all(
            isinstance(u, str) and isinstance(s, dict) and all(isinstance(v, int) for v in s.values())
            for u, s in users.items()
        ):
            raise StoreError(
                f"{file} is not a tombstones file of this refind (format 1); restore it from a backup, or "
                "delete it to forget every deletion"
            )
        return {u: dict(s) for u, s in users.items()}

    def _save_tombstones(self, every: dict[str, dict[str, int]]) -> None:
        """Replace the file atomically and durably: a crash leaves the old one or the new one."""
        if self.path is None:
            self._memory_tombstones = every
            return
        file = self.path / _TOMBSTONES_FILE
        _replace_durably(file, {"format": 1, "users": every}, "cannot record the deleted sessions in")

    # ------------------------------------------------------------------ marks (beside the index)

    def marks(self, user_id: str) -> dict[str, StandingMark]:
        if self._closed:
            raise StoreClosed("the store is closed; open a new Memory")
        with self._marks_lock:
            return dict(self._load_marks().get(user_id, {}))

    def set_marks(self, user_id: str, marks: Mapping[str, StandingMark | None]) -> None:
        self._writable()
        if not marks:
            return
        with self._marks_lock:
            every = dict(self._load_marks())
            mine = dict(every.get(user_id, {}))
            for mid, mark in marks.items():
                if mark is None:
                    mine.pop(mid, None)
                else:
                    mine[mid] = mark
            if mine:
                every[user_id] = mine
            else:
                every.pop(user_id, None)
            self._save_marks(every)

    def _load_marks(self) -> dict[str, dict[str, StandingMark]]:
        """Every user's marks (not to be changed: the cache's own), read again only when the file changed
        (a reader beside the writer sees each of its writes; a search costs a ``stat``)."""
        if self.path is None:
            return self._memory_marks
        file = self.path / _MARKS_FILE
        try:
            st = file.stat()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreError(f"cannot read {file}: {exc.strerror or exc}") from exc
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        if self._marks_seen is not None and self._marks_seen[0] == key:
            return self._marks_seen[1]
        problem = (
            f"{file} (what each person pinned or hid among their standing facts) is not a marks file of this "
            "refind (format 1); restore it from a backup, or delete it to forget every pin and hide"
        )
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(f"{problem} ({exc})") from exc
        users = raw.get("users") if isinstance(raw, dict) and raw.get("format") == 1 else None
        if not isinstance(users, dict):
            raise StoreError(problem)
        every: dict[str, dict[str, StandingMark]] = {}
        try:
            for user, mine in users.items():
                every[str(user)] = {
                    str(mid): StandingMark(_mark_kind(m["kind"]), int(m["at"])) for mid, m in mine.items()
                }
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise StoreError(problem) from exc
        self._marks_seen = (key, every)
        return every

    def _save_marks(self, every: dict[str, dict[str, StandingMark]]) -> None:
        if self.path is None:
            self._memory_marks = every
            return
        file = self.path / _MARKS_FILE
        users = {u: {i: {"kind": m.kind, "at": m.at} for i, m in mine.items()} for u, mine in every.items()}
        _replace_durably(file, {"format": 1, "users": users}, "cannot record the pinned and hidden facts in")
        st = file.stat()
        self._marks_seen = ((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino), every)

    def recover(self) -> None:
        """After a failed write or commit (a full disk, an I/O error): discard every write no commit covers
        and reopen the writer on the last commit, so that the next write starts clean once the disk takes
        writes again, without a restart. Lucene closes a writer that hit such an error for good; reads
        from the old writer fail meanwhile (``StoreError``). Raises ``StoreError`` when the index cannot be
        reopened yet (the next failed write tries again)."""
        if self._closed or self.read_only:
            return
        old = self._engine
        with suppress(Exception):  # closing with commit-on-close off is a rollback
            old.close()
        self._engine = self._open_engine()
        log.warning("the index at %s was reopened at its last commit after a failed write", self.location)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Commit nothing new, release the write lock and the directory. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._engine.close()
        finally:
            if not self.read_only and self.path is not None:
                with suppress(OSError):
                    (self.path / _PID_FILE).unlink()

    def drop(self) -> None:
        """Close, then delete the index directory (only one refind wrote: it holds ``refind.json``)."""
        if self.read_only:
            raise ReadOnlyError(f"{self.location} was opened read-only; open it without read_only to drop it")
        self.close()
        if self.path is not None and (self.path / _META_FILE).is_file():
            shutil.rmtree(self.path)

    def __enter__(self) -> LuceneStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"LuceneStore({str(self.path) if self.path else ':memory:'!r}, {mode})"
