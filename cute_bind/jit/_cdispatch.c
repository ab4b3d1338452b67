/*
 * Optional C fast path of Kernel.__call__ (stable ABI, Python >= 3.10).
 *
 * `CallBase` is the base class of cute_bind.Kernel when this extension is
 * built. Its tp_call is the whole hit path of `kernel(*args, **kwargs)`:
 *
 *   1. find the calling thread's state: one dict look-up in the thread-state
 *      dict (PyThreadState_GetDict) under the kernel's current token;
 *   2. call the thread's current caller (a prepared handle's launch, or a
 *      small Python closure) with the call's own arguments; a call that
 *      leaves out a trailing stream parameter (exactly `fill_n` positional
 *      arguments, no keywords) gets `stream_fn()` appended first;
 *      A caller of None sends every call to the dispatch path (a thread
 *      whose calls keep changing key skips the handle's refusal);
 *   3. on success count a hit; on an exception of the `fallback` classes (a
 *      value the handle does not take before launching) clear it and call
 *      the Python dispatch path `dispatch(args, kwargs or None)`, which owns
 *      every decision and every error message.
 *
 * Nothing else happens here: the Python side (cute_bind/jit/dispatch.py) sets
 * a thread's caller (`_set_call`), counts hits found on the dispatch path
 * (`_count_hit`), sums hits (`_hits`) and replaces the token on a reset
 * (`_reset_calls`), which drops every thread's state at once.
 *
 * Each thread's state is a `_ThreadState` object owned by that thread's
 * state dict (and listed in the kernel's `states` list for the hit sums).
 * The GIL is held throughout; references held across the call are owned.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Py_XSETREF is not part of the limited API */
#define CB_XSETREF(dst, src) do { PyObject *_old = (PyObject *)(dst); (dst) = (src); Py_XDECREF(_old); } while (0)

typedef struct {
    PyObject_HEAD
    PyObject *call;          /* the thread's current caller (owned) */
    PyObject *stream_fn;     /* () -> stream, for a call that leaves its last (stream) argument out (owned) */
    Py_ssize_t fill_n;       /* the positional count of such a call (-1: none) */
    long long hits;
} ThreadState;

typedef struct {
    PyObject_HEAD
    PyObject *token;         /* key of this kernel's entry in each thread-state dict (owned) */
    PyObject *dispatch;      /* the Python dispatch path: dispatch(args, kwargs or None) (owned) */
    PyObject *fallback;      /* tuple of exception classes that send a call to `dispatch` (owned) */
    PyObject *states;        /* list of every ThreadState made under `token` (owned) */
} CallBase;

static PyObject *ThreadState_type = NULL;

/* ------------------------------------------------------------------ ThreadState */
static void ThreadState_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(((ThreadState *)self)->call);
    Py_CLEAR(((ThreadState *)self)->stream_fn);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static int ThreadState_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((ThreadState *)self)->call);
    Py_VISIT(((ThreadState *)self)->stream_fn);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int ThreadState_clear(PyObject *self) {
    Py_CLEAR(((ThreadState *)self)->call);
    Py_CLEAR(((ThreadState *)self)->stream_fn);
    return 0;
}

static PyType_Slot ThreadState_slots[] = {
    {Py_tp_dealloc, ThreadState_dealloc},
    {Py_tp_traverse, ThreadState_traverse},
    {Py_tp_clear, ThreadState_clear},
    {Py_tp_doc, "One thread's call state of one kernel (internal)."},
    {0, NULL},
};

static PyType_Spec ThreadState_spec = {
    "cute_bind.jit._cdispatch._ThreadState", sizeof(ThreadState), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, ThreadState_slots,
};

