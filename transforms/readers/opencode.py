"""OpenCode runs (format "opencode"): the JSON lines of `opencode run --format=json`.

Each line is `{type, timestamp (ms), sessionID, part}` (formats.md §3). One model turn is
`step_start` … `step_finish`: its `text` and `reasoning` parts and its `tool_use` parts
(`part.tool`, `part.callID`, `part.state{status, input, output | error, metadata}`) make one
assistant message, followed by one tool message per call (the output, or the error text
of a failed call). `user` lines are the prompts (`parts[]` or `part` text); `error` lines
and the per-step cost and tokens of `step_finish` go to warnings and `_usage`.

`opencode run --format json` does not echo the prompt: in a Harbor trial the task
instruction (from Harbor's command log) is the user message; a standalone stream without a
`user` event gets an empty user message and a warning, so its model turns are kept.

Reasoning: a `reasoning` part's text. Through OpenRouter the AI SDK provider also keeps the
model's reasoning in the part's `metadata.openrouter.reasoning_details` (OpenRouter's
`ReasoningDetail` union: `reasoning.text{text}`, `reasoning.summary{summary}`,
`thinking{thinking}`, `reasoning.encrypted{data}`); it is read when the reasoning part has no
text of its own, or, when no part of the step has reasoning text, from the step's other
parts. The same text is taken once per step (a reasoning part's text is never counted again
from its details). Encrypted details hold no readable text: fidelity
`encrypted_reasoning_skipped`.

OpenCode's stream has no system prompt and no tool list: the system message is empty and
the tools are rebuilt from the calls seen. A step cut off before its `step_finish` (a
killed run) is kept, with a warning. Text or tool output of the wrong JSON type (a number,
a boolean) refuses the run; the file is opened confined (`confined.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transforms.readers.bundle import (
    Bundle,
    ReaderError,
    new_bundle,
    note_fidelity,
    standalone_instance_id,
)
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import (
    Message,
    ensure_prompt,
    has_conversation,
    normalise_roles,
)
from transforms.readers.im_builder import as_text, build_im_record, date_of
from transforms.readers.source_files import as_dict, iter_json_objects, json_type

FORMAT = "opencode"
AGENT_NAME = "opencode"
STDOUT_FILE = "opencode.txt"
# OpenRouter `ReasoningDetail` type -> the key holding its text
_DETAIL_TEXT_KEYS = {
    "reasoning.text": "text",
    "reasoning.summary": "summary",
    "thinking": "thinking",
}
_EVENT_TYPES = frozenset("user step_start text reasoning tool_use step_finish error".split())


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per `opencode.txt` file (one session)."""
    path = Path(path)
    warnings: list[str] = []
    files = TrialFiles.for_input(path, limits)
    run = _Run(_events(files, path, warnings), None, path.name)
    instance_id = standalone_instance_id(path)  # the session id is data: kept as metadata
    metadata = {"source_file": str(path), "opencode_session_id": run.session_id}
    record = run.record(instance_id, {}, metadata, {})
    yield new_bundle(
        instance_id,
        str(path),
        FORMAT,
        [record],
        metadata=metadata,
        usage=record["meta_info"]["unique_info"]["_usage"],
        warnings=warnings + run.warnings,
        read_files=files.read_files,
    )


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """The main record of a Harbor trial's `agent/opencode.txt`; None when it is absent.

    `opencode run --format json` does not echo the prompt: the trial's task instruction
    (`ctx.instruction`, from Harbor's command log) is the user message then.
    """
    path = agent_dir / STDOUT_FILE
    if not ctx.files.is_file(path):
        return None
    warnings: list[str] = []
    run = _Run(_events(ctx.files, path, warnings), ctx.instruction, path.name)
    record = run.record(ctx.instance_id, ctx.agent, ctx.metadata, ctx.usage)
    return [record], warnings + run.warnings


