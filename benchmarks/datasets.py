"""Datasets for ``python -m benchmarks run``: questions with their gold, and the haystacks they are asked of.

What every dataset is made of (:class:`Dataset`, :class:`Question`, :class:`Session`), and three formats,
each read from a path (``.json`` or ``.json.gz`` where the format is JSON):

- ``coding-life``: a directory with ``sessions.json`` (``id``, ``timestamp``, ``content``) and
  ``queries.json`` (``id``, ``type``, ``question``, ``goldSessionIds``). One haystack holds every session;
  session-level gold only. A session's text is its ``content``, verbatim; its messages are the
  ``[role] ...`` lines of that content.
- ``locomo``: LoCoMo JSON. One haystack per conversation (the user is ``sample_id``); sessions and messages
  come from :func:`refind.loaders.iter_locomo` (message id = ``dia_id``). Turn gold is the QA item's
  ``evidence``; session gold is the set of sessions holding those turns. Evidence strings are read by
  :func:`parse_locomo_evidence`: references ``D<session>:<turn>`` (so that spelling slips such as
  "D8:6; D9:17" in one string, or "D:11:26", still resolve) and ranges ``D12:3-D12:5`` (also
  ``D12:3 - D12:5``, ``D12:3-5``, several in one string), a range meaning every turn from its first to
  its last. Repairs are counted under ``notes`` for the questions kept: ``evidence_spelling_normalized``
  (strings that are neither one reference nor one range in canonical spelling),
  ``evidence_range_expanded`` (ranges) and ``evidence_range_turns_added`` (gold turns a question gains
  over reading only each range's two ends). A QA item with no evidence, with a
  reference or range that names a turn its conversation does not have (``unresolved_evidence``), or with
  a range that spans sessions or runs backwards (``unresolved_evidence_range``), is skipped and counted
  (its gold would be incomplete). ``category`` becomes the type (1 multi-hop, 2 temporal, 3 open-domain,
  4 single-hop, 5 adversarial). LoCoMo has no question dates, so ``now`` is None.
- ``longmemeval``: the official LongMemEval JSON (or .json.gz). One haystack per question (the user is
  ``question_id``); sessions from :func:`refind.loaders.iter_longmemeval`, message id
  ``"{session_id}:{turn}"``. Session gold is ``answer_session_ids``; turn gold is the ``has_answer``
  turns inside gold sessions. ``question_date`` is ``now``. Questions whose id ends in ``_abs`` are
  abstention questions: no gold, reported separately, excluded from recall. A session id repeated within
  one haystack is kept once (its first occurrence) and counted under ``notes``.

Two more formats have modules of their own, built on these types: ``beam`` (:mod:`benchmarks.beam`: one
haystack per conversation, one session per batch, turn gold from ``source_chat_ids``, questions bucketed by
conversation size) and ``time-only`` (:mod:`benchmarks.time_only`: the time-only and weak-word question set
over the dev splits). :mod:`benchmarks.catalog` names every format (``load_dataset``).

Nothing here knows particular question or session ids: the same code reads the full benchmarks.
"""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refind import Message
from refind.errors import InvalidInput
from refind.loaders import iter_locomo, iter_longmemeval, read_json
from refind.models import SessionLog, to_epoch_ms

__all__ = [
    "ABSTENTION",
    "LOCOMO_CATEGORIES",
    "Dataset",
    "Question",
    "Session",
    "LocomoEvidence",
    "load_coding_life",
    "load_locomo",
    "load_longmemeval",
    "parse_locomo_evidence",
    "select_questions",
]

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ABSTENTION = "abstention"

# a reference D12:3 (also "D:12:3", "D12 : 3"), optionally a range to D12:5 or to 5 ("D12:3 - D12:5",
# "D12:3-5", a hyphen or an en/em dash)
_DIA_REF = re.compile(
    r"D\s*:?\s*(\d+)\s*:\s*(\d+)"  # the first (or only) turn
    r"(?:\s*[-\u2013\u2014]\s*(?:D\s*:?\s*(\d+)\s*:\s*)?(\d+))?"  # the range's last turn
)
_DASH = re.compile(r"[-\u2013\u2014]")
_DIA_CANONICAL = re.compile(r"D\d+:\d+|D(\d+):\d+-D\1:\d+")
_EVIDENCE_NOTES = ("evidence_range_expanded", "evidence_range_turns_added", "evidence_spelling_normalized")
_ROLE_LINE = re.compile(r"^\[([A-Za-z][\w .-]{0,63})\]\s?(.*)$")


