"""`trajcurate report`: a self-contained static report of a run (pure parts; no Beam).

The report reads, per job folder of a run's output, the files a run writes (`manifest.json`,
`rejects.jsonl`, `dead_letter.jsonl`, `im.jsonl`) plus one sidecar, `scores.jsonl`, that the
pipeline writes beside them.

The sidecar, `<output>/<job>/scores.jsonl`
------------------------------------------
One JSON object per line, one line per trial that could be scored (it reached the score
stage: resolved or not, kept or filtered out afterwards), sorted by `instance_id`. Keys:

- `instance_id` (str): the bundle's `_instance_id`.
- `job` (str): the job's name (the manifest's `job`).
- `task` (str): `_instance_metadata.task_name`, else the instance id before its `__`.
- `agent` (str): `_instance_metadata.agent.name`, else `"unknown"`.
- `model` (str): `_instance_metadata.agent.model`, else `meta_info.teacher`, else `"unknown"`.
- `scaffold` (str): `_score.scaffold` (the scaffold TQS V2 scored with), else `"unknown"`.
- `language` (str): the programming language: `_instance_metadata.language` when a reader
  set it, else the language of the source-file extension the agent's tool calls touched most
  (`.py` -> `python`, ...), else `"unknown"`. (IM's `meta_info.language` is the prompt's
  natural language, `en` / `zh`, which says nothing of the task.)
- `reward` (float or null): `_instance_metadata.rewards[<reward key>]`.
- `resolved` (bool): the reward gate's verdict (reward >= threshold).
- `turns` (int): assistant turns (`_score.assistant_turns`).
- `score` (object): every key of `scorers.tqs_v2.SCORE_KEYS`, as in `_score` (components
  float or null; `scaffold` a string, `assistant_turns` / `total_tool_calls` integers).
- `judges` (object or null): the numeric values of `_llm_judge` (`{name: float}`); null when
  no judge ran.
- `diagnosis` (object or null): the main record's `_diagnosis` (`run --diagnose`) as
  `{trajectory_score, task_completion_score, detections}`, each detection
  `[detector, severity, confidence]` in the diagnosis's order; null when not diagnosed.
- `decision` (`"kept"` or `"rejected"`): whether the bundle reached the outputs.
- `reason` (str or null): why it was rejected (its `rejects.jsonl` reason); null when kept.
- `tool_errors` (list): `[tool, signature, count]` per distinct erroring tool-call signature
  (at most 20, commonest first; see `signatures.py`), so the report counts the error
  patterns of trials that never reach `im.jsonl`.

`rows.score_row` builds one line from a scored main-agent IM record and its bundle facts;
the pipeline and the tests call the same function.
"""

SIDECAR = "scores.jsonl"
