"""``refind-http``: refind's search through its HTTP service (``python -m refind.server``), the way the
Agent Memory Leaderboard drives it: every session goes in through ``POST /add``, every question through
``POST /search``.

Sandboxed: each haystack gets a server of its own on a fresh temporary index and a free loopback port, with
a random API key; the server is stopped and its directory removed in ``teardown`` (also when ``init``
fails, and at interpreter exit for anything left over). One index per haystack matters: Lucene's BM25
statistics are index-wide, so other haystacks in the same index would change the scores. The server gets
``REFIND_TOP_K=k`` so that a round fetches k hits, as the in-process ``refind`` adapter asks; the other
settings come from the same ``REFIND_*`` environment. Starting a server costs about a second (the JVM).

With ``REFIND_BASE_URL`` set, that server is used instead (key from ``REFIND_API_KEY``, sent as
``REFIND_AUTH`` says: ``bearer`` (default), ``token`` or ``x-api-key``); each haystack is then one user,
deleted afterwards, and BM25 statistics are shared with whatever else that index holds, so the numbers
can differ from ``refind``'s.

Add requests follow the contract: at most 20 messages or 2,000 words, messages in order. Two
deviations, both so that the server stores exactly what the in-process adapter's ``import_sessions``
stores (and renders the same evidence text): a message's timestamp is its date as the dataset wrote it
("1:56 pm on 8 May, 2023"; its own, else the previous message's, else the session's), which the service
accepts beside Unix ms and shows as written, and its speaker goes in ``name`` (OpenAI's message field,
a refind extension). The contract carries no message ids, so the server numbers each session's turns
0, 1, ... in the order sent; an item's id ``session#first-last`` maps back to the harness's message ids by
position. Search asks ``top_k=1000`` (the service's maximum), so the items are the whole evidence, as the
in-process adapter returns it; an item's text is the server's ``content``.

For a reader's token budget the items are packed like any hit list (rank order, first fit;
:mod:`benchmarks.packing`): that is what the leaderboard gets, since it never sends ``max_tokens`` (a refind
extension of ``POST /search`` that packs as ``SearchResult.to_text`` does).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.adapters.base import AdapterConfig, RankedItem
from benchmarks.datasets import Question, Session

__all__ = [
    "RefindHTTPAdapter",
    "SpawnedServer",
    "auth_headers",
    "chunk_messages",
    "is_loopback_url",
    "message_times",
    "session_messages",
]

MAX_MESSAGES = 20
MAX_WORDS = 2000
SEARCH_TOP_K = 1000
VECTORS_TIMEOUT_S = 3600.0
"""How long a haystack may take to be embedded by the server before the adapter gives up."""
_ROOT = Path(__file__).resolve().parents[2]


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is localhost or a loopback address."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def auth_headers(api_key: str | None, scheme: str = "bearer") -> dict[str, str]:
    """The header that carries ``api_key`` in ``scheme`` (``bearer``, ``token``, ``x-api-key``)."""
    if not api_key:
        return {}
    if scheme == "x-api-key":
        return {"X-Api-Key": api_key}
    if scheme in {"bearer", "token"}:
        return {"Authorization": f"{scheme.capitalize()} {api_key}"}
    raise ValueError(f"unknown auth scheme {scheme!r}; use bearer, token or x-api-key")


# ---------------------------------------------------------------------------------------------- server

_LIVE: weakref.WeakSet[SpawnedServer] = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop()


class SpawnedServer:
    """``python -m refind.server`` in a child process on 127.0.0.1 and a free port (``--port 0``; the child
    reports the port it bound through ``--port-file``). ``start()`` returns once ``GET /health`` answers.

    ``data_dir`` is the index directory (or a store URL such as ``opensearch://host:port/prefix``); ``args`` more server flags; ``env`` overrides ``base_env`` (default:
    this process's environment); ``api_key`` is passed as ``REFIND_API_KEY``, never on the command line. Output goes to ``log_path``
    (default: ``server.log`` beside the index). ``stop()`` sends SIGTERM (a clean shutdown), then SIGKILL
    after ``timeout``; ``kill()`` is SIGKILL at once (crash tests).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        base_env: Mapping[str, str] | None = None,
        api_key: str | None = None,
        log_path: str | os.PathLike[str] | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.location = str(data_dir)  # an index directory, or a store URL (opensearch://...: --store)
        self.data_dir = Path(data_dir)
        self.args = list(args)
        self.env = dict(env or {})
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.api_key = api_key
        self.log_path = (
            Path(log_path) if log_path else self.data_dir.parent / f"{self.data_dir.name}.server.log"
        )
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the server is not running")
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        """What the server printed so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def start(self) -> SpawnedServer:
        import httpx

        port_file = self.log_path.with_suffix(".port")
        port_file.unlink(missing_ok=True)
        env = {**self.base_env, **self.env}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
        if self.api_key is not None:
            env["REFIND_API_KEY"] = self.api_key
        where = ["--store", self.location] if "://" in self.location else ["--data", str(self.data_dir)]
        cmd = [sys.executable, "-m", "refind.server", *where, "--host", "127.0.0.1"]
        cmd += ["--port", "0", "--port-file", str(port_file), *self.args]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        _LIVE.add(self)
        deadline = time.monotonic() + self.startup_timeout
        try:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"refind server exited with {self.process.returncode} before it was ready:\n"
                        + self.log()[-2000:]
                    )
                if self.port is None and port_file.exists():
                    text = port_file.read_text().strip()
                    self.port = int(text) if text.isdigit() else None
                if self.port is not None:
                    with contextlib.suppress(httpx.HTTPError):
                        if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                            return self
                if time.monotonic() > deadline:
                    raise RuntimeError(f"refind server not ready after {self.startup_timeout:.0f} s")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, wait up to ``timeout`` s, then SIGKILL; returns the exit code (None if never started)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        _LIVE.discard(self)
        self.port = None
        return process.returncode

    def kill(self) -> None:
        """SIGKILL, no shutdown: what a crash looks like to the index."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        _LIVE.discard(self)
        self.port = None

    def __enter__(self) -> SpawnedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------------- adapter


def chunk_messages(
    messages: Sequence[Any], max_messages: int = MAX_MESSAGES, max_words: int = MAX_WORDS
) -> Iterator[list[Any]]:
    """Consecutive runs of at most ``max_messages`` messages and ``max_words`` words (a longer message
    goes alone). Items are messages or dicts with a ``content``."""
    chunk: list[Any] = []
    words = 0
    for m in messages:
        content = m["content"] if isinstance(m, Mapping) else m.content
        n = len(str(content).split())
        if chunk and (len(chunk) >= max_messages or words + n > max_words):
            yield chunk
            chunk, words = [], 0
        chunk.append(m)
        words += n
    if chunk:
        yield chunk


def message_times(session: Session) -> list[tuple[int | None, str | None]]:
    """Each message's (epoch ms, time as written) as ``Memory`` assigns them on a whole-session import:
    its own, else the previous message's, else the session's ((None, None): the server's clock)."""
    out: list[tuple[int | None, str | None]] = []
    prev: tuple[int | None, str | None] = (None, None)
    for m in session.messages:
        if m.timestamp is not None:
            prev = (m.timestamp, m.time_text)
        elif prev[0] is not None:
            prev = (prev[0], m.time_text or prev[1])
        elif session.date is not None:
            prev = (session.date, m.time_text or session.date_text)
        else:
            prev = (None, m.time_text)
        out.append(prev)
    return out


def session_messages(session: Session) -> list[dict[str, Any]]:
    """A session's messages as Add request messages, in order: ``role``, ``content``, ``timestamp`` (the
    date as written when there is one, else epoch ms; see :func:`message_times`) and ``name`` (speaker)."""
    out = []
    for m, (ms, text) in zip(session.messages, message_times(session), strict=True):
        body: dict[str, Any] = {"role": m.role, "content": m.content}
        if text or ms is not None:
            body["timestamp"] = text or ms
        if m.speaker:
            body["name"] = m.speaker
        out.append(body)
    return out


@dataclass
class _State:
    client: Any
    user: str
    sessions: dict[str, Session]
    server: SpawnedServer | None = None
    tmp: Path | None = None
    remote: bool = False


class RefindHTTPAdapter:
    name = "refind-http"

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}

    @staticmethod
    def unavailable() -> str | None:
        missing = [m for m in ("httpx",) if importlib.util.find_spec(m) is None]
        if not os.environ.get("REFIND_BASE_URL"):
            missing += [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
        if missing:
            return f"needs {', '.join(missing)}: pip install 'refind[serve]' httpx"
        return None

    def init(self, sessions: Sequence[Session], config: AdapterConfig) -> _State:
        import httpx

        base = os.environ.get("REFIND_BASE_URL")
        server = tmp = None
        try:
            if base:
                key = os.environ.get("REFIND_API_KEY")
                headers = auth_headers(key, os.environ.get("REFIND_AUTH", "bearer"))
                user = f"refind-http:{uuid.uuid4().hex}"
            else:
                tmp = Path(tempfile.mkdtemp(prefix="refind-http-"))
                key = secrets.token_urlsafe(24)
                server = SpawnedServer(
                    tmp / "index",
                    args=["--auth", "bearer", "--no-access-log", "--log-level", "warning"],
                    env={"REFIND_TOP_K": str(config.k)},
                    api_key=key,
                ).start()
                base, headers, user = server.url, auth_headers(key, "bearer"), "haystack"
            client = httpx.Client(base_url=base, headers=headers, timeout=httpx.Timeout(300.0, connect=10.0))
            state = _State(
                client,
                user,
                {s.id: s for s in sessions},
                server,
                tmp,
                remote=server is None,
            )
        except BaseException:
            if server is not None:
                server.stop()
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            for s in sessions:
                self._add_session(state, s)
            embedder = self._wait_for_vectors(state)
        except BaseException:
            self.teardown(state)
            raise
        self.info = {
            "server": "remote" if state.remote else "spawned per haystack",
            "embedder": embedder or "none (words only)",
            "chunk": f"<= {MAX_MESSAGES} messages, <= {MAX_WORDS} words",
            "search_top_k": SEARCH_TOP_K,
        }
        return state

    @staticmethod
    def _wait_for_vectors(state: _State, timeout_s: float = VECTORS_TIMEOUT_S) -> str | None:
        """Wait until the server has embedded every message added (``/v1/stats``), so that its searches by
        meaning see the whole haystack as the in-process adapter's do; the server's embedder (None: none)."""
        deadline = time.monotonic() + timeout_s
        while True:
            r = state.client.get("/v1/stats")
            _raise_for(r, "stats")
            stats = r.json()
            if not stats.get("awaiting_vectors"):
                return stats.get("embedder")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the server still had {stats['awaiting_vectors']} messages awaiting vectors after "
                    f"{timeout_s:.0f} s"
                )
            time.sleep(0.2)

    def _add_session(self, state: _State, session: Session) -> None:
        for n, chunk in enumerate(chunk_messages(session_messages(session))):
            r = state.client.post(
                "/add",
                json={
                    "request_id": f"{state.user}:{session.id}:chunk-{n}",
                    "user_id": state.user,
                    "session_id": session.id,
                    "messages": chunk,
                },
            )
            _raise_for(r, "add")

    def query(self, question: Question, state: _State, k: int) -> list[RankedItem]:
        body: dict[str, Any] = {"query": question.text, "user_id": state.user, "top_k": SEARCH_TOP_K}
        if question.now is not None:
            body["now"] = question.now
        r = state.client.post("/search", json=body)
        _raise_for(r, "search")
        items = []
        for item in r.json()["data"]:
            sid, lo, hi = _parse_id(str(item["id"]))
            turns = state.sessions[sid].messages[lo : hi + 1]
            items.append(
                RankedItem(
                    session_id=sid,
                    score=float(item.get("score") or 0.0),
                    text=str(item["content"]),
                    turn_ids=tuple(m.id for m in turns if m.id is not None),
                )
            )
        return items

    def teardown(self, state: _State) -> None:
        try:
            if state.remote:
                with contextlib.suppress(Exception):
                    state.client.delete(f"/v1/users/{state.user}")
            state.client.close()
        finally:
            if state.server is not None:
                state.server.stop()
            if state.tmp is not None:
                shutil.rmtree(state.tmp, ignore_errors=True)


def _parse_id(item_id: str) -> tuple[str, int, int]:
    sid, sep, span = item_id.rpartition("#")
    lo, dash, hi = span.partition("-")
    if not sep or not dash or not lo.isdigit() or not hi.isdigit():
        raise ValueError(f"unexpected item id {item_id!r}; expected 'session#first-last'")
    return sid, int(lo), int(hi)


def _raise_for(response: Any, what: str) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"{what}: HTTP {response.status_code}: {response.text[:300]}")
