"""A person's standing facts, instructions and preferences as a list they can read (issue 37).

:meth:`refind.Memory.profile` lists what the person said that stands (:mod:`refind.standing`, stored with
each message at write time), newest first, each marked ``current`` or superseded. :func:`supersede` is the
one place that decides what supersedes what: a standing fact is superseded by the next later fact about the
same subject ("I'm vegan" by "I'm no longer vegan"), or by the next later fact that says a fact changed
(``change``: "we moved to Tucson", "turns out …", "switched off lithium … I'm on lamotrigine now") in the
same domain. Both are kept and shown
with their dates; only the newer is current. Instructions and preferences carry no subject and no domain, so
they supersede nothing: each stays current until the person deletes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from refind.models import StandingFact
from refind.store.base import StandingHit

__all__ = ["profile_facts", "supersede"]


def _order(h: StandingHit) -> tuple[int, int, str]:
    """Oldest first: by time, then turn, then id (the engines' ties)."""
    return (h.timestamp, h.turn, h.id)


def supersede(found: Sequence[StandingHit]) -> dict[str, str]:
    """For each standing message of ``found`` that a later one supersedes, that later one's id (the first
    after it that does): the rule of the module docstring. Messages nothing supersedes are absent."""
    older = sorted(found, key=_order)
    by: dict[str, str] = {}
    for i, h in enumerate(older):
        if h.kind != "fact":
            continue
        for later in older[i + 1 :]:
            if later.kind != "fact":
                continue
            same = h.subject is not None and later.subject == h.subject
            changed = later.change and later.domain is not None and later.domain == h.domain
            if same or changed:
                by[h.id] = later.id
                break
    return by


def profile_facts(found: Sequence[StandingHit]) -> list[StandingFact]:
    """``found`` (newest first, as :meth:`~refind.store.base.Reader.standing` gives them) as the
    person's profile: each with what supersedes it and whether it is current."""
    by = supersede(found)
    return [
        StandingFact(
            message_id=h.id,
            session_id=h.session_id,
            turn=h.turn,
            timestamp=h.timestamp,
            kind=h.kind,
            sentence=h.sentence,
            domain=h.domain,
            subject=h.subject,
            change=h.change,
            superseded_by=by.get(h.id),
            current=h.id not in by,
        )  # fmt: skip
        for h in found
    ]
