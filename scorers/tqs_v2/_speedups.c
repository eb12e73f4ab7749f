/* The scorer's two innermost loops, in C: character entropies (OEC) and hint scans.
 *
 * entropies(texts, limit) -> list[float]: for each str, the Shannon entropy in bits per
 * character of its first `limit` characters, computed as log2(n) - sum(c * log2(c)) / n
 * over the character counts c. The Python fallback (diagnostics.py) computes the same
 * formula; the counts are exact, so the two agree to the last bits of a double.
 *
 * One-byte (Latin-1) strings are counted in a 256-entry table; wider strings are copied,
 * sorted and counted by runs (a prefix is at most `limit` characters long).
 *
 * contains_any(text, hints, ignore_case) -> bool: whether one of the ASCII `hints` occurs in
 * `text` (in `text.lower()` when ignore_case; the hints are then lower case). It equals
 * `any(h in text for h in hints)` but reads a Latin-1 text once, whatever the number of
 * hints, instead of once per hint. Wider texts use Python's own search.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* c * log2(c) for the counts a usual prefix can have, filled once by the module's init. */
#define C_LOG_C_TABLE 8192
static double C_LOG_C[C_LOG_C_TABLE];

static void
fill_c_log_c(void)
{
    for (int c = 1; c < C_LOG_C_TABLE; c++) {
        C_LOG_C[c] = (double)c * log2((double)c);
    }
}

static double
c_log_c(Py_ssize_t c)
{
    return c < C_LOG_C_TABLE ? C_LOG_C[c] : (double)c * log2((double)c);
}

/* Counts are kept in one static table, zero between calls (no Python code runs while it is
 * in use, and the GIL serialises callers); only the byte values a text holds are summed and
 * reset, in ascending order, found from a 256-bit set instead of a pass over all 256. */
static double
sum_c_log_c_ucs1(const Py_UCS1 *data, Py_ssize_t n)
{
    static Py_ssize_t counts[256];
    uint64_t seen[4] = {0, 0, 0, 0};
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS1 c = data[i];
        counts[c]++;
        seen[c >> 6] |= (uint64_t)1 << (c & 63);
    }
    double total = 0.0;
    for (int word = 0; word < 4; word++) {
        for (uint64_t bits = seen[word]; bits; bits &= bits - 1) {
            int code = word * 64 + __builtin_ctzll(bits);
            if (counts[code] > 1) {
                total += c_log_c(counts[code]);
            }
            counts[code] = 0;
        }
    }
    return total;
}

static int
compare_ucs4(const void *a, const void *b)
{
    Py_UCS4 x = *(const Py_UCS4 *)a, y = *(const Py_UCS4 *)b;
    return (x > y) - (x < y);
}

/* Returns -1.0 (with an exception set) when memory runs out. */
static double
sum_c_log_c_wide(PyObject *text, Py_ssize_t n)
{
    Py_UCS4 *points = PyMem_New(Py_UCS4, n > 0 ? n : 1);
    if (points == NULL) {
        PyErr_NoMemory();
        return -1.0;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        points[i] = PyUnicode_READ(kind, data, i);
    }
    qsort(points, (size_t)n, sizeof(Py_UCS4), compare_ucs4);
    double total = 0.0;
    Py_ssize_t run = 1;
    for (Py_ssize_t i = 1; i <= n; i++) {
        if (i < n && points[i] == points[i - 1]) {
            run++;
            continue;
        }
        if (run > 1) {
            total += c_log_c(run);
        }
        run = 1;
    }
    PyMem_Free(points);
    return total;
}

