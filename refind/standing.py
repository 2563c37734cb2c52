"""What a person says that stands: instructions, preferences and facts, read without an LLM.

The design: docs/design.md § "What stands".

A person's "always include version numbers" or "I prefer minimal dependencies" from weeks ago is evidence for
today's request, and so is "I'm type 1 diabetic" for "snacks for an all-day hike?", though it shares no word
with it. :func:`read_standing` reads one message and says whether it stands, and as what
(:class:`Standing`). Only the person's own messages (role ``user``) stand. A message is read sentence by
sentence (split at ``.``, ``!`` and ``?`` before a space, at ``;``, at line breaks and at a spaced dash ``" - "``;
a sentence of more than :attr:`~refind.policy.Policy.standing_max_words` words is a story and skipped), and its
first standing sentence is the one kept, verbatim (trimmed). Instructions and preferences are looked for first,
in every sentence; then facts.

**Instruction or preference** (today's rule, :func:`standing_sentence`): a sentence that

- **starts** with a directive: ``always``, ``never``, ``don't`` / ``do not`` (``ever``), ``avoid``,
  ``make sure``, ``be sure to``, ``remember to``, ``from now on``, ``going forward``, ``in the future``,
  ``for all future``, ``whenever``, ``every time``, ``stick to`` (after an optional ``please``, ``and``,
  ``also`` or ``so``) (:data:`~refind.lexicon.STANDING_START`), or
- **holds** a standing phrase anywhere: ``from now on``, ``going forward``, ``in (the) future``,
  ``for future``, ``every time you``, ``whenever you``, ``each time you``, ``(please) always``,
  ``(please) never``; or a preference: ``I prefer``, ``I'd / I would prefer``, ``I'd / I would rather``,
  ``my preference is``, ``I like it when you``, ``I don't like it when you``, ``I want you to always``
  (:data:`~refind.lexicon.STANDING_ANYWHERE`). It is a ``preference`` when it holds one of the preference
  phrases (:data:`~refind.lexicon.STANDING_PREFERENCE`), else an ``instruction``.

**Fact**: a sentence stating something lasting about the person, their household or their work. It

1. names the person in the first person (``I``, ``my``, ``we``, ``our``…: :data:`~refind.lexicon.FACT_FIRST_PERSON`),
   or opens on their new thing, "my" left out as news is written ("New passport arrived today", "New job
   starts Monday": ``new`` and an owned noun of :data:`~refind.lexicon.FACT_OWNED`);
2. holds a word or phrase of a domain (:data:`~refind.lexicon.FACT_DOMAINS`: health, medication, diet, religion,
   family, pets, home, work, money, legal, commitment, values; "diagnosed", "allergic", "my son", "landlord",
   "employer", "visa", "league", "never again"), or has the shape of a lasting statement
   (:data:`~refind.lexicon.FACT_FRAMES`: "I'm on …statin", "I don't eat …", "every Saturday", "I'm a pacifist.",
   "we're in Minneapolis");
3. is not a question (it ends with ``?`` or opens with a question word or auxiliary:
   :data:`~refind.lexicon.FACT_QUESTION_START`), not a request or plan in the first person ("I'm thinking of…",
   "I'd love…", "I need ideas", "could you…", "I have a question about…": :data:`~refind.lexicon.FACT_INTENT`),
   not a sentence that opens by asking for something ("Give me names for a baby girl", "Write a toast for my
   sister": :data:`~refind.lexicon.FACT_REQUEST_OPENING`) unless it also states something
   (:data:`~refind.lexicon.FACT_STATEMENT`: "Give me snack ideas, I'm type 1 diabetic") and not hypothetical ("if
   I…", "imagine", "my character": :data:`~refind.lexicon.FACT_HYPOTHETICAL`);
4. is not passing: no day ("today", "tonight", "tomorrow", "next week"), mood of the moment ("so tired",
   "hungry") or errand ("I have a meeting in…") (:data:`~refind.lexicon.FACT_TRANSIENT`), and no "right now" /
   "at the moment" (:data:`~refind.lexicon.FACT_MOMENT`) unless it names a condition, a medicine, a diet, the
   household, the law, money, work or faith ("I'm on isotretinoin right now" stands; "I'm at the library right
   now" does not). A sentence that says a fact changed (:data:`~refind.lexicon.FACT_CHANGE`: "no longer",
   "turns out", "switched", "cleared", "was born", "adopted", "we're now in") and holds a domain word or a
   lasting shape stands though it says when ("the surgeon cleared me today", "we adopted a beagle yesterday").

Its ``domain`` is the first domain (in :data:`~refind.lexicon.FACT_DOMAINS` order) with a word in the sentence,
else the frame's; its ``subject`` the domain word matched (lowercased; for a frame, the frame's first word that
is not a pronoun), which a later fact on the same subject supersedes (:mod:`refind.profile`); ``change`` says
the sentence (or the one before it: "Switched off lithium. I'm on lamotrigine now.") says a fact changed.

Search offers standing messages beside the evidence only, in a small share of the budget it reserves for them
(docs/search.md), marked as such, never in place of the evidence.

English only, and deliberately lexical. Known misses, measured in docs/benchmarks/standing.md:

- facts stated without a domain word or frame: "I'm six foot seven", "our apartment faces north", "my parents
  are very traditional" (a lasting fact in ordinary words the lists cannot hold without reading every
  "I'm in a hurry" as one); implied subjects ("Switched jobs!", "Baby boy arrived!", "Turns out the tree-nut thing was a false alarm"
  with no "I"/"my" in or beside the sentence; "New <owned noun>" is read);
- facts inside a question or a request sentence ("Funny ask coming from someone with celiac, I know?");
- chatter that uses a domain word in passing ("my dog just knocked over my coffee" is read as a pets fact;
  "I always lose my keys" is not, as it holds none);
- a fact whose only time word is passing-sounding ("I'm on probation until next month").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from refind.lexicon import (
    FACT_CHANGE,
    FACT_DOMAINS,
    FACT_FIRST_PERSON,
    FACT_FRAME_GATES,
    FACT_FRAMES,
    FACT_GATE_PHRASES,
    FACT_GATE_WORDS,
    FACT_HYPOTHETICAL,
    FACT_INTENT,
    FACT_MOMENT,
    FACT_OWNED,
    FACT_QUESTION_START,
    FACT_REQUEST_OPENING,
    FACT_STATE_DOMAINS,
    FACT_STATEMENT,
    FACT_TRANSIENT,
    KEYWORD_STOP_WORDS,
    STANDING_ANYWHERE,
    STANDING_GATE,
    STANDING_GATE_PHRASES,
    STANDING_LEAD_WORDS,
    STANDING_PREFERENCE,
    STANDING_START,
    STANDING_START_GATE,
    STANDING_START_WORDS,
)
from refind.policy import POLICY

__all__ = [
    "RULE_VERSION",
    "Standing",
    "StandingKind",
    "is_standing",
    "read_standing",
    "standing_sentence",
    "standing_text",
]

StandingKind = Literal["instruction", "preference", "fact"]

RULE_VERSION = 3
"""The version of this rule, recorded in an index beside what it read in each message: an index read by
another version (or by none: written before issue 37) is read again on its first writable open. Change it
with any change to the rule or its lists that changes what it reads."""

_READ_CHARS = 20_000  # characters of one message the rule reads: a bound of work
_SHOWN_CHARS = 1_000  # characters of a message shown for it when the rule reads no sentence in it (a pinned
# or hidden one): a bound of what one pin puts in every search's standing block

# sentences: split after . ! ? before a space (not "3.6"), at ; and line breaks, at a spaced dash
_SPLIT = re.compile(r"(?<=[.!?])\s+|[;\n]+|\s+[-–—]\s+")
_OPEN = "-*•>#\"'“”‘’([ \t\r"  # list marks and opening quotes before a sentence
_CLOSE = "\"'”’ \t\r"  # closing quotes after it
_TOKEN = re.compile(r"[a-z0-9]+(?:['/-][a-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class Standing:
    """What a message says that stands (:func:`read_standing`)."""

    kind: StandingKind
    sentence: str
    """The standing sentence, verbatim from the message (whitespace and list marks trimmed)."""
    domain: str | None
    """For a fact: a key of :data:`refind.lexicon.FACT_DOMAINS`; None for an instruction or preference."""
    subject: str | None
    """The word the fact is about (the domain word matched, lowercased): a later fact with the same subject
    supersedes it. None for an instruction or preference."""
    change: bool
    """The sentence (or the one before it) says a standing fact changed (:data:`refind.lexicon.FACT_CHANGE`)."""


def _tokens(text: str) -> list[str]:
    """``text``'s words as the rule compares them: lowercased, one apostrophe."""
    return _TOKEN.findall(text.lower().replace("’", "'"))


