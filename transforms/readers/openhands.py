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
- An observation answers the action its `cause` points at (else its call id): a tool
  message with the text OpenHands' `ConversationMemory` showed the model (checked against
  OpenHands' source, commits b5338c6 of 2025-04 and 156d068 of 2025-11): for commands
  `prefix + content + suffix` (the suffix says "[The command completed with exit code N.]"),
  then the `[Current working directory: …]`, `[Python interpreter: …]` and `[Command
  finished with exit code N]` lines its `to_agent_observation` adds from `extras.metadata`;
  for an `error` the content plus "\n[Error occurred in processing last action]"; for a
  rejected call "OBSERVATION:\n" + content + "\n[Last action has been rejected by the
  user]"; for IPython the content with inline base64 image lines replaced as OpenHands does;
  for editor edits of `oh_aci` logs from before 2025-02 `extras.formatted_output_and_error`
  (what `FileEditObservation.__str__` returned then), else the content. Observation text
  longer than the LLM's `max_message_chars` (30 000 unless the caller knows the run's
  setting) is cut in the middle as OpenHands' `truncate_content` does (file reads are not:
  their tool already truncated them); fidelity `observations_truncated`.
  An `error` or rejection answering no call is a user message.
- `recall` observations (workspace context, microagent knowledge) are rendered by OpenHands
  from its prompt templates when prompt extensions are on; the log holds only their parts,
  so they are not rebuilt: fidelity `recall_observations_skipped`, with a warning.
- Reasoning: the model response's `reasoning_content` (or `reasoning` / `thinking_blocks`)
  is the IM `reasoning_content`. A `think` action stays a `think` tool call (the model
  called that tool), and `args.thought` without a model response is the visible text that
  came with the call (the message content), not hidden reasoning.
- Bookkeeping (recall actions, agent state changes, null observations) is skipped.

