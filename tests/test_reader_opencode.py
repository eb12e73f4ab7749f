"""OpenCode reader on generated `opencode run --format=json` streams (no real sample exists)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from conformance.sources import opencode as counter
from reader_checks import native_records
from role_order import assert_valid_role_order
from test_reader_openhands_eval import conforms

from scorers.im import validate_im_record
from scorers.tqs_v2 import score_record
from transforms.readers import opencode
from transforms.readers.bundle import ReaderError

SESSION = "ses_3f1a2b"
T0 = 1767225600000  # 2026-01-01T00:00:00Z in milliseconds


class Stream:
    """Writes events the way OpenCode 1.x prints them: `{type, timestamp, sessionID, part}`."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.clock = T0
        self.message = 0

    def _emit(self, kind: str, **fields: Any) -> None:
        self.clock += 250
        self.lines.append({"type": kind, "timestamp": self.clock, "sessionID": SESSION, **fields})

    def _part(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": f"prt_{len(self.lines)}",
            "sessionID": SESSION,
            "messageID": f"msg_{self.message}",
            "type": kind,
            **fields,
        }

    def user(self, text: str) -> Stream:
        self._emit("user", parts=[{"type": "text", "text": text}])
        return self

    def step(
        self,
        *,
        text: str = "",
        reasoning: str = "",
        tools: Sequence[tuple[str, dict[str, Any], str, int | None]] = (),
        finish: str | None = "stop",
    ) -> Stream:
        """One model turn; each tool is (name, input, output, exit code | None for an error)."""
        self.message += 1
        self._emit("step_start", part=self._part("step-start", snapshot="abc123"))
        if reasoning:
            self._emit("reasoning", part=self._part("reasoning", text=reasoning))
        if text:
            self._emit(
                "text",
                part=self._part("text", text=text, time={"start": self.clock, "end": self.clock}),
            )
        for index, (tool, arguments, output, exit_code) in enumerate(tools):
            state: dict[str, Any] = {
                "input": arguments,
                "time": {"start": self.clock, "end": self.clock + 9},
            }
            if exit_code is None:
                state |= {"status": "error", "error": output}
            else:
                state |= {
                    "status": "completed",
                    "output": output,
                    "title": tool,
                    "metadata": {"output": output, "exit": exit_code, "description": tool},
                }
            self._emit(
                "tool_use",
                part=self._part(
                    "tool", callID=f"toolu_{self.message}_{index}", tool=tool, state=state
                ),
            )
        if finish is not None:
            tokens = {
                "input": 1200,
                "output": 80,
                "reasoning": 10,
                "cache": {"read": 1000, "write": 50},
            }
            self._emit(
                "step_finish",
                part=self._part(
                    "step-finish", reason=finish, snapshot="abc124", cost=0.002, tokens=tokens
                ),
            )
        return self

    def error(self, message: str) -> Stream:
        self._emit("error", error={"name": "APIError", "data": {"message": message}})
        return self

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in self.lines))
        return path


def _typical() -> Stream:
    return (
        Stream()
        .user("Make the tests pass.")
        .step(
            text="Let me look.",
            reasoning="Start with the test output.",
            tools=[
                ("bash", {"command": "pytest -q", "description": "Run tests"}, "1 failed", 1),
                ("read", {"filePath": "/app/calc.py"}, "1\tdef add(a, b):\n2\t    return a - b", 0),
            ],
            finish="tool-calls",
        )
        .step(
            tools=[
                (
                    "edit",
                    {"filePath": "/app/calc.py", "oldString": "a - b", "newString": "a + b"},
                    "",
                    0,
                )
            ],
            finish="tool-calls",
        )
        .step(tools=[("bash", {"command": "pytest -q"}, "1 passed", 0)], finish="tool-calls")
        .step(text="Fixed: add() now adds. All tests pass.")
    )