def _phrases(table: dict[str, frozenset[str]]) -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """Each word or phrase of ``table`` as its tokens with its domain (the first domain that holds it), by
    first token, longest first."""
    seen: dict[tuple[str, ...], str] = {}
    for domain, words in table.items():
        for w in words:
            seen.setdefault(tuple(_tokens(w)), domain)
    by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for phrase, domain in sorted(seen.items(), key=lambda e: -len(e[0])):
        by_first.setdefault(phrase[0], []).append((phrase, domain))
    return by_first


_DOMAIN_PHRASES = _phrases(FACT_DOMAINS)
_OWNED = {w: d for d, words in reversed(FACT_OWNED.items()) for w in words}  # the first domain wins
_DOMAIN_ORDER = {d: i for i, d in enumerate(FACT_DOMAINS)}
_POSSESSORS = frozenset({"my", "our"})  # the two words an owned noun follows (the rule's definition)


_MARKS = ("", ".", ",", "!", "?", ";", ":", ")", "!!", "!!!", "...", "?!", ".)", '"', '."', ',"', "'s")


def _gate(words: frozenset[str] | set[str]) -> frozenset[str]:
    """``words`` as a message split at spaces shows them: bare, or with a closing mark after."""
    return frozenset(w + mark for w in words for mark in _MARKS)


