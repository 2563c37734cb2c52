"""``python -m benchmarks perf|run|...``: one entry point for every benchmark."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "perf": ("benchmarks.perf", "store throughput and latency on a synthetic corpus"),
    "ablation": ("benchmarks.ablation", "refind with each of its controls switched off in turn, beside BM25"),
    "run": ("benchmarks.runner", "quality of adapters on a dataset (scores, summary, scorecard, plot)"),
    "load": ("benchmarks.load", "latency and throughput of the HTTP service under concurrent clients"),
    "bridge": ("benchmarks.bridge", "the Python-Java bridge: JPype beside pyjnius on refind's engine"),
    "import": ("benchmarks.import_speed", "parsing and import rate of a synthetic ChatGPT-style export"),
    "planner": (
        "benchmarks.planner",
        "what LLMAgent sends and hands on, with a scripted planner (fake server)",
    ),
    "misses": (
        "benchmarks.misses",
        "where refind loses each gold turn and session, and whether words could reach it",
    ),
    "shell": ("benchmarks.shell", "refind search as a whole process: in-process beside the warm daemon"),
    "standing-rule": (
        "benchmarks.standing_rule",
        "the standing rule on hand-written facts and distractors, and its flag rate on real user messages",
    ),
    "meaning-floor": (
        "benchmarks.meaning_floor",
        "how near the gold is by meaning: what each floor of the round by meaning keeps and lets through",
    ),
    "implicit-facts": (
        "benchmarks.implicit_facts",
        "the implicit set: updates (newer and older in the evidence) and distractors among the facts shown",
    ),
    "dense-probe": (
        "benchmarks.dense_probe",
        "a sentence-embedding session ranking fused with refind's (needs sentence-transformers)",
    ),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"} or argv[0] not in COMMANDS:
        print("usage: python -m benchmarks {" + ",".join(COMMANDS) + "} [options]\n")
        for name, (_, what) in COMMANDS.items():
            print(f"  {name:<13} {what}")
        return 0 if argv and argv[0] in {"-h", "--help"} else 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
