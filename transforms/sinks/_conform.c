/* The fast paths of schema conforming in C: a message, tool call or tool of the usual shape.
 *
 * `message(value)` and `tool(value)` do what `schema._message` and `schema._tool` do: a dict
 * whose every key is one the schema names and whose every value has the field's type (`str`
 * exactly, `None` where the field is nullable; a message's calls a list of such calls)
 * becomes a new dict with the schema's keys in the schema's order, values kept as the same
 * objects; anything else gives None, and the caller conforms it the general way. So a None
 * is never wrong, only slower (tests/test_output_schema.py compares the two on odd shapes).
 * Most of a record is messages: this takes about 0.2 us a message where the compiled Python
 * takes 0.5 us. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

static PyMethodDef methods[] = {
    {"message", message, METH_O,
     "message(value) -> the message conformed, or None when not of the usual shape"},
    {"tool", tool, METH_O,
     "tool(value) -> the tool conformed, or None when not of the usual shape"},
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
