"""LF sink: every example must load in LLaMA-Factory as written (its sharegpt rules, re-implemented
here), reshapes are counted by kind, and dataset_info entries match the roles written."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.sinks import lf_render
from transforms.sinks.lf import (
    LF_ROLES,
    RESHAPE_KINDS,
    dataset_info,
    dataset_info_entry,
    render_with_chat_template,
    to_lf_example,
)

TAGS = dataset_info_entry("lf.json")["tags"]
TOOL_CALL_WORDS = ("<tool_call>", "</tool_call>")


def lf_problems(
    example: dict[str, Any], tool_call_words: tuple[str, str] | None = None
) -> list[str]:
    """What would make LLaMA-Factory skip (or crash on) an example, per its sharegpt converter:
    user/observation at 1-based odd positions, assistant/function_call at even ones, an even
    count, function_call content that json-parses to {name, arguments} (or a list of them),
    and a tools column that its default tool formatter can read."""
    odd = (TAGS["user_tag"], TAGS["observation_tag"])
    even = (TAGS["assistant_tag"], TAGS["function_tag"])
    messages = example["messages"]
    problems = [] if messages else ["no messages"]
    for index, message in enumerate(messages):
        position = index + 1
        if set(message) != {TAGS["role_tag"], TAGS["content_tag"]}:
            problems.append(f"{position}: keys {sorted(message)}")
        if not isinstance(message["content"], str):
            problems.append(f"{position}: content is not a string")
        allowed = odd if position % 2 == 1 else even
        if message["role"] not in allowed:
            problems.append(f"{position}: role {message['role']!r} not in {allowed}")
        if message["role"] == TAGS["function_tag"]:
            problems += _function_problems(position, message["content"], tool_call_words)
    if len(messages) % 2:
        problems.append(f"odd message count {len(messages)}")
    if not isinstance(example["system"], str):
        problems.append("system is not a string")
    problems += _tools_problems(example["tools"])
    return problems


def _function_problems(position: int, content: str, words: tuple[str, str] | None) -> list[str]:
    if words and words[0] in content:
        content = content.split(words[0], 1)[1].rsplit(words[1], 1)[0]
    try:
        calls = json.loads(content)
    except ValueError:
        return [f"{position}: function_call content is not JSON"]
    calls = calls if isinstance(calls, list) else [calls]
    if not calls or not all(isinstance(c, dict) and {"name", "arguments"} <= set(c) for c in calls):
        return [f"{position}: function_call content is not {{name, arguments}}"]
    return []


def _tools_problems(tools: Any) -> list[str]:
    if not isinstance(tools, str):
        return ["tools is not a string"]
    if not tools:
        return []
    for tool in json.loads(tools):
        function = tool.get("function") if tool.get("type") == "function" else tool
        if not isinstance(function["parameters"]["properties"], dict):
            return [f"tool {function.get('name')!r} has no parameters.properties"]
    return []


def im(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **info: Any
) -> dict[str, Any]:
    unique_info = {"_instance_id": "inst-1", **info}
    meta = {"teacher": "t", "rounds": 0, "unique_info": unique_info}
    return {"version": "2.0.0", "meta_info": meta, "tools": tools, "messages": messages}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool(name: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"type": "object", "properties": {"x": {"type": "string"}}}
    spec = {
        "name": name,
        "description": "d",
        "parameters": params if parameters is None else parameters,
    }
    return {"type": "function", "function": spec}


def msg(role: str, content: str = "", **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


TOOL_RECORD = im(
    [
        msg("system", "S"),
        msg("user", "do it"),
        msg(
            "assistant",
            "Let me look.",
            reasoning_content="hmm",
            tool_calls=[
                call("c1", "Read", '{"file_path": "a"}'),
                call("c2", "Grep", '{"pattern": "x"}'),
            ],
        ),
        msg("tool", "A", tool_call_id="c1"),
        msg("tool", "B", tool_call_id="c2"),
        msg("assistant", "", tool_calls=[call("c3", "Bash", '{"command": "ls"}')]),
        msg("tool", "out", tool_call_id="c3"),
        msg("assistant", "done"),
    ],
    tools=[tool("Read"), tool("Grep"), tool("Bash")],
    _agent_type="main",
    _score={"composite_score": 0.5},
    _gen_params={"temperature": 0},
    _usage={"total_prompt_tokens": 10},
    _instance_metadata={"scaffold": "claudecode"},
)
PARALLEL_CALLS = json.dumps(
    [
        {"name": "Read", "arguments": {"file_path": "a"}},
        {"name": "Grep", "arguments": {"pattern": "x"}},
    ]
)


def test_tool_record_maps_to_function_call_and_observation_turns() -> None:
    example, kinds = to_lf_example(TOOL_RECORD)
    assert example is not None
    assert example["messages"] == [
        {"role": "user", "content": "do it"},
        {"role": "function_call", "content": PARALLEL_CALLS},
        {
            "role": "observation",
            "content": json.dumps(
                [{"name": "Read", "content": "A"}, {"name": "Grep", "content": "B"}]
            ),
        },
        {"role": "function_call", "content": '{"name": "Bash", "arguments": {"command": "ls"}}'},
        {"role": "observation", "content": "out"},
        {"role": "assistant", "content": "done"},
    ]
    assert kinds == ["call_text_dropped"]
    assert example["system"] == "S"
    assert json.loads(example["tools"]) == TOOL_RECORD["tools"]
    assert lf_problems(example) == []


def test_metadata_is_copied_from_unique_info_in_column_order() -> None:
    example, _ = to_lf_example(TOOL_RECORD)
    assert example is not None
    assert list(example) == [
        "messages",
        "system",
        "tools",
        "_score",
        "_instance_id",
        "_agent_type",
        "_gen_params",
        "_usage",
        "_instance_metadata",
    ]
    info = TOOL_RECORD["meta_info"]["unique_info"]
    assert {k: example[k] for k in info} == info


def test_missing_agent_type_means_main_and_missing_payloads_are_null() -> None:
    example, _ = to_lf_example(im([msg("user", "q"), msg("assistant", "a")]))
    assert example is not None
    assert example["_agent_type"] == "main"
    assert example["_score"] is None and example["_usage"] is None
    assert example["tools"] == "" and example["system"] == ""


def test_tool_call_words_keep_the_text_before_the_calls() -> None:
    example, kinds = to_lf_example(TOOL_RECORD, tool_call_words=TOOL_CALL_WORDS)
    assert example is not None
    assert (
        example["messages"][1]["content"] == f"Let me look.<tool_call>{PARALLEL_CALLS}</tool_call>"
    )
    assert example["messages"][3]["content"] == '{"name": "Bash", "arguments": {"command": "ls"}}'
    assert kinds == []
    assert lf_problems(example, TOOL_CALL_WORDS) == []


def test_terminus2_record_is_plain_user_assistant_alternation() -> None:
    answer = '{"analysis": "a", "plan": "p", "commands": [], "task_complete": false}'
    done = '{"analysis": "b", "plan": "q", "commands": [], "task_complete": true}'
    record = im(
        [
            msg("system", ""),
            msg("user", "task"),
            msg("assistant", answer),
            msg("user", "$ ls"),
            msg("assistant", done),
        ]
    )
    example, kinds = to_lf_example(record)
    assert example is not None
    assert [m["role"] for m in example["messages"]] == ["user", "assistant", "user", "assistant"]
    assert example["messages"][3]["content"] == done
    assert example["tools"] == ""
    assert kinds == []


BROKEN = im(
    [
        msg("system", "S1"),
        msg("system", "S2"),
        msg("assistant", "hello first"),
        msg("user", "u1"),
        msg("user", "u2"),
        msg("assistant", ""),
        msg("assistant", "a1"),
        msg("assistant", "", tool_calls=[call("c1", "Bash", "not json{")]),
        msg("system", "mid"),
        msg("tool", "r1", tool_call_id="c1"),
        msg("user", "u3"),
        msg("narrator", "?"),
        msg("assistant", "a2"),
        msg("tool", "orphan", tool_call_id="zz"),
    ],
    tools=[tool("Bash"), tool("Broken", parameters={})],
)


def test_broken_record_is_repaired_and_every_repair_counted() -> None:
    example, kinds = to_lf_example(BROKEN)
    assert example is not None
    assert example["system"] == "S1\n\nS2"
    assert example["messages"] == [
        {"role": "user", "content": "u1\n\nu2"},
        {"role": "function_call", "content": '{"name": "Bash", "arguments": "not json{"}'},
        {"role": "user", "content": "mid\n\nr1\n\nu3"},
        {"role": "assistant", "content": "a2"},
    ]
    assert kinds == [
        "system_merged",
        "system_to_user",
        "empty_assistant_dropped",
        "arguments_not_json",
        "unknown_role_dropped",
        "prompt_turns_merged",
        "response_turns_merged",
        "prompt_turns_merged",
        "prompt_turns_merged",
        "leading_response_dropped",
        "trailing_observation_dropped",
        "call_text_dropped",
        "tool_schema_filled",
    ]
    broken_tool = json.loads(example["tools"])[1]["function"]["parameters"]
    assert broken_tool == {"type": "object", "properties": {}}
    assert lf_problems(example) == []


def test_text_then_call_assistant_messages_merge_into_one_function_call_turn() -> None:
    record = im(
        [
            msg("user", "q"),
            msg("assistant", "thinking"),
            msg("assistant", "", tool_calls=[call("c1", "Bash", '{"command": "ls"}')]),
            msg("tool", "out", tool_call_id="c1", name="bash"),
            msg("tool", "late", tool_call_id="c9"),
            msg("assistant", "done"),
        ]
    )
    example, kinds = to_lf_example(record)
    assert example is not None
    assert [m["role"] for m in example["messages"]] == [
        "user",
        "function_call",
        "observation",
        "assistant",
    ]
    names = [r["name"] for r in json.loads(example["messages"][2]["content"])]
    assert names == ["bash", ""]
    assert kinds == ["response_turns_merged", "call_text_dropped"]


@pytest.mark.parametrize(
    ("messages", "kinds"),
    [
        ([msg("system", "s"), msg("user", "q")], ["trailing_user_dropped", "no_trainable_turn"]),
        (
            [msg("user", "q"), msg("assistant", " ")],
            ["empty_assistant_dropped", "trailing_user_dropped", "no_trainable_turn"],
        ),
        ([msg("assistant", "a")], ["leading_response_dropped", "no_trainable_turn"]),
        ([], ["no_trainable_turn"]),
    ],
)
def test_nothing_trainable_gives_none_and_says_why(
    messages: list[dict[str, Any]], kinds: list[str]
) -> None:
    assert to_lf_example(im(messages)) == (None, kinds)


def test_record_ending_on_tool_results_drops_them() -> None:
    record = im(
        [
            msg("user", "q"),
            msg("assistant", "", tool_calls=[call("c1", "Bash", "{}")]),
            msg("tool", "out", tool_call_id="c1"),
        ]
    )
    example, kinds = to_lf_example(record)
    assert example is not None
    assert example["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "function_call", "content": '{"name": "Bash", "arguments": {}}'},
    ]
    assert kinds == ["trailing_observation_dropped"]


_MESSAGES = st.sampled_from(
    [
        msg("system", "s"),
        msg("user", "u"),
        msg("assistant", "a"),
        msg("assistant", ""),
        msg("assistant", "t", tool_calls=[call("c1", "Bash", '{"command": "ls"}')]),
        msg("assistant", "", tool_calls=[call("c2", "Read", "{}"), call("c3", "Grep", "oops")]),
        msg("tool", "r", tool_call_id="c1"),
        msg("other", "o"),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGES, max_size=14), st.booleans())
def test_any_message_sequence_gives_a_loadable_example_or_none(
    messages: list[dict[str, Any]], words: bool
) -> None:
    tool_call_words = TOOL_CALL_WORDS if words else None
    example, kinds = to_lf_example(im(messages), tool_call_words=tool_call_words)
    assert set(kinds) <= set(RESHAPE_KINDS)
    assert to_lf_example(im(messages), tool_call_words=tool_call_words) == (example, kinds)
    if example is None:
        assert kinds[-1] == "no_trainable_turn"
    else:
        assert "no_trainable_turn" not in kinds
        assert lf_problems(example, tool_call_words) == []


@pytest.fixture(scope="module")
def case_records(cases_lines: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cases_lines]


@pytest.mark.parametrize("tool_call_words", [None, TOOL_CALL_WORDS])
def test_every_reference_record_gives_a_loadable_example(
    case_records: list[dict[str, Any]], tool_call_words: tuple[str, str] | None
) -> None:
    reshapes: Counter[str] = Counter()
    for record in case_records:
        example, kinds = to_lf_example(record, tool_call_words=tool_call_words)
        assert example is not None, record["meta_info"]["unique_info"]["_instance_id"]
        problems = lf_problems(example, tool_call_words)
        assert problems == [], (record["meta_info"]["unique_info"]["_instance_id"], problems)
        responses = [m for m in example["messages"] if m["role"] in ("assistant", "function_call")]
        assert len(responses) == sum(m["role"] == "assistant" for m in record["messages"])
        reshapes.update(kinds)
    # Valid IM records only lose the text beside tool calls, and one tool schema gets filled.
    expected = {"call_text_dropped": 4333} if tool_call_words is None else {}
    assert dict(reshapes) == {**expected, "tool_schema_filled": 1}


def test_reference_examples_form_one_arrow_table(case_records: list[dict[str, Any]]) -> None:
    """LLaMA-Factory loads the file through `datasets`, i.e. into one Arrow table."""
    pa = pytest.importorskip("pyarrow")
    examples = [to_lf_example(record)[0] for record in case_records]
    table = pa.Table.from_pylist(examples)
    assert table.num_rows == len(case_records)
    assert (
        str(table.schema.field("messages").type)
        == "list<item: struct<role: string, content: string>>"
    )


def test_dataset_info_entry_matches_the_roles_written() -> None:
    assert dataset_info_entry("lf.json") == {
        "file_name": "lf.json",
        "formatting": "sharegpt",
        "columns": {"messages": "messages", "system": "system", "tools": "tools"},
        "tags": {
            "role_tag": "role",
            "content_tag": "content",
            "user_tag": "user",
            "assistant_tag": "assistant",
            "observation_tag": "observation",
            "function_tag": "function_call",
            "system_tag": "system",
        },
    }
    role_tags = ("user_tag", "assistant_tag", "observation_tag", "function_tag")
    assert {TAGS[tag] for tag in role_tags} == set(LF_ROLES)


def test_dataset_info_gives_one_entry_per_shard() -> None:
    assert dataset_info(["lf.json"], "job") == {"job": dataset_info_entry("lf.json")}
    shards = ["lf-00000-of-00002.json", "lf-00001-of-00002.json"]
    info = dataset_info(shards, "job")
    assert list(info) == ["job_00000", "job_00001"]
    assert [entry["file_name"] for entry in info.values()] == shards


def test_render_without_transformers_raises_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    lf_render.load_tokenizer.cache_clear()
    with pytest.raises(ImportError, match="needs the `transformers` package"):
        render_with_chat_template(TOOL_RECORD, "/nonexistent")
    lf_render.load_tokenizer.cache_clear()


def test_render_with_a_local_chat_template(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    tokenizer.chat_template = (
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
        "{% for c in m.tool_calls or [] %}[call {{ c.function.name }} "
        "{{ c.function.arguments.file_path or c.function.arguments.command or '' }}]{% endfor %}"
        "{{ '\\n' }}{% endfor %}"  # transformers' Jinja trims a newline after a block tag
    )
    tokenizer.save_pretrained(tmp_path)
    lf_render.load_tokenizer.cache_clear()
    example = render_with_chat_template(TOOL_RECORD, str(tmp_path))
    assert example["text"].startswith(
        "<system>S\n<user>do it\n<assistant>Let me look.[call Read a]"
    )
    assert "<tool>A\n<tool>B\n" in example["text"]
    assert "[call Bash ls]" in example["text"]
    assert example["_instance_id"] == "inst-1" and example["_agent_type"] == "main"