@dataclass(frozen=True, slots=True)
class Session:
    """One session of a haystack: its id, its whole text (what session-level adapters read and render)
    and its messages (what message-level adapters index), each message with an ``id``."""

    id: str
    text: str
    messages: tuple[Message, ...]
    date: int | None = None
    date_text: str | None = None

    @property
    def turn_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.messages if m.id is not None)

    def to_log(self, user_id: str) -> SessionLog:
        """The session as :meth:`refind.Memory.import_sessions` takes it."""
        return SessionLog(
            user_id=user_id,
            session_id=self.id,
            messages=list(self.messages),
            date=self.date,
            date_text=self.date_text,
        )


@dataclass(frozen=True, slots=True)
class Question:
    """A question and its gold. ``haystack`` names the sessions it is asked of; ``now`` is the question's
    date in epoch ms when the dataset gives one; ``gold_turns`` is None when the dataset has no turn gold
    for it. Abstention questions have no gold at all. ``bucket`` is a part of the dataset the scorecard also
    reports apart (BEAM: the conversation's size bucket; time-only: the source dataset), None elsewhere."""

    id: str
    type: str
    text: str
    haystack: str
    gold_sessions: tuple[str, ...]
    gold_turns: tuple[str, ...] | None = None
    now: int | None = None
    now_text: str | None = None
    abstention: bool = False
    answer: str | None = None
    bucket: str | None = None

    @property
    def stratum(self) -> str:
        """The bucket ``--stratify`` counts in: the type, or ``abstention``."""
        return ABSTENTION if self.abstention else self.type


@dataclass
class Dataset:
    """Questions (in dataset order) plus a way to stream the haystacks they need.

    ``skipped`` counts source QA items that did not become questions, by reason; ``notes`` counts repairs
    and other things worth knowing (spelling fixes, coalesced sessions, empty messages dropped). Notes grow
    while haystacks are read, so read them after a run.
    """

    name: str
    path: Path
    questions: list[Question]
    turn_level: bool
    skipped: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    files: tuple[Path, ...] = ()
    _haystacks: Callable[[], Iterator[tuple[str, list[Session]]]] | None = None

    def haystacks(self, keys: Collection[str]) -> Iterator[tuple[str, list[Session]]]:
        """``(key, sessions)`` for each wanted haystack, in dataset order; stops once all were seen. A wanted
        haystack the data does not have (all its sessions empty) comes last, with no sessions."""
        wanted = set(keys)
        if not wanted or self._haystacks is None:
            return
        for key, sessions in self._haystacks():
            if key in wanted:
                wanted.discard(key)
                yield key, sessions
                if not wanted:
                    return
        for key in sorted(wanted):  # e.g. every session of it was empty: ask anyway, score what comes back
            self.notes["empty_haystacks"] += 1
            yield key, []


# ---------------------------------------------------------------------------------------------- helpers


def _render(messages: Iterable[Message]) -> str:
    return "\n".join(f"[{m.speaker or m.role}] {m.content}" for m in messages)


def _with_ids(session_id: str, messages: Iterable[Message]) -> tuple[Message, ...]:
    out = []
    for i, m in enumerate(messages):
        turn = m.turn if m.turn is not None else i
        if m.id is None or m.turn is None:
            m = m.model_copy(update={"id": m.id or f"{session_id}:{turn}", "turn": turn})
        out.append(m)
    return tuple(out)


def _from_log(log: SessionLog) -> Session:
    messages = _with_ids(log.session_id, log.messages)
    return Session(
        id=log.session_id,
        text=_render(messages),
        messages=messages,
        date=log.date,
        date_text=log.date_text,
    )


def _coalesce(sessions: Iterable[Session], notes: Counter[str]) -> list[Session]:
    """Keep the first session of each id; count repeats (and repeats whose text differs)."""
    seen: dict[str, Session] = {}
    for s in sessions:
        first = seen.get(s.id)
        if first is None:
            seen[s.id] = s
            continue
        notes["duplicate_sessions_coalesced"] += 1
        if first.text != s.text:
            notes["duplicate_sessions_conflicting"] += 1
    return list(seen.values())


