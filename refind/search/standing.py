"""A person's standing instructions, preferences and facts, offered beside the evidence.

The design: docs/design.md § "What stands".

:func:`standing_candidates` finds the person's messages the rule of :mod:`refind.standing` recognises (one
query, cached per index version and person), as the person corrected them (their marks: a hidden message
never, one pinned as an instruction or preference always); :func:`standing_blocks` picks those that bear on
a question (from its :class:`~refind.query.QuestionReading`) and shows each by its standing sentence;
:func:`fact_blocks` does the same for the person's lasting facts (:func:`current_facts`).
"""

from __future__ import annotations

import math
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Sequence
from typing import Any, NamedTuple

from refind.embed.base import Embedder
from refind.lexicon import CONSEQUENTIAL_DOMAINS, STANDING_CUE_TERMS
from refind.models import Evidence, Hit, Turn
from refind.policy import POLICY
from refind.profile import supersede
from refind.query.keywords import content_stems
from refind.query.reading import QuestionReading
from refind.standing import is_standing, standing_sentence, standing_text
from refind.store.base import Filters, Reader, StandingHit

__all__ = [
    "CurrentFact",
    "current_facts",
    "fact_blocks",
    "sentence_vectors",
    "standing_blocks",
    "standing_candidates",
]

_SEEN: weakref.WeakKeyDictionary[Any, OrderedDict[str, tuple[Hashable, Any]]] = weakref.WeakKeyDictionary()
_KEPT = 1024  # (what, person) pairs a store keeps (a cache bound, not a tuned number)
_LOCK = threading.Lock()


def _per_version(
    store: Reader, what: str, user_id: str, compute: Callable[[], Any], also: Hashable = None
) -> Any:
    """``compute()``, kept per store, ``what`` and person while the index's version (``generation()``, the
    Lucene engine) is the same: what is read from the index for every question, whatever it asks, is read
    once per version and person, not once per search; ``also``: what else it was computed under (kept while
    it is equal too). Engines without a version compute it each time."""
    generation = getattr(store, "generation", None)
    version = generation() if generation is not None else None
    if version is None:
        return compute()
    key = f"{what}\0{user_id}"
    stamp = (version, also)
    with _LOCK:
        per = _SEEN.get(store)
        kept = per.get(key) if per is not None else None
    if kept is not None and kept[0] == stamp:
        return kept[1]
    found = compute()
    with _LOCK:
        per = _SEEN.setdefault(store, OrderedDict())
        per[key] = (stamp, found)
        per.move_to_end(key)
        while len(per) > _KEPT:
            per.popitem(last=False)
    return found


def standing_candidates(store: Reader, user_id: str) -> list[Hit]:
    """The person's messages that state a standing instruction or preference, among the first
    ``POLICY.standing_pool`` of their own messages ranked by the rule's cue words (the same for every
    question, so found once per index version and person: :func:`_per_version`), with the person's marks
    applied on each call (``Reader.marks``: kept apart from the index's versions): a marked message is taken
    out, those pinned as an instruction or a preference are added."""

    def compute() -> list[Hit]:
        pool = store.query(
            user_id, STANDING_CUE_TERMS, POLICY.standing_pool, Filters(roles=["user"]), content=True
        )
        return [h for h in pool if is_standing(h.role, h.content)]

    found: list[Hit] = _per_version(store, "instructions", user_id, compute)
    marks = store.marks(user_id)
    if not marks:
        return found
    pinned = [i for i, m in marks.items() if m.kind in ("instruction", "preference")]
    kept = [h for h in found if h.id not in marks]
    return kept + (store.get(user_id, pinned) if pinned else [])


class CurrentFact(NamedTuple):
    """A person's current lasting fact: the stored fact, the content stems of its sentence, and the newest
    earlier fact on the same subject that it superseded (None: it changed nothing)."""

    hit: StandingHit
    stems: frozenset[str]
    earlier: StandingHit | None


