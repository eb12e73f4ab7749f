/* One pass over every string of a JSON-like value: may redaction or cleaning change it?
 *
 * `survey(value, record, named, depth)` walks dicts and lists (keys too) and returns a bit
 * set: SECRET when redaction has to look (a trigger of the prefilter, a character that may
 * hide one, a value that is not plain JSON or, with `record`, not of the IM record shape
 * `transforms.redact._texts` reads), CLEAN when `transforms.cleaning.clean_value` may change
 * something (a control, format or other invisible character; nesting near its limit).
 * Both answers are conservative: a clear bit is a guarantee, a set bit only sends the value
 * to the Python code, which decides. What each trigger below stands for is the regex branch
 * of the same name in `transforms/redaction/patterns.py`; each check accepts at least what
 * its branch accepts (tests/test_redaction_survey.py compares them). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SECRET 1
#define CLEAN 2
#define BOTH (SECRET | CLEAN)
/* clean_value refuses containers 254 levels down and orjson the same: below this depth the
 * survey gives up (both bits) and the Python code raises or walks as it always did */
#define DEEP 250

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
} Text;

/* The checks are inlined into one scan loop per string kind, where `kind` is a constant and
 * every character read is a plain array access. */
#define INLINE static inline __attribute__((always_inline))

/* per character below 256: what it may start (a trigger check) or mean */
#define ANCHOR 1
#define HIDES 2   /* non-printable: may hide a secret (`text.may_hide`), SECRET */
#define STRIPS 4  /* cleaning removes or rewrites it: CLEAN */
static unsigned char CLASS[256];
/* For an anchor: the ASCII characters that may come right before / after it in some trigger
 * (bit c of a 128-bit set); an anchor with neither neighbour starts no trigger. */
static uint64_t BEFORE[128][2], AFTER[128][2];

INLINE Py_UCS4
at(const Text *t, Py_ssize_t j)
{
    return (j >= 0 && j < t->n) ? PyUnicode_READ(t->kind, t->data, j) : 0;
}

