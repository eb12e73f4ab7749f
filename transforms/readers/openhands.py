"""OpenHands event logs (format "openhands") -> one main IM record.

Input: a JSON array of events (the native trajectory file), an `events/` folder of
one-event files `<n>.json` (read in `n` order), or, in a Harbor trial,
`agent/sessions/<id>/events/<n>.json`. A single event file is refused at detection with a
line saying to give the events folder or the trial. Events are
`{id, source, message, action | observation, args, cause, tool_call_metadata, llm_metrics,
content, extras}` (formats.md §3).

- The `system` action is the system message; its `args.tools` the tool list (else the
  tools are rebuilt from the calls seen).
- A user `message` action is a user message; an agent `message` action is assistant text.
- Actions with `tool_call_metadata` are tool calls. Actions from one model response (same
  `model_response.id`) are one assistant message whose text, reasoning and calls come from
  that response (name and arguments as the model wrote them); without a `model_response`
  the call is rebuilt from the action's `args`. `finish` is a `finish` call.
- An observation answers the action its `cause` points at: a tool message with the text
  the model was shown (for commands `prefix + content + suffix`, whose suffix carries
  "[The command completed with exit code N.]"; for editor edits `formatted_output_and_error`).
  An `error` observation answering no call is a user message.
- Reasoning: the model response's `reasoning_content` (or `reasoning` / `thinking_blocks`)
  is the IM `reasoning_content`. A `think` action stays a `think` tool call (the model
  called that tool), and `args.thought` without a model response is the visible text that
  came with the call (the message content), not hidden reasoning.
- Bookkeeping (recall, agent state changes, null observations) is skipped.

Text of the wrong JSON type (a message or content that is a number, a boolean, ...) refuses
the log, naming the event. Files are opened confined (`confined.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard

from transforms.readers.bundle import Bundle, ReaderError, new_bundle
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import Message, has_conversation, normalise_roles
from transforms.readers.im_builder import as_text, build_im_record, date_of, openai_reasoning
from transforms.readers.source_files import as_dict, json_type, load_json

FORMAT = "openhands"
AGENT_NAME = "openhands"
# `args` keys that describe how an action ran, not what the model asked for.
_BOOKKEEPING_ARGS = frozenset(
    "thought impl_source translated_ipython_code confirmation_state hidden blocking is_static "
    "cwd security_risk image_urls file_urls wait_for_response outputs final_thought".split()
)


def read(path: Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """One bundle per native trajectory file (a JSON array of events), or per `events/`
    folder of one-event files (`<n>.json`, read in `n` order)."""
    path = Path(path)
    if path.is_dir():
        yield _read_events_folder(path, limits)
        return
    data = load_json(TrialFiles.for_input(path, limits), path)
    if not isinstance(data, list):
        raise ReaderError(
            f"expected a JSON array of OpenHands events, got a JSON {json_type(data)}"
        )
    warnings: list[str] = []
    events = _objects(data, warnings)
    metadata = {"source_file": str(path)}
    record = _Conversation(events).record(path.stem, {}, metadata, {})
    yield new_bundle(
        path.stem,
        str(path),
        FORMAT,
        [record],
        metadata=metadata,
        usage=record["meta_info"]["unique_info"]["_usage"],
        warnings=warnings,
    )


def is_events_folder(folder: Path) -> bool:
    """A folder holding OpenHands' one-event files (`0.json`, `1.json`, ...)."""
    names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    numbered = [n for n in names if n.endswith(".json") and n[: -len(".json")].isdigit()]
    return bool(numbered) and len(numbered) * 2 >= len(names)


def _read_events_folder(folder: Path, limits: ReadLimits) -> Bundle:
    files = TrialFiles(folder, limits)
    found = sorted(files.glob(folder, "*.json"), key=_event_order)
    warnings: list[str] = []
    events = _objects(_load_events(files, found, warnings), warnings)
    warnings.extend(files.take_warnings())
    instance_id = folder.parent.name if folder.name == "events" else folder.name
    metadata = {"source_file": str(folder)}
    record = _Conversation(events).record(instance_id, {}, metadata, {})
    return new_bundle(
        instance_id,
        str(folder),
        FORMAT,
        [record],
        metadata=metadata,
        usage=record["meta_info"]["unique_info"]["_usage"],
        warnings=warnings,
    )


