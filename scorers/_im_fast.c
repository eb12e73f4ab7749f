/* The IM record checks of the common case in C: one pass each, no allocation.
 *
 * `im_record_ok(obj)` answers as `im_check.is_im_record` does (the same walk, key by key:
 * tests/test_im_fast.py compares the two on mutated records). `trainable_ok(record)` is
 * conservative: True only when `im_validity.trainable_problem(record)` is None; False
 * whenever it finds a problem or meets a value the Python rules would treat in a way this
 * does not follow (a non-str id or text, a Mapping that is not a dict), so the caller then
 * runs the Python rules, which decide and word the reason. `nameless_calls(messages)`
 * counts the calls without a name as `readers.bundle._nameless_calls` does, or gives -1 for
 * messages not of the usual types (then that loop counts). None raises on data.
 *
 * In `trajcurate score` on the 7,850-record benchmark file the compiled Python took 0.10 s
 * to validate and 0.15 s for the trainable rules; these take a fraction of that. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum {
    K_MESSAGES, K_TOOLS, K_META_INFO, K_VERSION, K_ROUNDS, K_UNIQUE_INFO, K_INSTANCE_ID,
    K_AGENT_TYPE, K_TYPE, K_FUNCTION, K_NAME, K_DESCRIPTION, K_PARAMETERS, K_ROLE, K_CONTENT,
    K_REASONING, K_TOOL_CALL_ID, K_TOOL_CALLS, K_ID, K_ARGUMENTS, K_METADATA, K_FIDELITY,
    K_UNANSWERED, V_IM_VERSION, V_MAIN, V_SUBAGENT, V_SYSTEM, V_USER, V_ASSISTANT, V_TOOL,
    V_WARMUP, K_TEACHER, K_QUERY_SOURCE, K_GENERATE_TIME, K_UPDATE_TIME, K_OWNER, K_LANGUAGE,
    K_CATEGORY, K_SCORE, K_GEN_PARAMS, K_USAGE, TEXTS
};

static const char *const TEXT[TEXTS] = {
    "messages", "tools", "meta_info", "version", "rounds", "unique_info", "_instance_id",
    "_agent_type", "type", "function", "name", "description", "parameters", "role", "content",
    "reasoning_content", "tool_call_id", "tool_calls", "id", "arguments", "_instance_metadata",
    "fidelity", "unanswered_tool_results_dropped", "2.0.0", "main", "subagent", "system",
    "user", "assistant", "tool", "Warmup", "teacher", "query_source", "response_generate_time",
    "response_update_time", "owner", "language", "category", "_score", "_gen_params", "_usage",
};
static PyObject *S[TEXTS]; /* interned */

/* Whether `s` (an exact str) equals the ASCII text S[k]. */
static int
eq(PyObject *s, int k)
{
    PyObject *lit = S[k];
    if (s == lit) {
        return 1;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(lit);
    if (PyUnicode_GET_LENGTH(s) != n) {
        return 0;
    }
    if (PyUnicode_IS_COMPACT_ASCII(s)) {
        return memcmp(PyUnicode_DATA(s), PyUnicode_DATA(lit), (size_t)n) == 0;
    }
    return PyUnicode_Compare(s, lit) == 0;
}

static int
is_str(PyObject *v)
{
    return PyUnicode_CheckExact(v);
}

static int
str_or_none(PyObject *v)
{
    return v == Py_None || PyUnicode_CheckExact(v);
}

/* --- im_record_ok: `im_check.is_im_record` -------------------------------------------- */

static int
str_keys(PyObject *d)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(d, &pos, &key, &value)) {
        if (!is_str(key)) {
            return 0;
        }
    }
    return 1;
}

static int
optional_str_dict_ok(PyObject *v)
{
    return v == Py_None || (PyDict_CheckExact(v) && str_keys(v));
}

static int
function_spec_ok(PyObject *v)
{
    if (!PyDict_CheckExact(v)) {
        return 0;
    }
    int found = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(v, &pos, &key, &item)) {
        if (!is_str(key)) {
            return 0;
        }
        if (eq(key, K_NAME)) {
            if (!is_str(item)) {
                return 0;
            }
            found++;
        }
        else if (eq(key, K_DESCRIPTION)) {
            if (!str_or_none(item)) {
                return 0;
            }
        }
        else if (eq(key, K_PARAMETERS) && !optional_str_dict_ok(item)) {
            return 0;
        }
    }
    return found == 1;
}

