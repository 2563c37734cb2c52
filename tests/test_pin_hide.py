"""A person sees and corrects their standing facts (issue 37, item 4): ``Memory.pin`` / ``hide`` / ``unpin``
and ``marks`` over real engines (the Lucene index on disk, the reference engine, OpenSearch), what the profile
and every search's standing block make of the marks, and that the marks outlive what rewrites messages: a
re-import of the same messages, the standing rule's upgrade pass, a reopen. The engines' own rules for marks
are in the contract suite (tests/test_engine_contract.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import refind
from refind.config import Settings
from refind.models import SessionLog
from refind.store import open_engine
from refind.store.base import Record, WriteBatch
from tests.engines import ENGINES, EngineKind, kind

ENGINE_NAMES = ["lucene-disk", "reference", "opensearch"]

ANA = [
    ("s1", "I'm type 1 diabetic, diagnosed when I was twelve.", "2024-01-02T10:00:00Z"),
    ("s2", "We live in a third-floor walk-up apartment.", "2024-02-02T10:00:00Z"),
    ("s3", "I'm six foot seven, so most tents are too short for me.", "2024-03-02T10:00:00Z"),
    ("s4", "Keep every packing list under ten items.", "2024-04-02T10:00:00Z"),
    ("s5", "Always answer in metric units.", "2024-04-05T10:00:00Z"),
    ("s6", "We hiked the ridge trail last fall, the views were great.", "2024-05-02T10:00:00Z"),
]
HIKE = "Can you put together snacks and gear for an all-day hike?"


def _logs(user: str = "ana") -> list[SessionLog]:
    """Ana's history as an export gives it (one session per line of ANA, a reply after each message; the
    messages' ids are the export's, so a second import replaces them), and one message of Bo's whose id is
    one of Ana's."""
    logs = []
    for sid, text, ts in ANA:
        said = {"role": "user", "content": text, "timestamp": ts, "id": f"{sid}:0"}
        reply = {"role": "assistant", "content": "Thanks, noted.", "timestamp": ts, "id": f"{sid}:1"}
        logs.append(SessionLog(user_id=user, session_id=sid, title=f"chat {sid}", messages=[said, reply]))
    bo = {
        "role": "user",
        "content": "I'm allergic to peanuts.",
        "timestamp": "2024-01-05T10:00:00Z",
        "id": "s1:0",
    }
    logs.append(SessionLog(user_id="bo", session_id="s1", messages=[bo]))
    return logs


@pytest.fixture(params=ENGINE_NAMES)
def engine_kind(request: pytest.FixtureRequest) -> EngineKind:
    return kind(request.param)


@pytest.fixture
def mem(engine_kind: EngineKind, tmp_path: Path) -> Iterator[refind.Memory]:
    settings = Settings.from_env()
    m = refind.Memory(store=engine_kind.make(tmp_path, settings), settings=settings)
    m.import_sessions(_logs())
    yield m
    m.close()


def _said(result: refind.SearchResult, kind: str | None) -> list[str]:
    """The standing messages a search offered beside its evidence, of ``kind`` (None: instructions and
    preferences)."""
    return [t.content for b in result.evidence if b.standing and b.standing_kind == kind for t in b.turns]


