"""OpenAI's chat fine-tuning format, re-implemented as a line validator to check what
trajcurate writes to `openai.jsonl`.

Rules taken from the published sources (the code is ours):

- openai/openai-openapi `openapi.yaml` (the 2025-04 revision, the last with the schema):
  `FineTuneChatRequestInput`, the per-line training example of the supervised method: keys
  `messages` (array, at least one item), `tools` (array of `ChatCompletionTool`),
  `parallel_tool_calls` (boolean), `functions` (deprecated). A message is one of
  `ChatCompletionRequestSystemMessage` / `UserMessage` (role, content, name; content
  required: a string or a non-empty array of parts), `FineTuneChatCompletionRequestAssistant
  Message` (role, content, refusal, name, audio, tool_calls, function_call, and `weight` 0
  or 1; content required unless tool_calls or function_call), `ChatCompletionRequestTool
  Message` (role, content, tool_call_id, all required), `...FunctionMessage` (role, content,
  name). A tool call is `{"id", "type": "function", "function": {"name", "arguments"}}`, all
  strings (arguments as JSON text). A tool is `{"type": "function", "function":
  FunctionObject}`, whose `name` is "a-z, A-Z, 0-9, or contain underscores and dashes, with a
  maximum length of 64", `parameters` a JSON Schema object, `description` a string,
  `strict` a boolean or null. Only `content`, `refusal`, `audio` and `function_call` of an
  assistant message are nullable. No key outside these is accepted (the issue measured
  `version`, `meta_info` and null message keys on every IM line).
- The Chat Completions API's documented rule, which a conversation in a training file obeys
  too: "An assistant message with 'tool_calls' must be followed by tool messages responding
  to each 'tool_call_id'", and a tool message answers a call of the assistant message before
  it. The schema's own example ends on an assistant message with calls and no results, so a
  call in the final message needs none.
- OpenAI's cookbook "Data preparation and analysis for chat model fine-tuning" format checks:
  a message without text (`missing_content`: empty content and no call) and an example
  without an assistant message (`example_missing_assistant_message`) are errors. The
  cookbook predates tool messages; a tool result may be "" (the schema requires a string,
  and a command with no output has none).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

LINE_KEYS = {"messages", "tools", "parallel_tool_calls", "functions"}
MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {
        "role",
        "content",
        "refusal",
        "name",
        "audio",
        "tool_calls",
        "function_call",
        "weight",
    },
    "tool": {"role", "content", "tool_call_id"},
    "function": {"role", "content", "name"},
}
NULLABLE = {"assistant": {"content", "refusal", "audio", "function_call"}}
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def line_problems(line: bytes) -> list[str]:
    """Every rule one JSONL line breaks ([] when it is a valid training example)."""
    try:
        example = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return [f"not JSON: {exc}"]
    if not isinstance(example, dict):
        return ["a line is not a JSON object"]
    problems = [f"key {key!r} not allowed on a line" for key in sorted(set(example) - LINE_KEYS)]
    messages = example.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: a non-empty array is required"]
    for index, message in enumerate(messages):
        problems.extend(f"messages[{index}]: {p}" for p in _message_problems(message))
    if not problems:
        problems.extend(_conversation_problems(messages))
    if "tools" in example:
        problems.extend(_tools_problems(example["tools"]))
    if "parallel_tool_calls" in example and not isinstance(example["parallel_tool_calls"], bool):
        problems.append("parallel_tool_calls: a boolean")
    return problems


def _message_problems(message: Any) -> list[str]:
    if not isinstance(message, dict):
        return ["not an object"]
    role = message.get("role")
    if role not in MESSAGE_KEYS:
        return [f"role {role!r} is not system, user, assistant, tool or function"]
    problems = [
        f"key {k!r} not allowed for {role}" for k in sorted(set(message) - MESSAGE_KEYS[role])
    ]
    nullable = NULLABLE.get(role, set())
    problems += [f"{k} is null" for k, v in message.items() if v is None and k not in nullable]
    content = message.get("content")
    calls = message.get("tool_calls")
    if role == "assistant":
        if not _has_text(content) and not calls and not message.get("function_call"):
            problems.append("assistant: content required unless tool_calls")
        weight = message.get("weight", 0)
        if isinstance(weight, bool) or weight not in (0, 1):
            problems.append("weight: 0 or 1")
        if calls is not None:
            problems.extend(_calls_problems(calls))
    elif not _has_text(content) and not (role == "tool" and content == ""):
        problems.append(f"{role}: content required (non-empty)")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        problems.append("tool: tool_call_id (a string) required")
    return problems


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return content != ""
    return isinstance(content, list) and len(content) > 0


def _calls_problems(calls: Any) -> list[str]:
    if not isinstance(calls, list):
        return ["tool_calls: an array"]
    problems = []
    for n, call in enumerate(calls):
        where = f"tool_calls[{n}]"
        if not isinstance(call, dict) or set(call) != {"id", "type", "function"}:
            problems.append(f"{where}: exactly id, type, function")
            continue
        function = call["function"]
        if not isinstance(call["id"], str) or call["type"] != "function":
            problems.append(f"{where}: id a string, type 'function'")
        if not isinstance(function, dict) or set(function) != {"name", "arguments"}:
            problems.append(f"{where}.function: exactly name, arguments")
        elif not (isinstance(function["name"], str) and isinstance(function["arguments"], str)):
            problems.append(f"{where}.function: name and arguments are strings")
    return problems


def _conversation_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems = []
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            owner = index - 1
            while owner >= 0 and messages[owner]["role"] == "tool":
                owner -= 1
            calls = messages[owner].get("tool_calls") if owner >= 0 else None
            if message["tool_call_id"] not in {c["id"] for c in calls or []}:
                problems.append(f"messages[{index}]: a tool message that answers no call")
        if message["role"] == "assistant" and message.get("tool_calls"):
            if index == len(messages) - 1:
                continue
            answered = set()
            for later in messages[index + 1 :]:
                if later["role"] != "tool":
                    break
                answered.add(later["tool_call_id"])
            missing = {c["id"] for c in message["tool_calls"]} - answered
            if missing:
                problems.append(f"messages[{index}]: tool_calls not answered: {sorted(missing)}")
    if not any(m["role"] == "assistant" for m in messages):
        problems.append("no assistant message")
    return problems


def _tools_problems(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return ["tools: an array"]
    problems = []
    for n, tool in enumerate(tools):
        where = f"tools[{n}]"
        if not isinstance(tool, dict) or set(tool) != {"type", "function"}:
            problems.append(f"{where}: exactly type, function")
            continue
        function = tool["function"]
        if tool["type"] != "function" or not isinstance(function, dict):
            problems.append(f"{where}: type 'function' and a function object")
            continue
        extra = set(function) - {"name", "description", "parameters", "strict"}
        if extra:
            problems.append(f"{where}.function: keys {sorted(extra)} not allowed")
        name = function.get("name")
        if not isinstance(name, str) or not FUNCTION_NAME.fullmatch(name):
            problems.append(f"{where}.function.name {name!r}: [A-Za-z0-9_-]{{1,64}}")
        if "description" in function and not isinstance(function["description"], str):
            problems.append(f"{where}.function.description: a string")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            problems.append(f"{where}.function.parameters: a JSON Schema object")
        if "strict" in function and function["strict"] not in (True, False, None):
            problems.append(f"{where}.function.strict: a boolean")
    return problems