static int
tools_ok(PyObject *v)
{
    if (!PyList_CheckExact(v)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *tool = PyList_GET_ITEM(v, i);
        if (!PyDict_CheckExact(tool)) {
            return 0;
        }
        int found = 0;
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(tool, &pos, &key, &item)) {
            if (!is_str(key)) {
                return 0;
            }
            if (eq(key, K_TYPE)) {
                if (!is_str(item) || !eq(item, K_FUNCTION)) {
                    return 0;
                }
                found++;
            }
            else if (eq(key, K_FUNCTION)) {
                if (!function_spec_ok(item)) {
                    return 0;
                }
                found++;
            }
        }
        if (found != 2) {
            return 0;
        }
    }
    return 1;
}

static int
function_call_ok(PyObject *v)
{
    if (!PyDict_CheckExact(v)) {
        return 0;
    }
    int found = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(v, &pos, &key, &item)) {
        if (!is_str(key)) {
            return 0;
        }
        if (eq(key, K_NAME) || eq(key, K_ARGUMENTS)) {
            if (!is_str(item)) {
                return 0;
            }
            found++;
        }
    }
    return found == 2;
}

static int
tool_calls_ok(PyObject *v)
{
    if (!PyList_CheckExact(v)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *call = PyList_GET_ITEM(v, i);
        if (!PyDict_CheckExact(call)) {
            return 0;
        }
        int found = 0;
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(call, &pos, &key, &item)) {
            if (!is_str(key)) {
                return 0;
            }
            if (eq(key, K_ID)) {
                if (!is_str(item)) {
                    return 0;
                }
                found++;
            }
            else if (eq(key, K_TYPE)) {
                if (!is_str(item) || !eq(item, K_FUNCTION)) {
                    return 0;
                }
                found++;
            }
            else if (eq(key, K_FUNCTION)) {
                if (!function_call_ok(item)) {
                    return 0;
                }
                found++;
            }
        }
        if (found != 3) {
            return 0;
        }
    }
    return 1;
}

static int
is_role(PyObject *v)
{
    return eq(v, V_SYSTEM) || eq(v, V_USER) || eq(v, V_ASSISTANT) || eq(v, V_TOOL);
}

static int
message_ok(PyObject *v)
{
    if (!PyDict_CheckExact(v)) {
        return 0;
    }
    int found = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(v, &pos, &key, &item)) {
        if (!is_str(key)) {
            return 0;
        }
        if (eq(key, K_ROLE)) {
            if (!is_str(item) || !is_role(item)) {
                return 0;
            }
            found++;
        }
        else if (eq(key, K_CONTENT)) {
            if (!is_str(item)) {
                return 0;
            }
            found++;
        }
        else if (eq(key, K_REASONING) || eq(key, K_TOOL_CALL_ID) || eq(key, K_NAME)) {
            if (!str_or_none(item)) {
                return 0;
            }
        }
        else if (eq(key, K_TOOL_CALLS) && item != Py_None && !tool_calls_ok(item)) {
            return 0;
        }
    }
    return found == 2;
}

static int
messages_ok(PyObject *v)
{
    if (!PyList_CheckExact(v)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        if (!message_ok(PyList_GET_ITEM(v, i))) {
            return 0;
        }
    }
    return 1;
}

static int
unique_info_ok(PyObject *v)
{
    if (!PyDict_CheckExact(v)) {
        return 0;
    }
    int found = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(v, &pos, &key, &item)) {
        if (!is_str(key)) {
            return 0;
        }
        if (eq(key, K_INSTANCE_ID)) {
            if (!is_str(item)) {
                return 0;
            }
            found++;
        }
        else if (eq(key, K_AGENT_TYPE)) {
            if (!is_str(item) || !(eq(item, V_MAIN) || eq(item, V_SUBAGENT))) {
                return 0;
            }
        }
        else if ((eq(key, K_SCORE) || eq(key, K_GEN_PARAMS) || eq(key, K_USAGE) ||
                  eq(key, K_METADATA)) &&
                 !optional_str_dict_ok(item)) {
            return 0;
        }
    }
    return found == 1;
}

/* A non-negative exact int. */
static int
count_ok(PyObject *v)
{
    if (!PyLong_CheckExact(v)) {
        return 0;
    }
    int overflow = 0;
    long value = PyLong_AsLongAndOverflow(v, &overflow);
    return overflow > 0 || (overflow == 0 && value >= 0);
}

