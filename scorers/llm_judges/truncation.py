"""Middle truncation for judge prompts (llm-judges.md: limits).

A trajectory can hold megabytes of tool output; a judge needs to see how each piece starts
(the command, the first lines of a file or a traceback) and how it ends (the verdict of a
test run, the last error), rarely the middle. So long text is cut in the middle, keeping a
head and a tail, and the cut is marked visibly so the judge knows something is missing and
never mistakes a cut log for a complete one. The cut is deterministic: same text and limit,
same output — request caches and byte-identical reruns rely on it.
"""

from __future__ import annotations

__all__ = [
    "ASSISTANT_CONTENT_LIMIT",
    "ERROR_LIMIT",
    "QUESTION_LIMIT",
    "REASONING_LIMIT",
    "SYSTEM_PROMPT_LIMIT",
    "TOOL_ARGUMENTS_LIMIT",
    "TOOL_RESULT_LIMIT",
    "TOOL_SUMMARY_LIMIT",
    "truncate_middle",
    "truncation_marker",
]

# Limits from llm-judges.md, in characters of the original text that are kept.
TOOL_RESULT_LIMIT = 5_000
ASSISTANT_CONTENT_LIMIT = 50_000
REASONING_LIMIT = 50_000
QUESTION_LIMIT = 12_000
SYSTEM_PROMPT_LIMIT = 8_000
TOOL_SUMMARY_LIMIT = 10_000
# Not in the spec: a tool call's arguments (a Write's whole file, a long heredoc) are as
# bulky as a tool result, so they get the same budget.
TOOL_ARGUMENTS_LIMIT = 5_000
# Error texts stored in outputs (`llm_error`): enough to diagnose, never a whole response.
ERROR_LIMIT = 2_000


def truncation_marker(removed: int) -> str:
    """The visible marker standing for `removed` cut characters, e.g. `…[truncated 12,345 …]…`."""
    return f"\n…[truncated {removed:,} characters]…\n"


def truncate_middle(text: str, limit: int) -> str:
    """`text` unchanged if it has at most `limit` characters, else head + marker + tail.

    `limit` counts the characters of the original that are kept (the head gets the odd one);
    the marker comes on top, so the judge always sees exactly `limit` original characters.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if len(text) <= limit:
        return text
    head = (limit + 1) // 2
    tail = limit - head
    removed = len(text) - limit
    return text[:head] + truncation_marker(removed) + (text[-tail:] if tail else "")
