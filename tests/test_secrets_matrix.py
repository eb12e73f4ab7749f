"""The secrets matrix: every kind of secret (`transforms.redact.KINDS`), planted in every place
a Harbor trial controls and in the forms that hide it, reaches no output file of one
`trajcurate run` (in-process, one job holding every trial).

Places: message texts, reasoning, tool results and arguments, a tool's name and a default in
its parameter schema, the model's name, result.json's `source`, task name and exception,
the agent's version, the task instruction (from Harbor's `command.txt`). Forms: base64
(`echo <base64> | base64 -d`), an invisible character inside each secret, a key split over
two tool results. Each assertion is one (kind, place, file) cell: the planted secret's
pieces, and their base64, are in no file of that kind (nor in the run's logs).
The LLM judges' answers are checked apart, against a loopback server whose answers quote
secrets.
"""

from __future__ import annotations

import base64
import contextlib
import io
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from fake_llm_server import FakeLLMServer
from llm_judge_fixtures import judged_run, main_records
from test_redact import ALNUM, UPPER_DIGITS, URLSAFE, cases, jwt_token, rand

from pipelines.cli import main
from transforms.redact import KINDS

JOB = "2026-06-16__12-00-00"
TRIAL = "maas-controller-conflict-detecti__j56vc8R"  # resolved, Claude Code ATIF
ZWSP = "\u200b"

Doc = dict[str, Any]


@dataclass
class Trial:
    """The documents of one trial being written: what a place plants into."""

    folder: Path
    trajectory: Doc
    result: Doc
    config: Doc

    def tool_steps(self) -> list[Doc]:
        return [s for s in self.trajectory["steps"] if s.get("tool_calls")]

    def results(self) -> list[Doc]:
        return [r for s in self.tool_steps() for r in s["observation"]["results"]]


def _user_message(trial: Trial, text: str) -> None:
    trial.trajectory["steps"][0]["message"] += "\n" + text


def _agent_message(trial: Trial, text: str) -> None:
    trial.tool_steps()[0]["message"] += "\n" + text


def _reasoning(trial: Trial, text: str) -> None:
    trial.tool_steps()[1]["reasoning_content"] = "Looking at the setup: " + text


def _tool_result(trial: Trial, text: str) -> None:
    trial.results()[0]["content"] += "\n$ cat .env\n" + text


def _tool_arguments(trial: Trial, text: str) -> None:
    trial.tool_steps()[0]["tool_calls"][0]["arguments"]["description"] = text


def _tool_name(trial: Trial, text: str) -> None:
    call = trial.tool_steps()[2]["tool_calls"][0]
    call["function_name"] = call["extra"]["tool_use_name"] = "Bash " + text


def _tool_schema(trial: Trial, text: str) -> None:
    parameters = {"type": "object", "properties": {"command": {"type": "string", "default": text}}}
    trial.trajectory["agent"]["tool_definitions"] = [
        {
            "type": "function",
            "function": {"name": "Bash", "description": "Run", "parameters": parameters},
        }
    ]


def _model_name(trial: Trial, text: str) -> None:
    trial.trajectory["agent"]["model_name"] = text
    for step in trial.trajectory["steps"]:
        if "model_name" in step:
            step["model_name"] = text
    trial.result["agent_info"]["model_info"]["name"] = text
    trial.config["agent"]["model_name"] = text


def _result_source(trial: Trial, text: str) -> None:
    trial.result["source"] = text


def _task_name(trial: Trial, text: str) -> None:
    trial.result["task_name"] = text


def _exception(trial: Trial, text: str) -> None:
    trial.result["exception_info"] = {"exception_type": "RuntimeError", "exception_message": text}


def _agent_version(trial: Trial, text: str) -> None:
    trial.trajectory["agent"]["version"] = trial.result["agent_info"]["version"] = text


def _task_instruction(trial: Trial, text: str) -> None:
    """A log without the request: the reader takes it from Harbor's command file."""
    del trial.trajectory["steps"][0]
    command = trial.folder / "agent" / "command-1" / "command.txt"
    command.parent.mkdir()
    command.write_text("claude --verbose -p " + shlex.quote("Fix the bug.\n" + text) + "\n")


PLACES: dict[str, Callable[[Trial, str], None]] = {
    "user_message": _user_message,
    "agent_message": _agent_message,
    "reasoning": _reasoning,
    "tool_result": _tool_result,
    "tool_arguments": _tool_arguments,
    "tool_name": _tool_name,
    "tool_schema_default": _tool_schema,
    "model_name": _model_name,
    "result_source": _result_source,
    "task_name": _task_name,
    "exception_message": _exception,
    "agent_version": _agent_version,
    "task_instruction": _task_instruction,
}
FORMS = ("base64_in_tool_result", "invisible_char_in_tool_result")
SPLIT = "split_over_two_tool_results"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _hidden(text: str, parts: tuple[str, ...]) -> str:
    """`text` with a zero-width space in the middle of each secret piece."""
    for part in parts:
        middle = len(part) // 2
        text = text.replace(part, part[:middle] + ZWSP + part[middle:])
    return text


