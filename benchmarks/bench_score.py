"""How much slower is `trajcurate score` than just parsing its input? (`make bench`)

Replicates the reference records to 7,850 lines in a temp file (the "bar-style" file), copy N
of a record with `-c<N>` appended to its `_instance_id`, so every line is an instance of its
own, as in a corpus of distinct runs (copies sharing ids would be bundled together and cost
the chain less). Then times, each as a whole separate process and best of 3 runs:
  parse        `python -c` that `orjson.loads` every line of the file, on one core
               (`taskset -c 0` when available);
  score 1 CPU  `trajcurate score FILE -o OUT` on that core (one process: what each record
               costs the chain);
  score N CPU  the same on every core (`--workers` left at one per CPU: the file's spans
               are scored side by side), what a user of this machine waits.
All include interpreter start-up. Target from the issue: score / parse <= 4x. One more run
of each, untimed, gives its peak RSS (all of a run's processes together; the IM reader holds
only the instances still missing a line, so a long file's records are not all held at once).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import measure, write_bytecode

from transforms.read_ahead import usable_cores

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = REPO_ROOT.parent / "shared" / "data" / "reference-scored" / "cases.jsonl"
TARGET_RATIO = 4.0
PARSE_CODE = (
    "import sys, orjson\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        orjson.loads(line)\n"
)


def replicate(cases: Path, target_lines: int, dest: Path) -> int:
    """Write `target_lines` lines to `dest`: the lines of `cases` over and over, the N-th copy
    (from 1) of each with `-c<N>` appended to its `_instance_id`; return the count. The ids
    are rewritten in the bytes (the lines keep their own spacing and escapes)."""
    lines = [line for line in cases.read_bytes().splitlines() if line.strip()]
    out = []
    for index in range(target_lines):
        copy, line = index // len(lines) + 1, lines[index % len(lines)]
        out.append(_with_instance_suffix(line, f"-c{copy}") + b"\n")
    dest.write_bytes(b"".join(out))
    return len(out)


_INSTANCE_ID = re.compile(rb'("_instance_id"\s*:\s*")((?:[^"\\]|\\.)*)"')


def _with_instance_suffix(line: bytes, suffix: str) -> bytes:
    """`line` with `suffix` appended to its record's `_instance_id` (the first key of that
    name outside a string: a JSON-escaped one inside a text is preceded by a backslash)."""
    match = _INSTANCE_ID.search(line)
    if match is None:
        sys.exit(f"bench: a line without an _instance_id: {line[:80]!r}")
    end = match.end(2)
    return line[:end] + suffix.encode() + line[end:]


def best_wall_seconds(command: list[str], runs: int, fresh: tuple[Path, ...] = ()) -> float:
    """Best wall time of `runs` runs of `command`; a failing run aborts the benchmark.

    The `fresh` paths are deleted (untimed) before each run, so every run writes new files as
    a first run does: replacing an earlier run's 35 MB output costs the file system tens of
    milliseconds that have nothing to do with scoring.
    """
    write_bytecode()
    best = float("inf")
    for _ in range(runs):
        for path in fresh:
            path.unlink(missing_ok=True)
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            sys.exit(
                f"benchmark command failed ({result.returncode}): {' '.join(command)}\n"
                f"{result.stderr.strip()}"
            )
        best = min(best, elapsed)
    return best


def trajcurate_command() -> list[str]:
    script = Path(sys.executable).with_name("trajcurate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--lines", type=int, default=7850)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.cases.is_file():
        print(f"bench: reference cases not found at {args.cases}", file=sys.stderr)
        return 2

    taskset = shutil.which("taskset")
    pin = [taskset, "-c", "0"] if taskset else []
    with tempfile.TemporaryDirectory(prefix="trajcurate-bench-") as tmp:
        data = Path(tmp) / "cases-x.jsonl"
        records = replicate(args.cases, args.lines, data)
        size_mb = data.stat().st_size / 1e6
        parse_command = [*pin, sys.executable, "-c", PARSE_CODE, str(data)]
        parse = best_wall_seconds(parse_command, args.runs)
        output = Path(tmp) / "out.jsonl"
        fresh = (output, output.with_name("out.rejects.jsonl"))
        score_runs = {}
        for name, prefix in (("1 CPU", pin), (f"{usable_cores()} CPU", [])):
            command = [*prefix, *trajcurate_command(), "score", str(data), "-o", str(output)]
            wall = best_wall_seconds(command, args.runs, fresh=fresh)
            for path in fresh:
                path.unlink(missing_ok=True)
            score_runs[name] = (wall, measure(command)[1])
        parse_rss = measure(parse_command)[1]

    print(
        f"input    {records} records, {size_mb:.1f} MB ({args.cases.name} replicated, "
        "every line its own instance)"
    )
    print(
        f"pinning  {'taskset -c 0' if pin else 'none (taskset not found): all cores'} for "
        f"parse and score 1 CPU; best of {args.runs}, whole process incl. start-up"
    )
    print(f"{'':13} {'wall s':>8} {'records/s':>11} {'peak RSS MiB':>13} {'/ parse':>8}")
    print(f"{'parse':13} {parse:8.3f} {records / parse:11.0f} {parse_rss:13.0f}")
    for name, (wall, rss) in score_runs.items():
        ratio = wall / parse
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        print(
            f"{'score ' + name:13} {wall:8.3f} {records / wall:11.0f} {rss:13.0f} "
            f"{ratio:7.2f}x  (target <= {TARGET_RATIO:.0f}x: {verdict})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
