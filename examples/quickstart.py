"""The 30-second example: keep a few chat messages verbatim, then search them.

    python examples/quickstart.py

``Memory.in_memory()`` keeps the index in RAM; ``refind.Memory("path/to/dir")`` keeps it on disk.
"""

import refind

with refind.Memory.in_memory() as mem:
    mem.add(
        "alice",
        "2024-03-02",
        [
            {
                "role": "user",
                "content": "I adopted an orange cat from the shelter!",
                "timestamp": "2024-03-02T18:20:00Z",
            },
            {"role": "assistant", "content": "Congratulations! What is her name?"},
            {"role": "user", "content": "Miso. She is two and she loves tuna."},
        ],
    )
    mem.add(
        "alice",
        "2024-04-11",
        [
            {
                "role": "user",
                "content": "Miso knocked my coffee over again.",
                "timestamp": "2024-04-11T08:05:00Z",
            },
            {"role": "assistant", "content": "A lidded mug might save your mornings."},
        ],
    )

    result = mem.search("What is the name of the cat I adopted?", user_id="alice", now="2024-05-01")
    print(result.to_text())  # the evidence, by session in time order; * marks the turns that matched
    for step in result.trace:  # the rounds the agent ran
        print(f"round {step.round}: {step.action} {step.keywords or ''} ({step.hits} hits)")
