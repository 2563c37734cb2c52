"""What stored messages say that stands, for engines whose index was written before it was stored (issue 37).

A message's standing (:func:`refind.standing.read_standing`) is read by the write path and stored with the
message. An index written before that, or by another version of the rule
(:data:`refind.standing.RULE_VERSION`), gets it on its first writable open: :func:`classify_stored` reads
every person's own messages once, session by session in bounded batches, and hands the engine the messages
whose stored standing differs from the rule's (most messages stand for nothing and are not rewritten). A
read-only open of such an index cannot write: :func:`read_standing_now` reads the person's messages with the
rule on each call instead (slower, and said so in the log once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from refind.models import Hit
from refind.standing import read_standing
from refind.store.base import Filters, Reader, StandingHit, standing_dict

log = logging.getLogger(__name__)

__all__ = ["classify_stored", "read_standing_now", "sort_standing"]

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
