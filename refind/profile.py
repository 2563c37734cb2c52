"""A person's standing facts, instructions and preferences as a list they can read (issue 37).

:meth:`refind.Memory.profile` lists what the person said that stands (:mod:`refind.standing`, stored with
each message at write time), newest first, each marked ``current`` or superseded. :func:`supersede` is the
one place that decides what supersedes what: a standing fact is superseded by the next later fact about the
same subject ("I'm vegan" by "I'm no longer vegan"), or by the next later fact that says a fact changed
(``change``: "we moved to Tucson", "turns out …", "switched off lithium … I'm on lamotrigine now") in the
same domain. Both are kept and shown
with their dates; only the newer is current. Instructions and preferences carry no subject and no domain, so
they supersede nothing: each stays current until the person deletes it.

A person corrects the list with marks (:meth:`refind.Memory.pin`, :meth:`~refind.Memory.hide`,
:meth:`~refind.Memory.unpin`), which every engine keeps apart from the messages and applies in
:meth:`~refind.store.base.Reader.standing`: a hidden message is not listed, a pinned one is, as the kind it
was pinned as, and stays current (nothing supersedes what the person said stands; a pinned fact still
supersedes older ones on its subject). :func:`marked_message` is how a marked message is shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from refind.models import Hit, MarkedMessage, StandingFact
from refind.standing import standing_text
from refind.store.base import StandingHit, StandingMark

__all__ = ["marked_message", "profile_facts", "supersede"]


def _order(h: StandingHit) -> tuple[int, int, str]:
    """Oldest first: by time, then turn, then id (the engines' ties)."""
    return (h.timestamp, h.turn, h.id)


def supersede(found: Sequence[StandingHit]) -> dict[str, str]:
    """For each standing message of ``found`` that a later one supersedes, that later one's id (the first
    after it that does): the rule of the module docstring. Messages nothing supersedes (pinned ones among
    them) are absent."""
    older = sorted(found, key=_order)
    by: dict[str, str] = {}
    for i, h in enumerate(older):
        if h.kind != "fact" or h.pinned:
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
            pinned=h.pinned,
        )  # fmt: skip
        for h in found
    ]


def marked_message(hit: Hit, mark: StandingMark) -> MarkedMessage:
    """The message ``hit`` with its ``mark``, as :meth:`refind.Memory.marks` lists it."""
    return MarkedMessage(
        message_id=hit.id,
        session_id=hit.session_id,
        turn=hit.turn,
        timestamp=hit.timestamp,
        role=hit.role,
        mark="hidden" if mark.kind is None else "pinned",
        kind=mark.kind,
        sentence=standing_text(hit.content),
        marked_at=mark.at,
    )
