"""One agent's Claude Code events (main session or one subagent) -> IM-shaped messages.

What the model saw is what Claude Code sent to the API: every `user` and `assistant` line of
the conversation (its `normalizeMessagesForAPI` drops progress lines, `system` lines other
than local-command output, `<synthetic>` API-error notices and `isVirtual` messages, and
merges the rest), so:

- assistant lines sharing `message.id` (one API response split over several lines) are one
  assistant message: text blocks -> content, `thinking` -> `reasoning_content`, `tool_use`
  -> tool calls; `redacted_thinking` has no text (counted `redacted_thinking_dropped`);
  `<synthetic>` lines are Claude Code's own notices, not model output (dropped, counted);
- a `tool_result` becomes the `tool` message right after its call's assistant message, in
  call order wherever the log wrote it (`claude_code_render.tool_result_text`); its
  `is_error` goes to `errored_call_ids`; the line's `toolUseResult` (UI metadata) is not
  read into text (counted `ui_metadata_removed`);
- user text is a `user` turn, also right after tool results: a request typed after a
  rejected or interrupted call (Claude Code's own `[Request interrupted by user for tool
  use]` line is sent to the model, so it is kept), a context-compaction summary
  (`isCompactSummary`, counted `compaction_summaries`), local-command lines
  (`<command-name>`, `<local-command-stdout>`, and the `isMeta` caveat before them: Claude
  Code hides `isMeta` lines in its UI but sends them to the model, which is why the caveat
  tells the model not to answer them), `system` lines of subtype `local_command` (sent as
  user text);
- what `normalise_roles` removes after the last assistant message (a result or request the
  model never answered) is counted (`unanswered_tool_results_dropped`,
  `unanswered_user_turns_dropped`; `subagent_`-prefixed for a sidechain).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from transforms.readers.claude_code_render import (
    append_stripped,
    assistant_block_text,
    check_content,
    stringify,
    tool_result_text,
    user_blocks_text,
)
from transforms.readers.conversation import Message, normalise_roles

MAIN = "main"  # the key and label of the main session's conversation

SYNTHETIC_MODEL = "<synthetic>"
LOCAL_COMMAND = "local_command"


class Call:
    """One `tool_use` and what came back for it."""

    def __init__(self, call_id: str, name: str, arguments: Any) -> None:
        self.id = call_id
        self.name = name
        self.arguments = arguments
        self.output: str | None = None
        self.errored = False
        self.agent_id: str | None = None  # `toolUseResult.agentId`: the subagent it ran

    @property
    def prompt(self) -> str | None:
        value = self.arguments.get("prompt") if isinstance(self.arguments, dict) else None
        return value if isinstance(value, str) else None


class _Turn:
    """One API response: the merged content of every assistant event with its `message.id`."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[Call] = []

    def messages(self) -> list[Message]:
        if not (self.texts or self.reasoning or self.calls):
            return []
        assistant: Message = {
            "role": "assistant",
            "content": "\n\n".join(self.texts),
            "reasoning_content": "\n\n".join(self.reasoning),
        }
        if self.calls:
            assistant["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.calls
            ]
        results: list[Message] = [
            {"role": "tool", "content": c.output, "tool_call_id": c.id, "name": c.name}
            for c in self.calls
            if c.output is not None
        ]
        return [assistant, *results]


