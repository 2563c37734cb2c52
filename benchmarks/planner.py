"""``python -m benchmarks planner``: what ``refind.LLMAgent`` sends and hands on, with a scripted planner.

No model is called: the test suite's fake OpenAI server (``tests/fake_openai.py``, real HTTP on loopback,
the real ``openai`` client) answers every request with a fixed 3-5 call plan per question:

1. ``search`` with the question's keywords (``refind.query.read_question``);
2. ``search`` with the question as asked;
3. on every other question, ``search`` with the keywords' second half (a narrower query);
4. ``note`` of the first two block ids of the last observation;
5. ``finish``.

With ``--heuristic-first`` the agent runs as by default (the heuristic rounds first, shown to the model
in its first request) and the script is the model's part of such a plan: one ``search`` with the keywords'
second half, ``note`` of the first two block ids the model was shown, ``finish`` (3 calls). Without it
the agent plans alone (``heuristic_first=False``), the plan above.

Per question it records each request's prompt size (tiktoken tokens of its messages as JSON), the tokens of
the observations the model was shown, the final evidence (``to_text()``), whether every evidence turn was
in a block the model saw or noted, and the evidence's session recall_all@5. Figures are deterministic
(the plan and the engine are), except milliseconds, which are not reported.

    python -m benchmarks planner --data ../shared/data/longmemeval_s_dev.json.gz --questions 30 --out out/planner
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

_ID = re.compile(r"^\[id ([^\]\s]+)\]", re.MULTILINE)


def _tokens(messages: list[dict[str, Any]]) -> int:
    from refind.tokens import count_tokens

    return sum(count_tokens(json.dumps(m, ensure_ascii=False)) for m in messages)


def _tool_texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body["messages"] if m.get("role") == "tool"]


def run(
    data: str, questions: int, conversation_tokens: int | None, heuristic_first: bool = False
) -> dict[str, Any]:
    import refind
    from benchmarks.adapters.bm25 import _USER, open_haystack
    from benchmarks.catalog import load_dataset
    from refind.tokens import count_tokens
    from tests.fake_openai import FakeOpenAI, tool_reply

    ds = load_dataset("longmemeval", data)
    wanted = [q for q in ds.questions if not q.abstention][:questions]
    from refind.query import read_question

    rows: list[dict[str, Any]] = []
    with FakeOpenAI() as fake:
        for key, sessions in ds.haystacks({q.haystack for q in wanted}):
            memory = open_haystack(sessions)
            try:
                for q in (x for x in wanted if x.haystack == key):
                    words = list(read_question(q.text).keywords)
                    plan: list[Any]
                    if heuristic_first:
                        plan = [
                            tool_reply(("search", {"keywords": " ".join(words[len(words) // 2 :]) or q.text}))
                        ]
                    else:
                        plan = [
                            tool_reply(("search", {"keywords": " ".join(words) or q.text})),
                            tool_reply(("search", {"keywords": q.text})),
                        ]
                        if len(rows) % 2 == 1 and len(words) > 1:
                            plan.append(
                                tool_reply(("search", {"keywords": " ".join(words[len(words) // 2 :])}))
                            )

                    def note(body: dict[str, Any]) -> Any:
                        texts = _tool_texts(body) or [str(body["messages"][1].get("content") or "")]
                        seen = _ID.findall(texts[-1]) if texts else []
                        return tool_reply(("note", {"ids": seen[:2] or ["none"]}))

                    plan += [note, tool_reply(("finish", {}))]
                    fake.enqueue(*plan)
                    before = len(fake.bodies)
                    agent = refind.LLMAgent(
                        "scripted",
                        base_url=fake.base_url,
                        api_key="sk-planner-benchmark",
                        max_actions=len(plan),
                        conversation_tokens=conversation_tokens,
                        heuristic_first=heuristic_first,
                    )
                    result = memory.search(q.text, _USER, now=q.now, top_k=5, agent=agent)
                    bodies = fake.bodies[before:]
                    # every observation the model was sent, once (later requests repeat or trim earlier ones)
                    observations = list(
                        dict.fromkeys(
                            t
                            for b in bodies
                            for t in _tool_texts(b)
                            if not t.startswith("[earlier observation")
                        )
                    )
                    shown_ids = {i for text in observations for i in _ID.findall(text)}
                    prompt = [_tokens(b["messages"]) for b in bodies]
                    last_obs = sum(count_tokens(t) for t in _tool_texts(bodies[-1])) if bodies else 0
                    evidence_sessions = list(dict.fromkeys(b.session_id for b in result.by_relevance()))[:5]
                    rows.append(
                        {
                            "id": q.id,
                            "type": q.type,
                            "calls": len(bodies),
                            "prompt_tokens": sum(prompt),
                            "largest_request_tokens": max(prompt) if prompt else 0,
                            "observation_share_last_request": round(last_obs / prompt[-1], 3)
                            if prompt
                            else 0,
                            "shown_tokens": sum(count_tokens(t) for t in observations),
                            "evidence_tokens": count_tokens(result.to_text()),
                            "evidence_blocks": len(result.evidence),
                            "evidence_blocks_shown": sum(
                                1 for b in result.evidence if b.id in shown_ids or b.noted
                            ),
                            "recall_all_at_5": float(set(q.gold_sessions) <= set(evidence_sessions)),
                        }
                    )
            finally:
                memory.close()
        unexpected = fake.unexpected

    def spread(name: str) -> dict[str, float]:
        values = [r[name] for r in rows]
        return {"min": min(values), "median": statistics.median(values), "max": max(values)}

    return {
        "questions": len(rows),
        "conversation_tokens": conversation_tokens,
        "heuristic_first": heuristic_first,
        "unexpected_requests": unexpected,
        "calls": spread("calls"),
        "prompt_tokens": spread("prompt_tokens"),
        "largest_request_tokens": spread("largest_request_tokens"),
        "observation_share_last_request": spread("observation_share_last_request"),
        "shown_tokens_mean": round(statistics.mean(r["shown_tokens"] for r in rows), 1),
        "evidence_tokens_mean": round(statistics.mean(r["evidence_tokens"] for r in rows), 1),
        "evidence_blocks_shown_share": round(
            sum(r["evidence_blocks_shown"] for r in rows) / max(sum(r["evidence_blocks"] for r in rows), 1), 3
        ),
        "recall_all_at_5": round(statistics.mean(r["recall_all_at_5"] for r in rows), 3),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks planner", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="LongMemEval JSON (or .json.gz)")
    p.add_argument("--questions", type=int, default=30, help="the first N answerable questions (default 30)")
    p.add_argument(
        "--conversation-tokens",
        type=int,
        default=None,
        help="LLMAgent's conversation budget (default: its own)",
    )
    p.add_argument(
        "--heuristic-first",
        action="store_true",
        help="the agent's default: heuristic rounds first, the model adds (default: the model plans alone)",
    )
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.questions < 1:
        p.error("--questions must be at least 1")
    from refind.errors import RefindError

    try:
        report = run(args.data, args.questions, args.conversation_tokens, args.heuristic_first)
    except RefindError as exc:  # unreadable data: one line, like `benchmarks run`
        print(f"benchmarks: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "planner.json").write_text(json.dumps(report, indent=2) + "\n")
    summary = {k: v for k, v in report.items() if k != "rows"}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
