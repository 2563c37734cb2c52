"""The service's settings: one frozen pydantic model, validated before anything starts."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from refind.config import env_var
from refind.errors import InvalidInput

__all__ = ["DEFAULT_BODY_BYTES_IN_FLIGHT", "DEFAULT_MAX_BODY_BYTES", "AuthScheme", "ServerConfig"]

AuthScheme = Literal["none", "token", "bearer", "x-api-key"]
AgentName = Literal["heuristic", "llm"]
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_BODY_BYTES_IN_FLIGHT = 64 * 1024 * 1024
_MIN_KEY = 8


class ServerConfig(BaseModel):
    """How the service runs (every field is a ``python -m refind.server`` flag, see docs/service.md).

    ``api_key`` defaults to ``$REFIND_API_KEY`` and is required unless ``auth`` is ``none``; it is a
    ``SecretStr``, so it never shows in a repr, a log line or an error. ``threads`` is the size of the
    thread pool that runs the blocking index calls; ``max_in_flight`` bounds the requests being served or
    queued at once (beyond it: 503 with ``Retry-After``), default ``threads * 4``; a request counts once its
    body has arrived. ``max_body_bytes_in_flight`` bounds the bytes of request bodies held at once, across
    connections (default 64 MiB, at least ``max_body_bytes``): a body that would pass it is read and
    dropped, then answered 503 with ``Retry-After``. ``read_timeout_s``: a request's headers, and then its body, must each arrive within
    that many seconds (else 408 and the connection is closed).
    ``retention_days`` deletes what was added more than that many days ago, every ``retention_interval_s``.
    ``search_workers`` reader processes run the searches (default one per core, at most 4; 0: in this
    process), see :mod:`refind.server._pool`. ``warm_up_s``: seconds of :func:`refind.warm_up` each
    process that searches runs before its first search (0: none).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    auth: AuthScheme = "none"
    api_key: SecretStr | None = None
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024, le=1024**3)
    max_body_bytes_in_flight: int | None = Field(None, ge=1024, le=16 * 1024**3)
    threads: int = Field(16, ge=1, le=512)
    max_in_flight: int | None = Field(None, ge=1, le=100_000)
    retry_after_s: int = Field(1, ge=1, le=3600)
    read_timeout_s: float = Field(30.0, gt=0, le=3600)
    retention_days: float | None = Field(None, gt=0)
    retention_interval_s: float = Field(3600.0, gt=0)
    agent: AgentName = "heuristic"
    search_workers: int | None = Field(None, ge=0, le=64)
    warm_up_s: float = Field(0.0, ge=0.0, le=60.0)

    @model_validator(mode="after")
    def _key_when_needed(self) -> ServerConfig:
        if self.auth != "none":
            key = self.api_key.get_secret_value() if self.api_key is not None else ""
            if not key:
                raise ValueError(
                    f"auth={self.auth} needs an API key: set REFIND_API_KEY (or pass --api-key), "
                    "or use --auth none on a loopback address"
                )
            if len(key) < _MIN_KEY or key != key.strip():
                raise ValueError(
                    f"the API key must be at least {_MIN_KEY} characters without surrounding spaces"
                )
        return self

    @model_validator(mode="after")
    def _room_for_one_body(self) -> ServerConfig:
        if self.max_body_bytes_in_flight is not None and self.max_body_bytes_in_flight < self.max_body_bytes:
            raise ValueError(
                f"max_body_bytes_in_flight ({self.max_body_bytes_in_flight}) must be at least max_body_bytes "
                f"({self.max_body_bytes}): one whole body must fit"
            )
        return self

    @property
    def body_bytes_limit(self) -> int:
        """Bytes of request bodies held at once, across connections."""
        if self.max_body_bytes_in_flight is not None:
            return self.max_body_bytes_in_flight
        return max(DEFAULT_BODY_BYTES_IN_FLIGHT, self.max_body_bytes)

    @property
    def search_processes(self) -> int:
        """Reader processes for searches (None: one per core, at most 4; 0: searches in this process)."""
        if self.search_workers is not None:
            return self.search_workers
        return min(os.cpu_count() or 1, 4)

    @property
    def in_flight_limit(self) -> int:
        return self.max_in_flight if self.max_in_flight is not None else self.threads * 4

    @classmethod
    def build(cls, **values: Any) -> ServerConfig:
        """Validate ``values`` (``None`` means the default; ``api_key`` falls back to ``$REFIND_API_KEY``),
        raising :class:`refind.InvalidInput` that names the bad setting."""
        values = {k: v for k, v in values.items() if v is not None}
        if "api_key" not in values and env_var("REFIND_API_KEY"):
            values["api_key"] = env_var("REFIND_API_KEY")
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            parts = []
            for err in exc.errors(include_input=False):
                where = ".".join(str(p) for p in err["loc"])
                msg = str(err["msg"]).removeprefix("Value error, ")
                parts.append(f"{where}: {msg}" if where else msg)
            # from None: the pydantic error would print its inputs, the API key among them
            raise InvalidInput("server settings: " + "; ".join(parts)) from None