def _gate_word(phrase: tuple[str, ...]) -> str:
    """The word of a domain phrase a message must hold to hold the phrase: its last that is not a function
    word ("jobs" of "changed jobs", "never" of "never again")."""
    return next((t for t in reversed(phrase) if t not in KEYWORD_STOP_WORDS), phrase[-1])


# a message is read further only when its space-split words meet these (the rule's cost at write time)
_PERSON_GATE = _gate(FACT_FIRST_PERSON)
_INSTRUCTION_GATE = _gate(STANDING_GATE)
_START_GATE = _gate(STANDING_START_GATE)
# FACT_GATE_PHRASES: looked for (each by a substring search: one pattern of them all cost 4-10x more on
# LongMemEval's long messages) only in a message holding a phrase's first word other than a bare
# "i" or "we" (which every message has: "am" of "i am on"); a phrase that
# starts inside a word ("-old" of "8-year-old") is looked for always
_PHRASE_FIRST = _gate(
    {next((w for w in p.split() if w not in ("i", "we")), p) for p in FACT_GATE_PHRASES if p[0].isalpha()}
)
_INNER_PHRASES = tuple(p for p in FACT_GATE_PHRASES if not p[0].isalpha())
_PHRASES = tuple(sorted(FACT_GATE_PHRASES))
# the phrases by the gate word of _PHRASE_FIRST that admits them: a message is searched only for the phrases
# whose first word it holds (a few of the two dozen)
_PHRASES_BY_WORD: dict[str, tuple[str, ...]] = {
    w: tuple(
        p
        for p in _PHRASES
        if p[0].isalpha() and w.startswith(next((x for x in p.split() if x not in ("i", "we")), p))
    )
    for w in _PHRASE_FIRST
}
# a sentence after the first that opens with a directive ("... . Always cite the docs")
_DIRECTIVE_AFTER = re.compile(r"[.!?;\n][\s\"'*>#-]*(?:" + STANDING_START.pattern + ")", re.IGNORECASE)
_FACT_GATE = _gate(
    {_gate_word(phrase) for phrases in _DOMAIN_PHRASES.values() for phrase, _ in phrases}
    | set(_OWNED)
    | FACT_GATE_WORDS
)
# every gate's words at once: a message's words are intersected with these once, and each gate is then
# tested on the few found (most messages hold none but a pronoun)
_ANY_GATE = _PERSON_GATE | _INSTRUCTION_GATE | _START_GATE | _PHRASE_FIRST | _FACT_GATE | {"new"}
# found alone, these open no gate (a fact needs more than "I"); "i'm" of "i'm in " is a phrase's first word
_ONLY_PERSON = (_PERSON_GATE | {"new"}) - (_INSTRUCTION_GATE | _START_GATE | _PHRASE_FIRST | _FACT_GATE)
_INNER = re.compile("|".join(re.escape(p) for p in _INNER_PHRASES) or r"(?!x)x")


