/* The fast paths of schema conforming in C: a message, tool call or tool of the usual shape.
 *
 * `message(value)` and `tool(value)` do what `schema._message` and `schema._tool` do: a dict
 * whose every key is one the schema names and whose every value has the field's type (`str`
 * exactly, `None` where the field is nullable; a message's calls a list of such calls)
 * becomes a new dict with the schema's keys in the schema's order, values kept as the same
 * objects; anything else gives None, and the caller conforms it the general way. So a None
 * is never wrong, only slower (tests/test_output_schema.py compares the two on odd shapes).
 * Most of a record is messages: this takes about 0.2 us a message where the compiled Python
 * takes 0.5 us.
 *
 * `messages_json(values)` goes one step further for the writer: the JSON text of a list of
 * such messages conformed, the bytes `orjson.dumps` gives for it (its escapes: `\"`, `\\`,
 * `\b \t \n \f \r`, `\u00xx` for the other controls, everything else as UTF-8), without
 * building the conformed dicts at all; None for a list that is not all of the usual shape
 * or holds a string UTF-8 cannot encode (a lone surrogate: orjson refuses it). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { ROLE, CONTENT, REASONING, TOOL_CALLS, TOOL_CALL_ID, NAME, ID, TYPE, FUNCTION,
       ARGUMENTS, DESCRIPTION, PARAMETERS, KEYS };

static const char *const KEY_TEXT[KEYS] = {
    "role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name", "id",
    "type", "function", "arguments", "description", "parameters",
};
static PyObject *KEY[KEYS]; /* interned */

/* Whether `value` is a dict with no key but `keys`, looking those up into `out` (borrowed,
 * NULL when absent): 1 yes, 0 no (not a dict, another key), -1 on error. Keys are distinct,
 * so as many found as the dict holds means every key of the dict is one of them. */
static int
shaped(PyObject *value, const int *keys, int count, PyObject **out)
{
    if (value == NULL || !PyDict_CheckExact(value)) {
        return 0;
    }
    Py_ssize_t found = 0;
    for (int k = 0; k < count; k++) {
        out[k] = PyDict_GetItemWithError(value, KEY[keys[k]]);
        if (out[k] != NULL) {
            found++;
        }
        else if (PyErr_Occurred()) {
            return -1;
        }
    }
    return found == PyDict_GET_SIZE(value);
}

/* What a fast path returns for a value `shaped` did not accept: NULL on error, else None. */
static PyObject *
not_shaped(int fits)
{
    return fits < 0 ? NULL : Py_NewRef(Py_None);
}

static int
is_str(PyObject *value)
{
    return value != NULL && PyUnicode_CheckExact(value);
}

static int
is_str_or_none(PyObject *value)
{
    return value == NULL || value == Py_None || PyUnicode_CheckExact(value);
}