static PyObject *
entropies(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "entropies(texts: list[str], limit: int)");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *texts = args[0];
    Py_ssize_t count = PyList_GET_SIZE(texts);
    PyObject *result = PyList_New(count);
    if (result == NULL) {
        return NULL;
    }
    for (Py_ssize_t t = 0; t < count; t++) {
        PyObject *text = PyList_GET_ITEM(texts, t);
        if (!PyUnicode_Check(text) || PyUnicode_READY(text) < 0) {
            Py_DECREF(result);
            PyErr_SetString(PyExc_TypeError, "entropies: every text must be a str");
            return NULL;
        }
        Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        if (n > limit) {
            n = limit;
        }
        double value = 0.0;
        if (n > 0) {
            double sum = PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND
                             ? sum_c_log_c_ucs1(PyUnicode_1BYTE_DATA(text), n)
                             : sum_c_log_c_wide(text, n);
            if (sum < 0.0) {
                Py_DECREF(result);
                return NULL;
            }
            value = log2((double)n) - sum / (double)n;
        }
        PyObject *item = PyFloat_FromDouble(value);
        if (item == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyList_SET_ITEM(result, t, item);
    }
    return result;
}

/* Bytes of tool output from most to least frequent (roughly): a hint is looked for at the
 * occurrences of its rarest byte, its anchor, so few text positions need a comparison. */
static const char COMMON_BYTES[] =
    " etaoinsrlcdu\nhmp_./-fgy=,b0:1\"w)(v'2kx3T45E6S8I79ARCNLFOPMDB>;#*j[]qz<{}";

static int RARITY[256]; /* filled once by the module's init from COMMON_BYTES */

static void
fill_rarity(void)
{
    for (int c = 0; c < 256; c++) {
        const char *at = c ? strchr(COMMON_BYTES, c) : NULL;
        RARITY[c] = at ? (int)(at - COMMON_BYTES) : (int)sizeof(COMMON_BYTES);
    }
}

/* Where to anchor one hint: the offset of its rarest byte (case-folded when ignore_case). */
static Py_ssize_t
anchor_offset(const Py_UCS1 *hint, Py_ssize_t length, int ignore_case)
{
    Py_ssize_t best = 0;
    int best_rarity = -1;
    for (Py_ssize_t i = 0; i < length; i++) {
        int rarity = RARITY[hint[i]];
        if (ignore_case && hint[i] >= 'a' && hint[i] <= 'z') {
            int upper = RARITY[hint[i] - ('a' - 'A')];
            rarity = upper < rarity ? upper : rarity;
        }
        if (rarity > best_rarity) {
            best_rarity = rarity;
            best = i;
        }
    }
    return best;
}

typedef struct {
    uint64_t by_byte[256];  /* bit h: hint h has this anchor byte */
    Py_ssize_t offset[64];  /* where the anchor sits in hint h */
} HintIndex;

/* 0 ready, 1 if some hint is empty (it occurs everywhere), -1 on an error. */
static int
index_hints(PyObject *hints, HintIndex *index, int ignore_case)
{
    memset(index->by_byte, 0, sizeof(index->by_byte));
    Py_ssize_t count = PyTuple_GET_SIZE(hints);
    if (count > 64) {
        PyErr_SetString(PyExc_ValueError, "contains_any: at most 64 hints");
        return -1;
    }
    for (Py_ssize_t h = 0; h < count; h++) {
        PyObject *hint = PyTuple_GET_ITEM(hints, h);
        if (!PyUnicode_Check(hint) || !PyUnicode_IS_ASCII(hint)) {
            PyErr_SetString(PyExc_TypeError, "contains_any: hints must be ASCII str");
            return -1;
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(hint);
        if (length == 0) {
            return 1;
        }
        const Py_UCS1 *data = PyUnicode_1BYTE_DATA(hint);
        Py_ssize_t offset = anchor_offset(data, length, ignore_case);
        Py_UCS1 c = data[offset];
        index->offset[h] = offset;
        index->by_byte[c] |= (uint64_t)1 << h;
        if (ignore_case && c >= 'a' && c <= 'z') {
            index->by_byte[c - ('a' - 'A')] |= (uint64_t)1 << h;
        }
    }
    return 0;
}

static int
matches_at(const Py_UCS1 *text, const Py_UCS1 *hint, Py_ssize_t length, int ignore_case)
{
    if (!ignore_case) {
        return memcmp(text, hint, (size_t)length) == 0;
    }
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS1 c = text[i];
        if (c >= 'A' && c <= 'Z') {
            c = (Py_UCS1)(c + ('a' - 'A'));
        }
        if (c != hint[i]) {
            return 0;
        }
    }
    return 1;
}

