"""What does secret redaction cost next to scoring? (`python benchmarks/bench_redact.py`)

Corpora: a synthetic one (`trajcurate synth --jobs 1 --trials N --seed S`, read back with
`trajcurate convert`) and the 335 reference records (`shared/data/reference-scored/
cases.jsonl`, real text). On each, in-process, best of `--runs`:
  redact   `transforms.redact.redact_record` over every record (fresh copies each run, the
           cache of clean texts emptied: a cold first pass);
  planted  the same with secrets planted in every 10th record (the detectors' path; one
           of them wrapped in base64, so those records are decoded run by run too);
  score    `scorers.tqs_v2.score_and_count` over the same records: the reference for the
           cost of the rest of a run.
It also reports what redaction found on the clean corpora (false positives: should be none),
and, when `detect-secrets` is importable (`pip install detect-secrets`; it is no dependency
of trajcurate), the time its plugins take to scan the same strings line by line
(`analyze_line` of every plugin, verification off). `--pipeline` also times a whole
`trajcurate run` over the synthetic jobs (a separate process: Beam start-up included).
Target from the issue: redaction <= 10% of a pipeline run.
"""

from __future__ import annotations

import argparse
import base64
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scorers import tqs_v2  # noqa: E402
from transforms import redact  # noqa: E402

DEFAULT_CASES = REPO_ROOT.parent / "shared" / "data" / "reference-scored" / "cases.jsonl"


