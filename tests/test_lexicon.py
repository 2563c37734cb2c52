"""Word lists live in refind.lexicon and tuned numbers in refind.policy (issue 26, item 3): this test reads the
source of every module (with Python's own parser) and fails when a word list or a number shows up elsewhere.

- A **word list** is a set, list or tuple literal of five or more lowercase words (a ``Literal`` type's values
  are not), or a string or regular expression with an alternation of four or more lowercase words. In the
  modules whose rules read people's words (the question, messages, standing instructions, the analyzer):
  ``READERS`` below. The time grammar (``refind/query/timeparse.py``) is left out: its words are parts of its
  patterns (month names inside date patterns), tested by ``tests/test_timeparse.py``, not lists a rule picks.
- A **tuned number** is a numeric literal other than 0, 1 and -1 in a module of the search step (reading a
  question, planning and running rounds, fusing, packing), outside default parameter values (which are the
  settings' defaults). The numbers that are units or bounds of work rather than choices of the method are
  listed below with why; any other belongs in :class:`refind.policy.Policy` with the measurement that set it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from refind import lexicon
from refind.policy import POLICY, Policy

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "refind"

SEARCH_STEP = [
    "refind/query/reading.py",
    "refind/query/keywords.py",
    "refind/query/shape.py",
    "refind/agent/heuristic.py",
    *(f"refind/agent/kinds/{p.name}" for p in sorted((PACKAGE / "agent" / "kinds").glob("*.py"))),
    *(f"refind/search/{p.name}" for p in sorted((PACKAGE / "search").glob("*.py"))),
    "refind/fusion.py",
    "refind/evidence.py",
    "refind/standing.py",
]

READERS = {
    *SEARCH_STEP,
    *(f"refind/agent/{p.name}" for p in sorted((PACKAGE / "agent").glob("*.py"))),
    *(f"refind/query/{p.name}" for p in sorted((PACKAGE / "query").glob("*.py")) if p.name != "timeparse.py"),
    "refind/store/analysis.py",
}

# (module, number): why it is not a tuned number of the method
NOT_TUNED: dict[tuple[str, float], str] = {
    ("refind/search/session.py", 1000): "seconds to milliseconds in a round's time",
    ("refind/search/session.py", 3): "digits of a round's milliseconds in the trace",
    ("refind/search/standing.py", 1024): "people whose standing candidates a store keeps: a cache bound",
    ("refind/search/standing.py", 8192): "standing sentences whose vectors are kept: a cache bound",
    (
        "refind/search/standing.py",
        2,
    ): "two scores a shown fact: its own, and the earlier fact it changed just below it",
    ("refind/standing.py", 20_000): "characters of one message the rule reads: a bound of work",
    ("refind/standing.py", 1_000): "characters a message without a standing sentence is shown by: a bound",
    (
        "refind/standing.py",
        2,
    ): "the word after next: an owned noun may follow one more word (the rule's definition)",
    ("refind/standing.py", 3): "RULE_VERSION: the rule's version recorded in an index (a name, not tuned)",
    ("refind/query/keywords.py", 3): "a stem keeps at least three letters (the rule's definition)",
    (
        "refind/agent/kinds/feedback.py",
        2,
    ): "a term of one or two letters says nothing (the rule's definition)",
    ("refind/search/round.py", 50): "sessions an unfiltered session ranking returns at least (engine work)",
    ("refind/evidence.py", 1000): "seconds to milliseconds of a date",
    ("refind/evidence.py", 4096): "dates remembered: a cache bound",
    ("refind/evidence.py", 3): "a trailing 'i' is cut from stems longer than three letters (Porter's y/i)",
    ("refind/evidence.py", 8): "characters per token at most: a text this short in characters is counted",
    ("refind/evidence.py", 6): "characters per token: a window comfortably holding a passage",
    ("refind/evidence.py", 2): "both cut marks of a passage; halves of a window",
    ("refind/evidence.py", 4): "tokens of a rendered turn's line beyond its text (speaker, marks, newline)",
    ("refind/evidence.py", 80): "characters of a title in a block's header, of a bad zone name echoed",
    ("refind/evidence.py", 79): "the same, less its ellipsis",
    ("refind/evidence.py", 100): "longest time zone name looked up: a bound of work",
    ("refind/evidence.py", 86_400_000): "milliseconds in a day",
}

_WORD = re.compile(r"^[a-z][a-z'’\-]*$")
_ALTERNATION = re.compile(r"\(\?:([a-z'\\s|]+)\)|\b((?:[a-z]+\|){3,}[a-z]+)\b")


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if ".venv" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _word_lists(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    literal_types = {  # Literal["a", "b", ...]: a type's values, not words a rule reads
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal"
        for n in ast.walk(node.slice)
    }
    for node in ast.walk(tree):
        if id(node) in literal_types:
            continue
        if isinstance(node, ast.Set | ast.List | ast.Tuple):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(words) >= 5 and len(words) == len(node.elts) and all(_WORD.match(w) for w in words):
                found.append((node.lineno, f"a literal of {len(words)} words: {', '.join(words[:4])}, …"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for m in _ALTERNATION.finditer(node.value):
                alts = [a for a in (m.group(1) or m.group(2)).replace("\\s", " ").split("|") if a.strip()]
                if len(alts) >= 4 and all(_WORD.match(a.strip().replace(" ", "")) for a in alts):
                    found.append((node.lineno, f"a pattern of {len(alts)} words: {'|'.join(alts[:4])}|…"))
                    break
    return found


def _defaults(tree: ast.AST) -> set[int]:
    """ids of the nodes that are default parameter values: a function's, or a dataclass field's (the
    parameters of its ``__init__``): the settings' defaults."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in [*node.args.defaults, *node.args.kw_defaults]:
                if d is not None:
                    ids.update(id(n) for n in ast.walk(d))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and item.value is not None:
                    ids.update(id(n) for n in ast.walk(item.value))
    return ids