def _sentences(text: str) -> list[str]:
    """The sentences of ``text`` (the rule's split), each trimmed, its closing mark kept; at most
    ``POLICY.standing_max_words`` words each (a longer one is a story)."""
    out = []
    for part in _SPLIT.split(text[:_READ_CHARS]):
        sentence = part.lstrip(_OPEN).rstrip(_CLOSE)
        if sentence and sentence.count(" ") < POLICY.standing_max_words:
            out.append(sentence)
    return out


def _instruction(sentence: str, tokens: list[str]) -> bool:
    """Whether ``sentence`` (its ``tokens``) gives a standing instruction or preference (today's rule)."""
    first = next((t for t in tokens if t not in STANDING_LEAD_WORDS), "")
    if (
        first not in STANDING_START_WORDS
        and STANDING_GATE.isdisjoint(tokens)
        and not any(phrase in sentence.lower() for phrase in STANDING_GATE_PHRASES)
    ):
        return False
    bare = sentence.rstrip(".!?")
    return bool(STANDING_START.match(bare) or STANDING_ANYWHERE.search(bare))


def _words(tokens: list[str]) -> list[tuple[str, str]]:
    """(domain, word) for each domain word or owned noun ("my son") among ``tokens``, in order."""
    found = []
    n = len(tokens)
    for i, t in enumerate(tokens):
        for phrase, domain in _DOMAIN_PHRASES.get(t, ()):
            if tuple(tokens[i : i + len(phrase)]) == phrase:
                found.append((domain, " ".join(phrase)))
                break
        if (t in _POSSESSORS or (i == 0 and t == "new")) and i + 1 < n:
            nxt = tokens[i + 1]
            if nxt in _OWNED:
                found.append((_OWNED[nxt], nxt))
            elif i + 2 < n and tokens[i + 2] in _OWNED and not nxt.endswith("'s"):
                found.append((_OWNED[tokens[i + 2]], tokens[i + 2]))
    return found


def _frame(sentence: str, tokens: list[str]) -> tuple[str, str] | None:
    """(domain, subject) of the first lasting shape ``sentence`` has, or None: the subject is the shape's
    last word that does not name the person."""
    held = set(tokens)
    if any(t.endswith("-old") for t in tokens):
        held.add("old")
    for domain, pattern in FACT_FRAMES.items():
        if FACT_FRAME_GATES[domain].isdisjoint(held):
            continue
        m = pattern.search(sentence)
        if m is not None:
            words = [w for w in _tokens(m.group(0)) if w not in FACT_FIRST_PERSON]
            return domain, words[-1] if words else domain
    return None


def _implied_owner(tokens: list[str]) -> bool:
    """Whether the sentence leaves out the person it is about but opens on their new thing ("New passport
    arrived today", "New job starts Monday": "my" dropped, as news is written)."""
    return len(tokens) > 1 and tokens[0] == "new" and tokens[1] in _OWNED


