/*
 * What the C extensions share (launch/_claunch.c: PreparedLaunch; launch/_ctvmffi.c: TVM-FFI
 * prepared launches; graph/_cgraph.c: graph replays; torch/_ceager.c: a torch op's eager call; jit/_cdispatch.c:
 * Kernel.__call__):
 * the DLPack tensor they read tensors into and DLPack's device types, the reader's signature,
 * the one "declined" rule for a conversion that raised, the set-reference macro, the type and
 * module boilerplate (owned-reference lists, type specs, dealloc, __init__ checks, module init), and the typed
 * readers of the records Python hands them (cute_bind.launch.spec, the slots' C specs). setup.py
 * finds it through each source's #include lines and lists it in that extension's `depends`, so a
 * change rebuilds every user, and the sdist ships it.
 *
 * The readers never trust a record: each field is fetched by name once,
 * its type checked (a TypeError naming the field otherwise), and returned as
 * a new reference the launcher keeps for as long as it uses what it read.
 */
#ifndef CUTE_BIND_CB_COMMON_H
#define CUTE_BIND_CB_COMMON_H

#include <Python.h>
#include <stdint.h>

/* dlpack.h's DLTensor (ABI-stable since DLPack 0.x). */
typedef struct {
    void *data;
    int32_t device_type;
    int32_t device_id;
    int32_t ndim;
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensorC;

/* DLPack's device types (dlpack.h's DLDeviceType) the extensions compare against. */
enum { CB_DL_CPU = 1, CB_DL_CUDA = 2, CB_DL_CUDA_HOST = 3, CB_DL_CUDA_MANAGED = 13 };

/* Py_XSETREF is not in the limited API */
#define CB_SETREF(dst, src) do { PyObject *_old = (PyObject *)(dst); (dst) = (src); Py_XDECREF(_old); } while (0)

/* A type's owned references are listed once, as an X-macro LIST(X, obj) of X(obj, member) per reference,
 * and that list expanded in its tp_traverse (CB_VISIT_REF: `visit` and `arg` in scope) and its tp_clear
 * or free (CB_CLEAR_REF), so that neither leaves one out. */
#define CB_VISIT_REF(obj, member) Py_VISIT((obj)->member);
#define CB_CLEAR_REF(obj, member) Py_CLEAR((obj)->member);
/* A launcher's references taken from the spec fields its init read into `f` (cb_field's new references),
 * listed as LIST(X) of X(member, index in f): taken by init (CB_TAKE_FIELD, `self` and `f` in scope),
 * walked by tp_traverse and tp_clear (CB_VISIT_FIELD, CB_CLEAR_FIELD: `self` in scope). */
#define CB_TAKE_FIELD(member, index) self->member = f[index]; f[index] = NULL;
#define CB_VISIT_FIELD(member, index) Py_VISIT(self->member);
#define CB_CLEAR_FIELD(member, index) Py_CLEAR(self->member);

/* The slots by which the instances of a GC heap type are collected and freed (PyType_Slot entries). */
#define CB_GC_SLOTS(dealloc, traverse, clear) {Py_tp_dealloc, (dealloc)}, {Py_tp_traverse, (traverse)}, {Py_tp_clear, (clear)}
/* ... and those of a GC type made by calling it with arguments (`init`) that has `methods` too. */
#define CB_INIT_GC_SLOTS(init, dealloc, traverse, clear, methods)                                                  \
    {Py_tp_init, (init)}, CB_GC_SLOTS(dealloc, traverse, clear), {Py_tp_methods, (methods)}, {Py_tp_new, PyType_GenericNew}

/* A heap type's slot table `name##_slots` (the PyType_Slot entries after `flags`, closed here) and its
 * spec `name##_spec`: `qualname`, the instance struct `ctype`, Py_TPFLAGS_DEFAULT | `flags`. The
 * module's init makes the type from the spec (cb_module_init). */
#define CB_TYPE_SPEC(name, qualname, ctype, flags, ...)                                                              \
    static PyType_Slot name##_slots[] = {__VA_ARGS__, {0, NULL}};                                                  \
    static PyType_Spec name##_spec = {qualname, sizeof(ctype), 0, Py_TPFLAGS_DEFAULT | (flags), name##_slots}

/* PyMem_Free of each of an instance's arrays (NULL: none), for its tp_dealloc after its tp_clear. */
#define CB_FREE_ARRAYS(...)                                                                                        \
    do {                                                                                                           \
        void *_arrays[] = {__VA_ARGS__};                                                                           \
        for (size_t _k = 0; _k < sizeof _arrays / sizeof _arrays[0]; _k++) PyMem_Free(_arrays[_k]);               \
    } while (0)

/* An owned array's `n` references (NULL: none), visited (tp_traverse) or cleared (tp_clear). */
static inline int
cb_visit_array(PyObject **items, Py_ssize_t n, visitproc visit, void *arg)
{
    if (items)
        for (Py_ssize_t i = 0; i < n; i++) Py_VISIT(items[i]);
    return 0;
}

static inline void
cb_clear_array(PyObject **items, Py_ssize_t n)
{
    if (items)
        for (Py_ssize_t i = 0; i < n; i++) Py_CLEAR(items[i]);
}

/* The end of every heap type's tp_dealloc: the type's tp_free, then the reference each instance holds
 * to its heap type (the type object is read first: freeing the instance forgets it). */
static inline void
cb_free_instance(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

/* The tp_dealloc of a GC heap type (not subclassable) whose tp_clear releases all it owns: untrack,
 * clear, free. */
static inline void
cb_gc_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    ((inquiry)PyType_GetSlot(Py_TYPE(self), Py_tp_clear))(self);
    cb_free_instance(self);
}

/* The checks every extension type's __init__ makes before reading its arguments: no keywords (-1
 * with TypeError `message`), ... */
static inline int
cb_no_keywords(PyObject *kwargs, const char *message)
{
    if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, message);
        return -1;
    }
    return 0;
}

