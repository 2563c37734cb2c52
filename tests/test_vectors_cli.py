"""``refind import`` makes the imported messages' vectors before it exits (``--no-embed`` leaves them
queued), ``refind stats`` says how many have one and how many await theirs, ``refind vectors reset`` drops
them. The CLI takes its model from the settings (wired with the local default model); here a test tool
(tests/embedders.py) stands in for it, given to the Memory the import opens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import refind
from refind.cli import main
from tests.embedders import HashingTestEmbedder

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


@pytest.fixture
def with_model(monkeypatch: pytest.MonkeyPatch) -> HashingTestEmbedder:
    """The import's Memory gets the test embedder, as it will get the settings' model."""
    import refind.cli._import as cli_import

    emb = HashingTestEmbedder()
    opened = cli_import._open

    def _open(ctx: Any, data: Any, *, read_only: bool, **options: Any) -> refind.Memory:
        return opened(ctx, data, read_only=read_only, **{"embedder": emb, **options})

    monkeypatch.setattr(cli_import, "_open", _open)
    return emb


def stats(data: str) -> dict[str, Any]:
    result = run("--data", data, "stats", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_import_embeds_what_it_imported_before_it_exits(
    tmp_path: Path, with_model: HashingTestEmbedder
) -> None:
    data = str(tmp_path / "index")
    result = run("--data", data, "import", str(FIXTURES / "chatgpt" / "conversations.json"), "--quiet")
    assert result.exit_code == 0, result.output
    counts = stats(data)
    assert counts["messages"] == 15 and (counts["vectors"], counts["pending_vectors"]) == (15, 0)
    assert counts["vector_model"] == "test-hashing-bow (32 dims)" and with_model.texts == 15
    text = run("--data", data, "stats")
    assert "15 vectors of test-hashing-bow (32 dims); 0 messages awaiting their vector" in " ".join(
        text.stdout.split()
    )


def test_no_embed_leaves_them_queued_and_stats_says_so(
    tmp_path: Path, with_model: HashingTestEmbedder
) -> None:
    data = str(tmp_path / "index")
    result = run("--data", data, "import", str(FIXTURES / "chatgpt"), "--quiet", "--no-embed")
    assert result.exit_code == 0, result.output
    assert (stats(data)["vectors"], stats(data)["pending_vectors"]) == (0, 15) and with_model.texts == 0
    out = " ".join(run("--data", data, "stats").stdout.split())
    assert "15 messages awaiting their vector" in out and "`refind serve`" in out


def test_vectors_reset_drops_them_and_queues_every_message(
    tmp_path: Path, with_model: HashingTestEmbedder
) -> None:
    data = str(tmp_path / "index")
    assert run("--data", data, "import", str(FIXTURES / "chatgpt"), "--quiet").exit_code == 0
    assert stats(data)["vectors"] == 15
    result = run("--data", data, "vectors", "reset", "--yes")
    assert result.exit_code == 0, result.output
    assert "15 messages queued" in " ".join(result.stdout.split())
    counts = stats(data)
    assert (counts["vectors"], counts["pending_vectors"], counts["vector_model"]) == (0, 15, None)
    declined = CliRunner().invoke(main, ["--data", data, "vectors", "reset"], input="n\n")
    assert declined.exit_code != 0 and stats(data)["pending_vectors"] == 15