def current_facts(store: Reader, user_id: str) -> list[CurrentFact]:
    """The person's current lasting facts (``Reader.standing``, kind ``fact``, among the newest
    ``POLICY.standing_facts_pool`` standing messages), newest first. A fact a later one supersedes (the same
    subject, or a change in the same domain: :func:`refind.profile.supersede`, the rule ``Memory.profile``
    shows) is not current, but kept as the ``earlier`` of the newest fact that superseded it. Read once per
    index version and person (:func:`_per_version`)."""

    def compute() -> list[CurrentFact]:
        stored = [h for h in store.standing(user_id, POLICY.standing_facts_pool) if h.kind == "fact"]
        by = supersede(stored)
        earlier: dict[str, StandingHit] = {}
        for h in stored:  # newest first: the first seen of those a fact superseded is the newest
            later = by.get(h.id)
            while later in by:  # superseded in turn: the current end of the chain
                later = by[later]
            if later is not None:
                earlier.setdefault(later, h)
        return [
            CurrentFact(h, frozenset(content_stems(h.sentence)), earlier.get(h.id))
            for h in stored
            if h.id not in by
        ]

    # Reader.standing applies the person's marks, which change apart from the index's versions: they are
    # part of what the facts were read under
    marks = tuple(sorted((i, m.kind, m.at) for i, m in store.marks(user_id).items()))
    found: list[CurrentFact] = _per_version(store, "facts", user_id, compute, marks)
    return found


_VECTORS: OrderedDict[tuple[str, str], array[float]] = OrderedDict()
_VECTORS_KEPT = 8192  # standing sentences whose vectors are kept (a cache bound, not a tuned number)


def sentence_vectors(embedder: Embedder, sentences: Sequence[str]) -> list[array[float]]:
    """``embedder``'s vectors of ``sentences`` (standing sentences: the same few for every search of a person),
    each embedded once per model and kept (least recently used dropped past a bound)."""
    keys = [(str(embedder.name), s) for s in sentences]
    with _LOCK:
        kept = {k: _VECTORS[k] for k in keys if k in _VECTORS}
        for k in kept:
            _VECTORS.move_to_end(k)
    missing = sorted({k for k in keys if k not in kept})
    if missing:
        made = embedder.embed([s for _, s in missing])
        with _LOCK:
            for k, v in zip(missing, made, strict=True):
                kept[k] = _VECTORS[k] = array("f", v)
            while len(_VECTORS) > _VECTORS_KEPT:
                _VECTORS.popitem(last=False)
    return [kept[k] for k in keys]


