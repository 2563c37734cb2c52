"""The documentation builds (``mkdocs build --strict``: broken links, missing pages, unknown API names and
missing snippet files fail) and cannot drift from the code: the CLI reference is the CLI's own help, and the
configuration page names every setting."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import refind

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_cli_reference_is_the_current_help() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/gen_cli_docs.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def mkdocs(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def build(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    if not (site / "index.html").exists():
        done = mkdocs(ROOT, site)
        assert done.returncode == 0, done.stdout + done.stderr
        assert not re.search(r"^(WARNING|ERROR)\b", done.stderr, flags=re.MULTILINE), done.stderr
    return site


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    site = build(tmp_path)
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("refind.Memory", "refind.SearchResult", "refind.tools", "refind.loaders", "refind.Settings"):
        assert f'id="{name}"' in api, name
    assert 'id="refind.Memory.search"' in api
    started = (site / "getting-started" / "index.html").read_text(encoding="utf-8")
    assert "Memory.in_memory" in started  # examples/quickstart.py, included as a snippet
    assert (site / "benchmarks" / "index.html").exists()


def test_configuration_names_every_setting() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for name in refind.Settings.model_fields:
        assert f"`{name}`" in page, f"docs/configuration.md does not describe the setting {name}"
        assert f"`REFIND_{name.upper()}`" in page, f"docs/configuration.md lacks REFIND_{name.upper()}"
    for variable in (
        "REFIND_DATA",
        "REFIND_DEBUG",
        "REFIND_API_KEY",
        "REFIND_LLM_MODEL",
        "TIKTOKEN_CACHE_DIR",
    ):
        assert f"`{variable}`" in page


def test_every_page_is_in_the_nav(tmp_path: Path) -> None:
    """The hook in scripts/gen_cli_docs.py adds optional pages (service.md, search.md) and any unlisted page
    to the curated nav, so every page is reachable from the site's navigation."""
    site = build(tmp_path)
    home = (site / "index.html").read_text(encoding="utf-8")
    links = set(re.findall(r'href="([^"#]*)" class="md-nav__link', home))
    for page in DOCS.rglob("*.md"):
        rel = page.relative_to(DOCS).with_suffix("")
        if rel.as_posix() == "index":
            continue  # the home page itself
        url = (rel.parent if rel.name in {"index", "README"} else rel).as_posix() + "/"
        assert url in links, f"docs/{page.relative_to(DOCS)} is not in the nav"


def test_a_stale_cli_reference_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "gen_cli_docs.py", copy / "scripts" / "gen_cli_docs.py")
    (copy / "examples").symlink_to(ROOT / "examples")
    (copy / "refind").symlink_to(ROOT / "refind")
    cli_md = copy / "docs" / "cli.md"
    cli_md.write_text(cli_md.read_text(encoding="utf-8").replace("refind delete-user", "refind remove-user"))
    done = mkdocs(copy, tmp_path / "site")
    assert done.returncode != 0
    assert "docs/cli.md is out of date" in done.stdout + done.stderr