class Conversation:
    """One agent's events -> messages; tool results attach to their calls by id."""

    def __init__(self, events: list[dict[str, Any]], label: str) -> None:
        self.label = label
        self.events = events
        self.items: list[_Turn | str] = []
        self.turns: dict[str, _Turn] = {}
        self.calls: dict[str, Call] = {}
        self.usages: dict[str, dict[str, Any]] = {}
        self.model: str | None = None
        self.warnings: list[str] = []
        self.counts: Counter[str] = Counter()
        for number, event in enumerate(events, 1):
            uuid = event.get("uuid")
            where = f"{label} {event['type']} event {uuid if isinstance(uuid, str) else number}"
            self._event(event, where)
        if self.counts["synthetic_messages_dropped"]:
            n = self.counts["synthetic_messages_dropped"]
            self.warnings.append(f"{label}: {n} <synthetic> message(s) dropped")
        if self.counts["orphan_tool_results_dropped"]:
            n = self.counts["orphan_tool_results_dropped"]
            self.warnings.append(f"{label}: {n} tool result(s) without a call dropped")

    @property
    def first_user_text(self) -> str | None:
        """The agent's prompt: its first user text (a subagent's is its Task call's prompt)."""
        return next((item for item in self.items if isinstance(item, str)), None)

    def open_with_prompt(self, prompt: str) -> bool:
        """Put `prompt` before the first turn when the log holds no user text before it (some
        2.0 sidechain files open with the assistant's line); True when it did."""
        if not self.items or isinstance(self.items[0], str):
            return False
        self.items.insert(0, prompt)
        return True

    @property
    def errored_call_ids(self) -> list[str]:
        return [call.id for call in self.calls.values() if call.errored]

    def messages(self) -> list[Message]:
        out: list[Message] = [{"role": "system", "content": ""}]
        for item in self.items:
            if isinstance(item, str):
                out.append({"role": "user", "content": item})
            else:
                out.extend(item.messages())
        return normalise_roles(out, self.counts, subagent=self.label != MAIN)

    def usage(self) -> dict[str, Any]:
        """Token totals, counting each API response once (its last, cumulative usage)."""
        if not self.usages:
            return {}
        totals = {"total_prompt_tokens": 0, "total_completion_tokens": 0, "total_cached_tokens": 0}
        for usage in self.usages.values():
            cached = _count(usage, "cache_read_input_tokens")
            created = _count(usage, "cache_creation_input_tokens")
            totals["total_prompt_tokens"] += _count(usage, "input_tokens") + cached + created
            totals["total_completion_tokens"] += _count(usage, "output_tokens")
            totals["total_cached_tokens"] += cached
        return dict(totals)

    def _event(self, event: dict[str, Any], where: str) -> None:
        kind = event["type"]
        if kind == "system":  # only local-command output reaches here (see `split_streams`)
            content = check_content(event.get("content"), f"{where}: content")
            if isinstance(content, str) and content.strip():
                self.items.append(content)
            return
        if event.get("isVirtual") is True:
            self.counts["virtual_messages_dropped"] += 1
            return
        if kind == "assistant":
            self._assistant(event["message"], where)
            return
        if event.get("isCompactSummary") is True:
            self.counts["compaction_summaries"] += 1
        self._user(event, where)

    def _assistant(self, message: dict[str, Any], where: str) -> None:
        model = message.get("model")
        if model == SYNTHETIC_MODEL:
            self.counts["synthetic_messages_dropped"] += 1
            return
        if isinstance(model, str) and model and self.model is None:
            self.model = model
        msg_id = message.get("id")
        key = msg_id if isinstance(msg_id, str) and msg_id else f"#{len(self.items)}"
        turn = self.turns.get(key)
        if turn is None:
            turn = self.turns[key] = _Turn()
            self.items.append(turn)
        if isinstance(message.get("usage"), dict):
            self.usages[key] = message["usage"]
        content = message.get("content")
        if isinstance(content, list):
            for number, block in enumerate(content, 1):
                self._assistant_block(turn, block, f"{where}: content block {number}")
        elif content is not None:
            append_stripped(turn.texts, stringify(check_content(content, f"{where}: content")))

    def _assistant_block(self, turn: _Turn, block: Any, where: str) -> None:
        if not isinstance(block, dict):
            append_stripped(turn.texts, assistant_block_text(block, where))
            return
        kind = block.get("type")
        if kind == "tool_use":
            call_id = block.get("id") or block.get("tool_use_id")
            if not call_id or call_id in self.calls:
                return
            raw = block.get("input")
            arguments = raw if isinstance(raw, dict) else {"input": raw}
            call = Call(str(call_id), str(block.get("name") or ""), arguments)
            self.calls[call.id] = call
            turn.calls.append(call)
        elif kind in ("thinking", "reasoning", "analysis"):
            value = block.get("text") if block.get("text") is not None else block.get("thinking")
            value = check_content(value, f"{where} {kind}")
            append_stripped(turn.reasoning, value if isinstance(value, str) else stringify(value))
        elif kind == "redacted_thinking":
            self.counts["redacted_thinking_dropped"] += 1
        elif kind == "code" and isinstance(block.get("code"), str):
            append_stripped(turn.texts, block["code"])
        elif isinstance(block.get("text"), str):
            append_stripped(turn.texts, block["text"])
        else:
            append_stripped(turn.texts, stringify(block))

    def _user(self, event: dict[str, Any], where: str) -> None:
        content = check_content(event["message"].get("content"), f"{where}: content")
        if isinstance(content, str):
            if content.strip():
                self.items.append(content)
            return
        if content is None:
            return
        blocks = content if isinstance(content, list) else [content]
        if event.get("toolUseResult") is not None:
            self.counts["ui_metadata_removed"] += 1
        others: list[tuple[int, Any]] = []
        for number, block in enumerate(blocks, 1):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._tool_result(block, event.get("toolUseResult"), f"{where}: block {number}")
            else:
                others.append((number, block))
        text = user_blocks_text(others, self.counts, where)
        if text:
            self.items.append(text)

    def _tool_result(self, block: dict[str, Any], ui_result: Any, where: str) -> None:
        call = self.calls.get(str(block.get("tool_use_id") or ""))
        if call is None:
            self.counts["orphan_tool_results_dropped"] += 1
            return
        if call.output is not None:
            self.counts["duplicate_tool_results_dropped"] += 1
            return
        call.output = tool_result_text(block, self.counts, where)
        call.errored = block.get("is_error") is True
        if isinstance(ui_result, dict) and isinstance(ui_result.get("agentId"), str):
            call.agent_id = ui_result["agentId"]


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
