/*
 * Optional C fast path of PreparedLaunch.launch (stable ABI, Python >= 3.10).
 *
 * Does exactly what the generated Python fast path does, without the Python
 * frame and the ctypes call: check each positional argument against its
 * slot's fast class, write it into the handle's storage block, call the
 * packed entry point `void entry(void **argv)` (releasing the GIL, as the
 * DSL's own ctypes call does), then read the handle's CUDA-result slot.
 * Tensors of a type offering the DLPack exchange API (torch tensors) are read
 * with one C call of that API and checked against the facts fixed at bind
 * (dtype, device, rank, static extents and strides, divisibility, alignment)
 * before the descriptor's data address and dynamic values are written.
 * A sequence ("S") is written element by element with the same classes.
 * Kinds without a class here ("X") call their Python writer.
 * Anything it does not accept as is (keywords, missing or extra arguments,
 * stream objects, out-of-range values, a tensor that fails a check...) goes
 * to the Python slow path, which owns every check and every error message.
 *
 * The storage, packed array and result slot are Python-owned buffers kept
 * alive through `keep`.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

typedef void (*entry_fn)(void **);

/* Fast classes: which values a slot takes as they are (see SlotKind.fast). */
enum { C_EXACT_INT = 'P', C_EXACT_BOOL = 'B', C_INT = 'I', C_REAL = 'R', C_F16 = 'h', C_BF16 = 'g', C_TENSOR = 'T', C_SEQ = 'S', C_WRITER = 'X' };

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

typedef int (*dltensor_from_pyobject)(void *py_object, DLTensorC *out);

typedef struct {
    int64_t stat;       /* compiled-in value (static modes) */
    int64_t div;        /* divisibility (dynamic modes) */
    Py_ssize_t off;     /* offset of the dynamic value in the descriptor */
    int dyn;
    int width;          /* 32 or 64 */
} ModeSpec;

typedef struct {
    dltensor_from_pyobject fn;
    PyObject *type;     /* the exact type `fn` was found on (owned), or NULL */
    PyObject *capsule;  /* that type's exchange-API capsule (owned), or NULL */
    uint8_t code, bits;
    uint16_t lanes;
    int32_t device_type, device_id;
    uint64_t align;
    int ndim;
    int footprint32;    /* 32-bit strides: the footprint must fit Int32 */
    ModeSpec *modes;    /* extents then strides: 2 * ndim */
} TensorSpec;

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
    TensorSpec **tensors; /* per slot: the tensor spec of class "T", else NULL */
    struct SeqSpec **seqs; /* per slot: the element leaves of class "S", else NULL */
    PyObject *extras;     /* tuple: per slot, the C spec data or the writer of class "X" */
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

/* IEEE binary16 bits of d, as the DSL's direct call computes them (struct's
 * round-to-nearest-even packing; overflow to an infinity; NaN keeps its sign
 * and the high payload bits, never decaying to an infinity). */
static uint16_t
f16_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    if (d != d) {
        uint16_t payload = (uint16_t)((b & ((1ULL << 52) - 1)) >> 42);
        return sign | 0x7C00 | (payload ? payload : 1);
    }
    double x = d < 0 ? -d : d;
    if (x == 0.0) return sign;
    if (x > 1.7976931348623157e308) return sign | 0x7C00; /* infinity */
    int e;
    double f = frexp(x, &e) * 2.0; /* [1, 2) */
    e--;
    if (e >= 16) return sign | 0x7C00;
    if (e < -25) { f = 0.0; e = 0; }
    else if (e < -14) { f = ldexp(f, 14 + e); e = 0; }
    else { e += 15; f -= 1.0; }
    f *= 1024.0;
    unsigned bits = (unsigned)f;
    if ((f - bits > 0.5) || ((f - bits == 0.5) && (bits % 2 == 1))) {
        if (++bits == 1024) {
            bits = 0;
            if (++e == 31) return sign | 0x7C00;
        }
    }
    return (uint16_t)(sign | (e << 10) | bits);
}

