"""A person's standing instructions, preferences and facts, offered beside the evidence.

The design: docs/design.md § "What stands".

:func:`standing_candidates` finds the person's messages the rule of :mod:`refind.standing` recognises (one
query, cached per index version and person); :func:`standing_blocks` picks those that bear on a question
(from its :class:`~refind.query.QuestionReading`) and shows each by its standing sentence.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Collection
from typing import Any

from refind.lexicon import CONSEQUENTIAL_DOMAINS, STANDING_CUE_TERMS
from refind.models import Evidence, Hit, Turn
from refind.policy import POLICY
from refind.query.keywords import content_stems
from refind.query.reading import QuestionReading
from refind.standing import is_standing, standing_sentence
from refind.store.base import Filters, Reader

__all__ = ["fact_blocks", "standing_blocks", "standing_candidates"]

_SEEN: weakref.WeakKeyDictionary[Any, OrderedDict[str, tuple[int, list[Hit]]]] = weakref.WeakKeyDictionary()
_USERS = 1024  # people whose candidates a store keeps (a cache bound, not a tuned number)
_LOCK = threading.Lock()


def standing_candidates(store: Reader, user_id: str) -> list[Hit]:
    """The person's messages that state a standing instruction or preference, among the first
    ``POLICY.standing_pool`` of their own messages ranked by the rule's cue words: the same for every
    question, so an engine that says which version of the index it searches (``generation()``, the Lucene
    engine) has them found once per version and person, not once per search."""
    generation = getattr(store, "generation", None)
    version = generation() if generation is not None else None
    if version is not None:
        with _LOCK:
            per = _SEEN.get(store)
            kept = per.get(user_id) if per is not None else None
        if kept is not None and kept[0] == version:
            return kept[1]
    pool = store.query(
        user_id, STANDING_CUE_TERMS, POLICY.standing_pool, Filters(roles=["user"]), content=True
    )
    found = [h for h in pool if is_standing(h.role, h.content)]
    if version is not None:
        with _LOCK:
            per = _SEEN.setdefault(store, OrderedDict())
            per[user_id] = (version, found)
            per.move_to_end(user_id)
            while len(per) > _USERS:
                per.popitem(last=False)
    return found


def standing_blocks(
    store: Reader,
    user_id: str,
    reading: QuestionReading,
    k: int,
    read_ids: Collection[str],
    facts: int = 0,
) -> list[Evidence]:
    """Up to ``k`` of this person's standing instructions and preferences not among ``read_ids``: those
    sharing most words with the question first (each shared word weighted by how few candidates hold it),
    then the most recent; for a question that is not a request, at most ``POLICY.standing_not_requested``
    and only those sharing a word. Each shows its standing sentence, the rest of its message cut (``[…]``).
    Then up to ``facts`` of the person's lasting facts (:func:`fact_blocks`)."""
    lasting = fact_blocks(store, user_id, reading, facts, read_ids) if facts > 0 else []
    if k <= 0:
        return lasting
    found = [h for h in standing_candidates(store, user_id) if h.id not in read_ids]
    if not found:
        return lasting
    asked = reading.stems
    stems = {h.id: content_stems(h.content) for h in found}
    # shared words weighted by how few of the candidates hold them: a word every instruction shares
    # ("app", "project") says little about which one bears on this question
    df: dict[str, int] = {}
    for words in stems.values():
        for w in words & asked:
            df[w] = df.get(w, 0) + 1
    n = len(found)
    overlap = {h.id: sum(math.log(1 + n / df[w]) for w in asked & stems[h.id]) for h in found}
    if not reading.is_request:  # not a request: only those on its topic, fewer
        found, k = [h for h in found if overlap[h.id] > 0], min(k, POLICY.standing_not_requested)
    ranked = sorted(found, key=lambda h: (-overlap[h.id], -h.timestamp, h.id))[:k]
    shown = [
        _block(h.id, h.session_id, h.turn, h.role, _shown(h.content), h.timestamp, len(ranked) - i, None,
               h.speaker, h.time_text)
        for i, h in enumerate(ranked)
    ]  # fmt: skip
    return shown + lasting


def fact_blocks(
    store: Reader, user_id: str, reading: QuestionReading, k: int, read_ids: Collection[str]
) -> list[Evidence]:
    """Up to ``k`` of the person's lasting facts (``Reader.standing``, kind ``fact``; issue 37) not among
    ``read_ids`` and not superseded by a later one on the same subject: those sharing a word with the question
    first (a fact on its topic), then those of the domains with consequences
    (:data:`refind.lexicon.CONSEQUENTIAL_DOMAINS`: health, medicines, diet, household, legal, money, work,
    faith), then the rest, newest first within each. A request ("can you put together snacks for a hike?")
    shares no word with the fact that matters ("I'm type 1 diabetic"): the fact is in view without being asked
    for. Each shows its standing sentence."""
    if k <= 0:
        return []
    stored = [h for h in store.standing(user_id, POLICY.standing_facts_pool) if h.kind == "fact"]
    current = []
    seen: set[tuple[str | None, str | None]] = set()
    for h in stored:  # newest first: an older fact on a subject already seen is superseded
        key = (h.domain, h.subject)
        if h.subject is not None and key in seen:
            continue
        seen.add(key)
        if h.id not in read_ids:
            current.append(h)
    if not current:
        return []
    asked = reading.stems
    shares = {h.id: bool(content_stems(h.sentence) & asked) for h in current}
    if not reading.is_request and not any(shares.values()):
        return []  # a question about what happened, on another topic: its facts do not bear on it
    ranked = sorted(
        current,
        key=lambda h: (
            not shares[h.id],
            h.domain not in CONSEQUENTIAL_DOMAINS,
            -h.timestamp,
            h.id,
        ),
    )
    if not reading.is_request:
        ranked = [h for h in ranked if shares[h.id]]
    ranked = ranked[:k]
    return [
        _block(h.id, h.session_id, h.turn, h.role, h.sentence, h.timestamp, len(ranked) - i, "fact")
        for i, h in enumerate(ranked)
    ]


def _block(
    turn_id: str,
    session_id: str,
    turn: int,
    role: str,
    content: str,
    timestamp: int,
    score: int,
    kind: str | None,
    speaker: str | None = None,
    time_text: str | None = None,
) -> Evidence:
    """One standing message as a block of its own (at most a few: built as models, not the hot path's trusted
    dicts); ``score`` orders them when packed, best first (the block ranks no session)."""
    return Evidence(
        id=f"{session_id}#{turn}-{turn}",
        session_id=session_id,
        session_date=timestamp,
        session_date_text=time_text,
        turns=[
            Turn(
                id=turn_id,
                turn=turn,
                role=role,
                content=content,
                timestamp=timestamp,
                speaker=speaker,
                time_text=time_text,
                matched=True,
                score=float(score),
            )
        ],  # fmt: skip
        rounds=[0],
        standing=True,
        standing_kind=kind,
    )


def _shown(text: str) -> str:
    """The instruction itself, not the whole message it sits in (the rest cut, ``[…]``)."""
    sentence = standing_sentence(text)
    at = text.find(sentence) if sentence else -1
    if sentence is None or at < 0:
        return text
    end = at + len(sentence)
    while end < len(text) and text[end] in ".!?":
        end += 1
    said = text[at:end]
    before, after = text[:at].strip(), text[end:].strip()
    return f"{said} […]" if before or after else said
