"""LLaMA-Factory's sharegpt loading rules, re-implemented to check what trajcurate writes.

LLaMA-Factory (`data/converter.py`, SharegptDatasetConverter) skips an example silently when
its roles do not alternate — user/observation at odd positions (1-based), assistant/
function_call at even ones — or when the message count is odd; a system message is honoured
only as the first message.
"""

from __future__ import annotations

from typing import Any

PROMPT_SIDE = frozenset({"user", "observation"})
ANSWER_SIDE = frozenset({"assistant", "function_call"})


def sharegpt_problem(example: dict[str, Any]) -> str | None:
    messages = list(example.get("messages") or [])
    if messages and messages[0].get("role") == "system":
        messages = messages[1:]
    if not messages:
        return "no messages"
    if len(messages) % 2:
        return f"odd message count {len(messages)}"
    for position, message in enumerate(messages, start=1):
        allowed = PROMPT_SIDE if position % 2 else ANSWER_SIDE
        if message.get("role") not in allowed:
            return f"position {position}: role {message.get('role')!r} not in {sorted(allowed)}"
        if not isinstance(message.get("content"), str):
            return f"position {position}: content is not a string"
    return None