INLINE Py_UCS4
lower(Py_UCS4 c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/* `s` (ASCII) at position j, exactly / ignoring ASCII case (`s` lower case) */
INLINE int
eq(const Text *t, Py_ssize_t j, const char *s)
{
    for (Py_ssize_t k = 0; s[k]; k++) {
        if (at(t, j + k) != (Py_UCS4)(unsigned char)s[k]) {
            return 0;
        }
    }
    return j >= 0;
}

INLINE int
ieq(const Text *t, Py_ssize_t j, const char *s)
{
    for (Py_ssize_t k = 0; s[k]; k++) {
        if (lower(at(t, j + k)) != (Py_UCS4)(unsigned char)s[k]) {
            return 0;
        }
    }
    return j >= 0;
}

INLINE int
in_set(Py_UCS4 c, const char *set)
{
    for (const char *p = set; *p; p++) {
        if ((Py_UCS4)(unsigned char)*p == c) {
            return 1;
        }
    }
    return 0;
}

INLINE int
alnum(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

INLINE int
blank(Py_UCS4 c)
{
    return c == ' ' || c == '\t';
}

/* _OP at j: (\\{0,3}["'])? (]after a quote)? [ \t]{0,3} then `=` or `:` not before `:` */
INLINE int
op_at(const Text *t, Py_ssize_t j)
{
    Py_ssize_t k = j, m = j;
    while (m - j < 3 && at(t, m) == '\\') {
        m++;
    }
    if (at(t, m) == '"' || at(t, m) == '\'') {
        k = m + 1;
    }
    if ((at(t, k - 1) == '"' || at(t, k - 1) == '\'') && at(t, k) == ']') {
        k++;
    }
    for (int c = 0; c < 3 && blank(at(t, k)); c++) {
        k++;
    }
    Py_UCS4 c = at(t, k);
    return c == '=' || (c == ':' && at(t, k + 1) != ':');
}

/* a name ending at `end` (exclusive) and then the _OP, or after a `-` (at `dash`) a blank */
INLINE int
assigned(const Text *t, Py_ssize_t end, Py_ssize_t dash)
{
    return op_at(t, end) || (at(t, dash) == '-' && blank(at(t, end)));
}

/* Where a `[^\s...]` run of _COLON ends: at whitespace, but not at a newline, tab or carriage
 * return, which a serialised value (`unique_info`, the tools) shows as two characters. */
INLINE int
url_space(Py_UCS4 c)
{
    return c != '\n' && c != '\t' && c != '\r' && Py_UNICODE_ISSPACE(c);
}

/* _COLON: `://` userinfo with a password, a Telegram bot token after the `:` at i. A run that
 * reaches the end of the string may go on in a serialised value (`"://host","k":"x@`). */
INLINE int
colon_at(const Text *t, Py_ssize_t i)
{
    if (at(t, i + 1) == '/' && at(t, i + 2) == '/') {
        Py_ssize_t j = i + 3, run = 0;
        while (j < t->n) {
            Py_UCS4 c = at(t, j);
            if (c == '/' || c == '@' || c == ':' || url_space(c)) {
                break;
            }
            j++;
            run++;
        }
        if (run <= 256 && j == t->n) {
            return 1;
        }
        if (run <= 256 && at(t, j) == ':') {
            j++;
            run = 0;
            while (j < t->n) {
                Py_UCS4 c = at(t, j);
                if (c == '/' || c == '@' || url_space(c)) {
                    break;
                }
                j++;
                run++;
            }
            if (run <= 256 && (j == t->n || at(t, j) == '@')) {
                return 1;
            }
        }
    }
    if (at(t, i + 1) == 'A' && at(t, i + 2) == 'A') {
        for (Py_ssize_t k = 0; k < 33; k++) {
            Py_UCS4 c = at(t, i + 3 + k);
            if (!(alnum(c) || c == '_' || c == '-')) {
                return 0;
            }
        }
        return 1;
    }
    return 0;
}

/* whether a trigger of the prefilter may match around the anchor character at i */
INLINE int
trigger_at(const Text *t, Py_ssize_t i, Py_UCS4 c)
{
    switch (c) {
    case 'J':
        return eq(t, i - 2, "eyJ");
    case 'I':
        return (at(t, i - 2) == 'A' && in_set(at(t, i - 1), "KS") && at(t, i + 1) == 'A') ||
               (at(t, i - 1) == 'A' && at(t, i + 1) == 'z' && at(t, i + 2) == 'a');
    case 'V':
        return eq(t, i - 3, "PRIVATE");
    case 'k':
    case 'K':
        if (ieq(t, i - 2, "token") && assigned(t, i + 3, i - 3)) {
            return 1;
        }
        if (ieq(t, i, "key") && assigned(t, i + 3, i - 1)) {
            return 1;
        }
        if (c == 'k') {
            Py_UCS4 before = at(t, i - 1);
            if (before == 's' && at(t, i + 1) == '-') {
                Py_UCS4 c2 = at(t, i - 2);
                if (!(alnum(c2) || c2 == '_' || c2 == '-')) {
                    return 1;
                }
            }
            if ((before == 's' || before == 'r') && eq(t, i + 1, "_live_")) {
                return 1;
            }
            if (eq(t, i - 4, "slack.com")) {
                return 1;
            }
        }
        return 0;
    case 'c':
    case 'C':
        if (ieq(t, i - 2, "secret") && assigned(t, i + 4, i - 3)) {
            return 1;
        }
        return c == 'C' && eq(t, i - 7, "LS0tLS1C");
    case 'w':
    case 'W':
        if (!ieq(t, i - 4, "passw")) {
            return 0;
        }
        if (lower(at(t, i + 1)) == 'd' && assigned(t, i + 2, i - 5)) {
            return 1;
        }
        return ieq(t, i + 1, "ord") && assigned(t, i + 4, i - 5);
    case 'z':
    case 'Z':
        return ieq(t, i - 7, "authorization") && op_at(t, i + 6);
    case '_':
        if (eq(t, i - 3, "gh") && in_set(at(t, i - 1), "pousr")) {
            return 1;
        }
        if (eq(t, i - 4, "_pat_")) {
            return 1;
        }
        if (at(t, i - 2) == 'h' && at(t, i - 1) == 'f' && !alnum(at(t, i - 3))) {
            return 1;
        }
        return ieq(t, i + 1, "pass") && op_at(t, i + 5);
    case '-':
        return eq(t, i - 5, "glpat-") || (eq(t, i - 4, "xox") && in_set(at(t, i - 1), "abposr"));
    case ':':
        return colon_at(t, i);
    case '\\': {
        if (at(t, i + 1) != 'u') {
            return 0;
        }
        Py_UCS4 a = at(t, i + 2), b = at(t, i + 3), d = at(t, i + 4);
        return (a == '0' && b == '0') || (a == '2' && b == '0') || a == 'f' || a == 'F' ||
               (a == '0' && b == '6' && d == '1') || (a == '1' && b == '8' && d == '0');
    }
    case 'G':
        return at(t, i - 1) == 'S' && at(t, i + 1) == '.';
    case '=':
        return (in_set(at(t, i - 4), "?&;") && eq(t, i - 3, "sig")) || eq(t, i - 10, "-Signature");
    case 'h': {
        if (!(in_set(at(t, i - 4), "\"'") && eq(t, i - 3, "auth"))) {
            return 0;
        }
        Py_ssize_t j = i + 1;
        for (int k = 0; k < 3 && at(t, j) == '\\'; k++) {
            j++;
        }
        if (!(at(t, j) == '"' || at(t, j) == '\'')) {
            return 0;
        }
        j++;
        for (int k = 0; k < 3 && blank(at(t, j)); k++) {
            j++;
        }
        return at(t, j) == ':';
    }
    case '\t': /* serialised: `\t` + `oken=` reads `token=` */
        return ieq(t, i + 1, "oken") && op_at(t, i + 5);
    case '\r': /* serialised: `\r` + `k_live_` */
        return eq(t, i + 1, "k_live_");
    case 'q':
        return eq(t, i - 3, "mysql");
    case 'b':
        return eq(t, i + 1, "ase64") ||
               (at(t, i + 1) == '6' && at(t, i + 2) == '4' && !alnum(at(t, i - 1))) ||
               eq(t, i - 3, "atob") || eq(t, i - 6, "mariadb");
    case 'B':
        return eq(t, i + 1, "ase64") || eq(t, i + 1, "ASE64") ||
               (at(t, i + 1) == '6' && at(t, i + 2) == '4' && !alnum(at(t, i - 1)));
    default:
        return 0;
    }
}

/* Cleaning (`cleaning._UNWANTED`, `_SEPARATOR`) touches only non-printable characters:
 * controls, format characters, noncharacters, surrogates, U+2028 / U+2029. Of the other
 * non-printable ones, spaces and private-use characters stay. */
static int
strips(Py_UCS4 c)
{
    if (c < 0x20) {
        return c != '\t' && c != '\n' && c != '\r';
    }
    if (c < 0x7f) {
        return 0;
    }
    if (c <= 0x9f) {
        return 1;
    }
    if (Py_UNICODE_ISPRINTABLE(c)) {
        return 0;
    }
    if (c == 0x2028 || c == 0x2029) {
        return 1;
    }
    if (Py_UNICODE_ISSPACE(c)) {
        return 0;
    }
    return !((c >= 0xE000 && c <= 0xF8FF) || (c >= 0xF0000 && c <= 0xFFFFD) ||
             (c >= 0x100000 && c <= 0x10FFFD));
}

static void
allow(uint64_t set[128][2], const char *anchors, const char *neighbours)
{
    for (const char *a = anchors; *a; a++) {
        for (const char *c = neighbours; *c; c++) {
            set[(unsigned char)*a][(unsigned char)*c >> 6] |= (uint64_t)1 << ((unsigned char)*c & 63);
        }
    }
}

INLINE int
has(const uint64_t set[2], Py_UCS4 c)
{
    return c < 128 && ((set[c >> 6] >> (c & 63)) & 1);
}

static void
fill_neighbours(void)
{
    allow(BEFORE, "J", "y");
    allow(BEFORE, "I", "KSA");
    allow(BEFORE, "V", "I");
    allow(BEFORE, "kK", "oOsrc"); /* tok-en, sk-, sk_live_ / rk_live_, slack */
    allow(AFTER, "kK", "eE");     /* key */
    allow(BEFORE, "cC", "eE1");   /* sec-ret, LS0tLS1-C */
    allow(BEFORE, "wW", "sS");
    allow(BEFORE, "zZ", "iI");
    allow(BEFORE, "_", "pousrtf"); /* gh?_, _pat_, hf_ */
    allow(AFTER, "_", "pP");       /* _pass */
    allow(BEFORE, "-", "tabposr"); /* glpat-, xox?- */
    allow(AFTER, ":", "/A");
    allow(AFTER, "\\", "u");
    allow(BEFORE, "G", "S");
    allow(BEFORE, "=", "ge");
    allow(BEFORE, "h", "t");
    allow(BEFORE, "q", "s");
    allow(AFTER, "b", "a6");
    allow(BEFORE, "b", "od"); /* atob, mariadb */
    allow(AFTER, "B", "aA6");
    allow(AFTER, "\t", "oO");
    allow(AFTER, "\r", "k");
}

static void
fill_classes(void)
{
    fill_neighbours();
    for (Py_UCS4 c = 0; c < 256; c++) {
        unsigned char k = 0;
        if ((strchr("JIVkKcCwWzZ_-:\\G=hqbB", (int)c) != NULL && c != 0) || c == '\t' ||
            c == '\r') {
            k |= ANCHOR;
        }
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f ||
            (c >= 0x80 && !Py_UNICODE_ISPRINTABLE(c))) {
            k |= HIDES;
        }
        if (strips(c)) {
            k |= STRIPS;
        }
        CLASS[c] = k;
    }
}

/* One trigger check per kind, out of line: inlined, its reads around `i` would each become a
 * pointer the scan loop below advances with it. */
#define TRIGGER(name, KIND)                                                                   \
    static __attribute__((noinline)) int name(const void *data, Py_ssize_t n, Py_ssize_t i, \
                                               Py_UCS4 c)                                    \
    {                                                                                         \
        const Text t = {KIND, data, n};                                                       \
        return trigger_at(&t, i, c);                                                          \
    }
TRIGGER(trigger_1, PyUnicode_1BYTE_KIND)
TRIGGER(trigger_2, PyUnicode_2BYTE_KIND)
TRIGGER(trigger_4, PyUnicode_4BYTE_KIND)

/* The bits one string of `kind` sets; stops once every bit of `wanted` is set. */
INLINE int
scan_kind(const void *data, Py_ssize_t n, int kind, int wanted,
          int (*trigger)(const void *, Py_ssize_t, Py_ssize_t, Py_UCS4))
{
    int flags = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        unsigned char k;
        if (c < 256) {
            k = CLASS[c];
            if (!k) {
                continue;
            }
            if (k & HIDES) {
                flags |= SECRET | ((k & STRIPS) ? CLEAN : 0);
            }
            else if (!(flags & SECRET) &&
                     ((i > 0 && has(BEFORE[c], PyUnicode_READ(kind, data, i - 1))) ||
                      (i + 1 < n && has(AFTER[c], PyUnicode_READ(kind, data, i + 1)))) &&
                     trigger(data, n, i, c)) {
                flags |= SECRET;
            }
        }
        else if (!Py_UNICODE_ISPRINTABLE(c)) {
            flags |= SECRET | (strips(c) ? CLEAN : 0);
        }
        else {
            continue;
        }
        if ((flags & wanted) == wanted) {
            break;
        }
    }
    return flags;
}

