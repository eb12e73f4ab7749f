"""Property tests of TQS V2 over random IM records of every scaffold shape.

`score_record` must never raise, must stay in range, be deterministic and pure, and produce a
JSON-serialisable `_score`. Set TQS_HYPOTHESIS_PROFILE=tqs-thorough for a longer run.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tqs_builders import (
    CLAUDE_CODE_SYSTEM,
    CLAUDE_CODE_TOOLS,
    OPENCODE_SYSTEM,
    OPENCODE_TOOLS,
    OPENHANDS_SDK_TOOLS,
    OPENHANDS_SYSTEM,
    OPENHANDS_TOOLS,
    TASK,
    Message,
    Record,
    im_record,
    tool_schema,
)

from scorers.tqs_v2 import (
    SCAFFOLDS,
    SCORE_KEYS,
    count_tool_call_errors,
    score_and_count,
    score_record,
)

settings.register_profile(
    "tqs-default",
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("tqs-thorough", settings.get_profile("tqs-default"), max_examples=3000)
TQS_SETTINGS = settings.get_profile(os.environ.get("TQS_HYPOTHESIS_PROFILE", "tqs-default"))

COMMANDS = [
    "ls -la",
    "pytest -q",
    "python -m pytest tests/test_parser.py",
    "python repro.py",
    "python -c 'print(1)'",
    "cd /repo\npytest",
    "cd /testbed && go test ./...",
    "cat > tests/test_new.py <<'EOF'\ndef test_x():\n    assert True\nEOF",
    "cat  > src/a.py",
    "sed -i 's/old/new/' src/widget/parser.py",
    "sed -i 1d f.txt",
    "echo 'a > b'",
    "echo done > /dev/null",
    "printf 'x' >> notes.md",
    "tee -a build.log",
    "patch -p1 < fix.diff",
    "perl -i.bak -pe 's/a/b/' lib/x.pm",
    "grep -rn parser src/",
    "git diff",
    "pip install pytest",
    "npm test",
    "cargo test 2>&1 | tail -5",
    "mvn -q test",
    "./gradlew build -x test",
    "timeout 60 sudo env X=1 pytest -x",
    "make check",
    "./build/parser_test --gtest_filter=*",
    "",
]
OBSERVATIONS = [
    "ok",
    "",
    "===== 3 passed in 0.12s =====",
    "===== 1 failed, 2 passed in 0.20s =====",
    "Ran 0 tests in 0.000s\n\nOK",
    "collected 0 items",
    "ok  \texample.com/pkg\t0.1s",
    "--- FAIL: TestX (0.00s)\nFAIL",
    "test result: FAILED. 1 passed; 1 failed",
    "Tests run: 5, Failures: 0, Errors: 0\nBUILD SUCCESS",
    "Traceback (most recent call last):\n  File 'x.py', line 1\nValueError: bad",
    "bash: frob: command not found",
    "cp: x: Permission denied",
    "[The command completed with exit code 1.]",
    "exit: 0",
    "<tool_use_error>String to replace not found</tool_use_error>",
    "ERROR: invalid path",
    "No replacement was performed",
    "\x1b[31mFAILED\x1b[0m tests/test_a.py::test_x",
    "x" * 7000 + "\n1 failed\n" + "y" * 7000,
]
PATHS = ["src/a.py", "/testbed/src/a.py", "tests/test_a.py", "repro.py", "README.md", "", "."]
ARG_KEYS = [
    "command",
    "cmd",
    "keystrokes",
    "path",
    "file_path",
    "filePath",
    "notebook_path",
    "old_str",
    "new_str",
    "file_text",
    "content",
    "thought",
    "task_completed",
    "task_list",
    "view_range",
    "message",
]
EDITOR_COMMANDS = ["view", "create", "str_replace", "insert", "undo_edit"]

short_text = st.text(max_size=30)
observation = st.one_of(
    st.sampled_from(OBSERVATIONS),
    short_text,
    st.lists(st.sampled_from(OBSERVATIONS), min_size=2, max_size=3).map("\n".join),
)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), short_text)
arg_value = st.one_of(
    st.sampled_from(COMMANDS),
    st.sampled_from(PATHS),
    st.sampled_from(EDITOR_COMMANDS),
    json_scalar,
    st.lists(json_scalar, max_size=3),
)
arguments = st.dictionaries(st.sampled_from(ARG_KEYS), arg_value, max_size=4)
encoded_arguments = st.one_of(
    arguments.map(json.dumps),
    st.sampled_from(["", "{", "[1, 2]", "null", '"text"', "{'single': 'quotes'}"]),
)

SCAFFOLD_SHAPES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "claudecode": (CLAUDE_CODE_SYSTEM, CLAUDE_CODE_TOOLS),
    "opencode": (OPENCODE_SYSTEM, OPENCODE_TOOLS),
    "openhands": (OPENHANDS_SYSTEM, OPENHANDS_TOOLS),
    "openhands_sdk": (OPENHANDS_SYSTEM, OPENHANDS_SDK_TOOLS),
}
random_tools = st.lists(
    st.builds(
        lambda name, params: tool_schema(name, *params),
        st.one_of(st.sampled_from(["run", "Task", "grep", "apply", "done", ""]), short_text),
        st.lists(st.sampled_from([*ARG_KEYS, "is_input", "timeout"]), max_size=4, unique=True),
    ),
    min_size=1,
    max_size=5,
)


@st.composite
def tool_call_record(draw: st.DrawFn) -> Record:
    shape = draw(st.sampled_from([*SCAFFOLD_SHAPES, "random"]))
    if shape == "random":
        system, tools = draw(short_text), draw(random_tools)
    else:
        system, tools = SCAFFOLD_SHAPES[shape]
    names = [t["function"]["name"] for t in tools] + ["finish", "Unknown", ""]
    messages: list[Message] = [
        {"role": "system", "content": system},
        {"role": "user", "content": TASK},
    ]
    for index in range(draw(st.integers(0, 12))):
        calls: list[dict[str, Any]] = [
            {
                "id": f"call_{index}_{k}",
                "type": "function",
                "function": {"name": name, "arguments": draw(encoded_arguments)},
            }
            for k, name in enumerate(draw(st.lists(st.sampled_from(names), max_size=3)))
        ]
        message: Message = {"role": "assistant", "content": draw(short_text)}
        if draw(st.booleans()):
            message["reasoning_content"] = draw(short_text)
        empty_list_allowed: bool = draw(st.booleans())
        if calls or empty_list_allowed:  # `tool_calls: []` happens too
            message["tool_calls"] = calls
        messages.append(message)
        # Usually one reply per call; sometimes fewer (truncated) or more (orphans).
        replies = len(calls) + draw(st.sampled_from([0, 0, 0, -1, 1]))
        messages += [{"role": "tool", "content": draw(observation)} for _ in range(replies)]
        if draw(st.integers(0, 9)) == 0:
            messages.append({"role": "user", "content": draw(short_text)})
    return im_record(messages, tools)


terminus_command = st.one_of(
    st.fixed_dictionaries(
        {"keystrokes": st.one_of(st.sampled_from(COMMANDS), short_text), "duration": st.just(0.1)}
    ),
    json_scalar,
)
terminus_json = st.fixed_dictionaries(
    {
        "analysis": short_text,
        "commands": st.one_of(st.lists(terminus_command, max_size=4), json_scalar),
    },
    optional={"task_complete": st.one_of(st.just(True), json_scalar)},
).map(json.dumps)
terminus_content = st.one_of(
    terminus_json,
    terminus_json.map(lambda text: text[: len(text) // 2]),  # cut off mid-JSON
    terminus_json.map(lambda text: "```json\n" + text + "\n```"),
    short_text,
)


@st.composite
def terminus_im_record(draw: st.DrawFn) -> Record:
    messages: list[Message] = [
        {"role": "system", "content": ""},
        {"role": "user", "content": "Answer in JSON.\n" + TASK},
    ]
    for _ in range(draw(st.integers(0, 10))):
        messages.append({"role": "assistant", "content": draw(terminus_content)})
        if draw(st.integers(0, 5)):
            messages.append({"role": "user", "content": draw(observation)})
    return im_record(messages, draw(st.sampled_from([[], None])))


any_record = st.one_of(tool_call_record(), terminus_im_record())


def check_score(score: dict[str, Any]) -> None:
    assert tuple(score) == SCORE_KEYS
    assert score["scaffold"] in SCAFFOLDS
    for key in ("assistant_turns", "total_tool_calls"):
        value = score[key]
        assert isinstance(value, int) and not isinstance(value, bool) and value >= 0, key
    for key in SCORE_KEYS:
        if key.endswith("_score") or key == "reproduce_first":
            value = score[key]
            assert value is None or (isinstance(value, float) and 0.0 <= value <= 1.0), (
                key,
                value,
            )
    assert score["composite_score"] is not None


@TQS_SETTINGS
@given(any_record)
def test_score_record_is_total_bounded_pure_and_serialisable(record: Record) -> None:
    before = orjson.dumps(record)
    twin = copy.deepcopy(record)
    score = score_record(record)
    assert score is not None
    check_score(score)
    assert orjson.dumps(record) == before  # the record is not mutated
    assert score_record(record) == score
    assert score_record(twin) == score
    assert orjson.loads(orjson.dumps(score)) == score
    assert score["assistant_turns"] == sum(m["role"] == "assistant" for m in record["messages"])


@TQS_SETTINGS
@given(any_record)
def test_score_and_count_agree_with_the_separate_functions(record: Record) -> None:
    score, calls, errors = score_and_count(record)
    assert score == score_record(record)
    assert (calls, errors) == count_tool_call_errors(record)
    assert 0 <= errors <= calls


@TQS_SETTINGS
@given(any_record)
def test_subagent_records_score_none(record: Record) -> None:
    record["meta_info"]["unique_info"]["_agent_type"] = "subagent"
    assert score_record(record) is None
    score, calls, errors = score_and_count(record)
    assert score is None
    assert 0 <= errors <= calls