/* Hint tuples are long-lived constants (the rule sets'), so their indexes are built once and
 * kept, the tuple held alive by the cache. Past CACHE_SIZE tuples, an index is built per call. */
#define CACHE_SIZE 64

typedef struct {
    PyObject *hints;
    int ignore_case;
    HintIndex index;
} CachedIndex;

static CachedIndex CACHE[CACHE_SIZE];
static int CACHED = 0;

/* The index of `hints`, or NULL with `*status` 1 (an empty hint) or -1 (an error). */
static const HintIndex *
hint_index(PyObject *hints, int ignore_case, HintIndex *scratch, int *status)
{
    for (int i = 0; i < CACHED; i++) {
        if (CACHE[i].hints == hints && CACHE[i].ignore_case == ignore_case) {
            return &CACHE[i].index;
        }
    }
    HintIndex *target = CACHED < CACHE_SIZE ? &CACHE[CACHED].index : scratch;
    *status = index_hints(hints, target, ignore_case);
    if (*status != 0) {
        return NULL;
    }
    if (target != scratch) {
        Py_INCREF(hints);
        CACHE[CACHED].hints = hints;
        CACHE[CACHED].ignore_case = ignore_case;
        CACHED++;
    }
    return target;
}

static int
latin1_contains_any(const Py_UCS1 *text, Py_ssize_t n, PyObject *hints, int ignore_case)
{
    HintIndex scratch;
    int status = 0;
    const HintIndex *index = hint_index(hints, ignore_case, &scratch, &status);
    if (index == NULL) {
        return status;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t candidates = index->by_byte[text[i]];
        while (candidates) {
            int h = __builtin_ctzll(candidates);
            candidates &= candidates - 1;
            PyObject *hint = PyTuple_GET_ITEM(hints, h);
            Py_ssize_t length = PyUnicode_GET_LENGTH(hint);
            Py_ssize_t start = i - index->offset[h];
            if (start >= 0 && start + length <= n &&
                matches_at(text + start, PyUnicode_1BYTE_DATA(hint), length, ignore_case)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Wide texts: Python's own `in`, on text.lower() when ignoring case. */
static int
wide_contains_any(PyObject *text, PyObject *hints, int ignore_case)
{
    PyObject *haystack = ignore_case ? PyObject_CallMethod(text, "lower", NULL) : text;
    if (haystack == NULL) {
        return -1;
    }
    if (!ignore_case) {
        Py_INCREF(haystack);
    }
    int found = 0;
    Py_ssize_t count = PyTuple_GET_SIZE(hints);
    for (Py_ssize_t h = 0; h < count && found == 0; h++) {
        found = PyUnicode_Contains(haystack, PyTuple_GET_ITEM(hints, h));
    }
    Py_DECREF(haystack);
    return found;
}

static PyObject *
contains_any(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "contains_any(text: str, hints: tuple[str, ...], ignore_case: bool)");
        return NULL;
    }
    int ignore_case = PyObject_IsTrue(args[2]);
    if (ignore_case < 0 || PyUnicode_READY(args[0]) < 0) {
        return NULL;
    }
    int found = PyUnicode_KIND(args[0]) == PyUnicode_1BYTE_KIND
                    ? latin1_contains_any(PyUnicode_1BYTE_DATA(args[0]),
                                          PyUnicode_GET_LENGTH(args[0]), args[1], ignore_case)
                    : wide_contains_any(args[0], args[1], ignore_case);
    if (found < 0) {
        return NULL;
    }
    return PyBool_FromLong(found);
}

static PyMethodDef methods[] = {
    {"entropies", (PyCFunction)(void (*)(void))entropies, METH_FASTCALL,
     "entropies(texts, limit) -> list of bits-per-character entropies of each text's first "
     "`limit` characters."},
    {"contains_any", (PyCFunction)(void (*)(void))contains_any, METH_FASTCALL,
     "contains_any(text, hints, ignore_case) -> whether one of the ASCII hints occurs in text "
     "(in text.lower() when ignore_case)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "scorers.tqs_v2._speedups", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    fill_rarity();
    fill_c_log_c();
    return PyModule_Create(&module);
}