/* BFloat16 bits of d, as the DSL's direct call computes them: round to float32
 * (an infinity beyond its range), keep the high half. */
static uint16_t
bf16_bits(double d)
{
    float f = (float)d;
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)(b >> 16);
}

static int
get_real(PyObject *v, double *d)
{
    if (Py_TYPE(v) == &PyFloat_Type) { *d = PyFloat_AsDouble(v); return 1; }
    if (PyLong_Check(v)) {
        *d = PyLong_AsDouble(v);
        if (*d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        return 1;
    }
    return 0;
}

/* Find the DLPack exchange API of `tp` (type(v).__dlpack_c_exchange_api__) and use it
 * from now on: a handle bound with a from_dlpack tensor or a NumPy array learns
 * the torch.Tensor type at its first torch launch. 1: learned; 0: `tp` has none. */
static int
learn_type(TensorSpec *ts, PyObject *tp)
{
    PyObject *cap = PyObject_GetAttrString(tp, "__dlpack_c_exchange_api__");
    if (!cap) { PyErr_Clear(); return 0; }
    char *table = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    if (!table) { PyErr_Clear(); Py_DECREF(cap); return 0; }
    uint32_t major;
    void *fn;
    memcpy(&major, table, 4);
    memcpy(&fn, table + 16 + 3 * sizeof(void *), sizeof(void *)); /* dltensor_from_py_object_no_sync */
    if (major < 1 || !fn) { Py_DECREF(cap); return 0; }
    Py_INCREF(tp);
    Py_XDECREF(ts->type);
    Py_XDECREF(ts->capsule);
    ts->type = tp;
    ts->capsule = cap;
    ts->fn = (dltensor_from_pyobject)fn;
    return 1;
}

static int
pack_tensor(TensorSpec *ts, char *dst, PyObject *v)
{
    if ((PyObject *)Py_TYPE(v) != ts->type && !learn_type(ts, (PyObject *)Py_TYPE(v))) return 0;
    DLTensorC dl;
    if (ts->fn((void *)v, &dl) != 0) { PyErr_Clear(); return 0; }
    if (dl.code != ts->code || dl.bits != ts->bits || dl.lanes != ts->lanes) return 0;
    if (dl.device_type != ts->device_type || dl.device_id != ts->device_id || dl.ndim != ts->ndim) return 0;
    uint64_t addr = (uint64_t)(uintptr_t)dl.data + dl.byte_offset;
    if (ts->align > 1 && addr % ts->align) return 0;
    int64_t compact = 1;
    double span = 1.0; /* footprint: 1 + sum (extent - 1) * |stride|; in double, exact far beyond 2**31 */
    int empty = 0;
    for (int k = 2 * ts->ndim - 1; k >= 0; k--) { /* strides first (compact ones need the extents after them) */
        int mode = k % ts->ndim;
        int64_t value;
        if (k >= ts->ndim) {
            if (dl.strides) value = dl.strides[mode];
            else { value = compact; compact *= dl.shape[mode]; }
            if (dl.shape[mode] == 0) empty = 1;
            span += (double)(dl.shape[mode] - 1) * (double)(value < 0 ? -value : value);
        } else value = dl.shape[mode];
        const ModeSpec *m = &ts->modes[k];
        if (!m->dyn) {
            if (value != m->stat) return 0;
            continue;
        }
        if (m->div > 1 && value % m->div) return 0;
        if (m->width == 32) {
            if (value < INT32_MIN || value > INT32_MAX) return 0;
            int32_t t = (int32_t)value;
            memcpy(dst + m->off, &t, 4);
        } else memcpy(dst + m->off, &value, 8);
    }
    if (ts->footprint32 && !empty && span > (double)INT32_MAX) return 0; /* 32-bit index arithmetic */
    memcpy(dst, &addr, 8);
    return 1;
}

/* A sequence slot: one leaf (class, format, absolute offset, tensor spec) per element. */
typedef struct SeqSpec {
    Py_ssize_t n;
    char *cls;
    char *fmt;
    Py_ssize_t *off;
    TensorSpec **tensors;
} SeqSpec;

static int pack_value(char cls, char fmt, char *dst, TensorSpec *ts, PyObject *writer, PyObject *v);

static int
pack_sequence(char *storage, const SeqSpec *ss, PyObject *v)
{
    int is_tuple = PyTuple_Check(v);
    if (!is_tuple && !PyList_Check(v)) return 0;
    if ((is_tuple ? PyTuple_Size(v) : PyList_Size(v)) != ss->n) return 0;
    for (Py_ssize_t k = 0; k < ss->n; k++) {
        PyObject *item = is_tuple ? PyTuple_GetItem(v, k) : PyList_GetItem(v, k);
        if (!item) { PyErr_Clear(); return 0; }
        Py_INCREF(item); /* a list item stays alive even if reading it runs Python code */
        int ok = pack_value(ss->cls[k], ss->fmt[k], storage + ss->off[k], ss->tensors[k], NULL, item);
        Py_DECREF(item);
        if (!ok) return 0;
    }
    return 1;
}

/* 1: written; 0: not taken as is (the slow path decides). Never leaves an exception set. */
static int
pack_one(Launcher *self, Py_ssize_t i, PyObject *v)
{
    if (self->cls[i] == C_SEQ) return self->seqs[i] ? pack_sequence(self->storage, self->seqs[i], v) : 0;
    PyObject *writer = self->cls[i] == C_WRITER ? PyTuple_GetItem(self->extras, i) : NULL;
    return pack_value(self->cls[i], self->fmt[i], self->storage + self->off[i], self->tensors[i], writer, v);
}

static int
pack_value(char cls, char fmt, char *dst, TensorSpec *ts, PyObject *writer, PyObject *v)
{
    switch (cls) {
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
        if (!get_real(v, &d)) return 0;
        if (fmt == 'f') { float f = (float)d; memcpy(dst, &f, 4); }
        else memcpy(dst, &d, 8);
        return 1;
    }
    case C_F16:
    case C_BF16: {
        double d;
        if (!get_real(v, &d)) return 0;
        uint16_t h = cls == C_F16 ? f16_bits(d) : bf16_bits(d);
        memcpy(dst, &h, 2);
        return 1;
    }
    case C_TENSOR:
        return ts ? pack_tensor(ts, dst, v) : 0;
    case C_WRITER: {
        if (!writer || writer == Py_None) { PyErr_Clear(); return 0; }
        PyObject *r = PyObject_CallFunctionObjArgs(writer, v, NULL);
        if (!r) { PyErr_Clear(); return 0; }
        Py_DECREF(r);
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
    if (!self->entry || !self->slow) {
        PyErr_SetString(PyExc_RuntimeError, "Launcher is not initialised");
        return NULL;
    }
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

static long long
item_ll(PyObject *tuple, Py_ssize_t i)
{
    PyObject *o = PyTuple_GetItem(tuple, i);
    return o ? PyLong_AsLongLong(o) : -1;
}

/* spec: (function, type, (code, bits, lanes), (device_type, device_id), align, ndim,
 *        ((static, dynamic, width, divisibility, offset), ...), capsule, footprint32); None: no C class. */
static int
parse_tensor_spec(PyObject *spec, TensorSpec **out)
{
    *out = NULL;
    if (spec == Py_None) return 0;
    if (!PyTuple_Check(spec) || PyTuple_Size(spec) != 9) {
        PyErr_SetString(PyExc_TypeError, "tensor spec must be a 9-tuple");
        return -1;
    }
    PyObject *dtype = PyTuple_GetItem(spec, 2), *device = PyTuple_GetItem(spec, 3), *modes = PyTuple_GetItem(spec, 6);
    if (!PyTuple_Check(dtype) || !PyTuple_Check(device) || !PyTuple_Check(modes)) {
        PyErr_SetString(PyExc_TypeError, "tensor spec: dtype, device and modes must be tuples");
        return -1;
    }
    TensorSpec *ts = PyMem_Calloc(1, sizeof(TensorSpec));
    if (!ts) { PyErr_NoMemory(); return -1; }
    *out = ts;
    ts->fn = (dltensor_from_pyobject)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GetItem(spec, 0));
    ts->type = PyTuple_GetItem(spec, 1);
    ts->capsule = PyTuple_GetItem(spec, 7);
    if (!ts->fn || ts->type == Py_None || ts->capsule == Py_None) { /* learned at the first launch */
        ts->fn = NULL;
        ts->type = ts->capsule = NULL;
    } else {
        Py_INCREF(ts->type);
        Py_INCREF(ts->capsule);
    }
    ts->code = (uint8_t)item_ll(dtype, 0);
    ts->bits = (uint8_t)item_ll(dtype, 1);
    ts->lanes = (uint16_t)item_ll(dtype, 2);
    ts->device_type = (int32_t)item_ll(device, 0);
    ts->device_id = (int32_t)item_ll(device, 1);
    ts->align = (uint64_t)item_ll(spec, 4);
    ts->ndim = (int)item_ll(spec, 5);
    ts->footprint32 = (int)item_ll(spec, 8);
    if (PyErr_Occurred()) return -1;
    if (ts->ndim < 0 || PyTuple_Size(modes) != 2 * (Py_ssize_t)ts->ndim) {
        PyErr_SetString(PyExc_ValueError, "tensor spec: modes must list 2 * ndim entries");
        return -1;
    }
    ts->modes = PyMem_Calloc(2 * ts->ndim + 1, sizeof(ModeSpec));
    if (!ts->modes) { PyErr_NoMemory(); return -1; }
    for (int k = 0; k < 2 * ts->ndim; k++) {
        PyObject *m = PyTuple_GetItem(modes, k);
        if (!PyTuple_Check(m) || PyTuple_Size(m) != 5) {
            PyErr_SetString(PyExc_TypeError, "tensor spec: a mode is (static, dynamic, width, divisibility, offset)");
            return -1;
        }
        ts->modes[k].stat = item_ll(m, 0);
        ts->modes[k].dyn = (int)item_ll(m, 1);
        ts->modes[k].width = (int)item_ll(m, 2);
        ts->modes[k].div = item_ll(m, 3);
        ts->modes[k].off = (Py_ssize_t)item_ll(m, 4);
    }
    return PyErr_Occurred() ? -1 : 0;
}

static void
free_tensor_spec(TensorSpec *ts)
{
    if (!ts) return;
    Py_XDECREF(ts->type);
    Py_XDECREF(ts->capsule);
    PyMem_Free(ts->modes);
    PyMem_Free(ts);
}

static void
free_seq_spec(SeqSpec *ss)
{
    if (!ss) return;
    if (ss->tensors)
        for (Py_ssize_t k = 0; k < ss->n; k++) free_tensor_spec(ss->tensors[k]);
    PyMem_Free(ss->tensors);
    PyMem_Free(ss->cls);
    PyMem_Free(ss->fmt);
    PyMem_Free(ss->off);
    PyMem_Free(ss);
}

/* spec: ((class, format, offset, tensor spec or None), ...), one per element. */
static int
parse_seq_spec(PyObject *spec, SeqSpec **out)
{
    *out = NULL;
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "sequence spec must be a tuple of leaves");
        return -1;
    }
    Py_ssize_t n = PyTuple_Size(spec);
    SeqSpec *ss = PyMem_Calloc(1, sizeof(SeqSpec));
    if (!ss) { PyErr_NoMemory(); return -1; }
    *out = ss;
    ss->n = n;
    ss->cls = PyMem_Calloc(n + 1, 1);
    ss->fmt = PyMem_Calloc(n + 1, 1);
    ss->off = PyMem_Calloc(n + 1, sizeof(Py_ssize_t));
    ss->tensors = PyMem_Calloc(n + 1, sizeof(TensorSpec *));
    if (!ss->cls || !ss->fmt || !ss->off || !ss->tensors) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *leaf = PyTuple_GetItem(spec, k);
        if (!leaf || !PyTuple_Check(leaf) || PyTuple_Size(leaf) != 4) {
            PyErr_SetString(PyExc_TypeError, "a sequence leaf is (class, format, offset, tensor spec)");
            return -1;
        }
        const char *c = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(leaf, 0), NULL);
        const char *f = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(leaf, 1), NULL);
        if (!c || !f) return -1;
        if (c[0] == C_SEQ || c[0] == C_WRITER) {
            PyErr_SetString(PyExc_ValueError, "a sequence leaf cannot be a sequence or a writer");
            return -1;
        }
        ss->cls[k] = c[0];
        ss->fmt[k] = f[0];
        ss->off[k] = PyLong_AsSsize_t(PyTuple_GetItem(leaf, 2));
        if (ss->off[k] == -1 && PyErr_Occurred()) return -1;
        if (c[0] == C_TENSOR && parse_tensor_spec(PyTuple_GetItem(leaf, 3), &ss->tensors[k]) < 0) return -1;
    }
    return 0;
}

