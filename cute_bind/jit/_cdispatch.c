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
 * Lifetimes. A thread-state dict lives as long as its thread, a kernel often
 * much less (dropped, or reset by clear_cache()). So what the thread-state
 * dict holds is a `_Slot`: a small object that owns nothing, only a borrowed
 * pointer to the thread's `_ThreadState`. The states, which own the callers
 * (and through them the handles and compiled modules), are owned by the
 * kernel alone (its `states` list), so they go with the kernel, and a caller
 * that refers back to the kernel makes a cycle the collector can see (the
 * thread-state dict is a root: nothing reachable from it could be collected).
 * The two borrowed pointers are kept in step by both deallocators:
 *
 *   - a kernel reset or gone: its states are unlinked from their slots and
 *     dropped; each slot left behind is a *husk* (state NULL, counted in
 *     `husks`). The calling thread's husk is removed at once; other threads'
 *     are removed by their own next state creation (a sweep of their dict,
 *     only while husks exist) or with their thread;
 *   - a thread gone: its dict drops its slots; each slot's state releases its
 *     caller (nobody can call it any more) and keeps its hit count, folded
 *     into the kernel's `retired` count when the list is next compacted.
 *
 * The GIL is held throughout; references held across the call are owned.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../launch/_cb_common.h" /* CB_SETREF, cb_decline, the type and module boilerplate */

typedef struct ThreadState ThreadState;

typedef struct {
    PyObject_HEAD
    ThreadState *state;      /* borrowed (the kernel owns it); NULL once detached: a husk */
    int husk;                /* 1 while counted in `husks` */
} Slot;

struct ThreadState {
    PyObject_HEAD
    PyObject *call;          /* the thread's current caller (owned) */
    PyObject *stream_fn;     /* () -> stream, for a call that leaves its last (stream) argument out (owned) */
    Py_ssize_t fill_n;       /* the positional count of such a call (-1: none) */
    PyObject *routes;        /* tuple of routes tried in order for a call without keywords, or NULL (owned) */
    long long hits;
    Slot *slot;              /* borrowed (the thread-state dict owns it); NULL once its thread is gone or detached */
};

typedef struct {
    PyObject_HEAD
    PyObject *token;         /* key of this kernel's slot in each thread-state dict (owned) */
    PyObject *dispatch;      /* the Python dispatch path: dispatch(args, kwargs or None) (owned) */
    PyObject *fallback;      /* tuple of exception classes that send a call to `dispatch` (owned) */
    PyObject *states;        /* list of every ThreadState made under `token` (owned; their only owner) */
    PyObject *params;        /* (names, required, tail) of the positional parameters, or NULL: keyword calls dispatch (owned) */
    long long retired;       /* hits of states dropped from `states` since the reset (their threads are gone) */
} CallBase;

static PyObject *ThreadState_type = NULL;
static PyObject *Slot_type = NULL;
/* slots whose state was detached and that are still in some thread's dict (the sweep's trigger) */
static Py_ssize_t husks = 0;

/* Unlink a state from its slot (which becomes a husk); nothing is released. */
static void unlink_state(ThreadState *st) {
    Slot *slot = st->slot;
    if (slot != NULL) {
        slot->state = NULL;
        if (!slot->husk) {
            slot->husk = 1;
            husks++;
        }
        st->slot = NULL;
    }
}

/* ------------------------------------------------------------------ Slot */
static void Slot_dealloc(PyObject *self) {
    Slot *slot = (Slot *)self;
    PyObject *call = NULL, *stream_fn = NULL, *routes = NULL;
    ThreadState *st = slot->state;
    if (st != NULL) {
        /* the thread's dict let go of its slot: the thread is gone, so nobody calls this state again;
           its caller (and handle) go now, its hits stay with the kernel */
        st->slot = NULL;
        slot->state = NULL;
        call = st->call, stream_fn = st->stream_fn, routes = st->routes;
        st->call = st->stream_fn = st->routes = NULL;
        st->fill_n = -1;
    }
    if (slot->husk) {
        husks--;
    }
    cb_free_instance(self);
    /* last: releasing them may run arbitrary code, and every pointer is consistent by now */
    Py_XDECREF(call), Py_XDECREF(stream_fn), Py_XDECREF(routes);
}

CB_TYPE_SPEC(Slot, "cute_bind.jit._cdispatch._Slot", Slot, 0, {Py_tp_dealloc, Slot_dealloc},
             {Py_tp_doc, "One kernel's entry in one thread-state dict (internal): a borrowed pointer to the thread's state."});

/* ------------------------------------------------------------------ ThreadState */
/* What a ThreadState owns */
#define THREAD_STATE_REFS(X, st) X(st, call) X(st, stream_fn) X(st, routes)