def _events(files: TrialFiles, path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    local: list[str] = []
    events = [e for _, e in iter_json_objects(files, path, local)]
    warnings.extend(f"{path.name}: {w}" for w in local)
    known = [e for e in events if e.get("type") in _EVENT_TYPES]
    if not known:
        kind = events[0].get("type")
        raise ReaderError(f"not an OpenCode event stream: first event has type {kind!r}")
    return known


class _Run:
    """The events of one run -> messages, usage and warnings."""

    def __init__(
        self, events: list[dict[str, Any]], instruction: Any = None, label: str = STDOUT_FILE
    ) -> None:
        self.messages: list[Message] = [{"role": "system", "content": ""}]
        self.instruction = instruction
        self.label = label
        self.warnings: list[str] = []
        self.fidelity: Counter[str] = Counter()
        self.totals: dict[str, int | float] = {
            "total_prompt_tokens": 0,
            "total_completion_tokens": 0,
        }
        self.cached: int | float = 0
        self.cost = 0.0
        self.steps = 0
        self.session_id = next(
            (e["sessionID"] for e in events if _is_str(e.get("sessionID"))), None
        )
        self.start = next((e.get("timestamp") for e in events if e.get("timestamp")), None)
        step: list[dict[str, Any]] | None = None
        for event in events:
            kind = event["type"]
            part = as_dict(event.get("part"))
            if kind == "user":
                self._close(step, finished=False)
                step = None
                self.messages.append({"role": "user", "content": _user_text(event)})
            elif kind == "step_start":
                self._close(step, finished=False)
                step = []
            elif kind in ("text", "reasoning", "tool_use"):
                if step is None:
                    step = []
                step.append({"kind": kind, **part})
            elif kind == "step_finish":
                self._close(step or [], finished=True)
                self._account(part)
                step = None
            elif kind == "error":
                self.warnings.append(f"OpenCode error: {_error_text(event)}")
        self._close(step, finished=False)

    def record(
        self,
        instance_id: str,
        agent: dict[str, Any],
        metadata: dict[str, Any],
        usage: dict[str, Any],
    ) -> dict[str, Any]:
        prompted = ensure_prompt(self.messages, self.instruction, self.label, self.warnings)
        messages = normalise_roles(prompted, self.fidelity)
        if not has_conversation(messages):
            raise ReaderError("no messages: the stream has no prompt and model turn")
        record = build_im_record(
            messages,
            instance_id=instance_id,
            rebuild_tools=True,
            agent={
                "name": agent.get("name") or AGENT_NAME,
                "version": agent.get("version"),
                "model": agent.get("model"),
            },
            metadata=metadata,
            usage=usage or self.usage(),
            query_source=FORMAT,
            date=date_of(self.start),
        )
        note_fidelity([record], self.fidelity)
        return record

    def usage(self) -> dict[str, Any]:
        if not self.steps:
            return {}
        return {**self.totals, "total_cached_tokens": self.cached, "total_cost_usd": self.cost}

    def _close(self, parts: list[dict[str, Any]] | None, *, finished: bool) -> None:
        if parts is None:
            return
        if not finished:
            self.warnings.append("a model step has no step_finish (the stream was cut off)")
        texts = [_text(p.get("text"), "a text part") for p in parts if p["kind"] == "text"]
        reasoning = self._reasoning(parts)
        calls, results = [], []
        for part in (p for p in parts if p["kind"] == "tool_use"):
            state = as_dict(part.get("state"))
            call_id = str(part.get("callID") or part.get("id") or "")
            name = str(part.get("tool") or "")
            arguments = state.get("input")
            if not isinstance(arguments, dict):
                arguments = {"value": arguments} if arguments else {}
            calls.append({"id": call_id, "name": name, "arguments": arguments})
            output = state.get("output") if state.get("output") is not None else state.get("error")
            if output is not None:
                results.append(
                    {
                        "role": "tool",
                        "content": as_text(output, f"tool_use {call_id or name}: output"),
                        "tool_call_id": call_id,
                        "name": name,
                    }
                )
        if not (texts or reasoning or calls):
            return
        assistant: Message = {
            "role": "assistant",
            "content": "\n".join(t for t in texts if t),
            "reasoning_content": "\n\n".join(t for t in reasoning if t),
        }
        if calls:
            assistant["tool_calls"] = calls
        self.messages.extend([assistant, *results])

    def _reasoning(self, parts: list[dict[str, Any]]) -> list[str]:
        """The step's reasoning texts, each once (see the module docstring)."""
        texts: list[str] = []
        for part in (p for p in parts if p["kind"] == "reasoning"):
            own = _text(part.get("text"), "a reasoning part")
            texts.extend([own] if own else self._detail_texts(part))
        if not any(texts):
            for part in (p for p in parts if p["kind"] != "reasoning"):
                texts.extend(self._detail_texts(part))
        return list(dict.fromkeys(t for t in texts if t))

    def _detail_texts(self, part: dict[str, Any]) -> list[str]:
        """Texts of a part's `metadata.openrouter.reasoning_details`."""
        openrouter = as_dict(as_dict(part.get("metadata")).get("openrouter"))
        details = openrouter.get("reasoning_details")
        texts = []
        for detail in details if isinstance(details, list) else []:
            kind = detail.get("type") if isinstance(detail, dict) else None
            key = _DETAIL_TEXT_KEYS.get(kind) if isinstance(kind, str) else None
            if kind == "reasoning.encrypted":
                self.fidelity["encrypted_reasoning_skipped"] += 1
            elif key is not None:
                texts.append(_text(detail.get(key), f"a {kind} reasoning detail"))
        return texts

    def _account(self, part: dict[str, Any]) -> None:
        self.steps += 1
        tokens = as_dict(part.get("tokens"))
        cache = as_dict(tokens.get("cache"))
        cached = _number(cache.get("read"))
        self.totals["total_prompt_tokens"] += _number(tokens.get("input")) + cached
        self.totals["total_completion_tokens"] += _number(tokens.get("output"))
        self.cached += cached
        self.cost += float(_number(part.get("cost")))


def _user_text(event: dict[str, Any]) -> str:
    parts = event.get("parts")
    if not isinstance(parts, list):
        part = event.get("part")
        parts = [part] if isinstance(part, dict) else []
    texts = [
        _text(p.get("text"), "a user text part")
        for p in parts
        if isinstance(p, dict) and p.get("type") == "text"
    ]
    return "\n".join(t for t in texts if t)


def _error_text(event: dict[str, Any]) -> str:
    error = event.get("error")
    if isinstance(error, dict):
        data = error.get("data")
        message = data.get("message") if isinstance(data, dict) else None
        return str(message or error.get("name") or error)
    return str(error) if error is not None else "an error event without details"


def _is_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _number(value: Any) -> int | float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _text(value: Any, what: str) -> str:
    """A part's text: a string, or "" for null; another JSON type is refused."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReaderError(f"{what} has a text that is a JSON {json_type(value)}, expected text")
    return value
