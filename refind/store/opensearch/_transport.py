"""Transport and retries: the client (or the one a caller passes, the ``client=`` seam), every call with
bounded retries, bulk requests with their failing items sent again, and OpenSearch's errors translated into
refind's.

Connection errors, timeouts, 429 and 5xx answers are retried with exponential backoff for up to
``retry_seconds``; then the call fails with a :class:`~refind.StoreError` naming the cluster. Conflicts and
missing documents (409, 404) are answers, raised as they are for the caller to handle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from refind.errors import InvalidInput, SetupError, StoreClosed, StoreError
from refind.store.base import AlreadyApplied, RequestTaken
from refind.store.opensearch._location import Location

__all__ = ["BULK_CHUNK", "PAGE", "Action", "Transport", "connect"]

_T = TypeVar("_T")

PAGE = 5000
"""Documents per page of a scan (search_after) and per multi-get."""
BULK_CHUNK = 2000
"""Actions per bulk request."""

Action = tuple[dict[str, Any], "dict[str, Any] | None"]
"""One bulk action: its metadata line and its body (None for a delete)."""


def connect(loc: Location) -> Any:
    """An ``opensearchpy.OpenSearch`` client for ``loc`` (hosts, TLS, credentials)."""
    try:
        from opensearchpy import OpenSearch
    except ImportError:
        raise SetupError(
            "the OpenSearch engine needs opensearch-py: pip install 'refind[opensearch]'"
        ) from None
    kwargs: dict[str, Any] = {
        "hosts": loc.hosts,
        "timeout": 30,
        "max_retries": 2,  # the client tries other nodes at once; Transport.call retries with backoff after
        "retry_on_timeout": True,
        "http_compress": False,
        "pool_maxsize": 32,  # per node: the service's thread pool calls from 16 threads
    }
    if loc.username is not None:
        kwargs["http_auth"] = (loc.username, loc.password or "")
    if loc.api_key is not None:
        kwargs["headers"] = {"Authorization": f"ApiKey {loc.api_key}"}
    if loc.tls:
        kwargs["use_ssl"] = True
        kwargs["verify_certs"] = loc.verify
        kwargs["ssl_show_warn"] = loc.verify
        if loc.ca_certs:
            kwargs["ca_certs"] = loc.ca_certs
    return OpenSearch(**kwargs)


def retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is worth another try: a connection error or timeout, a 429 or a 5xx answer."""
    from opensearchpy.exceptions import ConnectionError as OSConnectionError
    from opensearchpy.exceptions import TransportError

    if isinstance(exc, OSConnectionError):  # includes timeouts
        return True
    if isinstance(exc, TransportError):
        status = exc.status_code
        return isinstance(status, int) and (status == 429 or status >= 500)
    return False