static int ThreadState_clear(PyObject *self) {
    THREAD_STATE_REFS(CB_CLEAR_REF, (ThreadState *)self)
    return 0;
}

static void ThreadState_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    unlink_state((ThreadState *)self); /* its slot, if its thread still has it, becomes a husk */
    ThreadState_clear(self);
    cb_free_instance(self);
}

static int ThreadState_traverse(PyObject *self, visitproc visit, void *arg) {
    THREAD_STATE_REFS(CB_VISIT_REF, (ThreadState *)self)
    Py_VISIT(Py_TYPE(self));
    return 0;
}

CB_TYPE_SPEC(ThreadState, "cute_bind.jit._cdispatch._ThreadState", ThreadState, Py_TPFLAGS_HAVE_GC,
             CB_GC_SLOTS(ThreadState_dealloc, ThreadState_traverse, ThreadState_clear),
             {Py_tp_doc, "One thread's call state of one kernel (internal)."});

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
    if ((PyObject *)Py_TYPE(found) != Slot_type) {
        return NULL; /* only this module stores under a token; anything else is not ours to call */
    }
    return ((Slot *)found)->state; /* NULL for a husk */
}

/* Remove the calling thread's husk under `token`, if it has one (its dict is the only one we can reach). */
static void drop_own_husk(PyObject *token) {
    PyObject *tsd = PyThreadState_GetDict();
    if (tsd == NULL) {
        return;
    }
    PyObject *found = PyDict_GetItemWithError(tsd, token);
    if (found == NULL) {
        PyErr_Clear();
        return;
    }
    if ((PyObject *)Py_TYPE(found) == Slot_type && ((Slot *)found)->state == NULL && PyDict_DelItem(tsd, token) < 0) {
        PyErr_Clear();
    }
}

/* Detach every state of `states` (made under `token`): unlink each from its slot (a husk now), remove the
 * calling thread's husk, release the callers. Steals both references (either may be NULL); keeps any
 * exception that is set (it runs from deallocators too). */
static void detach(PyObject *states, PyObject *token) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (states != NULL) {
        Py_ssize_t n = PyList_Size(states);
        for (Py_ssize_t i = 0; i < n; i++) {
            ThreadState *st = (ThreadState *)PyList_GetItem(states, i);
            if (st != NULL) {
                unlink_state(st);
            }
        }
        if (token != NULL) {
            drop_own_husk(token);
        }
        /* a state held by a call in flight outlives the list: release its caller now all the same */
        for (Py_ssize_t i = 0; i < n; i++) {
            ThreadState *st = (ThreadState *)PyList_GetItem(states, i);
            if (st != NULL) {
                st->fill_n = -1;
                ThreadState_clear((PyObject *)st);
            }
        }
        Py_DECREF(states);
    }
    Py_XDECREF(token);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* Remove the calling thread's husks, while any exist in some thread (they own nothing but their token). */
static int sweep_husks(PyObject *tsd) {
    if (husks <= 0) {
        return 0;
    }
    PyObject *dead = PyList_New(0);
    if (dead == NULL) {
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(tsd, &pos, &key, &value)) {
        if ((PyObject *)Py_TYPE(value) == Slot_type && ((Slot *)value)->state == NULL && PyList_Append(dead, key) < 0) {
            Py_DECREF(dead);
            return -1;
        }
    }
    Py_ssize_t n = PyList_Size(dead);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key_i = PyList_GetItem(dead, i);
        if (key_i != NULL && PyDict_DelItem(tsd, key_i) < 0) {
            PyErr_Clear(); /* gone already: nothing to remove */
        }
    }
    Py_DECREF(dead);
    return 0;
}

/* Drop the states whose thread is gone (slot NULL, caller released) from `states`, their hits into `retired`.
 * An allocation may run the collector and with it a finaliser that resets this kernel: the list is held
 * and replaced only if it is still the kernel's. */
static int compact(CallBase *self) {
    PyObject *states = self->states;
    if (states == NULL) {
        return 0;
    }
    Py_ssize_t n = PyList_Size(states);
    if (n < 0) {
        return -1;
    }
    Py_ssize_t gone = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        ThreadState *st = (ThreadState *)PyList_GetItem(states, i);
        if (st == NULL) {
            return -1;
        }
        gone += st->slot == NULL;
    }
    if (gone == 0) {
        return 0;
    }
    Py_INCREF(states);
    PyObject *kept = PyList_New(0);
    if (kept == NULL) {
        Py_DECREF(states);
        return -1;
    }
    long long retired = 0;
    n = PyList_Size(states); /* the list is the kernel's: only a reset replaces it, never changes it in place */
    for (Py_ssize_t i = 0; i < n; i++) {
        ThreadState *st = (ThreadState *)PyList_GetItem(states, i);
        if (st == NULL) {
            Py_DECREF(kept);
            Py_DECREF(states);
            return -1;
        }
        if (st->slot == NULL) {
            retired += st->hits;
        } else if (PyList_Append(kept, (PyObject *)st) < 0) {
            Py_DECREF(kept);
            Py_DECREF(states);
            return -1;
        }
    }
    if (self->states == states) {
        self->retired += retired;
        CB_SETREF(self->states, kept);
    } else {
        Py_DECREF(kept); /* reset meanwhile: the old list is detached already */
    }
    Py_DECREF(states);
    return 0;
}

