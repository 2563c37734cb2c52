"""Request and response bodies of the Add/Search contract (docs: ../shared/docs/aml-contract.md).

Every field is validated here, at the boundary, with the same rules as :class:`refind.Memory` (ids:
:func:`refind.models.id_problem`, timestamps: :func:`refind.models.to_epoch_ms`), so a bad value is a 422
that names the field as the client sent it (``messages[0].name``, not the library's ``speaker``). Fields
that take several JSON types (``content``, ``query``, ``timestamp``, ``now``) are validated by one
function each, so an error names the field, never pydantic's union branches.

Unknown fields are accepted and ignored. Strings must be valid Unicode (a lone surrogate escaped in the
JSON is refused with 422, since it could be neither stored nor echoed). Optional refind extensions, never
sent by the leaderboard: a message's ``name`` (the speaker, as in OpenAI's message format), Search's ``now``
(the question's date, for relative time cues) and ``max_tokens`` (pack the evidence for that budget).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, field_validator

from refind.models import MAX_ID, id_problem, to_epoch_ms

__all__ = [
    "AddRequest",
    "AddResponse",
    "ContentPart",
    "DeleteRequest",
    "DeleteResponse",
    "HealthResponse",
    "InputMessage",
    "SearchItem",
    "SearchRequest",
    "SearchResponse",
    "StatsResponse",
    "content_text",
    "query_text",
]

_IMAGE_TYPES = {"image_url", "image", "input_image"}
EMPTY_MARKER = "[empty]"
IMAGE_MARKER = "[image]"
MAX_NAME = 256  # as refind.Message.speaker
MAX_ROLE = 64  # as refind.Message.role
MAX_OPTIONS = 32


def _unicode(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not valid Unicode (a lone surrogate escape such as \\ud800)") from None
    return value


def _id(value: str) -> str:
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _time(value: Any) -> Any:
    """A timestamp as the client sent it (kept, so a date written as text is shown as written), once
    :func:`refind.models.to_epoch_ms` accepts it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected Unix epoch milliseconds or a date string, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("expected a finite number of epoch milliseconds")
    if isinstance(value, str):
        _unicode(value)
    to_epoch_ms(value)  # ValueError names the accepted forms
    return value


Text = Annotated[str, AfterValidator(_unicode)]
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID), AfterValidator(_unicode), AfterValidator(_id)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Body):
    """One part of multimodal content: ``{"type": "text", "text": ...}`` or
    ``{"type": "image_url", "image_url": {"url": ...}}`` (other types are kept as a ``[type]`` marker)."""

    type: Annotated[Text, Field(min_length=1, max_length=64)]
    text: Text | None = None


def _content(value: Any, *, what: str = "content") -> str | list[ContentPart | str]:
    """A string, or a non-empty list of content parts (objects with a ``type``) and strings."""
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{what} must not be empty")
        return _unicode(value)
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{what} must not be an empty list")
        parts: list[ContentPart | str] = []
        for i, part in enumerate(value):
            if isinstance(part, str):
                parts.append(_unicode(part))
            elif isinstance(part, dict):
                kind, text = part.get("type"), part.get("text")
                if not isinstance(kind, str) or not 1 <= len(kind) <= 64:
                    raise ValueError(f"part {i}: 'type' must be a string of 1 to 64 characters")
                if text is not None and not isinstance(text, str):
                    raise ValueError(f"part {i}: 'text' must be a string")
                parts.append(ContentPart(type=_unicode(kind), text=_unicode(text) if text else text))
            else:
                raise ValueError(f"part {i}: expected a string or an object with a 'type'")
        return parts
    raise ValueError(f"expected a non-empty string or a list of content parts, got {type(value).__name__}")


class InputMessage(_Body):
    role: Annotated[Text, Field(min_length=1, max_length=MAX_ROLE)]
    content: Any = Field(..., description="a non-empty string, or a list of content parts")
    timestamp: Any = Field(None, description="Unix epoch milliseconds (ISO 8601 text is accepted too)")
    name: Annotated[Text, Field(max_length=MAX_NAME)] | None = Field(
        None, description="refind extension: the speaker's name"
    )

    @field_validator("content")
    @classmethod
    def _check_content(cls, value: Any) -> Any:
        return _content(value)

    @field_validator("timestamp")
    @classmethod
    def _check_timestamp(cls, value: Any) -> Any:
        return _time(value)


class AddRequest(_Body):
    request_id: Id
    messages: Annotated[list[InputMessage], Field(min_length=1)]
    user_id: Id
    session_id: Id


class AddResponse(BaseModel):
    success: Literal[True] = True
    request_id: str
    user_id: str
    session_id: str


class SearchRequest(_Body):
    query: Any = Field(..., description="the question: a non-empty string, or a list of content parts")
    options: Annotated[list[Text], Field(max_length=MAX_OPTIONS)] | None = None
    user_id: Id
    top_k: Annotated[StrictInt, Field(ge=1, le=1000)]
    now: Any = Field(
        None, description="refind extension: the question's date (Unix ms or ISO 8601); default: now"
    )
    max_tokens: Annotated[StrictInt, Field(ge=1, le=1_000_000)] | None = Field(
        None,
        description="refind extension: pack the evidence for this many tokens, as SearchResult.to_text does",
    )

    @field_validator("query")
    @classmethod
    def _check_query(cls, value: Any) -> Any:
        return _content(value, what="query")

    @field_validator("now")
    @classmethod
    def _check_now(cls, value: Any) -> Any:
        return _time(value)


class SearchItem(BaseModel):
    id: str
    content: str
    score: float
    created_at: str


class SearchResponse(BaseModel):
    data: list[SearchItem]


class DeleteRequest(_Body):
    user_id: Id


class DeleteResponse(BaseModel):
    success: Literal[True] = True
    user_id: str
    deleted: int


class HealthResponse(BaseModel):
    status: str
    version: str


class StatsResponse(BaseModel):
    """What the index holds (all users): messages; those with a vector for searching by meaning, and those
    awaiting one; the embedder this server gives new messages (None: it searches by words only)."""

    messages: int
    vectors: int = 0
    awaiting_vectors: int = 0
    embedder: str | None = None


def _part_text(part: ContentPart | str, *, markers: bool) -> str:
    if isinstance(part, str):
        return part
    if part.type == "text":
        return part.text or ""
    if not markers:
        return ""
    return IMAGE_MARKER if part.type in _IMAGE_TYPES else f"[{part.type}]"


def content_text(content: str | list[Any]) -> str:
    """A message's content as stored: text parts joined with newlines, an image as ``[image]``; content
    with no text at all becomes ``[empty]``, so the message keeps its place in the session."""
    if isinstance(content, str):
        return content if content.strip() else EMPTY_MARKER
    pieces = [t for t in (_part_text(p, markers=True) for p in content) if t.strip()]
    return "\n".join(pieces) if pieces else EMPTY_MARKER


def query_text(query: str | list[Any]) -> str:
    """The words to search for: the query text, or its text parts joined (images carry no words)."""
    if isinstance(query, str):
        return query
    return "\n".join(t for t in (_part_text(p, markers=False) for p in query) if t.strip())
