"""Settings in groups, each default written once, the environment read in one place (issue 35 item 4)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import refind
from refind.agent.kinds import PlanKnobs
from refind.cli import main
from refind.config import (
    DEFAULTS,
    ENVIRONMENT,
    GROUPS,
    AgentSettings,
    PackSettings,
    SearchSettings,
    Settings,
    env_name,
    env_values,
    env_var,
)
from refind.fusion import Fusion
from refind.search.round import round_spec, search_round
from refind.search.session import SearchSession

ROOT = Path(__file__).resolve().parents[1]

# Modules that read a REFIND_* variable themselves, each with why it cannot go through refind.config.
READ_ELSEWHERE = {
    "refind/config.py": "the one place",
    "refind/cli/_daemon.py": "the daemon's client imports only the standard library (its latency is the point): "
    "it reads REFIND_DAEMON, REFIND_DEBUG, REFIND_STORE and REFIND_DAEMON_IDLE, and every REFIND_* for its "
    "identity, before refind is imported",
}


def test_every_setting_is_in_one_group_with_its_docs() -> None:
    seen: dict[str, str] = {}
    for group_name, group in GROUPS.items():
        for name, field in group.model_fields.items():
            assert name not in seen, f"{name} is in {seen[name]} and {group_name}"
            seen[name] = group_name
            assert field.description, f"{group.__name__}.{name} has no docstring"
    assert set(seen) == set(Settings.model_fields)  # Settings is the groups, no field of its own


def test_flat_and_grouped_access_agree() -> None:
    s = Settings(top_k=3, bm25_k1=0.9, hit_tokens=500, breadth_k=2)
    assert (s.top_k, s.search.top_k) == (3, 3)
    assert (s.bm25_k1, s.store.bm25_k1, s.pack.hit_tokens, s.agent.breadth_k) == (0.9, 0.9, 500, 2)
    assert isinstance(s.search, SearchSettings) and isinstance(s.agent, AgentSettings)
    assert Settings(**s.model_dump()) == s  # what the service's search workers rebuild
    assert s.with_values(top_k=4, window=None).top_k == 4 and s.with_values() is s
    with pytest.raises(ValueError, match="top_k"):
        s.with_values(top_k=0)
    with pytest.raises(ValueError, match="extra"):
        Settings(top_kk=3)  # type: ignore[call-arg]


def test_the_environment_is_read_by_field_name(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(env_name(name), raising=False)
    assert Settings.from_env() == DEFAULTS
    monkeypatch.setenv("REFIND_TOP_K", "7")
    monkeypatch.setenv("REFIND_FEEDBACK", "on")
    monkeypatch.setenv("REFIND_FUSION_SESSIONS", "Hits")
    monkeypatch.setenv("REFIND_BREADTH_K", " 3 ")
    monkeypatch.setenv("REFIND_WINDOW", "")  # empty: unset
    s = Settings.from_env(top_k=9)  # arguments win
    assert (s.top_k, s.feedback, s.fusion_sessions, s.breadth_k, s.window) == (9, True, "hits", 3, 2)
    monkeypatch.setenv("REFIND_FEEDBACK", "maybe")
    with pytest.raises(refind.InvalidInput, match="REFIND_FEEDBACK: expected true or false"):
        Settings.from_env()
    monkeypatch.setenv("REFIND_FEEDBACK", "0")
    monkeypatch.setenv("REFIND_OVERFETCH", "lots")
    with pytest.raises(refind.InvalidInput, match="REFIND_OVERFETCH: expected an integer, got 'lots'"):
        Settings.from_env()
    monkeypatch.setenv("REFIND_OVERFETCH", "0")
    with pytest.raises(ValueError, match="overfetch"):
        Settings.from_env()
    assert env_values(Settings, env={"REFIND_BM25_B": "0.5", "REFIND_NOPE": "1"}) == {"bm25_b": 0.5}


def test_parse_checks_a_setting_written_as_text() -> None:
    assert Settings.parse("max_rounds", "6") == 6
    assert Settings.parse("openings", "off") is False
    assert Settings.variable("breadth_window") == "REFIND_BREADTH_WINDOW"
    with pytest.raises(refind.InvalidInput, match="max_rounds: input should be less than or equal to 20"):
        Settings.parse("max_rounds", "99")
    with pytest.raises(refind.InvalidInput, match="nope: unknown setting; known: anserini_jar"):
        Settings.parse("nope", "1")


def _defaults(fn: object) -> dict[str, object]:
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()  # type: ignore[arg-type]
        if p.default is not inspect.Parameter.empty
    }


def test_the_layers_below_take_their_defaults_from_the_settings() -> None:
    """SearchSession, a round, fusion and the heuristic agent default to the one definition (they once
    disagreed: overfetch 50 against 30, fusion by hits against documents, window_tokens None against 150)."""
    tunables = SearchSettings.model_fields.keys() | PackSettings.model_fields.keys()
    for fn in (SearchSession.__init__, search_round, round_spec):
        for name, default in _defaults(fn).items():
            if name in tunables:
                assert default == getattr(DEFAULTS, name), f"{fn.__qualname__}({name}={default!r})"
    assert _defaults(SearchSession.__init__).keys() >= {"overfetch", "window_tokens", "latest_boost"}
    assert Fusion() == Fusion(
        DEFAULTS.fusion_k0, DEFAULTS.fusion_w_hit, DEFAULTS.fusion_w_session, DEFAULTS.fusion_sessions
    )
    agent = _defaults(refind.HeuristicAgent.__init__)
    agent.pop("kinds")
    assert agent == DEFAULTS.agent.model_dump()  # every knob, and no other
    knobs = PlanKnobs()
    for name in ("max_rounds", "time_weight", "feedback", "feedback_terms", "breadth_k", "breadth_window"):
        assert getattr(knobs, name) == getattr(DEFAULTS, name), name


def test_every_agent_knob_is_reachable_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFIND_BREADTH_K", "2")
    monkeypatch.setenv("REFIND_FORM_WORDS", "false")
    with refind.Memory("reference://", embedder=None, time_weight=0.5, openings=False) as mem:
        agent = mem.default_agent()
    assert (agent.knobs.breadth_k, agent.knobs.time_weight, agent.knobs.openings) == (2, 0.5, False)
    assert agent.reading_rules.form_words is False
    made = refind.HeuristicAgent.from_settings(Settings(max_rounds=2, feedback=True, feedback_terms=3))
    assert (made.max_rounds, made.knobs.feedback, made.knobs.feedback_terms) == (2, True, 3)


def test_the_cli_sets_any_setting_for_one_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("REFIND_MAX_ROUNDS", "REFIND_BREADTH_K"):
        monkeypatch.setenv(name, "")  # empty: unset; restored after the test, as --set writes the environment
    bad = CliRunner().invoke(main, ["--set", "max_rounds=99", "stats"])
    assert bad.exit_code == 2 and "max_rounds: input should be less than or equal to 20" in bad.output
    bad = CliRunner().invoke(main, ["--set", "rounds", "stats"])
    assert bad.exit_code == 2 and "expected NAME=VALUE" in bad.output
    with refind.Memory(tmp_path / "index", embedder=None) as mem:
        mem.add("me", "s1", [{"role": "user", "content": "I bought a red kayak in May."}])
    ok = CliRunner().invoke(
        main,
        [
            "--data",
            str(tmp_path / "index"),
            "--set",
            "max-rounds=1",
            "search",
            "kayak",
            "--set",
            "breadth_k=2",
        ]
        + ["--no-daemon", "--json"],
        env={"REFIND_EMBEDDER": "off"},
    )
    assert ok.exit_code == 0, ok.output
    assert refind.SearchResult.model_validate_json(ok.stdout).evidence
    assert Settings.from_env().agent.max_rounds == 1 and Settings.from_env().breadth_k == 2


# ---------------------------------------------------------------------------------------------- one reader


def _sources() -> list[Path]:
    return sorted((ROOT / "refind").rglob("*.py"))


def _env_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, variable) of each read of a REFIND_* variable: os.environ.get / os.getenv / os.environ[...] /
    environ.get, with a literal or a module constant holding one."""
    constants = {
        t.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for t in node.targets
        if isinstance(t, ast.Name) and isinstance(node.value.value, str)
    }

    def name_of(arg: ast.expr) -> str | None:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
        if isinstance(arg, ast.Name):
            return constants.get(arg.id)
        return None

    reads = []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Call) and node.args:
            f = ast.unparse(node.func)
            if f.endswith(("environ.get", "getenv")):
                target = name_of(node.args[0])
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
            target = name_of(node.slice)
        if target is not None and target.startswith("REFIND_"):
            reads.append((node.lineno, target))
    return reads