/* A dict of `count` items, keys[k] -> values[k] (NULL as None), in that order. */
static PyObject *
ordered(const int *keys, PyObject *const *values, int count)
{
#if PY_VERSION_HEX < 0x030D0000
    PyObject *out = _PyDict_NewPresized(count); /* no resize on the way (6 keys would) */
#else
    PyObject *out = PyDict_New(); /* the presized constructor is internal from 3.13 on */
#endif
    if (out == NULL) {
        return NULL;
    }
    for (int k = 0; k < count; k++) {
        if (PyDict_SetItem(out, KEY[keys[k]], values[k] ? values[k] : Py_None) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* A tool call conformed (new reference), Py_None when not of the usual shape, NULL on error. */
static PyObject *
tool_call(PyObject *call)
{
    static const int CALL_KEYS[] = {ID, TYPE, FUNCTION};
    static const int FUNCTION_KEYS[] = {NAME, ARGUMENTS};
    PyObject *item[3], *function[2];
    int fits = shaped(call, CALL_KEYS, 3, item);
    if (fits > 0) {
        fits = shaped(item[2], FUNCTION_KEYS, 2, function);
    }
    if (fits <= 0) {
        return not_shaped(fits);
    }
    if (!(is_str(item[0]) && is_str(item[1]) && is_str(function[0]) && is_str(function[1]))) {
        Py_RETURN_NONE;
    }
    PyObject *inner = ordered(FUNCTION_KEYS, function, 2);
    if (inner == NULL) {
        return NULL;
    }
    PyObject *values[3] = {item[0], item[1], inner};
    PyObject *out = ordered(CALL_KEYS, values, 3);
    Py_DECREF(inner);
    return out;
}

/* The calls of a message conformed (new list), Py_None when one is not of the usual shape. */
static PyObject *
tool_calls(PyObject *calls)
{
    Py_ssize_t n = PyList_GET_SIZE(calls);
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *done = tool_call(PyList_GET_ITEM(calls, i));
        if (done == NULL || done == Py_None) {
            Py_DECREF(out);
            return done;
        }
        PyList_SET_ITEM(out, i, done);
    }
    return out;
}

static PyObject *
message(PyObject *module, PyObject *value)
{
    static const int MESSAGE_KEYS[] = {ROLE, CONTENT, REASONING, TOOL_CALLS, TOOL_CALL_ID, NAME};
    PyObject *item[6];
    (void)module;
    int fits = shaped(value, MESSAGE_KEYS, 6, item);
    if (fits <= 0) {
        return not_shaped(fits);
    }
    if (!(is_str(item[0]) && is_str(item[1]) && is_str_or_none(item[2]) &&
          is_str_or_none(item[4]) && is_str_or_none(item[5]))) {
        Py_RETURN_NONE;
    }
    PyObject *calls = NULL;
    if (item[3] != NULL && item[3] != Py_None) {
        if (!PyList_CheckExact(item[3])) {
            Py_RETURN_NONE;
        }
        calls = tool_calls(item[3]);
        if (calls == NULL || calls == Py_None) {
            return calls;
        }
        item[3] = calls;
    }
    PyObject *out = ordered(MESSAGE_KEYS, item, 6);
    Py_XDECREF(calls);
    return out;
}

static PyObject *
tool(PyObject *module, PyObject *value)
{
    static const int TOOL_KEYS[] = {TYPE, FUNCTION};
    static const int FUNCTION_KEYS[] = {NAME, DESCRIPTION, PARAMETERS};
    PyObject *item[2], *function[3];
    (void)module;
    int fits = shaped(value, TOOL_KEYS, 2, item);
    if (fits > 0) {
        fits = shaped(item[1], FUNCTION_KEYS, 3, function);
    }
    if (fits <= 0) {
        return not_shaped(fits);
    }
    if (!(is_str(item[0]) && is_str(function[0]) && is_str_or_none(function[1]))) {
        Py_RETURN_NONE;
    }
    PyObject *inner = ordered(FUNCTION_KEYS, function, 3);
    if (inner == NULL) {
        return NULL;
    }
    PyObject *values[2] = {item[0], inner};
    PyObject *out = ordered(TOOL_KEYS, values, 2);
    Py_DECREF(inner);
    return out;
}

/* Every item of `values` (a list) conformed by `fast` (new list), Py_None when one is not a
 * dict of the usual shape (the caller then conforms the list item by item). One call for a
 * record's messages saves a call per message. */
static PyObject *
each(PyObject *values, PyObject *(*fast)(PyObject *, PyObject *))
{
    if (!PyList_CheckExact(values)) {
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *done = fast(NULL, PyList_GET_ITEM(values, i));
        if (done == NULL || done == Py_None) {
            Py_DECREF(out);
            return done;
        }
        PyList_SET_ITEM(out, i, done);
    }
    return out;
}

static PyObject *
messages(PyObject *module, PyObject *values)
{
    (void)module;
    return each(values, message);
}

static PyObject *
tools(PyObject *module, PyObject *values)
{
    (void)module;
    return each(values, tool);
}

/* --- messages_json: the conformed messages as JSON text ---------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

static int
reserve(Buffer *b, Py_ssize_t more)
{
    if (b->size + more <= b->capacity) {
        return 0;
    }
    Py_ssize_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + more) {
        capacity *= 2;
    }
    char *data = PyMem_Realloc(b->data, (size_t)capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->capacity = capacity;
    return 0;
}

static int
put(Buffer *b, const char *text, Py_ssize_t n)
{
    if (reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->data + b->size, text, (size_t)n);
    b->size += n;
    return 0;
}

#define PUT(b, literal) put((b), (literal), (Py_ssize_t)(sizeof(literal) - 1))

/* The bytes of `x` that must be escaped (below 0x20, a quote, a backslash), each flagged by
 * its high bit; the lowest flag is always right (a borrow may flag a byte above it too). */
static inline uint64_t
to_escape(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    return (((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) |
            ((backslash - ones) & ~backslash)) &
           high;
}

/* A str as a JSON string: 0, or 1 when UTF-8 cannot encode it (error cleared), -1 on error. */
static int
put_str(Buffer *b, PyObject *text)
{
    static const char HEX[] = "0123456789abcdef";
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
    if (utf8 == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            return -1;
        }
        PyErr_Clear();
        return 1;
    }
    if (reserve(b, n * 6 + 2) < 0) { /* every byte a \u00xx at most */
        return -1;
    }
    char *out = b->data + b->size;
    *out++ = '"';
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, utf8 + i, 8);
            memcpy(out, &word, 8); /* room was reserved for the worst case */
            uint64_t flags = to_escape(word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            Py_ssize_t clean = flags ? __builtin_ctzll(flags) >> 3 : 8; /* the first flagged */
#else
            Py_ssize_t clean = flags ? 0 : 8;
#endif
            out += clean;
            i += clean;
            if (clean == 8) {
                continue;
            }
        }
        unsigned char c = (unsigned char)utf8[i++];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *out++ = (char)c;
            continue;
        }
        *out++ = '\\';
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\b': *out++ = 'b'; break;
        case '\t': *out++ = 't'; break;
        case '\n': *out++ = 'n'; break;
        case '\f': *out++ = 'f'; break;
        case '\r': *out++ = 'r'; break;
        default:
            *out++ = 'u';
            *out++ = '0';
            *out++ = '0';
            *out++ = HEX[c >> 4];
            *out++ = HEX[c & 15];
        }
    }
    *out++ = '"';
    b->size = out - b->data;
    return 0;
}