def _fact(sentence: str, tokens: list[str], near_person: bool) -> tuple[str, str, bool] | None:
    """(domain, subject, change) when ``sentence`` states a standing fact (the rule above), else None;
    ``near_person``: a sentence next to it names the person (a change may leave its own subject out)."""
    person = not FACT_FIRST_PERSON.isdisjoint(tokens) or _implied_owner(tokens)
    if not (person or near_person) or not tokens:
        return None
    if sentence.endswith("?") or tokens[0] in FACT_QUESTION_START:
        return None
    if FACT_REQUEST_OPENING.match(sentence) and not FACT_STATEMENT.search(sentence):
        return None  # "Give me some names for a baby girl": asks, does not state
    found = _words(tokens)
    if found:
        domain, subject = min(found, key=lambda f: _DOMAIN_ORDER[f[0]])
    else:
        if not person:
            return None
        framed = _frame(sentence, tokens)
        if framed is None:
            return None
        domain, subject = framed
    if FACT_INTENT.search(sentence) or FACT_HYPOTHETICAL.search(sentence):
        return None
    change = bool(FACT_CHANGE.search(sentence))
    if not person and not (change and found):
        return None
    if not change:
        if FACT_TRANSIENT.search(sentence):
            return None
        if domain not in FACT_STATE_DOMAINS and FACT_MOMENT.search(sentence):
            return None
    return domain, subject, change


def read_standing(role: str, text: str) -> Standing | None:
    """What the message of ``role`` with ``text`` says that stands, or None (the rule above): its first
    instruction or preference sentence, else its first fact sentence."""
    if role != "user" or not text:
        return None
    low = (text if len(text) <= _READ_CHARS else text[:_READ_CHARS]).lower()
    if "’" in low:
        low = low.replace("’", "'")
    words = _ANY_GATE.intersection(low.split())
    inner = _INNER.search(low) is not None
    if not inner and words.issubset(_ONLY_PERSON):
        return None  # most messages: no word of any gate but a pronoun
    instruction = not _INSTRUCTION_GATE.isdisjoint(words) or (
        not _START_GATE.isdisjoint(words)
        and (
            any(phrase in low for phrase in STANDING_GATE_PHRASES)
            or STANDING_START.match(low.lstrip(_OPEN)) is not None
            or _DIRECTIVE_AFTER.search(low) is not None
        )
    )
    fact = (not _PERSON_GATE.isdisjoint(words) or "new" in words) and (
        not _FACT_GATE.isdisjoint(words)
        or any(phrase in low for w in _PHRASE_FIRST.intersection(words) for phrase in _PHRASES_BY_WORD[w])
        or inner
    )
    if not (instruction or fact):
        return None
    sentences = _sentences(text)
    tokens = [_tokens(s) for s in sentences]
    if instruction:
        for sentence, toks in zip(sentences, tokens, strict=True):
            if _instruction(sentence, toks):
                kind: StandingKind = "preference" if STANDING_PREFERENCE.search(sentence) else "instruction"
                return Standing(kind, sentence, None, None, False)
    if not fact:
        return None
    person = [not FACT_FIRST_PERSON.isdisjoint(t) for t in tokens]
    last = len(sentences) - 1
    for i, sentence in enumerate(sentences):
        near = (i > 0 and person[i - 1]) or (i < last and person[i + 1])
        read = _fact(sentence, tokens[i], near)
        if read is not None:
            domain, subject, change = read
            change = change or (i > 0 and bool(FACT_CHANGE.search(sentences[i - 1])))
            return Standing("fact", sentence, domain, subject, change)
    return None


def standing_sentence(text: str) -> str | None:
    """The first sentence of ``text`` that states a standing instruction or preference, without its closing
    mark, or None (facts are :func:`read_standing`'s)."""
    for sentence in _sentences(text):
        if _instruction(sentence, _tokens(sentence)):
            return sentence.rstrip(".!?") or sentence
    return None


def is_standing(role: str, text: str) -> bool:
    """Whether a message of ``role`` with ``text`` is a standing instruction or preference (facts are
    :func:`read_standing`'s)."""
    return role == "user" and standing_sentence(text) is not None


def standing_text(content: str) -> str:
    """What a marked message is shown by: the sentence the rule reads in it (read as the person's own words,
    whoever wrote it), else its whole text, whitespace folded (the first ``_SHOWN_CHARS`` characters)."""
    read = read_standing("user", content)
    if read is not None:
        return read.sentence
    text = " ".join(content.split())
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1].rstrip() + "…"
