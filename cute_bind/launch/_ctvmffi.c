/* The C fast path of a prepared TVM-FFI launch (cute_bind.launch.tvm_ffi).
 *
 * A function compiled with `--enable-tvm-ffi` is called through its TVM-FFI
 * safe-call entry: `int entry(void *self, const TVMFFIAny *args, int32_t n,
 * TVMFFIAny *result)`. The entry itself decodes and checks every argument
 * (type, dtype, rank, shapes, strides, alignment, device), so a prepared
 * launch only has to hand it the same values the TVM-FFI Python call would:
 *
 *   - a tensor of the type seen at prepare (a type offering the DLPack
 *     exchange API, e.g. torch.Tensor): one `dltensor_from_py_object_no_sync`
 *     call fills a DLTensor in the handle's own storage (no allocation; its
 *     shape and strides point into the tensor, alive for the call), passed as
 *     kTVMFFIDLTensorPtr. For a tensor not on the CPU the producer's current
 *     work stream is made the TVM-FFI environment stream for the call and
 *     restored after it, as the TVM-FFI call does;
 *   - int, bool, float and None exactly as TVM-FFI's own argument setters
 *     write them (kTVMFFIInt, kTVMFFIBool, kTVMFFIFloat, kTVMFFINone); an
 *     int for a pointer parameter only when it is a valid address (>= 0), the
 *     one check the DSL makes on it before a TVM-FFI call;
 *   - for an int or float argument, an object whose type TVM-FFI writes
 *     through the `__tvm_ffi_int__` / `__tvm_ffi_float__` protocol (the DSL's
 *     `cutlass.Int32(...)`, `cutlass.Float32(...)`): the method's result, as
 *     TVM-FFI's protocol setters write it. Which types those are is decided
 *     once per type by `classify(type)` (Python: TVM-FFI's setter order); the
 *     last type it accepted is remembered per argument, so a caller building
 *     a fresh `Int32` per call (quack) stays on the fast path;
 *   - a constant structure (a tuple or list, NamedTuples included, of None,
 *     bool, int and float: FlashAttention's `AuxData(None, None)`): the
 *     `ffi.Array` built once at prepare, passed as the object argument the
 *     TVM-FFI call passes, when the value is the prepared one or equal to it
 *     leaf for leaf with the same types (float bits compared), so TVM-FFI's
 *     call would build an equal array from it;
 *   - a structure (kind 's': a tuple or NamedTuple, a list, a dataclass the
 *     DSL's call unpacks, nested; leaves tensors, numbers as above and None:
 *     quack's scheduler/epilogue arguments, FlashAttention-4's aux tensors):
 *     TVM-FFI's call passes it as an `ffi.Array` of its elements (nested
 *     arrays for nested structures, a dataclass as the tuple of its fields),
 *     and the compiled entry decodes each element as it decodes a top-level
 *     argument. The launcher holds its own such array, built once at init
 *     from the structure's form with None leaves, and rewrites its leaf
 *     elements in place per launch: a tensor leaf as a DLTensor pointer read
 *     like a top-level tensor (the entry takes one in an array as at top
 *     level), a number leaf like a top-level number. The value is walked
 *     against the prepared form (exact type at each node, arity, a
 *     dataclass's fields read as attributes, as TVM-FFI's unpacking reads
 *     them); a value of another form (type, arity, a None leaf given a value
 *     or the reverse) is the compiled call, as a changed constant is.
 *
 * Keyword arguments are placed by parameter name first (cb_place_keywords, as
 * the prepared launcher places them; `names` is None for a bare tvm_ffi.Function,
 * whose call is positional only), parameters left out of a keyword call taking
 * their defaults. The argument array is built once and rewritten in place.
 * Anything else (an unknown or repeated keyword, a required argument left out,
 * another type, an int outside int64) goes to `slow(args, kwargs)`,
 * the compiled function's own call, so behaviour is the direct call's. A
 * non-zero return is the entry's error: it is moved out of TVM-FFI's
 * thread-local slot and handed to `fail(kind, message, backtrace)`, which
 * raises. Addresses of the TVM-FFI C API come from Python (ctypes), so
 * nothing here links against libtvm_ffi.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "_cb_common.h" /* DLTensorC and the exchange API's reader, shared with _claunch.c */

typedef struct {
    int32_t type_index;
    uint32_t zero_padding;
    union {
        int64_t v_int64;
        double v_float64;
        void *v_ptr;
    };
} AnyC;

typedef struct { const char *data; size_t size; } ByteArrayC;

enum { K_NONE = 0, K_INT = 1, K_BOOL = 2, K_FLOAT = 3, K_DLTENSOR_PTR = 7, K_STATIC_OBJECT_BEGIN = 64 };
/* how deep a constant structure is compared (prepare refuses deeper ones: dsl.TVM_FFI_CONSTANT_DEPTH) */
#define CONST_DEPTH 16

/* One node of a structure argument (spec.TvmStructureNode), in preorder: a container ('t' tuple of
 * exactly `type`, 'l' list, 'd' dataclass of exactly `type` read through `names`) or a leaf (op:
 * a leaf kind, written through its slot). The next sibling of a node is `size` nodes on. */
typedef struct {
    char op;
    Py_ssize_t count;
    Py_ssize_t size;
    PyObject *type;   /* borrowed from the held specs */
    PyObject *names;  /* 'd': tuple of str (borrowed) */
    Py_ssize_t slot;  /* a leaf: its slot (n + leaf number) */
} NodeC;

static PyObject *name_int;   /* "__tvm_ffi_int__", interned at module init */
static PyObject *name_float; /* "__tvm_ffi_float__" */
/* TVMFFIObject header: ref counts (8), type_index (4), padding (4), deleter (8) */
#define OBJECT_HEADER 24