def trajcurate() -> list[str]:
    script = Path(sys.executable).with_name("trajcurate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]


def run(command: list[str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"command failed ({result.returncode}): {' '.join(command)}\n{result.stderr}")
    return time.perf_counter() - started


def synth_records(tmp: Path, trials: int, seed: int) -> tuple[Path, list[bytes]]:
    jobs, records = tmp / "jobs", tmp / "records.jsonl"
    run(
        [
            *trajcurate(),
            "synth",
            "--out",
            str(jobs),
            "--jobs",
            "1",
            "--trials",
            str(trials),
            "--seed",
            str(seed),
        ]
    )
    run([*trajcurate(), "convert", str(jobs), "-o", str(records)])
    return jobs, [line for line in records.read_bytes().splitlines() if line.strip()]


def best_of(
    runs: int,
    lines: list[bytes],
    action: Callable[[list[dict[str, Any]]], object],
    prepare: Callable[[list[dict[str, Any]]], object] | None = None,
) -> float:
    """Best wall time of `action(records)`, on freshly parsed records each run (untimed)."""
    best = float("inf")
    for _ in range(runs):
        records = [orjson.loads(line) for line in lines]
        if prepare is not None:
            prepare(records)
        redact.clear_cache()
        started = time.perf_counter()
        action(records)
        best = min(best, time.perf_counter() - started)
    return best


def redact_all(records: list[dict[str, Any]]) -> Counter[str]:
    found: Counter[str] = Counter()
    for record in records:
        found += redact.redact_record(record)
    return found


def score_all(records: list[dict[str, Any]]) -> None:
    for record in records:
        tqs_v2.score_and_count(record)


def planted_text() -> str:
    """One of each kind, built from pieces (no literal secret in the repo)."""
    alnum = "aB3dE5fG7hI9jK1lM3nOpQ5rS7tU9vW1xY3zC8kL2mN6"
    return "\n".join(
        (
            "export OPENAI_API_KEY=" + "sk-" + "proj-" + alnum[:40],
            "client = Anthropic(api_key='" + "sk-" + "ant-api03-" + alnum[:40] + "')",
            "aws_access_key_id = " + "AK" + "IA" + "Q3EGRBRTZ7XQMJ5N",
            "aws_secret_access_key = " + alnum[:36] + "/k+Z",
            "git clone https://oauth2:" + "gh" + "p_" + alnum[:36] + "@github.com/o/r.git",
            "DATABASE_URL=postgres://app:" + "s3cr3t-Pw0rd" + "@db:5432/app",
            "Authorization: Bearer "
            + "eyJ"
            + "hbGciOiJIUzI1NiJ9."
            + "eyJ"
            + "zdWIiOiIxIn0."
            + alnum[:30],
            "-----BEGIN RSA "
            + "PRIVATE KEY-----\n"
            + (alnum + "\n") * 4
            + "-----END RSA "
            + "PRIVATE KEY-----",
            "DB_PASSWORD=" + "hunter2-" + alnum[:6],
            "huggingface-cli login --token " + "hf" + "_" + alnum[:34],
            "SENDGRID=" + "SG" + "." + alnum[:22] + "." + alnum[1:44],
            "bot " + "6123" + "45789:" + "AA" + alnum[2:35] + " is up",
            "curl 'https://a.blob.core.windows.net/c/f?sv=2022&" + "sig=" + alnum[3:40] + "%3D'",
            '{"auths": {"r.io": {"auth": "'
            + base64.b64encode(b"ci:" + alnum[:20].encode()).decode()
            + '"}}}',
            "mysql -u app -p" + "Zq8" + alnum[:8] + " shop",
            "echo "
            + base64.b64encode(("gh" + "p_" + alnum[5:41]).encode()).decode()
            + " | base64 -d",
        )
    )


def plant(records: list[dict[str, Any]]) -> None:
    text = planted_text()
    for record in records[::10]:
        record["messages"][-1]["content"] += "\n" + text


def strings_of(record: dict[str, Any]) -> list[str]:
    """The strings redaction looks at (for the detect-secrets comparison)."""
    out: list[str] = []
    for message in record.get("messages") or []:
        out += [message.get("content") or "", message.get("reasoning_content") or ""]
        out += [call["function"]["arguments"] for call in message.get("tool_calls") or []]
    out += [tool["function"].get("description") or "" for tool in record.get("tools") or []]

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(record["meta_info"]["unique_info"])
    return [text for text in out if text]


def detect_secrets_seconds(lines: list[bytes], runs: int) -> tuple[float, int] | None:
    """Best time for every detect-secrets plugin over every line of every string."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.settings import default_settings, get_settings
    except ImportError:
        return None
    text_lines = [
        line
        for raw in lines
        for text in strings_of(orjson.loads(raw))
        for line in text.splitlines()
    ]
    with default_settings():
        get_settings().disable_filters(
            "detect_secrets.filters.common.is_ignored_due_to_verification_policies"
        )
        plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()]
        best, found = float("inf"), 0
        for _ in range(runs):
            started = time.perf_counter()
            found = sum(
                len(plugin.analyze_line(filename="adhoc-string-scan", line=line, line_number=0))
                for line in text_lines
                for plugin in plugins
            )
            best = min(best, time.perf_counter() - started)
    return best, found


def report(name: str, lines: list[bytes], runs: int, with_detect_secrets: bool) -> float:
    """Print the figures for one corpus; return the redaction time."""
    megabytes = sum(len(line) + 1 for line in lines) / 1e6
    count = len(lines)
    found = redact_all([orjson.loads(line) for line in lines])
    planted_found: Counter[str] = Counter()

    def redact_planted(records: list[dict[str, Any]]) -> None:
        planted_found.clear()
        planted_found.update(redact_all(records))

    redacting = best_of(runs, lines, redact_all)
    planted = best_of(runs, lines, redact_planted, prepare=plant)
    scoring = best_of(runs, lines, score_all)
    print(f"\n{name}: {count} records, {megabytes:.2f} MB of IM JSONL")
    print(f"  {'':28} {'seconds':>8} {'records/s':>10} {'MB/s':>7} {'% of scoring':>13}")
    rows = [
        ("redact_record", redacting),
        ("redact_record, 10% planted", planted),
        ("score_and_count (reference)", scoring),
    ]
    for label, seconds in rows:
        print(
            f"  {label:28} {seconds:8.4f} {count / seconds:10.0f} {megabytes / seconds:7.1f}"
            f" {100 * seconds / scoring:12.1f}%"
        )
    print(f"  found on the clean corpus (false positives): {dict(found) or 'none'}")
    print(f"  found with secrets planted in {len(lines[::10])} records: {dict(planted_found)}")
    if with_detect_secrets:
        measured = detect_secrets_seconds(lines, runs)
        if measured is None:
            print("  detect-secrets: not installed (pip install detect-secrets to compare)")
        else:
            seconds, hits = measured
            print(
                f"  detect-secrets plugins (analyze_line, every line): {seconds:.3f} s, "
                f"{count / seconds:.0f} records/s, {100 * seconds / scoring:.0f}% of scoring, "
                f"{seconds / redacting:.0f}x redact_record; {hits} findings on the clean corpus"
            )
    return redacting


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-detect-secrets", action="store_true")
    parser.add_argument("--pipeline", action="store_true", help="also time `trajcurate run`")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trajcurate-bench-redact-") as tmp:
        jobs, lines = synth_records(Path(tmp), args.trials, args.seed)
        redacting = report(
            f"synthetic ({args.trials} trials, seed {args.seed})",
            lines,
            args.runs,
            not args.no_detect_secrets,
        )
        if args.pipeline:
            wall = run(
                [
                    *trajcurate(),
                    "run",
                    "--input",
                    str(jobs),
                    "--output",
                    str(Path(tmp) / "out"),
                    "--no-progress",
                ]
            )
            print(
                f"  trajcurate run over the same jobs: {wall:.2f} s wall (Beam start-up "
                f"included); redaction would add {100 * redacting / wall:.1f}%"
            )
        if args.cases.is_file():
            cases = [line for line in args.cases.read_bytes().splitlines() if line.strip()]
            report("reference cases", cases, args.runs, not args.no_detect_secrets)
        else:
            print(f"\nreference cases not found at {args.cases}: skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