def _date(text: Any, notes: Counter[str], what: str) -> int | None:
    if not text:
        return None
    try:
        return to_epoch_ms(str(text))
    except ValueError:
        notes[f"{what}_unparsed"] += 1
        return None


def _split_transcript(session_id: str, content: str) -> tuple[Message, ...]:
    """``[role] text`` lines of a transcript as messages; untagged lines continue the previous message."""
    parts: list[tuple[str, list[str]]] = []
    for line in content.splitlines():
        m = _ROLE_LINE.match(line)
        if m:
            parts.append((m.group(1).strip().lower(), [m.group(2)]))
        elif parts:
            parts[-1][1].append(line)
        else:
            parts.append(("user", [line]))
    messages = []
    for role, lines in parts:
        text = "\n".join(lines).strip()
        if text:
            messages.append(
                Message(role=role, content=text, id=f"{session_id}:{len(messages)}", turn=len(messages))
            )
    return tuple(messages)


@dataclass(frozen=True, slots=True)
class LocomoEvidence:
    """One LoCoMo evidence string, read: ``turns``, the turn ids it names in order (ranges expanded,
    repeats kept once); ``ends``, what reading only its references and the two ends of its ranges gives
    (the reading before ranges were expanded); ``ranges``, how many ranges it held; ``canonical``, whether
    it was spelled as one ``D<s>:<t>`` or one range ``D<s>:<a>-D<s>:<b>``."""

    turns: tuple[str, ...]
    ends: tuple[str, ...]
    ranges: int = 0
    canonical: bool = True


def parse_locomo_evidence(text: str) -> LocomoEvidence | str:
    """Read one LoCoMo evidence string. ``D12:3`` is one turn; ``D12:3-D12:5`` (or ``D12:3 - D12:5``,
    ``D12:3-5``, with a hyphen or an en/em dash) is every turn from 3 to 5 of session 12; several references
    and ranges may share a string ("D8:6; D9:17", "D12:11-D12:14;D13:25-D13:33"). Returns the reading, or
    why it cannot be read: ``unresolved_evidence`` (no reference at all) or ``unresolved_evidence_range``
    (a range across sessions, backwards, or with a dash left over that names no end, as in "D12:3-D13")."""
    turns: list[str] = []
    ends: list[str] = []
    ranges = 0
    for m in _DIA_REF.finditer(text):
        session, first = int(m.group(1)), int(m.group(2))
        ends.append(f"D{session}:{first}")
        if m.group(4) is None:
            turns.append(ends[-1])
            continue
        end_session = int(m.group(3)) if m.group(3) is not None else session
        last = int(m.group(4))
        if end_session != session or last < first:
            return "unresolved_evidence_range"
        ends.append(f"D{session}:{last}")
        turns.extend(f"D{session}:{t}" for t in range(first, last + 1))
        ranges += 1
    if _DASH.search(_DIA_REF.sub(" ", text)):
        return "unresolved_evidence_range"
    if not turns:
        return "unresolved_evidence"
    return LocomoEvidence(
        turns=tuple(dict.fromkeys(turns)),
        ends=tuple(dict.fromkeys(ends)),
        ranges=ranges,
        canonical=_DIA_CANONICAL.fullmatch(text) is not None,
    )


# ---------------------------------------------------------------------------------------------- loaders


def _resolve_file(base: Path, name: str) -> Path:
    for candidate in (base / name, base / (name + ".gz")):
        if candidate.exists():
            return candidate
    raise InvalidInput(f"{base}: no {name} (or {name}.gz) here")


