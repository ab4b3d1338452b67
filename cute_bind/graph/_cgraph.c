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
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef int (*set_params_fn)(void *graph_exec, void *node, const void *params);
typedef int (*graph_launch_fn)(void *graph_exec, void *stream);

/* an unsigned 64-bit address from a Python int (no other type: a float or a
 * str is a caller bug, not something to convert) */
static int address_of(PyObject *obj, const char *what, int allow_null, uint64_t *out) {
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int address, got %R", what, (PyObject *)Py_TYPE(obj));
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be an address in [0, 2**64), got %R", what, obj);
        return -1;
    }
    if (!allow_null && v == 0) {
        PyErr_Format(PyExc_ValueError, "%s must not be null", what);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

static PyObject *failure(const char *call, int code) {
    return Py_BuildValue("(si)", call, code);
}

static PyObject *cg_replay(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *set_obj, *launch_obj, *exec_obj, *dirty, *stream_obj;
    if (!PyArg_ParseTuple(args, "OOOOO:replay", &set_obj, &launch_obj, &exec_obj, &dirty, &stream_obj))
        return NULL;
    uint64_t set_addr, launch_addr, exec_addr, stream_addr;
    if (address_of(set_obj, "set_params", 0, &set_addr) < 0 || address_of(launch_obj, "launch", 0, &launch_addr) < 0 ||
        address_of(exec_obj, "graph_exec", 0, &exec_addr) < 0 || address_of(stream_obj, "stream", 1, &stream_addr) < 0)
        return NULL;
    if (!PyDict_Check(dirty)) {
        PyErr_Format(PyExc_TypeError, "dirty must be a dict, got %R", (PyObject *)Py_TYPE(dirty));
        return NULL;
    }
    set_params_fn set_params = (set_params_fn)(uintptr_t)set_addr;
    graph_launch_fn launch = (graph_launch_fn)(uintptr_t)launch_addr;
    void *graph_exec = (void *)(uintptr_t)exec_addr;

    Py_ssize_t n = PyDict_Size(dirty);
    if (n > 0) {
        /* a snapshot of the pairs (owned references), so that nothing a call
         * could run can change what is iterated or free a pair mid-loop */
        PyObject *values = PyDict_Values(dirty);
        if (values == NULL)
            return NULL;
        n = PyList_Size(values);
        uint64_t *pairs = (uint64_t *)PyMem_Malloc(sizeof(uint64_t) * 2 * (size_t)(n > 0 ? n : 1));
        if (pairs == NULL) {
            Py_DECREF(values);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *pair = PyList_GetItem(values, i); /* borrowed from the owned list */
            if (pair == NULL || !PyTuple_Check(pair) || PyTuple_Size(pair) != 2) {
                PyErr_Format(PyExc_TypeError, "dirty values must be (node, params) address pairs, got %R",
                             pair ? (PyObject *)Py_TYPE(pair) : Py_None);
                goto bad;
            }
            if (address_of(PyTuple_GetItem(pair, 0), "node", 0, &pairs[2 * i]) < 0 ||
                address_of(PyTuple_GetItem(pair, 1), "params", 0, &pairs[2 * i + 1]) < 0)
                goto bad;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            int err = set_params(graph_exec, (void *)(uintptr_t)pairs[2 * i], (const void *)(uintptr_t)pairs[2 * i + 1]);
            if (err != 0) {
                PyMem_Free(pairs);
                Py_DECREF(values);
                return failure("cuGraphExecKernelNodeSetParams", err);
            }
        }
        PyMem_Free(pairs);
        Py_DECREF(values);
        goto launch;
    bad:
        PyMem_Free(pairs);
        Py_DECREF(values);
        return NULL;
    }
launch:;
    int err = launch(graph_exec, (void *)(uintptr_t)stream_addr);
    if (err != 0)
        return failure("cuGraphLaunch", err);
    PyDict_Clear(dirty);
    Py_RETURN_NONE;
}

static PyMethodDef cg_methods[] = {
    {"replay", cg_replay, METH_VARARGS,
     "replay(set_params, launch, graph_exec, dirty, stream) -> None | (call, code): rewrite every "
     "(node, params) pair of dirty, launch the graph, empty dirty; or the first failing call and its CUresult."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cg_module = {
    PyModuleDef_HEAD_INIT, "_cgraph", "C replay loop of cute_bind.graph (driver calls through function pointers).", -1, cg_methods,
};

PyMODINIT_FUNC PyInit__cgraph(void) { return PyModule_Create(&cg_module); }