/* ... and not twice (`initialised`: -1 with TypeError "<type> cannot be initialised twice"): a running
 * call reads the fields, so they are set once. */
static inline int
cb_init_once(int initialised, const char *type)
{
    if (initialised) {
        PyErr_Format(PyExc_TypeError, "%s cannot be initialised twice", type);
        return -1;
    }
    return 0;
}

/* Add `obj` (a new reference, stolen even on failure; NULL: its error is set) to module `m` as `name`:
 * PyModule_Add of Python 3.13, which the limited API of 3.10 lacks (PyModule_AddObject steals only on
 * success). 0, or -1 with an exception set. */
static inline int
cb_module_add(PyObject *m, const char *name, PyObject *obj)
{
    if (obj == NULL) return -1;
    if (PyModule_AddObject(m, name, obj) < 0) {
        Py_DECREF(obj);
        return -1;
    }
    return 0;
}

/* A conversion raised: an Exception means "not taken as is" (0, cleared: the slower path decides
 * and raises the catalog error); anything else (KeyboardInterrupt, SystemExit; MemoryError is an
 * Exception) propagates (-1). The one rule of every extension's fast path. */
static inline int
cb_decline(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* An unsigned 64-bit address from a Python int (no other type: a float or a str is a caller bug,
 * not something to convert); `allow_null` 0 refuses 0. -1 with TypeError/ValueError naming `what`. */
static inline int
cb_address_of(PyObject *obj, const char *what, int allow_null, uint64_t *out)
{
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

/* The DLPack exchange API's dltensor_from_py_object_no_sync: fills `out` from a Python object. */
typedef int (*cb_dltensor_reader)(void *py_object, DLTensorC *out);

/* Field kinds a record's attribute is checked against; `| CB_OR_NONE` takes None too. */
enum { CB_ANY = 0, CB_INT, CB_BYTES, CB_TUPLE, CB_BOOL, CB_CALLABLE, CB_INT_OR_NONE, CB_TYPE, CB_DESCRIPTOR };
#define CB_OR_NONE 0x100

/* `record.name` as a new reference, checked to be of `kind`; NULL with TypeError (or the
 * attribute's own error) otherwise. `what` names the record in the message. */
static inline PyObject *
cb_field(PyObject *record, const char *what, const char *name, int kind)
{
    PyObject *v = PyObject_GetAttrString(record, name);
    if (!v) return NULL;
    if ((kind & CB_OR_NONE) && v == Py_None) return v;
    int ok;
    const char *want;
    switch (kind & ~CB_OR_NONE) {
    case CB_INT: ok = PyLong_Check(v); want = "an int"; break;
    case CB_BYTES: ok = PyBytes_Check(v); want = "bytes"; break;
    case CB_TUPLE: ok = PyTuple_Check(v); want = "a tuple"; break;
    case CB_BOOL: ok = PyBool_Check(v); want = "a bool"; break;
    case CB_CALLABLE: ok = PyCallable_Check(v); want = "callable"; break;
    case CB_INT_OR_NONE: ok = v == Py_None || PyLong_Check(v); want = "an int or None"; break;
    case CB_TYPE: ok = PyType_Check(v); want = "a type"; break;
    case CB_DESCRIPTOR: /* a data descriptor: it both gets and sets */
        ok = PyType_GetSlot(Py_TYPE(v), Py_tp_descr_get) != NULL && PyType_GetSlot(Py_TYPE(v), Py_tp_descr_set) != NULL;
        want = "a data descriptor";
        break;
    default: ok = 1; want = ""; break;
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s.%s must be %s%s, got %R", what, name, want, (kind & CB_OR_NONE) ? " or None" : "",
                     (PyObject *)Py_TYPE(v));
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* An address (an int in [0, 2**64)) from a checked int field; -1 with an exception set otherwise. */
static inline int
cb_address(PyObject *v, const char *what, const char *name, uint64_t *out)
{
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s.%s must be an address in [0, 2**64)", what, name);
        return -1;
    }
    *out = (uint64_t)u;
    return 0;
}

/* The fields `names` (NULL-terminated) of a record, each read by name, as a new tuple in that order
 * (what a reader then takes apart: a reordered field of the Python record cannot be read as
 * another); NULL with a TypeError naming `what` and `record` where one is missing (a plain tuple
 * has none). Every record C reads is read this way, and its reader's names are exported. */
static inline PyObject *
cb_record(PyObject *rec, const char *what, const char *record, const char *const *names)
{
    Py_ssize_t n = 0;
    while (names[n]) n++;
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *v = PyObject_GetAttrString(rec, names[k]);
        if (!v) {
            if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s must be a %s record (no field '%s' in %R)", what, record, names[k],
                             (PyObject *)Py_TYPE(rec));
            }
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SetItem(t, k, v);
    }
    return t;
}

