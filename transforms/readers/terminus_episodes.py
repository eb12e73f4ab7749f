"""Old Terminus-2 logs: `agent/episode-<i>/{debug.json, prompt.txt, response.txt}` folders.

Before it wrote ATIF, Terminus kept its chat in memory and logged one folder per model call:
`prompt.txt` is the message it sent that episode (the task prompt in episode 0, the
terminal observation afterwards) and `response.txt` the model's answer, the JSON
`{analysis, plan, commands, task_complete}` kept verbatim as the assistant content.
Terminus-2 has no tools: the actions are in that JSON and the observations come back as
user messages (formats.md §4). `debug.json` (LiteLLM's call log) is read for the model
name only. Only Harbor trials hold these folders, so there is no standalone `read`.
Files are opened through the trial's `TrialFiles` (`confined.py`).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from transforms.readers.bundle import ReaderError
from transforms.readers.confined import FileMissing, TrialFiles, utf8_json
from transforms.readers.context import NativeRecords, ReadContext
from transforms.readers.conversation import Message, has_conversation, normalise_roles
from transforms.readers.im_builder import build_im_record, date_of

FORMAT = "terminus-episodes"
AGENT_NAME = "terminus-2"
EPISODE_PREFIX = "episode-"


def records_from_agent_dir(ctx: ReadContext, agent_dir: Path) -> NativeRecords | None:
    """The main record of a trial's episode folders; None when there are none."""
    files, agent, metadata = ctx.files, ctx.agent, ctx.metadata
    episodes = sorted(
        (int(p.name[len(EPISODE_PREFIX) :]), p)
        for p in files.glob(agent_dir, f"{EPISODE_PREFIX}*", dirs=True)
        if p.name[len(EPISODE_PREFIX) :].isdigit()
    )
    if not episodes:
        return None
    warnings: list[str] = []
    messages: list[Message] = [{"role": "system", "content": ""}]
    model = None
    expected = 0
    for number, folder in episodes:
        if number != expected:
            warnings.append(f"episode-{expected} to episode-{number - 1} missing")
        expected = number + 1
        prompt = _text(files, folder / "prompt.txt", warnings)
        response = _text(files, folder / "response.txt", warnings)
        if prompt is not None:
            messages.append({"role": "user", "content": prompt})
        if response is not None:
            messages.append({"role": "assistant", "content": response, "reasoning_content": ""})
        model = model or _model(files, folder / "debug.json")
    messages = normalise_roles(messages)
    if not has_conversation(messages):
        raise ReaderError("no messages: the episode folders hold no prompt and response")
    record = build_im_record(
        messages,
        instance_id=ctx.instance_id,
        tools=[],
        agent={
            "name": agent.get("name") or AGENT_NAME,
            "version": agent.get("version"),
            "model": agent.get("model") or model,
        },
        metadata=metadata,
        usage=ctx.usage,
        query_source=FORMAT,
        date=date_of(metadata.get("started_at") or metadata.get("date")),
    )
    return [record], warnings


def _text(files: TrialFiles, path: Path, warnings: list[str]) -> str | None:
    try:
        text = files.read_text(path)
    except FileMissing:
        warnings.append(f"{path.parent.name}/{path.name} missing")
        return None
    except ReaderError as exc:
        warnings.append(str(exc))
        return None
    if not text.strip():
        warnings.append(f"{path.parent.name}/{path.name} empty")
        return None
    return text


def _model(files: TrialFiles, path: Path) -> str | None:
    """The model name LiteLLM logged, if `debug.json` is readable and has one."""
    raw = files.optional_bytes(path)
    if raw is None:
        return None
    try:
        debug = orjson.loads(utf8_json(raw, path.name))
    except (orjson.JSONDecodeError, ReaderError):
        return None
    if not isinstance(debug, dict):
        return None
    for holder in (debug, debug.get("litellm_params"), debug.get("kwargs")):
        model = holder.get("model") if isinstance(holder, dict) else None
        if isinstance(model, str) and model:
            return model
    return None