static int
scan_text(PyObject *text, int wanted)
{
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return scan_kind(data, n, PyUnicode_1BYTE_KIND, wanted, trigger_1);
    case PyUnicode_2BYTE_KIND:
        return scan_kind(data, n, PyUnicode_2BYTE_KIND, wanted, trigger_2);
    default:
        return scan_kind(data, n, PyUnicode_4BYTE_KIND, wanted, trigger_4);
    }
}

/* In a serialised object, a key is followed by `":`: a key that ends with a secret's name
 * (trailing backslashes aside, which JSON doubles) is an assignment to it. */
static int
key_assigns(PyObject *key)
{
    Text t = {PyUnicode_KIND(key), PyUnicode_DATA(key), PyUnicode_GET_LENGTH(key)};
    Py_ssize_t end = t.n;
    while (end > 0 && at(&t, end - 1) == '\\') {
        end--;
    }
    switch (lower(at(&t, end - 1))) { /* the names' last letters */
    case 'n': /* also a tab and `oken`, serialised `\token` */
        return (end >= 5 && (ieq(&t, end - 5, "token") ||
                             (at(&t, end - 5) == '\t' && ieq(&t, end - 4, "oken")))) ||
               (end >= 13 && ieq(&t, end - 13, "authorization"));
    case 'y':
        return end >= 3 && ieq(&t, end - 3, "key");
    case 't':
        return end >= 6 && ieq(&t, end - 6, "secret");
    case 'd':
        return (end >= 6 && ieq(&t, end - 6, "passwd")) ||
               (end >= 8 && ieq(&t, end - 8, "password"));
    case 's':
        return end >= 5 && ieq(&t, end - 5, "_pass");
    case 'h':
        return end >= 4 && ieq(&t, end - 4, "auth");
    default:
        return 0;
    }
}