/* A stream reader (cute_bind.jit.streams.StreamReader, a tuple: work_stream address, device or -1, current_device
 * or None, keep, raw): torch's DLPack current_work_stream called from here, no Python call (issue 44 item 7). */
static int is_reader(PyObject *f) {
    /* a 5-tuple is never a callable getter: its fields are checked as they are read (a wrong one raises) */
    return PyTuple_Check(f) && PyTuple_Size(f) == 5;
}
/* The int of a stream handle (new reference): the last one made is kept, so that a thread launching on
 * one stream makes no int per call (the interpreter lock guards the pair). */
static void *last_stream = NULL;
static PyObject *last_stream_int = NULL;
static PyObject *stream_int(void *s) {
    if (last_stream_int != NULL && s == last_stream) {
        Py_INCREF(last_stream_int);
        return last_stream_int;
    }
    PyObject *made = PyLong_FromVoidPtr(s);
    if (made != NULL) {
        CB_SETREF(last_stream_int, Py_NewRef(made));
        last_stream = s;
    }
    return made;
}

/* `f()` (new reference), or NULL with an exception set; a reader is read without calling it. */
static PyObject *read_stream(PyObject *f) {
    PyObject *stream = NULL, *d = NULL;
    Py_INCREF(f); /* the caller's reference may go while Python code runs */
    if (!is_reader(f)) {
        stream = PyObject_CallNoArgs(f);
    } else {
        void *address = PyLong_AsVoidPtr(PyTuple_GetItem(f, 0)), *s = NULL;
        long device = PyLong_AsLong(PyTuple_GetItem(f, 1));
        PyObject *current_device = PyTuple_GetItem(f, 2);
        /* -1 with no current_device: torch takes -1 for its current device itself (checked once in streams.py) */
        int torch_resolves = device == -1 && current_device == Py_None;
        if (device < 0 && !torch_resolves && !PyErr_Occurred() && (d = PyObject_CallNoArgs(current_device)) != NULL) {
            device = PyLong_AsLong(d); /* torch's current device */
            Py_DECREF(d);
        }
        int (*work_stream)(int32_t, int32_t, void **);
        memcpy(&work_stream, &address, sizeof work_stream);
        if (!PyErr_Occurred() && address != NULL && (device >= 0 || torch_resolves) && device <= INT32_MAX
            && work_stream(2 /* kDLCUDA */, (int32_t)device, &s) == 0) {
            stream = stream_int(s);
        } else if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_RuntimeError, "torch's current_work_stream gave no stream for device %ld", device);
        }
    }
    Py_DECREF(f);
    return stream;
}

/* The argument count up to which a left-out stream's call passes its arguments on the C stack. */
#define CB_STACK_ARGS 24
typedef PyObject *(*cb_fastcall_kw)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);

/* `callable(*stack[:n])`. The routes' targets are launchers' try_launch, a METH_FASTCALL | METH_KEYWORDS
 * builtin method: its C function is called with the arguments as they are on the stack, as the
 * interpreter's own vectorcall does (the limited API has no PyObject_Vectorcall before 3.12), which
 * builds no tuple. Any other callable gets one. */
static PyObject *call_stack(PyObject *callable, PyObject *const *stack, Py_ssize_t n) {
    if (PyObject_TypeCheck(callable, &PyCFunction_Type) && PyCFunction_GetFlags(callable) == (METH_FASTCALL | METH_KEYWORDS)) {
        cb_fastcall_kw function = (cb_fastcall_kw)(void (*)(void))PyCFunction_GetFunction(callable);
        PyObject *self = PyCFunction_GetSelf(callable);
        if (function == NULL || Py_EnterRecursiveCall(" in a kernel's launch")) {
            return NULL;
        }
        PyObject *result = function(self, stack, n, NULL);
        Py_LeaveRecursiveCall();
        return result;
    }
    PyObject *full = PyTuple_New(n);
    if (full == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(stack[i]);
        PyTuple_SetItem(full, i, stack[i]); /* steals */
    }
    PyObject *result = PyErr_Occurred() ? NULL : PyObject_Call(callable, full, NULL);
    Py_DECREF(full);
    return result;
}