/* ------------------------------------------------------------------ CallBase */
static PyObject *call_dispatch(CallBase *self, PyObject *args, PyObject *kwargs) {
    if (self->dispatch == NULL) {
        PyErr_SetString(PyExc_TypeError, "kernel not initialised");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(self->dispatch, args, kwargs ? kwargs : Py_None, NULL);
}

/* The calling thread's state under the current token (borrowed), or NULL without an error set. */
static ThreadState *find_state(CallBase *self) {
    if (self->token == NULL) {
        return NULL;
    }
    PyObject *tsd = PyThreadState_GetDict();
    if (tsd == NULL) {
        return NULL;
    }
    PyObject *found = PyDict_GetItemWithError(tsd, self->token);
    if (found == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if ((PyObject *)Py_TYPE(found) != ThreadState_type) {
        return NULL; /* only this module stores under a token; anything else is not ours to call */
    }
    return (ThreadState *)found;
}

/* `args` plus the stream from `stream_fn()` as one more positional argument (new reference), or NULL. */
static PyObject *with_stream(PyObject *args, Py_ssize_t n, PyObject *stream_fn) {
    Py_INCREF(stream_fn);
    PyObject *stream = PyObject_CallNoArgs(stream_fn);
    Py_DECREF(stream_fn);
    if (stream == NULL) {
        return NULL;
    }
    PyObject *full = PyTuple_New(n + 1);
    if (full == NULL) {
        Py_DECREF(stream);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GetItem(args, i);
        if (item == NULL) {
            Py_DECREF(stream);
            Py_DECREF(full);
            return NULL;
        }
        Py_INCREF(item);
        PyTuple_SetItem(full, i, item); /* steals */
    }
    PyTuple_SetItem(full, n, stream); /* steals */
    return full;
}

static PyObject *CallBase_call(PyObject *self_, PyObject *args, PyObject *kwargs) {
    CallBase *self = (CallBase *)self_;
    ThreadState *st = find_state(self);
    if (st != NULL && st->call != NULL && st->call != Py_None) { /* None: every call dispatches */
        /* own both across the call: the dispatch path may replace them */
        PyObject *call = st->call;
        Py_INCREF(st);
        Py_INCREF(call);
        PyObject *result;
        int no_kwargs = kwargs == NULL || PyDict_Size(kwargs) == 0;
        if (st->fill_n >= 0 && st->stream_fn != NULL && no_kwargs && PyTuple_Size(args) == st->fill_n) {
            /* the stream left out: append the current one (an error here: the dispatch path reports it) */
            PyObject *full = with_stream(args, st->fill_n, st->stream_fn);
            if (full == NULL) {
                Py_DECREF(call);
                Py_DECREF(st);
                PyErr_Clear();
                return call_dispatch(self, args, kwargs);
            }
            result = PyObject_Call(call, full, NULL);
            Py_DECREF(full);
        } else {
            result = PyObject_Call(call, args, kwargs);
        }
        Py_DECREF(call);
        if (result != NULL) {
            st->hits++;
            Py_DECREF(st);
            return result;
        }
        Py_DECREF(st);
        if (self->fallback == NULL || !PyErr_ExceptionMatches(self->fallback)) {
            return NULL;
        }
        PyErr_Clear();
    }
    return call_dispatch(self, args, kwargs);
}

static PyObject *CallBase_reset_calls(PyObject *self_, PyObject *args) {
    CallBase *self = (CallBase *)self_;
    PyObject *dispatch, *fallback;
    if (!PyArg_ParseTuple(args, "OO!:_reset_calls", &dispatch, &PyTuple_Type, &fallback)) {
        return NULL;
    }
    if (!PyCallable_Check(dispatch)) {
        PyErr_SetString(PyExc_TypeError, "_reset_calls: dispatch must be callable");
        return NULL;
    }
    /* a fresh plain object: it hashes by identity, so no other key can equal it */
    PyObject *token = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (token == NULL) {
        return NULL;
    }
    PyObject *states = PyList_New(0);
    if (states == NULL) {
        Py_DECREF(token);
        return NULL;
    }
    Py_INCREF(dispatch);
    Py_INCREF(fallback);
    CB_XSETREF(self->dispatch, dispatch);
    CB_XSETREF(self->fallback, fallback);
    CB_XSETREF(self->token, token);
    PyObject *old = self->states; /* owned: swapped out before its states are cleared */
    self->states = states;
    /* the old states are unreachable now (their token is gone): drop their callers and handles */
    if (old != NULL) {
        Py_ssize_t n = PyList_Size(old);
        for (Py_ssize_t i = 0; i < n; i++) {
            ThreadState *st = (ThreadState *)PyList_GetItem(old, i);
            if (st != NULL) {
                Py_CLEAR(st->call);
                Py_CLEAR(st->stream_fn);
                st->fill_n = -1;
            }
        }
        Py_DECREF(old);
    }
    Py_RETURN_NONE;
}

static ThreadState *get_or_make_state(CallBase *self) {
    if (self->token == NULL || self->states == NULL) {
        PyErr_SetString(PyExc_TypeError, "kernel not initialised");
        return NULL;
    }
    ThreadState *st = find_state(self);
    if (st != NULL) {
        return st;
    }
    PyObject *tsd = PyThreadState_GetDict();
    if (tsd == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no thread-state dict");
        return NULL;
    }
    PyTypeObject *tp = (PyTypeObject *)ThreadState_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    st = (ThreadState *)alloc(tp, 0);
    if (st == NULL) {
        return NULL;
    }
    st->call = NULL;
    st->stream_fn = NULL;
    st->fill_n = -1;
    st->hits = 0;
    if (PyDict_SetItem(tsd, self->token, (PyObject *)st) < 0 || PyList_Append(self->states, (PyObject *)st) < 0) {
        Py_DECREF(st);
        return NULL;
    }
    Py_DECREF(st); /* owned by the thread-state dict and the list */
    return st;
}

static PyObject *CallBase_set_call(PyObject *self_, PyObject *args) {
    PyObject *call, *stream_fn = Py_None;
    Py_ssize_t fill_n = -1;
    if (!PyArg_ParseTuple(args, "O|nO:_set_call", &call, &fill_n, &stream_fn)) {
        return NULL;
    }
    if (fill_n >= 0 && !PyCallable_Check(stream_fn)) {
        PyErr_SetString(PyExc_TypeError, "_set_call: stream_fn must be callable when fill_n >= 0");
        return NULL;
    }
    ThreadState *st = get_or_make_state((CallBase *)self_);
    if (st == NULL) {
        return NULL;
    }
    Py_INCREF(call);
    CB_XSETREF(st->call, call);
    if (fill_n >= 0) {
        Py_INCREF(stream_fn);
        CB_XSETREF(st->stream_fn, stream_fn);
    } else {
        Py_CLEAR(st->stream_fn);
    }
    st->fill_n = fill_n;
    Py_RETURN_NONE;
}

static PyObject *CallBase_count_hit(PyObject *self_, PyObject *unused) {
    ThreadState *st = get_or_make_state((CallBase *)self_);
    if (st == NULL) {
        return NULL;
    }
    st->hits++;
    Py_RETURN_NONE;
}

static PyObject *CallBase_hits(PyObject *self_, PyObject *unused) {
    CallBase *self = (CallBase *)self_;
    long long total = 0;
    if (self->states != NULL) {
        Py_ssize_t n = PyList_Size(self->states);
        for (Py_ssize_t i = 0; i < n; i++) {
            ThreadState *st = (ThreadState *)PyList_GetItem(self->states, i);
            if (st != NULL) {
                total += st->hits;
            }
        }
    }
    return PyLong_FromLongLong(total);
}

static int CallBase_traverse(PyObject *self_, visitproc visit, void *arg) {
    CallBase *self = (CallBase *)self_;
    Py_VISIT(self->token);
    Py_VISIT(self->dispatch);
    Py_VISIT(self->fallback);
    Py_VISIT(self->states);
    Py_VISIT(Py_TYPE(self_)); /* a heap base type visits the type (subtype_traverse leaves it to us) */
    return 0;
}

static int CallBase_clear(PyObject *self_) {
    CallBase *self = (CallBase *)self_;
    Py_CLEAR(self->token);
    Py_CLEAR(self->dispatch);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->states);
    return 0;
}

static void CallBase_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    CallBase_clear(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef CallBase_methods[] = {
    {"_reset_calls", CallBase_reset_calls, METH_VARARGS,
     "_reset_calls(dispatch, fallback): a new token (every thread's state dropped), the dispatch path and the fallback classes."},
    {"_set_call", CallBase_set_call, METH_VARARGS,
     "_set_call(caller[, fill_n, stream_fn]): the calling thread's current caller; a call of exactly fill_n positional "
     "arguments and no keywords gets stream_fn() appended."},
    {"_count_hit", CallBase_count_hit, METH_NOARGS, "Count one hit for the calling thread (a hit found on the dispatch path)."},
    {"_hits", CallBase_hits, METH_NOARGS, "Hits of every thread since the last reset."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot CallBase_slots[] = {
    {Py_tp_call, CallBase_call},
    {Py_tp_dealloc, CallBase_dealloc},
    {Py_tp_traverse, CallBase_traverse},
    {Py_tp_clear, CallBase_clear},
    {Py_tp_methods, CallBase_methods},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_doc, "C fast path of Kernel.__call__ (base class of cute_bind.Kernel)."},
    {0, NULL},
};

static PyType_Spec CallBase_spec = {
    "cute_bind.jit._cdispatch.CallBase", sizeof(CallBase), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, CallBase_slots,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_cdispatch", "C fast path of Kernel.__call__.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__cdispatch(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) {
        return NULL;
    }
    ThreadState_type = PyType_FromSpec(&ThreadState_spec);
    if (ThreadState_type == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *base = PyType_FromSpec(&CallBase_spec);
    if (base == NULL || PyModule_AddObject(m, "CallBase", base) < 0) {
        Py_XDECREF(base);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(ThreadState_type);
    if (PyModule_AddObject(m, "_ThreadState", ThreadState_type) < 0) {
        Py_DECREF(ThreadState_type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
