"""The examples run as a user would run them: the scripts in subprocesses (agent_integration.py against the
fake OpenAI server over real HTTP), the notebook in a real Jupyter kernel via nbclient."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from refind.tools import openai_tools
from tests.fake_openai import FakeOpenAI, Reply, text_reply, tool_reply

pytestmark = pytest.mark.slow  # the examples and the notebook, run whole: make test, not make check

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
OPENAI_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "REFIND_LLM_API_KEY",
    "REFIND_LLM_BASE_URL",
)


def run_example(name: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_quickstart(child_env: dict[str, str]) -> None:
    done = run_example("quickstart.py", child_env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[session 2024-03-02 | 2 March 2024, 18:20 UTC]"
    assert "* user: I adopted an orange cat from the shelter!" in lines
    assert "user: Miso. She is two and she loves tuna." in lines  # the window, not a match
    assert any(line.startswith("round 1: search ") for line in lines)


def test_agent_integration_without_an_endpoint_says_so(child_env: dict[str, str]) -> None:
    env = {k: v for k, v in child_env.items() if k not in OPENAI_VARS}
    done = run_example("agent_integration.py", env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert "OPENAI_API_KEY" in done.stdout and "OPENAI_BASE_URL" in done.stdout


def test_agent_integration_runs_a_tool_loop(child_env: dict[str, str]) -> None:
    def note_what_was_found(body: dict[str, Any]) -> Reply:
        observation = [m for m in body["messages"] if m["role"] == "tool"][-1]["content"]
        ids = re.findall(r"^\[id ([^\]\s]+)\]", observation, flags=re.MULTILINE)
        assert ids, observation
        return tool_reply(("note", {"ids": ids[:2], "reason": "the holiday plans"}))

    with FakeOpenAI() as fake:
        fake.enqueue(
            tool_reply(("search", {"keywords": "summer holiday Portugal Dolomites"})),
            note_what_was_found,
            tool_reply(("finish", {"reason": "both plans found"})),
            text_reply("Hiking in the Dolomites; the Portugal plan was dropped."),
        )
        env = {k: v for k, v in child_env.items() if k not in OPENAI_VARS}
        env.update(
            OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test-key", NO_PROXY="127.0.0.1,localhost"
        )
        done = run_example("agent_integration.py", env)
        assert done.returncode == 0, done.stderr
        assert fake.pending == 0 and fake.unexpected == 0
        bodies = fake.bodies
    assert len(bodies) == 4
    assert all(body["tools"] == openai_tools() for body in bodies[:3])
    assert bodies[0]["messages"][1] == {
        "role": "user",
        "content": "Where are Tom and I going on our summer holiday?",
    }
    assert "Today is 2024-06-20." in bodies[0]["messages"][0]["content"]
    assert bodies[1]["messages"][2]["tool_calls"][0]["function"]["name"] == "search"
    final = bodies[3]
    assert "tools" not in final
    assert "Chat excerpts:" in final["messages"][1]["content"]
    out = done.stdout
    assert 'search({"keywords": "summer holiday Portugal Dolomites"})' in out
    assert "Evidence for 'Where are Tom and I going on our summer holiday?':" in out
    assert "[session 2024-" in out
    assert out.rstrip().endswith("Answer: Hiking in the Dolomites; the Portugal plan was dropped.")


def test_the_evaluation_notebook_runs(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core warns (an error here) without it
    monkeypatch.setenv("REFIND_EVAL_OUT", str(tmp_path / "eval"))
    monkeypatch.setenv("REFIND_SHARED_DATA", str(shared_data))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(EXAMPLES / "notebooks" / "evaluate.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        "commit the notebook without outputs"
    )
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "coding-life: 15 questions" in text and "locomo: 100 questions" in text
    # a seeded sample of the whole split, not the first conversation's questions only
    assert "the LoCoMo sample spans 5 conversations: conv-26, conv-30, conv-41, conv-42, conv-43" in text
    assert re.search(r"this notebook ran in \d+ s", text)
    assert any("image/png" in o.get("data", {}) for o in outputs if o.output_type == "display_data")
    for name in ("coding-life", "locomo"):
        summary = json.loads((tmp_path / "eval" / name / "summary.json").read_text())
        assert set(summary["adapters"]) == {"grep", "bm25", "refind"}
        assert summary["skipped_adapters"] == {}
    assert (
        json.loads((tmp_path / "eval" / "locomo" / "summary.json").read_text())["selection"]["sample"] == 20
    )
    assert (tmp_path / "eval" / "evaluate.png").stat().st_size > 10_000
