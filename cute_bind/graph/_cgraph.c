/*
 * Optional C replay loop of cute_bind.graph (stable ABI, Python >= 3.10).
 *
 * Replaying a graph with updated values is, per changed kernel node, one
 * cuGraphExecKernelNodeSetParams call, then one cuGraphLaunch. Through
 * cuda.bindings each call costs a microsecond or more of argument conversion
 * on the host, which is most of a replay's cost; here both are plain C calls
 * through driver function pointers that cute_bind.graph.driver looked up
 * once (the same entry points cuda.bindings resolves).
 *
 *   replay(set_params, launch, graph_exec, dirty, stream) -> None | (call, code)
 *
 * `set_params` and `launch` are the addresses of the driver's
 * cuGraphExecKernelNodeSetParams(_v2) and cuGraphLaunch; `graph_exec` and
 * `stream` are raw handles. `dirty` is a dict whose values are
 * `(node, params)` pairs of raw addresses: a CUgraphNode and the
 * CUDA_KERNEL_NODE_PARAMS record to copy into it (the Python side owns the
 * record and the argument buffers it points to, and keeps them alive).
 *
 * Every node is rewritten, then the graph is launched; on success `dirty` is
 * emptied and None returned. The first failing call stops the loop and its
 * name and CUresult come back as a tuple, `dirty` untouched, for the caller
 * to raise its catalog error (a retry rewrites every node again). Arguments
 * are checked before any call: a non-dict, a value that is not a pair of
 * non-negative ints, or a null function address is a TypeError/ValueError.
 * The GIL is held throughout: the driver calls are short and non-blocking.
 *
 *   PointerSetter(ref, dirty, slow).set(value) -> None
 *   set_pointers(setters, values) -> None | False
 *
 * The staging half of a replay with new pointers (Graph.updater and
 * Graph.updaters): `ref` is the recorder's list [bytearray, offset, key,
 * pair] naming where one pointer parameter lives in one node's argument
 * buffer; set(value) writes an exact int in [0, 2**64) there (8 bytes,
 * little-endian, as the "<Q" struct the Python path packs) and marks the
 * node dirty (dirty[key] = pair). Anything else (another type, an
 * out-of-range int, a ref cleared by close() or a re-record) goes to
 * slow(value), the recorder's checked path, which raises the catalog error.
 * set_pointers does the same for a tuple of setters and a list or tuple of as
 * many values; another length or type returns False and writes nothing.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../launch/_cb_common.h" /* cb_address_of, CB_SETREF, the type and module boilerplate */

typedef int (*set_params_fn)(void *graph_exec, void *node, const void *params);
typedef int (*graph_launch_fn)(void *graph_exec, void *stream);

static PyObject *failure(const char *call, int code) {
    return Py_BuildValue("(si)", call, code);
}

/* the (node, params) pair of one dirty entry as two addresses; -1 with an exception set */
static int pair_of(PyObject *pair, uint64_t *node, uint64_t *params) {
    if (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2) {
        PyErr_Format(PyExc_TypeError, "dirty values must be (node, params) address pairs, got %R", (PyObject *)Py_TYPE(pair));
        return -1;
    }
    if (cb_address_of(PyTuple_GetItem(pair, 0), "node", 0, node) < 0 || cb_address_of(PyTuple_GetItem(pair, 1), "params", 0, params) < 0)
        return -1;
    return 0;
}

