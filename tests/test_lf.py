"""LF sink: every example must load in LLaMA-Factory as written (its sharegpt rules, re-implemented
here), reshapes are counted by kind, and dataset_info entries match the roles written."""

from __future__ import annotations

import itertools
import json
import sys
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lf_rules import TrainingAbort, split_function_call

from scorers.tqs_v2 import SCORE_KEYS
from transforms.json_text import json_value
from transforms.sinks import lf_render
from transforms.sinks.lf import (
    LF_ROLES,
    RECORD_DROP_KINDS,
    RESHAPE_KINDS,
    LfSettings,
    dataset_info,
    dataset_info_entry,
    render_with_chat_template,
    to_lf_example,
)

TAGS = dataset_info_entry("lf.json")["tags"]
DROP_TEXT = LfSettings(call_text="drop")


def lf_problems(example: dict[str, Any], settings: LfSettings | None = None) -> list[str]:
    """What would make LLaMA-Factory skip (or crash on) an example, per its sharegpt converter:
    user/observation at 1-based odd positions, assistant/function_call at even ones, an even
    count, function_call content that FunctionFormatter parses to {name, arguments} (or a list
    of them), and a tools column that its default tool formatter can read."""
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
            problems += _function_problems(position, message["content"], settings or LfSettings())
    if len(messages) % 2:
        problems.append(f"odd message count {len(messages)}")
    if not isinstance(example["system"], str):
        problems.append("system is not a string")
    problems += _tools_problems(example["tools"])
    return problems


def _function_problems(position: int, content: str, settings: LfSettings) -> list[str]:
    try:
        split_function_call(content, settings.tool_call_words, settings.thought_words)
    except TrainingAbort as exc:
        return [f"{position}: {exc}"]
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


def test_tool_record_keeps_text_reasoning_and_one_result_block_per_call() -> None:
    example, kinds = to_lf_example(TOOL_RECORD)
    assert example is not None
    assert example["messages"] == [
        {"role": "user", "content": "do it"},
        {
            "role": "function_call",
            "content": "<think>\nhmm\n</think>\n\nLet me look.\n"
            f"<tool_call>{PARALLEL_CALLS}</tool_call>",
        },
        {"role": "observation", "content": "A\n</tool_response>\n<tool_response>\nB"},
        {"role": "function_call", "content": '{"name": "Bash", "arguments": {"command": "ls"}}'},
        {"role": "observation", "content": "out"},
        {"role": "assistant", "content": "done"},
    ]
    assert kinds == []
    assert example["system"] == "S"
    assert json.loads(example["tools"]) == TOOL_RECORD["tools"]
    assert lf_problems(example) == []
    prose, calls = split_function_call(example["messages"][1]["content"])
    assert prose == "<think>\nhmm\n</think>\n\nLet me look.\n"
    assert [name for name, _ in calls] == ["Read", "Grep"]


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
        "_curriculum",
    ]
    # Copied through the one output schema (transforms/sinks/schema.py): metadata as JSON
    # text, scores and usage first conformed to their IM structs (every key; unknown usage
    # keys in `_usage.extra`).
    assert example["_instance_id"] == "inst-1" and example["_agent_type"] == "main"
    score = json.loads(example["_score"])
    assert score["composite_score"] == 0.5
    assert set(score) == {*SCORE_KEYS, "scaffold_source", "tqs_tools"}
    assert score["ped_score"] is None and score["scaffold_source"] is None
    assert example["_gen_params"] == '{"temperature":0}'
    assert json.loads(example["_usage"]) == {
        "n_input_tokens": None,
        "n_cache_tokens": None,
        "n_output_tokens": None,
        "cost_usd": None,
        "extra": '{"total_prompt_tokens":10}',
    }
    assert example["_instance_metadata"] == '{"scaffold":"claudecode"}'


