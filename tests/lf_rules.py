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

Per template (`TEMPLATES`, read from `data/template.py`, `formatter.py`, `tool_utils.py` and
`mm_plugin.py` at v0.9.4 = 95ac3f2 and v0.9.5 = 7af9095 of hiyouga/LLaMA-Factory; the facts
below are the same in both):

- `Template` and `ReasoningTemplate` hand the function formatter the template's markers;
  `Llama2Template` (mistral, ministral, ministral3, pixtral, llava_next_mistral, gemma,
  gemma2, gemma3, llama2) calls it with the content alone, so the whole function_call content
  must be the calls' JSON: any text or thought beside it raises "Invalid JSON format in
  function message".
- Tool formats (the function formatter renders the parsed calls, the tool formatter the tools
  column): `default` — `Action: name\\nAction Input: {arguments}` per call, and the tool list
  read through `parameters.properties` (each property a mapping, `enum` values joined as
  strings, `items` a mapping), `required` tested with `in`, and `name`; `qwen` — one
  `<tool_call>` block per call; `llama3` — `{"name", "parameters"}` (a list for parallel
  calls); `mistral` — a JSON list of `{"name", "arguments"}`; `glm4` — one call only
  (`ValueError: GLM-4 does not support parallel functions`), and `name` of every tool.
- A multimodal plugin (qwen2_vl, qwen3_vl, glm4v, llama4, pixtral, llava_next, gemma3)
  counts `<image>`, `<video>` and `<audio>` in every message's content and raises unless the
  counts equal the example's images, videos and audios (none here).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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


# --- per template --------------------------------------------------------------------------

MEDIA_PLACEHOLDERS = ("<image>", "<video>", "<audio>")


@dataclass(frozen=True)
class Template:
    """What decides whether one LLaMA-Factory template encodes an example."""

    tool_format: str  # the tool utils behind its function and tool formatters
    markers: bool = True  # False: Llama2Template, whose function formatter gets no markers
    media: bool = False  # a multimodal plugin counting MEDIA_PLACEHOLDERS in the messages
    tool_call_words: tuple[str, str] = TOOL_CALL_WORDS
    thought_words: tuple[str, str] = THOUGHT_WORDS


_QWEN, _QWEN_VL = Template("qwen"), Template("qwen", media=True)
_DEFAULT, _BARE_DEFAULT = Template("default"), Template("default", markers=False)
_MISTRAL = Template("mistral", markers=False)
_MISTRAL_VL = Template("mistral", markers=False, media=True)
TEMPLATES: dict[str, Template] = {
    "default": _DEFAULT,
    "deepseek": _DEFAULT,
    "deepseek3": _DEFAULT,
    "deepseekr1": _DEFAULT,
    "qwen": _QWEN,
    "qwen2_vl": _QWEN_VL,
    "qwen3": _QWEN,
    "qwen3_nothink": _QWEN,
    "qwen3_vl": _QWEN_VL,
    "qwen3_vl_nothink": _QWEN_VL,
    "llama3": Template("llama3"),
    "llama4": Template("llama3", media=True),
    "glm4": Template("glm4"),
    "glm4v": Template("glm4", media=True),
    "mistral": _MISTRAL,
    "ministral": _MISTRAL,
    "ministral3": _MISTRAL_VL,
    "pixtral": _MISTRAL_VL,
    "llava_next_mistral": _MISTRAL_VL,
    "mistral_small": Template("mistral", media=True),
    "llama2": _BARE_DEFAULT,
    "gemma": _BARE_DEFAULT,
    "gemma2": _BARE_DEFAULT,
    "gemma3": Template("default", markers=False, media=True),
}


def template_function_call(template: Template, content: str) -> tuple[str, list[tuple[str, Any]]]:
    """(prose, calls) of a function_call turn as that template's encoder splits it."""
    if template.markers:
        return split_function_call(content, template.tool_call_words, template.thought_words)
    return split_function_call(content, None, None)


def format_calls(tool_format: str, calls: list[tuple[str, Any]]) -> str:
    """The calls as the tool format renders them (TrainingAbort where it raises)."""
    dump = _json_text
    if tool_format == "default":
        return "\n".join(f"Action: {name}\nAction Input: {dump(args)}" for name, args in calls)
    if tool_format == "qwen":
        return "\n".join(
            f"<tool_call>\n{dump({'name': name, 'arguments': args})}\n</tool_call>"
            for name, args in calls
        )
    if tool_format == "llama3":
        objects = [{"name": name, "parameters": args} for name, args in calls]
        return dump(objects[0] if len(objects) == 1 else objects)
    if tool_format == "mistral":
        return dump([{"name": name, "arguments": args} for name, args in calls])
    if tool_format == "glm4":
        if len(calls) != 1:
            raise TrainingAbort("GLM-4 does not support parallel functions")
        return f"{calls[0][0]}\n{dump(calls[0][1])}"
    raise ValueError(f"tool format {tool_format!r} is not re-implemented here")


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def check_tools(tool_format: str, tools_column: str) -> None:
    """TrainingAbort where the template's tool formatter would raise on the tools column."""
    if not tools_column:
        return
    try:
        tools = json.loads(tools_column)
    except ValueError as exc:
        raise TrainingAbort("Invalid JSON format in tool description") from exc
    for tool in tools:
        if not isinstance(tool, dict):
            raise TrainingAbort(f"a tool is not an object: {tool!r:.80}")
        function = tool.get("function", "") if tool.get("type") == "function" else tool
        if tool_format in ("default", "glm4") and not (
            isinstance(function, dict) and "name" in function
        ):
            raise TrainingAbort(f"a tool without a name: {tool!r:.80}")
        if tool_format == "default":
            _check_default_parameters(function)


def _check_default_parameters(function: dict[str, Any]) -> None:
    """DefaultToolUtils.tool_formatter indexes parameters.properties and reads each property."""
    parameters = function.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(properties, dict):
        raise TrainingAbort(f"tool {function['name']!r}: no parameters.properties mapping")
    required = parameters.get("required", []) if isinstance(parameters, dict) else []
    if not isinstance(required, (list, tuple, str, dict)):
        raise TrainingAbort(f"tool {function['name']!r}: `required` cannot be searched")
    for name, param in properties.items():
        if not isinstance(param, dict):
            raise TrainingAbort(f"tool {function['name']!r}: property {name!r} is not a mapping")
        enum = param.get("enum")
        if enum and not all(isinstance(value, str) for value in enum):
            raise TrainingAbort(f"tool {function['name']!r}: enum of {name!r} is not all strings")
        items = param.get("items")
        if items and not isinstance(items, dict):
            raise TrainingAbort(f"tool {function['name']!r}: items of {name!r} is not a mapping")


def encode_example(template: Template, example: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text the template renders from the content) per message, or TrainingAbort where
    LLaMA-Factory would skip the example or stop the run."""
    problem = sharegpt_problem(example)
    if problem is not None:
        raise TrainingAbort(f"the example is skipped: {problem}")
    if not isinstance(example.get("system"), str) or not isinstance(example.get("tools"), str):
        raise TrainingAbort("system and tools must be strings")
    check_tools(template.tool_format, example["tools"])
    rendered = []
    for message in example["messages"]:
        content = message["content"]
        if template.media and any(mark in content for mark in MEDIA_PLACEHOLDERS):
            raise TrainingAbort(f"media placeholders in a text-only example: {content[:80]!r}")
        if message["role"] == "function_call":
            prose, calls = template_function_call(template, content)
            content = prose + format_calls(template.tool_format, calls)
        rendered.append((message["role"], content))
    return rendered