typedef int (*safe_call_t)(void *, const AnyC *, int32_t, AnyC *);
typedef cb_dltensor_reader from_py_t;
typedef int (*work_stream_t)(int32_t, int32_t, void **);
typedef int (*set_stream_t)(int32_t, int32_t, void *, void **);
typedef void (*move_error_t)(void **);
typedef int (*dec_ref_t)(void *);

typedef struct {
    PyObject_HEAD
    safe_call_t entry;
    void *self_handle;
    set_stream_t set_stream;
    move_error_t move_error;
    dec_ref_t dec_ref;
    Py_ssize_t n;
    /* per slot (the n arguments, then every structure leaf): */
    Py_ssize_t nslots;
    char *kinds;          /* 'T' tensor, 'i' int, 'a' address, 'b' bool, 'f' float, 'n' None, 'o' constant, 's' structure */
    AnyC *args;           /* the n arguments passed to the entry */
    AnyC **outs;          /* where a slot is written: args + i, or a leaf's element in its structure's array */
    DLTensorC *tensors;
    from_py_t *readers;   /* per tensor slot: the type's dltensor_from_py_object_no_sync */
    work_stream_t *streams;
    PyObject **types;     /* per tensor slot: the exact type taken (borrowed from keep) */
    PyObject **ptypes;    /* per int/float slot: the last protocol type classify() accepted (owned), or NULL */
    PyObject **consts;    /* per constant argument: the prepared structure (borrowed from keep) */
    void **handles;       /* per constant argument: its ffi.Array handle (the array is held in keep) */
    int32_t *type_indices; /* per constant argument: the array's type index */
    Py_ssize_t nnodes;    /* every structure argument's nodes, one structure after another; 0: none */
    NodeC *nodes;
    Py_ssize_t *first;    /* per argument: its first node (kind 's'), else -1 */
    PyObject **held;      /* per node: what the current launch read (owned), NULL outside a launch */
    PyObject *classify;   /* classify(type) -> "i", "f" or "": how TVM-FFI writes that type through its protocol */
    PyObject *defaults;   /* tuple: per argument its default, or `required` */
    PyObject *names;      /* tuple: per argument its keyword name (interned str) or None; or None: no keywords */
    PyObject *required;
    PyObject *slow;
    PyObject *fail;
    PyObject *keep;
    PyObject *refuse;     /* poison(refuse) was called: every launch calls refuse() (closed handle) */
    int busy;             /* inside a launch through the argument array */
} Launcher;

static PyObject *
go_slow(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs - (kwnames ? PyTuple_Size(kwnames) : 0));
    PyObject *kwargs = PyDict_New();
    if (!tuple || !kwargs) { Py_XDECREF(tuple); Py_XDECREF(kwargs); return NULL; }
    Py_ssize_t npos = PyTuple_Size(tuple);
    for (Py_ssize_t i = 0; i < npos; i++) { Py_INCREF(args[i]); PyTuple_SetItem(tuple, i, args[i]); }
    if (kwnames) {
        for (Py_ssize_t k = 0; k < PyTuple_Size(kwnames); k++) {
            if (PyDict_SetItem(kwargs, PyTuple_GetItem(kwnames, k), args[npos + k]) < 0) {
                Py_DECREF(tuple); Py_DECREF(kwargs); return NULL;
            }
        }
    }
    PyObject *res = PyObject_CallFunctionObjArgs(self->slow, tuple, kwargs, NULL);
    Py_DECREF(tuple);
    Py_DECREF(kwargs);
    return res;
}

/* 1 when v's type is the int/float protocol type TVM-FFI writes for argument i's kind; the last
 * accepted type is remembered (one per argument), a new one is asked of classify() once. Never
 * leaves an exception set. */
static int
protocol_type(Launcher *self, Py_ssize_t i, PyObject *v)
{
    PyObject *tp = (PyObject *)Py_TYPE(v);
    if (tp == self->ptypes[i]) return 1;
    PyObject *k = PyObject_CallFunctionObjArgs(self->classify, tp, NULL);
    if (!k) { PyErr_Clear(); return 0; }
    char want[2] = {self->kinds[i], 0};
    int ok = PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, want) == 0;
    Py_DECREF(k);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    if (!ok) return 0;
    PyObject *old = self->ptypes[i];
    Py_INCREF(tp);
    self->ptypes[i] = tp;
    Py_XDECREF(old);
    return 1;
}

/* 1 when TVM-FFI's call builds from b the array it builds from the prepared a: the same types
 * throughout, tuples (NamedTuples: the type itself) and lists of equal length, equal ints, floats
 * of equal bits; None and bools are singletons. Never leaves an exception set. */
