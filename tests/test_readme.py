"""The README's 30-second example runs as printed (a newcomer pastes it first)."""

from __future__ import annotations

import re
import subprocess

from tests.conftest import PYTHON, ROOT


def test_readme_python_example_runs(child_env: dict[str, str]) -> None:
    readme = (ROOT / "README.md").read_text()
    assert (
        readme.lstrip().startswith("# refind") and "make demo" in readme[:400] and "make test" in readme[:400]
    )
    code = re.search(r"```python\n(.*?)```", readme, re.S)
    assert code, "the README has a python example"
    out = subprocess.run(
        [PYTHON, "-c", code.group(1)], capture_output=True, text=True, env=child_env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "Elm Street" in out.stdout  # the answer sits in the turn after the hit: the window brought it
    assert "* user: I adopted an orange cat called Miso!" in out.stdout
