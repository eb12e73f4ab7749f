"""`--chat-template-tokenizer`: the conversation rendered by the model's own chat template,
cut into prompt / response turns that LLaMA-Factory's `empty` template trains on as SFT
(prompts masked, responses trained), with a small local tokenizer (no download)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lf_rules import empty_template_pairs, sharegpt_problem
from test_lf import TOOL_RECORD, call, im, msg

from transforms.sinks import lf, lf_render
from transforms.sinks.lf import RECORD_DROP_KINDS, RESHAPE_KINDS, LfSettings
from transforms.sinks.records import bundle_payload

# A ChatML-like template: a header per message, the generation prompt on request.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}"
    "{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}</tool_call>{% endfor %}"
    "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Shows reasoning only on the last message, so earlier turns change once later ones follow.
LAST_REASONING_ONLY = CHATML.replace(
    "{% if m.reasoning_content %}", "{% if loop.last and m.reasoning_content %}"
)


def save_tokenizer(folder: Path, template: str) -> str:
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    tokenizer.chat_template = template
    tokenizer.save_pretrained(folder)
    lf_render.load_tokenizer.cache_clear()
    return str(folder)


def whole_render(path: str, record: dict[str, Any]) -> str:
    tokenizer = lf_render.load_tokenizer(path)
    messages = lf_render._chat_messages(record["messages"])
    return str(tokenizer.apply_chat_template(messages, tools=record["tools"], tokenize=False))


def test_turns_concatenate_to_the_template_s_text_and_split_at_each_answer(
    tmp_path: Path,
) -> None:
    path = save_tokenizer(tmp_path, CHATML)
    example, kinds = lf_render.render_with_chat_template(TOOL_RECORD, path)
    assert example is not None and kinds == []
    assert sharegpt_problem(example) is None
    pairs = empty_template_pairs(example)
    assert "".join(prompt + response for prompt, response in pairs) == whole_render(
        path, TOOL_RECORD
    )
    assert pairs[0] == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\ndo it<|im_end|>\n"
        "<|im_start|>assistant\n",
        "<think>hmm</think>Let me look.<tool_call>Read</tool_call><tool_call>Grep</tool_call>"
        "<|im_end|>\n",
    )
    assert pairs[1][0] == (
        "<|im_start|>tool\nA<|im_end|>\n<|im_start|>tool\nB<|im_end|>\n<|im_start|>assistant\n"
    )
    assert [response for _, response in pairs[1:]] == [
        "<tool_call>Bash</tool_call><|im_end|>\n",
        "done<|im_end|>\n",
    ]
    assert example["system"] == "" and example["tools"] == ""
    assert example["_instance_id"] == "inst-1" and example["_agent_type"] == "main"


def test_a_template_that_rewrites_earlier_turns_is_refused_and_counted(tmp_path: Path) -> None:
    path = save_tokenizer(tmp_path, LAST_REASONING_ONLY)
    example, kinds = lf_render.render_with_chat_template(TOOL_RECORD, path)
    assert (example, kinds) == (None, ["chat_template_not_prefix"])
    assert set(kinds) <= set(RESHAPE_KINDS) and kinds[-1] in RECORD_DROP_KINDS
    # without reasoning nothing differs between the renders: the record is written
    plain = im([msg("user", "q"), msg("assistant", "", tool_calls=[call("c", "Bash", "{}")])])
    example, kinds = lf_render.render_with_chat_template(plain, path)
    assert example is not None and kinds == []


def test_the_sink_counts_what_rendering_left_out(tmp_path: Path) -> None:
    path = save_tokenizer(tmp_path, LAST_REASONING_ONLY)
    plain = im([msg("user", "q"), msg("assistant", "a")])
    bundle = {"instance_id": "inst-1", "records": [TOOL_RECORD, plain]}
    payload = bundle_payload(bundle, LfSettings(chat_template_tokenizer=path))
    assert len(payload["lf_items"]) == 1
    assert payload["lf_reshapes"] == ["chat_template_not_prefix"]


def test_the_dataset_info_entry_says_how_to_train(tmp_path: Path) -> None:
    entry = lf.rendered_dataset_info_entry("lf.json")
    assert entry["formatting"] == "sharegpt"
    assert entry["tags"]["user_tag"] == "user" and entry["tags"]["assistant_tag"] == "assistant"
    assert "template: empty" in entry["_trajcurate_note"]
