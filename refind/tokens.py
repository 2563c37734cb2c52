"""Token counts (prompts, observations, rendered evidence): tiktoken's ``o200k_base`` when its encoding file is on disk, else an
estimate of one token per four characters (said once in the log, and named in every summary).

tiktoken downloads encodings on first use; this machine has no route to that host, so the encoding file is
installed by ``scripts/setup.sh`` under ``<venv>/share/refind/tiktoken``. ``TIKTOKEN_CACHE_DIR`` is pointed
there when it is unset, and tiktoken is only asked for the encoding when the file is present (so a missing
file never turns into a network call).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "ENCODING",
    "clear_caches",
    "count_tokens",
    "count_tokens_upto",
    "slice_tokens",
    "tokenizer_name",
    "truncate_to_tokens",
]

log = logging.getLogger(__name__)

ENCODING = "o200k_base"
# tiktoken caches a download under sha1(url); this is the name of o200k_base's file.
_ENCODING_FILE = "fb374d419588a4632f3f557e76b4b70aebbca790"
_state: dict[str, Any] = {}


def _encoder() -> Any | None:
    if "encoder" in _state:
        return _state["encoder"]
    encoder = None
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        default = Path(sys.prefix) / "share" / "refind" / "tiktoken"
        if default.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(default)
    cache = os.environ.get("TIKTOKEN_CACHE_DIR")
    if cache and (Path(cache) / _ENCODING_FILE).is_file():
        try:
            import tiktoken

            encoder = tiktoken.get_encoding(ENCODING)
        except Exception as exc:  # a corrupt file or a tiktoken without this encoding
            log.warning(
                "tiktoken %s unavailable (%s); token counts are estimated as len(text)/4", ENCODING, exc
            )
    else:
        log.warning(
            "tiktoken's %s file is not in TIKTOKEN_CACHE_DIR=%s (run scripts/setup.sh); "
            "token counts are estimated as len(text)/4",
            ENCODING,
            cache,
        )
    _state["encoder"] = encoder
    return encoder


def tokenizer_name() -> str:
    """What :func:`count_tokens` measures with: ``tiktoken o200k_base`` or ``estimate len(text)/4``."""
    return f"tiktoken {ENCODING}" if _encoder() is not None else "estimate len(text)/4"


# Counts already made, by text (and by cap for count_tokens_upto): plain dicts of strings to ints, which the
# garbage collector does not track, emptied when full. An lru_cache of the same size is a tracked container
# that every full collection walks: at 1,000 searches of a 100,000-message history its entries made each
# full collection 6 ms longer, and full collections were every p95 search (docs/benchmarks/perf.md).
_CACHE_MAX = 200_000
_counts: dict[str, int] = {}
_counts_upto: dict[int, dict[str, int]] = {}


def _remember(cache: dict[str, int], text: str, n: int) -> int:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[text] = n
    return n


def clear_caches() -> None:
    """Forget the counts made so far (up to 200,000 texts are remembered per cache, then it starts over)."""
    _counts.clear()
    _counts_upto.clear()


def count_tokens(text: str) -> int:
    """Tokens of ``text`` (special-token spellings count as ordinary text)."""
    n = _counts.get(text)
    if n is not None:
        return n
    encoder = _encoder()
    if encoder is None:
        return _remember(_counts, text, (len(text) + 3) // 4)
    return _remember(_counts, text, len(encoder.encode_ordinary(text)))


def count_tokens_upto(text: str, cap: int) -> int:
    """``min(count_tokens(text), cap)``, exactly, without encoding all of a long text.

    A long text is first counted up to a word boundary some ``8 * cap`` characters in (a single space
    between two words): tiktoken splits text into words before it encodes them, and a word keeps its leading
    space, so that prefix encodes to the first tokens of the whole text. When the prefix alone reaches
    ``cap``, so does the text; otherwise (a text of very long tokens, or no such boundary) the whole text is
    counted."""
    if cap <= 0:
        return 0
    cache = _counts_upto.get(cap)
    if cache is None:
        cache = _counts_upto.setdefault(cap, {})
    n = cache.get(text)
    if n is not None:
        return n
    limit = 8 * cap
    encoder = _encoder()
    if len(text) > limit + 64 and encoder is not None:
        cut = text.find(" ", limit)
        while 0 < cut < len(text) - 1 and (text[cut - 1].isspace() or text[cut + 1].isspace()):
            cut = text.find(" ", cut + 1)
        # the prefix is encoded here, not through count_tokens: its cache would keep every prefix alive
        if 0 < cut < len(text) - 1 and len(encoder.encode_ordinary(text[:cut])) >= cap:
            return _remember(cache, text, cap)
    return _remember(cache, text, min(count_tokens(text), cap))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """``text`` cut to at most ``max_tokens`` tokens (an ellipsis marks a cut)."""
    if max_tokens <= 0:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    encoder = _encoder()
    if encoder is None:
        return text[: max(0, max_tokens * 4 - 1)] + "…"
    return encoder.decode(encoder.encode_ordinary(text)[: max(0, max_tokens - 1)]) + "…"


def slice_tokens(text: str, max_tokens: int, center: float = 0.0) -> tuple[str, bool, bool]:
    """A passage of at most ``max_tokens`` tokens of ``text`` around the relative position ``center``
    (0 the start, 1 the end): ``(passage, cut at the start, cut at the end)``. A multi-byte character split
    by the cut is dropped, never mangled."""
    max_tokens = max(max_tokens, 1)
    encoder = _encoder()
    if encoder is None:
        n = max_tokens * 4
        if len(text) <= n:
            return text, False, False
        mid = int(center * len(text))
        lo = max(0, min(mid - n // 2, len(text) - n))
        return text[lo : lo + n], lo > 0, lo + n < len(text)
    tokens = encoder.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text, False, False
    mid = int(center * len(tokens))
    lo = max(0, min(mid - max_tokens // 2, len(tokens) - max_tokens))
    hi = lo + max_tokens
    piece = encoder.decode_bytes(tokens[lo:hi]).decode("utf-8", errors="ignore")
    return piece, lo > 0, hi < len(tokens)