/* `transforms.redact._SECRET_WORD`: a string under such a key is judged as assigned to it */
static int
secret_word(PyObject *key)
{
    Text t = {PyUnicode_KIND(key), PyUnicode_DATA(key), PyUnicode_GET_LENGTH(key)};
    for (Py_ssize_t i = 0; i < t.n; i++) {
        Py_UCS4 c = lower(at(&t, i));
        if ((c == 'k' || c == 't' || c == 's' || c == 'p') &&
            (ieq(&t, i, "key") || ieq(&t, i, "token") || ieq(&t, i, "secret") ||
             ieq(&t, i, "pass"))) {
            return 1;
        }
    }
    return 0;
}

typedef struct {
    int wanted;
    int named;
} Survey;

static int walk(PyObject *value, int depth, const Survey *s);

static int
walk_string(PyObject *value, const Survey *s)
{
    int flags = PyUnicode_CheckExact(value) ? 0 : SECRET; /* a subclass: the Python code looks */
    if (PyUnicode_READY(value) < 0) {
        PyErr_Clear();
        return BOTH;
    }
    return flags | scan_text(value, s->wanted);
}

static int
walk(PyObject *value, int depth, const Survey *s)
{
    if (PyUnicode_Check(value)) {
        return walk_string(value, s);
    }
    if (value == Py_None || PyBool_Check(value) || PyFloat_CheckExact(value)) {
        return 0;
    }
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow < 0) {
            return SECRET; /* below int64: orjson refuses it */
        }
        if (overflow > 0) {
            PyLong_AsUnsignedLongLong(value);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                return SECRET;
            }
        }
        return 0;
    }
    int flags = 0;
    if (PyDict_Check(value) || PyList_Check(value)) {
        if (depth >= DEEP) {
            return BOTH;
        }
        if (!PyDict_CheckExact(value) && !PyList_CheckExact(value)) {
            flags |= SECRET;
        }
    }
    else {
        return SECRET; /* not plain JSON (a tuple, a set, an object): redaction looks */
    }
    if (PyList_Check(value)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            flags |= walk(PyList_GET_ITEM(value, i), depth + 1, s);
            if ((flags & s->wanted) == s->wanted) {
                break;
            }
        }
        return flags;
    }
    Py_ssize_t position = 0;
    PyObject *key, *item;
    while (PyDict_Next(value, &position, &key, &item)) {
        if (PyUnicode_Check(key)) {
            flags |= walk_string(key, s);
            if (!(flags & SECRET) && key_assigns(key)) {
                flags |= SECRET;
            }
            if (s->named && !(flags & SECRET) && PyUnicode_Check(item) && secret_word(key)) {
                flags |= SECRET;
            }
        }
        else {
            flags |= SECRET; /* orjson refuses it */
        }
        flags |= walk(item, depth + 1, s);
        if ((flags & s->wanted) == s->wanted) {
            break;
        }
    }
    return flags;
}

