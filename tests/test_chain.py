"""The curation chain: one definition, one routing, the same counts from every driver."""

from __future__ import annotations

import io
import shutil
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.cli import build_parser, main
from pipelines.convert_command import convert
from pipelines.score_command import ScoreOptions, score_files
from transforms.bundle_steps import clean_bundle, mask_secrets
from transforms.chain import (
    DEAD_LETTER,
    REJECTED,
    STAGES_DONE,
    Begun,
    ChainSettings,
    Drop,
    Stage,
    accounting,
    begin,
    clean_after_survey,
    read_counts,
    run_stages,
    stage_names,
    stages_before_judge,
    stages_where_read,
)
from transforms.cleaning import MAX_DEPTH, SURVEYED, TooDeep, clean_record, clean_text
from transforms.diagnose_step import DiagnoseSettings

JOB = "2026-06-16__12-00-00"


def _bundle(**extra: Any) -> dict[str, Any]:
    return {"instance_id": "t1", "job": "j", "source": "/x/t1", "format": "harbor", **extra}


def test_a_check_rejects_with_its_stage_and_reason_and_stops_the_chain() -> None:
    seen: list[str] = []
    stages = [
        Stage("first", check=lambda b: None),
        Stage("second", check=lambda b: "too short"),
        Stage("third", transform=lambda b: seen.append("third") or b),
    ]
    counts: Counter[str] = Counter()
    result = run_stages(_bundle(), stages, lambda name: counts.update([name]))
    assert isinstance(result, Drop) and result.kind == REJECTED
    assert result.record["stage"] == "second" and result.record["reason"] == "too short"
    assert result.record["job"] == "j" and result.record["instance_id"] == "t1"
    assert seen == []
    assert counts == Counter({"first.in": 1, "first.kept": 1, "second.in": 1, "second.rejected": 1})


def test_an_exception_dead_letters_the_bundle_under_its_job() -> None:
    def explode(bundle: dict[str, Any]) -> dict[str, Any]:
        raise RecursionError("maximum recursion depth exceeded")

    result = run_stages(_bundle(), [Stage("score", transform=explode)], lambda name: None)
    assert isinstance(result, Drop) and result.kind == DEAD_LETTER
    assert result.record["job"] == "j" and result.record["stage"] == "score"
    assert result.record["error"] == "RecursionError: maximum recursion depth exceeded"
    assert "explode" in result.record["traceback"]


def test_a_stage_is_a_check_or_a_transform() -> None:
    with pytest.raises(ValueError, match="give a check or a transform"):
        Stage("both", check=lambda b: None, transform=lambda b: b)


@pytest.mark.parametrize(
    ("redact", "names"),
    [
        ("mask", ["read", "validate", "redact", "score", "trainable", "clean", "gate", "filter"]),
        ("drop", ["read", "validate", "redact", "score", "trainable", "clean", "gate", "filter"]),
        ("off", ["read", "validate", "score", "trainable", "clean", "gate", "filter"]),
    ],
)
def test_stage_order(redact: str, names: list[str]) -> None:
    assert stage_names(ChainSettings(redact=redact)) == names


@pytest.mark.parametrize(
    ("redact", "names"),
    [
        ("mask", ["read", "validate", "redact"]),
        ("drop", ["read", "validate", "redact"]),
        ("off", ["read", "validate"]),
    ],
)
def test_the_read_ahead_helper_runs_the_first_stages_up_to_redaction(
    redact: str, names: list[str]
) -> None:
    assert [stage.name for stage in stages_where_read(ChainSettings(redact=redact))] == names


def test_a_bundle_begun_where_it_was_read_goes_on_from_the_next_stage() -> None:
    ran: list[str] = []

    def stage(name: str) -> Stage:
        return Stage(name, transform=lambda b: ran.append(name) or b)

    stages = [stage("first"), stage("second"), stage("third")]
    bundle = {**_bundle(), "records": []}
    begun = begin(bundle, stages[:2])
    assert isinstance(begun, Begun)
    assert (begun.job, begun.read) == ("j", read_counts(_bundle(records=[])))
    assert begun.counts == {"first.in": 1, "first.kept": 1, "second.in": 1, "second.kept": 1}
    assert begun.item is bundle and bundle[STAGES_DONE] == 2
    counts: Counter[str] = Counter()
    assert run_stages(bundle, stages, lambda name: counts.update([name])) is bundle
    assert ran == ["first", "second", "third"]
    assert STAGES_DONE not in bundle
    assert counts == Counter({"third.in": 1, "third.kept": 1})


