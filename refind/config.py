"""Settings: one pydantic model, filled from arguments, then ``REFIND_*`` environment variables."""

from __future__ import annotations

import os
from pathlib import Path

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
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    jvm_heap: str = Field("1g", pattern=r"^[0-9]+[kKmMgG]?$")
    bm25_k1: float = Field(1.2, ge=0.0, le=10.0)
    bm25_b: float = Field(0.75, ge=0.0, le=1.0)
    anserini_jar: str | None = None
    ram_buffer_mb: float = Field(64.0, gt=1.0, le=4096.0)

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Build settings from ``REFIND_*`` variables, then ``overrides`` (``None`` values are ignored)."""
        env = {
            "jvm_heap": os.environ.get("REFIND_JVM_HEAP"),
            "bm25_k1": os.environ.get("REFIND_BM25_K1"),
            "bm25_b": os.environ.get("REFIND_BM25_B"),
            "anserini_jar": os.environ.get("REFIND_ANSERINI_JAR"),
            "ram_buffer_mb": os.environ.get("REFIND_RAM_BUFFER_MB"),
        }
        values = {k: v for k, v in env.items() if v}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
