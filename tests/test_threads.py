"""Any number of stores, any number of threads: every hit comes from its own index, and the process never
crashes (the pyjnius bridge swapped receivers across stores: wrong hits, and segfaults in two of three
runs of ../shared/repro/two_stores.py). Each case runs in a fresh interpreter, as the repro does."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import PYTHON, ROOT

pytestmark = pytest.mark.slow  # minute-long soaks: make test, not make check

REPRO = ROOT.parent / "shared" / "repro" / "two_stores.py"

MANY = """
import sys, threading, time, faulthandler
faulthandler.enable()
import refind
words = ["apple", "banana", "cherry", "damson"]
stores = [refind.Memory.in_memory() for _ in words]
for mem, word in zip(stores, words):
    for s in range(20):
        mem.add("u", f"s{s}", [{"role": "user", "content": f"{word} message {s} {i} " * 5,
                               "timestamp": 1700000000000 + s * 1000 + i} for i in range(10)])
bad = []; errors = []; n = [0]
stop = time.time() + float(sys.argv[1])
def worker(mem, word):
    while time.time() < stop:
        try:
            for h in mem.query("u", f"{word} message", 30):
                if word not in h.content:
                    bad.append((word, h.content[:30]))
            for b in mem.search(f"what about the {word} message?", "u").evidence:
                if any(word not in t.content for t in b.turns):
                    bad.append((word, b.id))
            n[0] += 1
        except Exception as e:
            errors.append(repr(e)[:200])
ts = [threading.Thread(target=worker, args=(m, w)) for m, w in zip(stores, words) for _ in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
print("queries", n[0], "wrong-store hits", len(bad), bad[:3], "errors", len(errors), errors[:3])
"""


def _check(done: subprocess.CompletedProcess[str]) -> int:
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # a segfault is -11
    m = re.search(r"queries (\d+) wrong-store hits (\d+) .* errors (\d+)", done.stdout)
    assert m is not None, done.stdout
    queries, wrong, errors = map(int, m.groups())
    assert wrong == 0 and errors == 0, done.stdout
    assert queries > 100, done.stdout
    return queries


def test_two_stores_searched_from_two_threads_each_for_a_minute() -> None:
    done = subprocess.run([PYTHON, str(REPRO), "60"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    _check(done)


def test_four_stores_searched_from_eight_threads_for_a_minute(tmp_path: Path) -> None:
    script = tmp_path / "many.py"
    script.write_text(textwrap.dedent(MANY))
    done = subprocess.run([PYTHON, str(script), "60"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    _check(done)