/* A str or None (`null`), as `put_str` answers. */
static int
put_nullable(Buffer *b, PyObject *value)
{
    return value == NULL || value == Py_None ? PUT(b, "null") : put_str(b, value);
}

/* Each step of a writer: 0 went on, 1 not of the usual shape, -1 error. */
#define STEP(call)          \
    do {                    \
        int step_ = (call); \
        if (step_) {        \
            return step_;   \
        }                   \
    } while (0)

/* How a member's value is written: a str; a str or None (`null`); a message's tool calls. */
typedef enum { AS_STR, AS_NULLABLE, AS_CALLS } As;

/* A member: the JSON text that leads to its value (the key, and what opens or separates it),
 * and how the value is written. */
typedef struct {
    const char *lead;
    Py_ssize_t lead_size;
    As as;
} Member;

#define MEMBER(lead, as) {(lead), (Py_ssize_t)(sizeof(lead) - 1), (as)}

static int put_calls(Buffer *b, PyObject *calls);

/* `values[k]` after `members[k]`'s lead, each as its member says, then `end`. A value of
 * another type is not of the usual shape (1). */
static int
put_members(Buffer *b, const Member *members, PyObject *const *values, int count,
            const char *end)
{
    for (int k = 0; k < count; k++) {
        PyObject *value = values[k];
        STEP(put(b, members[k].lead, members[k].lead_size));
        switch (members[k].as) {
        case AS_STR:
            STEP(is_str(value) ? put_str(b, value) : 1);
            break;
        case AS_NULLABLE:
            STEP(is_str_or_none(value) ? put_nullable(b, value) : 1);
            break;
        case AS_CALLS:
            STEP(put_calls(b, value));
            break;
        }
    }
    return put(b, end, (Py_ssize_t)strlen(end));
}

