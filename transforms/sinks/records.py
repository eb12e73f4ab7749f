"""What one written bundle contributes to the output files (pure, no Beam)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from transforms.sinks.exports import export_lines
from transforms.sinks.lf import DEFAULT_LF, LfSettings, to_lf_example
from transforms.sinks.schema import conform_im_record, im_record_line


def bundle_payload(
    bundle: dict[str, Any], lf: LfSettings = DEFAULT_LF, exports: Sequence[str] = ()
) -> dict[str, Any]:
    """IM lines and LF items of a bundle, in record order, with what the LF writer reshaped
    (a record the LF writer leaves out still counts its reshapes, the drop among them); with
    `exports` (`--messages-format`) also each format's lines, made from the IM records as
    written, and their counts."""
    if exports:  # the exports are made from the conformed records
        conformed = [conform_im_record(record) for record in bundle["records"]]
        im_lines = [orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE) for record in conformed]
    else:
        conformed, im_lines = [], [im_record_line(record) for record in bundle["records"]]
    exported, export_counts = export_lines(conformed, exports)
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
        "export_lines": [b"".join(exported[fmt]) for fmt in exports],
        "export_counts": export_counts,
    }