def test_a_bundle_rejected_where_it_was_read_comes_back_as_its_drop() -> None:
    stages = [Stage("read", check=lambda b: "over --max-record-mb")]
    begun = begin(_bundle(records=[]), stages)
    assert isinstance(begun, Begun) and isinstance(begun.item, Drop)
    assert begun.item.record["stage"] == "read"
    assert begun.item.record["reason"] == "over --max-record-mb"
    assert begun.counts == {"read.in": 1, "read.rejected": 1}
    drop = Drop(REJECTED, {"stage": "open"})
    assert begin(drop, stages) is drop


def test_accounting_counts_inputs_lost_before_they_became_bundles() -> None:
    counts = {
        "read": 5,
        "written": 3,
        "rejected.gate": 2,
        "rejected.detect": 1,
        "dead_letter.open": 1,
    }
    assert accounting(counts) == {
        "in": 7,
        "written": 3,
        "rejected": 3,
        "dead_lettered": 1,
        "balanced": True,
    }


def test_control_characters_and_escape_sequences_are_removed_and_counted() -> None:
    assert clean_text("ok\x00 \x1b[31mred\x1b[0m\tend\r\n\x7f") == ("ok red\tend\r\n", 11)
    record = {"messages": [{"role": "user", "content": "a\x00b"}], "meta": {"k\x01": "v"}}
    assert clean_record(record) == 2
    assert record == {"messages": [{"role": "user", "content": "ab"}], "meta": {"k": "v"}}


def test_every_format_character_and_noncharacter_is_removed_and_counted() -> None:
    """Every Cf character Python knows (but the joiners) and every noncharacter goes."""
    kept_joiners = {0x200C, 0x200D}
    for code in range(0x110000):
        char = chr(code)
        noncharacter = 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE
        if code in kept_joiners or not (unicodedata.category(char) == "Cf" or noncharacter):
            continue
        assert clean_text(f"a{char}b") == ("ab", 1), f"U+{code:04X}"
        record = {"messages": [{"content": f"a{char}b"}]}
        assert clean_record(record) == 1, f"U+{code:04X}"  # the fast check sees it
        assert record["messages"][0]["content"] == "ab"


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        ("pay\u202eusd\u202c.exe", "payusd.exe", 2),  # RTL override and its pop
        ("api\u200b_key\ufeff", "api_key", 2),  # zero-width space, BOM
        ("a\u061cb\ufffe\U0010ffff", "ab", 3),  # Arabic letter mark, noncharacters
        ("one\u2028two\u2029three", "one\ntwo\nthree", 2),  # separators become newlines
        ("\U0001f469\u200d\U0001f4bb done", "\U0001f469\u200d\U0001f4bb done", 0),  # emoji ZWJ
        ("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", None, 0),  # Persian ZWNJ
        ("sk\u200d-\u200cabc\u200d", "sk-abc", 3),  # joiners next to ASCII hide text
    ],
)
def test_invisible_unicode_is_removed_but_joiners_inside_words_stay(
    text: str, expected: str | None, count: int
) -> None:
    assert clean_text(text) == (text if expected is None else expected, count)


def test_a_clean_record_is_left_as_it_is() -> None:
    record = {"messages": [{"role": "user", "content": "plain — ünïcode ✓ \t\n"}]}
    before = orjson.dumps(record)
    assert clean_record(record) == 0
    assert orjson.dumps(record) == before


def test_a_too_deep_value_names_where_it_is() -> None:
    deep: Any = "x"
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    record = {"meta_info": {"unique_info": {"_instance_metadata": {"task_name": deep}}}}
    with pytest.raises(TooDeep, match="at /meta_info/unique_info/_instance_metadata/task_name"):
        clean_record(record)


# --- every driver, the same counts -------------------------------------------------------