def test_refind_variables_are_read_in_one_place() -> None:
    found = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        reads = _env_reads(ast.parse(path.read_text(encoding="utf-8")))
        if reads and rel not in READ_ELSEWHERE:
            found += [f"{rel}:{line} reads {var}" for line, var in reads]
    assert not found, "read REFIND_* through refind.config (env_var, env_values): " + "; ".join(found)


def test_the_check_finds_a_read() -> None:
    code = "\n".join(
        ["import os", 'X = "REFIND_X"', 'a = os.environ.get("REFIND_A")', "b = os.getenv(X)"]
        + ['c = os.environ["REFIND_C"]']
    )
    assert [v for _, v in _env_reads(ast.parse(code))] == ["REFIND_A", "REFIND_X", "REFIND_C"]


def test_every_variable_named_in_the_code_is_listed() -> None:
    """A REFIND_* name written in the code is a setting's, an LLM option's or one of ENVIRONMENT."""
    known = {env_name(name) for name in Settings.model_fields} | set(ENVIRONMENT)
    known |= {env_name(name, "LLM_") for name in refind.LLMOptions.model_fields}
    unknown = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and re.fullmatch(r"REFIND_[A-Z0-9_]+", value) and value not in known:
                unknown.append(f"{path.relative_to(ROOT)}: {value}")
    assert not unknown, unknown
    with pytest.raises(KeyError, match="REFIND_NOPE is not listed"):
        env_var("REFIND_NOPE")