def standing_blocks(
    store: Reader,
    user_id: str,
    reading: QuestionReading,
    k: int,
    read_ids: Collection[str],
    facts: int = 0,
    nearness: Callable[[Sequence[str]], Sequence[float]] | None = None,
) -> list[Evidence]:
    """Up to ``k`` of this person's standing instructions and preferences not among ``read_ids``: those
    sharing most words with the question first (each shared word weighted by how few candidates hold it),
    then the most recent; for a question that is not a request, at most ``POLICY.standing_not_requested``
    and only those sharing a word. Each shows its standing sentence, the rest of its message cut (``[…]``).
    Then up to ``facts`` of the person's lasting facts (:func:`fact_blocks`, ranked by ``nearness`` when
    given)."""
    lasting = fact_blocks(store, user_id, reading, facts, nearness, read_ids) if facts > 0 else []
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
    store: Reader,
    user_id: str,
    reading: QuestionReading,
    k: int,
    nearness: Callable[[Sequence[str]], Sequence[float]] | None = None,
    read_ids: Collection[str] = (),
) -> list[Evidence]:
    """Up to ``k`` of the person's current lasting facts (:func:`current_facts`; issue 37) not among
    ``read_ids``, and with them those among ``read_ids`` that rank above the last of the ``k``: a fact a round
    found may still fall out of a small budget with its session, and the packing shows it once
    (:func:`refind.evidence.order_evidence` leaves out a fact's block where the evidence shows its sentence),
    so a fact a round read never takes an unread one's place. A request ("can you put together snacks for a hike?") shares no word with the fact that
    matters ("I'm type 1 diabetic"): the facts are in view without being asked for.

    With ``nearness`` (each sentence's cosine to the question: the search has an embedder), the nearest
    first, those of the domains with consequences (:data:`refind.lexicon.CONSEQUENTIAL_DOMAINS`: health,
    medicines, diet, household, legal, money, work, faith) and those the person pinned raised by
    ``POLICY.fact_domain_bonus``; a question
    that is not a request gets the ``POLICY.facts_not_requested`` nearest at or above
    ``POLICY.fact_floor_not_requested``. Without it, those sharing a word with
    the question first, then those of the domains with consequences and those pinned, newest first within each; a question that
    is not a request gets only those sharing a word. docs/benchmarks/ablation.md "A person's lasting facts".

    A question that neither asks for something nor names the asker ("When did Caroline go to the support
    group?") gets none.

    Each shows its standing sentence; a fact that changed an earlier one on the same subject ("turns out the
    high readings were white-coat effect") is followed by that earlier one, marked as such."""
    if k <= 0 or not (reading.is_request or reading.names_asker):
        return []  # a question about someone else that asks for nothing: the asker's facts do not bear on it
    facts = current_facts(store, user_id)
    if not facts:
        return []
    if nearness is not None:
        sentences = [f.hit.sentence for f in facts] + [f.earlier.sentence for f in facts if f.earlier]
        cosine = dict(zip(sentences, nearness(sentences), strict=True))
        # a fact that changed an earlier one is as near as the nearer of the two ("Switched jobs!" and "I
        # just started at a Big Four firm as an external auditor")
        near = {
            f.hit.id: max(cosine[f.hit.sentence], cosine[f.earlier.sentence] if f.earlier else -1.0)
            for f in facts
        }
        bonus = POLICY.fact_domain_bonus
        ranked = sorted(
            facts,
            key=lambda f: (-(near[f.hit.id] + bonus * _weighty(f.hit)), f.hit.id),
        )
        if not reading.is_request:  # a question about what happened: the nearest few, if near at all
            ranked = [f for f in ranked if near[f.hit.id] >= POLICY.fact_floor_not_requested]
            k = min(k, POLICY.facts_not_requested)
    else:
        shares = {f.hit.id: bool(f.stems & reading.stems) for f in facts}
        ranked = sorted(
            facts,
            key=lambda f: (
                not shares[f.hit.id],
                not _weighty(f.hit),
                -f.hit.timestamp,
                f.hit.id,
            ),
        )
        if not reading.is_request:  # a question about what happened: only the facts on its topic
            ranked = [f for f in ranked if shares[f.hit.id]]
    kept, unread = [], 0
    for f in ranked:
        if unread == k:
            break
        kept.append(f)
        unread += f.hit.id not in read_ids
    ranked = kept
    out = []
    for i, f in enumerate(ranked):
        h, score = f.hit, 2 * (len(ranked) - i)  # best first; an earlier fact right after the one it preceded
        out.append(_block(h.id, h.session_id, h.turn, h.role, h.sentence, h.timestamp, score, "fact"))
        e = f.earlier
        if e is not None:
            out.append(
                _block(e.id, e.session_id, e.turn, e.role, e.sentence, e.timestamp, score - 1, "earlier fact")
            )
    return out


def _weighty(h: StandingHit) -> bool:
    """A fact of a domain with consequences, or one the person pinned (they said it matters)."""
    return h.domain in CONSEQUENTIAL_DOMAINS or h.pinned


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
    if sentence is None:  # a message pinned as an instruction: what it is shown by (at most a bound of it)
        return standing_text(text)
    at = text.find(sentence)
    if at < 0:
        return text
    end = at + len(sentence)
    while end < len(text) and text[end] in ".!?":
        end += 1
    said = text[at:end]
    before, after = text[:at].strip(), text[end:].strip()
    return f"{said} […]" if before or after else said