def test_pin_hide_and_unpin_change_the_profile_and_the_standing_block(mem: refind.Memory) -> None:
    before = {f.message_id: f for f in mem.profile("ana")}
    assert set(before) == {"s1:0", "s2:0", "s5:0"}  # the rule misses s3 (no domain word) and s4 (no cue)
    assert not any(f.pinned for f in before.values())
    searched = mem.search(HIKE, "ana", now="2024-06-01")
    assert "I'm type 1 diabetic, diagnosed when I was twelve." in _said(searched, "fact")

    tall = mem.pin("ana", "s3:0")
    assert (tall.mark, tall.kind, tall.session_id, tall.turn, tall.role) == (
        "pinned",
        "fact",
        "s3",
        0,
        "user",
    )
    assert tall.sentence == ANA[2][1] and tall.marked_at > 0
    short = mem.pin("ana", "s4:0", "instruction")
    hidden = mem.hide("ana", "s1:0")
    assert (hidden.mark, hidden.kind, hidden.sentence) == ("hidden", None, ANA[0][1])

    facts = mem.profile("ana")
    assert [(f.message_id, f.kind, f.pinned, f.current) for f in facts] == [
        ("s5:0", "instruction", False, True),
        ("s4:0", "instruction", True, True),
        ("s3:0", "fact", True, True),
        ("s2:0", "fact", False, True),
    ]  # newest first; the hidden one not listed
    assert facts[1].sentence == short.sentence == ANA[3][1]
    marks = mem.marks("ana")
    assert {m.message_id: m.mark for m in marks} == {"s1:0": "hidden", "s4:0": "pinned", "s3:0": "pinned"}
    assert [m.marked_at for m in marks] == sorted((m.marked_at for m in marks), reverse=True)
    searched = mem.search(HIKE, "ana", now="2024-06-01")
    assert ANA[2][1] in _said(searched, "fact") and ANA[0][1] not in _said(searched, "fact")
    assert ANA[3][1] in _said(searched, None)  # pinned as an instruction: offered as one
    assert not any(t.content == ANA[0][1] for b in searched.evidence if b.standing for t in b.turns)
    assert mem.search("diabetic diagnosed", "ana").evidence  # hidden from standing, not from search

    assert mem.unpin("ana", "s1:0") is True and mem.unpin("ana", "s3:0") is True
    assert mem.unpin("ana", "s2:0") is False  # not marked: nothing to undo
    assert {f.message_id for f in mem.profile("ana")} == {"s1:0", "s2:0", "s4:0", "s5:0"}
    assert ANA[0][1] in _said(mem.search(HIKE, "ana", now="2024-06-01"), "fact")
    mem.pin("ana", "s4:0", "preference")  # pinned again: the new kind
    assert [(f.kind, f.pinned) for f in mem.profile("ana") if f.message_id == "s4:0"] == [
        ("preference", True)
    ]


def test_marks_are_one_persons_and_bad_ids_or_kinds_say_so(mem: refind.Memory) -> None:
    with pytest.raises(refind.InvalidInput, match="user 'ana' has no message 'nope'") as e:
        mem.pin("ana", "nope")
    assert e.value.field == "message_id"
    with pytest.raises(refind.InvalidInput, match="has no message 's2:0'"):
        mem.hide("bo", "s2:0")  # Ana's message: not Bo's to hide
    with pytest.raises(refind.InvalidInput, match="has no message"):
        mem.unpin("bo", "s5:0")
    with pytest.raises(refind.InvalidInput, match="expected one of fact, instruction, preference") as e:
        mem.pin("ana", "s3:0", "opinion")  # type: ignore[arg-type]
    assert e.value.field == "kind"
    with pytest.raises(refind.InvalidInput, match="user_id"):
        mem.pin("ana\x00", "s3:0")
    assert mem.marks("ana") == [] and mem.marks("bo") == []
    mem.hide("bo", "s1:0")  # Bo's s1:0, not Ana's (the same id)
    mem.pin("ana", "s1:1", "preference")
    assert [f.message_id for f in mem.profile("bo")] == []
    assert "s1:0" in {f.message_id for f in mem.profile("ana")}
    assert [m.message_id for m in mem.marks("bo")] == ["s1:0"] and "s1:1" not in {
        f.message_id for f in mem.profile("bo")
    }
    mem.delete_user("bo")  # the person goes with their marks; a new Bo starts clean
    mem.add("bo", "s1", [{"role": "user", "content": "I'm allergic to peanuts."}])
    assert mem.marks("bo") == [] and [f.message_id for f in mem.profile("bo")] == ["s1:0"]
    assert [m.message_id for m in mem.marks("ana")] == ["s1:1"]