static PyObject *cg_replay(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "replay() takes 5 arguments (set_params, launch, graph_exec, dirty, stream), got %zd", nargs);
        return NULL;
    }
    uint64_t set_addr, launch_addr, exec_addr, stream_addr;
    if (cb_address_of(args[0], "set_params", 0, &set_addr) < 0 || cb_address_of(args[1], "launch", 0, &launch_addr) < 0 ||
        cb_address_of(args[2], "graph_exec", 0, &exec_addr) < 0 || cb_address_of(args[4], "stream", 1, &stream_addr) < 0)
        return NULL;
    PyObject *dirty = args[3];
    if (!PyDict_Check(dirty)) {
        PyErr_Format(PyExc_TypeError, "dirty must be a dict, got %R", (PyObject *)Py_TYPE(dirty));
        return NULL;
    }
    set_params_fn set_params = (set_params_fn)(uintptr_t)set_addr;
    graph_launch_fn launch = (graph_launch_fn)(uintptr_t)launch_addr;
    void *graph_exec = (void *)(uintptr_t)exec_addr;

    /* every pair read (and checked) into a C array before the first driver call: a bad one
     * rewrites nothing, and a call that ran Python code and changed the dict could neither
     * disturb the loop nor free what it reads (the real driver never does; a test's does) */
    Py_ssize_t n = PyDict_Size(dirty);
    uint64_t local[2 * 128];
    uint64_t *pairs = local;
    if (n > 128) {
        pairs = (uint64_t *)PyMem_Malloc(sizeof(uint64_t) * 2 * (size_t)n);
        if (pairs == NULL)
            return PyErr_NoMemory();
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *pair;
    while (i < n && PyDict_Next(dirty, &pos, &key, &pair)) {
        if (pair_of(pair, &pairs[2 * i], &pairs[2 * i + 1]) < 0) {
            if (pairs != local)
                PyMem_Free(pairs);
            return NULL;
        }
        i++;
    }
    for (Py_ssize_t k = 0; k < i; k++) {
        int err = set_params(graph_exec, (void *)(uintptr_t)pairs[2 * k], (const void *)(uintptr_t)pairs[2 * k + 1]);
        if (err != 0) {
            if (pairs != local)
                PyMem_Free(pairs);
            return failure("cuGraphExecKernelNodeSetParams", err);
        }
    }
    if (pairs != local)
        PyMem_Free(pairs);
    int err = launch(graph_exec, (void *)(uintptr_t)stream_addr);
    if (err != 0)
        return failure("cuGraphLaunch", err);
    PyDict_Clear(dirty);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ pointer setters */
typedef struct {
    PyObject_HEAD
    PyObject *ref;   /* the recorder's [bytearray or None, offset, key, pair] (shared, rewritten by re-records) */
    PyObject *dirty; /* the graph's dirty dict */
    PyObject *slow;  /* value -> None: the checked path */
} PointerSetter;

static PyObject *setter_type; /* set at module init (held for the life of the process) */

/* 1: written and marked dirty; 0: not taken (the slow path's value); -1: an error (a dict store failed) */
static int setter_fast(PointerSetter *ps, PyObject *value) {
    if (!PyLong_CheckExact(value))
        return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear(); /* negative or past 2**64: the slow path raises the catalog error */
        return 0;
    }
    PyObject *r = ps->ref;
    if (!PyList_Check(r) || PyList_Size(r) != 4)
        return 0;
    PyObject *buf = PyList_GetItem(r, 0);
    if (buf == NULL || !PyByteArray_Check(buf)) /* None: closed, or several locations after a re-record */
        return 0;
    Py_ssize_t off = PyLong_AsSsize_t(PyList_GetItem(r, 1));
    if (off == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (off < 0 || off > PyByteArray_Size(buf) - 8)
        return 0;
    /* the node marked first, then its bytes written: a key's __hash__ runs Python code, which may
     * rewrite `ref` (strong references held across it) or make the store fail (then nothing is
     * written, so a retry of the same value is not taken for "no change") */
    PyObject *key = PyList_GetItem(r, 2), *pair = PyList_GetItem(r, 3), *dirty = ps->dirty;
    Py_INCREF(key);
    Py_INCREF(pair);
    Py_INCREF(dirty);
    Py_INCREF(buf);
    int rc = PyDict_SetItem(dirty, key, pair);
    if (rc == 0 && off <= PyByteArray_Size(buf) - 8) { /* the buffer may not shrink (ctypes holds an export); checked again */
        unsigned char *p = (unsigned char *)PyByteArray_AsString(buf) + off;
        for (int i = 0; i < 8; i++)
            p[i] = (unsigned char)(v >> (8 * i));
    }
    Py_DECREF(buf);
    Py_DECREF(dirty);
    Py_DECREF(pair);
    Py_DECREF(key);
    return rc < 0 ? -1 : 1;
}

static int setter_set_one(PointerSetter *ps, PyObject *value) {
    if (ps->ref == NULL || ps->dirty == NULL || ps->slow == NULL) {
        PyErr_SetString(PyExc_TypeError, "PointerSetter is not initialised");
        return -1;
    }
    int done = setter_fast(ps, value);
    if (done != 0)
        return done < 0 ? -1 : 0;
    PyObject *slow = ps->slow;
    Py_INCREF(slow); /* held across the call: nothing it runs can free it */
    PyObject *res = PyObject_CallFunctionObjArgs(slow, value, NULL);
    Py_DECREF(slow);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

static PyObject *setter_set(PyObject *self, PyObject *value) {
    if (setter_set_one((PointerSetter *)self, value) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int setter_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *ref, *dirty, *slow;
    if (cb_no_keywords(kwargs, "PointerSetter() takes no keyword arguments") < 0 ||
        !PyArg_ParseTuple(args, "OOO:PointerSetter", &ref, &dirty, &slow) ||
        cb_init_once(((PointerSetter *)self)->ref != NULL, "PointerSetter") < 0)
        return -1;
    if (!PyList_Check(ref) || PyList_Size(ref) != 4) {
        PyErr_Format(PyExc_TypeError, "ref must be a list of 4 ([buffer, offset, key, pair]), got %R", (PyObject *)Py_TYPE(ref));
        return -1;
    }
    if (!PyDict_Check(dirty)) {
        PyErr_Format(PyExc_TypeError, "dirty must be a dict, got %R", (PyObject *)Py_TYPE(dirty));
        return -1;
    }
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "slow must be callable");
        return -1;
    }
    PointerSetter *ps = (PointerSetter *)self;
    Py_INCREF(ref);
    Py_INCREF(dirty);
    Py_INCREF(slow);
    CB_SETREF(ps->ref, ref);
    CB_SETREF(ps->dirty, dirty);
    CB_SETREF(ps->slow, slow);
    return 0;
}

/* What a PointerSetter owns (CB_VISIT_REF, CB_CLEAR_REF) */
#define SETTER_REFS(X, ps) X(ps, ref) X(ps, dirty) X(ps, slow)

static int setter_traverse(PyObject *self, visitproc visit, void *arg) {
    SETTER_REFS(CB_VISIT_REF, (PointerSetter *)self)
    Py_VISIT((PyObject *)Py_TYPE(self));
    return 0;
}

static int setter_clear(PyObject *self) {
    SETTER_REFS(CB_CLEAR_REF, (PointerSetter *)self)
    return 0;
}

static PyMethodDef setter_methods[] = {
    {"set", setter_set, METH_O,
     "set($self, value, /)\n--\n\nWrite an int address into the node buffer and mark the node dirty; anything else: slow(value)."},
    {NULL, NULL, 0, NULL},
};

CB_TYPE_SPEC(setter, "cute_bind.graph._cgraph.PointerSetter", PointerSetter, Py_TPFLAGS_HAVE_GC,
             CB_INIT_GC_SLOTS(setter_init, cb_gc_dealloc, setter_traverse, setter_clear, setter_methods),
             {Py_tp_doc, "PointerSetter(ref, dirty, slow, /)\n--\n\nStage one pointer parameter of one graph node (Graph.updater's fast path)."});

static PyObject *cg_set_pointers(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "set_pointers() takes 2 arguments (setters, values), got %zd", nargs);
        return NULL;
    }
    PyObject *setters = args[0], *values = args[1];
    if (!PyTuple_Check(setters)) {
        PyErr_Format(PyExc_TypeError, "setters must be a tuple, got %R", (PyObject *)Py_TYPE(setters));
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(setters);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyObject_TypeCheck(PyTuple_GetItem(setters, i), (PyTypeObject *)setter_type)) {
            PyErr_Format(PyExc_TypeError, "setters must be PointerSetter objects, got %R", (PyObject *)Py_TYPE(PyTuple_GetItem(setters, i)));
            return NULL;
        }
    int is_list = PyList_Check(values);
    if (!(is_list || PyTuple_Check(values)) || (is_list ? PyList_Size(values) : PyTuple_Size(values)) != n) {
        Py_INCREF(Py_False);
        return Py_False; /* the caller raises its catalog error */
    }
    /* the values as the call gave them: a list is read from a snapshot tuple, so a slow path's
     * Python code that changes the list (or frees one of its values) changes nothing read here */
    PyObject *items = is_list ? PyList_AsTuple(values) : values;
    if (items == NULL)
        return NULL;
    if (!is_list)
        Py_INCREF(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        int rc = setter_set_one((PointerSetter *)PyTuple_GetItem(setters, i), PyTuple_GetItem(items, i));
        if (rc < 0) {
            Py_DECREF(items);
            return NULL;
        }
    }
    Py_DECREF(items);
    Py_RETURN_NONE;
}

static PyMethodDef cg_methods[] = {
    {"replay", (PyCFunction)(void (*)(void))cg_replay, METH_FASTCALL,
     "replay(set_params, launch, graph_exec, dirty, stream) -> None | (call, code): rewrite every "
     "(node, params) pair of dirty, launch the graph, empty dirty; or the first failing call and its CUresult."},
    {"set_pointers", (PyCFunction)(void (*)(void))cg_set_pointers, METH_FASTCALL,
     "set_pointers(setters, values) -> None | False: setters[i].set(values[i]) for each i; False (nothing written) "
     "when values is not a list or tuple of len(setters) values."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cg_module = {
    PyModuleDef_HEAD_INIT, "_cgraph", "C replay loop of cute_bind.graph (driver calls through function pointers).", -1, cg_methods,
};

PyMODINIT_FUNC PyInit__cgraph(void) {
    static const cb_export exports[] = {{"PointerSetter", &setter_spec, &setter_type}};
    return CB_MODULE_INIT(&cg_module, exports);
}
