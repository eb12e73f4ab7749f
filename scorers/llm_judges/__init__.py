"""Optional LLM judges, the pure side: prompts, answer schemas, parsing and scores.

No network and no Beam here (architecture.md): builders return a `ChatRequest` that the
HTTP client in `transforms/llm` sends; parsers validate what comes back; score functions
turn answers into output keys. Every piece of a record a prompt embeds is untrusted and goes
between tag lines the instructions name (`isolation.fence`). Two judges (llm-judges.md):
- fixed checklist: `build_fixed_request` → `parse_fixed_answer` → `fixed_scores`
  (or `fixed_failure`);
- dynamic checklist: `question_of` → `build_generate_request` (cached per task with
  `ChecklistCache` / `checklist_key`) → `parse_generated_checklist` → `build_judge_request`
  → `parse_judgement` → `dynamic_scores` (or `dynamic_failure`).
"""

from scorers.llm_judges.checklist_cache import ChecklistCache, checklist_key
from scorers.llm_judges.dynamic_checklist import (
    DYNAMIC_CHECKLIST_VERSION,
    QUESTION_FIELDS,
    build_generate_request,
    build_judge_request,
    dynamic_failure,
    dynamic_scores,
    parse_generated_checklist,
    parse_judgement,
    question_of,
)
from scorers.llm_judges.dynamic_models import GeneratedChecklist, Judgement
from scorers.llm_judges.fixed_checklist import (
    FixedAnswer,
    build_fixed_request,
    fixed_failure,
    fixed_scores,
    parse_fixed_answer,
)
from scorers.llm_judges.fixed_rubrics import CHECK_KEYS, FIXED_CHECKLIST_VERSION
from scorers.llm_judges.isolation import DataBlock, escape_tags, fence
from scorers.llm_judges.json_answers import AnswerError, extract_json
from scorers.llm_judges.render import record_blocks, system_prompt_of, tool_summary
from scorers.llm_judges.requests import ChatRequest, estimate_tokens
from scorers.llm_judges.truncation import truncate_middle

__all__ = [
    "CHECK_KEYS",
    "DYNAMIC_CHECKLIST_VERSION",
    "FIXED_CHECKLIST_VERSION",
    "QUESTION_FIELDS",
    "AnswerError",
    "ChatRequest",
    "ChecklistCache",
    "DataBlock",
    "FixedAnswer",
    "GeneratedChecklist",
    "Judgement",
    "build_fixed_request",
    "build_generate_request",
    "build_judge_request",
    "checklist_key",
    "dynamic_failure",
    "dynamic_scores",
    "escape_tags",
    "estimate_tokens",
    "extract_json",
    "fence",
    "fixed_failure",
    "fixed_scores",
    "parse_fixed_answer",
    "parse_generated_checklist",
    "parse_judgement",
    "question_of",
    "record_blocks",
    "system_prompt_of",
    "tool_summary",
    "truncate_middle",
]