static int
meta_info_ok(PyObject *v)
{
    static const int STR_KEYS[] = {K_TEACHER, K_QUERY_SOURCE, K_GENERATE_TIME, K_UPDATE_TIME,
                                   K_OWNER, K_LANGUAGE, K_CATEGORY};
    if (!PyDict_CheckExact(v)) {
        return 0;
    }
    int found = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(v, &pos, &key, &item)) {
        if (!is_str(key)) {
            return 0;
        }
        int text_key = 0;
        for (int k = 0; k < 7 && !text_key; k++) {
            text_key = eq(key, STR_KEYS[k]);
        }
        if (text_key) {
            if (!is_str(item)) {
                return 0;
            }
            found++;
        }
        else if (eq(key, K_ROUNDS)) {
            if (!count_ok(item)) {
                return 0;
            }
            found++;
        }
        else if (eq(key, K_UNIQUE_INFO)) {
            if (!unique_info_ok(item)) {
                return 0;
            }
            found++;
        }
    }
    return found == 9;
}

static int
record_ok(PyObject *v)
{
    if (!PyDict_CheckExact(v)) {
        return 0;
    }
    int found = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(v, &pos, &key, &item)) {
        if (!is_str(key)) {
            return 0;
        }
        if (eq(key, K_MESSAGES)) {
            if (!messages_ok(item)) {
                return 0;
            }
        }
        else if (eq(key, K_TOOLS)) {
            if (item != Py_None && !tools_ok(item)) {
                return 0;
            }
        }
        else if (eq(key, K_META_INFO)) {
            if (!meta_info_ok(item)) {
                return 0;
            }
        }
        else if (eq(key, K_VERSION)) {
            if (!is_str(item) || !eq(item, V_IM_VERSION)) {
                return 0;
            }
        }
        else {
            return 0;
        }
        found++;
    }
    return found == 4;
}

static PyObject *
im_record_ok(PyObject *module, PyObject *value)
{
    (void)module;
    return PyBool_FromLong(record_ok(value));
}

/* --- trainable_ok: `im_validity.trainable_problem(record) is None`, conservatively ----- */

enum { USER = 1, ASSISTANT, TOOL };

/* A message's value under S[k] (borrowed; NULL when absent). Messages are exact dicts of str
 * keys here, so the lookup cannot fail. */
static PyObject *
get(PyObject *message, int k)
{
    return PyDict_GetItemWithError(message, S[k]);
}

/* A text as `str(value or "")` reads it: 1 with `*text` set (NULL for ""), 0 when the value
 * is neither a str nor None (the Python rules would call `str` on it). */
static int
text_of(PyObject *value, PyObject **text)
{
    if (value == NULL || value == Py_None) {
        *text = NULL;
        return 1;
    }
    if (!is_str(value)) {
        return 0;
    }
    *text = PyUnicode_GET_LENGTH(value) ? value : NULL;
    return 1;
}

/* Whether a text holds anything but whitespace (`text.strip()` is not empty). */
static int
has_words(PyObject *text)
{
    if (text == NULL) {
        return 0;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(text); i++) {
        if (!Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) {
            return 1;
        }
    }
    return 0;
}

/* Whether `text.strip()` is the warm-up greeting. */
static int
is_warmup(PyObject *text)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t start = 0, end = PyUnicode_GET_LENGTH(text);
    while (start < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, start))) {
        start++;
    }
    while (end > start && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) {
        end--;
    }
    PyObject *warmup = S[V_WARMUP];
    if (end - start != PyUnicode_GET_LENGTH(warmup)) {
        return 0;
    }
    const char *word = PyUnicode_AsUTF8(warmup);
    for (Py_ssize_t i = start; i < end; i++) {
        if (PyUnicode_READ(kind, data, i) != (Py_UCS4)(unsigned char)word[i - start]) {
            return 0;
        }
    }
    return 1;
}

/* Two ids as `str(x or "")` reads them (NULL for ""): equal? */
static int
same_id(PyObject *a, PyObject *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return a == b || PyUnicode_Compare(a, b) == 0;
}

/* A call's id (NULL for none): 1, or 0 when the call or its id is not of the usual types. */
static int
call_id(PyObject *call, PyObject **id)
{
    return PyDict_CheckExact(call) && text_of(get(call, K_ID), id);
}

/* A message's calls: 1 with `*calls` a list (NULL for none), 0 when not a list or None. */
static int
calls_of(PyObject *message, PyObject **calls)
{
    PyObject *value = get(message, K_TOOL_CALLS);
    if (value == NULL || value == Py_None) {
        *calls = NULL;
        return 1;
    }
    if (!PyList_CheckExact(value)) {
        return 0;
    }
    *calls = PyList_GET_SIZE(value) ? value : NULL;
    return 1;
}

typedef struct {
    PyObject **message; /* the messages but the system ones */
    int *role;
    Py_ssize_t size;
} Conversation;

