"""What one written bundle contributes to the output files (pure, no Beam)."""

from __future__ import annotations

from typing import Any

import orjson

from transforms.sinks.lf import to_lf_example


def bundle_payload(
    bundle: dict[str, Any], chat_template_tokenizer: str | None = None
) -> dict[str, Any]:
    """IM lines and LF items of a bundle, in record order, with what the LF writer reshaped."""
    im_lines = [orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in bundle["records"]]
    lf_items: list[bytes] = []
    reshapes: list[str] = []
    for record in bundle["records"]:
        if chat_template_tokenizer:
            from transforms.sinks.lf import render_with_chat_template

            example: dict[str, Any] | None = render_with_chat_template(
                record, chat_template_tokenizer
            )
            kinds: list[str] = []
        else:
            example, kinds = to_lf_example(record)
        reshapes.extend(kinds)
        if example is not None:
            lf_items.append(orjson.dumps(example))
    return {
        "sort_key": (bundle["instance_id"], bundle.get("source") or ""),
        "im_lines": im_lines,
        "lf_items": lf_items,
        "lf_reshapes": reshapes,
    }