def load_coding_life(path: str | Path) -> Dataset:
    """coding-agent-life-v1: ``path`` is its directory (or either of its two files)."""
    p = Path(path)
    base = p if p.is_dir() else p.parent
    sessions_path, queries_path = _resolve_file(base, "sessions.json"), _resolve_file(base, "queries.json")
    raw_sessions, raw_queries = read_json(sessions_path), read_json(queries_path)
    if not isinstance(raw_sessions, list) or not isinstance(raw_queries, list):
        raise InvalidInput(f"{base}: sessions.json and queries.json must each be a JSON list")
    skipped: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    sessions = []
    for i, s in enumerate(raw_sessions):
        if not isinstance(s, dict) or not s.get("id"):
            raise InvalidInput(f"{sessions_path}[{i}]: a session needs an id")
        sid, content = str(s["id"]), str(s.get("content") or "")
        messages = _split_transcript(sid, content)
        if not messages:
            notes["empty_sessions"] += 1
            continue
        sessions.append(
            Session(
                id=sid,
                text=content,
                messages=messages,
                date=_date(s.get("timestamp"), notes, "session_date"),
                date_text=s.get("timestamp"),
            )
        )
    sessions = _coalesce(sessions, notes)
    known = {s.id for s in sessions}
    haystack = base.name or "sessions"
    questions, seen = [], set()
    for i, q in enumerate(raw_queries):
        if not isinstance(q, dict):
            raise InvalidInput(f"{queries_path}[{i}]: expected an object")
        qid, text = str(q.get("id") or f"q{i}"), str(q.get("question") or "").strip()
        gold = tuple(dict.fromkeys(str(g) for g in q.get("goldSessionIds") or []))
        if qid in seen:
            skipped["duplicate_question_id"] += 1
        elif not text:
            skipped["no_question_text"] += 1
        elif not gold:
            skipped["no_gold"] += 1
        elif any(g not in known for g in gold):
            skipped["gold_not_in_haystack"] += 1
        else:
            seen.add(qid)
            questions.append(
                Question(
                    id=qid,
                    type=str(q.get("type") or "unknown"),
                    text=text,
                    haystack=haystack,
                    gold_sessions=gold,
                    answer=None if q.get("answer") is None else str(q["answer"]),
                )
            )

    def haystacks() -> Iterator[tuple[str, list[Session]]]:
        yield haystack, sessions

    return Dataset(
        name="coding-life",
        path=base,
        questions=questions,
        turn_level=False,
        skipped=skipped,
        notes=notes,
        files=(sessions_path, queries_path),
        _haystacks=haystacks,
    )


def load_locomo(path: str | Path) -> Dataset:
    """LoCoMo JSON: one haystack per conversation, turn gold from ``evidence``."""
    p = Path(path)
    notes: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    by_user: dict[str, list[Session]] = {}
    for log in iter_locomo(p, dropped):
        by_user.setdefault(log.user_id, []).append(_from_log(log))
    notes.update({f"messages_{k}": v for k, v in dropped.items()})
    for user in by_user:
        by_user[user] = _coalesce(by_user[user], notes)
    # always reported for LoCoMo, zero included, so a scorecard shows that ranges were looked for
    notes.update(dict.fromkeys(_EVIDENCE_NOTES, 0))
    questions = []
    for ci, sample in enumerate(read_json(p)):
        user = str(sample.get("sample_id") or f"conv-{ci}")  # the user id iter_locomo gives
        session_of = {t: s.id for s in by_user.get(user, []) for t in s.turn_ids}
        for qi, qa in enumerate(sample.get("qa") or []):
            text = str(qa.get("question") or "").strip()
            evidence = [str(e) for e in qa.get("evidence") or [] if str(e).strip()]
            if not text:
                skipped["no_question_text"] += 1
                continue
            if not evidence:
                skipped["no_evidence"] += 1
                continue
            readings = [parse_locomo_evidence(e) for e in evidence]
            failed = next((r for r in readings if isinstance(r, str)), None)
            if failed is not None:
                skipped[failed] += 1
                continue
            parsed = [r for r in readings if isinstance(r, LocomoEvidence)]
            refs = [t for r in parsed for t in r.turns]
            if any(t not in session_of for t in refs):  # a turn the conversation does not have
                skipped["unresolved_evidence"] += 1
                continue
            notes["evidence_spelling_normalized"] += sum(1 for r in parsed if not r.canonical)
            notes["evidence_range_expanded"] += sum(r.ranges for r in parsed)
            turns = tuple(dict.fromkeys(refs))
            notes["evidence_range_turns_added"] += len(turns) - len({t for r in parsed for t in r.ends})
            category = qa.get("category")
            questions.append(
                Question(
                    id=f"{user}/qa{qi}",
                    type=LOCOMO_CATEGORIES.get(category, f"category-{category}"),  # type: ignore[arg-type]
                    text=text,
                    haystack=user,
                    gold_sessions=tuple(dict.fromkeys(session_of[t] for t in turns)),
                    gold_turns=turns,
                    answer=None if qa.get("answer") is None else str(qa["answer"]),
                )
            )

    def haystacks() -> Iterator[tuple[str, list[Session]]]:
        yield from by_user.items()

    return Dataset(
        name="locomo",
        path=p,
        questions=questions,
        turn_level=True,
        skipped=skipped,
        notes=notes,
        files=(p,),
        _haystacks=haystacks,
    )