def test_marks_survive_a_reimport_and_a_replacement_of_their_messages(mem: refind.Memory) -> None:
    mem.pin("ana", "s3:0")
    mem.hide("ana", "s1:0")
    again = mem.import_sessions(_logs())  # the same export again: every message replaced by itself
    assert again.replaced == 13 and again.added == 0
    mem.add(
        "ana", "s1", [{"role": "user", "content": ANA[0][1] + " Type 1, not 2.", "id": "s1:0", "turn": 0}]
    )
    assert {m.message_id for m in mem.marks("ana")} == {"s1:0", "s3:0"}
    listed = {f.message_id: f for f in mem.profile("ana")}
    assert "s1:0" not in listed and listed["s3:0"].pinned
    mem.delete_session("ana", "s3")  # the mark stays, the message is gone: nothing listed for it
    assert [m.message_id for m in mem.marks("ana")] == ["s1:0"] and "s3:0" not in {
        f.message_id for f in mem.profile("ana")
    }
    mem.forget_deletions("ana", ["s3"])
    mem.import_sessions(_logs())  # back: pinned again
    assert {f.message_id: f.pinned for f in mem.profile("ana")}["s3:0"] is True


def test_a_read_only_memory_reads_marks_and_makes_none(engine_kind: EngineKind, tmp_path: Path) -> None:
    if not engine_kind.read_only:
        pytest.skip(f"{engine_kind.name} has no reader beside its writer")
    assert engine_kind.location is not None
    location = engine_kind.location(tmp_path)
    with refind.Memory(store=engine_kind.make(tmp_path, Settings.from_env())) as writer:
        writer.import_sessions(_logs())
        writer.hide("ana", "s2:0")
        with refind.Memory(location, read_only=True) as reader:
            assert reader.read_only and not writer.read_only
            assert [m.message_id for m in reader.marks("ana")] == ["s2:0"]
            writer.pin("ana", "s3:0")
            assert {f.message_id for f in reader.profile("ana")} == {"s1:0", "s3:0", "s5:0"}
            with pytest.raises(refind.ReadOnlyError):
                reader.pin("ana", "s4:0")


# ---------------------------------------------------------------------------------------------- upgrade


def _forget_rule_version(location: str, path: Path | None) -> None:
    """Make the index look read by another version of the standing rule, as tests/test_store.py and
    tests/test_opensearch_engine.py do: the next writable open reads every message with the rule again."""
    if path is not None:
        meta = json.loads((path / "refind.json").read_text())
        meta["standing"] = 0
        (path / "refind.json").write_text(json.dumps(meta))
        return
    store = open_engine(location, settings=Settings())
    try:
        index = store.index["messages"]  # type: ignore[attr-defined]
        client = store._client  # type: ignore[attr-defined]
        got = next(iter(client.indices.get_mapping(index=index).values()))["mappings"]["_meta"]
        client.indices.put_mapping(index=index, body={"_meta": {**got, "standing": None}})
    finally:
        store.close()


