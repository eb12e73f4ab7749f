"""LLaMA-Factory template profiles (`--lf-template NAME`): for each named template, the LF
settings under which it loads every record trajcurate writes.

Read from hiyouga/LLaMA-Factory at v0.9.4 (95ac3f2) and v0.9.5 (7af9095), where every fact
used here is the same: `data/template.py` (each template's class, formatters, markers and
multimodal plugin), `data/formatter.py` (FunctionFormatter), `data/tool_utils.py` (the tool
formats) and `data/mm_plugin.py` (the placeholder count). Three things decide what a template
takes, beyond the sharegpt rules every template shares:

- Markers: `Template` and `ReasoningTemplate` give the function formatter the template's
  `tool_call_words` / `thought_words`, so text and reasoning beside calls load (the default
  output). `Llama2Template` (mistral, ministral, ministral3, pixtral, llava_next_mistral,
  llama2, gemma, gemma2, gemma3) gives it none and parses the whole content as JSON: the
  profile writes the calls alone (`bare_calls`, `call_text="drop"`) and drops reasoning on
  tool-calling turns; reasoning on plain answers stays in the text.
- Tool format: glm4's renders one call per turn and raises on more, aborting the dataset:
  the profile splits such a turn into one call per turn, each with its own result
  (`parallel_calls="split"`; `drop` is the other choice). qwen, llama3, mistral and the
  default format take parallel calls.
- Multimodal plugin (qwen2_vl, qwen3_vl, llama4, glm4v, pixtral, ministral3, mistral_small,
  llava_next_mistral, gemma3): `<image>`, `<video>` and `<audio>` in a message are counted
  as media inputs and a count that differs from the example's media aborts: the profile
  leaves such a record out (`media_placeholders`).

Everything a profile moves or drops is counted by kind (`lf.RESHAPE_KINDS`). Options given
beside `--lf-template` override it where the template still loads the result (`drop` for
`keep`, `split` or `drop` for parallel calls, reasoning either way, the template's own
markers); anything it could not load is refused (`LfTemplateError`).
"""

from __future__ import annotations

from dataclasses import dataclass

from transforms.sinks.lf import THOUGHT_WORDS, TOOL_CALL_WORDS, LfSettings

__all__ = ["LF_TEMPLATES", "LfTemplate", "LfTemplateError", "template_settings"]


@dataclass(frozen=True)
class LfTemplate:
    """What one LLaMA-Factory template takes, as LF settings."""

    family: str  # its tool format / class, for messages and the README
    bare_calls: bool = False
    parallel_calls: str = "keep"
    media_placeholders: bool = False
    tool_call_words: tuple[str, str] = TOOL_CALL_WORDS
    thought_words: tuple[str, str] = THOUGHT_WORDS

    @property
    def call_text(self) -> str:
        return "drop" if self.bare_calls else "keep"


_DEFAULT = LfTemplate("default tool format")
_QWEN = LfTemplate("qwen tool format")
_QWEN_VL = LfTemplate("qwen tool format", media_placeholders=True)
_GLM4 = LfTemplate("glm4 tool format", parallel_calls="split")
_MISTRAL = LfTemplate("Llama2Template, mistral tool format", bare_calls=True)
_MISTRAL_VL = LfTemplate(
    "Llama2Template, mistral tool format", bare_calls=True, media_placeholders=True
)
_BARE = LfTemplate("Llama2Template, default tool format", bare_calls=True)

LF_TEMPLATES: dict[str, LfTemplate] = {
    "default": _DEFAULT,
    "deepseek": _DEFAULT,
    "deepseek3": _DEFAULT,
    "deepseekr1": _DEFAULT,
    "qwen": _QWEN,
    "qwen2_vl": _QWEN_VL,
    "qwen3": _QWEN,
    "qwen3_nothink": _QWEN,
    "qwen3_vl": _QWEN_VL,
    "qwen3_vl_nothink": _QWEN_VL,
    "llama3": LfTemplate("llama3 tool format"),
    "llama4": LfTemplate("llama3 tool format", media_placeholders=True),
    "glm4": _GLM4,
    "glm4v": LfTemplate("glm4 tool format", parallel_calls="split", media_placeholders=True),
    "mistral": _MISTRAL,
    "ministral": _MISTRAL,
    "ministral3": _MISTRAL_VL,
    "pixtral": _MISTRAL_VL,
    "llava_next_mistral": _MISTRAL_VL,
    "mistral_small": LfTemplate("mistral tool format", media_placeholders=True),
    "llama2": _BARE,
    "gemma": _BARE,
    "gemma2": _BARE,
    "gemma3": LfTemplate(
        "Llama2Template, default tool format", bare_calls=True, media_placeholders=True
    ),
}
# No --lf-template: trajcurate's defaults, every option free.
_UNNAMED = LfTemplate("")


class LfTemplateError(ValueError):
    """An LF option the chosen template could not load; `setting` names the LfSettings field."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


def template_settings(
    template: str | None,
    *,
    call_text: str | None = None,
    reasoning: str | None = None,
    parallel_calls: str | None = None,
    tool_call_words: tuple[str | None, str | None] = (None, None),
    thought_words: tuple[str | None, str | None] = (None, None),
    chat_template_tokenizer: str | None = None,
) -> LfSettings:
    """The settings of `template` (None: trajcurate's defaults), with the options given (None:
    not given) laid over it; LfTemplateError for a given option the template could not load.
    """
    if template is not None and template not in LF_TEMPLATES:
        raise LfTemplateError("template", f"unknown template {template!r}")
    profile = LF_TEMPLATES[template] if template is not None else _UNNAMED
    if template is not None and chat_template_tokenizer:
        raise LfTemplateError(
            "template", "not with --chat-template-tokenizer, whose turns train with template empty"
        )
    if call_text == "keep" and profile.bare_calls:
        raise LfTemplateError(
            "call_text",
            f"keep: the {template} template reads a function_call turn as the calls' JSON "
            "alone (Llama2Template), so text beside calls would stop the training run",
        )
    if parallel_calls == "keep" and profile.parallel_calls != "keep":
        raise LfTemplateError(
            "parallel_calls",
            f"keep: the {template} template's tool format renders one call per turn and "
            "aborts on more (split or drop them)",
        )
    return LfSettings(
        call_text=call_text or profile.call_text,
        tool_call_words=_markers(template, "tool_call_words", tool_call_words, profile),
        reasoning=reasoning or "keep",
        thought_words=_markers(template, "thought_words", thought_words, profile),
        parallel_calls=parallel_calls or profile.parallel_calls,
        bare_calls=profile.bare_calls,
        media_placeholders=profile.media_placeholders,
        chat_template_tokenizer=chat_template_tokenizer,
    )


def _markers(
    template: str | None,
    setting: str,
    given: tuple[str | None, str | None],
    profile: LfTemplate,
) -> tuple[str, str]:
    """The marker pair: the profile's, each half replaceable only when no template is named."""
    own: tuple[str, str] = getattr(profile, setting)
    clash = any(g is not None and g != o for g, o in zip(given, own, strict=True))
    if template is not None and clash:
        raise LfTemplateError(
            setting, f"the {template} template's {setting} are {own[0]!r} and {own[1]!r}"
        )
    return (given[0] or own[0], given[1] or own[1])
