/*
 * Optional C fast path of PreparedLaunch.launch (stable ABI, Python >= 3.10).
 *
 * Does exactly what the generated Python fast path does, without the Python
 * frame and the ctypes call: check each positional argument against its
 * slot's fast class, write it into the handle's storage block, call the
 * packed entry point `void entry(void **argv)` (releasing the GIL, as the
 * DSL's own ctypes call does), then read the handle's CUDA-result slot.
 * Anything it does not accept as is (keywords, missing or extra arguments,
 * tensors, stream objects, out-of-range values...) goes to the Python slow
 * path, which owns every check and every error message.
 *
 * The storage, packed array and result slot are Python-owned buffers kept
 * alive through `keep`.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef void (*entry_fn)(void **);

/* Fast classes: which values a slot takes as they are (see SlotKind.fast). */
enum { C_EXACT_INT = 'P', C_EXACT_BOOL = 'B', C_INT = 'I', C_REAL = 'R' };

typedef struct {
    PyObject_HEAD
    entry_fn entry;
    void **argv;
    char *storage;
    volatile int32_t *result; /* NULL when the function reports no CUDA result */
    Py_ssize_t n;
    char *fmt;      /* struct format char per slot */
    char *cls;      /* fast class per slot */
    Py_ssize_t *off;
    PyObject *defaults; /* tuple: pre-coerced default per slot, or `required` */
    PyObject *required;
    PyObject *slow;   /* slow(values_tuple, extra_tuple, kwargs_dict) */
    PyObject *fail;   /* fail(): raises the CUDA error */
    PyObject *refuse; /* when set: refuse() raises (unloaded module, closed handle) */
    PyObject *ret;
    PyObject *keep;
    int release_gil;
} Launcher;

static int
pack_int(char *dst, char fmt, PyObject *v)
{
    if (fmt == 'Q') {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        memcpy(dst, &u, 8);
        return 1;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    switch (fmt) {
    case 'b': if (x < INT8_MIN || x > INT8_MAX) return 0; { int8_t t = (int8_t)x; memcpy(dst, &t, 1); } return 1;
    case 'h': if (x < INT16_MIN || x > INT16_MAX) return 0; { int16_t t = (int16_t)x; memcpy(dst, &t, 2); } return 1;
    case 'i': if (x < INT32_MIN || x > INT32_MAX) return 0; { int32_t t = (int32_t)x; memcpy(dst, &t, 4); } return 1;
    case 'q': memcpy(dst, &x, 8); return 1;
    case 'B': if (x < 0 || x > UINT8_MAX) return 0; { uint8_t t = (uint8_t)x; memcpy(dst, &t, 1); } return 1;
    case 'H': if (x < 0 || x > UINT16_MAX) return 0; { uint16_t t = (uint16_t)x; memcpy(dst, &t, 2); } return 1;
    case 'I': if (x < 0 || x > UINT32_MAX) return 0; { uint32_t t = (uint32_t)x; memcpy(dst, &t, 4); } return 1;
    default: return 0;
    }
}

/* 1: written; 0: not taken as is (the slow path decides). Never leaves an exception set. */
static int
pack_one(Launcher *self, Py_ssize_t i, PyObject *v)
{
    char *dst = self->storage + self->off[i];
    char fmt = self->fmt[i];
    switch (self->cls[i]) {
    case C_EXACT_INT: {
        if (Py_TYPE(v) != &PyLong_Type) return 0;
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        memcpy(dst, &u, 8);
        return 1;
    }
    case C_EXACT_BOOL: {
        uint8_t b;
        if (v == Py_True) b = 1;
        else if (v == Py_False) b = 0;
        else return 0;
        memcpy(dst, &b, 1);
        return 1;
    }
    case C_INT:
        if (!PyLong_Check(v)) return 0; /* int and bool, as struct packs them */
        return pack_int(dst, fmt, v);
    case C_REAL: {
        double d;
        if (Py_TYPE(v) == &PyFloat_Type) d = PyFloat_AsDouble(v);
        else if (PyLong_Check(v)) {
            d = PyLong_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        }
        else return 0;
        if (fmt == 'f') { float f = (float)d; memcpy(dst, &f, 4); }
        else memcpy(dst, &d, 8);
        return 1;
    }
    default:
        return 0;
    }
}

static PyObject *
go_slow(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t given = nargs < self->n ? nargs : self->n;
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    PyObject *values = PyTuple_New(given);
    PyObject *extra = PyTuple_New(nargs - given);
    PyObject *kwargs = PyDict_New();
    PyObject *res = NULL;
    if (!values || !extra || !kwargs) goto done;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        if (i < given) PyTuple_SetItem(values, i, args[i]);
        else PyTuple_SetItem(extra, i - given, args[i]);
    }
    for (Py_ssize_t j = 0; j < nkw; j++) {
        if (PyDict_SetItem(kwargs, PyTuple_GetItem(kwnames, j), args[nargs + j]) < 0) goto done;
    }
    res = PyObject_CallFunctionObjArgs(self->slow, values, extra, kwargs, NULL);
done:
    Py_XDECREF(values);
    Py_XDECREF(extra);
    Py_XDECREF(kwargs);
    return res;
}