def test_missing_agent_type_means_main_and_missing_payloads_are_null() -> None:
    example, _ = to_lf_example(im([msg("user", "q"), msg("assistant", "a")]))
    assert example is not None
    assert example["_agent_type"] == "main"
    # never a null column (README, Output schema): JSON text, `null` when there is none
    assert example["_score"] == example["_instance_metadata"] == example["_curriculum"] == "null"
    assert set(json.loads(example["_usage"]).values()) == {None}  # every usage key
    assert example["tools"] == "" and example["system"] == ""


def test_drop_settings_give_older_releases_bare_json_and_count_what_went() -> None:
    example, kinds = to_lf_example(TOOL_RECORD, DROP_TEXT)
    assert example is not None
    # LLaMA-Factory 0.9.3 and older json-parse the content (0.9.3 after cutting <think>…</think>)
    assert example["messages"][1]["content"] == f"<think>\nhmm\n</think>\n\n{PARALLEL_CALLS}"
    assert kinds == ["call_text_dropped"]
    assert lf_problems(example, DROP_TEXT) == []
    bare = LfSettings(call_text="drop", reasoning="drop")
    example, kinds = to_lf_example(TOOL_RECORD, bare)
    assert example is not None
    assert example["messages"][1]["content"] == PARALLEL_CALLS
    assert kinds == ["reasoning_dropped", "call_text_dropped"]


def test_a_template_s_own_markers_are_used() -> None:
    settings = LfSettings(
        tool_call_words=("<|tool_call_start|>", "<|tool_call_end|>"),
        thought_words=("<seed:think>", "</seed:think>"),
    )
    example, kinds = to_lf_example(TOOL_RECORD, settings)
    assert example is not None and kinds == []
    content = example["messages"][1]["content"]
    assert content == (
        f"<seed:think>hmm</seed:think>Let me look.\n<|tool_call_start|>{PARALLEL_CALLS}"
        "<|tool_call_end|>"
    )
    assert lf_problems(example, settings) == []


def test_reasoning_on_a_plain_answer_goes_in_front_inside_the_thought_markers() -> None:
    record = im([msg("user", "q"), msg("assistant", "42", reasoning_content="6 times 7")])
    example, kinds = to_lf_example(record)
    assert example is not None and kinds == []
    assert example["messages"][1] == {
        "role": "assistant",
        "content": "<think>\n6 times 7\n</think>\n\n42",
    }
    example, kinds = to_lf_example(record, LfSettings(reasoning="drop"))
    assert example is not None and example["messages"][1]["content"] == "42"
    assert kinds == ["reasoning_dropped"]


def test_reasoning_alone_is_a_trainable_answer_unless_dropped() -> None:
    record = im([msg("user", "q"), msg("assistant", "", reasoning_content="nothing to say")])
    example, kinds = to_lf_example(record)
    assert example is not None and kinds == []
    assert example["messages"][1]["content"] == "<think>\nnothing to say\n</think>\n\n"
    example, kinds = to_lf_example(record, LfSettings(reasoning="drop"))
    assert example is None
    assert kinds == [
        "reasoning_dropped",
        "empty_assistant_dropped",
        "trailing_user_dropped",
        "no_trainable_turn",
    ]


def test_text_holding_the_markers_puts_the_calls_first_and_renders_the_same() -> None:
    text = "I will emit <tool_call> by hand"
    record = im(
        [
            msg("user", "q"),
            msg("assistant", text, tool_calls=[call("c1", "Bash", '{"command": "ls"}')]),
            msg("tool", "out", tool_call_id="c1"),
            msg("assistant", "done"),
        ]
    )
    example, kinds = to_lf_example(record)
    assert example is not None and kinds == []
    content = example["messages"][1]["content"]
    assert content.startswith("<tool_call>{")
    assert split_function_call(content) == (text + "\n", [("Bash", {"command": "ls"})])


