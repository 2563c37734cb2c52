"""Standing instructions and preferences: the rule that recognises them, without an LLM (DESIGN §9).

A person's "always include version numbers" or "I prefer minimal dependencies" from weeks ago is evidence
for today's request. A message is a standing instruction when it is the person's own (role ``user``) and
one of its sentences (split at ``.``, ``!``, ``?``, ``;`` and line breaks; at most :attr:`~refind.policy.Policy.standing_max_words` words)

- **starts** with a directive: ``always``, ``never``, ``don't`` / ``do not`` (``ever``), ``avoid``,
  ``make sure``, ``be sure to``, ``remember to``, ``from now on``, ``going forward``, ``in the future``,
  ``for all future``, ``whenever``, ``every time``, ``stick to`` (after an optional ``please``, ``and``,
  ``also`` or ``so``), or
- **holds** a standing phrase anywhere: ``from now on``, ``going forward``, ``in (the) future``,
  ``for future``, ``every time you``, ``whenever you``, ``each time you``, ``(please) always``,
  ``(please) never``; or a preference: ``I prefer``, ``I'd / I would prefer``, ``I'd / I would rather``,
  ``my preference is``, ``I like it when you``, ``I don't like it when you``, ``I want you to always``.

Search offers them beside evidence only: for a *request* (:func:`refind.query.reading.is_request`: "could you show me…", "what would
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

from refind.lexicon import STANDING_ANYWHERE, STANDING_START
from refind.policy import POLICY

__all__ = ["is_standing", "standing_sentence"]

_SENTENCES = re.compile(r"[^.!?;\n]+")


def standing_sentence(text: str) -> str | None:
    """The first sentence of ``text`` that states a standing instruction or preference, or None."""
    for m in _SENTENCES.finditer(text[:20_000]):
        sentence = m.group(0).strip().lstrip("-*•>#\"'“ ").strip()
        if not sentence or len(sentence.split()) > POLICY.standing_max_words:
            continue
        if STANDING_START.match(sentence) or STANDING_ANYWHERE.search(sentence):
            return sentence
    return None


def is_standing(role: str, text: str) -> bool:
    """Whether a message of ``role`` with ``text`` is a standing instruction or preference (the rule above)."""
    return role == "user" and standing_sentence(text) is not None