@pytest.fixture(scope="module")
def job_with_bad_trials(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The composed job plus an empty trial folder and one with a truncated result.json."""
    root = tmp_path_factory.mktemp("jobs")
    job = root / JOB
    shutil.copytree(shared_dir / "data" / "composed" / "jobs" / JOB, job, symlinks=True)
    (job / "empty-trial__aaaaaaa").mkdir()
    truncated = job / "truncated__bbbbbbb"
    truncated.mkdir()
    (truncated / "agent").mkdir()
    (truncated / "result.json").write_bytes(b'{"trial_name": "truncated__bbbbbbb", "verif')
    return root


def _run_counts(inputs: Path, out: Path, *extra: str) -> dict[str, dict[str, int]]:
    argv = ["run", "--no-progress", "--input", str(inputs), "--output", str(out), *extra]
    assert main(argv) == 0
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    return {
        job: orjson.loads((out / folder / "manifest.json").read_bytes())["counts"]
        for job, folder in manifest["job_folders"].items()
    }


def _nonzero(counts: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def test_convert_counts_what_run_counts(job_with_bad_trials: Path, tmp_path: Path) -> None:
    ran = _run_counts(job_with_bad_trials, tmp_path / "run", "--instance-status", "all")
    args = build_parser(["convert"]).parse_args(
        ["convert", str(job_with_bad_trials), "-o", str(tmp_path / "c.jsonl")]
    )
    converted = convert(args, io.StringIO()).counts
    assert {job: _nonzero(c) for job, c in converted.jobs.items()} == {
        job: _nonzero(c) for job, c in ran.items()
    }
    assert ran[JOB]["rejected.read"] >= 2  # the empty and the truncated trial folders
    assert converted.accounting()["balanced"]


def test_score_counts_what_run_counts(cases_lines: list[bytes], tmp_path: Path) -> None:
    source = tmp_path / "records.jsonl"
    source.write_bytes(b"\n".join([*cases_lines[:40], b"{not json", b"[]"]) + b"\n")
    ran = _run_counts(source, tmp_path / "run", "--instance-status", "all")
    stats = score_files(ScoreOptions((source,), tmp_path / "s.jsonl"), io.StringIO())
    assert stats.balanced
    assert stats.rejected == ran["standalone"]["rejected.read"] == 2
    assert (
        stats.records == ran["standalone"]["records.main"] + ran["standalone"]["records.subagent"]
    )


def test_reasons_and_errors_are_masked_like_the_data() -> None:
    secret = "sk-proj-" + "Qw3eRt5yUi8oPa1sDf4gHj7kLz0xCv2bNm6"

    def quote(bundle: dict[str, Any]) -> str:
        return f"verifier/reward.txt is not a number: {secret!r}"

    def crash(bundle: dict[str, Any]) -> dict[str, Any]:
        raise ValueError(f"bad value {secret}")

    rejected = run_stages(_bundle(), [Stage("gate", check=quote)], lambda name: None)
    dead = run_stages(_bundle(), [Stage("score", transform=crash)], lambda name: None)
    assert isinstance(rejected, Drop) and isinstance(dead, Drop)
    assert secret not in orjson.dumps(rejected.record).decode()
    assert secret not in orjson.dumps(dead.record).decode()
    assert "[REDACTED:openai_api_key]" in rejected.record["reason"]


def test_control_characters_are_removed_from_written_data_and_counted(
    cases_lines: list[bytes], tmp_path: Path
) -> None:
    source = tmp_path / "records.jsonl"
    source.write_bytes(b"\n".join(cases_lines) + b"\n")
    out = tmp_path / "run"
    counts = _run_counts(source, out, "--instance-status", "all")["standalone"]
    assert counts["cleaned.control_chars"] > 0  # five reference records hold ANSI colours
    written = (out / "standalone" / "im.jsonl").read_bytes()
    assert b"\\u001b" not in written and b"\\u0000" not in written
    stats = orjson.loads((out / "standalone" / "lf.stats.json").read_bytes())
    assert stats["control_chars_removed"] == counts["cleaned.control_chars"]


_ALPHABET = (
    "ab é°©\u00a0\t\n\r\x00\x01\x1b[m\x7f\x85\x9f\u2028✓\\u0\u202e\u200b\u200d\ufeff\U0001f469"
)


@given(st.text(alphabet=st.sampled_from(_ALPHABET)))
def test_the_fast_check_finds_every_record_that_needs_cleaning(text: str) -> None:
    expected = clean_text(text)
    record = {"messages": [{"content": text}]}
    assert clean_record(record) == expected[1]
    assert record["messages"][0]["content"] == expected[0]


def _between_redact_and_clean(settings: ChainSettings) -> list[Stage]:
    stages = stages_before_judge(settings)
    names = [stage.name for stage in stages]
    return stages[names.index("redact") + 1 : names.index("clean")]


@pytest.mark.parametrize("trainable", ["mark", "drop"])
def test_the_stages_between_redact_and_clean_leave_the_conversation_alone(
    cases_lines: list[bytes], trainable: str
) -> None:
    """What lets the `clean` stage reuse the redact stage's survey of each record
    (`cleaning.after_survey`): scoring, diagnosing and the trainable rules add to `meta_info`,
    never to the messages or the tools."""
    settings = ChainSettings(
        instance_status="all", trainable=trainable, sidecar=True, diagnose=DiagnoseSettings()
    )
    between = _between_redact_and_clean(settings)
    assert [stage.name for stage in between] == ["score", "diagnose", "trainable"]
    for line in cases_lines[:120]:
        record = orjson.loads(line)
        bundle = {**_bundle(), "records": [record], "rewards": {"reward": 1.0}}
        conversation = orjson.dumps([record["messages"], record.get("tools")])
        record_keys = list(record)
        result = run_stages(bundle, between, lambda name: None)
        assert not (isinstance(result, Drop) and result.kind == DEAD_LETTER)
        assert orjson.dumps([record["messages"], record.get("tools")]) == conversation
        assert list(record) == record_keys


def test_the_clean_stage_after_the_survey_cleans_what_the_plain_stage_cleans() -> None:
    """The redact stage leaves its survey's verdict on the bundle; a record it found clean is
    looked at again only outside its conversation, where the later stages write."""
    dirty = {"role": "user", "content": "bell\x07 and \x1b[31mred\x1b[0m"}
    clean = {"role": "user", "content": "plain"}

    def bundle() -> dict[str, Any]:
        records = []
        for message in (clean, dirty):
            record = {"version": "2.0.0", "meta_info": {"unique_info": {}}, "messages": []}
            record["messages"].append(dict(message))
            records.append(record)
        return {**_bundle(), "records": records}

    surveyed = mask_secrets(bundle())
    assert surveyed[SURVEYED] == [True, False]
    surveyed["records"][0]["meta_info"]["unique_info"]["_trainable"] = "why\u200b"  # later
    cleaned = clean_after_survey(surveyed)
    assert SURVEYED not in cleaned
    plain = bundle()
    plain["records"][0]["meta_info"]["unique_info"]["_trainable"] = "why\u200b"
    plain = clean_bundle(plain)
    assert orjson.dumps(cleaned["records"]) == orjson.dumps(plain["records"])
    assert cleaned["tallies"] == plain["tallies"] == {"cleaned.control_chars": 11}


def test_a_record_redaction_looked_at_and_left_keeps_its_survey_verdict() -> None:
    """A record with a trigger but no secret (`key := ...` in Go) is looked at and left as it
    was: the clean stage may still trust the survey's verdict on its conversation. One whose
    secret was replaced has changed, and is surveyed again."""
    token = "gh" + "p_" + "aB3dE5fG7hI9jK1lM3nOpQ5rS7tU9vW1xY3z"
    texts = ("key := os.Getenv(name)", f"export GITHUB_TOKEN={token}")

    def bundle() -> dict[str, Any]:
        records = [
            {"version": "2.0.0", "meta_info": {"unique_info": {}}, "messages": []} for _ in texts
        ]
        for record, text in zip(records, texts, strict=True):
            record["messages"].append({"role": "user", "content": text})
        return {**_bundle(), "records": records}

    surveyed = mask_secrets(bundle())
    assert surveyed["tallies"]["redacted.github_token"] == 1
    assert surveyed[SURVEYED] == [True, False]
    cleaned = clean_after_survey(surveyed)
    plain = clean_bundle(mask_secrets(bundle()) | {SURVEYED: None})
    assert orjson.dumps(cleaned["records"]) == orjson.dumps(plain["records"])


def _validate(bundle: dict[str, Any]) -> dict[str, Any] | Drop:
    stage = [s for s in stages_before_judge(ChainSettings()) if s.name == "validate"]
    return run_stages(bundle, stage, lambda name: None)


def test_a_bundle_the_im_reader_validated_is_not_checked_again_and_loses_the_mark(
    cases_path: Path,
) -> None:
    from transforms.readers import im_jsonl
    from transforms.readers.bundle import VALIDATED

    bundle = dict(next(im_jsonl.read(cases_path)))
    assert bundle[VALIDATED] is True
    checked = _validate(bundle)
    assert not isinstance(checked, Drop) and VALIDATED not in checked
    # the mark is the reader's word for records it checked: the same records, unmarked and
    # broken, are checked and rejected (what every other reader's bundles get)
    broken = dict(checked, records=[{**checked["records"][0], "version": "1.0"}])
    dropped = _validate(broken)
    assert isinstance(dropped, Drop) and dropped.record["stage"] == "validate"
    assert "invalid IM record" in dropped.record["reason"]


@pytest.mark.parametrize("command", ["score", "run"])
def test_the_validated_mark_never_reaches_an_output_file(
    command: str, cases_lines: list[bytes], tmp_path: Path
) -> None:
    """Neither the records nor the sidecar, counts, stats or manifests of an IM input carry
    the reader's mark."""
    source = tmp_path / "cases.jsonl"
    source.write_bytes(b"\n".join(cases_lines[:5]) + b"\n")
    out = tmp_path / "out"
    if command == "score":
        out.mkdir()
        argv = ["score", str(source), "-o", str(out / "scored.jsonl")]
    else:
        argv = ["run", "--input", str(source), "--output", str(out), "--instance-status", "all"]
    assert main(argv) == 0
    files = [path for path in out.rglob("*") if path.is_file()]
    assert any(path.name in ("scored.jsonl", "im.jsonl") for path in files)
    assert [path.name for path in files if b"validated_im" in path.read_bytes()] == []
