"""TQS V2 shell rules: formal test runs and verification runs (§8, §14.3-4), shell writes
(§7, §14.16) and test-file classification (§8, §14.5)."""

from __future__ import annotations

import pytest

from scorers.tqs_v2.shell import is_formal_test, is_verification_run
from scorers.tqs_v2.shell_writes import normalise_path, shell_write_targets
from scorers.tqs_v2.test_files import is_test_file

# --- formal test runs and verification runs -------------------------------------------------

# (id, command, formal test run, verification run)
RUNS = [
    ("pytest", "pytest -q", True, True),
    ("py.test", "py.test tests", True, True),
    ("python-m-pytest", "python3 -m pytest -x", True, True),
    ("python-m-unittest", "python -m unittest discover", True, True),
    ("manage-py-test", "python manage.py test", True, True),
    ("runtests", "python runtests.py", True, True),
    ("sudo", "sudo pytest", True, True),
    ("sudo-user", "sudo -u bob pytest", True, True),
    ("timeout-duration", "timeout 60 pytest tests", True, True),
    ("env-assignment", "env FOO=1 pytest", True, True),
    ("bare-assignment", "FOO=1 pytest", True, True),
    ("time-nohup-stdbuf", "time nohup stdbuf -oL pytest", True, True),
    ("and-chain", "cd /repo && pytest", True, True),
    ("after-ls", "ls; pytest", True, True),
    ("cd-newline-skipped", "cd /repo\npytest", False, False),
    ("python-test-file-not-formal", "python test_x.py", False, True),
    ("pip-install-pytest", "pip install pytest", True, False),
    ("env-assignment-before-cat", "env X=1 cat pytest.ini", True, True),
    ("assignment-then-cat-skipped", "X=1 cat pytest.ini", False, False),
    ("grep-head", "grep -r pytest .", False, False),
    ("grep-with-path", "/usr/bin/grep pytest setup.cfg", False, False),
    ("cat-head", "cat pytest.ini", False, False),
    ("echo-head", "echo pytest", False, False),
    ("go-test", "go test ./...", True, True),
    ("cargo-test", "cargo test", True, True),
    ("make-check", "make check", True, True),
    ("ctest", "ctest --output-on-failure", True, True),
    ("cmake-target-test", "cmake --build build --target test", True, True),
    ("gtest-filter", "./build/runner --gtest_filter=Parser.*", True, True),
    ("mvn-test", "mvn -q test", True, True),
    ("mvn-verify", "mvn -B verify", True, True),
    ("mvn-compile", "mvn compile", False, False),
    ("gradlew-test", "./gradlew test", True, True),
    ("gradlew-x-test", "./gradlew build -x test", False, False),
    ("sbt-testOnly", "sbt testOnly foo.BarSpec", True, True),
    ("npx-jest", "npx jest", True, True),
    ("npm-test", "npm test", True, True),
    ("pnpm-run-test", "pnpm run test", True, True),
    ("mix-swift-dotnet", "dotnet test", True, True),
    ("busted", "busted", True, True),
    ("R-devtools", "Rscript -e 'devtools::test()'", True, True),
    ("plenary", "nvim --headless -c PlenaryBustedDirectory tests", True, True),
    ("exec-test-binary", "./build/parser_test", True, True),
    ("repro-script", "python repro_issue.py", False, True),
    ("verify-sh", "bash verify.sh", False, True),
    ("python-c", "python -c 'print(1)'", False, True),
    ("python-c-writes", "python -c \"open('f', 'w').write('x')\"", False, False),
    ("node-script", "node check.js", False, True),
    # `node|bun|deno [-opts] x.js`: a subcommand before the script is no run to the reference
    # (randomized records with `bun run src/index.ts` / `deno run --allow-read …` score TVR 0).
    ("deno-run", "deno run x.ts", False, False),
    ("node-opts-script", "node --require ./setup.js src/index.js", False, True),
    ("ruby-e", "ruby -e 'p 1'", False, True),
    ("php-r", "php -r 'echo 1;'", False, True),
    ("go-run", "go run .", False, True),
    ("java-class", "java Main", False, True),
    ("java-jar", "java -jar app.jar", False, True),
    ("bazel-test", "bazel test //...", False, True),
    ("tox", "tox -e py311", False, True),
    ("dot-slash-sh", "./run.sh", False, True),
    ("dot-slash-out", "./a.out", False, True),
    ("npm-install", "npm install", False, False),
    ("uv-pip-install", "uv pip install -e .", False, False),
    ("setup-py-develop", "python setup.py develop", False, False),
    ("manage-py-migrate", "python manage.py migrate", False, False),
    ("npm-run-build", "npm run build", False, False),
    ("cargo-check", "cargo check", False, False),
    ("go-vet", "go vet ./...", False, False),
    ("install-then-test", "pip install -e . && pytest", True, True),
]


@pytest.mark.parametrize(
    ("command", "formal", "verification"), [r[1:] for r in RUNS], ids=[r[0] for r in RUNS]
)
def test_formal_and_verification_runs(command: str, formal: bool, verification: bool) -> None:
    assert is_formal_test(command) is formal
    assert is_verification_run(command) is verification