def test_the_configuration_page_names_every_variable() -> None:
    """docs/configuration.md has every variable refind reads (tests/test_docs.py checks the settings')."""
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for var in ENVIRONMENT:
        assert f"`{var}`" in page, f"docs/configuration.md lacks {var}"
    for name, field in refind.LLMOptions.model_fields.items():
        if field.default is None:  # read from the environment when left unset
            assert f"`{env_name(name, 'LLM_')}`" in page, f"docs/configuration.md lacks the LLM option {name}"


def test_the_fronts_llm_agent_starts_from_the_settings_heuristic_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--agent llm` (CLI and service): the heuristic rounds it runs first, and falls back to, are the
    settings' heuristic agent, not one with the defaults."""
    pytest.importorskip("openai")
    from refind.cli._app import _agent

    monkeypatch.setenv("REFIND_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never called here
    monkeypatch.setenv("REFIND_MAX_ROUNDS", "2")
    monkeypatch.setenv("REFIND_BREADTH_K", "3")
    agent = _agent("llm")
    assert isinstance(agent, refind.LLMAgent) and isinstance(agent.fallback, refind.HeuristicAgent)
    assert (agent.fallback.max_rounds, agent.fallback.knobs.breadth_k) == (2, 3)
    pytest.importorskip("fastapi")
    from refind.server._app import _Runtime
    from refind.server._config import ServerConfig

    runtime = _Runtime(None, None, ServerConfig.build(agent="llm"), Settings(max_rounds=5), owns=True)
    assert isinstance(runtime.agent, refind.LLMAgent) and isinstance(
        runtime.agent.fallback, refind.HeuristicAgent
    )
    assert runtime.agent.fallback.max_rounds == 5