/* A tuple of the field names a C record reader reads, for the module to export (the stub test
 * checks them against the Python record). */
static inline PyObject *
cb_names(const char *const *names)
{
    Py_ssize_t n = 0;
    while (names[n]) n++;
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *s = PyUnicode_FromString(names[k]);
        if (!s) { Py_DECREF(t); return NULL; }
        PyTuple_SetItem(t, k, s);
    }
    return t;
}

/* One name a module exports (cb_module_init): a heap type made from `type`, or the tuple of the field
 * names `fields` a C record reader reads (cb_names; the stub test checks them against the Python record).
 * A type whose `keep` is not NULL is also held there (a new reference, for the module's C code to
 * compare against), and a later init of the module exports the one held there instead of a new one. */
typedef struct {
    const char *name;
    PyType_Spec *type;
    PyObject **keep;
    const char *const *fields;
} cb_export;

/* Module `def` with the names of `exports` (`n` of them) added in order: the module, or NULL with an
 * exception set (nothing more is made once one fails). */
static inline PyObject *
cb_module_init(PyModuleDef *def, const cb_export *exports, size_t n)
{
    PyObject *m = PyModule_Create(def);
    for (size_t k = 0; m && k < n; k++) {
        const cb_export *e = &exports[k];
        PyObject *obj;
        if (e->fields) obj = cb_names(e->fields);
        else if (e->keep && *e->keep) obj = Py_NewRef(*e->keep);
        else if ((obj = PyType_FromSpec(e->type)) && e->keep) *e->keep = Py_NewRef(obj);
        if (cb_module_add(m, e->name, obj) < 0) Py_CLEAR(m);
    }
    return m;
}
#define CB_MODULE_INIT(def, exports) cb_module_init((def), (exports), sizeof(exports) / sizeof((exports)[0]))

/* A keyword call's values in parameter order, for both launchers: out[i] (i < n) is parameter i's
 * value, borrowed from `args` (nargs positionals, then one value per name of `kwnames`), or NULL
 * where it is left to its default. `names` is a tuple of n interned str (None for a parameter
 * that takes no keyword); `defaults[i]` is `required` for a parameter without a default. The
 * caller has checked nargs <= n. 1: placed; 0: a name of no parameter, a value given twice or a
 * required parameter left out (the caller's slow path decides). Runs no Python code. */
static inline int
cb_place_keywords(PyObject *names, PyObject *defaults, PyObject *required, Py_ssize_t n, PyObject *const *args,
                  Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    Py_ssize_t nkw = PyTuple_Size(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) out[i] = i < nargs ? args[i] : NULL;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GetItem(kwnames, j);
        Py_ssize_t i = 0;
        /* both sides are interned identifiers (the names are interned when the record is made):
           identity finds them; a name built at run time (**{...}) is then compared by value */
        while (i < n && PyTuple_GetItem(names, i) != key) i++;
        if (i == n && PyUnicode_Check(key)) {
            for (i = 0; i < n; i++) {
                PyObject *name = PyTuple_GetItem(names, i);
                if (PyUnicode_Check(name) && PyUnicode_Compare(name, key) == 0) break;
            }
        }
        if (i == n || out[i] != NULL) return 0;
        out[i] = args[nargs + j];
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!out[i] && PyTuple_GetItem(defaults, i) == required) return 0;
    return 1;
}

/* Whether `ndim` extents and element strides (NULL: compact) lay the elements out one after the
 * other in row-major order, as a pointer slot reads them: a mode of extent 1 may have any stride,
 * an empty one makes every stride irrelevant. A strided view (t[::2]), a stride 0 (expand) or a
 * transposed one is not. Runs no Python code. */
static inline int
cb_row_major(int ndim, const int64_t *shape, const int64_t *strides)
{
    if (!strides || ndim <= 0) return 1;
    if (!shape) return 0;
    for (int k = 0; k < ndim; k++)
        if (shape[k] == 0) return 1;
    int64_t expect = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        if (shape[k] == 1) continue;
        if (strides[k] != expect) return 0;
        if (__builtin_mul_overflow(expect, shape[k], &expect)) return 0;
    }
    return 1;
}

#endif /* CUTE_BIND_CB_COMMON_H */