static int
Launcher_init(Launcher *self, PyObject *args, PyObject *kwds)
{
    unsigned long long entry, argv, storage, result;
    const char *fmt, *cls;
    Py_ssize_t nfmt, ncls;
    PyObject *offsets, *extras, *defaults, *required, *slow, *fail, *ret, *keep;
    int release_gil = 1;
    if (self->fmt) {
        PyErr_SetString(PyExc_TypeError, "Launcher cannot be initialised twice");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "KKKKs#s#OOOOOOOO|p", &entry, &argv, &storage, &result, &fmt, &nfmt, &cls, &ncls,
                          &offsets, &extras, &defaults, &required, &slow, &fail, &ret, &keep, &release_gil))
        return -1;
    if (!PyTuple_Check(offsets) || !PyTuple_Check(extras) || !PyTuple_Check(defaults)) {
        PyErr_SetString(PyExc_TypeError, "offsets, extras and defaults must be tuples");
        return -1;
    }
    if (nfmt != ncls || PyTuple_Size(offsets) != nfmt || PyTuple_Size(defaults) != nfmt || PyTuple_Size(extras) != nfmt) {
        PyErr_SetString(PyExc_ValueError, "slot formats, classes, offsets and extras differ in length");
        return -1;
    }
    self->n = nfmt;
    self->fmt = PyMem_Malloc(nfmt + 1);
    self->cls = PyMem_Malloc(nfmt + 1);
    self->off = PyMem_Calloc(nfmt + 1, sizeof(Py_ssize_t));
    self->tensors = PyMem_Calloc(nfmt + 1, sizeof(TensorSpec *));
    self->seqs = PyMem_Calloc(nfmt + 1, sizeof(SeqSpec *));
    if (!self->fmt || !self->cls || !self->off || !self->tensors || !self->seqs) { PyErr_NoMemory(); return -1; }
    memcpy(self->fmt, fmt, nfmt);
    memcpy(self->cls, cls, nfmt);
    for (Py_ssize_t i = 0; i < nfmt; i++) {
        if (cls[i] == C_TENSOR && parse_tensor_spec(PyTuple_GetItem(extras, i), &self->tensors[i]) < 0) return -1;
        if (cls[i] == C_SEQ && parse_seq_spec(PyTuple_GetItem(extras, i), &self->seqs[i]) < 0) return -1;
    }
    Py_INCREF(extras); self->extras = extras;
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
    Py_VISIT(self->extras);
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
    Py_CLEAR(self->extras);
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
    if (self->tensors) {
        for (Py_ssize_t i = 0; i < self->n; i++) free_tensor_spec(self->tensors[i]);
        PyMem_Free(self->tensors);
    }
    if (self->seqs) {
        for (Py_ssize_t i = 0; i < self->n; i++) free_seq_spec(self->seqs[i]);
        PyMem_Free(self->seqs);
    }
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
    {Py_tp_doc, "Launcher(entry, argv, storage, result, fmts, classes, offsets, extras, defaults, required, slow, fail, ret, keep[, release_gil])"},
    {0, NULL},
};

static PyType_Spec Launcher_spec = {
    "cute_bind.launch._claunch.Launcher",
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