def load_longmemeval(path: str | Path) -> Dataset:
    """LongMemEval JSON or .json.gz: one haystack per question; abstention questions flagged."""
    p = Path(path)
    data = read_json(p)
    if not isinstance(data, list):
        raise InvalidInput(f"{p}: a LongMemEval file is a JSON list of questions")
    notes: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    questions: list[Question] = []
    seen: set[str] = set()
    for qi, item in enumerate(data):
        try:
            qid = str(item["question_id"])
            sids = [str(s) for s in item["haystack_session_ids"]]
            sessions = item["haystack_sessions"]
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"{p}[{qi}]: missing LongMemEval field {exc}") from exc
        text = str(item.get("question") or "").strip()
        abstention = qid.endswith("_abs")
        gold = (
            () if abstention else tuple(dict.fromkeys(str(g) for g in item.get("answer_session_ids") or []))
        )
        if qid in seen:
            skipped["duplicate_question_id"] += 1
            continue
        if not text:
            skipped["no_question_text"] += 1
            continue
        if not abstention and not gold:
            skipped["no_gold"] += 1
            continue
        if any(g not in sids for g in gold):
            skipped["gold_not_in_haystack"] += 1
            continue
        seen.add(qid)
        gold_set = set(gold)
        turns = tuple(
            dict.fromkeys(
                f"{sid}:{ti}"
                for sid, session in zip(sids, sessions, strict=False)
                if sid in gold_set
                for ti, t in enumerate(session)
                if t.get("has_answer") and str(t.get("content") or "").strip()
            )
        )
        questions.append(
            Question(
                id=qid,
                type=str(item.get("question_type") or "unknown"),
                text=text,
                haystack=qid,
                gold_sessions=gold,
                gold_turns=None if abstention else turns,
                now=_date(item.get("question_date"), notes, "question_date"),
                now_text=item.get("question_date"),
                abstention=abstention,
                answer=None if item.get("answer") is None else str(item["answer"]),
            )
        )
    del data

    def haystacks() -> Iterator[tuple[str, list[Session]]]:
        dropped: Counter[str] = Counter()
        logs = iter_longmemeval(p, dropped)
        for user, group in itertools.groupby(logs, key=lambda log: log.user_id):
            yield user, _coalesce((_from_log(log) for log in group), notes)
        notes.update({f"messages_{k}": v for k, v in dropped.items()})

    return Dataset(
        name="longmemeval",
        path=p,
        questions=questions,
        turn_level=any(q.gold_turns for q in questions),
        skipped=skipped,
        notes=notes,
        files=(p,),
        _haystacks=haystacks,
    )


def select_questions(
    questions: list[Question],
    stratify: int | None = None,
    limit: int | None = None,
    *,
    sample: int | None = None,
    seed: int = 0,
) -> list[Question]:
    """At most ``stratify`` questions per type (abstention questions form their own bucket), the first ones
    in dataset order, dataset order kept; then the first ``limit`` of those.

    ``sample`` instead draws at most that many questions per type uniformly at random (``random.Random(seed)``:
    the same seed, the same questions), dataset order kept: a slice that is not biased towards the first
    conversations of a file, as the first ones in dataset order are."""
    out = questions
    if sample is not None:
        if stratify is not None:
            raise ValueError("give stratify or sample, not both")
        rng = random.Random(seed)
        buckets: dict[str, list[int]] = {}
        for i, q in enumerate(questions):
            buckets.setdefault(q.stratum, []).append(i)
        keep = {
            i
            for stratum in sorted(buckets)
            for i in rng.sample(buckets[stratum], min(sample, len(buckets[stratum])))
        }
        out = [q for i, q in enumerate(questions) if i in keep]
    if stratify is not None:
        taken: Counter[str] = Counter()
        out = []
        for q in questions:
            if taken[q.stratum] < stratify:
                taken[q.stratum] += 1
                out.append(q)
    if limit is not None:
        out = out[:limit]
    return list(out)