def _key(kind: str, salt: int) -> str | None:
    """A bare key of a kind with a known prefix (for the split), None for the others."""

    def r(length: int, seed: int, alphabet: str = ALNUM) -> str:
        return rand(length, seed + salt, alphabet)

    keys = {
        "openai_api_key": "sk-" + "proj-" + r(48, 1),
        "anthropic_api_key": "sk-" + "ant-api03-" + r(60, 2),
        "aws_access_key_id": "AK" + "IA" + r(16, 3, UPPER_DIGITS),
        "github_token": "gh" + "p_" + r(36, 5),
        "gitlab_token": "gl" + "pat-" + r(20, 6),
        "slack_token": "xo" + "xb-" + "2417" + "3090212-" + r(24, 8),
        "google_api_key": "AI" + "za" + r(35, 12),
        "stripe_key": "sk" + "_live_" + r(24, 13),
        "huggingface_token": "hf" + "_" + r(34, 60),
        "sendgrid_api_key": "SG" + "." + r(22, 61, URLSAFE) + "." + r(43, 62, URLSAFE),
        "jwt": jwt_token(r(43, 7, URLSAFE), r(10, 93, "0123456789")),
    }
    return keys.get(kind)


@dataclass(frozen=True)
class Cell:
    kind: str
    place: str
    pieces: tuple[str, ...]  # what must reach no output


TRIAL_FILES = ("agent/trajectory.json", "result.json", "config.json")


def _copy(source: Path, folder: Path) -> Trial:
    shutil.copytree(source, folder)
    trial = Trial(folder, *(orjson.loads((folder / name).read_bytes()) for name in TRIAL_FILES))
    trial.result["trial_name"] = trial.config["trial_name"] = folder.name
    return trial


def _save(trial: Trial) -> None:
    for name, doc in zip(TRIAL_FILES, (trial.trajectory, trial.result, trial.config), strict=True):
        (trial.folder / name).write_bytes(orjson.dumps(doc))


def _plant(root: Path, source: Path) -> list[Cell]:
    """Every trial of the job under `root` (one per place or form, one per split kind);
    the cells they plant. Each trial's secrets are its own (`cases(salt)`)."""
    cells: list[Cell] = []
    trials = [(place, None) for place in (*PLACES, *FORMS)]
    trials += [(SPLIT, kind) for kind in KINDS if _key(kind, 0) is not None]
    for number, (place, kind) in enumerate(trials, start=1):
        name = f"{TRIAL}-{place}" + (f"-{kind}" if kind else "")
        trial = _copy(source / TRIAL, root / JOB / name)
        if kind is None:
            cells += _plant_every_kind(trial, place, 1000 * number)
        else:
            cells.append(_split(trial, kind, 1000 * number))
        _save(trial)
    return cells


def _plant_every_kind(trial: Trial, place: str, salt: int) -> list[Cell]:
    """One secret of every kind in `place` (a form: in a tool result, so wrapped)."""
    cells, texts = [], []
    for kind, (text, parts) in cases(salt).items():
        if place == "base64_in_tool_result":
            parts = (*parts, b64(text))
            text = f"echo {b64(text)} | base64 -d"
        elif place == "invisible_char_in_tool_result":
            text = _hidden(text, parts)
        texts.append(text)
        cells.append(Cell(kind, place, (*parts, *(b64(part) for part in parts))))
    PLACES.get(place, _tool_result)(trial, "\n".join(texts))
    return cells


def _split(trial: Trial, kind: str, salt: int) -> Cell:
    """The key's first part (its prefix and a little more) ends one tool result, the rest
    starts the next one."""
    key = _key(kind, salt)
    assert key is not None
    cut = len(key) // 2
    first, second = trial.results()[:2]
    first["content"] += "\n$ head -c " + str(cut) + " key.txt\n" + key[:cut]
    second["content"] = key[cut:] + "\n" + second["content"]
    return Cell(kind, SPLIT, (key[:cut], key[cut:], b64(key)))


FILES = (
    "im.jsonl",
    "lf.json",
    "lf.stats.json",
    "manifest.json",
    "scores.jsonl",
    "rejects.jsonl",
    "dead_letter.jsonl",
    "dataset_info.json",
    "runs.jsonl",
    "report",
    "other",  # any other file a run writes
    "logs",  # what the run printed
)


def _label(out: Path, path: Path) -> str:
    relative = path.relative_to(out)
    if relative.parts[0] == "report":
        return "report"
    name = path.name
    if name.startswith("im") and name.endswith(".jsonl"):
        return "im.jsonl"
    if name.startswith("lf") and name.endswith(".json") and name != "lf.stats.json":
        return "lf.json"
    return name if name in FILES else "other"


@dataclass
class Run:
    cells: dict[tuple[str, str], Cell]
    files: dict[str, str]  # label -> the text of every output file of that kind
    out: Path
    trials: int

    def json(self, *parts: str) -> Doc:
        return dict(orjson.loads(self.out.joinpath(*parts).read_bytes()))