def test_a_typical_run_is_one_valid_main_record(tmp_path: Path) -> None:
    bundles = list(opencode.read(_typical().write(tmp_path / "opencode.txt")))
    assert len(bundles) == 1
    bundle = bundles[0]
    assert bundle["instance_id"] == tmp_path.name  # from the layout: the file's folder
    assert bundle["warnings"] == []
    (record,) = bundle["records"]
    assert (
        record["meta_info"]["unique_info"]["_instance_metadata"]["opencode_session_id"] == SESSION
    )
    validate_im_record(record)
    assert_valid_role_order(record)
    roles = "system user assistant tool tool assistant tool assistant tool assistant".split()
    assert [m["role"] for m in record["messages"]] == roles
    first = record["messages"][2]
    assert first["content"] == "Let me look."
    assert first["reasoning_content"] == "Start with the test output."
    assert [c["function"]["name"] for c in first["tool_calls"]] == ["bash", "read"]
    assert record["messages"][3] == {
        "role": "tool",
        "content": "1 failed",
        "name": "bash",
        "tool_call_id": "toolu_1_0",
    }
    assert sorted(t["function"]["name"] for t in record["tools"]) == ["bash", "edit", "read"]
    info = record["meta_info"]["unique_info"]
    assert info["_instance_metadata"]["scaffold"] == "opencode"
    assert info["_usage"] == {
        "total_prompt_tokens": 4 * 2200,
        "total_completion_tokens": 4 * 80,
        "total_cached_tokens": 4 * 1000,
        "total_cost_usd": pytest.approx(0.008),
    }
    assert record["meta_info"]["response_generate_time"] == "2026-01-01"
    score = score_record(record)
    assert score is not None and score["scaffold"] == "opencode" and score["sub_score"] > 0


def test_failed_calls_errors_and_a_cut_off_step(tmp_path: Path) -> None:
    stream = (
        Stream()
        .user("List files.")
        .step(
            tools=[("bash", {"command": "lss"}, "Error: command not found: lss", None)],
            finish="tool-calls",
        )
        .error("rate limited")
        .step(text="Retrying with ls.", tools=[("bash", {"command": "ls"}, "a.py", 0)], finish=None)
    )
    bundle = next(opencode.read(stream.write(tmp_path / "opencode.txt")))
    (record,) = bundle["records"]
    assert record["messages"][3]["content"] == "Error: command not found: lss"
    assert bundle["warnings"] == [
        "OpenCode error: rate limited",
        "a model step has no step_finish (the stream was cut off)",
    ]
    # The cut-off step's output was never answered: the record ends at its call.
    assert record["messages"][-1]["role"] == "assistant"
    assert record["messages"][-1]["content"] == "Retrying with ls."


def test_harbor_agent_dir_uses_the_trial_identity(tmp_path: Path) -> None:
    _typical().write(tmp_path / "agent" / "opencode.txt")
    agent = {"name": "opencode", "version": "1.0.5", "model": "anthropic/claude-sonnet-4"}
    found = native_records(opencode, tmp_path / "agent", "task__x", agent, {}, {"cost_usd": 1.5})
    assert found is not None
    (record,), warnings = found
    assert warnings == []
    info = record["meta_info"]["unique_info"]
    assert info["_instance_id"] == "task__x"
    assert info["_usage"] == {"cost_usd": 1.5}
    assert record["meta_info"]["teacher"] == "anthropic/claude-sonnet-4"
    assert native_records(opencode, tmp_path) is None


def test_a_stream_without_a_user_event_takes_the_instruction(tmp_path: Path) -> None:
    Stream().step(text="Done.").write(tmp_path / "opencode.txt")
    found = native_records(opencode, tmp_path, instruction="Say done.")
    assert found is not None
    (record,), _ = found
    assert [m["content"] for m in record["messages"]] == ["", "Say done.", "Done."]