@pytest.mark.parametrize("name", [n for n in ENGINE_NAMES if ENGINES[n].durable])
def test_marks_survive_the_rules_upgrade_pass_and_a_reopen(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The upgrade pass rewrites what stands in the messages whose stored reading differs from the rule's;
    it never touches a mark: a hidden message the pass now reads as standing stays hidden, a pinned one
    the rule reads nothing in stays pinned."""
    import logging

    engine_kind = kind(name)
    assert engine_kind.location is not None
    location = engine_kind.location(tmp_path)
    old = engine_kind.make(tmp_path, Settings.from_env())
    texts = [text for _, text, _ in ANA]
    old.write(WriteBatch([  # written as an older refind did: nothing stands in them
        Record("ana", f"s{i}", f"s{i}:0", 0, 1_700_000_000_000 + i, "user", text) for i, text in enumerate(texts)
    ]))  # fmt: skip
    old.commit()
    with refind.Memory(store=old) as m:
        m.hide("ana", "s0:0")  # the rule reads a fact in it (once the pass has run)
        m.pin("ana", "s2:0", "fact")  # the rule reads nothing in it
    _forget_rule_version(location, Path(location) if name == "lucene-disk" else None)
    with caplog.at_level(logging.INFO, logger="refind.store._standing"):
        upgraded = refind.Memory(location)
    assert "read what stands" in caplog.text
    with upgraded as m:
        listed = {f.message_id: f for f in m.profile("ana")}
        assert set(listed) == {"s1:0", "s2:0", "s4:0"} and listed["s2:0"].pinned
        assert {x.message_id: x.mark for x in m.marks("ana")} == {"s2:0": "pinned", "s0:0": "hidden"}
    with refind.Memory(location, read_only=True) as reader:
        assert {f.message_id for f in reader.profile("ana")} == {"s1:0", "s2:0", "s4:0"}


# ---------------------------------------------------------------------------------------------- the command


def test_refind_profile_pin_hide_unpin(tmp_path: Path) -> None:
    from refind.cli import main

    data = str(tmp_path / "idx")
    with refind.Memory(data) as m:
        m.import_sessions(_logs())
    run = CliRunner().invoke
    pinned = run(main, ["--data", data, "profile", "pin", "ana", "s4:0", "--kind", "instruction"])
    assert pinned.exit_code == 0, pinned.output
    assert (
        "Pinned s4:0 of user ana as an instruction: Keep every packing list under ten items." in pinned.stdout
    )
    hid = run(main, ["--data", data, "profile", "hide", "ana", "s1:0"])
    assert hid.exit_code == 0 and "Hid s1:0 of user ana" in hid.stdout
    listed = run(main, ["--data", data, "profile", "ana"])
    assert "instruction, pinned" in listed.stdout and "diabetic" not in listed.stdout
    with_hidden = run(main, ["--data", data, "profile", "ana", "--hidden"])
    assert "Hidden (never stand)" in with_hidden.stdout and "diabetic" in with_hidden.stdout
    rows = json.loads(run(main, ["--data", data, "profile", "list", "ana", "--json", "--hidden"]).stdout)
    assert [r["message_id"] for r in rows["hidden"]] == ["s1:0"]
    assert [r["message_id"] for r in rows["standing"] if r["pinned"]] == ["s4:0"]
    # errors: one line each, exit 1 (refind's) or 2 (usage)
    unknown = run(main, ["--data", data, "profile", "pin", "ana", "s9:0"])
    assert unknown.exit_code == 1 and "user 'ana' has no message 's9:0'" in unknown.output
    other = run(main, ["--data", data, "profile", "hide", "bo", "s5:0"])
    assert other.exit_code == 1 and "user 'bo' has no message 's5:0'" in other.output
    kind_ = run(main, ["--data", data, "profile", "pin", "ana", "s3:0", "--kind", "opinion"])
    assert kind_.exit_code == 2 and "'opinion' is not one of" in kind_.output
    nothing = run(main, ["--data", data, "profile", "unpin", "ana", "s2:0"])
    assert nothing.exit_code == 1 and "neither pinned nor hidden" in nothing.output
    undone = run(main, ["--data", data, "profile", "unpin", "ana", "s1:0"])
    assert undone.exit_code == 0 and "diabetic" in run(main, ["--data", data, "profile", "ana"]).stdout
    assert run(main, ["--data", data, "profile"]).exit_code == 2  # no USER: the usage


def test_a_pinned_fact_is_offered_before_facts_without_consequences() -> None:
    """The person said it matters: among the facts a request gets, a pinned one ranks with those of the
    domains with consequences (health, diet, ...), before pets or hobbies however recent."""
    from refind.store.reference import ReferenceStore

    settings = Settings.from_env(standing_facts=1)
    with refind.Memory(store=ReferenceStore(settings=settings), settings=settings) as m:
        m.add("ana", "tall", [{"role": "user", "content": ANA[2][1], "timestamp": "2024-03-02T10:00:00Z"}])
        m.add(
            "ana",
            "cats",
            [{"role": "user", "content": "We have two cats.", "timestamp": "2024-04-02T10:00:00Z"}],
        )
        m.add("ana", "hike", [{"role": "user", "content": ANA[5][1], "timestamp": "2024-05-02T10:00:00Z"}])
        assert _said(m.search(HIKE, "ana", now="2024-06-01"), "fact") == ["We have two cats."]
        m.pin("ana", "tall:0")
        assert _said(m.search(HIKE, "ana", now="2024-06-01"), "fact") == [ANA[2][1]]