/* `callable(*args, stream_fn())`: args' n items, then the stream. NULL with *read_failed set: reading
 * the stream raised (the caller declines); NULL otherwise: the call raised. */
static PyObject *call_with_stream(PyObject *callable, PyObject *args, Py_ssize_t n, PyObject *stream_fn, int *read_failed) {
    *read_failed = 0;
    if (!PyTuple_Check(args) || n != PyTuple_Size(args)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a left-out stream's call takes a tuple of the route's size");
        }
        return NULL;
    }
    PyObject *local[CB_STACK_ARGS];
    /* a kernel of many parameters: the arguments on the heap (still no tuple) */
    PyObject **stack = n < CB_STACK_ARGS ? local : PyMem_Malloc((size_t)(n + 1) * sizeof(PyObject *));
    if (stack == NULL) {
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        stack[i] = PyTuple_GetItem(args, i); /* borrowed: the caller holds args across the call */
    }
    PyObject *result = NULL, *stream = read_stream(stream_fn);
    if (stream == NULL) {
        *read_failed = 1;
    } else {
        stack[n] = stream;
        result = call_stack(callable, stack, n + 1);
        Py_DECREF(stream);
    }
    if (stack != local) {
        PyMem_Free(stack);
    }
    return result;
}

/* One route: a specialization's handle tried without its slow path (its launcher's try_launch,
 * NotImplemented when a value is not taken as is), with how the call's arguments become its own:
 *   (try, fill_n, stream_fn): the arguments as they are; a call of exactly fill_n positional
 *       arguments gets stream_fn() appended (fill_n -1: never);
 *   (try, npos, required, tail, checks, index, streams, stream_fn): required <= n <= npos
 *       positional arguments, the defaults `tail[n - required:]` appended; each check (i, cls, v):
 *       argument i of exactly class cls, and `v != argument` false; the runtime arguments are
 *       those at `index`, a None at each runtime position in `streams` replaced by stream_fn().
 * Returns the result, NotImplemented (not this route), or NULL with an exception set. */
/* The stream getter raised: not this route (an Exception: cb_decline; the dispatch path reports it as
 * CB221); anything else propagates. */
static PyObject *stream_failed(void) {
    if (cb_decline() < 0) {
        return NULL;
    }
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *try_route(PyObject *route, PyObject *args) {
    Py_ssize_t size = PyTuple_Size(route), n = PyTuple_Size(args);
    PyObject *target = PyTuple_GetItem(route, 0);
    if (target == NULL) {
        return NULL;
    }
    if (size == 3) {
        Py_ssize_t fill_n = PyLong_AsSsize_t(PyTuple_GetItem(route, 1));
        if (fill_n == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (fill_n >= 0 && n == fill_n) {
            int read_failed;
            PyObject *r = call_with_stream(target, args, n, PyTuple_GetItem(route, 2), &read_failed);
            return r == NULL && read_failed ? stream_failed() : r;
        }
        return PyObject_Call(target, args, NULL);
    }
    if (size != 8) {
        PyErr_SetString(PyExc_TypeError, "a route has 3 or 8 fields");
        return NULL;
    }
    Py_ssize_t npos = PyLong_AsSsize_t(PyTuple_GetItem(route, 1)), required = PyLong_AsSsize_t(PyTuple_GetItem(route, 2));
    PyObject *tail = PyTuple_GetItem(route, 3), *checks = PyTuple_GetItem(route, 4), *index = PyTuple_GetItem(route, 5);
    PyObject *streams = PyTuple_GetItem(route, 6), *stream_fn = PyTuple_GetItem(route, 7);
    if (PyErr_Occurred() || !PyTuple_Check(tail) || !PyTuple_Check(checks) || !PyTuple_Check(index) || !PyTuple_Check(streams)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a route's tail, checks, index and streams are tuples");
        }
        return NULL;
    }
    if (n < required || n > npos || PyTuple_Size(tail) < npos - required) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* argument i: given, or a default of the tail (borrowed either way) */
#define ARG(i) ((i) < n ? PyTuple_GetItem(args, (i)) : PyTuple_GetItem(tail, (i) - required))
    Py_ssize_t nchecks = PyTuple_Size(checks);
    for (Py_ssize_t c = 0; c < nchecks; c++) {
        PyObject *check = PyTuple_GetItem(checks, c);
        if (check == NULL || !PyTuple_Check(check) || PyTuple_Size(check) != 3) {
            PyErr_SetString(PyExc_TypeError, "a route check is (index, class, value)");
            return NULL;
        }
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GetItem(check, 0));
        if ((i == -1 && PyErr_Occurred()) || i < 0 || i >= npos) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_IndexError, "a route check's index is out of range");
            }
            return NULL;
        }
        PyObject *a = ARG(i);
        if (a == NULL) {
            return NULL;
        }
        if ((PyObject *)Py_TYPE(a) != PyTuple_GetItem(check, 1)) {
            Py_RETURN_NOTIMPLEMENTED;
        }
        /* `v != a`, as the Python caller compares: v is the compile key's part (its own __ne__ decides) */
        Py_INCREF(a);
        int ne = PyObject_RichCompareBool(PyTuple_GetItem(check, 2), a, Py_NE);
        Py_DECREF(a);
        if (ne < 0) {
            return NULL;
        }
        if (ne) {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    Py_ssize_t m = PyTuple_Size(index);
    PyObject *runtime = PyTuple_New(m);
    if (runtime == NULL) {
        return NULL;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GetItem(index, j));
        PyObject *a = (i >= 0 && i < npos) ? ARG(i) : NULL;
        if (a == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_IndexError, "a route's runtime index is out of range");
            }
            Py_DECREF(runtime);
            return NULL;
        }
        Py_INCREF(a);
        PyTuple_SetItem(runtime, j, a); /* steals */
    }