`conversation_record(events, ...)` is the same conversation for other containers of an
event list (OpenHands' evaluation `output.jsonl`, `openhands_eval.py`).

Text of the wrong JSON type (a message or content that is a number, a boolean, ...) refuses
the log, naming the event. Files are opened confined (`confined.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard

from transforms.readers.bundle import Bundle, ReaderError, new_bundle, note_fidelity
from transforms.readers.confined import DEFAULT_LIMITS, ReadLimits, TrialFiles
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import Message, has_conversation, normalise_roles
from transforms.readers.im_builder import as_text, build_im_record, date_of, openai_reasoning
from transforms.readers.source_files import as_dict, json_type, load_json

FORMAT = "openhands"
AGENT_NAME = "openhands"
# OpenHands' `LLMConfig.max_message_chars` default: longer observations are cut for the LLM.
DEFAULT_MAX_MESSAGE_CHARS = 30_000
TRUNCATION_NOTE = "\n[... Observation truncated due to length ...]\n"
ERROR_NOTE = "\n[Error occurred in processing last action]"
REJECTION_PREFIX = "OBSERVATION:\n"
REJECTION_NOTE = "\n[Last action has been rejected by the user]"
_BASE64_IMAGE = "![image](data:image/png;base64,"
_BASE64_IMAGE_SHOWN = "![image](data:image/png;base64, ...) already displayed to user"
# Observations whose text OpenHands does not cut again (their tool already did).
_NOT_TRUNCATED = frozenset({"read", "browse"})
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
    files = TrialFiles.for_input(path, limits)
    data = load_json(files, path)
    if not isinstance(data, list):
        raise ReaderError(
            f"expected a JSON array of OpenHands events, got a JSON {json_type(data)}"
        )
    warnings: list[str] = []
    events = event_objects(data, warnings)
    metadata = {"source_file": str(path)}
    record, notes = conversation_record(events, path.stem, {}, metadata, {})
    warnings.extend(notes)
    yield new_bundle(
        path.stem,
        str(path),
        FORMAT,
        [record],
        metadata=metadata,
        usage=record["meta_info"]["unique_info"]["_usage"],
        warnings=warnings,
        read_files=files.read_files,
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
    events = event_objects(_load_events(files, found, warnings), warnings)
    warnings.extend(files.take_warnings())
    instance_id = folder.parent.name if folder.name == "events" else folder.name
    metadata = {"source_file": str(folder)}
    record, notes = conversation_record(events, instance_id, {}, metadata, {})
    warnings.extend(notes)
    return new_bundle(
        instance_id,
        str(folder),
        FORMAT,
        [record],
        metadata=metadata,
        usage=record["meta_info"]["unique_info"]["_usage"],
        warnings=warnings,
        read_files=files.read_files,
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
    events = event_objects(_load_events(files, found, warnings), warnings)
    record, notes = conversation_record(events, ctx.instance_id, ctx.agent, ctx.metadata, ctx.usage)
    return [record], warnings + notes


def conversation_record(
    events: list[dict[str, Any]],
    instance_id: str,
    agent: dict[str, Any],
    metadata: dict[str, Any],
    usage: dict[str, Any],
    *,
    max_message_chars: int | None = DEFAULT_MAX_MESSAGE_CHARS,
) -> tuple[dict[str, Any], list[str]]:
    """The main IM record of an OpenHands event list (see the module docstring) and the
    warnings about it; what was rewritten or skipped is in its `_instance_metadata.fidelity`.
    `max_message_chars` is the run's LLM setting when known (None: no cut)."""
    conversation = _Conversation(events, max_message_chars)
    record = conversation.record(instance_id, agent, metadata, usage)
    note_fidelity([record], conversation.fidelity)
    return record, conversation.warnings()


def _event_order(path: Path) -> tuple[str, int, str]:
    stem = path.stem
    return (path.parent.parent.name, int(stem) if stem.isdigit() else -1, stem)


def event_objects(data: list[Any], warnings: list[str]) -> list[dict[str, Any]]:
    """The events of a list (objects with an `action` or `observation`); others are warned."""
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
    def __init__(self, events: list[dict[str, Any]], max_message_chars: int | None) -> None:
        self.max_message_chars = max_message_chars
        self.fidelity: Counter[str] = Counter()
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

    def warnings(self) -> list[str]:
        skipped = self.fidelity["recall_observations_skipped"]
        if not skipped:
            return []
        return [
            f"{skipped} recall observation(s) not rebuilt: OpenHands renders the workspace "
            "context and microagent knowledge they hold from its prompt templates (when "
            "prompt extensions are on), and the log keeps only their parts"
        ]

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
        messages = normalise_roles(messages, self.fidelity)
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
        kind = event.get("observation")
        if kind == "recall":
            self.fidelity["recall_observations_skipped"] += 1
            return
        link = self.by_action.get(event.get("cause")) if event.get("cause") is not None else None
        metadata = event.get("tool_call_metadata")
        call_id = str(metadata.get("tool_call_id") or "") if _is_dict(metadata) else ""
        if link is None and call_id in self.by_call:
            link = (self.by_call[call_id], call_id)
        if link is not None and link[1]:
            turn, linked_id = link
            if linked_id not in turn.results:
                turn.results[linked_id] = self._shown(event)
        elif kind in ("error", "user_rejected"):
            self.items.append({"role": "user", "content": self._shown(event)})

    def _shown(self, event: dict[str, Any]) -> str:
        """The observation's text as OpenHands' `ConversationMemory` gave it to the LLM."""
        kind = event.get("observation")
        content = as_text(event.get("content"), f"{_where(event)}: content")
        extras = as_dict(event.get("extras"))
        if kind == "edit" and isinstance(extras.get("formatted_output_and_error"), str):
            content = extras["formatted_output_and_error"]  # oh_aci logs before 2025-02
        elif kind == "run_ipython" and _BASE64_IMAGE in content:
            content = "\n".join(
                _BASE64_IMAGE_SHOWN if _BASE64_IMAGE in line else line
                for line in content.split("\n")
            )
        if kind not in _NOT_TRUNCATED:
            content = self._truncated(content)
        if kind == "run":
            metadata = as_dict(extras.get("metadata"))
            if "exit_code" in extras and "exit_code" not in metadata:
                metadata = {**metadata, "exit_code": extras["exit_code"]}  # before 2024-11
            return _command_output(content, metadata)
        if kind == "error":
            return content + ERROR_NOTE
        if kind == "user_rejected":
            return REJECTION_PREFIX + content + REJECTION_NOTE
        return content

    def _truncated(self, text: str) -> str:
        limit = self.max_message_chars
        if limit is None or limit < 0 or len(text) <= limit:
            return text
        self.fidelity["observations_truncated"] += 1
        half = limit // 2
        return text[:half] + TRUNCATION_NOTE + text[-half:]


def _command_output(content: str, metadata: dict[str, Any]) -> str:
    """`CmdOutputObservation.to_agent_observation`: the output between its prefix and
    suffix, then the working directory, interpreter and exit code the shell reported."""
    text = _str(metadata.get("prefix")) + content + _str(metadata.get("suffix"))
    if _str(metadata.get("working_dir")):
        text += f"\n[Current working directory: {metadata['working_dir']}]"
    if _str(metadata.get("py_interpreter_path")):
        text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
    exit_code = metadata.get("exit_code", -1)
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != -1:
        text += f"\n[Command finished with exit code {exit_code}]"
    return text


def _arguments(event: dict[str, Any], action: str, args: dict[str, Any]) -> dict[str, Any]:
    if action == "finish":
        message = args.get("final_thought") or event.get("message")
        return {"message": as_text(message, f"{_where(event)}: final_thought")}
    return {k: v for k, v in args.items() if k not in _BOOKKEEPING_ARGS}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _where(event: dict[str, Any]) -> str:
    return f"event {event.get('id')}"


def _is_dict(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