/* The answers of the tool messages from `start` on match the calls, each a different call
 * in call order (`_in_order`); with `every`, also no call is left unanswered (`_unanswered`). */
static int
answers_match(const Conversation *c, Py_ssize_t start, PyObject *calls, int every)
{
    Py_ssize_t position = 0, count = PyList_GET_SIZE(calls);
    for (Py_ssize_t i = start; i < c->size && c->role[i] == TOOL; i++) {
        PyObject *answer;
        if (!text_of(get(c->message[i], K_TOOL_CALL_ID), &answer)) {
            return 0;
        }
        for (;; position++) {
            if (position == count) {
                return 0;
            }
            PyObject *id;
            if (!call_id(PyList_GET_ITEM(calls, position), &id)) {
                return 0;
            }
            if (same_id(id, answer)) {
                break;
            }
            if (every) {
                return 0; /* a call passed over is left unanswered */
            }
        }
        position++;
    }
    return !every || position == count;
}

/* `_role_order_problem` and `_unanswered_call_problem` find nothing. */
static int
turns_ok(const Conversation *c)
{
    static const int ALLOWED[4][4] = {
        {0, 0, 0, 0}, {0, 0, 1, 0}, {0, 1, 0, 1}, {0, 1, 1, 1}, /* [current][following] */
    };
    Py_ssize_t last = c->size - 1;
    if (c->size == 0 || c->role[0] != USER || c->role[last] != ASSISTANT) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < last; i++) {
        if (!ALLOWED[c->role[i]][c->role[i + 1]]) {
            return 0;
        }
    }
    for (Py_ssize_t i = 0; i <= last; i++) {
        if (c->role[i] != ASSISTANT) {
            continue;
        }
        PyObject *calls;
        if (!calls_of(c->message[i], &calls)) {
            return 0;
        }
        int answered = i < last && c->role[i + 1] == TOOL;
        if (calls == NULL) {
            if (answered) {
                return 0; /* a tool message answers nothing */
            }
            continue;
        }
        if (i == last) {
            continue; /* the last turn may end on its calls */
        }
        /* before the last assistant message every call is answered; the order rule holds */
        if (!answered || !answers_match(c, i + 1, calls, 1)) {
            return 0;
        }
    }
    return 1;
}

/* `stopped_after_result_problem` finds nothing: no positive count of unanswered results
 * dropped in `_instance_metadata.fidelity`. */
static int
not_stopped(PyObject *record)
{
    PyObject *meta = PyDict_GetItemWithError(record, S[K_META_INFO]);
    PyObject *info = meta != NULL && PyDict_CheckExact(meta) ? get(meta, K_UNIQUE_INFO) : NULL;
    if (meta == NULL || !PyDict_CheckExact(meta) || info == NULL || !PyDict_CheckExact(info)) {
        return 0; /* not of the validated shape: the Python rules look */
    }
    PyObject *metadata = get(info, K_METADATA);
    if (metadata == NULL || metadata == Py_None) {
        return 1;
    }
    if (!PyDict_CheckExact(metadata)) {
        return 0;
    }
    PyObject *fidelity = get(metadata, K_FIDELITY);
    if (fidelity == NULL || fidelity == Py_None) {
        return 1;
    }
    if (!PyDict_CheckExact(fidelity)) {
        return is_str(fidelity) || PyList_CheckExact(fidelity) || PyLong_CheckExact(fidelity) ||
               PyFloat_CheckExact(fidelity) || PyBool_Check(fidelity);
    }
    PyObject *count = get(fidelity, K_UNANSWERED);
    if (count == NULL || !PyLong_Check(count)) {
        return 1;
    }
    if (PyBool_Check(count)) {
        return 1;
    }
    if (!PyLong_CheckExact(count)) {
        return 0;
    }
    int overflow = 0;
    long value = PyLong_AsLongAndOverflow(count, &overflow);
    return overflow < 0 || (overflow == 0 && value <= 0);
}

/* `empty_prompt_problem` and `nothing_to_learn_problem` find nothing. */
static int
texts_ok(const Conversation *c)
{
    PyObject *prompt; /* the first non-system message is the first user message */
    if (!text_of(get(c->message[0], K_CONTENT), &prompt) || !has_words(prompt) ||
        is_warmup(prompt)) {
        return 0;
    }
    int answer = 0, said = 0, answered = 0;
    for (Py_ssize_t i = 0; i < c->size; i++) {
        if (c->role[i] == TOOL) {
            answered = 1;
            continue;
        }
        if (c->role[i] != ASSISTANT) {
            continue;
        }
        PyObject *text, *reasoning, *calls;
        if (!text_of(get(c->message[i], K_CONTENT), &text) ||
            !text_of(get(c->message[i], K_REASONING), &reasoning) ||
            !calls_of(c->message[i], &calls)) {
            return 0;
        }
        int words = has_words(text);
        answer = answer || words || calls != NULL;
        said = said || words || has_words(reasoning);
    }
    return answer && (answered || said);
}