#undef ARG
    Py_ssize_t ns = PyTuple_Size(streams);
    for (Py_ssize_t k = 0; k < ns; k++) {
        Py_ssize_t j = PyLong_AsSsize_t(PyTuple_GetItem(streams, k));
        if (j < 0 || j >= m) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_IndexError, "a route's stream position is out of range");
            }
            Py_DECREF(runtime);
            return NULL;
        }
        if (PyTuple_GetItem(runtime, j) == Py_None) {
            PyObject *stream = read_stream(stream_fn);
            if (stream == NULL) {
                Py_DECREF(runtime);
                return stream_failed();
            }
            PyTuple_SetItem(runtime, j, stream); /* steals; drops the None */
        }
    }
    PyObject *r = PyObject_Call(target, runtime, NULL);
    Py_DECREF(runtime);
    return r;
}

/* The call (args, kwargs) on the thread's routes or caller; what they do not take goes to the dispatch
 * path as (dargs, dkwargs): the call as the user made it. */
static PyObject *call_with(CallBase *self, PyObject *args, PyObject *kwargs, PyObject *dargs, PyObject *dkwargs) {
    ThreadState *st = find_state(self);
    if (st != NULL && st->routes != NULL && (kwargs == NULL || PyDict_Size(kwargs) == 0)) {
        /* the thread's specializations, the current one first: the first that takes every value as
           is launches; none: the dispatch path (a new key, or a value only the slow path takes) */
        PyObject *routes = st->routes;
        Py_INCREF(st);
        Py_INCREF(routes);
        Py_ssize_t nr = PyTuple_Size(routes);
        for (Py_ssize_t k = 0; k < nr; k++) {
            PyObject *result = try_route(PyTuple_GetItem(routes, k), args);
            if (result == Py_NotImplemented) {
                Py_DECREF(result);
                continue;
            }
            if (result != NULL) {
                st->hits++;
                if (k > 0 && st->routes == routes) { /* this route first from now on (the thread's calls moved to its key) */
                    PyObject *moved = PyTuple_New(nr);
                    if (moved == NULL) {
                        PyErr_Clear(); /* the order is a hint: keep the old one */
                    } else {
                        for (Py_ssize_t j = 0; j < nr; j++) {
                            PyObject *r = PyTuple_GetItem(routes, j == 0 ? k : (j <= k ? j - 1 : j));
                            Py_INCREF(r);
                            PyTuple_SetItem(moved, j, r);
                        }
                        CB_SETREF(st->routes, moved);
                    }
                }
                Py_DECREF(routes);
                Py_DECREF(st);
                return result;
            }
            if (self->fallback == NULL || !PyErr_ExceptionMatches(self->fallback)) {
                Py_DECREF(routes);
                Py_DECREF(st);
                return NULL;
            }
            PyErr_Clear(); /* e.g. the stream getter raised: the dispatch path reports it */
            break;
        }
        Py_DECREF(routes);
        Py_DECREF(st);
        return call_dispatch(self, dargs, dkwargs);
    }
    if (st != NULL && st->call != NULL && st->call != Py_None) { /* None: every call dispatches */
        /* own both across the call: the dispatch path may replace them */
        PyObject *call = st->call;
        Py_INCREF(st);
        Py_INCREF(call);
        PyObject *result;
        int no_kwargs = kwargs == NULL || PyDict_Size(kwargs) == 0;
        if (st->fill_n >= 0 && st->stream_fn != NULL && no_kwargs && PyTuple_Size(args) == st->fill_n) {
            /* the stream left out: append the current one (an error here: the dispatch path reports it) */
            int read_failed;
            result = call_with_stream(call, args, st->fill_n, st->stream_fn, &read_failed);
            if (result == NULL && read_failed) {
                Py_DECREF(call);
                Py_DECREF(st);
                if (cb_decline() < 0) {
                    return NULL; /* KeyboardInterrupt, SystemExit: propagate, as the routes do (stream_failed) */
                }
                return call_dispatch(self, dargs, dkwargs); /* the stream getter raised: the dispatch path reports it (CB221) */
            }
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
    return call_dispatch(self, dargs, dkwargs);
}

/* Most parameters a keyword call is placed for in C (more: the dispatch path binds it). */
#define CB_MAX_PARAMS 64

/* A keyword call as the positional call it stands for (a new tuple: given values, and the defaults of
 * parameters left out before the last one given), or NULL with an error set (no memory), or NULL
 * with no error set where the dispatch path must bind it: a name of no positional parameter, one given twice, a required parameter left out.
 * No Python code runs here (names are compared as str), so `kwargs` cannot change under the loop. */
static PyObject *positional_call(CallBase *self, PyObject *args, PyObject *kwargs) {
    PyObject *names = PyTuple_GetItem(self->params, 0), *tail = PyTuple_GetItem(self->params, 2);
    Py_ssize_t required = PyLong_AsSsize_t(PyTuple_GetItem(self->params, 1));
    if (names == NULL || tail == NULL || (required == -1 && PyErr_Occurred())) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(args), npos = PyTuple_Size(names), top = n;
    if (n > npos || npos > CB_MAX_PARAMS) {
        return NULL;
    }
    PyObject *placed[CB_MAX_PARAMS];
    for (Py_ssize_t i = 0; i < npos; i++) {
        placed[i] = i < n ? PyTuple_GetItem(args, i) : NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        Py_ssize_t i = 0;
        /* both sides are interned identifiers (the names are interned by the dispatcher): identity
           finds them; a name built at run time (**{...}) is then compared by value */
        while (i < npos && PyTuple_GetItem(names, i) != key) {
            i++;
        }
        if (i == npos && PyUnicode_Check(key)) {
            for (i = 0; i < npos && PyUnicode_Compare(PyTuple_GetItem(names, i), key) != 0; i++) {
            }
        }
        if (i == npos || placed[i] != NULL) {
            return NULL;
        }
        placed[i] = value;
        top = i + 1 > top ? i + 1 : top;
    }
    for (Py_ssize_t i = 0; i < top; i++) {
        if (placed[i] == NULL) {
            if (i < required || i - required >= PyTuple_Size(tail)) {
                return NULL; /* a required parameter left out: the dispatch path raises CB201 */
            }
            placed[i] = PyTuple_GetItem(tail, i - required);
        }
    }
    PyObject *out = PyTuple_New(top);
    if (out == NULL) {
        return NULL; /* MemoryError: the caller propagates it */
    }
    for (Py_ssize_t i = 0; i < top; i++) {
        Py_INCREF(placed[i]);
        PyTuple_SetItem(out, i, placed[i]); /* steals */
    }
    return out;
}

static PyObject *CallBase_call(PyObject *self_, PyObject *args, PyObject *kwargs) {
    CallBase *self = (CallBase *)self_;
    if (kwargs != NULL && PyDict_Size(kwargs) > 0) {
        if (self->params == NULL) { /* keyword-only parameters: the caller binds the call as given */
            return call_with(self, args, kwargs, args, kwargs);
        }
        /* the call's keywords placed by name: the same routes and caller as a positional call */
        PyObject *given = positional_call(self, args, kwargs);
        if (given == NULL) {
            return PyErr_Occurred() ? NULL : call_dispatch(self, args, kwargs);
        }
        PyObject *r = call_with(self, given, NULL, args, kwargs);
        Py_DECREF(given);
        return r;
    }
    return call_with(self, args, NULL, args, kwargs);
}

static PyObject *CallBase_set_params(PyObject *self_, PyObject *params) {
    CallBase *self = (CallBase *)self_;
    if (params != Py_None) {
        int ok = PyTuple_Check(params) && PyTuple_Size(params) == 3 && PyTuple_Check(PyTuple_GetItem(params, 0)) &&
                 PyLong_Check(PyTuple_GetItem(params, 1)) && PyTuple_Check(PyTuple_GetItem(params, 2));
        if (ok) {
            PyObject *names = PyTuple_GetItem(params, 0);
            for (Py_ssize_t i = 0; ok && i < PyTuple_Size(names); i++) {
                ok = PyUnicode_CheckExact(PyTuple_GetItem(names, i));
            }
        }
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "_set_params: (names: tuple of str, required: int, tail: tuple) or None");
            return NULL;
        }
    }
    PyObject *value = params == Py_None ? NULL : params;
    Py_XINCREF(value);
    CB_SETREF(self->params, value);
    Py_RETURN_NONE;
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
    PyObject *old_states = self->states, *old_token = self->token; /* owned: swapped out, then detached */
    self->states = states, self->token = token, self->retired = 0;
    Py_INCREF(dispatch), Py_INCREF(fallback);
    CB_SETREF(self->dispatch, dispatch);
    CB_SETREF(self->fallback, fallback);
    /* the old states are unreachable now (their token is gone): drop them, their callers and handles */
    detach(old_states, old_token);
    Py_RETURN_NONE;
}