def test_mvn_goal_must_be_within_200_characters() -> None:
    assert is_formal_test("mvn " + "-Dx=1 " * 30 + "test")
    assert not is_formal_test("mvn " + "-Dx=1 " * 40 + "test")


# --- shell writes ---------------------------------------------------------------------------

WRITES = [
    ("cat-heredoc", "cat > a.py << 'EOF'\nx = 1\nEOF", ("a.py",)),
    ("cat-append", "cat >> log.txt <<EOF\nx\nEOF", ("log.txt",)),
    ("cat-in-out", "cat in.txt > out.txt", ("out.txt",)),
    ("echo", "echo hi > a.txt", ("a.txt",)),
    ("printf-append", "printf '%s' x >> b.txt", ("b.txt",)),
    ("tee", "make | tee out.log", ("out.log",)),
    ("tee-a", "ls | tee -a out.log", ("out.log",)),
    ("sed-i", "sed -i 's/a/b/' f.py g.py", ("f.py", "g.py")),
    ("sed-i-suffix", "sed -i.orig 's/a/b/' f.py", ("f.py",)),
    ("gsed-i", "gsed -i 's/a/b/' f.py", ("f.py",)),
    ("perl-i-bak", "perl -i.bak -pe 's/a/b/' f.pl", ("f.pl",)),
    ("patch", "patch src/a.py fix.diff", ("src/a.py",)),
    ("patch-after-and", "cd /x && patch a.py d.diff", ("a.py",)),
    ("heredoc-body-scanned", "cat > x.sh <<'EOF'\necho hi > inner.txt\nEOF", ("x.sh", "inner.txt")),
    # never system paths, fd redirects or meta tokens
    ("dev-null", "echo hi > /dev/null", ()),
    ("proc", "echo 1 > /proc/sys/vm/x", ()),
    ("sys", "echo 1 > /sys/kernel/x", ()),
    ("fd-redirect", "echo oops >&2", ()),
    ("stderr-to-stdout", "echo hi 2>&1", ()),
    ("tee-dev", "make 2>&1 | tee /dev/stderr", ()),
    ("cat-EOF-token", "cat > EOF", ()),
    ("plain-redirect-not-a-form", "ls > listing.txt", ()),
    # §14.16 quirks, pinned by the reference
    ("cat-two-spaces-counts-twice", "cat  > f.txt", ("f.txt", "f.txt")),
    ("echo-quoted-gt", "echo 'a > b'", ("b'",)),
    ("sed-i-1d", "sed -i 1d f.txt", ()),
    ("sed-e-then-i", "sed -e 's/a/b/' -i f.txt", ()),
    ("sed-glued-semicolon", "sed -i 's/a/b/' f.py;", ()),
    ("patch-p1", "patch -p1 < fix.diff", ("-p1",)),
    # `''` is taken as the script, so the real script is a "file" (quotes dropped, as the
    # reference drops them from every in-place target: `sed -i 's/a/b/' 'f.py'` edits f.py).
    ("bsd-sed-empty-suffix", "sed -i '' 's/a/b/' f.py", ("s/a/b/", "f.py")),
    ("tee-first-file-only", "echo x | tee a b", ("a",)),
]


@pytest.mark.parametrize(
    ("command", "targets"), [w[1:] for w in WRITES], ids=[w[0] for w in WRITES]
)
def test_shell_write_targets(command: str, targets: tuple[str, ...]) -> None:
    assert shell_write_targets(command) == targets


@pytest.mark.parametrize(
    ("path", "normalised"),
    [
        ("/workspace/src/a.py", "src/a.py"),
        ("/testbed/./src//a.py", "src/a.py"),
        ("/repo/a/../b.py", "b.py"),
        ("/home/swe-bench/x.py", "x.py"),
        ("/tmp/x.py", "/tmp/x.py"),
        ("src/a.py/", "src/a.py"),
    ],
)
def test_normalise_path(path: str, normalised: str) -> None:
    assert normalise_path(path) == normalised


# --- test files -----------------------------------------------------------------------------

TEST_FILES = [
    "conftest.py",
    "pkg/conftest.py",
    "test_x.py",
    "x_test.go",
    "x_tests.rs",
    "user_spec.rb",
    "web/x.spec.ts",
    "Button.test.jsx",
    "FooTest.java",
    "FooTests.cs",
    "FooSpec.scala",
    "FooIT.java",
    "tests/helpers.py",
    "__tests__/a.js",
    "spec/support/helper.rb",
    "t/basic.t",
    "t/sub/deep.t",
    "src/test/java/com/acme/Fixtures.java",
    "repro_notes.md",
    "/tmp/repro/run.py",
    "verify.sh",
]
NOT_TEST_FILES = [
    "src/latest.py",
    "docs/testing.md",
    "tests/data/fixture.json",
    "test/notes.txt",
    "footest.java",
    "t/x.pl",
    "a.t",
    "README.md",
    # Not test files to the reference (randomized records pin both): `src/test/` holds test
    # files only with a code extension, and a repro name needs an extension.
    "src/test/resources/a.json",
    "/tmp/reproduce",
]


@pytest.mark.parametrize("path", TEST_FILES)
def test_is_test_file(path: str) -> None:
    assert is_test_file(path)


@pytest.mark.parametrize("path", NOT_TEST_FILES)
def test_is_not_test_file(path: str) -> None:
    assert not is_test_file(path)