def _numbers(tree: ast.AST) -> list[tuple[int, float]]:
    skip = _defaults(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.Constant):
            continue
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value in (0, 1, -1):
            continue
        found.append((node.lineno, value))
    return found


def test_word_lists_live_in_the_lexicon() -> None:
    offenders = []
    for path in _modules():
        rel = _rel(path)
        if rel not in READERS:
            continue
        for line, what in _word_lists(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{rel}:{line}: {what}")
    assert not offenders, "word lists outside refind/lexicon.py:\n" + "\n".join(offenders)


def test_tuned_numbers_live_in_the_policy() -> None:
    offenders = []
    seen = set()
    for rel in SEARCH_STEP:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        for line, value in _numbers(tree):
            seen.add((rel, value))
            if (rel, value) not in NOT_TUNED:
                offenders.append(f"{rel}:{line}: {value!r}")
    assert not set(NOT_TUNED) - seen, f"stale entries in NOT_TUNED: {sorted(set(NOT_TUNED) - seen)}"
    assert not offenders, (
        "numbers outside refind/policy.py (add them to Policy, or say why here):\n" + "\n".join(offenders)
    )


def test_the_checks_catch_what_they_look_for() -> None:
    """The two scans on a module written to break both rules (a mutant of what the rules forbid)."""
    bad = ast.parse(
        "STOP = frozenset(['the', 'and', 'for', 'with', 'that'])\n"
        "CUE = re.compile(r'\\b(?:always|never|whenever|forever)\\b')\n"
        "def f(x, k=7):\n    return x * 0.8 + k\n"
    )
    assert [line for line, _ in _word_lists(bad)] == [1, 2]
    assert _numbers(bad) == [(4, 0.8)]  # the default 7 is a setting's default, not counted


def test_every_list_is_picked_by_name() -> None:
    named = list(lexicon.LISTS.values())
    for name in lexicon.__all__:
        value = getattr(lexicon, name)
        if name in {"LISTS", "CONSEQUENTIAL_DOMAINS"}:  # the index itself; an order of FACT_DOMAINS' names
            continue
        if isinstance(value, dict):  # a list per domain: each picked by name
            assert all(v in named for v in value.values()), name
        elif name.isupper():
            assert value in named, name
    assert set(lexicon.CONSEQUENTIAL_DOMAINS) <= set(lexicon.FACT_DOMAINS)
    assert lexicon.word_list("keyword_stop") is lexicon.KEYWORD_STOP_WORDS
    with pytest.raises(KeyError, match="known: "):
        lexicon.word_list("klingon")


def test_every_policy_number_names_where_it_was_measured() -> None:
    source = (PACKAGE / "policy.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Policy")
    fields = [n for n in cls.body if isinstance(n, ast.AnnAssign)]
    assert {f.target.id for f in fields if isinstance(f.target, ast.Name)} == set(Policy.__dataclass_fields__)
    for i, f in enumerate(fields):
        doc = cls.body[cls.body.index(f) + 1]
        assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), f"{i}: no docstring"
    assert Policy() == POLICY