/* The calling thread's state under the current token, made if it has none (a new reference), or NULL with
 * an error set. A new reference: an allocation here may run the collector, and a finaliser that resets the
 * kernel would drop a borrowed state under our feet (the state returned is then detached: harmless). */
static ThreadState *get_or_make_state(CallBase *self) {
    if (self->token == NULL || self->states == NULL) {
        PyErr_SetString(PyExc_TypeError, "kernel not initialised");
        return NULL;
    }
    ThreadState *st = find_state(self);
    if (st != NULL) {
        Py_INCREF(st);
        return st;
    }
    PyObject *tsd = PyThreadState_GetDict();
    if (tsd == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no thread-state dict");
        return NULL;
    }
    /* the slow path (a thread's first call since a reset) is where stale entries are cleaned up */
    if (sweep_husks(tsd) < 0 || compact(self) < 0) {
        return NULL;
    }
    PyTypeObject *st_tp = (PyTypeObject *)ThreadState_type, *slot_tp = (PyTypeObject *)Slot_type;
    allocfunc st_alloc = (allocfunc)PyType_GetSlot(st_tp, Py_tp_alloc);
    allocfunc slot_alloc = (allocfunc)PyType_GetSlot(slot_tp, Py_tp_alloc);
    if (st_alloc == NULL || slot_alloc == NULL) {
        PyErr_SetString(PyExc_SystemError, "_cdispatch: no tp_alloc");
        return NULL;
    }
    st = (ThreadState *)st_alloc(st_tp, 0);
    if (st == NULL) {
        return NULL;
    }
    st->call = st->stream_fn = st->routes = NULL;
    st->fill_n = -1, st->hits = 0, st->slot = NULL;
    Slot *slot = (Slot *)slot_alloc(slot_tp, 0);
    if (slot == NULL) {
        Py_DECREF(st);
        return NULL;
    }
    slot->state = NULL;
    slot->husk = 0;
    PyObject *states = self->states, *token = self->token; /* held across the calls below (see above) */
    if (states == NULL || token == NULL) {
        Py_DECREF(slot);
        Py_DECREF(st);
        PyErr_SetString(PyExc_TypeError, "kernel not initialised");
        return NULL;
    }
    Py_INCREF(states);
    Py_INCREF(token);
    int failed = PyList_Append(states, (PyObject *)st) < 0;
    if (!failed) {
        slot->state = st;
        st->slot = slot;
        failed = PyDict_SetItem(tsd, token, (PyObject *)slot) < 0;
        if (failed) {
            slot->state = NULL;
            st->slot = NULL; /* the list's next compaction drops it (no thread has it) */
        }
    }
    Py_DECREF(token);
    Py_DECREF(states);
    Py_DECREF(slot); /* owned by the thread-state dict (or gone) */
    if (failed) {
        Py_DECREF(st);
        return NULL;
    }
    return st; /* owned by the list, and this reference */
}

