"""Real OpenSearch dev clusters for tests: ``scripts/opensearch-dev`` behind a context manager and fixtures.

A session-wide 1-node cluster is the ``opensearch`` fixture (tests/conftest.py); a test module that needs
three nodes starts its own:

    from tests.opensearch_helpers import DevCluster, start_cluster

    def test_health(opensearch: DevCluster) -> None:
        with opensearch.client() as client:
            assert client.cluster.health()["status"] == "green"

    @pytest.fixture(scope="module")
    def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
        with start_cluster(tmp_path_factory.mktemp("os3"), nodes=3) as cluster:
            yield cluster

The first use runs ``opensearch-dev fetch`` (Maven; about a minute from an empty ~/.m2, instant after). The
clusters are stopped on exit whatever happens, and their nodes watch this test process (``--owner-pid``),
so even a test run killed with SIGKILL leaves no JVM behind.

When Java (``java``, ``javac``) or ``mvn`` is missing the tests that use a cluster are skipped with that
reason; with ``REFIND_REQUIRE_OPENSEARCH=1`` (CI) they fail instead. Any other problem (a fetch or a start
that fails) is an error, never a skip.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.needs import skip_or_fail

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "opensearch_dev.py"
REQUIRE_ENV = "REFIND_REQUIRE_OPENSEARCH"
FETCH_TIMEOUT = 900  # seconds; a cold fetch takes about a minute here
START_TIMEOUT = 240  # seconds to green, 3 JVMs on a shared 2-core machine included


class DevClusterError(RuntimeError):
    """``scripts/opensearch-dev`` failed; the message carries its stderr (with the nodes' log tails)."""


def unavailable_reason() -> str | None:
    """Why a dev cluster cannot run here (Java or Maven missing), or None when it can."""
    java_home = os.environ.get("JAVA_HOME")
    missing = []
    for tool in ("java", "javac"):
        found = (Path(java_home) / "bin" / tool).is_file() if java_home else shutil.which(tool) is not None
        if not found:
            missing.append(f"{tool} (JAVA_HOME={java_home})" if java_home else tool)
    if shutil.which("mvn") is None:
        missing.append("mvn")
    if not missing:
        return None
    return (
        f"OpenSearch dev cluster unavailable: {', '.join(missing)} not found; install a JDK 17+ and Maven "
        f"(set {REQUIRE_ENV}=1 to make this a failure)"
    )


def require_tools() -> None:
    """Skip the calling test when Java or Maven is missing, or fail when ``REFIND_REQUIRE_OPENSEARCH=1``."""
    skip_or_fail(unavailable_reason(), REQUIRE_ENV)


def run_script(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``scripts/opensearch-dev ARGS`` with this interpreter; raise DevClusterError when it fails."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise DevClusterError(f"opensearch-dev {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


_fetched = False


def fetch() -> None:
    """``opensearch-dev fetch`` once per test process (idempotent and fast when the cache is complete)."""
    global _fetched
    if not _fetched:
        run_script("fetch", timeout=FETCH_TIMEOUT)
        _fetched = True


@dataclass
class DevCluster:
    """A running dev cluster: what ``DIR/cluster.json`` says, and ways to talk to it and to break it."""

    dir: Path
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.info:
            self.reload()

    def reload(self) -> dict[str, Any]:
        self.info = json.loads((self.dir / "cluster.json").read_text(encoding="utf-8"))
        return self.info

    @property
    def url(self) -> str:
        return str(self.info["url"])

    @property
    def urls(self) -> list[str]:
        return list(self.info["urls"])

    @property
    def nodes(self) -> list[dict[str, Any]]:
        return list(self.info["nodes"])

    def client(self, nodes: list[int] | None = None, **kwargs: Any) -> OpenSearch:
        """An opensearch-py client for all nodes, or for the given node numbers (close it when done)."""
        from opensearchpy import OpenSearch

        hosts = self.urls if nodes is None else [self.urls[i] for i in nodes]
        kwargs.setdefault("timeout", 60)
        return OpenSearch(hosts=hosts, **kwargs)

    def status(self) -> dict[str, Any]:
        """``opensearch-dev status --json``: cluster.json with ``running`` and ``rss_mb`` per node, ``health``."""
        done = run_script("status", "--dir", str(self.dir), "--json", check=False)
        return json.loads(done.stdout)

    def kill(self, node: int, signal: str = "KILL") -> None:
        """Send ``signal`` to one node (``opensearch-dev kill``); returns when a KILL/TERM'd node is gone."""
        run_script("kill", "--dir", str(self.dir), "--node", str(node), "--signal", signal)

    def stop(self) -> None:
        """Stop every node (SIGTERM, SIGKILL after 30 s); idempotent."""
        run_script("stop", "--dir", str(self.dir), timeout=120)


@contextmanager
def start_cluster(
    directory: Path, nodes: int = 1, heap: str = "512m", timeout: float = START_TIMEOUT
) -> Iterator[DevCluster]:
    """Start a ``nodes``-node cluster in ``directory``, wait for green, stop it on exit whatever happens.

    Skips (or fails, see ``require_tools``) when Java or Maven is missing; fetches the jars on first use."""
    require_tools()
    fetch()
    directory.mkdir(parents=True, exist_ok=True)
    args = ["start", "--nodes", str(nodes), "--dir", str(directory), "--heap", heap]
    args += ["--timeout", str(timeout), "--owner-pid", str(os.getpid())]
    try:
        run_script(*args, timeout=timeout + 60)
        yield DevCluster(directory)
    finally:
        if (directory / "cluster.json").exists():
            run_script("stop", "--dir", str(directory), timeout=120)


_session: DevCluster | None = None
_session_lock = threading.Lock()


def session_cluster() -> DevCluster:
    """The test process's 1-node cluster, started on first use and stopped when the process exits (the
    ``opensearch`` fixture and the OpenSearch entry of tests/engines.py share it: one node per run)."""
    global _session
    with _session_lock:
        if _session is None:
            require_tools()
            fetch()
            directory = Path(tempfile.mkdtemp(prefix="refind-os-"))
            args = ["start", "--nodes", "1", "--dir", str(directory), "--heap", "512m"]
            args += ["--timeout", str(START_TIMEOUT), "--owner-pid", str(os.getpid())]
            try:
                run_script(*args, timeout=START_TIMEOUT + 60)
            except BaseException:
                if (directory / "cluster.json").exists():
                    run_script("stop", "--dir", str(directory), timeout=120, check=False)
                raise
            _session = DevCluster(directory)
            atexit.register(lambda: run_script("stop", "--dir", str(directory), timeout=120, check=False))
        return _session
