"""Request and response bodies of the Add/Search contract (docs: ../shared/docs/aml-contract.md).

Unknown fields are accepted and ignored. Strings must be valid Unicode (a lone surrogate escaped in the
JSON is refused with 422, since it could be neither stored nor echoed). Two optional refind extensions,
never sent by the leaderboard: a message's ``name`` (the speaker, as in OpenAI's message format) and
Search's ``now`` (the question's date, for relative time cues).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt

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
    "content_text",
    "query_text",
]

_MAX_ID = 1000  # as refind.Memory
_IMAGE_TYPES = {"image_url", "image", "input_image"}
EMPTY_MARKER = "[empty]"
IMAGE_MARKER = "[image]"


def _unicode(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not valid Unicode (a lone surrogate escape such as \\ud800)") from None
    return value


Text = Annotated[str, AfterValidator(_unicode)]
Id = Annotated[str, Field(min_length=1, max_length=_MAX_ID), AfterValidator(_unicode)]
FiniteFloat = Annotated[StrictFloat, Field(allow_inf_nan=False)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Body):
    """One part of multimodal content: ``{"type": "text", "text": ...}`` or
    ``{"type": "image_url", "image_url": {"url": ...}}`` (other types are kept as a ``[type]`` marker)."""

    type: Annotated[Text, Field(min_length=1, max_length=64)]
    text: Text | None = None


Content = Annotated[Text, Field(min_length=1)] | Annotated[list[ContentPart | Text], Field(min_length=1)]


class InputMessage(_Body):
    role: Annotated[Text, Field(min_length=1)]
    content: Content
    timestamp: StrictInt | FiniteFloat | Text | None = Field(
        None, description="Unix epoch milliseconds (ISO 8601 text is accepted too)"
    )
    name: Text | None = Field(None, description="refind extension: the speaker's name")


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
    query: Content
    options: list[Text] | None = None
    user_id: Id
    top_k: StrictInt = Field(ge=1, le=1000)
    now: StrictInt | Text | None = Field(
        None, description="refind extension: the question's date (Unix ms or ISO 8601); default: now"
    )


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
    messages: int
    version: str


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