static PyObject *CallBase_set_call(PyObject *self_, PyObject *args) {
    PyObject *call, *stream_fn = Py_None;
    Py_ssize_t fill_n = -1;
    if (!PyArg_ParseTuple(args, "O|nO:_set_call", &call, &fill_n, &stream_fn)) {
        return NULL;
    }
    if (fill_n >= 0 && !PyCallable_Check(stream_fn) && !is_reader(stream_fn)) {
        PyErr_SetString(PyExc_TypeError, "_set_call: stream_fn must be callable or a stream reader when fill_n >= 0");
        return NULL;
    }
    ThreadState *st = get_or_make_state((CallBase *)self_);
    if (st == NULL) {
        return NULL;
    }
    st->fill_n = -1; /* consistent while the old callers are released below (that may run code) */
    Py_INCREF(call);
    CB_SETREF(st->call, call);
    if (fill_n >= 0) {
        Py_INCREF(stream_fn);
        CB_SETREF(st->stream_fn, stream_fn);
    } else {
        Py_CLEAR(st->stream_fn);
    }
    st->fill_n = fill_n;
    Py_DECREF(st);
    Py_RETURN_NONE;
}

static PyObject *CallBase_set_routes(PyObject *self_, PyObject *routes) {
    if (routes != Py_None && !PyTuple_Check(routes)) {
        PyErr_SetString(PyExc_TypeError, "_set_routes: a tuple of routes or None");
        return NULL;
    }
    Py_ssize_t n = routes == Py_None ? 0 : PyTuple_Size(routes);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *r = PyTuple_GetItem(routes, k);
        if (!PyTuple_Check(r) || (PyTuple_Size(r) != 3 && PyTuple_Size(r) != 8) || !PyCallable_Check(PyTuple_GetItem(r, 0)) ||
            (PyTuple_Size(r) == 3 && !PyLong_Check(PyTuple_GetItem(r, 1))) ||
            (PyTuple_Size(r) == 8 && (!PyLong_Check(PyTuple_GetItem(r, 1)) || !PyLong_Check(PyTuple_GetItem(r, 2))))) {
            PyErr_SetString(PyExc_TypeError, "_set_routes: each route is (try, fill_n, stream_fn) or (try, npos, required, tail, checks, index, streams, stream_fn)");
            return NULL;
        }
    }
    ThreadState *st = get_or_make_state((CallBase *)self_);
    if (st == NULL) {
        return NULL;
    }
    if (routes == Py_None || n == 0) {
        Py_CLEAR(st->routes);
    } else {
        Py_INCREF(routes);
        CB_SETREF(st->routes, routes);
    }
    Py_DECREF(st);
    Py_RETURN_NONE;
}