static int
same_constant(PyObject *a, PyObject *b, int depth)
{
    if (a == b) return 1;
    if (depth >= CONST_DEPTH || Py_TYPE(a) != Py_TYPE(b)) return 0;
    if (PyLong_CheckExact(a)) {
        int eq = PyObject_RichCompareBool(a, b, Py_EQ);
        if (eq < 0) PyErr_Clear();
        return eq == 1;
    }
    if (PyFloat_CheckExact(a)) {
        double x = PyFloat_AsDouble(a), y = PyFloat_AsDouble(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    int tuple = PyTuple_Check(a);
    if (!tuple && !PyList_CheckExact(a)) return 0;
    Py_ssize_t n = tuple ? PyTuple_Size(a) : PyList_Size(a);
    if (n != (tuple ? PyTuple_Size(b) : PyList_Size(b))) return 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *x = tuple ? PyTuple_GetItem(a, k) : PyList_GetItem(a, k);
        PyObject *y = tuple ? PyTuple_GetItem(b, k) : PyList_GetItem(b, k);
        if (!x || !y) { PyErr_Clear(); return 0; }
        if (!same_constant(x, y, depth + 1)) return 0;
    }
    return 1;
}

#if defined(__GNUC__) || defined(__clang__)
#define CB_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define CB_ALWAYS_INLINE inline
#endif

/* Slot i (an argument, or a structure leaf: its kind, tensor reader, protocol type) written at `out`
 * (args + i, or the leaf's element in its structure's array). 1: written; 0: not taken as is (the
 * slow path decides). Never leaves an exception set. Inlined into each loop that writes: with the
 * structure loop as a second caller the compiler stopped inlining it into the plain one (+5 ns). */
static CB_ALWAYS_INLINE int
write_one(Launcher *self, Py_ssize_t i, PyObject *v, AnyC *out, int32_t *dev_type, int32_t *dev_id, void **stream)
{
    switch (self->kinds[i]) {
    case 'T': {
        DLTensorC *dl = self->tensors + i;
        if ((PyObject *)Py_TYPE(v) != self->types[i]) return 0;
        if (self->readers[i]((void *)v, dl) != 0) { PyErr_Clear(); return 0; }
        out->type_index = K_DLTENSOR_PTR;
        out->zero_padding = 0;
        out->v_ptr = dl;
        if (dl->device_type != CB_DL_CPU && *dev_type == -1 && self->streams[i]) {
            void *s = NULL;
            if (self->streams[i](dl->device_type, dl->device_id, &s) == 0) {
                *dev_type = dl->device_type;
                *dev_id = dl->device_id;
                *stream = s;
            } else {
                PyErr_Clear();
            }
        }
        return 1;
    }
    case 'i': {
        PyObject *r = NULL;
        if (!PyLong_CheckExact(v)) {
            /* TVM-FFI's int protocol setter: value = v.__tvm_ffi_int__(), written as an int */
            if (!protocol_type(self, i, v)) return 0;
            r = PyObject_CallMethodObjArgs(v, name_int, NULL);
            if (!r) { PyErr_Clear(); return 0; }
            if (!PyLong_Check(r)) { Py_DECREF(r); return 0; } /* TVM-FFI would int() it: the call decides */
            v = r;
        }
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        Py_XDECREF(r);
        if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
        out->type_index = K_INT; out->zero_padding = 0; out->v_int64 = x;
        return 1;
    }
    case 'a': {
        /* a pointer parameter: the DSL validates the address (>= 0) and passes the int */
        if (!PyLong_CheckExact(v)) return 0;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || x < 0) { PyErr_Clear(); return 0; }
        out->type_index = K_INT; out->zero_padding = 0; out->v_int64 = x;
        return 1;
    }
    case 'b':
        if (v != Py_True && v != Py_False) return 0;
        out->type_index = K_BOOL; out->zero_padding = 0; out->v_int64 = v == Py_True;
        return 1;
    case 'f': {
        if (PyFloat_CheckExact(v)) {
            out->type_index = K_FLOAT; out->zero_padding = 0; out->v_float64 = PyFloat_AsDouble(v);
            return 1;
        }
        /* TVM-FFI's float protocol setter: <double>(v.__tvm_ffi_float__()) */
        if (!protocol_type(self, i, v)) return 0;
        PyObject *r = PyObject_CallMethodObjArgs(v, name_float, NULL);
        if (!r) { PyErr_Clear(); return 0; }
        if (!PyFloat_Check(r)) { Py_DECREF(r); return 0; } /* a conversion of another type: the call decides */
        double x = PyFloat_AsDouble(r);
        Py_DECREF(r);
        out->type_index = K_FLOAT; out->zero_padding = 0; out->v_float64 = x;
        return 1;
    }
    case 'o':
        if (v != self->consts[i] && !same_constant(self->consts[i], v, 0)) return 0;
        out->type_index = self->type_indices[i]; out->zero_padding = 0; out->v_ptr = self->handles[i];
        return 1;
    case 'n':
        if (v != Py_None) return 0;
        out->type_index = K_NONE; out->zero_padding = 0; out->v_int64 = 0;
        return 1;
    default:
        return 0;
    }
}

static PyObject *
raise_entry_error(Launcher *self)
{
    void *err = NULL;
    self->move_error(&err);
    if (!err) return PyObject_CallFunction(self->fail, "sss", "RuntimeError", "the TVM-FFI entry failed without an error", "");
    ByteArrayC *cell = (ByteArrayC *)((char *)err + OBJECT_HEADER); /* kind, message, backtrace */
    PyObject *kind = PyUnicode_DecodeUTF8(cell[0].data, (Py_ssize_t)cell[0].size, "replace");
    PyObject *msg = PyUnicode_DecodeUTF8(cell[1].data, (Py_ssize_t)cell[1].size, "replace");
    PyObject *bt = PyUnicode_DecodeUTF8(cell[2].data, (Py_ssize_t)cell[2].size, "replace");
    self->dec_ref(err);
    PyObject *res = NULL;
    if (kind && msg && bt) res = PyObject_CallFunctionObjArgs(self->fail, kind, msg, bt, NULL);
    Py_XDECREF(kind); Py_XDECREF(msg); Py_XDECREF(bt);
    return res; /* fail() raises: NULL */
}

/* Reads structure argument i's value v along its prepared nodes: each node's value is held (a new
 * reference in held[], released after the launch), a container's children read from it (a tuple's
 * and a list's items, a dataclass's fields as attributes: TVM-FFI's unpacking reads them so, and
 * a property may run code, so they are read before any number is converted or tensor read). 1:
 * read; 0: the value is not of the prepared form (the call decides). Never leaves an exception set. */
static void
hold(Launcher *self, Py_ssize_t k, PyObject *v) /* steals v */
{
    PyObject *old = self->held[k];
    self->held[k] = v;
    Py_XDECREF(old); /* NULL: each node is read once per launch, and finish_structures clears them */
}

