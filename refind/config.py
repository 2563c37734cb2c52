"""Settings: one pydantic model, filled from arguments, then ``REFIND_*`` environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Settings", "default_data_dir"]


def default_data_dir() -> Path:
    """``$REFIND_DATA``, else the per-user data directory (``$XDG_DATA_HOME/refind`` or ``~/.local/share/refind``)."""
    env = os.environ.get("REFIND_DATA")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "refind"


class Settings(BaseModel):
    """Every tunable of the store. Environment variables override the defaults, arguments override both.

    | setting | env | default |
    |---|---|---|
    | ``jvm_heap`` | ``REFIND_JVM_HEAP`` | ``1g`` (the JVM's -Xmx; one JVM per process) |
    | ``bm25_k1`` | ``REFIND_BM25_K1`` | ``1.2`` |
    | ``bm25_b`` | ``REFIND_BM25_B`` | ``0.75`` |
    | ``anserini_jar`` | ``REFIND_ANSERINI_JAR`` | the fatjar inside the installed pyserini package |
    | ``ram_buffer_mb`` | ``REFIND_RAM_BUFFER_MB`` | ``64`` (IndexWriter buffer before a flush) |
    | ``top_k`` | ``REFIND_TOP_K`` | ``5`` hits per search round |
    | ``window`` | ``REFIND_WINDOW`` | ``2`` turns each side of a hit |
    | ``max_rounds`` | ``REFIND_MAX_ROUNDS`` | ``4`` searches per question (heuristic agent) |
    | ``readset`` | ``REFIND_READSET`` | ``message``: later rounds skip messages already read (``session``: skip whole sessions; ``off``) |
    | ``fusion_k0`` | ``REFIND_FUSION_K0`` | ``60`` |
    | ``fusion_w_hit`` / ``fusion_w_session`` | ``REFIND_FUSION_W_HIT`` / ``REFIND_FUSION_W_SESSION`` | ``1.0`` / ``1.0`` (0 for the session weight turns fusion off) |
    | ``fusion_sessions`` | ``REFIND_FUSION_SESSIONS`` | ``documents``: a session's rank r2 comes from BM25 over its whole text (``hits``: the sum of its hits' scores) |
    | ``overfetch`` | ``REFIND_OVERFETCH`` | ``30`` messages fetched per round before fusion |
    | ``context_tokens`` | ``REFIND_CONTEXT_TOKENS`` | ``150``: a context turn (window, not a hit) is cut to this many tokens when rendered |
    | ``window_tokens`` | ``REFIND_WINDOW_TOKENS`` | ``150``: context kept on each side of a hit, in tokens (within ±window turns) |
    | ``hit_tokens`` | ``REFIND_HIT_TOKENS`` | ``1000``: a hit longer than this is cut to the passage around the matched words when rendered |
    | ``embedder`` | ``REFIND_EMBEDDER`` | ``local``: messages get vectors from the local model (refind.embed.local) and searches a round by meaning; ``endpoint``: from an OpenAI-compatible embeddings endpoint (``REFIND_EMBED_MODEL``, ``REFIND_EMBED_BASE_URL``, ``REFIND_EMBED_API_KEY``); ``off``: words only |
    | ``max_query_chars`` | ``REFIND_MAX_QUERY_CHARS`` | ``4000``: longest question (its options included) or keyword text a search accepts; longer is refused |
    | ``time_filters`` | ``REFIND_TIME_FILTERS`` | ``true``: the heuristic agent adds a time-filtered round on a time cue |
    | ``shapes`` | ``REFIND_SHAPES`` | ``true``: the heuristic agent reads the question's shape first (breadth: more places, each shorter; period: the period's sessions by recency) |
    | ``standing_facts`` | ``REFIND_STANDING_FACTS`` | ``4``: the person's lasting facts (refind.standing: health, diet, household, work rules, money, legal status, ...) offered beside the evidence in the same share: those sharing a word with the question first, then those with consequences, newest first; ``0`` turns it off |
    | ``standing`` | ``REFIND_STANDING`` | ``3``: standing instructions and preferences of the person (refind.standing) offered beside the evidence, in at most a tenth of a budget; ``0`` turns it off |
    | ``segment_turns`` | ``REFIND_SEGMENT_TURNS`` | ``10``: a long thread (evidence at turn 50 or later) is packed in parts of fewer than this many turns, each part tiered as a session is; ``0``: whole sessions |
    | ``feedback`` | ``REFIND_FEEDBACK`` | ``false``: the heuristic agent adds a pseudo-relevance-feedback round (rare terms of the best hits) |
    | ``latest_boost`` | ``REFIND_LATEST_BOOST`` | ``0.02``: for a question about the current state ("now", "currently", "still", "latest", "anymore"...), a session's fused score is raised by up to 2% by its recency, so among (nearly) equally relevant sessions the later ranks first; ``0`` turns it off |
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    jvm_heap: str = Field("1g", pattern=r"^[0-9]+[kKmMgG]?$")
    bm25_k1: float = Field(1.2, ge=0.0, le=10.0)
    bm25_b: float = Field(0.75, ge=0.0, le=1.0)
    anserini_jar: str | None = None
    ram_buffer_mb: float = Field(64.0, gt=1.0, le=4096.0)
    top_k: int = Field(5, ge=1, le=1000)
    window: int = Field(2, ge=0, le=100)
    max_rounds: int = Field(4, ge=1, le=20)
    readset: Literal["message", "session", "off"] = "message"
    fusion_k0: float = Field(60.0, gt=0.0)
    fusion_w_hit: float = Field(1.0, ge=0.0)
    fusion_w_session: float = Field(1.0, ge=0.0)
    overfetch: int = Field(30, ge=1, le=10_000)
    fusion_sessions: Literal["hits", "documents"] = "documents"
    time_filters: bool = True
    latest_boost: float = Field(0.02, ge=0.0, le=1.0)
    feedback: bool = False
    shapes: bool = True
    standing: int = Field(3, ge=0, le=20)
    standing_facts: int = Field(4, ge=0, le=20)
    segment_turns: int = Field(10, ge=0, le=100_000)
    context_tokens: int | None = Field(150, ge=1, le=100_000)
    window_tokens: int | None = Field(150, ge=0, le=1_000_000)
    hit_tokens: int | None = Field(1000, ge=16, le=1_000_000)
    max_query_chars: int = Field(4000, ge=16, le=1_000_000)
    embedder: Literal["local", "endpoint", "off"] = "local"

    @staticmethod
    def debug_enabled() -> bool:
        """``$REFIND_DEBUG`` is set to anything but empty or ``0``: the CLI re-raises unexpected errors with
        their traceback and the HTTP service adds an internal error's message to its 500 body (read here
        only, at each call, so it is never part of a store's settings)."""
        return os.environ.get("REFIND_DEBUG", "") not in {"", "0"}

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Build settings from ``REFIND_*`` variables, then ``overrides`` (``None`` values are ignored)."""
        env = {
            "jvm_heap": os.environ.get("REFIND_JVM_HEAP"),
            "bm25_k1": os.environ.get("REFIND_BM25_K1"),
            "bm25_b": os.environ.get("REFIND_BM25_B"),
            "anserini_jar": os.environ.get("REFIND_ANSERINI_JAR"),
            "ram_buffer_mb": os.environ.get("REFIND_RAM_BUFFER_MB"),
            "top_k": os.environ.get("REFIND_TOP_K"),
            "window": os.environ.get("REFIND_WINDOW"),
            "max_rounds": os.environ.get("REFIND_MAX_ROUNDS"),
            "readset": os.environ.get("REFIND_READSET"),
            "fusion_k0": os.environ.get("REFIND_FUSION_K0"),
            "fusion_w_hit": os.environ.get("REFIND_FUSION_W_HIT"),
            "fusion_w_session": os.environ.get("REFIND_FUSION_W_SESSION"),
            "overfetch": os.environ.get("REFIND_OVERFETCH"),
            "fusion_sessions": os.environ.get("REFIND_FUSION_SESSIONS"),
            "time_filters": os.environ.get("REFIND_TIME_FILTERS"),
            "latest_boost": os.environ.get("REFIND_LATEST_BOOST"),
            "feedback": os.environ.get("REFIND_FEEDBACK"),
            "shapes": os.environ.get("REFIND_SHAPES"),
            "standing": os.environ.get("REFIND_STANDING"),
            "standing_facts": os.environ.get("REFIND_STANDING_FACTS"),
            "segment_turns": os.environ.get("REFIND_SEGMENT_TURNS"),
            "context_tokens": os.environ.get("REFIND_CONTEXT_TOKENS"),
            "window_tokens": os.environ.get("REFIND_WINDOW_TOKENS"),
            "hit_tokens": os.environ.get("REFIND_HIT_TOKENS"),
            "max_query_chars": os.environ.get("REFIND_MAX_QUERY_CHARS"),
            "embedder": os.environ.get("REFIND_EMBEDDER"),
        }
        values: dict[str, object] = {k: v for k, v in env.items() if v}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
