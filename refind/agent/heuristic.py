"""HeuristicAgent: the default, offline, deterministic planner (no LLM).

Rounds, each over what earlier rounds have not returned (the read-set), stopping when a round adds nothing:

1. **broad**: every keyword of the question (and of the multiple-choice options, when given), no time filter;
2. **time**: when the question has a time cue ("last Saturday", "in May 2023", ...) and ``now`` resolves it,
   the same keywords inside that range; with no usable keywords, a *browse* of that period instead;
3. **rarer terms**: the keywords this user's history has fewest messages for (the ones that discriminate),
   which surfaces sessions that the common words crowded out;
4. **options**: each multiple-choice option on its own, or, without options, the keywords minus the most
   common one (a relaxed query);
5. **feedback** (off by default, ``feedback=True`` / ``REFIND_FEEDBACK=true``): pseudo-relevance feedback in
   the manner of RM3: the rarest terms of the best hits found so far (terms in several of them first, then
   the rarer in this user's history), added to the question's keywords, searched with the read-set on, so
   that a second hop reaches sessions that name what the first hits named. One round beyond ``max_rounds``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from refind.agent.keywords import extract_keywords, quoted_phrases
from refind.agent.shape import (
    FORM_WORDS,
    Shape,
    asks_beginning,
    asks_summary,
    breadth_cue,
    question_shape,
    strip_answer_form,
    whose_words,
)
from refind.search.session import BREADTH_K, SearchSession
from refind.timeparse import parse_time_range, strip_time_expressions

__all__ = ["HeuristicAgent"]

_MAX_WORDS = 64  # as many as the store keeps of a query


class HeuristicAgent:
    """Offline planner. ``max_rounds`` bounds the searches; ``time_filters=False`` skips the time round
    (for ablations)."""

    name = "heuristic"

    def __init__(
        self,
        max_rounds: int = 4,
        *,
        time_filters: bool = True,
        time_weight: float = 1.0,
        feedback: bool = False,
        feedback_terms: int = 6,
        shapes: bool = True,
        breadth_k: int = BREADTH_K,
        breadth_window: int = 0,
        form_words: bool = True,
        openings: bool = True,
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self.max_rounds = max_rounds
        self.time_filters = time_filters
        self.time_weight = time_weight
        self.feedback = feedback
        self.feedback_terms = feedback_terms
        self.shapes = shapes
        self.breadth_k = breadth_k
        self.breadth_window = breadth_window
        self.form_words = form_words
        self.openings = openings

    def plan_keywords(
        self, question: str, options: Sequence[str] | None = None
    ) -> tuple[list[str], list[list[str]]]:
        """Keywords of the question (time phrases removed) and of each option. A breadth question (with
        shapes on) drops the words that give its answer a form (:data:`~refind.agent.shape.FORM_WORDS`,
        "mention 10 items") when words remain."""
        base = strip_time_expressions(question)
        words = extract_keywords(" ".join([base, *quoted_phrases(question)]))
        if self.shapes and self.form_words and breadth_cue(question) is not None:
            topic = extract_keywords(
                " ".join([strip_answer_form(base), *quoted_phrases(question)]), extra_stopwords=FORM_WORDS
            )
            words = topic or words
        option_words = [extract_keywords(o) for o in options or []]
        return words, [w for w in option_words if w]

    def shape(self, question: str, words: Sequence[str], has_time_cue: bool) -> Shape:
        """The question's shape (:func:`refind.agent.shape.question_shape`); ``lookup`` when shapes are off."""
        if not self.shapes:
            return "lookup"
        return question_shape(question, words, has_time_cue=has_time_cue).shape

    def plan(
        self, session: SearchSession, question: str, options: Sequence[str] | None = None
    ) -> list[_Round]:
        """The rounds this agent would run, in order (the time range is resolved against ``session.now``)."""
        words, option_words = self.plan_keywords(question, options)
        broad = " ".join(dict.fromkeys(words + [w for ws in option_words for w in ws]))
        rounds: list[_Round] = []
        if broad:
            rounds.append(_Round("broad", broad))
        # the question as asked: its function words and phrasing rank sessions differently from the bare
        # keywords (and the two rankings are fused); skipped when it adds no term
        if broad and set(session.analyze(question)) - set(session.analyze(broad)):
            rounds.append(_Round("question", question))
        time_range = parse_time_range(question, session.now) if self.time_filters else None
        if time_range is not None:
            label = f"time: {time_range.text}"
            period = self.shapes and self.shape(question, words, True) == "period"
            if period:  # no topic words: the period's sessions by recency come first
                rounds.insert(0, _Round(f"{label} (period)", None, time_range.start, time_range.end))
            if not period or words:
                rounds.append(
                    _Round(label, " ".join(words) or None, time_range.start, time_range.end, self.time_weight)
                )
        # term statistics for the first _MAX_WORDS keywords: a long question costs what a long query does
        counts = session.term_counts(" ".join(words[:_MAX_WORDS])) if len(words) > 1 else {}
        present = [t for n, t in sorted((n, t) for t, n in counts.items() if n > 0)]
        if len(present) > 1:
            rounds.append(_Round("rarer terms", " ".join(present[: (len(present) + 1) // 2]), weight=0.0))
        if option_words:
            rounds.extend(_Round("option", " ".join(ws), weight=0.5) for ws in option_words)
        elif len(present) > 2:
            rounds.append(_Round(f"relaxed (without '{present[-1]}')", " ".join(present[:-1]), weight=0.0))
        # "the order in which I brought up…", "the restaurant you recommended": whose words the question asks
        # about; the keywords once more among that side's messages only, as the budget's last round (the long
        # answers of the other side otherwise crowd out the short messages that hold it)
        who = whose_words(question) if self.shapes else None
        if who == "user" and breadth_cue(question) is not None:
            # "the order in which I brought up…", "how many … did I mention": many places, all in the
            # person's own messages: every keyword round searches those (the long answers repeat the same
            # words and would take most of the places). Not for the assistant's side: its answers often lack
            # the topic's words, which the person's message before them has (breadth hits have no windows)
            return [
                replace(r, label=f"{r.label} ({who} messages)", roles=(who,)) if r.keywords else r
                for r in rounds
            ]
        if broad and who is not None:
            own = _Round(f"broad ({who} messages)", broad, roles=(who,))
            rounds.insert(min(len(rounds), self.max_rounds - 1), own)
        return rounds

    def run(self, session: SearchSession, question: str, *, options: Sequence[str] | None = None) -> None:
        session.finish(self.run_rounds(session, question, options=options))

    def run_rounds(
        self, session: SearchSession, question: str, *, options: Sequence[str] | None = None
    ) -> str:
        """The plan's rounds on ``session`` without finishing it (an agent that goes on after them, such as
        :class:`~refind.LLMAgent`, starts here); returns why the plan stopped."""
        words, _ = self.plan_keywords(question, options)
        has_time = self.time_filters and parse_time_range(question, session.now) is not None
        reading = question_shape(question, words, has_time_cue=has_time) if self.shapes else None
        if reading is not None:
            if reading.shape == "breadth":  # many places, each short
                session.widen(reading.reason, self.breadth_k, self.breadth_window)
            else:
                session.set_shape(reading.shape, reading.reason)
        rounds = self.plan(session, question, options)
        if not rounds:
            return "no keywords and no time cue"
        budget = self.max_rounds
        reason = "plan done" if len(rounds) <= budget else "budget spent"
        for i, r in enumerate(rounds[:budget]):
            if r.keywords is None:
                new = session.browse_sessions(r.date_from, r.date_to, note=r.label)
            else:
                new = session.search(
                    r.keywords, r.date_from, r.date_to, note=r.label, weight=r.weight, roles=r.roles
                )
                if not new and r.date_from is not None:  # the period's words missed: its sessions by recency
                    new = session.browse_sessions(r.date_from, r.date_to, note=f"{r.label} (words missed)")
            # never stop while a time cue is unused: a later round filters by it
            ahead = rounds[i + 1 : budget]
            if not new and not any(x.date_from is not None for x in ahead):
                reason = "a round added nothing"
                break
        if self.shapes and asks_beginning(question):  # how it began: the earliest session's opening
            session.browse_beginning(note="beginning: the earliest session's opening")
        if self.shapes and self.openings and session.shape == "breadth" and asks_summary(question):
            session.browse_openings(note="summary: the openings of the best sessions")
        if self.feedback and self.max_rounds > 1:
            words, _ = self.plan_keywords(question, options)
            extra = feedback_terms(session, words, self.feedback_terms)
            if extra:
                session.search(" ".join([*words[:_MAX_WORDS], *extra]), note="feedback", weight=0.5)
        return reason


def feedback_terms(session: SearchSession, words: Sequence[str], n: int, hits: int = 3) -> list[str]:
    """Up to ``n`` expansion terms from the ``hits`` best hit turns collected so far (pseudo-relevance
    feedback): analyzed terms not in the question, ranked by how many of those hits hold them, then by how
    few of this user's messages do (rare terms and names discriminate), then alphabetically."""
    asked = set(session.analyze(" ".join(words)))
    turns = sorted((t for b in session.blocks for t in b.turns if t.matched), key=lambda t: (-t.score, t.id))[
        :hits
    ]
    docs: dict[str, int] = {}
    for t in turns:
        for term in set(session.analyze(t.content[:4000])):
            if term not in asked and len(term) > 2 and not term.isdigit():
                docs[term] = docs.get(term, 0) + 1
    if not docs:
        return []
    candidates = sorted(docs, key=lambda w: (-docs[w], w))[: 4 * n]
    counts = session.term_counts(" ".join(candidates))
    present = [w for w in candidates if counts.get(w, 0) > 0]
    return sorted(present, key=lambda w: (-docs[w], counts[w], w))[:n]


@dataclass(frozen=True, slots=True)
class _Round:
    label: str
    keywords: str | None  # None: browse the period
    date_from: int | None = None
    date_to: int | None = None
    # how much its session ranking counts in the final one: rounds over the whole question 1, options 0.5;
    # partial queries (rarer terms, relaxed) 0: they bring more evidence, but dropping the topic's common
    # word skews which sessions rank first
    weight: float = 1.0
    roles: tuple[str, ...] | None = None  # only messages of these roles (the question asks whose words)
