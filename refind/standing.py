"""Standing instructions and preferences: the rule that recognises them, without an LLM (DESIGN §9).

A person's "always include version numbers" or "I prefer minimal dependencies" from weeks ago is evidence
for today's request. A message is a standing instruction when it is the person's own (role ``user``) and
one of its sentences (split at ``.``, ``!``, ``?``, ``;`` and line breaks; at most :data:`MAX_WORDS` words)

- **starts** with a directive: ``always``, ``never``, ``don't`` / ``do not`` (``ever``), ``avoid``,
  ``make sure``, ``be sure to``, ``remember to``, ``from now on``, ``going forward``, ``in the future``,
  ``for all future``, ``whenever``, ``every time``, ``stick to`` (after an optional ``please``, ``and``,
  ``also`` or ``so``), or
- **holds** a standing phrase anywhere: ``from now on``, ``going forward``, ``in (the) future``,
  ``for future``, ``every time you``, ``whenever you``, ``each time you``, ``(please) always``,
  ``(please) never``; or a preference: ``I prefer``, ``I'd / I would prefer``, ``I'd / I would rather``,
  ``my preference is``, ``I like it when you``, ``I don't like it when you``, ``I want you to always``.

Search offers them beside evidence only: for a *request* (:func:`is_request`: "could you show me…", "what would
you suggest…", "which … should I use", "I'm planning to…", an imperative) up to three, those sharing most words
with it first (rarer shared words weigh more), else the most recent; for any other question at most two, and only
those sharing a word with the question (a question about what happened rarely needs the person's standing
instructions). Each is shown by its standing sentence, the rest of the message cut.

English only. The rule is deliberately lexical: it over-reads some chatter ("I always forget my keys") and
misses instructions phrased without these words; :func:`is_standing` is what search offers in the small
share of the budget it reserves for them (docs/search.md), marked as such, never in place of the evidence.
"""

from __future__ import annotations

import re

__all__ = ["CUE_TERMS", "MAX_WORDS", "is_request", "is_standing", "standing_sentence"]

MAX_WORDS = 60
"""A longer sentence is a story, not an instruction."""

CUE_TERMS = "always never prefer preference rather future forward whenever avoid sure remember stick"
"""Words a search for standing instructions ranks a user's messages by (each rule above holds one)."""

_LEAD = r"(?:(?:please|pls|and|also|so|but|ok|okay)[,\s]+)*"
_START = re.compile(
    _LEAD + r"(?:always|never|don'?t(?:\s+ever)?|do\s+not(?:\s+ever)?|avoid|make\s+sure|be\s+sure\s+to|"
    r"remember\s+to|from\s+now\s+on|going\s+forward|in\s+the\s+future|for\s+all\s+future|whenever|"
    r"every\s+time|stick\s+to)\b",
    re.IGNORECASE,
)
_ANYWHERE = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+(?:all\s+)?future|"
    r"(?:every|each)\s+time\s+you|whenever\s+you|(?:please\s+)(?:always|never)|"
    r"i\s+(?:really\s+|strongly\s+|generally\s+|usually\s+|much\s+)?prefer|i(?:'d|\s+would)\s+(?:rather|prefer)|"
    r"my\s+preference\s+is|(?:my|a)\s+preference\s+for|i\s+(?:really\s+)?like\s+it\s+when\s+you|i\s+(?:don'?t|do\s+not)\s+like\s+it\s+when\s+you|"
    r"i\s+want\s+you\s+to\s+(?:always|never))\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"[^.!?;\n]+")


def standing_sentence(text: str) -> str | None:
    """The first sentence of ``text`` that states a standing instruction or preference, or None."""
    for m in _SENTENCES.finditer(text[:20_000]):
        sentence = m.group(0).strip().lstrip("-*•>#\"'“ ").strip()
        if not sentence or len(sentence.split()) > MAX_WORDS:
            continue
        if _START.match(sentence) or _ANYWHERE.search(sentence):
            return sentence
    return None


def is_standing(role: str, text: str) -> bool:
    """Whether a message of ``role`` with ``text`` is a standing instruction or preference (the rule above)."""
    return role == "user" and standing_sentence(text) is not None


_REQUEST = re.compile(
    r"\b(?:(?:can|could|would|will)\s+you|help\s+me|show\s+me|give\s+me|walk\s+me|tell\s+me\s+how|"
    r"suggest\w*|recommend\w*|advice|advise|"
    r"how\s+(?:do|can|should|would|could)\s+i|(?:should|would|could)\s+i|"
    r"i(?:'m|\s+am)\s+(?:planning|trying|working|looking|thinking|going)|i\s+(?:want|need|would\s+like|'d\s+like)\s+to)\b"
    r"|^\s*(?:please\s+)?(?:show|write|give|explain|create|make|build|implement|draft|help|design|add|fix|set\s+up)\b",
    re.IGNORECASE,
)


def is_request(question: str) -> bool:
    """Whether ``question`` asks for something to be done or advised ("could you show me…", "what would you
    suggest…", "I'm planning to…", "write…"), the requests a standing instruction bears on, rather than
    asking what happened ("when did…", "what did I say about…")."""
    return _REQUEST.search(question) is not None