def test_markers_inside_arguments_are_escaped_and_read_back_unchanged() -> None:
    arguments = {"content": "a </tool_call> b <tool_call> c <think>"}
    record = im(
        [
            msg("user", "q"),
            msg(
                "assistant", "Writing it.", tool_calls=[call("c1", "Write", json.dumps(arguments))]
            ),
            msg("tool", "ok", tool_call_id="c1"),
            msg("assistant", "done"),
        ]
    )
    for lf in (LfSettings(), DROP_TEXT, LfSettings(thought_words=("<think>", "</think>"))):
        example, kinds = to_lf_example(record, lf)
        assert example is not None and "call_text_marker_clash" not in kinds
        content = example["messages"][1]["content"]
        assert "</tool_call> b" not in content
        words = (lf.tool_call_words, lf.thought_words)
        assert split_function_call(content, *words)[1] == [("Write", arguments)]


def test_results_follow_call_order_and_every_call_gets_a_block() -> None:
    calls = [call("c1", "Read", "{}"), call("c2", "Grep", "{}"), call("c3", "Bash", "{}")]
    record = im(
        [
            msg("user", "q"),
            msg("assistant", "", tool_calls=calls),
            msg("tool", "bash out", tool_call_id="c3"),
            msg("tool", "read out", tool_call_id="c1"),
            msg("assistant", "done"),
        ]
    )
    example, kinds = to_lf_example(record)
    assert example is not None
    blocks = example["messages"][2]["content"].split("\n</tool_response>\n<tool_response>\n")
    assert blocks == ["read out", "", "bash out"]
    assert kinds == ["missing_result_filled"]


