"""The made-up coding tasks synthetic trials are about: one small bug in one file each.

Every task names its language (see `languages.py`), the source file with the bug, the
buggy line and its fix, the test suite that covers it, a one-line regression check an
agent may add as a new test, and the failure the suite prints while the bug is there.
All content here is invented for the generator.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TASKS", "Task"]


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    lang: str
    path: str  # source file, relative to /app
    test_path: str  # the existing test file that covers the bug
    symbol: str  # the function or type the bug is in
    test_name: str  # the test that fails while the bug is there
    instruction: str
    source: str  # the file content, bug included
    buggy: str  # the line (or part of it) that is wrong
    fixed: str  # what it should read
    check: str  # a regression check in the language's test idiom
    failure: str  # what the failing test prints

    @property
    def fixed_source(self) -> str:
        return self.source.replace(self.buggy, self.fixed, 1)


def _t(*fields: str) -> Task:
    return Task(*fields)


# One task per entry, fields in `Task` order; kept as a table rather than one field a line.
# fmt: off
TASKS: tuple[Task, ...] = (
    _t("textkit-slugify-strips-edge-separators", "python", "textkit/slug.py",
       "tests/test_slug.py", "slugify", "test_slugify_strips_edges",
       "`slugify` leaves a dash at the start or end when the title begins or ends with "
       "punctuation. Make it return clean slugs.",
       'import re\n\n_SEP = re.compile(r"[^a-z0-9]+")\n\n\ndef slugify(text: str) -> str:\n'
       '    lowered = text.strip().lower()\n    slug = _SEP.sub("-", lowered)\n'
       "    return slug\n",
       "    return slug\n", '    return slug.strip("-")\n',
       'assert slugify("  Hello, World!  ") == "hello-world"',
       "AssertionError: assert 'hello-world-' == 'hello-world'"),
    _t("invoice_totals_round_half_up", "python", "billing/money.py", "tests/test_money.py",
       "round_money", "test_round_money_half_up",
       "Invoice totals like 2.675 are rounded down to 2.67; finance expects half-up rounding "
       "to 2.68. Fix `round_money`.",
       "from decimal import ROUND_HALF_UP, Decimal\n\n\ndef round_money(amount: float) -> float:\n"
       "    return round(amount, 2)\n",
       "    return round(amount, 2)\n",
       '    cents = Decimal(str(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)\n'
       "    return float(cents)\n",
       "assert round_money(2.675) == 2.68", "AssertionError: assert 2.67 == 2.68"),
    _t("csv-ingest-keeps-quoted-commas", "python", "ingest/rows.py", "tests/test_rows.py",
       "parse_row", "test_parse_row_quoted_comma",
       "Rows with a quoted field that contains a comma are split into too many columns. "
       "`parse_row` must respect quoting.",
       "import csv\n\n\ndef parse_row(line: str) -> list[str]:\n"
       '    return line.rstrip("\\n").split(",")\n',
       '    return line.rstrip("\\n").split(",")\n',
       '    return next(csv.reader([line.rstrip("\\n")]))\n',
       'assert parse_row(\'7,"Smith, Ann",42\') == ["7", "Smith, Ann", "42"]',
       "AssertionError: assert ['7', '\"Smith', ' Ann\"', '42'] == ['7', 'Smith, Ann', '42']"),
    _t("lru-cache-evicts-least-recent", "python", "cachelib/lru.py", "tests/test_lru.py",
       "LRUCache", "test_put_evicts_least_recently_used",
       "The LRU cache evicts the newest entry instead of the least recently used one when "
       "it is full.",
       "from collections import OrderedDict\n\n\nclass LRUCache:\n"
       "    def __init__(self, capacity: int) -> None:\n"
       "        self.capacity = capacity\n        self._items: OrderedDict = OrderedDict()\n\n"
       "    def put(self, key, value) -> None:\n        self._items[key] = value\n"
       "        self._items.move_to_end(key)\n        if len(self._items) > self.capacity:\n"
       "            self._items.popitem(last=True)\n",
       "popitem(last=True)", "popitem(last=False)",
       'cache = LRUCache(2); cache.put("a", 1); cache.put("b", 2); cache.put("c", 3); '
       'assert "a" not in cache._items',
       "AssertionError: assert 'a' not in OrderedDict({'a': 1, 'b': 2})"),
    _t("calendar-date-range-includes-end-day", "python", "calendar_utils/ranges.py",
       "tests/test_ranges.py", "days_between", "test_days_between_is_inclusive",
       "`days_between(start, end)` should include the end date but stops one day early.",
       "from datetime import date, timedelta\n\n\ndef days_between(start: date, end: date):\n"
       "    day = start\n    out = []\n    while day < end:\n        out.append(day)\n"
       "        day += timedelta(days=1)\n    return out\n",
       "while day < end:", "while day <= end:",
       "assert len(days_between(date(2024, 2, 27), date(2024, 3, 1))) == 4",
       "AssertionError: assert 3 == 4"),
    _t("settings_env_vars_win_over_file_values", "python", "settings/load.py",
       "tests/test_load.py", "load_settings", "test_env_wins_over_file",
       "Environment variables must override values from settings.toml, but the file wins "
       "today.",
       "import os\nimport tomllib\n\n\ndef load_settings(path: str) -> dict:\n"
       '    with open(path, "rb") as handle:\n        file_values = tomllib.load(handle)\n'
       '    env = {k[4:].lower(): v for k, v in os.environ.items() if k.startswith("APP_")}\n'
       "    merged = {**env, **file_values}\n    return merged\n",
       "merged = {**env, **file_values}", "merged = {**file_values, **env}",
       'assert load_settings(str(cfg))["port"] == "9000"',
       "AssertionError: assert 8000 == '9000'"),
    _t("api-pagination-counts-last-page-when-partial", "python", "api/paging.py",
       "tests/test_paging.py", "page_count", "test_partial_last_page",
       "The page count drops the last, partially filled page (101 items at 10 per page "
       "should be 11 pages).",
       "def page_count(total: int, per_page: int) -> int:\n"
       '    if per_page <= 0:\n        raise ValueError("per_page must be positive")\n'
       "    return total // per_page\n",
       "    return total // per_page\n", "    return -(-total // per_page)\n",
       "assert page_count(101, 10) == 11", "AssertionError: assert 10 == 11"),
    _t("nlp-word-counts-ignore-case", "python", "nlp/counts.py", "tests/test_counts.py",
       "word_counts", "test_counts_are_case_insensitive",
       "`word_counts` treats 'The' and 'the' as different words. Counting must ignore case.",
       "from collections import Counter\n\n\ndef word_counts(text: str) -> Counter:\n"
       "    counts: Counter = Counter()\n    for word in text.split():\n"
       "        counts[word.strip('.,;:!?')] += 1\n    return counts\n",
       "counts[word.strip('.,;:!?')] += 1", "counts[word.strip('.,;:!?').lower()] += 1",
       'assert word_counts("The cat saw the dog")["the"] == 2',
       "AssertionError: assert 1 == 2"),
    _t("ratelimit-token-bucket-refill-capped", "go", "ratelimit/bucket.go",
       "ratelimit/bucket_test.go", "Bucket", "TestRefillIsCapped",
       "After a long idle period the token bucket holds more tokens than its capacity. "
       "Cap the refill.",
       "package ratelimit\n\nimport \"time\"\n\ntype Bucket struct {\n\tcapacity float64\n"
       "\ttokens   float64\n\trate     float64\n\tlast     time.Time\n}\n\n"
       "func (b *Bucket) refill(now time.Time) {\n\telapsed := now.Sub(b.last).Seconds()\n"
       "\tb.tokens += elapsed * b.rate\n\tb.last = now\n}\n",
       "\tb.tokens += elapsed * b.rate\n",
       "\tb.tokens = min(b.capacity, b.tokens+elapsed*b.rate)\n",
       'if got := b.Available(); got != 5 { t.Fatalf("got %v tokens, want 5", got) }',
       "got 65 tokens, want 5"),
    _t("retry-backoff-respects-max-delay", "go", "retry/backoff.go",
       "retry/backoff_test.go", "Delay", "TestDelayNeverExceedsMax",
       "Exponential backoff grows past MaxDelay after a few attempts. Clamp it.",
       "package retry\n\nimport \"time\"\n\nconst MaxDelay = 30 * time.Second\n\n"
       "func Delay(base time.Duration, attempt int) time.Duration {\n"
       "\treturn base << attempt\n}\n",
       "\treturn base << attempt\n", "\treturn min(base<<attempt, MaxDelay)\n",
       'if d := Delay(time.Second, 10); d != MaxDelay '
       '{ t.Fatalf("delay %v, want %v", d, MaxDelay) }',
       "delay 17m4s, want 30s"),
    _t("semver-compare-numeric-components", "go", "semver/compare.go",
       "semver/compare_test.go", "Compare", "TestCompareNumericParts",
       "Compare(\"1.10.0\", \"1.9.0\") says 1.10.0 is older. Version parts must compare as "
       "numbers.",
       "package semver\n\nimport \"strings\"\n\nfunc Compare(a, b string) int {\n"
       "\tpa, pb := strings.Split(a, \".\"), strings.Split(b, \".\")\n"
       "\tfor i := 0; i < len(pa) && i < len(pb); i++ {\n"
       "\t\tif c := strings.Compare(pa[i], pb[i]); c != 0 {\n\t\t\treturn c\n\t\t}\n\t}\n"
       "\treturn len(pa) - len(pb)\n}\n",
       "strings.Compare(pa[i], pb[i])", "cmp.Compare(atoi(pa[i]), atoi(pb[i]))",
       'if Compare("1.10.0", "1.9.0") != 1 { t.Fatal("1.10.0 should be newer than 1.9.0") }',
       "1.10.0 should be newer than 1.9.0"),
    _t("urlpath-join-dedupes-slashes", "go", "urlpath/join.go", "urlpath/join_test.go",
       "Join", "TestJoinSingleSlash",
       "Join(\"https://api.example.test/\", \"/v1\") returns a double slash. Join must leave "
       "exactly one.",
       "package urlpath\n\nfunc Join(base, elem string) string {\n"
       "\treturn base + \"/\" + elem\n}\n",
       "\treturn base + \"/\" + elem\n",
       "\treturn strings.TrimRight(base, \"/\") + \"/\" + strings.TrimLeft(elem, \"/\")\n",
       'if got := Join("https://h.test/", "/v1"); got != "https://h.test/v1" { t.Fatal(got) }',
       "https://h.test///v1"),
    _t("inventory-reservation-rejects-negative-quantity", "go", "inventory/reserve.go",
       "inventory/reserve_test.go", "Reserve", "TestReserveRejectsNonPositive",
       "Reserving a negative quantity increases available stock. Reject quantities <= 0.",
       "package inventory\n\nimport \"errors\"\n\n"
       "var ErrQuantity = errors.New(\"bad quantity\")\n\n"
       "func (s *Stock) Reserve(qty int) error {\n\tif qty > s.available {\n"
       "\t\treturn ErrQuantity\n\t}\n\ts.available -= qty\n\treturn nil\n}\n",
       "\tif qty > s.available {\n", "\tif qty <= 0 || qty > s.available {\n",
       'if err := s.Reserve(-3); err == nil { t.Fatal("expected an error for -3") }',
       "expected an error for -3"),
    _t("ring-buffer-wraps-head-index", "rust", "src/ring.rs", "tests/ring.rs", "RingBuffer",
       "push_wraps_around",
       "Pushing more items than the ring buffer holds panics with an index out of bounds. "
       "The head must wrap.",
       "pub struct RingBuffer<T> {\n    buf: Vec<Option<T>>,\n    head: usize,\n}\n\n"
       "impl<T> RingBuffer<T> {\n    pub fn push(&mut self, item: T) {\n"
       "        self.buf[self.head] = Some(item);\n        self.head = self.head + 1;\n"
       "    }\n}\n",
       "self.head = self.head + 1;", "self.head = (self.head + 1) % self.buf.len();",
       "let mut r = RingBuffer::with_capacity(2); r.push(1); r.push(2); r.push(3); "
       "assert_eq!(r.to_vec(), vec![2, 3]);",
       "index out of bounds: the len is 2 but the index is 2"),
    _t("lexer-handles-escaped-quotes", "rust", "src/lexer.rs", "tests/lexer.rs",
       "read_string", "string_with_escaped_quote",
       "A string literal containing an escaped quote (\\\") ends early in the lexer.",
       "pub fn read_string(chars: &mut std::str::Chars) -> String {\n"
       "    let mut out = String::new();\n    let mut escaped = false;\n"
       "    while let Some(c) = chars.next() {\n        match c {\n"
       "            '\"' => break,\n            '\\\\' => escaped = true,\n"
       "            _ => { out.push(c); escaped = false; }\n        }\n    }\n    out\n}\n",
       "            '\"' => break,\n", "            '\"' if !escaped => break,\n",
       'assert_eq!(lex(r#""say \\"hi\\"""#), vec![Token::Str("say \\"hi\\"".into())]);',
       "assertion `left == right` failed\n  left: [Str(\"say \\\\\")]\n"
       " right: [Str(\"say \\\"hi\\\"\")]"),
    _t("matrix-transpose-non-square", "rust", "src/matrix.rs", "tests/matrix.rs",
       "transpose", "transpose_rectangular",
       "Transposing a 2x3 matrix returns a 2x3 matrix with garbage. The result must be 3x2.",
       "impl Matrix {\n    pub fn transpose(&self) -> Matrix {\n"
       "        let mut out = Matrix::zeros(self.rows, self.cols);\n"
       "        for r in 0..self.rows {\n            for c in 0..self.cols {\n"
       "                out.set(c, r, self.get(r, c));\n            }\n        }\n"
       "        out\n    }\n}\n",
       "Matrix::zeros(self.rows, self.cols)", "Matrix::zeros(self.cols, self.rows)",
       "assert_eq!(m.transpose().shape(), (3, 2));",
       "assertion `left == right` failed\n  left: (2, 3)\n right: (3, 2)"),
    _t("duration-parser-accepts-hours", "rust", "src/duration.rs", "tests/duration.rs",
       "parse_duration", "parses_hours",
       "`parse_duration(\"2h\")` returns an error; hours are a valid unit.",
       "pub fn unit_seconds(unit: &str) -> Option<u64> {\n    Some(match unit {\n"
       "        \"s\" => 1,\n        \"m\" => 60,\n        _ => return None,\n    })\n}\n",
       '        "m" => 60,\n', '        "m" => 60,\n        "h" => 3600,\n',
       'assert_eq!(parse_duration("2h").unwrap(), 7200);',
       "called `Result::unwrap()` on an `Err` value: UnknownUnit(\"h\")"),
    _t("math-clamp-bounds-swapped", "typescript", "src/math/clamp.ts",
       "src/math/clamp.test.ts", "clamp", "clamps values above the range",
       "`clamp(15, 0, 10)` returns 0. The min/max calls are swapped.",
       "export function clamp(value: number, lo: number, hi: number): number {\n"
       "  return Math.min(lo, Math.max(hi, value));\n}\n",
       "Math.min(lo, Math.max(hi, value))", "Math.max(lo, Math.min(hi, value))",
       "expect(clamp(15, 0, 10)).toBe(10);", "Expected: 10\n    Received: 0"),
    _t("query-string-encodes-reserved-characters", "typescript", "src/url/query.ts",
       "src/url/query.test.ts", "toQuery", "encodes spaces and ampersands",
       "`toQuery({q: \"a&b c\"})` produces a broken query string. Keys and values must be "
       "URL-encoded.",
       "export function toQuery(params: Record<string, string>): string {\n"
       "  return Object.entries(params)\n    .map(([k, v]) => `${k}=${v}`)\n    .join(\"&\");\n}\n",
       "    .map(([k, v]) => `${k}=${v}`)\n",
       "    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)\n",
       'expect(toQuery({ q: "a&b c" })).toBe("q=a%26b%20c");',
       'Expected: "q=a%26b%20c"\n    Received: "q=a&b c"'),
    _t("deep-merge-replaces-arrays-not-concat", "typescript", "src/merge.ts",
       "src/merge.test.ts", "deepMerge", "replaces arrays instead of concatenating",
       "deepMerge concatenates arrays, so overriding `plugins: []` keeps the defaults. "
       "Arrays from the override must replace the base.",
       "export function deepMerge(base: Obj, override: Obj): Obj {\n"
       "  const out: Obj = { ...base };\n  for (const [key, value] of Object.entries(override)) {\n"
       "    if (Array.isArray(value)) {\n      out[key] = [...(out[key] ?? []), ...value];\n"
       "    } else {\n      out[key] = value;\n    }\n  }\n  return out;\n}\n",
       "out[key] = [...(out[key] ?? []), ...value];", "out[key] = [...value];",
       "expect(deepMerge({ p: [1] }, { p: [] }).p).toEqual([]);",
       "Expected: []\n    Received: [1]"),
    _t("todo-store-active-tab-show-done-items", "typescript", "src/todos/filter.ts",
       "src/todos/filter.test.ts", "activeTodos", "returns only open items",
       "The 'Active' tab shows completed todos. `activeTodos` must return open items only.",
       "export function activeTodos(items: Todo[]): Todo[] {\n"
       "  return items.filter((t) => t.done);\n}\n",
       "items.filter((t) => t.done)", "items.filter((t) => !t.done)",
       'expect(activeTodos(sample).map((t) => t.id)).toEqual(["a", "c"]);',
       'Expected: ["a", "c"]\n    Received: ["b"]'),
    _t("currency-format-negative-amounts", "typescript", "src/format/currency.ts",
       "src/format/currency.test.ts", "formatUsd", "formats refunds with a leading minus",
       "Refunds render as `$-4.50`; they should render as `-$4.50`.",
       "export function formatUsd(amount: number): string {\n"
       "  return `$${amount.toFixed(2)}`;\n}\n",
       "  return `$${amount.toFixed(2)}`;\n",
       "  const text = `$${Math.abs(amount).toFixed(2)}`;\n"
       "  return amount < 0 ? `-${text}` : text;\n",
       'expect(formatUsd(-4.5)).toBe("-$4.50");',
       'Expected: "-$4.50"\n    Received: "$-4.50"'),
    _t("bounded-stack-peek-returns-top", "java", "src/main/java/org/example/BoundedStack.java",
       "src/test/java/org/example/BoundedStackTest.java", "BoundedStack", "peekReturnsTop",
       "BoundedStack.peek() returns null (or throws) instead of the top element.",
       "package org.example;\n\npublic final class BoundedStack<T> {\n"
       "    private final Object[] items;\n    private int size;\n\n"
       "    @SuppressWarnings(\"unchecked\")\n    public T peek() {\n"
       "        return (T) items[size];\n    }\n}\n",
       "return (T) items[size];", "return (T) items[size - 1];",
       "assertEquals(2, stack.peek());",
       "expected: <2> but was: <null>"),
    _t("interval-merge-joins-touching-ranges", "java",
       "src/main/java/org/example/IntervalMerger.java",
       "src/test/java/org/example/IntervalMergerTest.java", "IntervalMerger",
       "mergesTouchingIntervals",
       "[1,3] and [3,5] should merge into [1,5]; touching intervals stay separate today.",
       "package org.example;\n\nimport java.util.ArrayList;\nimport java.util.List;\n\n"
       "public final class IntervalMerger {\n"
       "    public static List<Interval> merge(List<Interval> sorted) {\n"
       "        List<Interval> out = new ArrayList<>();\n        for (Interval next : sorted) {\n"
       "            Interval current = out.isEmpty() ? null : out.get(out.size() - 1);\n"
       "            if (current != null && next.start() < current.end()) {\n"
       "                out.set(out.size() - 1, current.extendTo(next.end()));\n"
       "            } else {\n                out.add(next);\n            }\n        }\n"
       "        return out;\n    }\n}\n",
       "next.start() < current.end()", "next.start() <= current.end()",
       "assertEquals(List.of(new Interval(1, 5)), merge(List.of(new Interval(1, 3), "
       "new Interval(3, 5))));",
       "expected: <[Interval[1, 5]]> but was: <[Interval[1, 3], Interval[3, 5]]>"),
    _t("calendar-leap-year-century-rule", "java", "src/main/java/org/example/Calendars.java",
       "src/test/java/org/example/CalendarsTest.java", "Calendars", "centuriesAreNotLeap",
       "isLeapYear(1900) returns true. Apply the century and 400-year rules.",
       "package org.example;\n\npublic final class Calendars {\n"
       "    public static boolean isLeapYear(int year) {\n        return year % 4 == 0;\n"
       "    }\n}\n",
       "return year % 4 == 0;", "return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);",
       "assertFalse(Calendars.isLeapYear(1900));", "expected: <false> but was: <true>"),
    _t("text-wrap-counts-separating-space", "java", "src/main/java/org/example/TextWrap.java",
       "src/test/java/org/example/TextWrapTest.java", "TextWrap", "wrapsAtExactWidth",
       "Wrapped lines can be one character longer than the width because the space between "
       "words is not counted.",
       "package org.example;\n\npublic final class TextWrap {\n"
       "    static boolean overflows(StringBuilder line, String word, int width) {\n"
       "        return line.length() + word.length() > width;\n    }\n}\n",
       "return line.length() + word.length() > width;",
       "return line.length() > 0 && line.length() + 1 + word.length() > width;",
       'assertEquals(List.of("ab cd", "ef"), TextWrap.wrap("ab cd ef", 5));',
       "expected: <[ab cd, ef]> but was: <[ab cd ef]>"),
    _t("roman-numerals-subtractive-forms", "ruby", "lib/roman.rb", "spec/roman_spec.rb",
       "to_roman", "uses subtractive notation",
       "to_roman(1994) returns MDCCCCLXXXXIIII. Use subtractive forms (CM, XC, IV, ...).",
       "module Roman\n  MAP = { 1000 => \"M\", 500 => \"D\", 100 => \"C\", 50 => \"L\", "
       "10 => \"X\", 5 => \"V\", 1 => \"I\" }.freeze\n\n  def self.to_roman(n)\n"
       "    MAP.reduce(+\"\") do |out, (value, letters)|\n      count, n = n.divmod(value)\n"
       "      out << letters * count\n    end\n  end\nend\n",
       '10 => "X", 5 => "V", 1 => "I" }',
       '90 => "XC", 10 => "X", 9 => "IX", 5 => "V", 4 => "IV", 1 => "I" }',
       'expect(Roman.to_roman(1994)).to eq("MCMXCIV")',
       'expected: "MCMXCIV"\n            got: "MDCCCCLXXXXIIII"'),
    _t("markdown-heading-anchor-ids", "ruby", "lib/anchors.rb", "spec/anchors_spec.rb",
       "anchor_for", "drops punctuation from anchors",
       "Heading anchors keep punctuation (`what's-new?`). GitHub-style ids drop it.",
       "module Anchors\n  def self.anchor_for(title)\n    title.downcase.tr(\" \", \"-\")\n"
       "  end\nend\n",
       'title.downcase.tr(" ", "-")',
       'title.downcase.gsub(/[^a-z0-9\\s-]/, "").strip.tr(" ", "-")',
       "expect(Anchors.anchor_for(\"What's New?\")).to eq(\"whats-new\")",
       "expected: \"whats-new\"\n            got: \"what's-new?\""),
    _t("shopping-cart-discount-applied-once", "ruby", "lib/cart.rb", "spec/cart_spec.rb",
       "total", "applies the discount once",
       "A 10% discount code takes 19% off the cart: the discount is applied twice.",
       "class Cart\n  def total(discount = 0)\n"
       "    @items.sum { |i| i.price * (1 - discount) } * (1 - discount)\n  end\nend\n",
       "@items.sum { |i| i.price * (1 - discount) } * (1 - discount)",
       "@items.sum(&:price) * (1 - discount)",
       "expect(cart.total(0.1)).to eq(90.0)", "expected: 90.0\n            got: 81.0"),
    _t("strutil-trim-empty-input", "c", "src/strutil.c", "tests/test_strutil.c", "str_trim",
       "test_trim_blank_string",
       "str_trim reads before the start of the buffer when the string is all spaces.",
       "#include <ctype.h>\n#include <string.h>\n\nchar *str_trim(char *s) {\n"
       "    while (isspace((unsigned char)*s)) s++;\n    char *end = s + strlen(s) - 1;\n"
       "    while (isspace((unsigned char)*end)) end--;\n    end[1] = '\\0';\n    return s;\n}\n",
       "    while (isspace((unsigned char)*end)) end--;\n",
       "    while (end >= s && isspace((unsigned char)*end)) end--;\n",
       'ASSERT_STREQ("", str_trim(buf));',
       "AddressSanitizer: stack-buffer-underflow on address 0x7ffd3a1c4a5f"),
    _t("crc32-table-uses-right-shift", "c", "src/crc32.c", "tests/test_crc32.c",
       "crc32_init", "test_crc32_known_vector",
       "crc32(\"123456789\") returns 0x5ab2ecb4 instead of the standard 0xcbf43926.",
       "#include <stdint.h>\n\nstatic uint32_t table[256];\n\nvoid crc32_init(void) {\n"
       "    for (uint32_t i = 0; i < 256; i++) {\n        uint32_t c = i;\n"
       "        for (int k = 0; k < 8; k++)\n"
       "            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c << 1;\n"
       "        table[i] = c;\n    }\n}\n",
       ": c << 1;", ": c >> 1;",
       'ASSERT_EQ_HEX(0xcbf43926u, crc32((const uint8_t *)"123456789", 9));',
       "expected 0xcbf43926, got 0x5ab2ecb4"),
    _t("circular-queue-detects-full-after-wrap", "c", "src/queue.c", "tests/test_queue.c",
       "queue_full", "test_full_after_wrap",
       "queue_full() misses the full state once the tail has wrapped around.",
       "#include \"queue.h\"\n\nint queue_full(const queue_t *q) {\n"
       "    return (q->tail + 1) == q->head;\n}\n",
       "(q->tail + 1) == q->head", "(q->tail + 1) % q->cap == q->head",
       "ASSERT_TRUE(queue_full(&q));", "expected queue_full(&q) to be true"),
)
# fmt: on
