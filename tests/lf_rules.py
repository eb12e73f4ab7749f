"""LLaMA-Factory's loading and rendering rules, re-implemented to check what trajcurate writes.

Facts taken from the LLaMA-Factory 0.9.4 / 0.9.5 sources (`data/converter.py`,
`data/formatter.py`, `data/template.py`, `data/tool_utils.py`); the code is ours.

- Sharegpt converter: an example whose roles do not alternate — user/observation at odd
  positions (1-based), assistant/function_call at even ones — or whose message count is odd
  is skipped with only a warning; a system message is honoured only as the first message.
- FunctionFormatter (a function_call turn): with the template's `tool_call_words`, the first
  non-greedy `open(.*?)close` span (across lines) holds the calls; the content with that span
  removed (every copy of it) is rendered first. Without such a span, a `thought_words` span,
  if any, is cut out and put first, and the rest must be the calls. The calls are JSON: one
  `{"name", "arguments"}` object, or a list of them; anything else raises and stops the
  training run. Each call is then rendered by the template's tool format — qwen:
  `<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>` per call, joined by newlines;
  glm4: one call only (parallel calls raise ValueError, which aborts the dataset).
- Observation slot of the qwen family: `<tool_response>\\n{content}\\n</tool_response>`; the
  OpenAI-format converter joins parallel results with `\\n</tool_response>\\n<tool_response>\\n`
  so that each result becomes a block of its own.
- Default markers (templates that set none, qwen among them): tool calls `<tool_call>` /
  `</tool_call>`, thoughts `<think>\\n` / `\\n</think>\\n\\n`.
"""

from __future__ import annotations

import json
import re
from typing import Any

PROMPT_SIDE = frozenset({"user", "observation"})
ANSWER_SIDE = frozenset({"assistant", "function_call"})
TOOL_CALL_WORDS = ("<tool_call>", "</tool_call>")
THOUGHT_WORDS = ("<think>\n", "\n</think>\n\n")


class TrainingAbort(Exception):
    """What LLaMA-Factory would raise while encoding: the whole run stops."""


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


def _span(words: tuple[str, str]) -> re.Pattern[str]:
    return re.compile(re.escape(words[0]) + "(.*?)" + re.escape(words[1]), re.DOTALL)


def split_function_call(
    content: str,
    tool_call_words: tuple[str, str] | None = TOOL_CALL_WORDS,
    thought_words: tuple[str, str] | None = THOUGHT_WORDS,
) -> tuple[str, list[tuple[str, Any]]]:
    """(text rendered before the calls, [(name, arguments), ...]) of a function_call turn,
    or TrainingAbort where FunctionFormatter would raise."""
    calls_json, prose = content, ""
    marked = _span(tool_call_words).search(content) if tool_call_words else None
    if marked is not None:
        calls_json, prose = marked.group(1), content.replace(marked.group(0), "")
    elif thought_words and (thought := _span(thought_words).search(content)) is not None:
        calls_json, prose = content.replace(thought.group(0), ""), thought.group(0)
    try:
        value = json.loads(calls_json)
    except ValueError as exc:
        raise TrainingAbort(f"function_call content is not JSON: {calls_json[:80]!r}") from exc
    calls = value if isinstance(value, list) else [value]
    parsed = []
    for call in calls:
        if not isinstance(call, dict) or "name" not in call or "arguments" not in call:
            raise TrainingAbort(f"a call is not {{name, arguments}}: {call!r:.80}")
        parsed.append((call["name"], call["arguments"]))
    return prose, parsed


def render_qwen_function_call(content: str) -> str:
    """The text a qwen-style template trains on for a function_call turn."""
    prose, calls = split_function_call(content)
    blocks = [
        "<tool_call>\n"
        + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        + "\n</tool_call>"
        for name, arguments in calls
    ]
    return prose + "\n".join(blocks)


def render_glm4_function_call(content: str) -> str:
    """glm4's tool format: one call per turn, or the dataset aborts."""
    prose, calls = split_function_call(content)
    if len(calls) != 1:
        raise TrainingAbort("GLM-4 does not support parallel functions")
    name, arguments = calls[0]
    return f"{prose}{name}\n{json.dumps(arguments, ensure_ascii=False)}"


def render_qwen_observation(content: str) -> str:
    return f"<tool_response>\n{content}\n</tool_response>"


def tool_response_blocks(rendered: str) -> list[str]:
    """The contents of the `<tool_response>` blocks of a rendered observation."""
    return re.findall(r"<tool_response>\n(.*?)\n</tool_response>", rendered, re.DOTALL)


def thoughts(text: str, thought_words: tuple[str, str] = THOUGHT_WORDS) -> list[str]:
    """The reasoning spans of a rendered response text, in order."""
    return _span(thought_words).findall(text)


def empty_template_pairs(example: dict[str, Any]) -> list[tuple[str, str]]:
    """(masked prompt text, trained response text) per turn pair, as LLaMA-Factory's `empty`
    template encodes a sharegpt example for stage sft: it adds nothing around user or
    assistant content (no prefix, no system text when the system column is empty, no end
    token of its own)."""
    problem = sharegpt_problem(example)
    if problem is not None:
        raise TrainingAbort(f"the example is skipped: {problem}")
    if example.get("system") or example.get("tools"):
        raise TrainingAbort("the empty template would add the system/tools text")
    messages = example["messages"]
    if any(m["role"] not in ("user", "assistant") for m in messages):
        raise TrainingAbort("rendered turns are plain user/assistant turns")
    return [
        (messages[i]["content"], messages[i + 1]["content"]) for i in range(0, len(messages), 2)
    ]