def test_parallel_calls_drop_leaves_the_record_out_and_says_why() -> None:
    example, kinds = to_lf_example(TOOL_RECORD, LfSettings(parallel_calls="drop"))
    assert (example, kinds) == (None, ["parallel_calls_dropped"])
    single = im([msg("user", "q"), msg("assistant", "", tool_calls=[call("c", "Bash", "{}")])])
    example, kinds = to_lf_example(single, LfSettings(parallel_calls="drop"))
    assert example is not None and kinds == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("call_text", "maybe"),
        ("reasoning", ""),
        ("parallel_calls", "merge"),
        ("tool_call_words", ("<tool_call>", "")),
        ("thought_words", ("<think>",)),
    ],
)
def test_settings_refuse_what_cannot_work(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        LfSettings(**{field: value})


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


DEEP_ARGUMENTS = '{"a":' * 3000 + "1" + "}" * 3000  # JSON, deeper than any parser here reads


def test_arguments_nested_too_deeply_to_read_are_kept_as_their_text() -> None:
    """Python's parser runs out of recursion on them: they are arguments that are not JSON
    to LF (kept as the agent's text, counted), not a crash of the bundle at the write."""
    with pytest.raises(ValueError, match="nested too deeply"):
        json_value(DEEP_ARGUMENTS)
    record = im(
        [
            msg("user", "go"),
            msg("assistant", "", tool_calls=[call("c1", "Bash", DEEP_ARGUMENTS)]),
            msg("tool", "ok", tool_call_id="c1"),
            msg("assistant", "done"),
        ],
        tools=[tool("Bash")],
    )
    example, kinds = to_lf_example(record)
    assert example is not None and "arguments_not_json" in kinds
    assert json.dumps(DEEP_ARGUMENTS, ensure_ascii=False) in example["messages"][1]["content"]
    (assistant,) = [m for m in lf_render._chat_messages(record["messages"]) if "tool_calls" in m]
    assert assistant["tool_calls"][0]["function"]["arguments"] == DEEP_ARGUMENTS


def test_broken_record_is_repaired_and_every_repair_counted() -> None:
    example, kinds = to_lf_example(BROKEN)
    assert example is not None
    assert example["system"] == "S1\n\nS2"
    assert example["messages"] == [
        {"role": "user", "content": "u1\n\nu2"},
        {
            "role": "function_call",
            "content": 'a1\n<tool_call>{"name": "Bash", "arguments": "not json{"}</tool_call>',
        },
        {"role": "user", "content": "mid\n\nr1\n\nu3"},
        {"role": "assistant", "content": "a2"},
    ]
    assert kinds == [
        "system_merged",
        "system_to_user",
        "empty_assistant_dropped",
        "arguments_not_json",
        "unmatched_result_kept",  # r1: a user turn ("mid") came between the call and it
        "unknown_role_dropped",
        "unmatched_result_kept",  # the orphan after a2
        "prompt_turns_merged",
        "response_turns_merged",
        "prompt_turns_merged",
        "prompt_turns_merged",
        "leading_response_dropped",
        "trailing_observation_dropped",
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
    assert example["messages"][1]["content"] == (
        'thinking\n<tool_call>{"name": "Bash", "arguments": {"command": "ls"}}</tool_call>'
    )
    # the late result answers no call: kept as a block after the call's own
    assert example["messages"][2]["content"] == "out\n</tool_response>\n<tool_response>\nlate"
    assert kinds == ["unmatched_result_kept", "response_turns_merged"]


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


_SETTINGS = st.sampled_from(
    [
        LfSettings(),
        DROP_TEXT,
        LfSettings(reasoning="drop"),
        LfSettings(parallel_calls="drop"),
        LfSettings(tool_call_words=("[TC]", "[/TC]"), thought_words=("<t>", "</t>")),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGES, max_size=14), _SETTINGS)
def test_any_message_sequence_gives_a_loadable_example_or_none(
    messages: list[dict[str, Any]], lf: LfSettings
) -> None:
    example, kinds = to_lf_example(im(messages), lf)
    assert set(kinds) <= set(RESHAPE_KINDS)
    assert to_lf_example(im(messages), lf) == (example, kinds)
    if example is None:
        assert kinds[-1] in RECORD_DROP_KINDS
        return
    assert not set(kinds) & set(RECORD_DROP_KINDS)
    assert lf_problems(example, lf) == []
    turns = example["messages"]
    for previous, turn in itertools.pairwise(turns):
        if turn["role"] == "observation" and "unmatched_result_kept" not in kinds:
            words = (lf.tool_call_words, lf.thought_words)
            calls = split_function_call(previous["content"], *words)[1]
            assert turn["content"].count("</tool_response>\n<tool_response>") == len(calls) - 1
    if lf.parallel_calls == "drop":
        assert all(
            len(split_function_call(t["content"], lf.tool_call_words, lf.thought_words)[1]) == 1
            for t in turns
            if t["role"] == "function_call"
        )


@pytest.fixture(scope="module")
def case_records(cases_lines: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cases_lines]


@pytest.mark.parametrize("lf", [LfSettings(), DROP_TEXT], ids=["default", "drop-text"])
def test_every_reference_record_gives_a_loadable_example(
    case_records: list[dict[str, Any]], lf: LfSettings
) -> None:
    reshapes: Counter[str] = Counter()
    for record in case_records:
        example, kinds = to_lf_example(record, lf)
        assert example is not None, record["meta_info"]["unique_info"]["_instance_id"]
        problems = lf_problems(example, lf)
        assert problems == [], (record["meta_info"]["unique_info"]["_instance_id"], problems)
        responses = [m for m in example["messages"] if m["role"] in ("assistant", "function_call")]
        assert len(responses) == sum(m["role"] == "assistant" for m in record["messages"])
        reshapes.update(kinds)
    # Valid IM records: one tool schema gets filled, and two parallel calls whose second
    # result the source lacks get an empty block; the text beside calls is dropped only
    # when asked (the 4,333 turns).
    expected = {"tool_schema_filled": 1, "missing_result_filled": 2}
    if lf.call_text == "drop":
        expected["call_text_dropped"] = 4333
    assert dict(reshapes) == expected


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