def _load_events(files: TrialFiles, found: list[Path], warnings: list[str]) -> list[Any]:
    events = []
    for file in found:
        try:
            events.append(load_json(files, file))
        except ReaderError as exc:
            warnings.append(f"{file.parent.name}/{file.name}: {exc}; skipped")
    return events


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """The main record of a Harbor trial's `sessions/*/events/*.json`; None when absent."""
    files = ctx.files
    found = sorted(
        (
            event
            for session in files.glob(agent_dir / "sessions", "*", dirs=True)
            for event in files.glob(session / "events", "*.json")
        ),
        key=_event_order,
    )
    if not found:
        return None
    warnings: list[str] = []
    events = _objects(_load_events(files, found, warnings), warnings)
    record = _Conversation(events).record(ctx.instance_id, ctx.agent, ctx.metadata, ctx.usage)
    return [record], warnings


def _event_order(path: Path) -> tuple[str, int, str]:
    stem = path.stem
    return (path.parent.parent.name, int(stem) if stem.isdigit() else -1, stem)


def _objects(data: list[Any], warnings: list[str]) -> list[dict[str, Any]]:
    events = [e for e in data if isinstance(e, dict) and ("action" in e or "observation" in e)]
    if len(events) < len(data):
        warnings.append(f"{len(data) - len(events)} item(s) that are not events skipped")
    if not events:
        raise ReaderError("no OpenHands events (objects with an `action` or `observation`)")
    return events


class _Turn:
    """One model response: its assistant message and the results of its calls, by call id."""

    def __init__(self, content: str, reasoning: str, calls: list[Message]) -> None:
        self.assistant: Message = {
            "role": "assistant",
            "content": content,
            "reasoning_content": reasoning,
            "tool_calls": calls,
        }
        self.results: dict[str, str] = {}

    def messages(self) -> list[Message]:
        calls = self.assistant["tool_calls"]
        out = [
            {
                "role": "tool",
                "content": self.results[c["id"]],
                "tool_call_id": c["id"],
                "name": c["name"],
            }
            for c in calls
            if c["id"] in self.results
        ]
        return [self.assistant, *out]