static PyObject *K_MESSAGES, *K_META_INFO, *K_TOOL_CALLS, *K_FUNCTION, *K_TEXTS[3];

/* `dict[key]` or NULL (an error while looking: treated as absent, the walk then decides) */
static PyObject *
item(PyObject *dict, PyObject *key)
{
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value == NULL) {
        PyErr_Clear();
    }
    return value;
}

/* The IM shape `transforms.redact._texts` reads; anything else sends the record to it. */
static int
im_shape(PyObject *record)
{
    if (!PyDict_CheckExact(record)) {
        return 0;
    }
    PyObject *messages = item(record, K_MESSAGES);
    if (messages == NULL || !PyList_CheckExact(messages)) {
        return 0;
    }
    PyObject *meta = item(record, K_META_INFO);
    if (meta != NULL && !PyDict_CheckExact(meta)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *message = PyList_GET_ITEM(messages, i);
        if (!PyDict_CheckExact(message)) {
            return 0;
        }
        for (int k = 0; k < 3; k++) {
            PyObject *text = item(message, K_TEXTS[k]);
            if (text != NULL && text != Py_None && !PyUnicode_CheckExact(text)) {
                return 0;
            }
        }
        PyObject *calls = item(message, K_TOOL_CALLS);
        if (calls == NULL || calls == Py_None) {
            continue;
        }
        if (!PyList_CheckExact(calls)) {
            return 0;
        }
        for (Py_ssize_t c = 0; c < PyList_GET_SIZE(calls); c++) {
            PyObject *call = PyList_GET_ITEM(calls, c);
            if (!PyDict_CheckExact(call)) {
                return 0;
            }
            PyObject *function = item(call, K_FUNCTION);
            if (function != NULL && !PyDict_CheckExact(function)) {
                return 0;
            }
        }
    }
    return 1;
}

