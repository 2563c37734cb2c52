"""A real OpenSearch dev cluster on this machine, for refind's tests and benchmarks.

    scripts/opensearch-dev fetch                           # resolve the jars once (Maven), compile the node
    scripts/opensearch-dev start --nodes 3 --dir out/os    # start, wait for green, print the URLs
    scripts/opensearch-dev status --dir out/os             # pids, ports, RSS, cluster health
    scripts/opensearch-dev kill --dir out/os --node 1      # kill -9 one node (crash tests)
    scripts/opensearch-dev stop --dir out/os               # SIGTERM, then SIGKILL after a grace period

Each node is its own JVM running ``DevNode`` (scripts/opensearch-node): an ``org.opensearch.node.Node`` with
the Netty4 and analysis-common plugins taken from the classpath, the way OpenSearch's own test framework
builds one, bound to 127.0.0.1, without the security plugin. Only the standard library is used here, so the
script runs with any Python 3.9+ and needs no virtual environment; Java (``JAVA_HOME`` or ``java`` on PATH)
and ``mvn`` are the only requirements. Nothing is downloaded but Maven Central artifacts.

DIR holds everything a cluster writes: ``cluster.json`` (pids, ports, URLs), ``node-N.log`` (each node's
log), ``node-N/`` (its config, data and temporary files). Starting again in the same DIR keeps the data.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NODE_PROJECT = ROOT / "scripts" / "opensearch-node"
POM = NODE_PROJECT / "pom.xml"
MAIN_SOURCE = NODE_PROJECT / "src" / "main" / "java" / "dev" / "refind" / "opensearch" / "DevNode.java"
MAIN_CLASS = "dev.refind.opensearch.DevNode"
DEFAULT_CACHE = ROOT / ".cache" / "opensearch"
CLUSTER_FILE = "cluster.json"
STAMP_FILE = "fetched.json"

LOG4J2_PROPERTIES = """\
# written by scripts/opensearch-dev: the node logs to stdout, which the script sends to DIR/node-N.log
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
# the deprecation logger would warn that this node is not a bundled-JDK distribution
logger.deprecation.name = org.opensearch.deprecation
logger.deprecation.level = error
"""


class DevError(Exception):
    """A failure the user can act on; main() prints it as one message and exits 1."""


def log(message: str) -> None:
    print(f"opensearch-dev: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------- tools and fetch


def opensearch_version() -> str:
    """The one place the version is written: ``<opensearch.version>`` in the node's pom.xml."""
    found = re.search(r"<opensearch\.version>([^<]+)</opensearch\.version>", POM.read_text(encoding="utf-8"))
    if not found:
        raise DevError(f"no <opensearch.version> in {POM}")
    return found.group(1).strip()