static int
read_structure(Launcher *self, Py_ssize_t i, PyObject *v)
{
    Py_ssize_t first = self->first[i], end = first + self->nodes[first].size;
    Py_INCREF(v);
    hold(self, first, v);
    for (Py_ssize_t k = first; k < end; k++) {
        NodeC *nd = self->nodes + k;
        PyObject *x = self->held[k];
        Py_ssize_t c = k + 1;
        switch (nd->op) {
        case 't':
            if ((PyObject *)Py_TYPE(x) != nd->type || PyTuple_Size(x) != nd->count) return 0;
            for (Py_ssize_t j = 0; j < nd->count; j++, c += self->nodes[c].size) {
                PyObject *item = PyTuple_GetItem(x, j);
                if (!item) { PyErr_Clear(); return 0; }
                Py_INCREF(item);
                hold(self, c, item);
            }
            break;
        case 'l':
            if (!PyList_CheckExact(x) || PyList_Size(x) != nd->count) return 0;
            for (Py_ssize_t j = 0; j < nd->count; j++, c += self->nodes[c].size) {
                PyObject *item = PyList_GetItem(x, j); /* no code runs between the size check and here */
                if (!item) { PyErr_Clear(); return 0; }
                Py_INCREF(item);
                hold(self, c, item);
            }
            break;
        case 'd':
            if ((PyObject *)Py_TYPE(x) != nd->type) return 0;
            for (Py_ssize_t j = 0; j < nd->count; j++, c += self->nodes[c].size) {
                PyObject *item = PyObject_GetAttr(x, PyTuple_GetItem(nd->names, j)); /* x is held: code here cannot free it */
                if (!item) { PyErr_Clear(); return 0; }
                hold(self, c, item);
            }
            break;
        default: /* a leaf: written by write_all */
            break;
        }
    }
    return 1;
}

/* Writes the leaves of structure argument i (read by read_structure) of one pass: numbers (and
 * None) when tensors is 0, tensors when 1. 1: written; 0: a leaf not taken as is. */
static int
write_structure(Launcher *self, Py_ssize_t i, int tensors, int32_t *dev_type, int32_t *dev_id, void **stream)
{
    Py_ssize_t first = self->first[i], end = first + self->nodes[first].size;
    for (Py_ssize_t k = first; k < end; k++) {
        NodeC *nd = self->nodes + k;
        if (nd->op == 't' || nd->op == 'l' || nd->op == 'd' || (nd->op == 'T') != tensors) continue;
        if (!write_one(self, nd->slot, self->held[k], self->outs[nd->slot], dev_type, dev_id, stream)) return 0;
    }
    return 1;
}

/* write_all with structure arguments: every structure read first (its fields' getters may run
 * code), then every number (top-level and leaves, in argument order), then every tensor. */
static int
write_structured(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject **placed, int32_t *dev_type, int32_t *dev_id,
                 void **stream)
{
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (self->kinds[i] != 's') continue;
        PyObject *v = placed ? placed[i] : i < nargs ? args[i] : NULL;
        if (v == NULL) v = PyTuple_GetItem(self->defaults, i);
        if (v == self->required || !read_structure(self, i, v)) return 0;
    }
    for (int tensors = 0; tensors < 2; tensors++) {
        for (Py_ssize_t i = 0; i < self->n; i++) {
            if (self->kinds[i] == 's') {
                if (!write_structure(self, i, tensors, dev_type, dev_id, stream)) return 0;
                continue;
            }
            if ((self->kinds[i] == 'T') != tensors) continue;
            PyObject *v = placed ? placed[i] : i < nargs ? args[i] : NULL;
            if (v == NULL) v = PyTuple_GetItem(self->defaults, i);
            if (v == self->required || !write_one(self, i, v, self->args + i, dev_type, dev_id, stream)) return 0;
        }
    }
    return 1;
}

/* After a launch with structures: the tensor leaves' elements set back to None (nothing keeps a
 * DLTensor pointer into the handle's storage once the entry returned), then what was read released
 * (last: releasing may run code). */
static void
finish_structures(Launcher *self)
{
    for (Py_ssize_t k = 0; k < self->nnodes; k++) {
        NodeC *nd = self->nodes + k;
        if (nd->op == 'T') {
            AnyC *out = self->outs[nd->slot];
            out->type_index = K_NONE; out->zero_padding = 0; out->v_int64 = 0;
        }
    }
    for (Py_ssize_t k = 0; k < self->nnodes; k++) Py_CLEAR(self->held[k]);
}

/* Every argument (placed by parameter where keywords are given) written into the handle's array:
 * 1; 0 where one needs the compiled function's own call; -1 with MemoryError. The placement
 * array (on the stack up to 16 parameters) is freed on every return. */
