"""An agent-neutral run of one task: the turns an agent takes and what the tools answered.

A profile decides the run's quality: clean runs explore, fix, test and finish; others loop
on the same read, stop without finishing, repeat the same failing command, claim success
on red tests, wander for a hundred turns or stall after a look around. The renderers in
`atif.py`, `terminus.py` and `native.py` turn the same `Episode` into each agent's files.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pipelines.synth.languages import LANGUAGES, Language, TestRun
from pipelines.synth.templates import Task

__all__ = ["PROFILES", "Action", "Episode", "Subagent", "Turn", "build_episode"]

# profile -> (weight, probability that the verifier rewards the run)
PROFILES: dict[str, tuple[int, float]] = {
    "clean": (30, 0.93),
    "test_first": (10, 0.95),
    "quick": (8, 0.6),
    "struggle": (14, 0.8),
    "loop": (9, 0.35),
    "truncated": (10, 0.1),
    "error_repeat": (8, 0.3),
    "false_claim": (6, 0.03),
    "marathon": (5, 0.35),
    "stalled": (5, 0.02),
}


@dataclass(frozen=True, slots=True)
class Action:
    kind: str  # list | read | grep | edit | write | run | todo | delegate
    path: str = ""
    pattern: str = ""
    command: str = ""
    old: str = ""
    new: str = ""
    content: str = ""  # the whole file after an edit or write
    output: str = ""
    exit_code: int = 0
    error: bool = False  # the tool refused (e.g. an edit whose old text is not in the file)
    todos: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    text: str
    actions: tuple[Action, ...]
    reasoning: str = ""


@dataclass(frozen=True, slots=True)
class Subagent:
    agent_id: str
    prompt: str
    turns: tuple[Turn, ...]
    report: str


@dataclass(frozen=True, slots=True)
class Episode:
    task: Task
    profile: str
    instruction: str
    turns: tuple[Turn, ...]
    final: str | None  # the closing answer; None when the run was cut off
    subagent: Subagent | None
    reward_probability: float
    test_total: int


@dataclass
class _Builder:
    task: Task
    rng: random.Random
    delegate_ok: bool
    lang: Language = field(init=False)
    content: str = field(init=False)
    total: int = field(init=False)
    turns: list[Turn] = field(default_factory=list)
    subagent: Subagent | None = None

    def __post_init__(self) -> None:
        self.lang = LANGUAGES[self.task.lang]
        self.content = self.task.source
        self.total = self.rng.randint(4, 40)

    def turn(self, text: str, *actions: Action, reasoning: str = "") -> None:
        self.turns.append(Turn(text, actions, reasoning))

    def files(self) -> list[str]:
        t = self.task
        extra = [self.lang.regression_path(t)] if self.has_regression else []
        return sorted({t.path, t.test_path, *self.lang.project_files, *extra})

    @property
    def has_regression(self) -> bool:
        path = self.lang.regression_path(self.task)
        return any(
            a.kind == "write" and a.path == path for turn in self.turns for a in turn.actions
        )

    def list_files(self) -> Action:
        listing = "\n".join(f"./{p}" for p in self.files())
        return Action("list", command="find . -type f -not -path './.git/*' | sort", output=listing)

    def grep(self, pattern: str | None = None) -> Action:
        pattern = pattern or self.task.symbol
        hits = [
            f"{self.task.path}:{n}:{line}"
            for n, line in enumerate(self.content.splitlines(), 1)
            if pattern in line
        ]
        if pattern == self.task.symbol:
            hits.append(f"{self.task.test_path}:14:    {self.task.check}")
        return Action("grep", path=".", pattern=pattern, output="\n".join(hits))

    def read(self, path: str | None = None) -> Action:
        path = path or self.task.path
        if path == self.task.path:
            text = self.content
        elif path == self.task.test_path:
            text = self.lang.regression_test(self.task)
        else:
            text = f"{self.lang.comment} {path} for {self.task.name}\n"
        return Action("read", path=path, output=text)

    def edit(self, correct: bool = True, stale: bool = False) -> Action:
        t = self.task
        if correct:
            old, new = t.buggy, t.fixed
        else:
            # A no-op attempt: a comment above the buggy line, which stays as it was.
            line = next(ln for ln in self.content.splitlines() if t.buggy.splitlines()[0] in ln)
            indent = line[: len(line) - len(line.lstrip())]
            old, new = line, f"{indent}{self.lang.comment} handle the edge case\n{line}"
        if stale:
            old = old.replace("    ", "  ", 1) if "    " in old else old + " "
            message = "String to replace not found in file."
            return Action(
                "edit",
                path=t.path,
                old=old,
                new=new,
                content=self.content,
                output=message,
                error=True,
            )
        self.content = self.content.replace(old, new, 1)
        return Action(
            "edit",
            path=t.path,
            old=old,
            new=new,
            content=self.content,
            output=f"The file {t.path} has been updated.",
        )

    def write_test(self) -> Action:
        path = self.lang.regression_path(self.task)
        content = self.lang.regression_test(self.task)
        return Action("write", path=path, content=content, output=f"File created: {path}")

    def run_tests(self, fail: bool) -> Action:
        failed = self.rng.randint(1, min(3, self.total - 1)) if fail else 0
        run = TestRun(self.total, failed, round(self.rng.uniform(0.02, 2.5), 2))
        code = (101 if self.task.lang == "rust" else 1) if fail else 0
        return Action(
            "run",
            command=self.lang.test_command,
            output=self.lang.output(self.task, run),
            exit_code=code,
        )

    def broken_run(self) -> Action:
        return Action(
            "run", command=self.lang.broken_command, output=self.lang.broken_output, exit_code=127
        )

    def diff(self) -> Action:
        t = self.task
        body = "".join(f"-{ln}\n" for ln in t.buggy.splitlines()) + "".join(
            f"+{ln}\n" for ln in t.fixed.splitlines()
        )
        text = f"diff --git a/{t.path} b/{t.path}\n--- a/{t.path}\n+++ b/{t.path}\n@@ -5 +5 @@\n"
        return Action("run", command="git diff", output=text + body)

    def todo(self, done: int) -> Action:
        items = (f"Find where {self.task.symbol} is defined", "Fix the bug", "Run the tests")
        status = tuple(
            (item, "completed" if i < done else "in_progress" if i == done else "pending")
            for i, item in enumerate(items)
        )
        return Action("todo", todos=status, output="Todo list updated.")

    def delegate(self) -> Action:
        t = self.task
        sub = _Builder(t, self.rng, False)
        sub.turn(f"Searching for `{t.symbol}`.", sub.grep())
        sub.turn("Reading the implementation and its test.", sub.read(), sub.read(t.test_path))
        report = (
            f"`{t.symbol}` is defined in `{t.path}`. The suspicious line is "
            f"`{t.buggy.strip()}`. It is covered by `{t.test_path}` ({t.test_name})."
        )
        agent_id = "a" + "".join(self.rng.choice("0123456789abcdef") for _ in range(16))
        prompt = f"Find where `{t.symbol}` is implemented and which tests cover it."
        self.subagent = Subagent(agent_id, prompt, tuple(sub.turns), report)
        return Action("delegate", pattern=prompt, output=report)


_OPENERS = (
    "I'll start by looking at the project layout.",
    "Let me find where `{symbol}` is defined.",
    "First I want to see the code involved.",
)
_SUCCESS = (
    "Fixed `{symbol}` in `{path}`. All {n} tests pass.",
    "The bug is fixed: `{path}` now handles this case and the test suite passes ({n} tests).",
    "Done. I changed one line in `{path}`; tests are green.",
)


def _opening(b: _Builder, delegate: bool) -> None:
    t = b.task
    if b.delegate_ok and delegate:
        b.turn("I'll have a subagent map the code first.", b.delegate())
    elif b.rng.random() < 0.5:
        b.turn(b.rng.choice(_OPENERS).format(symbol=t.symbol), b.list_files())
        b.turn(f"Looking for `{t.symbol}`.", b.grep())
    else:
        b.turn(b.rng.choice(_OPENERS).format(symbol=t.symbol), b.grep())
    reason = f"The instruction points at `{t.symbol}`; the bug should be near `{t.buggy.strip()}`."
    b.turn(f"Reading `{t.path}`.", b.read(), reasoning=reason if b.rng.random() < 0.5 else "")


def _success(b: _Builder) -> str:
    return b.rng.choice(_SUCCESS).format(symbol=b.task.symbol, path=b.task.path, n=b.total)


def _clean(b: _Builder) -> str | None:
    if b.delegate_ok and b.rng.random() < 0.4:
        b.turn("Planning the work.", b.todo(0))
    _opening(b, b.rng.random() < 0.3)
    if b.rng.random() < 0.5:
        b.turn("Checking the existing test.", b.read(b.task.test_path))
    b.turn(f"The bug is `{b.task.buggy.strip()}`. Fixing it.", b.edit())
    if b.rng.random() < 0.4:
        b.turn("Adding a regression test.", b.write_test())
    b.turn("Running the test suite.", b.run_tests(fail=False))
    if b.rng.random() < 0.3:
        b.turn("Reviewing the change.", b.diff())
    return _success(b)


def _test_first(b: _Builder) -> str | None:
    _opening(b, False)
    b.turn("Writing a test that reproduces the bug first.", b.write_test())
    b.turn("Running it to see it fail.", b.run_tests(fail=True))
    b.turn("Confirmed. Now the fix.", b.edit())
    b.turn("Re-running the tests.", b.run_tests(fail=False))
    return _success(b)


def _quick(b: _Builder) -> str | None:
    b.turn(f"Reading `{b.task.path}`.", b.read())
    b.turn("Applying the fix.", b.edit())
    return f"I changed `{b.task.path}` so that `{b.task.symbol}` handles this case."


def _struggle(b: _Builder) -> str | None:
    _opening(b, b.rng.random() < 0.2)
    if b.rng.random() < 0.4:
        b.turn("Editing the line.", b.edit(stale=True))
        b.turn("The text did not match; re-reading the file.", b.read())
    for _ in range(b.rng.randint(1, 2)):
        b.turn("Trying a guard for the edge case.", b.edit(correct=False))
        b.turn("Running the tests.", b.run_tests(fail=True))
    b.turn("Still failing. Reading the failing test.", b.read(b.task.test_path))
    b.turn("The real problem is the expression itself.", b.edit())
    b.turn("Running the tests again.", b.run_tests(fail=False))
    return _success(b)


def _loop(b: _Builder) -> str | None:
    b.turn("Let me look at the code.", b.read())
    for _ in range(b.rng.randint(5, 9)):
        b.turn(f"Let me re-read `{b.task.path}` to be sure.", b.read())
    b.turn("Applying a change.", b.edit(correct=b.rng.random() < 0.6))
    if b.rng.random() < 0.3:
        return None
    passed = b.rng.random() < 0.5
    b.turn("Running the tests.", b.run_tests(fail=not passed))
    return _success(b) if passed else "I made a change, but some tests still fail."


def _truncated(b: _Builder) -> str | None:
    _opening(b, False)
    b.turn("Applying a fix.", b.edit(correct=b.rng.random() < 0.5))
    b.turn("Running the tests.", b.run_tests(fail=True))
    for _ in range(b.rng.randint(0, 3)):
        b.turn(
            "Investigating the failure.",
            b.rng.choice((b.read(), b.grep(), b.read(b.task.test_path))),
        )
    return None


def _error_repeat(b: _Builder) -> str | None:
    b.turn(f"Reading `{b.task.path}`.", b.read())
    b.turn("Applying the fix.", b.edit())
    for _ in range(b.rng.randint(4, 7)):
        b.turn("Running the tests.", b.broken_run())
    if b.rng.random() < 0.3:
        return None
    return (
        f"I fixed `{b.task.symbol}` in `{b.task.path}` but could not run the tests: "
        f"`{b.lang.broken_command.split()[0]}` is not available here."
    )


def _false_claim(b: _Builder) -> str | None:
    _opening(b, False)
    b.turn("Applying the fix.", b.edit(correct=False))
    b.turn("Running the tests.", b.run_tests(fail=True))
    return "The fix is complete."


def _marathon(b: _Builder) -> str | None:
    t = b.task
    _opening(b, False)
    paths = [t.path, t.test_path, *b.lang.project_files]
    patterns = [t.symbol, t.buggy.strip().split()[0], "TODO", "import", "return"]
    for i in range(b.rng.randint(80, 200)):
        if i % 3 == 2:
            b.turn("Checking usages.", b.grep(patterns[i % len(patterns)]))
        else:
            b.turn("Reading more context.", b.read(paths[i % len(paths)]))
        if i % 37 == 36:
            b.turn("Running the tests to see where things stand.", b.run_tests(fail=True))
    b.turn("Applying the fix.", b.edit())
    if b.rng.random() < 0.4:
        return None
    b.turn("Running the tests.", b.run_tests(fail=False))
    return _success(b)


def _stalled(b: _Builder) -> str | None:
    b.turn(b.rng.choice(_OPENERS).format(symbol=b.task.symbol), b.list_files())
    if b.rng.random() < 0.5:
        b.turn(f"Looking for `{b.task.symbol}`.", b.grep())
    return None


_BUILDERS = {
    "clean": _clean,
    "test_first": _test_first,
    "quick": _quick,
    "struggle": _struggle,
    "loop": _loop,
    "truncated": _truncated,
    "error_repeat": _error_repeat,
    "false_claim": _false_claim,
    "marathon": _marathon,
    "stalled": _stalled,
}


def pick_profile(rng: random.Random) -> str:
    names = list(PROFILES)
    return rng.choices(names, weights=[PROFILES[n][0] for n in names])[0]


def build_episode(task: Task, profile: str, rng: random.Random, delegate_ok: bool) -> Episode:
    """One run of `task` in the style of `profile`; `delegate_ok` allows a Task subagent."""
    builder = _Builder(task, rng, delegate_ok)
    final = _BUILDERS[profile](builder)
    instruction = (
        f"{task.instruction}\n\nThe repository is in /app. The relevant tests are in "
        f"`{task.test_path}`; run them with `{builder.lang.test_command}`."
    )
    return Episode(
        task,
        profile,
        instruction,
        tuple(builder.turns),
        final,
        builder.subagent,
        PROFILES[profile][1],
        builder.total,
    )
