"""A reader's messages -> a valid IM role order (formats.md §4), the same rules for every reader.

Native logs record what happened, not a chat transcript: text a harness injects after a
tool result, one model response split in two, the final tool output nobody answered. The
rules below are those of the ATIF reader (`atif_messages.normalise_roles`), so a trial read
from its native logs or from its `trajectory.json` gives the same conversation:

- one leading system message (leading system messages are joined; later ones dropped);
- a stray tool result right after user text is folded into that user turn;
- user text after a tool result stays a `user` turn (a request typed after an interrupted or
  rejected call, a harness notice): the model saw it as the user's words, not the tool's;
- a tool result before any user turn becomes the user turn;
- a turn with nothing in it — an assistant turn with no text, reasoning or call, a user
  turn after the first with no text (a junk step such as ATIF's `{"source": "agent"}`), or
  one whose only text is what the clean stage removes (zero-width and other invisible
  characters, control characters) — is dropped and counted (`empty_turns_dropped`; the
  record's warnings say so), its neighbours then joined as below;
- two assistant turns with nothing between them are one turn;
- nothing after the last assistant message (the model never answered it). What goes is
  counted: `unanswered_tool_results_dropped` (the run stopped after a tool result: a timeout,
  a kill, a step limit; the `trainable` stage keeps such a run out of the SFT files),
  `final_action_results_dropped` (the reply to a call that ends the run by design, such as
  SWE-agent's `submit`, which returns the patch: nobody was meant to answer it) and
  `unanswered_user_turns_dropped`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from scorers.im_validity import UNANSWERED_RESULTS
from transforms.cleaning import clean_text

Message = dict[str, Any]
JOINER = "\n\n"
UNANSWERED_USER_TURNS = "unanswered_user_turns_dropped"
EMPTY_TURNS = "empty_turns_dropped"
FINAL_ACTION_RESULTS = "final_action_results_dropped"
# Calls that end a run by design (SWE-agent `submit`, OpenHands `finish`, Terminus-2's ATIF
# `mark_task_complete`): a reply to one is the harness closing the run, not a cut-off.
FINAL_ACTIONS = frozenset({"submit", "finish", "mark_task_complete"})


def join(first: str, second: str) -> str:
    return JOINER.join(part for part in (first, second) if part)


def normalise_roles(
    messages: list[Message], counts: Counter[str] | None = None, *, subagent: bool = False
) -> list[Message]:
    """system? user (assistant tool* user?)* ... assistant — see the module docstring.

    `counts` (a reader's fidelity counter) gets the messages cut after the last assistant turn,
    under `subagent_`-prefixed kinds for a subagent's conversation (only the main agent's
    decide whether the instance is trainable).
    """
    out: list[Message] = []
    for message in messages:
        role = message["role"]
        if _is_empty_turn(message, out):
            if counts is not None:
                counts[("subagent_" if subagent else "") + EMPTY_TURNS] += 1
            continue
        prev = out[-1] if out else None
        prev_role = prev["role"] if prev else None
        if role == "system":
            if prev is None:
                out.append(message)
            elif prev_role == "system" and len(out) == 1:
                prev["content"] = join(prev["content"], message["content"])
            continue
        folds = (role, prev_role) in (("user", "user"), ("tool", "user"))
        if prev is not None and folds:
            prev["content"] = join(prev["content"], message["content"])
            continue
        if role == "tool" and prev_role in (None, "system"):
            out.append({"role": "user", "content": message["content"]})
            continue
        if role == "assistant" and prev is not None and prev_role == "assistant":
            _merge_assistant(prev, message)
            continue
        out.append(message)
    if any(m["role"] == "assistant" for m in out):
        _count_unanswered(messages, counts, "subagent_" if subagent else "")
        while out[-1]["role"] != "assistant":
            out.pop()
    return out


def _is_empty_turn(message: Message, out: list[Message]) -> bool:
    """An assistant turn with no text, reasoning or call, or a user turn with no text after
    the first one (the first stands for the prompt, even empty: see `ensure_prompt`)."""
    role = message["role"]
    if role == "assistant":
        if message.get("tool_calls"):
            return False
        return _blank(message.get("content")) and _blank(message.get("reasoning_content"))
    if role == "user" and any(m["role"] == "user" for m in out):
        return _blank(message.get("content"))
    return False


def _blank(text: Any) -> bool:
    """No text once the clean stage has removed what it removes (a list of content parts,
    images among them, is never blank). Only short texts are cleaned to tell: a turn of
    invisible characters is a few of them."""
    if text is None:
        return True
    if not isinstance(text, str):
        return False
    stripped = text.strip()
    return len(stripped) <= _SHORT and not clean_text(stripped)[0].strip()


_SHORT = 64


def _count_unanswered(messages: list[Message], counts: Counter[str] | None, prefix: str) -> None:
    """Count the messages after the last assistant one (all of them go), by role."""
    if counts is None:
        return
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    names = {_call_name(call) for call in messages[last].get("tool_calls") or []}
    results = FINAL_ACTION_RESULTS if names & FINAL_ACTIONS else UNANSWERED_RESULTS
    for message in messages[last + 1 :]:
        if message["role"] == "tool":
            counts[prefix + results] += 1
        elif message["role"] == "user":
            counts[prefix + UNANSWERED_USER_TURNS] += 1


def _call_name(call: Any) -> Any:
    """A call's name, in a reader's flat form (`name`) or the OpenAI one (`function.name`)."""
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    return function.get("name") if isinstance(function, Mapping) else call.get("name")


def _merge_assistant(into: Message, message: Message) -> None:
    into["content"] = join(into.get("content") or "", message.get("content") or "")
    into["reasoning_content"] = join(
        into.get("reasoning_content") or "", message.get("reasoning_content") or ""
    )
    calls = [*(into.get("tool_calls") or []), *(message.get("tool_calls") or [])]
    if calls:
        into["tool_calls"] = calls


def ensure_prompt(
    messages: list[Message], prompt: Any, label: str, warnings: list[str]
) -> list[Message]:
    """`messages` with a user turn before the first model turn when the log has none.

    Some logs never record the request (OpenCode's `--format json` stream, ATIF written by
    agents that put the task elsewhere): `prompt`, the trial's task instruction when the
    caller knows it, becomes the user message; without it an empty user message stands in,
    with a warning, so the model's turns are kept rather than the record refused. A log
    whose first turn is a tool result keeps it (`normalise_roles` makes it the user turn).
    """
    if any(m["role"] == "user" for m in messages):
        return messages
    start = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    if start == len(messages) or messages[start]["role"] == "tool":
        return messages
    if isinstance(prompt, str) and prompt.strip():
        content = prompt
    else:
        content = ""
        where = f"{label}: " if label else ""
        warnings.append(
            f"{where}no user message and no known task instruction: "
            "an empty user message stands in for the prompt"
        )
    return [*messages[:start], {"role": "user", "content": content}, *messages[start:]]


def has_conversation(messages: list[Message]) -> bool:
    """At least one user and one assistant message: something an IM record can hold."""
    roles = {m["role"] for m in messages}
    return "user" in roles and "assistant" in roles
