"""The records LuceneStore and its Java engine exchange are named once on each side (issue 35, item 6):
``refind/store/_wire.py`` and ``io.refind.lucene.Wire``. The two must list the same fields in the same order,
and naming them must not change a byte on the wire."""

from __future__ import annotations

import json

from refind.models import Hit
from refind.store import _wire as wire
from refind.store._jvm import ensure_jvm, jclass
from refind.store.base import Filters, Marker, Record, SessionDoc, SessionInfo, WriteBatch


def test_both_sides_list_the_same_records_with_the_same_fields_in_the_same_order() -> None:
    ensure_jvm()
    java = json.loads(str(jclass("io.refind.lucene.Wire").layout()))
    assert java == {name: list(fields) for name, fields in wire.LAYOUT.items()}


def test_a_named_record_is_the_same_json_array_as_before() -> None:
    """A batch as ``LuceneStore.write`` built it by hand, field by field, before the records had names."""
    standing = {
        "kind": "fact",
        "sentence": "I am vegan",
        "domain": "diet",
        "subject": "diet",
        "change": False,
    }
    record = Record("u", "s1", "s1:0", 0, 1_700_000_000_000, "user", "I am vegan ☕", "Ana", "Monday")
    batch = WriteBatch(
        records=[record],
        sessions=[SessionDoc("u", "s1", "I am vegan ☕", new=True), SessionDoc("u", "s2", None, appended=3)],
        marker=Marker("u", "req-1", '{"digest": "x"}'),
        infos=[SessionInfo("u", "s1", "Lunch", None, "p")],
    )
    by_hand = {
        "added": 5,
        "records": [
            ["u", "s1", "s1:0", 0, 1_700_000_000_000, "user", "I am vegan ☕", "Ana", "Monday", True, None]
        ],
        "sessions": [["u", "s1", "I am vegan ☕", True, -1], ["u", "s2", None, False, 3]],
        "marker": ["u", "req-1", '{"digest": "x"}'],
        "infos": [["u", "s1", "Lunch", None, "p"]],
    }
    assert wire.write_batch(batch, 5) == json.dumps(by_hand).encode("ascii")
    assert wire.standing_changes([["u", "s1:0", standing]]) == json.dumps([["u", "s1:0", standing]]).encode()
    assert wire.windows([("s1", 0, 5)]) == '[["s1", 0, 5]]'
    assert wire.filters(Filters(time_from=1, roles=["user"])) == '{"time_from": 1, "roles": ["user"]}'
    assert wire.filters(None) == wire.filters(Filters()) == ""


def test_the_engines_answers_decode_by_name() -> None:
    hit = {"id": "s1:0", "session_id": "s1", "turn": 0, "ts": 7, "role": "user", "score": 0.0}
    round_out = {
        "hits": [["s1:0", "s1", 0, 7, "user", 1.5]],
        "orders": [["s1"]],
        "selected": [["s1:0", 0.25]],
        "spans": [["s1", 0, 2, 0.25, [hit]]],
        "terms": ["vegan"],
        "titled": [],
    }
    found = wire.round_found(json.dumps(round_out).encode())
    assert found.hits == [Hit.trusted("s1:0", "s1", 0, 7, "user", None, "", 1.5, None)]
    assert found.selected == {"s1:0": 0.25}
    assert found.spans == [("s1", 0, 2, 0.25)]
    assert [[h.id for h in w] for w in found.windows] == [["s1:0"]]
    assert wire.scored_sessions('[["s1", 2.5]]') == [("s1", 2.5)]
    summary = wire.session_summaries('[["s1", 3, 10, 20]]')[0]
    assert (summary.session_id, summary.messages, summary.first, summary.last) == ("s1", 3, 10, 20)
    assert wire.vector_counts("[4,2]").pending == 2
    assert wire.pending(b'[["u", "s1:0", "t", "hello"]]')[0].content == "hello"
    assert wire.expired('{"removed": 1, "sessions": [["u", "s1", ["a", "b"]]]}').sessions == [
        ("u", "s1", ["a", "b"])
    ]
