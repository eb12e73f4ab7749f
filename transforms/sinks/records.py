"""What one written bundle contributes to the output files (pure, no Beam)."""

from __future__ import annotations

from typing import Any

import orjson

from transforms.sinks.lf import DEFAULT_LF, LfSettings, to_lf_example
from transforms.sinks.schema import jsonl_lines


def bundle_payload(bundle: dict[str, Any], lf: LfSettings = DEFAULT_LF) -> dict[str, Any]:
    """IM lines and LF items of a bundle, in record order, with what the LF writer reshaped
    (a record the LF writer leaves out still counts its reshapes, the drop among them)."""
    im_lines = list(jsonl_lines(bundle["records"]))
    lf_items: list[bytes] = []
    reshapes: list[str] = []
    for record in bundle["records"]:
        if lf.chat_template_tokenizer:
            from transforms.sinks.lf import render_with_chat_template

            example, kinds = render_with_chat_template(record, lf.chat_template_tokenizer)
        else:
            example, kinds = to_lf_example(record, lf)
        reshapes.extend(kinds)
        if example is not None:
            lf_items.append(orjson.dumps(example))
    return {
        "sort_key": (bundle["instance_id"], bundle.get("source") or ""),
        "im_lines": im_lines,
        "lf_items": lf_items,
        "lf_reshapes": reshapes,
    }
