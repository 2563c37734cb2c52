"""The README's 30-second example runs as printed (a newcomer pastes it first)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import refind
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


def test_the_readme_first_lines_put_refind_on_the_path_of_a_new_shell(tmp_path: Path) -> None:
    """Issue 38: after the README's first lines, `refind --version` works in a new shell. `make install` is
    run as the README says, with this clone's environment already set up (the set-up itself is measured
    from a fresh clone in docs/getting-started.md), into a directory of the test."""
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```\n(.*?)```", readme, re.S)
    assert first and re.search(r"^make install\b", first.group(1), re.M), "the README's first lines"
    venv = Path(PYTHON).parent.parent
    stamp = venv / ".refind-setup-done"
    assert stamp.exists(), "the environment of this clone is set up"
    bin_dir = tmp_path / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    done = subprocess.run(
        ["make", "install", f"VENV={venv}", f"BIN={bin_dir}", "-o", str(stamp)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{bin_dir} is not on your PATH" in done.stdout and f'export PATH="{bin_dir}:$PATH"' in done.stdout
    shell = subprocess.run(
        ["bash", "-c", "refind --version"],
        env={"HOME": str(tmp_path), "PATH": f"{bin_dir}:/usr/bin:/bin"},  # a new shell, nothing activated
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.strip() == f"refind, version {refind.__version__}"
    again = subprocess.run(  # uninstall removes the link, and only the link
        ["make", "uninstall", f"VENV={venv}", f"BIN={bin_dir}"], cwd=ROOT, capture_output=True, text=True
    )
    assert (
        again.returncode == 0
        and not (bin_dir / "refind").exists()
        and venv.joinpath("bin", "refind").exists()
    )