@pytest.mark.slow
def test_a_link_to_a_missing_anchor_fails_the_build(tmp_path: Path) -> None:
    """mkdocs only logs a link to a missing heading (INFO) unless told otherwise; mkdocs.yml makes it a
    warning, so the strict build fails (issue 23: docs/benchmarks/README.md had two such links)."""
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "scripts").symlink_to(ROOT / "scripts")
    (copy / "examples").symlink_to(ROOT / "examples")
    (copy / "refind").symlink_to(ROOT / "refind")
    page = copy / "docs" / "benchmarks" / "README.md"
    page.write_text(
        page.read_text(encoding="utf-8") + "\n[a dangling link](#no-such-heading)\n", encoding="utf-8"
    )
    done = mkdocs(copy, tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-heading" in done.stdout + done.stderr


# ---------------------------------------------------------------------------------------------- issue 38


def test_following_getting_started_in_the_clone_leaves_nothing_untracked() -> None:
    """Every index directory the page has a reader make inside the clone (``--data ./refind-data``) is one
    git ignores, so `git status` stays clean."""
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    dirs = set(re.findall(r"--data \./([\w.-]+)", page))
    assert dirs, "the page names the directories it writes"
    for d in sorted(dirs):
        done = subprocess.run(["git", "check-ignore", "-q", f"{d}/"], cwd=ROOT)  # a directory
        assert done.returncode == 0, f"{d}: following docs/getting-started.md leaves it untracked"


def test_refind_ui_and_the_mcp_http_server_default_to_different_ports() -> None:
    from refind.cli import main

    defaults = {}
    for name in ("ui", "mcp"):
        command = main.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None
        defaults[name] = next(p.default for p in command.params if p.name == "port")
    assert defaults["ui"] != defaults["mcp"], defaults
    for page, port in (("ui.md", defaults["ui"]), ("mcp.md", defaults["mcp"])):
        assert f"127.0.0.1:{port}" in (DOCS / page).read_text(encoding="utf-8"), page


@pytest.mark.slow
def test_the_notebook_runs_with_the_command_getting_started_gives(tmp_path: Path, shared_data: Path) -> None:
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    found = re.search(r"`(\.venv/bin/jupyter execute examples/notebooks/evaluate\.ipynb)`", page)
    assert found, "docs/getting-started.md gives the notebook's run command"
    args = found.group(1).split()
    args[0] = str(Path(sys.executable).parent / "jupyter")  # this environment's .venv/bin
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    env |= {"REFIND_EVAL_OUT": str(tmp_path / "eval"), "REFIND_SHARED_DATA": str(shared_data)}
    env |= {"JUPYTER_PLATFORM_DIRS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "eval" / "evaluate.png").stat().st_size > 10_000
    assert (tmp_path / "eval" / "locomo" / "summary.json").is_file()


def test_the_public_names_are_listed_once_and_typed() -> None:
    """``refind/__init__.py`` names each public name once: one ``from MODULE import NAME as NAME`` line under
    ``TYPE_CHECKING`` (what type checkers and the API docs read; ``as NAME`` marks it re-exported, so
    ``mypy --no-implicit-reexport`` accepts ``from refind import Memory``). ``_WHERE`` and ``__all__`` are read
    from those lines at import, and no name is written anywhere else in the file."""
    import ast

    source = (ROOT / "refind" / "__init__.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name}: import it as itself (a re-export)"
                    typed[alias.name] = imp.module
    where = dict(refind._WHERE)  # type: ignore[attr-defined]
    assert typed == where and len(where) > 30
    assert refind.__all__ == sorted([*where, "__version__"])
    code = [n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Constant, ast.alias))]
    for name, module in where.items():
        assert getattr(refind, name).__module__.startswith(module.rsplit(".", 1)[0]), name
        written = [n for n in code if name in (getattr(n, "id", None), getattr(n, "value", None))]
        written += [n for n in code if isinstance(n, ast.alias) and name in (n.name, n.asname)]
        assert len(written) == 1, f"{name} is written {len(written)} times in refind/__init__.py"


def test_every_design_citation_names_a_section_of_docs_design_md() -> None:
    """The code cites the design by section name (``docs/design.md § "Evidence"``): each name is a heading of
    docs/design.md, and nothing cites the numbered sections of a design document kept outside the repository."""
    headings = set(re.findall(r"^#+ (.+?)\s*$", (DOCS / "design.md").read_text(encoding="utf-8"), re.M))
    cited: dict[str, set[str]] = {}
    stale = []
    for folder in ("refind", "benchmarks", "scripts", "examples", "docs"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".py", ".md", ".java"}:
                continue
            text = path.read_text(encoding="utf-8")
            for name in re.findall(r'§ "([^"]+)"', text):
                cited.setdefault(" ".join(name.split()), set()).add(str(path.relative_to(ROOT)))
            if re.search(r"DESIGN(\.md)? ?§|DESIGN\.md", text):
                stale.append(str(path.relative_to(ROOT)))
    assert not stale, f"cite docs/design.md by section name instead: {stale}"
    assert len(cited) >= 6
    unknown = {name: sorted(where) for name, where in cited.items() if name not in headings}
    assert not unknown, f"no such section in docs/design.md: {unknown}"