static int
write_all(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t nkw,
          int32_t *dev_type, int32_t *dev_id, void **stream)
{
    PyObject *local[16], **placed = NULL; /* a keyword call's values by parameter (borrowed from the call) */
    int ok = 1;
    if (nkw) {
        placed = self->n <= 16 ? local : PyMem_Malloc((size_t)self->n * sizeof(PyObject *));
        if (placed == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        ok = cb_place_keywords(self->names, self->defaults, self->required, self->n, args, nargs, kwnames, placed);
    }
    if (ok && self->nnodes) {
        ok = write_structured(self, args, nargs, placed, dev_type, dev_id, stream);
        if (placed != local) PyMem_Free(placed);
        return ok;
    }
    /* two passes, the arguments' lifetime rule (docs/concepts/safety.md): every argument whose
     * writing may run Python code (__tvm_ffi_int__, __tvm_ffi_float__, a constant's comparison)
     * first, then the tensors, whose DLTensor is read without running any: no user code runs
     * between reading a tensor's address and the call (a __tvm_ffi_float__ may free it) */
    for (int tensors = 0; tensors < 2; tensors++) {
        for (Py_ssize_t i = 0; ok && i < self->n; i++) {
            if ((self->kinds[i] == 'T') != tensors) continue;
            PyObject *v = placed ? placed[i] : i < nargs ? args[i] : NULL;
            if (v == NULL) v = PyTuple_GetItem(self->defaults, i);
            ok = v != self->required && write_one(self, i, v, self->args + i, dev_type, dev_id, stream);
        }
    }
    if (placed != local) PyMem_Free(placed); /* NULL where no keywords: a no-op */
    return ok;
}

/* One launch through the handle's argument array (Launcher_launch holds `busy` around it). */
static PyObject *
launch_array(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t nkw)
{
    if (nargs > self->n || (nkw && self->names == Py_None)) return go_slow(self, args, nargs + nkw, nkw ? kwnames : NULL);
    int32_t dev_type = -1, dev_id = 0;
    void *stream = NULL;
    int ok = write_all(self, args, nargs, kwnames, nkw, &dev_type, &dev_id, &stream);
    if (ok < 0) return NULL;
    if (!ok) return go_slow(self, args, nargs + nkw, nkw ? kwnames : NULL);
    /* a protocol method or classify() ran Python code, which may have closed the handle */
    if (self->refuse) return PyObject_CallObject(self->refuse, NULL);
    void *prev = NULL;
    if (dev_type != -1 && self->set_stream(dev_type, dev_id, stream, &prev) != 0) return raise_entry_error(self);
    AnyC result;
    result.type_index = K_NONE; result.zero_padding = 0; result.v_int64 = 0;
    int rc = self->entry(self->self_handle, self->args, (int32_t)self->n, &result);
    if (dev_type != -1 && prev != stream && self->set_stream(dev_type, dev_id, prev, NULL) != 0 && rc == 0) {
        return raise_entry_error(self);
    }
    if (rc != 0) return raise_entry_error(self);
    switch (result.type_index) {
    case K_NONE: Py_RETURN_NONE;
    case K_INT: return PyLong_FromLongLong(result.v_int64);
    case K_BOOL: return PyBool_FromLong((long)result.v_int64);
    case K_FLOAT: return PyFloat_FromDouble(result.v_float64);
    default:
        /* a compiled CuTe function returns nothing; anything else is released, not leaked */
        if (result.type_index >= K_STATIC_OBJECT_BEGIN && result.v_ptr) self->dec_ref(result.v_ptr);
        PyErr_SetString(PyExc_RuntimeError, "the TVM-FFI entry returned an object; call the compiled function directly");
        return NULL;
    }
}

static PyObject *
Launcher_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (!self->entry || !self->slow) {
        PyErr_SetString(PyExc_RuntimeError, "TVM-FFI launcher not initialised");
        return NULL;
    }
    /* refused whatever the arguments (a function without parameters has no argument to refuse) */
    if (self->refuse) return PyObject_CallObject(self->refuse, NULL);
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_Size(kwnames) : 0;
    /* a launch from inside this one (a protocol method write_one called launching the handle again)
     * would rewrite the argument array under it: that launch is the compiled function's own call */
    if (self->busy) return go_slow(self, args, nargs + nkw, nkw ? kwnames : NULL);
    self->busy = 1;
    PyObject *res = launch_array(self, args, nargs, kwnames, nkw);
    if (self->nnodes) finish_structures(self); /* busy still: code run by a release launches the call */
    self->busy = 0;
    return res;
}

static void *
as_pointer(PyObject *v, int *ok)
{
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) { *ok = 0; return NULL; }
    return (void *)(uintptr_t)x;
}

/* A tensor slot: its type's reader and work-stream function (addresses) and the exact type (borrowed:
 * the specs holding it are held). 0, or -1 with an exception. */
static int
set_tensor_slot(Launcher *self, Py_ssize_t slot, PyObject *reader, PyObject *work_stream, PyObject *type)
{
    int ok = 1;
    void *r = as_pointer(reader, &ok), *w = as_pointer(work_stream, &ok);
    if (!ok) return -1;
    if (!r) { PyErr_SetString(PyExc_ValueError, "null DLPack reader"); return -1; }
    if (!PyType_Check(type)) { PyErr_SetString(PyExc_ValueError, "a tensor needs its exact type"); return -1; }
    self->readers[slot] = (from_py_t)r;
    self->streams[slot] = (work_stream_t)w;
    self->types[slot] = type;
    return 0;
}

/* Structure argument i from its TvmStructureArg (nodes, array, handle, type_index): its nodes from
 * *node_at on, its leaves as slots from *slot_at on (each written at its element's address), the
 * argument itself the array's handle (written once: the array stays the launcher's). Every node is
 * checked: one tree in preorder (each container's children fill exactly its subtree), a known op,
 * a dataclass's names, a leaf's non-null address. 0, or -1 with an exception. */