def test_a_standalone_stream_without_a_prompt_keeps_its_turns_with_a_warning(
    tmp_path: Path,
) -> None:
    """`opencode run --format json` never echoes the prompt: outside a trial nobody knows it."""
    stream = Stream().step(text="Looking.", tools=[("bash", {"command": "ls"}, "a.py", 0)])
    stream.step(text="Done.").write(tmp_path / "opencode.txt")
    (bundle,) = opencode.read(tmp_path / "opencode.txt")
    (record,) = bundle["records"]
    assert [m["role"] for m in record["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert record["messages"][1]["content"] == ""
    assert any("no user message" in w and "empty user message" in w for w in bundle["warnings"])
    assert (
        bundle["warnings"] == record["meta_info"]["unique_info"]["_instance_metadata"]["warnings"]
    )
    assert_valid_role_order(record)


def _raw(content: bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / "opencode.txt"
        path.write_bytes(content)
        return path

    return make


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_raw(b"\n\n"), "^empty file$"),
        (
            _raw(b'{"type": "step_start", "timestamp": 17672256'),
            r"^no JSON object in the file \(line 1: invalid JSON",
        ),
        (
            _raw(b'{"type": 3, "part": []}\n'),
            "^not an OpenCode event stream: first event has type 3$",
        ),
        (_raw(b'{"type": "user", "parts": "hi"}\n'), "^no messages"),
    ],
    ids=["empty", "truncated", "wrong-type", "no-turn"],
)
def test_refused_inputs_say_why(tmp_path: Path, make: Callable[[Path], Path], reason: str) -> None:
    with pytest.raises(ReaderError, match=reason):
        list(opencode.read(make(tmp_path)))


def _openrouter(details: list[dict[str, Any]]) -> dict[str, Any]:
    return {"openrouter": {"reasoning_details": details}}


def test_openrouter_reasoning_details_are_read_once(tmp_path: Path) -> None:
    stream = Stream().user("Fix it.")
    stream.step(text="A.", reasoning="Own text.")
    stream.step(text="B.")
    stream.step(text="C.")
    stream.step(text="Done.")
    parts = [line for line in stream.lines if line["type"] in ("reasoning", "text")]
    own = [{"type": "reasoning.text", "text": "Own text."}]
    parts[0]["part"]["metadata"] = _openrouter(own)  # the same reasoning again: read once
    empty = {**parts[0], "part": {**parts[0]["part"], "text": "", "metadata": _openrouter([])}}
    empty["part"]["metadata"] = _openrouter(
        [
            {"type": "reasoning.text", "text": "Detail text."},
            {"type": "reasoning.encrypted", "data": "gAAAA"},
        ]
    )
    stream.lines.insert(stream.lines.index(parts[2]), {**empty, "type": "reasoning"})
    parts[3]["part"]["metadata"] = _openrouter([{"type": "reasoning.summary", "summary": "Sum."}])
    parts[4]["part"]["metadata"] = _openrouter([{"type": "thinking", "thinking": "Think."}])
    path = stream.write(tmp_path / "opencode.txt")
    record = next(opencode.read(path))["records"][0]
    assistants = [m for m in record["messages"] if m["role"] == "assistant"]
    # four steps without tool calls between them are one turn; each step's reasoning once
    assert [m["reasoning_content"] for m in assistants] == [
        "Own text.\n\nDetail text.\n\nSum.\n\nThink."
    ]
    assert assistants[0]["content"] == "A.\n\nB.\n\nC.\n\nDone."
    metadata = record["meta_info"]["unique_info"]["_instance_metadata"]
    assert metadata["fidelity"] == {"encrypted_reasoning_skipped": 1}
    counted = counter.count(path)
    assert counted.reasoning_chars == len("Owntext.Detailtext.Sum.Think.")
    assert conforms([next(opencode.read(path))], counted, [path]) == []


@pytest.mark.parametrize(
    "make", [_typical, lambda: Stream().step(text="Done.")], ids=["typical", "no-user"]
)
def test_generated_streams_match_the_counter(tmp_path: Path, make: Callable[[], Stream]) -> None:
    path = make().write(tmp_path / "opencode.txt")
    counted = counter.count(path)
    assert conforms(list(opencode.read(path)), counted, [path]) == []
    assert counted.assistant_turns >= 1 and counted.user_prompts == 1