static PyObject *CallBase_count_hit(PyObject *self_, PyObject *unused) {
    ThreadState *st = get_or_make_state((CallBase *)self_);
    if (st == NULL) {
        return NULL;
    }
    st->hits++;
    Py_DECREF(st);
    Py_RETURN_NONE;
}

static PyObject *CallBase_hits(PyObject *self_, PyObject *unused) {
    CallBase *self = (CallBase *)self_;
    long long total = self->retired;
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
    Py_VISIT(self->params);
    Py_VISIT(Py_TYPE(self_)); /* a heap base type visits the type (subtype_traverse leaves it to us) */
    return 0;
}

static int CallBase_clear(PyObject *self_) {
    CallBase *self = (CallBase *)self_;
    PyObject *states = self->states, *token = self->token;
    self->states = NULL;
    self->token = NULL;
    detach(states, token); /* every thread's state goes with the kernel */
    Py_CLEAR(self->dispatch);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->params);
    return 0;
}

/* CallBase_clear called as such, not the instance's tp_clear: a Kernel subclass's own clears more. */
static void CallBase_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    CallBase_clear(self);
    cb_free_instance(self);
}

static PyMethodDef CallBase_methods[] = {
    {"_reset_calls", CallBase_reset_calls, METH_VARARGS,
     "_reset_calls(dispatch, fallback): a new token (every thread's state dropped), the dispatch path and the fallback classes."},
    {"_set_call", CallBase_set_call, METH_VARARGS,
     "_set_call(caller[, fill_n, stream_fn]): the calling thread's current caller; a call of exactly fill_n positional "
     "arguments and no keywords gets stream_fn() appended."},
    {"_set_routes", CallBase_set_routes, METH_O,
     "_set_routes(routes): the calling thread's routes (its specializations, the current one first), tried before "
     "the caller for a call without keywords; None: none."},
    {"_set_params", CallBase_set_params, METH_O,
     "_set_params(params): (names, required, tail) of the kernel's positional parameters, so a keyword call is "
     "placed by name and takes the routes and caller as a positional call does; None: keyword calls dispatch."},
    {"_count_hit", CallBase_count_hit, METH_NOARGS, "Count one hit for the calling thread (a hit found on the dispatch path)."},
    {"_hits", CallBase_hits, METH_NOARGS, "Hits of every thread since the last reset."},
    {NULL, NULL, 0, NULL},
};

CB_TYPE_SPEC(CallBase, "cute_bind.jit._cdispatch.CallBase", CallBase, Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
             {Py_tp_call, CallBase_call}, CB_GC_SLOTS(CallBase_dealloc, CallBase_traverse, CallBase_clear),
             {Py_tp_methods, CallBase_methods}, {Py_tp_new, PyType_GenericNew},
             {Py_tp_doc, "C fast path of Kernel.__call__ (base class of cute_bind.Kernel)."});

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_cdispatch", "C fast path of Kernel.__call__.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__cdispatch(void)
{
    static const cb_export exports[] = {
        {"_ThreadState", &ThreadState_spec, &ThreadState_type},
        {"_Slot", &Slot_spec, &Slot_type},
        {"CallBase", &CallBase_spec},
    };
    return CB_MODULE_INIT(&moduledef, exports);
}