static int
parse_structure(Launcher *self, Py_ssize_t i, PyObject *spec, Py_ssize_t *node_at, Py_ssize_t *slot_at)
{
    PyObject *nodes = PyTuple_GetItem(spec, 0); /* checked by the caller: a non-empty tuple of 8-tuples */
    int ok = 1;
    void *hd = as_pointer(PyTuple_GetItem(spec, 2), &ok);
    long ti = PyLong_AsLong(PyTuple_GetItem(spec, 3));
    if (!ok || (ti == -1 && PyErr_Occurred())) return -1;
    if (!hd || ti < K_STATIC_OBJECT_BEGIN) { PyErr_SetString(PyExc_ValueError, "a structure argument needs an object handle"); return -1; }
    Py_ssize_t count = PyTuple_Size(nodes), base = *node_at;
    for (Py_ssize_t j = 0; j < count; j++) {
        PyObject *node = PyTuple_GetItem(nodes, j);
        NodeC *nd = self->nodes + base + j;
        nd->op = (char)PyUnicode_ReadChar(PyTuple_GetItem(node, 0), 0);
        nd->type = PyTuple_GetItem(node, 1);
        nd->count = PyLong_AsSsize_t(PyTuple_GetItem(node, 2));
        nd->size = PyLong_AsSsize_t(PyTuple_GetItem(node, 3));
        nd->names = PyTuple_GetItem(node, 4);
        nd->slot = -1;
        if (PyErr_Occurred()) return -1;
        int container = nd->op == 't' || nd->op == 'l' || nd->op == 'd';
        if (nd->size < 1 || j + nd->size > count || (j == 0 && (nd->size != count || !container))) {
            PyErr_SetString(PyExc_ValueError, "structure nodes: not one tree in preorder");
            return -1;
        }
        if (container) {
            Py_ssize_t c = j + 1, total = 1;
            for (Py_ssize_t q = 0; q < nd->count; q++) {
                if (c >= count) { total = -1; break; }
                PyObject *child_size = PyTuple_GetItem(PyTuple_GetItem(nodes, c), 3);
                Py_ssize_t cs = PyLong_AsSsize_t(child_size);
                if (cs < 1) { PyErr_Clear(); total = -1; break; }
                total += cs;
                c += cs;
            }
            if (nd->count < 0 || total != nd->size) {
                PyErr_SetString(PyExc_ValueError, "structure nodes: a container's children do not fill its subtree");
                return -1;
            }
            if ((nd->op == 't' || nd->op == 'd') && !PyType_Check(nd->type)) {
                PyErr_SetString(PyExc_ValueError, "structure nodes: a tuple or dataclass node needs its exact type");
                return -1;
            }
            if (nd->op == 'd') {
                int names_ok = PyTuple_Check(nd->names) && PyTuple_Size(nd->names) == nd->count;
                for (Py_ssize_t q = 0; names_ok && q < nd->count; q++) names_ok = PyUnicode_Check(PyTuple_GetItem(nd->names, q));
                if (!names_ok) {
                    PyErr_SetString(PyExc_ValueError, "structure nodes: a dataclass node needs one field name per child");
                    return -1;
                }
            }
            continue;
        }
        if (nd->op != 'T' && nd->op != 'i' && nd->op != 'b' && nd->op != 'f' && nd->op != 'n') {
            PyErr_Format(PyExc_ValueError, "structure nodes: unknown op %c", nd->op);
            return -1;
        }
        if (nd->size != 1 || nd->count != 0) { PyErr_SetString(PyExc_ValueError, "structure nodes: a leaf has no children"); return -1; }
        void *address = as_pointer(PyTuple_GetItem(node, 5), &ok);
        if (!ok) return -1;
        if (!address) { PyErr_SetString(PyExc_ValueError, "structure nodes: a leaf needs its element's address"); return -1; }
        Py_ssize_t slot = (*slot_at)++;
        nd->slot = slot;
        self->kinds[slot] = nd->op;
        self->outs[slot] = (AnyC *)address;
        if (nd->op == 'T' &&
            set_tensor_slot(self, slot, PyTuple_GetItem(node, 6), PyTuple_GetItem(node, 7), nd->type) < 0)
            return -1;
    }
    self->first[i] = base;
    *node_at = base + count;
    AnyC *out = self->args + i; /* the array itself: the same object every launch */
    out->type_index = (int32_t)ti; out->zero_padding = 0; out->v_ptr = hd;
    return 0;
}

/* The TvmFfiLaunchSpec fields init reads, in this order (exported as TVM_FFI_LAUNCH_SPEC_FIELDS); a tensor
 * argument's spec is a TvmTensorArg (TENSOR_ARG_FIELDS), a constant's a TvmConstantArg (CONSTANT_ARG_FIELDS), a
 * structure's a TvmStructureArg (STRUCTURE_ARG_FIELDS) of TvmStructureNodes (STRUCTURE_NODE_FIELDS), all read by
 * position. */
enum { F_ENTRY, F_SELF_HANDLE, F_SET_STREAM, F_MOVE_ERROR, F_DEC_REF, F_KINDS, F_SPECS, F_DEFAULTS, F_REQUIRED, F_SLOW, F_FAIL,
       F_CLASSIFY, F_KEEP, F_NAMES, N_SPEC_FIELDS };
static const char *const spec_fields[N_SPEC_FIELDS + 1] = {
    "entry", "self_handle", "set_stream", "move_error", "dec_ref", "kinds", "specs", "defaults", "required", "slow", "fail",
    "classify", "keep", "names", NULL};
/* The references a Launcher takes from those fields, X(member, field); it also owns `keep`, `refuse`, its
 * slots' types and its structures' nodes */
#define LAUNCHER_SPEC_REFS(X) \
    X(defaults, F_DEFAULTS) X(names, F_NAMES) X(required, F_REQUIRED) X(slow, F_SLOW) X(fail, F_FAIL) X(classify, F_CLASSIFY)
static const int spec_kinds[N_SPEC_FIELDS] = {
    CB_INT, CB_INT, CB_INT, CB_INT, CB_INT, CB_BYTES, CB_TUPLE, CB_TUPLE, CB_ANY, CB_CALLABLE, CB_CALLABLE, CB_CALLABLE, CB_TUPLE,
    CB_ANY};
static const char *const tensor_arg_fields[] = {"reader", "work_stream", "type", NULL};
static const char *const constant_arg_fields[] = {"structure", "array", "handle", "type_index", NULL};
static const char *const structure_arg_fields[] = {"nodes", "array", "handle", "type_index", NULL};
static const char *const structure_node_fields[] = {"op", "type", "arity", "size", "names", "address", "reader", "work_stream", NULL};