static int
role_code(PyObject *role)
{
    if (role == NULL || !is_str(role)) {
        return -1;
    }
    if (eq(role, V_USER)) {
        return USER;
    }
    if (eq(role, V_ASSISTANT)) {
        return ASSISTANT;
    }
    if (eq(role, V_TOOL)) {
        return TOOL;
    }
    return eq(role, V_SYSTEM) ? 0 : -1;
}

static int
record_trainable(PyObject *record)
{
    if (!PyDict_CheckExact(record)) {
        return 0;
    }
    PyObject *messages = PyDict_GetItemWithError(record, S[K_MESSAGES]);
    if (messages == NULL || !PyList_CheckExact(messages)) {
        return 0;
    }
    Py_ssize_t n = PyList_GET_SIZE(messages);
    Conversation c = {PyMem_Malloc(sizeof(PyObject *) * (size_t)(n + 1)),
                      PyMem_Malloc(sizeof(int) * (size_t)(n + 1)), 0};
    int ok = c.message != NULL && c.role != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *message = PyList_GET_ITEM(messages, i);
        int role = PyDict_CheckExact(message) ? role_code(get(message, K_ROLE)) : -1;
        if (role < 0) {
            ok = 0;
        }
        else if (role > 0) {
            c.message[c.size] = message;
            c.role[c.size++] = role;
        }
    }
    ok = ok && turns_ok(&c) && not_stopped(record) && texts_ok(&c);
    PyMem_Free(c.message);
    PyMem_Free(c.role);
    return ok;
}

static PyObject *
trainable_ok(PyObject *module, PyObject *record)
{
    (void)module;
    int ok = record_trainable(record);
    if (PyErr_Occurred()) { /* a lookup that failed: no verdict */
        PyErr_Clear();
        ok = 0;
    }
    return PyBool_FromLong(ok);
}

/* --- nameless_calls: `readers.bundle._nameless_calls` ----------------------------------- */

static PyObject *
nameless_calls(PyObject *module, PyObject *messages)
{
    (void)module;
    if (!PyList_CheckExact(messages)) {
        return PyLong_FromLong(-1);
    }
    long nameless = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *message = PyList_GET_ITEM(messages, i);
        if (!PyDict_CheckExact(message)) {
            return PyLong_FromLong(-1);
        }
        PyObject *calls = get(message, K_TOOL_CALLS);
        if (calls == NULL || calls == Py_None) {
            continue;
        }
        if (!PyList_CheckExact(calls)) {
            return PyLong_FromLong(-1);
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(calls); j++) {
            PyObject *call = PyList_GET_ITEM(calls, j);
            PyObject *function = PyDict_CheckExact(call) ? get(call, K_FUNCTION) : NULL;
            PyObject *name = function != NULL && PyDict_CheckExact(function)
                                 ? get(function, K_NAME)
                                 : NULL;
            if (!PyDict_CheckExact(call) || (function != NULL && function != Py_None &&
                                             !PyDict_CheckExact(function)) ||
                (name != NULL && name != Py_None && !is_str(name))) {
                return PyLong_FromLong(-1); /* not of the usual types: the Python loop counts */
            }
            nameless += name == NULL || name == Py_None || PyUnicode_GET_LENGTH(name) == 0;
        }
    }
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return PyLong_FromLong(-1);
    }
    return PyLong_FromLong(nameless);
}

static PyMethodDef methods[] = {
    {"im_record_ok", im_record_ok, METH_O,
     "im_record_ok(obj) -> what im_check.is_im_record(obj) answers"},
    {"trainable_ok", trainable_ok, METH_O,
     "trainable_ok(record) -> True only if im_validity.trainable_problem(record) is None"},
    {"nameless_calls", nameless_calls, METH_O,
     "nameless_calls(messages) -> how many tool calls have no name; -1 when the messages "
     "are not of the usual types"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "scorers._im_fast", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__im_fast(void)
{
    for (int k = 0; k < TEXTS; k++) {
        S[k] = PyUnicode_InternFromString(TEXT[k]);
        if (S[k] == NULL) {
            return NULL;
        }
    }
    return PyModule_Create(&module);
}