class _Conversation:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.items: list[_Turn | Message] = []
        self.turns: dict[str, _Turn] = {}
        self.by_action: dict[Any, tuple[_Turn, str]] = {}
        self.by_call: dict[str, _Turn] = {}
        self.tools: list[dict[str, Any]] | None = None
        self.system = ""
        self.version: str | None = None
        self.model: str | None = None
        self.start = next((e.get("timestamp") for e in events if e.get("timestamp")), None)
        self.metrics = next(
            (e["llm_metrics"] for e in reversed(events) if _is_dict(e.get("llm_metrics"))), None
        )
        for event in events:
            if event.get("action") is not None:
                self._action(event)
            else:
                self._observation(event)

    def record(
        self,
        instance_id: str,
        agent: dict[str, Any],
        metadata: dict[str, Any],
        usage: dict[str, Any],
    ) -> dict[str, Any]:
        messages: list[Message] = [{"role": "system", "content": self.system}]
        for item in self.items:
            messages.extend(item.messages() if isinstance(item, _Turn) else [item])
        messages = normalise_roles(messages)
        if not has_conversation(messages):
            raise ReaderError("no messages: the events hold no user message and model turn")
        return build_im_record(
            messages,
            instance_id=instance_id,
            tools=self.tools,
            rebuild_tools=self.tools is None,
            agent={
                "name": agent.get("name") or AGENT_NAME,
                "version": agent.get("version") or self.version,
                "model": agent.get("model") or self.model,
            },
            metadata=metadata,
            usage=usage or self.usage(),
            query_source=FORMAT,
            date=date_of(self.start),
        )

    def usage(self) -> dict[str, Any]:
        """OpenHands accumulates its metrics: the last event's are the run's totals."""
        if self.metrics is None:
            return {}
        tokens = self.metrics.get("accumulated_token_usage")
        tokens = as_dict(tokens)
        return {
            "total_prompt_tokens": tokens.get("prompt_tokens"),
            "total_completion_tokens": tokens.get("completion_tokens"),
            "total_cached_tokens": tokens.get("cache_read_tokens"),
            "total_cost_usd": self.metrics.get("accumulated_cost"),
        }

    def _action(self, event: dict[str, Any]) -> None:
        action = event["action"]
        args = as_dict(event.get("args"))
        source = event.get("source")
        metadata = event.get("tool_call_metadata")
        where = _where(event)
        if action == "system":
            self.system = as_text(args.get("content") or event.get("message"), f"{where}: content")
            if isinstance(args.get("tools"), list):
                self.tools = [t for t in args["tools"] if _is_dict(t)]
            if isinstance(args.get("openhands_version"), str):
                self.version = args["openhands_version"]
        elif source == "agent" and (_is_dict(metadata) or action == "finish"):
            self._call(event, action, args, as_dict(metadata))
        elif action == "message" and source in ("user", "agent"):
            role = "user" if source == "user" else "assistant"
            content = as_text(args.get("content") or event.get("message"), f"{where}: content")
            self.items.append({"role": role, "content": content, "reasoning_content": ""})

    def _call(
        self, event: dict[str, Any], action: str, args: dict[str, Any], metadata: dict[str, Any]
    ) -> None:
        response = metadata.get("model_response")
        response = as_dict(response)
        key = response.get("id") if isinstance(response.get("id"), str) else None
        turn = self.turns.get(key) if key else None
        if turn is None:
            turn = self._new_turn(response, args, _where(event))
            self.items.append(turn)
            if key:
                self.turns[key] = turn
        calls = turn.assistant["tool_calls"]
        call_id = str(metadata.get("tool_call_id") or "")
        if not call_id or all(c["id"] != call_id for c in calls):
            name = str(metadata.get("function_name") or action)
            calls.append(
                {"id": call_id, "name": name, "arguments": _arguments(event, action, args)}
            )
        if call_id:
            self.by_call[call_id] = turn
        self.by_action[event.get("id")] = (turn, call_id)

    def _new_turn(self, response: dict[str, Any], args: dict[str, Any], where: str) -> _Turn:
        if isinstance(response.get("model"), str) and self.model is None:
            self.model = response["model"]
        choices = response.get("choices")
        message = (
            choices[0].get("message")
            if isinstance(choices, list) and choices and _is_dict(choices[0])
            else None
        )
        if not _is_dict(message):
            return _Turn(as_text(args.get("thought"), f"{where}: thought"), "", [])
        calls = [
            {
                "id": str(c.get("id") or ""),
                "name": str(f.get("name") or ""),
                "arguments": f.get("arguments"),
            }
            for c in _list(message.get("tool_calls"))
            if _is_dict(c) and _is_dict(f := c.get("function"))
        ]
        return _Turn(
            as_text(message.get("content"), f"{where}: model response content"),
            openai_reasoning(message, f"{where}: model response"),
            calls,
        )

    def _observation(self, event: dict[str, Any]) -> None:
        link = self.by_action.get(event.get("cause")) if event.get("cause") is not None else None
        metadata = event.get("tool_call_metadata")
        call_id = str(metadata.get("tool_call_id") or "") if _is_dict(metadata) else ""
        if link is None and call_id in self.by_call:
            link = (self.by_call[call_id], call_id)
        if link is not None and link[1]:
            turn, linked_id = link
            turn.results.setdefault(linked_id, _observation_text(event))
        elif event.get("observation") == "error":
            content = as_text(event.get("content"), f"{_where(event)}: content")
            self.items.append({"role": "user", "content": content})


def _arguments(event: dict[str, Any], action: str, args: dict[str, Any]) -> dict[str, Any]:
    if action == "finish":
        message = args.get("final_thought") or event.get("message")
        return {"message": as_text(message, f"{_where(event)}: final_thought")}
    return {k: v for k, v in args.items() if k not in _BOOKKEEPING_ARGS}


def _observation_text(event: dict[str, Any]) -> str:
    content = as_text(event.get("content"), f"{_where(event)}: content")
    extras = as_dict(event.get("extras"))
    formatted = extras.get("formatted_output_and_error")
    if isinstance(formatted, str) and formatted:
        return formatted
    metadata = extras.get("metadata")
    if event.get("observation") == "run" and _is_dict(metadata):
        return _str(metadata.get("prefix")) + content + _str(metadata.get("suffix"))
    return content


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _where(event: dict[str, Any]) -> str:
    return f"event {event.get('id')}"


def _is_dict(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
