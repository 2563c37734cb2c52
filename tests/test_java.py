"""refind's Java engine: the shipped jar is what its sources build to (so a change to the sources cannot be
forgotten), and it loads into the JVM refind starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from refind.store._jvm import ENGINE_JAR
from tests.conftest import PYTHON, ROOT


def _javac() -> str | None:
    for home in (os.environ.get("JAVAC_HOME"), "/usr/lib/jvm/temurin-25-jdk-amd64"):
        if home and (Path(home) / "bin" / "javac").exists():
            return home
    return None


def _classes(jar: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(jar) as z:
        return {n: z.read(n) for n in z.namelist() if n.endswith(".class")}


@pytest.mark.slow
def test_the_shipped_jar_is_built_from_the_sources(tmp_path: Path) -> None:
    home = _javac()
    if home is None and shutil.which("javac") is None:
        pytest.skip("no JDK with javac here (set JAVAC_HOME to a JDK 21+); the jar cannot be rebuilt")
    env = {**os.environ, "PYTHON": PYTHON, **({"JAVAC_HOME": home} if home else {})}
    done = subprocess.run(
        ["bash", "scripts/build-java.sh", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    built = _classes(tmp_path / "refind-lucene.jar")
    assert built, "the build made no classes"
    assert built == _classes(ENGINE_JAR), (
        "refind-lucene.jar is stale: run scripts/build-java.sh and commit it"
    )


def test_the_shipped_jar_holds_the_engine_only() -> None:
    """The benchmarks' Java (the import benchmark's Lucene-alone writer) is not refind's: it is compiled on
    demand from benchmarks/java (benchmarks/javac.py), never shipped."""
    names = _classes(ENGINE_JAR)
    assert names and all(n.startswith("io/refind/lucene/") for n in names)
    assert not any("Ceiling" in n for n in names)


def test_the_engine_class_loads() -> None:
    from refind.store._jvm import ensure_jvm, jclass

    ensure_jvm()
    assert str(jclass("io.refind.lucene.Engine").luceneVersion()).startswith("9.")