@pytest.fixture(scope="module")
def run(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("matrix-jobs")
    source = shared_dir / "data" / "composed" / "jobs" / JOB
    (root / JOB).mkdir()
    shutil.copy(source / "config.json", root / JOB / "config.json")
    cells = _plant(root, source)
    out = tmp_path_factory.mktemp("matrix-out") / "out"
    logs = io.StringIO()
    argv = ["run", "--no-progress", "--input", str(root), "--output", str(out)]
    argv += ["--instance-status", "all", "--dedup", "off", "--report"]
    with contextlib.redirect_stdout(logs), contextlib.redirect_stderr(logs):
        assert main(argv) == 0, logs.getvalue()
    files: dict[str, list[str]] = {label: [] for label in FILES}
    for path in sorted(out.rglob("*")):
        if path.is_file():
            files[_label(out, path)].append(path.read_bytes().decode("utf-8", "replace"))
    files["logs"].append(logs.getvalue())
    trials = sum(1 for path in (root / JOB).iterdir() if path.is_dir())
    by_key = {(cell.kind, cell.place): cell for cell in cells}
    return Run(by_key, {label: "\n".join(texts) for label, texts in files.items()}, out, trials)


def _cell_ids() -> list[tuple[str, str]]:
    places = [*PLACES, *FORMS]
    cells = [(kind, place) for kind in KINDS for place in places]
    return cells + [(kind, SPLIT) for kind in KINDS if _key(kind, 0) is not None]


@pytest.mark.parametrize("output", FILES)
@pytest.mark.parametrize(("kind", "place"), _cell_ids())
def test_no_planted_secret_reaches_an_output(run: Run, kind: str, place: str, output: str) -> None:
    cell = run.cells[kind, place]
    text = run.files[output]
    leaked = [piece for piece in cell.pieces if piece in text]
    assert leaked == [], f"{kind} planted in {place} reached {output}: {leaked}"


def test_every_trial_is_written_and_every_output_exists(run: Run) -> None:
    """The matrix means something only if each trial went all the way to the SFT files."""
    accounting = run.json(JOB, "manifest.json")["accounting"]
    assert accounting["written"] == run.trials and accounting["balanced"]
    for label in ("im.jsonl", "lf.json", "lf.stats.json", "manifest.json", "scores.jsonl"):
        assert run.files[label], label
    assert "[REDACTED:" in run.files["report"]


def test_every_planted_secret_is_counted(run: Run) -> None:
    counts = run.json(JOB, "manifest.json")["counts"]
    for kind in KINDS:
        planted = sum(1 for cell in run.cells.values() if cell.kind == kind)
        assert counts.get(f"redacted.{kind}", 0) >= planted, kind


def test_the_model_name_is_masked_in_the_stats(run: Run) -> None:
    for stats in (run.json(JOB, "lf.stats.json"), run.json("lf.stats.json")):
        models = list(stats["by_model"])
        assert any("[REDACTED:" in model for model in models), models


class QuotingJudge(FakeLLMServer):
    """A judge whose every string answer quotes secrets (a model can echo what it saw, or
    make keys up): the answers are stored in `llm_detailed_results` / `llm_raw_response`."""

    def __init__(self, quote: str) -> None:
        super().__init__(api_key=JUDGE_KEY)
        self.quote = quote

    def _answer_content(self, body: Any, requested: str) -> str:
        answer = super()._answer_content(body, requested)
        return answer.replace("sample answer text", self.quote.replace('"', "'"))


JUDGE_KEY = "sk-test-never-shown-0123456789"


@pytest.fixture
def quoting_judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[QuotingJudge, dict[str, Any]]]:
    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)
    planted = cases(77_000)
    quote = " ".join(text.replace("\n", " ") for text, _ in planted.values())
    with QuotingJudge(quote) as server:
        yield server, planted


def test_the_judges_answers_are_masked(
    composed: Path, tmp_path: Path, quoting_judge: tuple[QuotingJudge, dict[str, Any]]
) -> None:
    server, planted = quoting_judge
    assert judged_run(composed, tmp_path, server.base_url, "--llm-judge", "fixed") == 0
    for record in main_records(tmp_path, JOB):
        judged = record["meta_info"]["unique_info"]["_llm_judge"]
        assert "[REDACTED:" in orjson.dumps(judged["llm_detailed_results"]).decode()
        assert "[REDACTED:" in judged["llm_raw_response"]
    written = "\n".join(
        path.read_bytes().decode() for path in sorted(tmp_path.rglob("*")) if path.is_file()
    )
    for kind, (_, parts) in planted.items():
        leaked = [part for part in parts if part in written]
        assert leaked == [], (kind, leaked)
    counts = orjson.loads((tmp_path / JOB / "manifest.json").read_bytes())["counts"]
    assert all(counts.get(f"redacted.{kind}") for kind in KINDS)