class Transport:
    """One client and the retry policy every call of the engine goes through. ``location`` is the
    redacted location errors name; ``closed`` is set when the store closes (calls then fail)."""

    def __init__(self, client: Any, location: str, retry_seconds: float) -> None:
        self.client = client
        self.location = location
        self.retry_seconds = float(retry_seconds)
        self.closed = False

    def check(self) -> None:
        if self.closed:
            raise StoreClosed("the store is closed; open a new Memory")

    def call(self, what: str, fn: Callable[[], _T]) -> _T:
        """``fn()`` with bounded retries (backoff) on connection errors, 429 and 5xx; then a StoreError."""
        from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

        self.check()
        try:
            for attempt in Retrying(
                retry=retry_if_exception(retryable),
                stop=stop_after_delay(self.retry_seconds),
                wait=wait_exponential(multiplier=0.1, max=2.0),
                reraise=True,
            ):
                with attempt:
                    return fn()
        except (StoreError, InvalidInput, AlreadyApplied, RequestTaken):
            raise
        except Exception as exc:
            from opensearchpy.exceptions import ConflictError, NotFoundError, TransportError

            if isinstance(exc, (ConflictError, NotFoundError)):  # answers the caller handles
                raise
            if isinstance(exc, TransportError) or retryable(exc):
                raise StoreError(
                    f"OpenSearch at {self.location} failed during {what}: {exc} (retried for up to "
                    f"{self.retry_seconds:.0f} s; check the cluster's health)"
                ) from exc
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def search(self, index: str, body: dict[str, Any], routing: str | None) -> dict[str, Any]:
        kw: dict[str, Any] = {"index": index, "body": body}
        if routing is not None:
            kw["routing"] = routing
        return self.call("search", lambda: self.client.search(**kw))  # type: ignore[no-any-return]

    def mget(self, index: str, docs: Sequence[tuple[str, str]], source: Any) -> list[dict[str, Any]]:
        """Documents by (routing, _id), realtime (what is committed, refreshed or not); found ones only."""
        out: list[dict[str, Any]] = []
        for i in range(0, len(docs), PAGE):
            part = [{"_id": d, "routing": r} for r, d in docs[i : i + PAGE]]
            got = self.call(
                "lookup", partial(self.client.mget, index=index, body={"docs": part}, _source=source)
            )
            out.extend(d for d in got["docs"] if d.get("found"))
        return out

    def bulk(self, actions: Sequence[Action], refresh: str, parallel: int = 1) -> list[tuple[int, Any]]:
        """One bulk request (in chunks of :data:`BULK_CHUNK`); items failing with 429 or 5xx are sent again
        (bounded by ``retry_seconds``); returns (status, item) per action.

        ``parallel`` > 1 sends up to that many chunks at once (the cluster indexes them on several write
        threads), but only when no document ``_id`` repeats across the actions: a later write of one id must
        land after the earlier one, which only one request at a time guarantees."""
        results: list[tuple[int, Any]] = [(0, None)] * len(actions)
        todo = list(range(len(actions)))
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.1
        if parallel > 1 and len(actions) > BULK_CHUNK:
            ids = [
                (next(iter(meta.values())).get("_index"), next(iter(meta.values())).get("_id"))
                for meta, _ in actions
            ]
            if len(set(ids)) < len(ids):
                parallel = 1
        while todo:
            again: list[int] = []
            parts = [todo[start : start + BULK_CHUNK] for start in range(0, len(todo), BULK_CHUNK)]
            for part, got in zip(parts, self._send_chunks(actions, parts, refresh, parallel), strict=True):
                for i, item in zip(part, got["items"], strict=True):
                    (result,) = item.values()
                    status = int(result.get("status", 500))
                    results[i] = (status, result)
                    if status == 429 or status >= 500:
                        again.append(i)
            todo = again
            if todo:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"OpenSearch at {self.location} kept refusing {len(todo)} write(s): {results[todo[0]][1]}"
                    )
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        return results

    def _send_chunks(
        self, actions: Sequence[Action], parts: list[list[int]], refresh: str, parallel: int
    ) -> list[dict[str, Any]]:
        """The bulk answer of each chunk of ``parts``, sent one at a time or ``parallel`` at once."""

        def send(part: list[int]) -> dict[str, Any]:
            lines: list[Any] = []
            for i in part:
                meta, body = actions[i]
                lines.append(meta)
                if body is not None:
                    lines.append(body)
            return self.call("write", partial(self.client.bulk, body=lines, refresh=refresh))  # type: ignore[no-any-return]

        if parallel <= 1 or len(parts) <= 1:
            return [send(part) for part in parts]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(
            max_workers=min(parallel, len(parts)), thread_name_prefix="refind-bulk"
        ) as pool:
            return list(pool.map(send, parts))  # the first failure raises, once every chunk has returned

    def msearch(
        self, index: str, searches: Sequence[tuple[str | None, dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """Several searches of ``index`` in one request: (routing, body) each; their answers, in order. A
        search the cluster failed is a StoreError, as one failed search is."""
        out: list[dict[str, Any]] = []
        for start in range(0, len(searches), 100):
            lines: list[Any] = []
            for routing, body in searches[start : start + 100]:
                lines.append({"index": index} if routing is None else {"index": index, "routing": routing})
                lines.append(body)
            got = self.call("search", partial(self.client.msearch, body=lines))
            for answer in got["responses"]:
                if "error" in answer:
                    raise StoreError(f"OpenSearch at {self.location} failed during search: {answer['error']}")
                out.append(answer)
        return out

    def refresh(self, index: str) -> None:
        """Make everything written to ``index`` searchable now."""
        self.call("refresh", partial(self.client.indices.refresh, index=index))

    def bulk_once(self, actions: Sequence[Action], refresh: str, timeout: float) -> None:
        """One bulk request, sent once, without retries (an undo: best effort); raises what the client raises."""
        lines: list[Any] = [x for meta, body in actions for x in ((meta,) if body is None else (meta, body))]
        self.client.bulk(body=lines, refresh=refresh, request_timeout=timeout)