static PyObject *
Launcher_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (self->refuse) return PyObject_CallObject(self->refuse, NULL);
    if (nargs > self->n || kwnames != NULL) return go_slow(self, args, nargs, kwnames);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!pack_one(self, i, args[i])) return go_slow(self, args, nargs, NULL);
    }
    for (Py_ssize_t i = nargs; i < self->n; i++) { /* trailing parameters left to their defaults */
        PyObject *d = PyTuple_GetItem(self->defaults, i);
        if (d == self->required || !pack_one(self, i, d)) return go_slow(self, args, nargs, NULL);
    }
    if (self->release_gil) {
        Py_BEGIN_ALLOW_THREADS
        self->entry(self->argv);
        Py_END_ALLOW_THREADS
    } else {
        self->entry(self->argv);
    }
    if (self->result && *self->result) return PyObject_CallObject(self->fail, NULL);
    Py_INCREF(self->ret);
    return self->ret;
}

static PyObject *
Launcher_poison(Launcher *self, PyObject *refuse)
{
    PyObject *old = self->refuse;
    Py_INCREF(refuse);
    self->refuse = refuse;
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

static int
Launcher_init(Launcher *self, PyObject *args, PyObject *kwds)
{
    unsigned long long entry, argv, storage, result;
    const char *fmt, *cls;
    Py_ssize_t nfmt, ncls;
    PyObject *offsets, *defaults, *required, *slow, *fail, *ret, *keep;
    int release_gil = 1;
    if (!PyArg_ParseTuple(args, "KKKKs#s#OOOOOOO|p", &entry, &argv, &storage, &result, &fmt, &nfmt, &cls, &ncls,
                          &offsets, &defaults, &required, &slow, &fail, &ret, &keep, &release_gil))
        return -1;
    if (nfmt != ncls || PyTuple_Size(offsets) != nfmt || PyTuple_Size(defaults) != nfmt) {
        PyErr_SetString(PyExc_ValueError, "slot formats, classes and offsets differ in length");
        return -1;
    }
    self->n = nfmt;
    self->fmt = PyMem_Malloc(nfmt + 1);
    self->cls = PyMem_Malloc(nfmt + 1);
    self->off = PyMem_Malloc(sizeof(Py_ssize_t) * (nfmt + 1));
    if (!self->fmt || !self->cls || !self->off) { PyErr_NoMemory(); return -1; }
    memcpy(self->fmt, fmt, nfmt);
    memcpy(self->cls, cls, nfmt);
    for (Py_ssize_t i = 0; i < nfmt; i++) {
        self->off[i] = PyLong_AsSsize_t(PyTuple_GetItem(offsets, i));
        if (self->off[i] == -1 && PyErr_Occurred()) return -1;
    }
    self->entry = (entry_fn)(uintptr_t)entry;
    self->argv = (void **)(uintptr_t)argv;
    self->storage = (char *)(uintptr_t)storage;
    self->result = result ? (volatile int32_t *)(uintptr_t)result : NULL;
    Py_INCREF(defaults); self->defaults = defaults;
    Py_INCREF(required); self->required = required;
    Py_INCREF(slow); self->slow = slow;
    Py_INCREF(fail); self->fail = fail;
    Py_INCREF(ret); self->ret = ret;
    Py_INCREF(keep); self->keep = keep;
    self->refuse = NULL;
    self->release_gil = release_gil;
    return 0;
}

static int
Launcher_traverse(Launcher *self, visitproc visit, void *arg)
{
    Py_VISIT(self->defaults);
    Py_VISIT(self->required);
    Py_VISIT(self->slow);
    Py_VISIT(self->fail);
    Py_VISIT(self->refuse);
    Py_VISIT(self->ret);
    Py_VISIT(self->keep);
    return 0;
}

static int
Launcher_clear(Launcher *self)
{
    Py_CLEAR(self->defaults);
    Py_CLEAR(self->required);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->refuse);
    Py_CLEAR(self->ret);
    Py_CLEAR(self->keep);
    return 0;
}

static void
Launcher_dealloc(Launcher *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Launcher_clear(self);
    PyMem_Free(self->fmt);
    PyMem_Free(self->cls);
    PyMem_Free(self->off);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL | METH_KEYWORDS,
     "launch(*args, **kwargs): rewrite the slots in place and call the entry point."},
    {"poison", (PyCFunction)Launcher_poison, METH_O, "poison(refuse): every later launch calls refuse() instead."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Launcher_slots[] = {
    {Py_tp_init, Launcher_init},
    {Py_tp_dealloc, Launcher_dealloc},
    {Py_tp_traverse, Launcher_traverse},
    {Py_tp_clear, Launcher_clear},
    {Py_tp_methods, Launcher_methods},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_doc, "Launcher(entry, argv, storage, result, fmts, classes, offsets, defaults, required, slow, fail, ret, keep[, release_gil])"},
    {0, NULL},
};

static PyType_Spec Launcher_spec = {
    "cute_bind._claunch.Launcher",
    sizeof(Launcher),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    Launcher_slots,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_claunch", "C fast path of PreparedLaunch.launch.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__claunch(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    PyObject *tp = PyType_FromSpec(&Launcher_spec);
    if (!tp || PyModule_AddObject(m, "Launcher", tp) < 0) {
        Py_XDECREF(tp);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