/* A list's items, each by `put_item`, as a JSON array. */
static int
put_list(Buffer *b, PyObject *list, int (*put_item)(Buffer *, PyObject *))
{
    STEP(PUT(b, "["));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        if (i) {
            STEP(PUT(b, ","));
        }
        STEP(put_item(b, PyList_GET_ITEM(list, i)));
    }
    return PUT(b, "]");
}

static int
put_call(Buffer *b, PyObject *call)
{
    static const int CALL_KEYS[] = {ID, TYPE, FUNCTION};
    static const int FUNCTION_KEYS[] = {NAME, ARGUMENTS};
    static const Member MEMBERS[] = {
        MEMBER("{\"id\":", AS_STR),
        MEMBER(",\"type\":", AS_STR),
        MEMBER(",\"function\":{\"name\":", AS_STR),
        MEMBER(",\"arguments\":", AS_STR),
    };
    PyObject *item[3], *function[2];
    int fits = shaped(call, CALL_KEYS, 3, item);
    if (fits > 0) {
        fits = shaped(item[2], FUNCTION_KEYS, 2, function);
    }
    if (fits <= 0) {
        return fits < 0 ? -1 : 1;
    }
    PyObject *values[4] = {item[0], item[1], function[0], function[1]};
    return put_members(b, MEMBERS, values, 4, "}}");
}

static int
put_calls(Buffer *b, PyObject *calls)
{
    if (calls == NULL || calls == Py_None) {
        return PUT(b, "null");
    }
    return PyList_CheckExact(calls) ? put_list(b, calls, put_call) : 1;
}

static int
put_message(Buffer *b, PyObject *value)
{
    static const int MESSAGE_KEYS[] = {ROLE, CONTENT, REASONING, TOOL_CALLS, TOOL_CALL_ID, NAME};
    static const Member MEMBERS[] = {
        MEMBER("{\"role\":", AS_STR),
        MEMBER(",\"content\":", AS_STR),
        MEMBER(",\"reasoning_content\":", AS_NULLABLE),
        MEMBER(",\"tool_calls\":", AS_CALLS),
        MEMBER(",\"tool_call_id\":", AS_NULLABLE),
        MEMBER(",\"name\":", AS_NULLABLE),
    };
    PyObject *item[6];
    int fits = shaped(value, MESSAGE_KEYS, 6, item);
    if (fits <= 0) {
        return fits < 0 ? -1 : 1;
    }
    return put_members(b, MEMBERS, item, 6, "}");
}

static PyObject *
messages_json(PyObject *module, PyObject *values)
{
    (void)module;
    if (!PyList_CheckExact(values)) {
        Py_RETURN_NONE;
    }
    Buffer b = {NULL, 0, 0};
    int done = put_list(&b, values, put_message);
    PyObject *out = NULL;
    if (done == 0) {
        out = PyBytes_FromStringAndSize(b.data, b.size);
    }
    else if (done > 0) {
        out = Py_NewRef(Py_None);
    }
    PyMem_Free(b.data);
    return out;
}

static PyMethodDef methods[] = {
    {"message", message, METH_O,
     "message(value) -> the message conformed, or None when not of the usual shape"},
    {"tool", tool, METH_O,
     "tool(value) -> the tool conformed, or None when not of the usual shape"},
    {"messages", messages, METH_O,
     "messages(values) -> every message conformed, or None when one is not of the usual shape"},
    {"messages_json", messages_json, METH_O,
     "messages_json(values) -> orjson.dumps of every message conformed, or None when one is "
     "not of the usual shape"},
    {"tools", tools, METH_O,
     "tools(values) -> every tool conformed, or None when one is not of the usual shape"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "transforms.sinks._conform", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__conform(void)
{
    for (int k = 0; k < KEYS; k++) {
        KEY[k] = PyUnicode_InternFromString(KEY_TEXT[k]);
        if (KEY[k] == NULL) {
            return NULL;
        }
    }
    return PyModule_Create(&module);
}