static PyObject *
survey(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "survey(value, record, named, depth)");
        return NULL;
    }
    int record = PyObject_IsTrue(args[1]);
    int named = PyObject_IsTrue(args[2]);
    long depth = PyLong_AsLong(args[3]);
    if (record < 0 || named < 0 || (depth == -1 && PyErr_Occurred())) {
        return NULL;
    }
    Survey s = {BOTH, named};
    int flags = (record && !im_shape(args[0])) ? SECRET : 0;
    flags |= walk(args[0], (int)depth, &s);
    return PyLong_FromLong(flags);
}

static PyMethodDef methods[] = {
    {"survey", (PyCFunction)(void (*)(void))survey, METH_FASTCALL,
     "survey(value, record, named, depth) -> bits: 1 redaction has to look, 2 cleaning may "
     "change something (see transforms/redaction/survey.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "transforms.redaction._survey", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__survey(void)
{
    fill_classes();
    K_MESSAGES = PyUnicode_InternFromString("messages");
    K_META_INFO = PyUnicode_InternFromString("meta_info");
    K_TOOL_CALLS = PyUnicode_InternFromString("tool_calls");
    K_FUNCTION = PyUnicode_InternFromString("function");
    K_TEXTS[0] = PyUnicode_InternFromString("content");
    K_TEXTS[1] = PyUnicode_InternFromString("reasoning_content");
    K_TEXTS[2] = PyUnicode_InternFromString("role");
    if (!K_MESSAGES || !K_META_INFO || !K_TOOL_CALLS || !K_FUNCTION || !K_TEXTS[0] ||
        !K_TEXTS[1] || !K_TEXTS[2]) {
        return NULL;
    }
    return PyModule_Create(&module);
}
