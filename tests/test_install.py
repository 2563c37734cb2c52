"""The installed package wins over a folder named ``refind`` in the current directory (a clone, seen from
the folder that holds it), which Python would otherwise import as an empty namespace package."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import PYTHON


def test_a_script_beside_a_clone_named_refind_imports_the_package(tmp_path: Path) -> None:
    clone = tmp_path / "refind"  # what `git clone .../refind` makes: no __init__.py at its top
    (clone / "refind").mkdir(parents=True)
    (clone / "pyproject.toml").write_text("[project]\nname = 'refind'\n")
    (tmp_path / "script.py").write_text("import refind\nprint(refind.Memory.__name__)\n")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSAFEPATH"}}
    done = subprocess.run([PYTHON, "script.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Memory"