def java_tool(name: str) -> str | None:
    """``$JAVA_HOME/bin/NAME`` when JAVA_HOME is set, else NAME on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / name
        return str(candidate) if candidate.is_file() else None
    return shutil.which(name)


def missing_tools() -> list[str]:
    """The requirements that are absent (``java``, ``javac``, ``mvn``): empty when the cluster can run."""
    missing = [name for name in ("java", "javac") if java_tool(name) is None]
    if shutil.which("mvn") is None:
        missing.append("mvn")
    return missing


def cache_dir(args: argparse.Namespace) -> Path:
    base = Path(args.cache or os.environ.get("REFIND_OPENSEARCH_CACHE") or DEFAULT_CACHE)
    return base.resolve() / opensearch_version()


def _inputs_digest() -> str:
    h = hashlib.sha256()
    for path in (POM, MAIN_SOURCE):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def fetched(cache: Path) -> dict[str, Any] | None:
    """The stamp of a complete fetch of the current pom.xml and DevNode.java, else None."""
    try:
        stamp = json.loads((cache / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if stamp.get("inputs") != _inputs_digest() or not (cache / "classes").is_dir():
        return None
    return stamp


def fetch(cache: Path, maven_repo: str | None = None, force: bool = False) -> dict[str, Any]:
    """Resolve the node's jars into ``cache/lib`` and compile DevNode into ``cache/classes``.

    Idempotent: returns the existing stamp when pom.xml and DevNode.java have not changed. Holds a lock, so
    concurrent calls (two test sessions) fetch once; writes into a temporary folder and renames it, so an
    interrupted fetch never looks complete."""
    if missing_tools():
        raise DevError(f"{', '.join(missing_tools())} not found: install a JDK (17+) and Maven")
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = fetched(cache)
        if stamp is not None and not force:
            return stamp
        started = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix="fetch-", dir=cache))
        try:
            lib, classes = work / "lib", work / "classes"
            # -B and --no-transfer-progress: one line per problem, not per download
            mvn = ["mvn", "-B", "-q", "--no-transfer-progress", "-f", str(POM)]
            if maven_repo:
                mvn.append(f"-Dmaven.repo.local={Path(maven_repo).resolve()}")
            mvn += [
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={lib}",
            ]
            log(f"resolving OpenSearch {opensearch_version()} with Maven into {cache}")
            _run(mvn, "mvn could not resolve the OpenSearch jars (is Maven Central reachable?)")
            unpack_plugins(lib)
            javac = java_tool("javac")
            assert javac is not None
            _run(
                [
                    javac,
                    "-nowarn",
                    "--release",
                    "11",
                    "-cp",
                    f"{lib}/*",
                    "-d",
                    str(classes),
                    str(MAIN_SOURCE),
                ],
                f"javac could not compile {MAIN_SOURCE.relative_to(ROOT)}",
            )
            jars = sorted(lib.glob("*.jar"))
            stamp = {
                "version": opensearch_version(),
                "inputs": _inputs_digest(),
                "jars": len(jars),
                "bytes": sum(j.stat().st_size for j in jars),
                "seconds": round(time.monotonic() - started, 1),
                "maven_repo": str(Path(maven_repo).resolve()) if maven_repo else None,
            }
            (work / STAMP_FILE).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
            for name in ("lib", "classes", STAMP_FILE):
                old = cache / name
                if old.is_dir():
                    shutil.rmtree(old)
                elif old.exists():
                    old.unlink()
            for name in ("lib", "classes", STAMP_FILE):  # the stamp last: it marks the fetch complete
                (work / name).rename(cache / name)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log(f"fetched {stamp['jars']} jars ({stamp['bytes'] / 1e6:.1f} MB) in {stamp['seconds']} s")
        return stamp


def unpack_plugins(lib: Path) -> None:
    """Plugins published as zips (the k-NN plugin): their jars into ``lib``, the zip removed. A jar already
    in ``lib`` (the same dependency of OpenSearch itself) is kept as it is."""
    import zipfile

    for archive in sorted(lib.glob("*.zip")):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                base = Path(name).name
                if base.endswith(".jar") and not (lib / base).exists():
                    (lib / base).write_bytes(z.read(name))
        archive.unlink()


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip().splitlines()
        raise DevError(
            f"{what}; `{' '.join(cmd[:3])} ...` exited {done.returncode}:\n" + "\n".join(output[-30:])
        )


# --------------------------------------------------------------------------------------------- processes


def pid_alive(pid: int) -> bool:
    """True while ``pid`` is a running (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat[stat.rindex(")") + 2] not in "ZX"


def is_our_node(node: dict[str, Any]) -> bool:
    """True when the node's pid still runs DevNode on this node's home: a recycled pid is never signalled."""
    pid = node["pid"]
    if not pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the pid
    return MAIN_CLASS.encode() in cmdline and node["home"].encode() in cmdline


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports on 127.0.0.1 that are free now (the kernel's choice)."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in sockets:
            s.close()
    return ports


def check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise DevError(f"port {port} on 127.0.0.1 is in use ({exc.strerror}); choose another") from exc


def parse_size(text: str) -> int:
    found = re.fullmatch(r"(\d+)([kKmMgG]?)", text.strip())
    if not found:
        raise DevError(f"--heap {text!r}: expected a JVM size such as 512m or 1g")
    number, unit = int(found.group(1)), found.group(2).lower()
    return number * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]


def tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return f"    ({path} not found)"
    return "\n".join("    " + line for line in text[-lines:]) or "    (empty)"


# ----------------------------------------------------------------------------------------- cluster state


def read_cluster(directory: Path) -> dict[str, Any]:
    path = directory / CLUSTER_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DevError(
            f"no cluster in {directory} ({path} not found); start one with `start --dir`"
        ) from None


def write_cluster(directory: Path, info: dict[str, Any]) -> None:
    tmp = directory / (CLUSTER_FILE + ".tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    tmp.replace(directory / CLUSTER_FILE)


def http_json(url: str, timeout: float = 5.0) -> dict[str, Any]:
    """GET ``url`` as JSON; a 408 (cluster health timed out) still carries the health body."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 408:
            return json.loads(exc.read())
        raise


def health(
    url: str, wait_for: str | None = None, nodes: int | None = None, seconds: int = 2
) -> dict[str, Any]:
    query = f"timeout={seconds}s"
    if wait_for:
        query += f"&wait_for_status={wait_for}"
    if nodes:
        query += f"&wait_for_nodes={nodes}"
    return http_json(f"{url}/_cluster/health?{query}", timeout=seconds + 5)


def node_settings(info: dict[str, Any], index: int, home: Path) -> dict[str, Any]:
    node = info["nodes"][index]
    settings: dict[str, Any] = {
        "cluster.name": info["cluster_name"],
        "node.name": node["name"],
        "network.host": "127.0.0.1",
        "http.port": node["http_port"],
        "transport.port": node["transport_port"],
        "path.data": str(home / "data"),
        "path.logs": str(home / "logs"),
        # dev machines run with little free disk at times; shards should allocate anyway
        "cluster.routing.allocation.disk.threshold_enabled": False,
        "bootstrap.memory_lock": False,
    }
    if len(info["nodes"]) == 1:
        settings["discovery.type"] = "single-node"
    else:
        settings["discovery.seed_hosts"] = [f"127.0.0.1:{n['transport_port']}" for n in info["nodes"]]
        settings["cluster.initial_cluster_manager_nodes"] = [n["name"] for n in info["nodes"]]
    return settings


def jvm_command(cache: Path, home: Path, heap: str, owner_pid: int | None) -> list[str]:
    java = java_tool("java")
    assert java is not None
    direct = max(parse_size(heap) // 2, 64 << 20)  # as OpenSearch's JvmErgonomics: half the heap
    command = [
        java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        f"-XX:MaxDirectMemorySize={direct}",
        "-XX:+UseG1GC",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:-OmitStackTraceInFastThrow",
        "-Xss1m",
        "-Dfile.encoding=UTF-8",
        "-Djava.awt.headless=true",
        f"-Djava.io.tmpdir={home / 'tmp'}",
        # from OpenSearch's own jvm.options
        "-Dlog4j2.formatMsgNoLookups=true",
        "-Dlog4j.shutdownHookEnabled=false",
        "-Dlog4j2.disable.jmx=true",
        "-Dio.netty.noUnsafe=true",
        "-Dio.netty.noKeySetOptimization=true",
        "-Dio.netty.recycler.maxCapacityPerThread=0",
        "-Djna.nosys=true",
    ]
    if owner_pid:
        command.append(f"-Drefind.devnode.owner_pid={owner_pid}")
    command += ["-cp", f"{cache / 'classes'}{os.pathsep}{cache / 'lib'}/*", MAIN_CLASS, str(home)]
    return command


# ------------------------------------------------------------------------------------------------ commands


def cmd_fetch(args: argparse.Namespace) -> int:
    cache = cache_dir(args)
    before = fetched(cache) if not args.force else None
    stamp = fetch(cache, maven_repo=args.maven_repo, force=args.force)
    if before is not None:
        log(f"already fetched: {stamp['jars']} jars ({stamp['bytes'] / 1e6:.1f} MB) in {cache}")
    print(cache)
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    if args.nodes not in (1, 3):
        raise DevError("--nodes must be 1 or 3")
    directory = Path(args.dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    previous = None
    if (directory / CLUSTER_FILE).exists():
        previous = read_cluster(directory)
        running = [n for n in previous["nodes"] if is_our_node(n)]
        if running:
            pids = ", ".join(str(n["pid"]) for n in running)
            raise DevError(
                f"a cluster is already running in {directory} (pids {pids}); stop it first: stop --dir"
            )
        if len(previous["nodes"]) != args.nodes:
            raise DevError(
                f"{directory} holds the data of a {len(previous['nodes'])}-node cluster; "
                f"use another --dir or delete this one for a {args.nodes}-node cluster"
            )
    parse_size(args.heap)
    cache = cache_dir(args)
    fetch(cache)

    n = args.nodes
    if args.http_port:
        http_ports = [args.http_port + i for i in range(n)]
    if args.transport_port:
        transport_ports = [args.transport_port + i for i in range(n)]
    chosen = free_ports(2 * n)
    if not args.http_port:
        http_ports = chosen[:n]
    if not args.transport_port:
        transport_ports = chosen[n:]
    if len(set(http_ports + transport_ports)) != 2 * n:
        raise DevError(
            f"HTTP ports {http_ports} and transport ports {transport_ports} overlap; choose others"
        )
    for port in http_ports + transport_ports:
        check_port_free(port)

    # one name per folder: two developers' clusters on one machine never join each other, a restart rejoins
    name = (
        previous["cluster_name"]
        if previous
        else "refind-dev-" + hashlib.sha256(bytes(directory)).hexdigest()[:10]
    )
    info: dict[str, Any] = {
        "version": opensearch_version(),
        "cluster_name": name,
        "dir": str(directory),
        "heap": args.heap,
        "owner_pid": args.owner_pid,
        "nodes": [
            {
                "name": f"node-{i}",
                "pid": 0,
                "http_port": http_ports[i],
                "transport_port": transport_ports[i],
                "url": f"http://127.0.0.1:{http_ports[i]}",
                "home": str(directory / f"node-{i}"),
                "log": str(directory / f"node-{i}.log"),
            }
            for i in range(n)
        ],
    }
    info["urls"] = [node["url"] for node in info["nodes"]]
    info["url"] = info["urls"][0]

    started = time.monotonic()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for i, node in enumerate(info["nodes"]):
            home = Path(node["home"])
            (home / "config").mkdir(parents=True, exist_ok=True)
            (home / "tmp").mkdir(exist_ok=True)
            settings = node_settings(info, i, home)
            (home / "config" / "opensearch.yml").write_text(
                "# written by scripts/opensearch-dev start\n"
                + "".join(f"{key}: {json.dumps(value)}\n" for key, value in settings.items()),
                encoding="utf-8",
            )
            (home / "config" / "log4j2.properties").write_text(LOG4J2_PROPERTIES, encoding="utf-8")
            with open(node["log"], "wb") as out:
                process = subprocess.Popen(
                    jvm_command(cache, home, args.heap, args.owner_pid),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=home,
                    start_new_session=True,  # Ctrl-C in this terminal does not reach the node
                )
            processes.append(process)
            node["pid"] = process.pid
        info["started_at"] = time.time()
        write_cluster(directory, info)
        log(f"starting {n} node(s) of OpenSearch {info['version']} in {directory} (heap {args.heap} each)")
        wait_green(info, processes, started, args.timeout)
    except BaseException:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        for process in processes:
            process.wait()
        raise
    info["seconds_to_green"] = round(time.monotonic() - started, 1)
    write_cluster(directory, info)
    log(f"cluster {name} is green: {n} node(s) in {info['seconds_to_green']} s; {directory / CLUSTER_FILE}")
    for url in info["urls"]:
        print(url)
    return 0


def wait_green(
    info: dict[str, Any], processes: list[subprocess.Popen[bytes]], started: float, timeout: float
) -> None:
    n = len(info["nodes"])
    last: Any = "no answer yet"
    while True:
        for node, process in zip(info["nodes"], processes, strict=True):
            if process.poll() is not None:
                raise DevError(
                    f"{node['name']} (pid {process.pid}) exited with code {process.returncode} before the cluster "
                    f"was green. Last lines of {node['log']}:\n{tail(Path(node['log']))}"
                )
        remaining = timeout - (time.monotonic() - started)
        if remaining <= 0:
            logs = "\n".join(f"  {node['log']}:\n{tail(Path(node['log']), 15)}" for node in info["nodes"])
            raise DevError(f"the cluster was not green within {timeout:.0f} s (last health: {last}).\n{logs}")
        # Every node's own HTTP must answer: a node joins the cluster over transport before it binds HTTP,
        # so "green with N nodes" from one node does not mean the others accept requests yet.
        ready = 0
        for url in info["urls"]:
            try:
                body = health(url, wait_for="green", nodes=n, seconds=max(1, min(5, int(remaining))))
            except (OSError, ValueError) as exc:
                last = f"{url}: {exc}"
                break
            last = {k: body.get(k) for k in ("status", "number_of_nodes", "unassigned_shards")}
            if body.get("status") != "green" or body.get("number_of_nodes") != n or body.get("timed_out"):
                break
            ready += 1
        if ready == n:
            return
        time.sleep(0.5)


def stop_nodes(nodes: list[dict[str, Any]], grace: float) -> list[str]:
    """SIGTERM every node still running, SIGKILL those alive after ``grace`` seconds; wait until all are gone."""
    alive = [n for n in nodes if is_our_node(n)]
    for node in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(node["pid"], signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [n for n in alive if pid_alive(n["pid"])]
    killed = []
    for node in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(node["pid"], signal.SIGKILL)
        killed.append(node["name"])
    deadline = time.monotonic() + 30
    while any(pid_alive(n["pid"]) for n in alive):
        if time.monotonic() > deadline:
            raise DevError(
                "nodes survived SIGKILL: " + ", ".join(str(n["pid"]) for n in alive if pid_alive(n["pid"]))
            )
        time.sleep(0.1)
    return killed


def cmd_stop(args: argparse.Namespace) -> int:
    directory = Path(args.dir).resolve()
    info = read_cluster(directory)
    running = [n for n in info["nodes"] if is_our_node(n)]
    killed = stop_nodes(info["nodes"], args.grace)
    info["stopped_at"] = time.time()
    write_cluster(directory, info)
    note = f" ({', '.join(killed)} needed SIGKILL after {args.grace:.0f} s)" if killed else ""
    log(f"stopped {len(running)} node(s) in {directory}{note}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    directory = Path(args.dir).resolve()
    info = read_cluster(directory)
    cluster: dict[str, Any] | None = None
    for node in info["nodes"]:
        node["running"] = is_our_node(node)
        node["rss_mb"] = round(rss_mb(node["pid"]) or 0, 1) if node["running"] else None
    for node in info["nodes"]:
        if node["running"]:
            try:
                cluster = health(node["url"], seconds=1)
                break
            except (OSError, ValueError):
                continue
    info["health"] = cluster
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        state = f"{cluster['status']}, {cluster['number_of_nodes']} node(s)" if cluster else "not answering"
        print(f"cluster {info['cluster_name']} (OpenSearch {info['version']}) in {directory}: {state}")
        for node in info["nodes"]:
            running = f"running, RSS {node['rss_mb']:.0f} MB" if node["running"] else "not running"
            print(
                f"  {node['name']}  pid {node['pid']:<7} {running:<22} {node['url']}  "
                f"transport {node['transport_port']}  log {node['log']}"
            )
    return 0 if cluster is not None and all(n["running"] for n in info["nodes"]) else 1


def cmd_kill(args: argparse.Namespace) -> int:
    directory = Path(args.dir).resolve()
    info = read_cluster(directory)
    if not 0 <= args.node < len(info["nodes"]):
        raise DevError(f"--node {args.node}: this cluster has nodes 0..{len(info['nodes']) - 1}")
    node = info["nodes"][args.node]
    name = args.signal.upper().removeprefix("SIG")
    try:
        sig = signal.Signals[f"SIG{name}"]
    except KeyError:
        raise DevError(f"--signal {args.signal}: not a signal name (KILL, TERM, STOP, CONT, ...)") from None
    if not is_our_node(node):
        raise DevError(f"{node['name']} (pid {node['pid']}) is not running")
    os.kill(node["pid"], sig)
    if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
        deadline = time.monotonic() + (30 if sig != signal.SIGKILL else 10)
        while pid_alive(node["pid"]):
            if time.monotonic() > deadline:
                raise DevError(f"{node['name']} (pid {node['pid']}) is still running after SIG{name}")
            time.sleep(0.1)
    log(f"sent SIG{name} to {node['name']} (pid {node['pid']})")
    return 0


# ---------------------------------------------------------------------------------------------------- main


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="opensearch-dev",
        description="A real OpenSearch dev cluster (1 or 3 local JVMs) for refind's tests and benchmarks.\n\n"
        + (__doc__ or "").split("\n\n")[1],
        epilog="Requires Java 17+ (JAVA_HOME or java on PATH) and mvn. See docs/scale-out.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--cache",
        help="jar cache (default $REFIND_OPENSEARCH_CACHE or .cache/opensearch in the repo); the version is a subfolder",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    f = sub.add_parser("fetch", help="resolve the jars with Maven and compile the node (fast when done)")
    f.add_argument("--maven-repo", help="a Maven local repository instead of ~/.m2 (to measure a cold fetch)")
    f.add_argument("--force", action="store_true", help="fetch again even when the cache is complete")
    f.set_defaults(run=cmd_fetch)

    s = sub.add_parser("start", help="start a cluster, wait until it is green, print its URL(s)")
    s.add_argument("--nodes", type=int, default=1, choices=(1, 3), help="number of nodes (default 1)")
    s.add_argument("--dir", required=True, help="folder for cluster.json, logs and data")
    s.add_argument("--http-port", type=int, help="HTTP port of node 0 (node N: +N); default free ports")
    s.add_argument(
        "--transport-port", type=int, help="transport port of node 0 (node N: +N); default free ports"
    )
    s.add_argument("--heap", default="512m", help="JVM heap per node (default 512m)")
    s.add_argument("--timeout", type=float, default=180, help="seconds to wait for green (default 180)")
    s.add_argument(
        "--owner-pid", type=int, help="nodes exit by themselves when this process is gone (test fixtures)"
    )
    s.set_defaults(run=cmd_start)

    t = sub.add_parser("stop", help="stop every node: SIGTERM, SIGKILL after the grace period")
    t.add_argument("--dir", required=True)
    t.add_argument("--grace", type=float, default=30, help="seconds between SIGTERM and SIGKILL (default 30)")
    t.set_defaults(run=cmd_stop)

    st = sub.add_parser("status", help="pids, ports, RSS and cluster health; exit 1 unless all nodes run")
    st.add_argument("--dir", required=True)
    st.add_argument("--json", action="store_true", help="cluster.json with running, rss_mb and health")
    st.set_defaults(run=cmd_status)

    k = sub.add_parser("kill", help="send a signal to one node (crash tests); waits until it is gone")
    k.add_argument("--dir", required=True)
    k.add_argument("--node", type=int, required=True, help="node number, 0-based")
    k.add_argument("--signal", default="KILL", help="signal name (default KILL)")
    k.set_defaults(run=cmd_kill)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except DevError as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