/* Launcher(spec): `spec` a TvmFfiLaunchSpec (any object with its fields: each is checked here). */
static int
Launcher_init(Launcher *self, PyObject *a, PyObject *kw)
{
    PyObject *rec;
    PyObject *f[N_SPEC_FIELDS] = {NULL};
    int rc = -1;
    if (cb_no_keywords(kw, "Launcher takes no keywords") < 0 || !PyArg_ParseTuple(a, "O:Launcher", &rec)) return -1;
    if (self->entry || self->kinds) { PyErr_SetString(PyExc_RuntimeError, "Launcher already initialised"); return -1; }
    for (int k = 0; k < N_SPEC_FIELDS; k++)
        if (!(f[k] = cb_field(rec, "TvmFfiLaunchSpec", spec_fields[k], spec_kinds[k]))) goto done;
    uint64_t e, h, ss, me, dr;
    if (cb_address(f[F_ENTRY], "TvmFfiLaunchSpec", "entry", &e) < 0 || cb_address(f[F_SELF_HANDLE], "TvmFfiLaunchSpec", "self_handle", &h) < 0 ||
        cb_address(f[F_SET_STREAM], "TvmFfiLaunchSpec", "set_stream", &ss) < 0 ||
        cb_address(f[F_MOVE_ERROR], "TvmFfiLaunchSpec", "move_error", &me) < 0 || cb_address(f[F_DEC_REF], "TvmFfiLaunchSpec", "dec_ref", &dr) < 0)
        goto done;
    if (!e || !ss || !me || !dr) { PyErr_SetString(PyExc_ValueError, "null entry or TVM-FFI C API address"); goto done; }
    PyObject *kinds = f[F_KINDS], *specs = f[F_SPECS], *defaults = f[F_DEFAULTS];
    Py_ssize_t n = PyBytes_Size(kinds);
    if (PyTuple_Size(specs) != n || PyTuple_Size(defaults) != n) {
        PyErr_SetString(PyExc_ValueError, "TvmFfiLaunchSpec: kinds, specs and defaults differ in length");
        goto done;
    }
    PyObject *names = f[F_NAMES];
    if (names != Py_None) {
        int names_ok = PyTuple_Check(names) && PyTuple_Size(names) == n;
        for (Py_ssize_t i = 0; names_ok && i < n; i++) {
            PyObject *name = PyTuple_GetItem(names, i);
            names_ok = name == Py_None || PyUnicode_CheckExact(name);
        }
        if (!names_ok) {
            PyErr_SetString(PyExc_TypeError, "TvmFfiLaunchSpec: names must be None or a tuple of one str or None per argument");
            goto done;
        }
    }
    const char *k = PyBytes_AsString(kinds);
    /* the structures' nodes and leaves: each leaf is a slot after the n arguments */
    Py_ssize_t nnodes = 0, nleaves = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (k[i] != 's') continue;
        PyObject *spec = PyTuple_GetItem(specs, i);
        PyObject *nodes = PyTuple_Check(spec) && PyTuple_Size(spec) == 4 ? PyTuple_GetItem(spec, 0) : NULL;
        if (!nodes || !PyTuple_Check(nodes) || PyTuple_Size(nodes) < 1) {
            PyErr_SetString(PyExc_ValueError, "a structure argument needs a TvmStructureArg (nodes, array, handle, type_index)");
            goto done;
        }
        nnodes += PyTuple_Size(nodes);
        for (Py_ssize_t j = 0; j < PyTuple_Size(nodes); j++) {
            PyObject *node = PyTuple_GetItem(nodes, j);
            PyObject *op = PyTuple_Check(node) && PyTuple_Size(node) == 8 ? PyTuple_GetItem(node, 0) : NULL;
            if (!op || !PyUnicode_Check(op) || PyUnicode_GetLength(op) != 1) {
                PyErr_SetString(PyExc_ValueError, "a structure node needs a TvmStructureNode (op, type, arity, size, names, address, reader, work_stream)");
                goto done;
            }
            Py_UCS4 o = PyUnicode_ReadChar(op, 0);
            nleaves += o != 't' && o != 'l' && o != 'd';
        }
    }
    Py_ssize_t nslots = n + nleaves, m = nslots ? nslots : 1;
    self->kinds = PyMem_Calloc((size_t)m, 1);
    self->args = PyMem_Calloc((size_t)(n ? n : 1), sizeof(AnyC));
    self->outs = PyMem_Calloc((size_t)m, sizeof(AnyC *));
    self->tensors = PyMem_Calloc((size_t)m, sizeof(DLTensorC));
    self->readers = PyMem_Calloc((size_t)m, sizeof(from_py_t));
    self->streams = PyMem_Calloc((size_t)m, sizeof(work_stream_t));
    self->types = PyMem_Calloc((size_t)m, sizeof(PyObject *));
    self->ptypes = PyMem_Calloc((size_t)m, sizeof(PyObject *));
    self->consts = PyMem_Calloc((size_t)m, sizeof(PyObject *));
    self->handles = PyMem_Calloc((size_t)m, sizeof(void *));
    self->type_indices = PyMem_Calloc((size_t)m, sizeof(int32_t));
    self->nodes = PyMem_Calloc((size_t)(nnodes ? nnodes : 1), sizeof(NodeC));
    self->held = PyMem_Calloc((size_t)(nnodes ? nnodes : 1), sizeof(PyObject *));
    self->first = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    if (!self->kinds || !self->args || !self->outs || !self->tensors || !self->readers || !self->streams || !self->types || !self->ptypes ||
        !self->consts || !self->handles || !self->type_indices || !self->nodes || !self->held || !self->first) {
        PyErr_NoMemory();
        goto done;
    }
    self->nslots = nslots; /* what the per-slot arrays hold, from here on (dealloc and traverse walk them) */
    int ok = 1;
    Py_ssize_t node_at = 0, slot_at = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = k[i];
        if (c != 'T' && c != 'i' && c != 'a' && c != 'b' && c != 'f' && c != 'n' && c != 'o' && c != 's') {
            PyErr_Format(PyExc_ValueError, "unknown argument kind %c", c);
            goto done;
        }
        self->kinds[i] = c;
        self->outs[i] = self->args + i;
        self->first[i] = -1;
        PyObject *spec = PyTuple_GetItem(specs, i);
        if (c == 's') {
            if (parse_structure(self, i, spec, &node_at, &slot_at) < 0) goto done;
            continue;
        }
        if (c == 'o') {
            if (!PyTuple_Check(spec) || PyTuple_Size(spec) != 4) {
                PyErr_SetString(PyExc_ValueError, "a constant argument needs a TvmConstantArg (structure, array, handle, type_index)");
                goto done;
            }
            void *hd = as_pointer(PyTuple_GetItem(spec, 2), &ok);
            long ti = PyLong_AsLong(PyTuple_GetItem(spec, 3));
            if (!ok || (ti == -1 && PyErr_Occurred())) goto done;
            if (!hd || ti < K_STATIC_OBJECT_BEGIN) { PyErr_SetString(PyExc_ValueError, "a constant argument needs an object handle"); goto done; }
            self->consts[i] = PyTuple_GetItem(spec, 0); /* kept alive by `specs`, held below, as is the array */
            self->handles[i] = hd;
            self->type_indices[i] = (int32_t)ti;
            continue;
        }
        if (c != 'T') continue;
        if (!PyTuple_Check(spec) || PyTuple_Size(spec) != 3 || !PyType_Check(PyTuple_GetItem(spec, 2))) {
            PyErr_SetString(PyExc_ValueError, "a tensor argument needs a TvmTensorArg (reader, work_stream, type)");
            goto done;
        }
        if (set_tensor_slot(self, i, PyTuple_GetItem(spec, 0), PyTuple_GetItem(spec, 1), PyTuple_GetItem(spec, 2)) < 0) goto done;
    }
    self->nnodes = nnodes;
    PyObject *held = PyTuple_Pack(2, f[F_KEEP], specs);
    if (!held) goto done;
    self->n = n;
    self->self_handle = (void *)(uintptr_t)h;
    self->set_stream = (set_stream_t)(uintptr_t)ss;
    self->move_error = (move_error_t)(uintptr_t)me;
    self->dec_ref = (dec_ref_t)(uintptr_t)dr;
    /* the launcher keeps what it read (the references cb_field returned) */
    LAUNCHER_SPEC_REFS(CB_TAKE_FIELD)
    self->keep = held;
    self->entry = (safe_call_t)(uintptr_t)e; /* last: a launcher is usable only when complete */
    rc = 0;
