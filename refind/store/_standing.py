"""What stored messages say that stands, for engines whose index was written before it was stored (issue 37).

A message's standing (:func:`refind.standing.read_standing`) is read by the write path and stored with the
message. An index written before that, or by another version of the rule
(:data:`refind.standing.RULE_VERSION`), gets it on its first writable open: :func:`classify_stored` reads
every person's own messages once, session by session in bounded batches, and hands the engine the messages
whose stored standing differs from the rule's (most messages stand for nothing and are not rewritten). A
read-only open of such an index cannot write: :func:`read_standing_now` reads the person's messages with the
rule on each call instead (slower, and said so in the log once).

A person's marks (:class:`~refind.store.base.StandingMark`: pinned, hidden) are kept apart from the messages
by each engine; :func:`with_marks` applies them to what the rule read, the one place that does, for every
engine's :meth:`~refind.store.base.Reader.standing`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from refind.models import Hit
from refind.standing import Standing, StandingKind, read_standing, standing_text
from refind.store.base import Filters, Reader, StandingHit, StandingMark, standing_dict

log = logging.getLogger(__name__)

__all__ = ["classify_stored", "pinned_standing", "read_standing_now", "sort_standing", "with_marks"]

_BATCH_MESSAGES = 20_000  # messages read at once by the pass: a bound of memory, not a tuned number
_LOG_EVERY_S = 10.0  # seconds between progress lines of the pass
_ALL_TURNS = (0, 2**31 - 1)


def classify_stored(
    reader: Reader,
    write: Callable[[list[list[Any]]], int],
    stored: Callable[[str], dict[str, dict[str, object] | None]],
    where: str,
) -> tuple[int, int]:
    """Read every person's own messages with the rule and ``write`` ([user, id, standing or None] for each
    message whose ``stored`` standing (by id, for one person) differs); returns (messages read, rewritten).
    The caller commits."""
    started = last = time.perf_counter()
    users = reader.users()
    read = rewritten = 0
    for i, user in enumerate(users):
        before = stored(user)
        changes: list[list[Any]] = []
        for batch in _session_batches(reader, user):
            for h in (h for turns in reader.windows(user, batch) for h in turns):
                if h.role != "user" and h.id not in before:
                    continue
                read += 1
                now = standing_dict(read_standing(h.role, h.content))
                if now != before.get(h.id):
                    changes.append([user, h.id, now])
        if changes:
            rewritten += write(changes)
        if time.perf_counter() - last > _LOG_EVERY_S:
            last = time.perf_counter()
            log.info(
                "reading standing messages in %s: %d of %d people, %d messages read, %d marked",
                where, i + 1, len(users), read, rewritten,
            )  # fmt: skip
    log.info(
        "read what stands in the %d messages of %d people in %s (%d marked, %.1f s)",
        read, len(users), where, rewritten, time.perf_counter() - started,
    )  # fmt: skip
    return read, rewritten


def _session_batches(reader: Reader, user: str) -> list[list[tuple[str, int, int]]]:
    """``user``'s sessions as spans of all their turns, in batches of about ``_BATCH_MESSAGES`` messages."""
    batches: list[list[tuple[str, int, int]]] = [[]]
    size = 0
    for s in sorted(reader.session_summaries(user), key=lambda s: s.session_id):
        if size and size + s.messages > _BATCH_MESSAGES:
            batches.append([])
            size = 0
        batches[-1].append((s.session_id, *_ALL_TURNS))
        size += s.messages
    return [b for b in batches if b]


def read_standing_now(reader: Reader, user_id: str, k: int) -> list[StandingHit]:
    """``user_id``'s standing messages read with the rule now (an index that does not store them, opened
    read-only), in :meth:`Reader.standing`'s order."""
    found: list[StandingHit] = []
    if k <= 0:
        return found
    for h in _own_messages(reader, user_id):
        s = read_standing(h.role, h.content)
        if s is not None:
            found.append(StandingHit.of(h, s))
    return sort_standing(found)[:k]


def _own_messages(reader: Reader, user_id: str) -> Sequence[Hit]:
    n = reader.count(user_id)
    return reader.browse(user_id, n, Filters(roles=["user"])) if n else []


def sort_standing(found: list[StandingHit]) -> list[StandingHit]:
    """Standing messages in :meth:`Reader.standing`'s order: newest first, ties by session id, then the later
    turn first."""
    found.sort(key=lambda h: -h.turn)
    found.sort(key=lambda h: h.session_id)
    found.sort(key=lambda h: -h.timestamp)
    return found


def pinned_standing(hit: Hit, kind: StandingKind) -> Standing:
    """What the pinned message ``hit`` says that stands, as ``kind``: its
    :func:`~refind.standing.standing_text`; for a fact
    the rule reads as one, its domain, subject and change too (a later fact on the same subject is shown as
    superseding it; the pin keeps it current)."""
    read = read_standing("user", hit.content)
    if read is not None and kind == "fact" and read.kind == "fact":
        return Standing(kind, read.sentence, read.domain, read.subject, read.change)
    return Standing(kind, standing_text(hit.content), None, None, False)


def with_marks(
    reader: Reader,
    user_id: str,
    found: Sequence[StandingHit],
    marks: Mapping[str, StandingMark],
    k: int,
) -> list[StandingHit]:
    """``found`` (what the rule read: newest first, at least ``k + len(marks)`` when there are that many) as
    the person corrected it (``marks``): a marked message is dropped from it, a pinned one added back as its
    pin says (:func:`pinned_standing`, ``pinned``), and the whole cut to ``k`` in
    :meth:`~refind.store.base.Reader.standing`'s order. A pin of a message no longer stored adds nothing."""
    if not marks:
        return list(found[:k])
    kept = [h for h in found if h.id not in marks]
    pins = {i: m.kind for i, m in marks.items() if m.kind is not None}
    if pins:
        for hit in reader.get(user_id, list(pins)):
            kind = pins.get(hit.id)
            if kind is not None:
                kept.append(StandingHit.of(hit, pinned_standing(hit, kind), pinned=True))
    return sort_standing(kept)[:k]