done:
    for (int j = 0; j < N_SPEC_FIELDS; j++) Py_XDECREF(f[j]);
    return rc;
}

static int
Launcher_traverse(Launcher *self, visitproc visit, void *arg)
{
    LAUNCHER_SPEC_REFS(CB_VISIT_FIELD)
    Py_VISIT(self->keep);
    Py_VISIT(self->refuse);
    int r = cb_visit_array(self->ptypes, self->nslots, visit, arg);
    return r ? r : cb_visit_array(self->held, self->nnodes, visit, arg);
}

static int
Launcher_clear(Launcher *self)
{
    self->entry = NULL;
    LAUNCHER_SPEC_REFS(CB_CLEAR_FIELD)
    Py_CLEAR(self->keep);
    Py_CLEAR(self->refuse);
    cb_clear_array(self->ptypes, self->nslots);
    cb_clear_array(self->held, self->nnodes);
    return 0;
}

static void
Launcher_dealloc(Launcher *self)
{
    PyObject_GC_UnTrack(self);
    Launcher_clear(self);
    CB_FREE_ARRAYS(self->kinds, self->args, self->tensors, self->readers, self->streams, self->types, self->ptypes, self->consts,
                   self->handles, self->type_indices, self->outs, self->nodes, self->held, self->first);
    cb_free_instance((PyObject *)self);
}

/* poison(refuse): every later launch calls refuse() (a closed handle), as _claunch.c's poison does.
 * The argument array and `keep` stay: the compiled function is the Python handle's to release. */
static PyObject *
Launcher_poison(Launcher *self, PyObject *refuse)
{
    if (!PyCallable_Check(refuse)) { PyErr_SetString(PyExc_TypeError, "refuse must be callable"); return NULL; }
    /* launch checks it first: no argument list reaches the entry again; the old one is released last (CB_SETREF):
       releasing it may run code, and the launcher is consistent by now */
    CB_SETREF(self->refuse, Py_NewRef(refuse));
    Py_RETURN_NONE;
}

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL | METH_KEYWORDS,
     "launch($self, /, *args, **kwargs)\n--\n\nRewrite the argument array in place and call the entry."},
    {"poison", (PyCFunction)Launcher_poison, METH_O, "poison($self, refuse, /)\n--\n\nEvery later launch calls refuse() instead."},
    {NULL, NULL, 0, NULL},
};

CB_TYPE_SPEC(Launcher, "cute_bind.launch._ctvmffi.Launcher", Launcher, Py_TPFLAGS_HAVE_GC,
             CB_INIT_GC_SLOTS(Launcher_init, Launcher_dealloc, Launcher_traverse, Launcher_clear, Launcher_methods),
             {Py_tp_doc, "Launcher(spec, /)\n--\n\n"
                         "The C fast path of one prepared TVM-FFI launch, from a cute_bind.launch.spec.TvmFfiLaunchSpec "
                         "(TVM_FFI_LAUNCH_SPEC_FIELDS: what it reads)."});

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_ctvmffi", "C fast path of prepared TVM-FFI launches.", -1, NULL};

PyMODINIT_FUNC
PyInit__ctvmffi(void)
{
    if (!name_int) name_int = PyUnicode_InternFromString("__tvm_ffi_int__");
    if (!name_float) name_float = PyUnicode_InternFromString("__tvm_ffi_float__");
    if (!name_int || !name_float) return NULL;
    /* the record fields init reads (tests/launch/test_spec.py checks them against cute_bind.launch.spec) */
    static const cb_export exports[] = {
        {"Launcher", &Launcher_spec},
        {"TVM_FFI_LAUNCH_SPEC_FIELDS", .fields = spec_fields},
        {"TENSOR_ARG_FIELDS", .fields = tensor_arg_fields},
        {"CONSTANT_ARG_FIELDS", .fields = constant_arg_fields},
        {"STRUCTURE_ARG_FIELDS", .fields = structure_arg_fields},
        {"STRUCTURE_NODE_FIELDS", .fields = structure_node_fields},
    };
    return CB_MODULE_INIT(&moduledef, exports);
}
