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
 * Keywords are placed by their slots' names. Anything it does not accept as
 * is (unknown or repeated keywords, missing or extra arguments, values no
 * class reads, out-of-range values, a tensor that fails a check...) goes to
 * the Python slow path, which owns every check and every error message.
 *
 * Everything comes in one record, a cute_bind.launch.spec.LaunchSpec: init
 * reads each of its fields once by name (LAUNCH_SPEC_FIELDS), checks its type
 * and length, and keeps what it read; sequence leaves are SeqLeaf records
 * (SEQ_LEAF_FIELDS, read by position).
 *
 * The storage, packed array and result slot are Python-owned buffers kept
 * alive through `keep` (a KeepAlive record), which also pins the compiled module: a launch holds
 * its own reference to `keep` until the entry point returns, so a close or
 * unload from another thread cannot free the code under a running call.
 *
 * Hostile input never crashes the process (docs/concepts/safety.md):
 * - a handle is launched by one caller at a time: `busy` is set while slots
 *   are written and the entry point runs, and a second launch meanwhile
 *   (another thread, or code run by this launch's own conversions) raises
 *   CB403 through `busy_error` instead of rewriting the storage;
 * - every object whose memory the launch uses is owned by the launch until
 *   the entry point returns (a list is read from a snapshot tuple, a writer's
 *   result is held), so another thread cannot free it under the call;
 * - `refuse` is checked again right before the call (a close or unload run
 *   by conversion code is honoured);
 * - only exceptions derived from Exception mean "not taken as is, ask the
 *   slow path": KeyboardInterrupt, SystemExit... propagate;
 * - every slot's class is checked at init against its format, offset and
 *   size in the storage block, so no write lands outside its slot;
 * - a DLPack view is checked before use: a known API version, a non-null
 *   shape, no negative extent, no INT64_MIN stride, no overflowing compact
 *   stride or data address, and no NULL data for a non-empty tensor.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "_cb_common.h"

typedef void (*entry_fn)(void **);

/* Py_XSETREF is not in the limited API */
#define Py_XSETREF_CB(dst, src) do { PyObject *_old = (PyObject *)(dst); (dst) = (src); Py_XDECREF(_old); } while (0)

/* How a pack reads memory-owning values (arguments' lifetime rule, docs/concepts/safety.md):
 * a launch converts every value whose reading runs Python code (numbers' __index__/__float__,
 * streams, writers, __cuda_array_interface__ exporters) first (PACK_DEFER: a value whose address
 * is read without running Python code, a torch tensor through the exchange function, a NumPy
 * array, a ctypes pointer, returns DEFERRED unread), then reads the deferred addresses
 * (PACK_PURE: nothing that runs Python code is taken then). Writers (class "X": structures,
 * unions) run Python code and read addresses: they run between the two (PACK_WRITE), after every
 * number's and stream's conversion. So no user code runs between reading
 * an address and calling the entry point: a __float__ that frees an earlier tensor's storage
 * (out.set_()) or resizes an array runs before that tensor's address is read. */
enum { PACK_DEFER = 1, PACK_WRITE = 2, PACK_PURE = 3 };
#define DEFERRED 2

/* Fast classes: which values a slot takes as they are (see SlotKind.fast). */
enum { C_EXACT_INT = 'P', C_EXACT_BOOL = 'B', C_INT = 'I', C_REAL = 'R', C_F16 = 'h', C_BF16 = 'g', C_TENSOR = 'T', C_SEQ = 'S', C_WRITER = 'X', C_STREAM = 'Z' };

/* DLTensorC and the exchange API's reader: _cb_common.h (shared with _ctvmffi.c). */
typedef cb_dltensor_reader dltensor_from_pyobject;

typedef struct {
    int64_t stat;       /* compiled-in value (static modes) */
    int64_t div;        /* divisibility (dynamic modes) */
    Py_ssize_t off;     /* offset of the dynamic value in the descriptor */
    int dyn;
    int width;          /* 32 or 64 */
} ModeSpec;

typedef struct {
    dltensor_from_pyobject fn;
    Py_ssize_t api_offset; /* offset of dltensor_from_py_object_no_sync in the exchange-API table */
    PyObject *type;     /* the exact type `fn` was found on (owned), or NULL */
    PyObject *capsule;  /* that type's exchange-API capsule (owned), or NULL */
    PyObject *cai_type; /* a type without the exchange API read through __cuda_array_interface__ (owned), or NULL */
    uint8_t code, bits;
    uint16_t lanes;
    int32_t device_type, device_id;
    uint64_t align;
    int ndim;
    int footprint32;    /* 32-bit strides: the footprint must fit Int32 */
    ModeSpec *modes;    /* extents then strides: 2 * ndim */
} TensorSpec;

/* A pointer slot (class "P" with a spec): what a tensor or array given for it must
 * say of itself to be taken as is (its data address written), as PointerKind.coerce
 * checks it: the element type (unless any), the device (a CUDA one: `cuda_ok` and,
 * when bound to one, that id; the host: `cpu_ok`), the alignment, a non-null address. */
typedef struct {
    dltensor_from_pyobject fn; /* torch's exchange function, or NULL */
    PyObject *types;    /* tuple: the exact types read through `fn` (owned), or NULL */
    PyObject *capsule;  /* their exchange-API capsule (owned), or NULL */
    uint8_t code, bits;
    uint16_t lanes;
    int any_dtype;
    int cpu_ok, cuda_ok;
    int32_t device_type, device_id; /* device_type 0: not bound to a device */
    uint64_t align;
    PyObject *other_type;   /* one more exact type read by `other_reader` (the DSL's make_ptr pointers), or NULL */
    PyObject *other_reader; /* value -> int address, or None when it is not taken as is (owned), or NULL */
} PtrSpec;

/* An object spec: how a stream slot (class "Z") or a number slot (classes "I", "R", "h", "g",
 * "B") reads values past the exact ones its class writes itself. One record for both: an object
 * of one of `types` is read by the class's own conversion (a stream: int(v), cuda.CUstream; an
 * integer slot: operator.index(v); a float slot: float(v); NumPy's scalar types), one of
 * `attr_types` (streams only) through its `cuda_stream` attribute (torch.cuda.Stream), and any
 * other object is given to `reader` (the kind's Python reading, which returns the value or
 * raises). What is read must be the exact value the class writes (an int in [0, 2**64) for a
 * stream; an int, bool, or int or float for a number slot, by class) and is then written as
 * that value is; anything else is left to the slow path, as is a read that raises. */
typedef struct {
    PyObject *types;      /* tuple of exact types (owned) */
    PyObject *attr_types; /* tuple of exact types (owned); empty for number slots */
    PyObject *reader;     /* value -> value (owned), or NULL */
} ObjSpec;

/* NumPy's ndarray object layout (PyArrayObject_fields, NumPy's public C ABI), as
 * cute_bind.slots.dlpack.array_layout() verified it against real arrays before
 * handing it here (configure()); `type` NULL: not configured, arrays go slow. */
#define NP_MAX_TYPES 64
typedef struct {
    PyObject *type;     /* numpy.ndarray, exactly (owned) */
    Py_ssize_t data, nd, dims, strides, descr, flags; /* offsets in the array object */
    Py_ssize_t type_num, byteorder;                   /* offsets in its dtype object */
    long writeable;     /* the flag bit of a writeable array */
    uint8_t code[NP_MAX_TYPES], bits[NP_MAX_TYPES];   /* per type number: what NumPy's own DLPack export says (bits 0: none) */
} ArrayLayout;
static ArrayLayout np_layout;

/* ctypes' c_void_p and pointer objects: the object's buffer pointer (its b_ptr, what
 * ctypes.addressof returns) holds the address, at an offset verified the same way. */
typedef struct {
    PyObject *void_p;   /* ctypes.c_void_p (owned) */
    PyObject *pointer;  /* ctypes._Pointer, base of every POINTER(T) (owned) */
    Py_ssize_t b_ptr;
} CtypesLayout;
static CtypesLayout ct_layout;

/* torch's exchange function and the exact types it reads for pointer slots (torch.Tensor,
 * torch.nn.Parameter), for the slots whose own spec has none (torch imported after they were
 * bound): set by configure(); `types` NULL: not yet. */
typedef struct {
    dltensor_from_pyobject fn;
    PyObject *types;    /* owned */
    PyObject *capsule;  /* owned */
    PyObject *streams;  /* owned: torch's stream classes read through `cuda_stream` (torch.cuda.Stream...), or NULL;
                           stream slots whose own spec predates torch's import read them too */
} TorchReader;
static TorchReader torch_reader;

/* How many values each reader took as is (cute_bind.launch._claunch.counts(): the tests
 * check the path a value took, never the clock). */
static long long n_exchange, n_ndarray, n_ctypes, n_cai;

/* interned attribute and key names (module init): no string made per read */
static PyObject *s_cai, *s_dlpack_device, *s_data, *s_typestr, *s_shape, *s_strides, *s_mask, *s_cuda_stream;

typedef struct {
    PyObject_HEAD
    entry_fn entry;
    void **argv;
    char *storage;
    Py_ssize_t storage_size;
    volatile int32_t *result; /* NULL when the function reports no CUDA result */
    Py_ssize_t n;
    char *fmt;      /* struct format char per slot */
    char *cls;      /* fast class per slot */
    Py_ssize_t *off;
    TensorSpec **tensors; /* per slot: the tensor spec of class "T", else NULL */
    PtrSpec **ptrs;       /* per slot: the pointer spec of class "P" (tensors and arrays taken too), else NULL */
    ObjSpec **objs;       /* per slot: the object spec of class "Z" or a number class (stream objects, NumPy scalars...), else NULL */
    struct SeqSpec **seqs; /* per slot: the element leaves of class "S", else NULL */
    PyObject *extras;     /* tuple: per slot, the C spec data or the writer of class "X" */
    PyObject *defaults; /* tuple: pre-coerced default per slot, or `required` */
    PyObject *names;    /* tuple: per slot its parameter name (keywords are matched against them) */
    PyObject **byname;  /* per slot: the value a keyword call placed there (borrowed, while busy), or NULL */
    PyObject *required;
    PyObject *slow;   /* slow(values_tuple, extra_tuple, kwargs_dict) */
    PyObject *fail;   /* fail(): raises the CUDA error */
    PyObject *busy_error; /* busy_error(): raises CB403 (the handle is already launching) */
    PyObject **held;  /* per slot: an object this launch owns until the call returns, or NULL */
    Py_ssize_t *deferred; /* the slots whose addresses the last pass reads (while busy) */
    PyObject **pure;      /* per slot: the exact type of a value the last pass read as is (owned), or NULL: a value of
                             that type goes straight to the last pass (its reader runs no Python code) */
    int busy;         /* a launch is writing the storage or running the entry point */
    PyObject *refuse; /* when set: refuse() raises (unloaded module, closed handle) */
    PyObject *ret;
    PyObject *keep;
    int release_gil;
} Launcher;

/* A conversion raised: an Exception means "not taken as is" (0, cleared: the
 * slow path decides and raises the catalog error); anything else
 * (KeyboardInterrupt, SystemExit, MemoryError is an Exception) propagates (-1). */
static int
soft_fail(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* The size in bytes of struct format char `fmt` (native), or 0. */
static Py_ssize_t
fmt_size(char fmt)
{
    switch (fmt) {
    case '?': case 'b': case 'B': return 1;
    case 'h': case 'H': case 'e': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'q': case 'Q': case 'd': return 8;
    default: return 0;
    }
}

static int
pack_int(char *dst, char fmt, PyObject *v)
{
    if (fmt == 'Q') {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return soft_fail();
        memcpy(dst, &u, 8);
        return 1;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return soft_fail();
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

/* Exact floats and ints only: a subclass may override __float__, which the
 * slow path (float(value), as the DSL's direct call) honours. */
static int
get_real(PyObject *v, double *d)
{
    if (Py_TYPE(v) == &PyFloat_Type) { *d = PyFloat_AsDouble(v); return 1; }
    if (Py_TYPE(v) == &PyLong_Type) {
        *d = PyLong_AsDouble(v);
        if (*d == -1.0 && PyErr_Occurred()) return soft_fail(); /* beyond the double range */
        return 1;
    }
    return 0;
}

/* Find the DLPack exchange API of `tp` (type(v).__dlpack_c_exchange_api__) and use it
 * from now on: a handle bound with a from_dlpack tensor or a NumPy array learns
 * the torch.Tensor type at its first torch launch. 1: learned; 0: `tp` has none
 * (or one of another major version); -1: an exception that must propagate. */
static int
learn_type(TensorSpec *ts, PyObject *tp)
{
    PyObject *cap = PyObject_GetAttrString(tp, "__dlpack_c_exchange_api__");
    if (!cap) return soft_fail();
    char *table = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    if (!table) { Py_DECREF(cap); return soft_fail(); }
    uint32_t major;
    void *fn;
    memcpy(&major, table, 4);
    memcpy(&fn, table + ts->api_offset, sizeof(void *)); /* dltensor_from_py_object_no_sync */
    if (major != 1 || !fn) { Py_DECREF(cap); return 0; } /* another major version: another layout */
    Py_INCREF(tp);
    Py_XDECREF(ts->type);
    Py_XDECREF(ts->capsule);
    ts->type = tp;
    ts->capsule = cap;
    ts->fn = (dltensor_from_pyobject)fn;
    return 1;
}

/* Read a numpy.ndarray (exactly: the caller checked its type) as its own DLPack export
 * would describe it: element strides (`strides`, room for 64, filled when not NULL),
 * host device. 1: read (`*writeable` set); 0: one NumPy would not export as is (another
 * byte order, a type without a DLPack code, strides not a multiple of the item size). */
static int
read_ndarray(PyObject *v, DLTensorC *dl, int64_t *strides, int *writeable)
{
    const char *o = (const char *)v;
    const ArrayLayout *L = &np_layout;
    char *data, *descr;
    int nd, flags, type_num;
    int64_t *dims, *bstrides;
    memcpy(&data, o + L->data, sizeof data);
    memcpy(&nd, o + L->nd, sizeof nd);
    memcpy(&dims, o + L->dims, sizeof dims);
    memcpy(&bstrides, o + L->strides, sizeof bstrides);
    memcpy(&descr, o + L->descr, sizeof descr);
    memcpy(&flags, o + L->flags, sizeof flags);
    if (!descr || nd < 0 || nd > 64 || (nd > 0 && (!dims || !bstrides))) return 0;
    memcpy(&type_num, descr + L->type_num, sizeof type_num);
    char order = descr[L->byteorder];
    if (type_num < 0 || type_num >= NP_MAX_TYPES || !L->bits[type_num] || (order != '=' && order != '|')) return 0;
    dl->data = data;
    dl->device_type = 1; /* kDLCPU */
    dl->device_id = 0;
    dl->ndim = nd;
    dl->code = L->code[type_num];
    dl->bits = L->bits[type_num];
    dl->lanes = 1;
    dl->shape = dims;
    dl->strides = NULL;
    dl->byte_offset = 0;
    if (strides) {
        int64_t item = (L->bits[type_num] + 7) / 8;
        for (int k = 0; k < nd; k++) {
            if (bstrides[k] % item) return 0; /* NumPy refuses to export it */
            strides[k] = bstrides[k] / item;
        }
        dl->strides = strides;
    }
    *writeable = (flags & L->writeable) != 0;
    return 1;
}

static int
type_in(PyObject *types, PyTypeObject *tp)
{
    Py_ssize_t n = types ? PyTuple_Size(types) : 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (PyTuple_GetItem(types, k) == (PyObject *)tp) return 1;
    return 0;
}

/* The element type a __cuda_array_interface__ typestr names ("<f4", "|b1", ...), as
 * PointerKind reads it (its byte-order character aside). 1: known; 0: not. */
static int
typestr_dtype(PyObject *typestr, uint8_t *code, uint8_t *bits)
{
    Py_ssize_t len;
    const char *t = PyUnicode_Check(typestr) ? PyUnicode_AsUTF8AndSize(typestr, &len) : NULL;
    if (!t) { PyErr_Clear(); return 0; }
    if (len != 3 || t[2] < '1' || t[2] > '8') return 0;
    int size = t[2] - '0';
    switch (t[1]) {
    case 'f': if (size != 2 && size != 4 && size != 8) return 0; *code = 2; break;
    case 'i': if (size != 1 && size != 2 && size != 4 && size != 8) return 0; *code = 0; break;
    case 'u': if (size != 1 && size != 2 && size != 4 && size != 8) return 0; *code = 1; break;
    case 'b': if (size != 1) return 0; *code = 6; break;
    default: return 0;
    }
    *bits = (uint8_t)(8 * size);
    return 1;
}

/* d[key] as a new reference, or NULL: missing (no exception) or an error (set). A strong reference:
 * a key's __eq__ run by a later lookup may change the dict and free what a borrowed one points to. */
static PyObject *
dict_item(PyObject *d, PyObject *key)
{
    PyObject *o = PyDict_GetItemWithError(d, key);
    Py_XINCREF(o);
    return o;
}

/* A __cuda_array_interface__ exporter (CuPy, Numba...) on a pointer slot: device memory.
 * 1: written; 0: not taken as is; -1: an exception that must propagate. */
static int
pack_cai(PtrSpec *ps, char *dst, PyObject *v)
{
    if (!ps->cuda_ok) return 0; /* device memory for a slot of another address space: the slow path says why */
    PyObject *iface = PyObject_GetAttr(v, s_cai);
    if (!iface) return soft_fail();
    int r = 0;
    PyObject *data = NULL, *typestr = NULL;
    if (!PyDict_Check(iface)) goto done;
    data = dict_item(iface, s_data);
    if (!data && PyErr_Occurred()) { r = soft_fail(); goto done; }
    if (!data || !PyTuple_Check(data) || PyTuple_Size(data) != 2) goto done;
    PyObject *a = PyTuple_GetItem(data, 0), *ro = PyTuple_GetItem(data, 1);
    if (!a || !ro || Py_TYPE(a) != &PyLong_Type || ro != Py_False) goto done; /* read-only, or not (address, False) */
    unsigned long long addr = PyLong_AsUnsignedLongLong(a);
    if (addr == (unsigned long long)-1 && PyErr_Occurred()) { r = soft_fail(); goto done; }
    if (!addr || (ps->align > 1 && addr % ps->align)) goto done; /* NULL (empty?) or misaligned: the slow path decides */
    {   /* strides None: C-contiguous (the interface's rule); any stride tuple: the slow path checks it (CB219) */
        PyObject *st = dict_item(iface, s_strides);
        if (!st && PyErr_Occurred()) { r = soft_fail(); goto done; }
        int strided = st && st != Py_None;
        Py_XDECREF(st);
        if (strided) goto done;
    }
    if (!ps->any_dtype) {
        typestr = dict_item(iface, s_typestr);
        if (!typestr && PyErr_Occurred()) { r = soft_fail(); goto done; }
        uint8_t code, bits;
        if (!typestr || !typestr_dtype(typestr, &code, &bits) || code != ps->code || bits != ps->bits || ps->lanes != 1) goto done;
    }
    if (ps->device_type) { /* bound to a device: the value must say it is on it */
        PyObject *dev = PyObject_CallMethodObjArgs(v, s_dlpack_device, NULL);
        if (!dev) { r = soft_fail(); goto done; }
        long long dt = -1, id = -1;
        if (PyTuple_Check(dev) && PyTuple_Size(dev) == 2 && PyLong_Check(PyTuple_GetItem(dev, 0)) && PyLong_Check(PyTuple_GetItem(dev, 1))) {
            dt = PyLong_AsLongLong(PyTuple_GetItem(dev, 0));
            if (!PyErr_Occurred()) id = PyLong_AsLongLong(PyTuple_GetItem(dev, 1));
        }
        Py_DECREF(dev);
        if (PyErr_Occurred()) { r = soft_fail(); goto done; }
        if (dt != ps->device_type || id != ps->device_id) goto done;
    }
    memcpy(dst, &addr, 8);
    n_cai++;
    r = 1;
done:
    Py_XDECREF(typestr);
    Py_XDECREF(data);
    Py_DECREF(iface);
    return r;
}

/* A pointer slot given something other than an exact int: a torch tensor (its exchange
 * function), a NumPy array, a ctypes pointer, a __cuda_array_interface__ exporter.
 * What it points into belongs to `v`, which the caller holds until the call returns.
 * 1: written; 0: not taken as is (the slow path decides); -1: propagate. */
static int
pack_pointer(PtrSpec *ps, char *dst, PyObject *v, int mode)
{
    PyTypeObject *tp = Py_TYPE(v);
    DLTensorC dl;
    int64_t np_strides[64];
    uint64_t addr;
    dltensor_from_pyobject fn = ps->fn ? ps->fn : torch_reader.fn;
    if (fn && type_in(ps->fn ? ps->types : torch_reader.types, tp)) {
        if (mode == PACK_DEFER) return DEFERRED;
        if (fn((void *)v, &dl) != 0) return soft_fail();
        n_exchange++;
    } else if (np_layout.type && (PyObject *)tp == np_layout.type) {
        if (mode == PACK_DEFER) return DEFERRED;
        int writeable;
        if (!read_ndarray(v, &dl, np_strides, &writeable) || !writeable) return 0; /* read-only: CB217 from the slow path */
        n_ndarray++;
    } else if (ct_layout.void_p && ((PyObject *)tp == ct_layout.void_p || PyType_IsSubtype(tp, (PyTypeObject *)ct_layout.pointer))) {
        if (mode == PACK_DEFER) return DEFERRED; /* a POINTER(T)'s contents can be rebound by Python code */
        char *b;
        memcpy(&b, (const char *)v + ct_layout.b_ptr, sizeof b);
        if (!b) return 0;
        void *p;
        memcpy(&p, b, sizeof p);
        addr = (uint64_t)(uintptr_t)p; /* NULL is an address like any int (c_void_p(None) is 0) */
        if (ps->align > 1 && addr % ps->align) return 0;
        memcpy(dst, &addr, 8);
        n_ctypes++;
        return 1;
    } else if (PyLong_Check(v) && !PyBool_Check(v)) {
        /* an int subclass (an IntEnum member): its own integer value, read without __index__ or
         * any other method it may override; outside [0, 2**64) or misaligned, the slow path raises */
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return soft_fail();
        if (ps->align > 1 && u % ps->align) return 0; /* checked like any value that is not an exact int: CB207 */
        memcpy(dst, &u, 8);
        return 1;
    } else if (PyLong_Check(v) || PyFloat_Check(v) || v == Py_None) {
        return 0; /* a bool, a number, None: the slow path's rules */
    } else if (mode == PACK_PURE) {
        return 0; /* read by Python code: not after the other conversions (the value changed type?) */
    } else if (ps->other_reader && (PyObject *)tp == ps->other_type) {
        /* the DSL's own pointer object: its reader makes the slot's checks and gives the address,
         * or None (the slow path raises the catalog error) */
        PyObject *a = PyObject_CallFunctionObjArgs(ps->other_reader, v, NULL);
        if (!a) return soft_fail();
        int ok = Py_TYPE(a) == &PyLong_Type;
        unsigned long long u = ok ? PyLong_AsUnsignedLongLong(a) : 0;
        Py_DECREF(a);
        if (!ok) return 0;
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return soft_fail();
        memcpy(dst, &u, 8);
        return 1;
    } else {
        return pack_cai(ps, dst, v);
    }
    if (!ps->any_dtype && (dl.code != ps->code || dl.bits != ps->bits || dl.lanes != ps->lanes)) return 0;
    if (dl.strides && (dl.ndim == 1 ? dl.strides[0] != 1 && dl.shape[0] > 1 : !cb_row_major(dl.ndim, dl.shape, dl.strides)))
        return 0; /* a strided view (t[::2], expand): CB233 from the slow path */
    if (dl.device_type == 2) { /* kDLCUDA */
        if (!ps->cuda_ok || (ps->device_type && (ps->device_type != 2 || dl.device_id != ps->device_id))) return 0;
    } else if (dl.device_type != 1 || !ps->cpu_ok) return 0; /* host memory (pinned or not: the slow path asks) */
    if (__builtin_add_overflow((uint64_t)(uintptr_t)dl.data, dl.byte_offset, &addr)) return 0;
    if (!addr || (ps->align > 1 && addr % ps->align)) return 0; /* NULL (empty? meta?) or misaligned: the slow path */
    memcpy(dst, &addr, 8);
    return 1;
}

/* The (type, id) `v.__dlpack_device__()` says. 1: read; 0: none or not two ints; -1: propagate. */
static int
dlpack_device_of(PyObject *v, long long *dt, long long *id)
{
    PyObject *dev = PyObject_CallMethodObjArgs(v, s_dlpack_device, NULL);
    if (!dev) return soft_fail();
    int r = 0;
    if (PyTuple_Check(dev) && PyTuple_Size(dev) == 2 && PyLong_Check(PyTuple_GetItem(dev, 0)) && PyLong_Check(PyTuple_GetItem(dev, 1))) {
        *dt = PyLong_AsLongLong(PyTuple_GetItem(dev, 0));
        if (!PyErr_Occurred()) *id = PyLong_AsLongLong(PyTuple_GetItem(dev, 1));
        r = PyErr_Occurred() ? soft_fail() : 1;
    }
    Py_DECREF(dev);
    return r;
}

/* A tuple of `n` (<= 64) ints in [lo, INT64_MAX] into `out`. 1: read; 0: not. */
static int
int_tuple(PyObject *t, Py_ssize_t n, int64_t lo, int64_t *out)
{
    if (!t || !PyTuple_Check(t) || PyTuple_Size(t) != n) return 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PyTuple_GetItem(t, k);
        if (!o || Py_TYPE(o) != &PyLong_Type) return 0;
        long long x = PyLong_AsLongLong(o);
        if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (x < lo) return 0;
        out[k] = (int64_t)x;
    }
    return 1;
}

/* Read a __cuda_array_interface__ exporter (CuPy, Numba...) for a tensor slot as its DLPack export
 * would describe it, without exporting: data, shape, strides (bytes, turned into elements), typestr,
 * device from __dlpack_device__(). `shape` and `strides` have room for 64. 1: read; 0: not taken as
 * is (read-only, masked, another byte order, no device, strides not a multiple of the item size:
 * the slow path decides); -1: propagate. */
static int
read_cai_tensor(PyObject *v, DLTensorC *dl, int64_t *shape, int64_t *strides)
{
    PyObject *iface = PyObject_GetAttr(v, s_cai);
    if (!iface) return soft_fail();
    int r = 0;
    PyObject *items[5] = {NULL, NULL, NULL, NULL, NULL}; /* data, typestr, shape, strides, mask: new references */
    if (!PyDict_Check(iface)) goto done;
    PyObject *keys[5] = {s_data, s_typestr, s_shape, s_strides, s_mask};
    for (int k = 0; k < 5; k++) {
        items[k] = dict_item(iface, keys[k]);
        if (!items[k] && PyErr_Occurred()) { r = soft_fail(); goto done; }
    }
    PyObject *data = items[0], *typestr = items[1], *shp = items[2], *strd = items[3], *mask = items[4];
    if (mask && mask != Py_None) goto done;
    if (!data || !PyTuple_Check(data) || PyTuple_Size(data) != 2 || PyTuple_GetItem(data, 1) != Py_False) goto done;
    PyObject *a = PyTuple_GetItem(data, 0);
    if (!a || Py_TYPE(a) != &PyLong_Type) goto done;
    unsigned long long addr = PyLong_AsUnsignedLongLong(a);
    if (addr == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); goto done; }
    uint8_t code, bits;
    Py_ssize_t tlen;
    const char *t = typestr && PyUnicode_Check(typestr) ? PyUnicode_AsUTF8AndSize(typestr, &tlen) : NULL;
    if (!t) { PyErr_Clear(); goto done; }
    if (tlen < 1 || (t[0] != '<' && t[0] != '|' && t[0] != '=')) goto done; /* big-endian: the slow path */
    if (!typestr_dtype(typestr, &code, &bits)) goto done;
    if (!shp || !PyTuple_Check(shp) || PyTuple_Size(shp) > 64) goto done;
    int nd = (int)PyTuple_Size(shp);
    if (!int_tuple(shp, nd, 0, shape)) goto done;
    int have_strides = strd && strd != Py_None;
    if (have_strides) {
        if (!int_tuple(strd, nd, INT64_MIN + 1, strides)) goto done;
        int64_t item = bits / 8;
        for (int k = 0; k < nd; k++) {
            if (strides[k] % item) goto done;
            strides[k] /= item;
        }
    }
    long long dt = 0, id = 0;
    int got = dlpack_device_of(v, &dt, &id);
    if (got <= 0) { r = got; goto done; }
    if (dt < INT32_MIN || dt > INT32_MAX || id < INT32_MIN || id > INT32_MAX) goto done;
    dl->data = (void *)(uintptr_t)addr;
    dl->device_type = (int32_t)dt;
    dl->device_id = (int32_t)id;
    dl->ndim = nd;
    dl->code = code;
    dl->bits = bits;
    dl->lanes = 1;
    dl->shape = shape;
    dl->strides = have_strides ? strides : NULL;
    dl->byte_offset = 0;
    r = 1;
done:
    for (int k = 0; k < 5; k++) Py_XDECREF(items[k]);
    Py_DECREF(iface);
    return r;
}

/* 1: `tp` has attribute `name`; 0: not (or an ordinary exception); -1: propagate */
static int
type_has(PyObject *tp, PyObject *name)
{
    PyObject *a = PyObject_GetAttr(tp, name);
    if (a) { Py_DECREF(a); return 1; }
    return soft_fail();
}

/* Whether values of type `tp` (no exchange API) are read through __cuda_array_interface__:
 * the type offers it and __dlpack_device__ (where the device comes from). 1/0; -1: propagate. */
static int
has_cai(PyObject *tp)
{
    int a = type_has(tp, s_cai);
    return a <= 0 ? a : type_has(tp, s_dlpack_device);
}

static int
pack_tensor(TensorSpec *ts, char *dst, PyObject *v, int mode)
{
    DLTensorC dl;
    int64_t np_strides[64], cai_shape[64];
    PyObject *tp = (PyObject *)Py_TYPE(v);
    if (tp != ts->type && np_layout.type && tp == np_layout.type) {
        if (mode == PACK_DEFER) return DEFERRED;
        int writeable;
        if (!read_ndarray(v, &dl, np_strides, &writeable) || !writeable) return 0; /* read-only: CB217 from the slow path */
        n_ndarray++;
    } else if (tp != ts->type && mode == PACK_PURE) {
        return 0; /* learning a type or reading an exporter runs Python code */
    } else if (tp != ts->type && tp == ts->cai_type) {
        int r = read_cai_tensor(v, &dl, cai_shape, np_strides);
        if (r <= 0) return r;
        n_cai++;
    } else {
        if (tp != ts->type) {
            int learned = learn_type(ts, tp);
            if (learned < 0) return learned;
            if (learned == 0) {
                /* no exchange API: a __cuda_array_interface__ exporter (CuPy) is read without a DLPack
                 * export from now on; anything else goes to the slow path */
                if (PyLong_Check(v) || PyFloat_Check(v) || v == Py_None) return 0;
                int cai = has_cai(tp);
                if (cai <= 0) return cai;
                Py_INCREF(tp);
                Py_XSETREF_CB(ts->cai_type, tp);
                int r = read_cai_tensor(v, &dl, cai_shape, np_strides);
                if (r <= 0) return r;
                n_cai++;
                goto check;
            }
        }
        if (mode == PACK_DEFER) return DEFERRED; /* learned (Python code ran now): read with the others */
        if (ts->fn((void *)v, &dl) != 0) return soft_fail();
        n_exchange++;
    }
check:
    if (dl.code != ts->code || dl.bits != ts->bits || dl.lanes != ts->lanes) return 0;
    if (dl.device_type != ts->device_type || dl.device_id != ts->device_id || dl.ndim != ts->ndim) return 0;
    if (ts->ndim > 0 && !dl.shape) return 0;
    uint64_t addr;
    if (__builtin_add_overflow((uint64_t)(uintptr_t)dl.data, dl.byte_offset, &addr)) return 0;
    if (ts->align > 1 && addr % ts->align) return 0;
    int empty = 0;
    for (int k = 0; k < ts->ndim; k++) {
        if (dl.shape[k] < 0) return 0;
        if (dl.shape[k] == 0) empty = 1;
    }
    if (!addr && !empty) return 0; /* NULL data (a meta or fake tensor): the slow path raises CB216 */
    int64_t compact = 1;
    double span = 1.0; /* footprint: 1 + sum (extent - 1) * |stride|; in double, exact far beyond 2**31 */
    for (int k = 2 * ts->ndim - 1; k >= 0; k--) { /* strides first (compact ones need the extents after them) */
        int mode = k % ts->ndim;
        int stride = k >= ts->ndim;
        int64_t value;
        if (stride) {
            if (dl.strides) value = dl.strides[mode];
            else {
                value = compact;
                if (__builtin_mul_overflow(compact, dl.shape[mode], &compact)) return 0; /* beyond int64: the slow path reports it */
            }
            if (value == INT64_MIN) return 0;
            span += (double)(dl.shape[mode] - 1) * (double)(value < 0 ? -value : value);
        } else value = dl.shape[mode];
        const ModeSpec *m = &ts->modes[k];
        if (!m->dyn) {
            /* an empty tensor's strides are never used: NumPy reports 0 for them */
            if (value != m->stat && !(stride && empty)) return 0;
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

static int pack_value(char cls, char fmt, char *dst, TensorSpec *ts, PtrSpec *ps, ObjSpec *os, PyObject *writer,
                      PyObject *v, PyObject **held, int mode);

/* Exact tuples and lists only: a subclass may override __iter__, and a sequence
 * is read by iterating it (the slow path's list(value)), never by its raw items.
 * A list is read from a snapshot tuple the launch holds until the call returns,
 * so another thread emptying the list cannot free an element under the call. */
static int
pack_sequence(char *storage, const SeqSpec *ss, PyObject *v, PyObject **held, int mode)
{
    PyObject *items;
    if (mode == PACK_PURE) { /* the deferred leaves of the snapshot taken before (held until the call returns) */
        items = *held;
        if (!items || PyTuple_Size(items) != ss->n) return 0;
        for (Py_ssize_t k = 0; k < ss->n; k++) {
            if (ss->cls[k] != C_TENSOR) continue;
            int r = pack_value(ss->cls[k], ss->fmt[k], storage + ss->off[k], ss->tensors[k], NULL, NULL, NULL, PyTuple_GetItem(items, k), NULL, mode);
            if (r <= 0) return r;
        }
        return 1;
    }
    if (Py_TYPE(v) == &PyTuple_Type) {
        Py_INCREF(v);
        items = v;
    } else if (Py_TYPE(v) == &PyList_Type) {
        items = PyList_AsTuple(v);
        if (!items) return soft_fail();
    } else return 0;
    { PyObject *old = *held; *held = items; Py_XDECREF(old); }
    if (PyTuple_Size(items) != ss->n) return 0;
    int deferred = 0;
    for (Py_ssize_t k = 0; k < ss->n; k++) {
        PyObject *item = PyTuple_GetItem(items, k);
        if (!item) return soft_fail();
        int r = pack_value(ss->cls[k], ss->fmt[k], storage + ss->off[k], ss->tensors[k], NULL, NULL, NULL, item, NULL, mode);
        if (r == DEFERRED) deferred = 1;
        else if (r <= 0) return r;
    }
    return deferred ? DEFERRED : 1;
}

/* 1: written; 0: not taken as is (the slow path decides; no exception set);
 * -1: an exception that must propagate (KeyboardInterrupt...). */
static int
pack_one(Launcher *self, Py_ssize_t i, PyObject *v, int mode)
{
    if (self->cls[i] == C_SEQ) return self->seqs[i] ? pack_sequence(self->storage, self->seqs[i], v, &self->held[i], mode) : 0;
    PyObject *writer = self->cls[i] == C_WRITER ? PyTuple_GetItem(self->extras, i) : NULL;
    return pack_value(self->cls[i], self->fmt[i], self->storage + self->off[i], self->tensors[i], self->ptrs[i], self->objs[i], writer, v,
                      &self->held[i], mode);
}

/* A stream object of class "Z" (see ObjSpec): 1 written, 0 not taken as is, -1 propagate. */
static int
pack_stream(ObjSpec *os, char *dst, PyObject *v)
{
    PyTypeObject *tp = Py_TYPE(v);
    PyObject *h;
    if (!os) return 0;
    if (type_in(os->attr_types, tp) || (torch_reader.streams && type_in(torch_reader.streams, tp)))
        h = PyObject_GetAttr(v, s_cuda_stream);
    else if (type_in(os->types, tp)) h = PyNumber_Long(v);
    else if (os->reader) h = PyObject_CallFunctionObjArgs(os->reader, v, NULL);
    else return 0;
    if (!h) return soft_fail();
    /* written as that exact int is (outside [0, 2**64): CB205 from the slow path); a bool or an
     * int subclass: the slow path decides */
    int r = Py_TYPE(h) == &PyLong_Type ? pack_value(C_STREAM, 'Q', dst, NULL, NULL, NULL, NULL, h, NULL, PACK_DEFER) : 0;
    Py_DECREF(h);
    return r;
}

/* A number object of class "I", "R", "h", "g" or "B" (see ObjSpec): read as the exact int or float it
 * stands for, then written as that value is. 1 written, 0 not taken as is, -1 propagate. */
static int
pack_number(char cls, char fmt, char *dst, ObjSpec *os, PyObject *v)
{
    PyObject *n;
    if (!os) return 0;
    if (cls != C_EXACT_BOOL && type_in(os->types, Py_TYPE(v))) n = cls == C_INT ? PyNumber_Index(v) : PyNumber_Float(v);
    else if (os->reader) n = PyObject_CallFunctionObjArgs(os->reader, v, NULL);
    else return 0;
    if (!n) return soft_fail();
    int r = 0, exact = cls == C_EXACT_BOOL ? Py_TYPE(n) == &PyBool_Type
                     : cls == C_INT       ? Py_TYPE(n) == &PyLong_Type
                                          : Py_TYPE(n) == &PyLong_Type || Py_TYPE(n) == &PyFloat_Type;
    if (exact) r = pack_value(cls, fmt, dst, NULL, NULL, NULL, NULL, n, NULL, PACK_DEFER); /* as that exact value is written */
    Py_DECREF(n);
    return r;
}

static int
pack_value(char cls, char fmt, char *dst, TensorSpec *ts, PtrSpec *ps, ObjSpec *os, PyObject *writer, PyObject *v,
           PyObject **held, int mode)
{
    switch (cls) {
    case C_STREAM:
    case C_EXACT_INT: {
        if (Py_TYPE(v) != &PyLong_Type) return cls == C_STREAM ? pack_stream(os, dst, v) : ps ? pack_pointer(ps, dst, v, mode) : 0;
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return soft_fail();
        memcpy(dst, &u, 8);
        return 1;
    }
    case C_EXACT_BOOL: {
        uint8_t b;
        if (v == Py_True) b = 1;
        else if (v == Py_False) b = 0;
        else return pack_number(cls, fmt, dst, os, v);
        memcpy(dst, &b, 1);
        return 1;
    }
    case C_INT:
        if (!PyLong_Check(v)) return pack_number(cls, fmt, dst, os, v); /* int and bool as struct packs them; else ObjSpec */
        return pack_int(dst, fmt, v);
    case C_REAL: {
        double d;
        int r = get_real(v, &d);
        if (r == 0) return pack_number(cls, fmt, dst, os, v);
        if (r < 0) return r;
        if (fmt == 'f') { float f = (float)d; memcpy(dst, &f, 4); }
        else memcpy(dst, &d, 8);
        return 1;
    }
    case C_F16:
    case C_BF16: {
        double d;
        int r = get_real(v, &d);
        if (r == 0) return pack_number(cls, fmt, dst, os, v);
        if (r < 0) return r;
        uint16_t h = cls == C_F16 ? f16_bits(d) : bf16_bits(d);
        memcpy(dst, &h, 2);
        return 1;
    }
    case C_TENSOR:
        return ts ? pack_tensor(ts, dst, v, mode) : 0;
    case C_WRITER: {
        if (mode == PACK_DEFER) return DEFERRED;
        if (!writer || writer == Py_None || !held || mode == PACK_PURE) return 0;
        PyObject *r = PyObject_CallFunctionObjArgs(writer, v, NULL);
        if (!r) return soft_fail();
        { PyObject *old = *held; *held = r; Py_XDECREF(old); } /* what the writer read from (e.g. a DLPack capsule) lives until the call returns */
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

/* End a launch: the handle is free again, then what it held is released
 * (releasing may run Python code, which may launch this handle again). */
static void
leave(Launcher *self, PyObject *pin)
{
    self->busy = 0;
    for (Py_ssize_t i = 0; i < self->n; i++) Py_CLEAR(self->held[i]);
    Py_XDECREF(pin);
}

/* Call the entry point with the storage as written; the caller holds `busy` and `pin`. */
static PyObject *
call_entry(Launcher *self)
{
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

/* Place a keyword call's values by slot: byname[i] is the positional or keyword value of slot i
 * (borrowed from the call), or NULL for a parameter left to its default. 1: placed; 0: a keyword
 * that names no slot or one given twice, or a required parameter left out (the slow path raises
 * the catalog error); nothing here runs Python code (names are compared as str). */
static int
place_keywords(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* a required parameter left out: the slow path raises CB201 before any value is read */
    return cb_place_keywords(self->names, self->defaults, self->required, self->n, args, nargs, kwnames, self->byname);
}

/* `try_only`: what the fast path does not take as is returns NotImplemented instead of going to
 * the slow path (try_launch: kernel(...) tries the thread's other specializations first).
 * Keywords are placed by name (place_keywords); extra positionals, unknown or repeated keywords
 * and values the classes do not take go to the slow path with the call as given. */
static PyObject *
do_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int try_only)
{
    if (self->refuse) return PyObject_CallObject(self->refuse, NULL);
    if (!self->entry || !self->slow) {
        PyErr_SetString(PyExc_RuntimeError, "Launcher is not initialised");
        return NULL;
    }
    if (self->busy) return PyObject_CallObject(self->busy_error, NULL);
    if (kwnames != NULL && PyTuple_Size(kwnames) == 0) kwnames = NULL;
    if (nargs > self->n) {
        if (try_only) Py_RETURN_NOTIMPLEMENTED;
        return go_slow(self, args, nargs, kwnames);
    }
    self->busy = 1;
    PyObject *pin = self->keep; /* the compiled module stays loaded until this call returns */
    Py_XINCREF(pin);
    if (kwnames != NULL && !place_keywords(self, args, nargs, kwnames)) {
        leave(self, pin);
        if (try_only) Py_RETURN_NOTIMPLEMENTED;
        return go_slow(self, args, nargs, kwnames);
    }
    /* three passes (PACK_DEFER, PACK_WRITE, PACK_PURE above): the conversions that run Python code,
     * then the writers (structures, unions: Python code that reads addresses too), then the addresses
     * read without running Python code, so nothing frees a read address before the entry point runs */
    Py_ssize_t ndeferred = 0;
    for (int mode = PACK_DEFER; mode <= PACK_PURE; mode++) {
        Py_ssize_t count = mode == PACK_DEFER ? self->n : ndeferred;
        for (Py_ssize_t j = 0; j < count; j++) {
            Py_ssize_t i = mode == PACK_DEFER ? j : self->deferred[j];
            if (mode != PACK_DEFER && (self->cls[i] == C_WRITER) != (mode == PACK_WRITE)) continue;
            PyObject *v = kwnames != NULL ? self->byname[i] : (i < nargs ? args[i] : NULL);
            if (v == NULL) { /* a parameter left to its default */
                v = PyTuple_GetItem(self->defaults, i);
                if (v == self->required) v = NULL;
            }
            PyObject *tp = v ? (PyObject *)Py_TYPE(v) : NULL;
            if (mode == PACK_DEFER && tp && self->pure[i] == tp &&
                (self->cls[i] != C_TENSOR || tp == self->tensors[i]->type || tp == np_layout.type)) {
                self->deferred[ndeferred++] = i; /* read as is last time: no need to ask its reader now */
                continue;
            }
            int r = v == NULL ? 0 : pack_one(self, i, v, mode);
            if (r == DEFERRED && mode == PACK_DEFER) {
                self->deferred[ndeferred++] = i;
                continue;
            }
            if (r == 1 && mode == PACK_PURE && self->pure[i] != tp && self->cls[i] != C_SEQ) {
                Py_INCREF(tp);
                Py_XSETREF_CB(self->pure[i], tp);
            }
            if (r <= 0 || r == DEFERRED) {
                leave(self, pin);
                if (r >= 0 && try_only) Py_RETURN_NOTIMPLEMENTED;
                return r < 0 ? NULL : go_slow(self, args, nargs, kwnames);
            }
        }
    }
    if (self->refuse) { /* closed or unloaded by code a conversion ran */
        leave(self, pin);
        return PyObject_CallObject(self->refuse, NULL);
    }
    PyObject *res = call_entry(self);
    leave(self, pin);
    return res;
}

static PyObject *
Launcher_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return do_launch(self, args, nargs, kwnames, 0);
}

static PyObject *
Launcher_try_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return do_launch(self, args, nargs, kwnames, 1);
}

/* write_and_call(data): the slow path's launch: copy `data` (the whole packed
 * struct) into the storage block and call the entry point, under the same
 * one-launch-at-a-time rule as the fast path. */
static PyObject *
Launcher_write_and_call(Launcher *self, PyObject *data)
{
    if (self->refuse) return PyObject_CallObject(self->refuse, NULL);
    if (self->busy) return PyObject_CallObject(self->busy_error, NULL);
    char *buf;
    Py_ssize_t len;
    if (PyBytes_AsStringAndSize(data, &buf, &len) < 0) return NULL;
    if (len > self->storage_size) {
        PyErr_SetString(PyExc_ValueError, "packed arguments larger than the storage block");
        return NULL;
    }
    self->busy = 1;
    PyObject *pin = self->keep;
    Py_XINCREF(pin);
    memcpy(self->storage, buf, len);
    PyObject *res = call_entry(self);
    leave(self, pin);
    return res;
}

/* poison(refuse): every later launch calls refuse() instead; the pin on the
 * compiled module is dropped (a launch running now holds its own). */
static PyObject *
Launcher_poison(Launcher *self, PyObject *refuse)
{
    PyObject *old = self->refuse;
    Py_INCREF(refuse);
    self->refuse = refuse;
    Py_XDECREF(old);
    Py_CLEAR(self->keep);
    Py_RETURN_NONE;
}

static long long
item_ll(PyObject *tuple, Py_ssize_t i)
{
    PyObject *o = PyTuple_GetItem(tuple, i);
    return o ? PyLong_AsLongLong(o) : -1;
}

/* spec: a cute_bind.slots.tensor.CTensorSpec record (a tuple of TENSOR_SPEC_FIELDS):
 *   (function, type, capsule, api_offset, (code, bits, lanes), (device_type, device_id),
 *    align, ndim, modes, footprint32)
 * with modes: extents then strides, each a CMode (static, dynamic, width, divisibility, offset);
 * None: no C class. `slot_size`: the slot's bytes, which every write must stay within. */
#define TENSOR_SPEC_FIELDS 10
#define MODE_FIELDS 5

static int
parse_tensor_spec(PyObject *spec, Py_ssize_t slot_size, TensorSpec **out)
{
    *out = NULL;
    if (spec == Py_None) return 0;
    if (!PyTuple_Check(spec) || PyTuple_Size(spec) != TENSOR_SPEC_FIELDS) {
        PyErr_Format(PyExc_TypeError, "tensor spec must be a CTensorSpec record of %d fields", TENSOR_SPEC_FIELDS);
        return -1;
    }
    PyObject *dtype = PyTuple_GetItem(spec, 4), *device = PyTuple_GetItem(spec, 5), *modes = PyTuple_GetItem(spec, 8);
    if (!PyTuple_Check(dtype) || PyTuple_Size(dtype) != 3 || !PyTuple_Check(device) || PyTuple_Size(device) != 2 || !PyTuple_Check(modes)) {
        PyErr_SetString(PyExc_TypeError, "tensor spec: dtype (3), device (2) and modes must be tuples");
        return -1;
    }
    TensorSpec *ts = PyMem_Calloc(1, sizeof(TensorSpec));
    if (!ts) { PyErr_NoMemory(); return -1; }
    *out = ts;
    ts->fn = (dltensor_from_pyobject)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GetItem(spec, 0));
    if (PyErr_Occurred()) return -1;
    ts->type = PyTuple_GetItem(spec, 1);
    ts->capsule = PyTuple_GetItem(spec, 2);
    if (!ts->fn || ts->type == Py_None || ts->capsule == Py_None) { /* learned at the first launch */
        ts->fn = NULL;
        ts->type = ts->capsule = NULL;
    } else {
        Py_INCREF(ts->type);
        Py_INCREF(ts->capsule);
    }
    ts->api_offset = (Py_ssize_t)item_ll(spec, 3);
    ts->code = (uint8_t)item_ll(dtype, 0);
    ts->bits = (uint8_t)item_ll(dtype, 1);
    ts->lanes = (uint16_t)item_ll(dtype, 2);
    ts->device_type = (int32_t)item_ll(device, 0);
    ts->device_id = (int32_t)item_ll(device, 1);
    ts->align = (uint64_t)item_ll(spec, 6);
    ts->ndim = (int)item_ll(spec, 7);
    ts->footprint32 = (int)item_ll(spec, 9);
    if (PyErr_Occurred()) return -1;
    if (ts->api_offset < 16 || ts->api_offset > 4096 || ts->api_offset % (Py_ssize_t)sizeof(void *)) {
        PyErr_SetString(PyExc_ValueError, "tensor spec: implausible exchange-API offset");
        return -1;
    }
    if (ts->ndim < 0 || ts->ndim > 64 || PyTuple_Size(modes) != 2 * (Py_ssize_t)ts->ndim) {
        PyErr_SetString(PyExc_ValueError, "tensor spec: modes must list 2 * ndim entries");
        return -1;
    }
    if (slot_size < 8) {
        PyErr_SetString(PyExc_ValueError, "tensor spec: the slot cannot hold a data address");
        return -1;
    }
    ts->modes = PyMem_Calloc(2 * ts->ndim + 1, sizeof(ModeSpec));
    if (!ts->modes) { PyErr_NoMemory(); return -1; }
    for (int k = 0; k < 2 * ts->ndim; k++) {
        PyObject *m = PyTuple_GetItem(modes, k);
        if (!PyTuple_Check(m) || PyTuple_Size(m) != MODE_FIELDS) {
            PyErr_SetString(PyExc_TypeError, "tensor spec: a mode is a CMode (static, dynamic, width, divisibility, offset)");
            return -1;
        }
        ts->modes[k].stat = item_ll(m, 0);
        ts->modes[k].dyn = (int)item_ll(m, 1);
        ts->modes[k].width = (int)item_ll(m, 2);
        ts->modes[k].div = item_ll(m, 3);
        ts->modes[k].off = (Py_ssize_t)item_ll(m, 4);
        if (PyErr_Occurred()) return -1;
        if (ts->modes[k].dyn) { /* every dynamic value lands inside the slot, after the data address */
            Py_ssize_t w = ts->modes[k].width == 32 ? 4 : ts->modes[k].width == 64 ? 8 : 0;
            if (!w || ts->modes[k].off < 8 || ts->modes[k].off > slot_size - w) {
                PyErr_SetString(PyExc_ValueError, "tensor spec: a dynamic mode's offset or width does not fit the slot");
                return -1;
            }
        }
    }
    return 0;
}

/* spec: a cute_bind.slots.pointer.CPointerSpec record (a tuple of POINTER_SPEC_FIELDS):
 *   (function, types, capsule, dtype (code, bits, lanes) or None, cpu_ok, cuda_ok, device (type, id) or None, align,
 *    other_type, other_reader)
 * None: exact ints only. */
#define POINTER_SPEC_FIELDS 10

static int
parse_ptr_spec(PyObject *spec, PtrSpec **out)
{
    *out = NULL;
    if (spec == Py_None) return 0;
    if (!PyTuple_Check(spec) || PyTuple_Size(spec) != POINTER_SPEC_FIELDS) {
        PyErr_Format(PyExc_TypeError, "pointer spec must be a CPointerSpec record of %d fields", POINTER_SPEC_FIELDS);
        return -1;
    }
    PyObject *types = PyTuple_GetItem(spec, 1), *capsule = PyTuple_GetItem(spec, 2);
    PyObject *dtype = PyTuple_GetItem(spec, 3), *device = PyTuple_GetItem(spec, 6);
    if (!PyTuple_Check(types) || (dtype != Py_None && (!PyTuple_Check(dtype) || PyTuple_Size(dtype) != 3)) ||
        (device != Py_None && (!PyTuple_Check(device) || PyTuple_Size(device) != 2))) {
        PyErr_SetString(PyExc_TypeError, "pointer spec: types must be a tuple, dtype (3) and device (2) tuples or None");
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_Size(types); k++)
        if (!PyType_Check(PyTuple_GetItem(types, k))) {
            PyErr_SetString(PyExc_TypeError, "pointer spec: types must be types");
            return -1;
        }
    PtrSpec *ps = PyMem_Calloc(1, sizeof(PtrSpec));
    if (!ps) { PyErr_NoMemory(); return -1; }
    *out = ps;
    ps->fn = (dltensor_from_pyobject)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GetItem(spec, 0));
    if (PyErr_Occurred()) return -1;
    if (ps->fn && PyTuple_Size(types) > 0 && capsule != Py_None) {
        Py_INCREF(types);
        Py_INCREF(capsule);
        ps->types = types;
        ps->capsule = capsule;
    } else ps->fn = NULL;
    ps->any_dtype = dtype == Py_None;
    if (!ps->any_dtype) {
        ps->code = (uint8_t)item_ll(dtype, 0);
        ps->bits = (uint8_t)item_ll(dtype, 1);
        ps->lanes = (uint16_t)item_ll(dtype, 2);
    }
    ps->cpu_ok = (int)item_ll(spec, 4);
    ps->cuda_ok = (int)item_ll(spec, 5);
    if (device != Py_None) {
        ps->device_type = (int32_t)item_ll(device, 0);
        ps->device_id = (int32_t)item_ll(device, 1);
    }
    ps->align = (uint64_t)item_ll(spec, 7);
    if (PyErr_Occurred()) return -1;
    PyObject *other_type = PyTuple_GetItem(spec, 8), *other_reader = PyTuple_GetItem(spec, 9);
    if (other_type != Py_None || other_reader != Py_None) {
        if (!PyType_Check(other_type) || !PyCallable_Check(other_reader)) {
            PyErr_SetString(PyExc_TypeError, "pointer spec: other_type must be a type and other_reader callable (or both None)");
            return -1;
        }
        Py_INCREF(other_type);
        Py_INCREF(other_reader);
        ps->other_type = other_type;
        ps->other_reader = other_reader;
    }
    return 0;
}

/* A slot's object spec from its record, or NULL for None (exact values only):
 *   a stream slot's cute_bind.slots.stream.CStreamSpec (attr_types, int_types, reader);
 *   a number slot's cute_bind.slots.scalar.CNumberSpec (types, reader).
 * Every group of types holds types only, and none of `exact` (the class writes those itself). */
static int
parse_object_spec(PyObject *spec, int stream, ObjSpec **out)
{
    const char *what = stream ? "stream spec" : "number spec";
    const char *record = stream ? "CStreamSpec" : "CNumberSpec";
    Py_ssize_t nfields = stream ? 3 : 2;
    PyObject *const exact[] = {(PyObject *)&PyLong_Type, stream ? NULL : (PyObject *)&PyFloat_Type, stream ? NULL : (PyObject *)&PyBool_Type};
    *out = NULL;
    if (spec == Py_None) return 0;
    if (!PyTuple_Check(spec) || PyTuple_Size(spec) != nfields) {
        PyErr_Format(PyExc_TypeError, "%s must be a %s record of %zd fields", what, record, nfields);
        return -1;
    }
    PyObject *attr_types = stream ? PyTuple_GetItem(spec, 0) : NULL;
    PyObject *types = PyTuple_GetItem(spec, stream ? 1 : 0), *reader = PyTuple_GetItem(spec, nfields - 1);
    if (!PyTuple_Check(types) || (attr_types && !PyTuple_Check(attr_types)) || (reader != Py_None && !PyCallable_Check(reader))) {
        PyErr_Format(PyExc_TypeError, "%s: its types must be tuples of types, its reader callable or None", what);
        return -1;
    }
    for (int g = 0; g < 2; g++) {
        PyObject *group = g ? types : attr_types;
        for (Py_ssize_t k = 0; group && k < PyTuple_Size(group); k++) {
            PyObject *tp = PyTuple_GetItem(group, k);
            int bad = !PyType_Check(tp);
            for (int e = 0; e < 3; e++) bad |= exact[e] && tp == exact[e];
            if (bad) {
                PyErr_Format(PyExc_TypeError, "%s: its types must be tuples of types other than %s", what,
                             stream ? "int" : "int, float and bool");
                return -1;
            }
        }
    }
    ObjSpec *os = PyMem_Calloc(1, sizeof(ObjSpec));
    if (!os) { PyErr_NoMemory(); return -1; }
    os->attr_types = attr_types ? attr_types : PyTuple_New(0);
    if (!os->attr_types) { PyMem_Free(os); return -1; }
    if (attr_types) Py_INCREF(attr_types);
    Py_INCREF(types);
    os->types = types;
    if (reader != Py_None) {
        Py_INCREF(reader);
        os->reader = reader;
    }
    *out = os;
    return 0;
}

static void
free_object_spec(ObjSpec *os)
{
    if (!os) return;
    Py_XDECREF(os->types);
    Py_XDECREF(os->attr_types);
    Py_XDECREF(os->reader);
    PyMem_Free(os);
}

static void
free_ptr_spec(PtrSpec *ps)
{
    if (!ps) return;
    Py_XDECREF(ps->types);
    Py_XDECREF(ps->capsule);
    Py_XDECREF(ps->other_type);
    Py_XDECREF(ps->other_reader);
    PyMem_Free(ps);
}

static void
free_tensor_spec(TensorSpec *ts)
{
    if (!ts) return;
    Py_XDECREF(ts->type);
    Py_XDECREF(ts->capsule);
    Py_XDECREF(ts->cai_type);
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

static int check_class(char cls, char fmt, Py_ssize_t off, Py_ssize_t size, Py_ssize_t storage_size);

/* spec: ((class, format, offset, size, tensor spec or None), ...), one per element,
 * offsets absolute in the storage block of `storage_size` bytes. */
static int
parse_seq_spec(PyObject *spec, Py_ssize_t storage_size, SeqSpec **out)
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
        if (!leaf || !PyTuple_Check(leaf) || PyTuple_Size(leaf) != 5) {
            PyErr_SetString(PyExc_TypeError, "a sequence leaf is (class, format, offset, size, tensor spec)");
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
        Py_ssize_t size = PyLong_AsSsize_t(PyTuple_GetItem(leaf, 3));
        if (PyErr_Occurred()) return -1;
        if (check_class(c[0], f[0], ss->off[k], size, storage_size) < 0) return -1;
        if (c[0] == C_TENSOR && parse_tensor_spec(PyTuple_GetItem(leaf, 4), size, &ss->tensors[k]) < 0) return -1;
    }
    return 0;
}

/* Every write of class `cls` lands inside [off, off + size) and inside the
 * storage block, and the class fits the format (an extension kind declaring
 * "P" with format "i" would write 8 bytes into 4). */
static int
check_class(char cls, char fmt, Py_ssize_t off, Py_ssize_t size, Py_ssize_t storage_size)
{
    Py_ssize_t need;
    const char *fmts;
    switch (cls) {
    case C_EXACT_INT: case C_STREAM: fmts = "Qq"; need = 8; break;
    case C_EXACT_BOOL: fmts = "?"; need = 1; break;
    case C_INT: fmts = "bhiqBHIQ"; need = fmt_size(fmt); break;
    case C_REAL: fmts = "fd"; need = fmt_size(fmt); break;
    case C_F16: case C_BF16: fmts = "H"; need = 2; break;
    case C_TENSOR: fmts = "Q"; need = 8; break; /* its dynamic modes are checked with its spec */
    case C_SEQ: case C_WRITER: fmts = NULL; need = 0; break; /* leaves checked one by one; writers pack through struct */
    default:
        PyErr_Format(PyExc_ValueError, "unknown fast class '%c'", cls);
        return -1;
    }
    if (fmts && (fmt == '\0' || !strchr(fmts, fmt))) {
        PyErr_Format(PyExc_ValueError, "fast class '%c' cannot write format '%c'", cls, fmt ? fmt : '0');
        return -1;
    }
    if (off < 0 || size < need || size > storage_size || off > storage_size - size) {
        PyErr_Format(PyExc_ValueError, "fast class '%c' at offset %zd (%zd bytes) does not fit its slot or the %zd-byte storage",
                     cls, off, size, storage_size);
        return -1;
    }
    return 0;
}

/* The LaunchSpec fields init reads, in this order (exported as LAUNCH_SPEC_FIELDS). */
enum { F_ENTRY, F_ARGV, F_STORAGE, F_STORAGE_SIZE, F_RESULT, F_FMTS, F_CLASSES, F_OFFSETS, F_SIZES, F_EXTRAS, F_DEFAULTS,
       F_NAMES, F_REQUIRED, F_SLOW, F_FAIL, F_BUSY_ERROR, F_RET, F_KEEP, F_RELEASE_GIL, N_SPEC_FIELDS };
static const char *const launch_spec_fields[N_SPEC_FIELDS + 1] = {
    "entry", "argv", "storage", "storage_size", "result", "fmts", "classes", "offsets", "sizes", "extras", "defaults",
    "names", "required", "slow", "fail", "busy_error", "ret", "keep", "release_gil", NULL};
static const int launch_spec_kinds[N_SPEC_FIELDS] = {
    CB_INT, CB_INT, CB_INT, CB_INT, CB_INT, CB_BYTES, CB_BYTES, CB_TUPLE, CB_TUPLE, CB_TUPLE, CB_TUPLE,
    CB_TUPLE, CB_ANY, CB_CALLABLE, CB_CALLABLE, CB_CALLABLE, CB_INT_OR_NONE, CB_TUPLE, CB_BOOL};
/* A sequence leaf (a SeqLeaf record, read by position): exported as SEQ_LEAF_FIELDS. */
static const char *const seq_leaf_fields[] = {"cls", "fmt", "offset", "size", "tensor", NULL};

/* Launcher(spec): `spec` a LaunchSpec (any object with its fields: each is checked here). */
static int
Launcher_init(Launcher *self, PyObject *args, PyObject *kwds)
{
    PyObject *spec;
    PyObject *f[N_SPEC_FIELDS] = {NULL};
    uint64_t entry, argv, storage, result;
    int rc = -1;
    if (self->fmt) {
        PyErr_SetString(PyExc_TypeError, "Launcher cannot be initialised twice");
        return -1;
    }
    if (kwds && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Launcher takes no keywords");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O:Launcher", &spec)) return -1;
    for (int k = 0; k < N_SPEC_FIELDS; k++)
        if (!(f[k] = cb_field(spec, "LaunchSpec", launch_spec_fields[k], launch_spec_kinds[k]))) goto done;
    if (cb_address(f[F_ENTRY], "LaunchSpec", "entry", &entry) < 0 || cb_address(f[F_ARGV], "LaunchSpec", "argv", &argv) < 0 ||
        cb_address(f[F_STORAGE], "LaunchSpec", "storage", &storage) < 0 || cb_address(f[F_RESULT], "LaunchSpec", "result", &result) < 0)
        goto done;
    Py_ssize_t storage_size = PyLong_AsSsize_t(f[F_STORAGE_SIZE]);
    if (storage_size == -1 && PyErr_Occurred()) goto done;
    const char *fmt = PyBytes_AsString(f[F_FMTS]), *cls = PyBytes_AsString(f[F_CLASSES]);
    if (!fmt || !cls) goto done;
    Py_ssize_t nfmt = PyBytes_Size(f[F_FMTS]);
    PyObject *offsets = f[F_OFFSETS], *sizes = f[F_SIZES], *extras = f[F_EXTRAS], *defaults = f[F_DEFAULTS], *names = f[F_NAMES];
    if (nfmt != PyBytes_Size(f[F_CLASSES]) || PyTuple_Size(offsets) != nfmt || PyTuple_Size(sizes) != nfmt ||
        PyTuple_Size(defaults) != nfmt || PyTuple_Size(extras) != nfmt || PyTuple_Size(names) != nfmt) {
        PyErr_SetString(PyExc_ValueError, "LaunchSpec: slot formats, classes, offsets, sizes, extras, defaults and names differ in length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < nfmt; i++) {
        if (!PyUnicode_CheckExact(PyTuple_GetItem(names, i))) {
            PyErr_SetString(PyExc_TypeError, "LaunchSpec: names holds one str per slot");
            goto done;
        }
    }
    if (!entry || !argv || !storage || storage_size < 0) {
        PyErr_SetString(PyExc_ValueError, "LaunchSpec: entry, argv and storage must be non-null");
        goto done;
    }
    self->n = nfmt;
    self->fmt = PyMem_Malloc(nfmt + 1);
    self->cls = PyMem_Malloc(nfmt + 1);
    self->off = PyMem_Calloc(nfmt + 1, sizeof(Py_ssize_t));
    self->tensors = PyMem_Calloc(nfmt + 1, sizeof(TensorSpec *));
    self->ptrs = PyMem_Calloc(nfmt + 1, sizeof(PtrSpec *));
    self->objs = PyMem_Calloc(nfmt + 1, sizeof(ObjSpec *));
    self->seqs = PyMem_Calloc(nfmt + 1, sizeof(SeqSpec *));
    self->held = PyMem_Calloc(nfmt + 1, sizeof(PyObject *));
    self->byname = PyMem_Calloc(nfmt + 1, sizeof(PyObject *));
    self->deferred = PyMem_Calloc(nfmt + 1, sizeof(Py_ssize_t));
    self->pure = PyMem_Calloc(nfmt + 1, sizeof(PyObject *));
    if (!self->fmt || !self->cls || !self->off || !self->tensors || !self->ptrs || !self->objs || !self->seqs || !self->held ||
        !self->byname || !self->deferred || !self->pure) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(self->fmt, fmt, nfmt);
    memcpy(self->cls, cls, nfmt);
    for (Py_ssize_t i = 0; i < nfmt; i++) {
        self->off[i] = PyLong_AsSsize_t(PyTuple_GetItem(offsets, i));
        Py_ssize_t size = PyLong_AsSsize_t(PyTuple_GetItem(sizes, i));
        if (PyErr_Occurred()) goto done;
        if (check_class(cls[i], fmt[i], self->off[i], size, storage_size) < 0) goto done;
        if (cls[i] == C_TENSOR && parse_tensor_spec(PyTuple_GetItem(extras, i), size, &self->tensors[i]) < 0) goto done;
        if (cls[i] == C_EXACT_INT && parse_ptr_spec(PyTuple_GetItem(extras, i), &self->ptrs[i]) < 0) goto done;
        if ((cls[i] == C_STREAM || cls[i] == C_INT || cls[i] == C_REAL || cls[i] == C_F16 || cls[i] == C_BF16 || cls[i] == C_EXACT_BOOL) &&
            parse_object_spec(PyTuple_GetItem(extras, i), cls[i] == C_STREAM, &self->objs[i]) < 0)
            goto done;
        if (cls[i] == C_SEQ && parse_seq_spec(PyTuple_GetItem(extras, i), storage_size, &self->seqs[i]) < 0) goto done;
    }
    self->entry = (entry_fn)(uintptr_t)entry;
    self->argv = (void **)(uintptr_t)argv;
    self->storage = (char *)(uintptr_t)storage;
    self->storage_size = storage_size;
    self->result = result ? (volatile int32_t *)(uintptr_t)result : NULL;
    self->release_gil = f[F_RELEASE_GIL] == Py_True;
    /* the launcher keeps what it read (the references cb_field returned) */
    self->extras = f[F_EXTRAS]; f[F_EXTRAS] = NULL;
    self->defaults = f[F_DEFAULTS]; f[F_DEFAULTS] = NULL;
    self->names = f[F_NAMES]; f[F_NAMES] = NULL;
    self->required = f[F_REQUIRED]; f[F_REQUIRED] = NULL;
    self->slow = f[F_SLOW]; f[F_SLOW] = NULL;
    self->fail = f[F_FAIL]; f[F_FAIL] = NULL;
    self->busy_error = f[F_BUSY_ERROR]; f[F_BUSY_ERROR] = NULL;
    self->ret = f[F_RET]; f[F_RET] = NULL;
    self->keep = f[F_KEEP]; f[F_KEEP] = NULL;
    self->refuse = NULL;
    self->busy = 0;
    rc = 0;
done:
    for (int k = 0; k < N_SPEC_FIELDS; k++) Py_XDECREF(f[k]);
    return rc;
}

/* The types and capsules learned by tensor specs are owned references too:
 * the collector must see them (a tensor subclass may refer to the handle). */
static int
visit_tensor_spec(TensorSpec *ts, visitproc visit, void *arg)
{
    if (ts) {
        Py_VISIT(ts->type);
        Py_VISIT(ts->capsule);
        Py_VISIT(ts->cai_type);
    }
    return 0;
}

static void
clear_tensor_spec(TensorSpec *ts)
{
    if (ts) {
        ts->fn = NULL;
        Py_CLEAR(ts->type);
        Py_CLEAR(ts->capsule);
        Py_CLEAR(ts->cai_type);
    }
}

static int
Launcher_traverse(Launcher *self, visitproc visit, void *arg)
{
    Py_VISIT(self->extras);
    Py_VISIT(self->defaults);
    Py_VISIT(self->names);
    Py_VISIT(self->required);
    Py_VISIT(self->slow);
    Py_VISIT(self->fail);
    Py_VISIT(self->refuse);
    Py_VISIT(self->ret);
    Py_VISIT(self->keep);
    Py_VISIT(self->busy_error);
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (self->held) Py_VISIT(self->held[i]);
        if (self->pure) Py_VISIT(self->pure[i]);
        if (self->tensors && visit_tensor_spec(self->tensors[i], visit, arg)) return -1;
        if (self->ptrs && self->ptrs[i]) {
            Py_VISIT(self->ptrs[i]->types);
            Py_VISIT(self->ptrs[i]->capsule);
            Py_VISIT(self->ptrs[i]->other_type);
            Py_VISIT(self->ptrs[i]->other_reader);
        }
        if (self->objs && self->objs[i]) {
            Py_VISIT(self->objs[i]->types);
            Py_VISIT(self->objs[i]->attr_types);
            Py_VISIT(self->objs[i]->reader);
        }
        if (self->seqs && self->seqs[i] && self->seqs[i]->tensors)
            for (Py_ssize_t k = 0; k < self->seqs[i]->n; k++)
                if (visit_tensor_spec(self->seqs[i]->tensors[k], visit, arg)) return -1;
    }
    return 0;
}

static int
Launcher_clear(Launcher *self)
{
    Py_CLEAR(self->extras);
    Py_CLEAR(self->defaults);
    Py_CLEAR(self->names);
    Py_CLEAR(self->required);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->refuse);
    Py_CLEAR(self->ret);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->busy_error);
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (self->held) Py_CLEAR(self->held[i]);
        if (self->pure) Py_CLEAR(self->pure[i]);
        if (self->tensors) clear_tensor_spec(self->tensors[i]);
        if (self->ptrs && self->ptrs[i]) {
            self->ptrs[i]->fn = NULL;
            Py_CLEAR(self->ptrs[i]->types);
            Py_CLEAR(self->ptrs[i]->capsule);
            Py_CLEAR(self->ptrs[i]->other_type);
            Py_CLEAR(self->ptrs[i]->other_reader);
        }
        if (self->objs && self->objs[i]) { /* type_in, pack_stream and pack_number read NULL as "none" */
            Py_CLEAR(self->objs[i]->types);
            Py_CLEAR(self->objs[i]->attr_types);
            Py_CLEAR(self->objs[i]->reader);
        }
        if (self->seqs && self->seqs[i] && self->seqs[i]->tensors)
            for (Py_ssize_t k = 0; k < self->seqs[i]->n; k++) clear_tensor_spec(self->seqs[i]->tensors[k]);
    }
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
    PyMem_Free(self->held);
    PyMem_Free(self->byname);
    PyMem_Free(self->deferred);
    PyMem_Free(self->pure);
    if (self->tensors) {
        for (Py_ssize_t i = 0; i < self->n; i++) free_tensor_spec(self->tensors[i]);
        PyMem_Free(self->tensors);
    }
    if (self->ptrs) {
        for (Py_ssize_t i = 0; i < self->n; i++) free_ptr_spec(self->ptrs[i]);
        PyMem_Free(self->ptrs);
    }
    if (self->objs) {
        for (Py_ssize_t i = 0; i < self->n; i++) free_object_spec(self->objs[i]);
        PyMem_Free(self->objs);
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
     "launch($self, /, *args, **kwargs)\n--\n\nRewrite the slots in place and call the entry point."},
    {"try_launch", (PyCFunction)(void (*)(void))Launcher_try_launch, METH_FASTCALL | METH_KEYWORDS,
     "try_launch($self, /, *args, **kwargs)\n--\n\nLaunch when the fast path takes every value as is, else return NotImplemented (no slow path)."},
    {"poison", (PyCFunction)Launcher_poison, METH_O,
     "poison($self, refuse, /)\n--\n\nEvery later launch calls refuse() instead; drops the pin (the spec's keep)."},
    {"write_and_call", (PyCFunction)Launcher_write_and_call, METH_O,
     "write_and_call($self, data, /)\n--\n\nCopy the packed struct into the storage and call the entry point (one launch at a time)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Launcher_slots[] = {
    {Py_tp_init, Launcher_init},
    {Py_tp_dealloc, Launcher_dealloc},
    {Py_tp_traverse, Launcher_traverse},
    {Py_tp_clear, Launcher_clear},
    {Py_tp_methods, Launcher_methods},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_doc, "Launcher(spec, /)\n--\n\nThe C fast path of one prepared handle, from a cute_bind.launch.spec.LaunchSpec (LAUNCH_SPEC_FIELDS: what it reads)."},
    {0, NULL},
};

static PyType_Spec Launcher_spec = {
    "cute_bind.launch._claunch.Launcher",
    sizeof(Launcher),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    Launcher_slots,
};

/* configure(array_layout, ctypes_layout[, torch_reader]): the foreign object layouts the readers
 * use, each None (left as is) or the record cute_bind.slots.dlpack verified against real objects:
 *   torch_reader: (exchange function address, (torch.Tensor, torch.nn.Parameter), capsule)
 *   array_layout: (ndarray type, data, nd, dims, strides, descr, flags, type_num, byteorder,
 *                  writeable bit, ((type number, code, bits), ...))
 *   ctypes_layout: (c_void_p, _Pointer, b_ptr offset) */
static PyObject *
mod_configure(PyObject *mod, PyObject *args)
{
    PyObject *arr, *ct, *tr = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O:configure", &arr, &ct, &tr)) return NULL;
    if (tr != Py_None) {
        unsigned long long fn;
        PyObject *types, *capsule, *streams = NULL;
        if (!PyArg_ParseTuple(tr, "KO!O|O!:configure", &fn, &PyTuple_Type, &types, &capsule, &PyTuple_Type, &streams)) return NULL;
        for (Py_ssize_t k = 0; k < PyTuple_Size(types); k++)
            if (!PyType_Check(PyTuple_GetItem(types, k))) {
                PyErr_SetString(PyExc_TypeError, "configure: torch reader types must be types");
                return NULL;
            }
        for (Py_ssize_t k = 0; streams && k < PyTuple_Size(streams); k++)
            if (!PyType_Check(PyTuple_GetItem(streams, k))) {
                PyErr_SetString(PyExc_TypeError, "configure: torch stream classes must be types");
                return NULL;
            }
        if (!fn) {
            PyErr_SetString(PyExc_ValueError, "configure: a null exchange function");
            return NULL;
        }
        Py_INCREF(types);
        Py_INCREF(capsule);
        Py_XINCREF(streams);
        PyObject *old_t = torch_reader.types, *old_c = torch_reader.capsule, *old_s = torch_reader.streams;
        torch_reader.types = types;
        torch_reader.capsule = capsule;
        torch_reader.streams = streams;
        torch_reader.fn = (dltensor_from_pyobject)(uintptr_t)fn;
        Py_XDECREF(old_t);
        Py_XDECREF(old_c);
        Py_XDECREF(old_s);
    }
    if (arr != Py_None) {
        PyObject *tp, *dtypes;
        ArrayLayout L;
        memset(&L, 0, sizeof L);
        if (!PyArg_ParseTuple(arr, "O!nnnnnnnnlO!", &PyType_Type, &tp, &L.data, &L.nd, &L.dims, &L.strides, &L.descr, &L.flags,
                              &L.type_num, &L.byteorder, &L.writeable, &PyTuple_Type, &dtypes))
            return NULL;
        Py_ssize_t offs[] = {L.data, L.nd, L.dims, L.strides, L.descr, L.flags, L.type_num, L.byteorder};
        for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++)
            if (offs[k] < (Py_ssize_t)sizeof(PyObject) || offs[k] > 256) {
                PyErr_SetString(PyExc_ValueError, "configure: an implausible array layout offset");
                return NULL;
            }
        for (Py_ssize_t k = 0; k < PyTuple_Size(dtypes); k++) {
            int num, code, bits;
            if (!PyArg_ParseTuple(PyTuple_GetItem(dtypes, k), "iii", &num, &code, &bits)) return NULL;
            if (num < 0 || num >= NP_MAX_TYPES || bits <= 0 || bits > 64 || bits % 8 || code < 0 || code > 255) {
                PyErr_SetString(PyExc_ValueError, "configure: an implausible array dtype entry");
                return NULL;
            }
            L.code[num] = (uint8_t)code;
            L.bits[num] = (uint8_t)bits;
        }
        Py_INCREF(tp);
        L.type = tp;
        PyObject *old = np_layout.type;
        np_layout = L;
        Py_XDECREF(old);
    }
    if (ct != Py_None) {
        PyObject *void_p, *pointer;
        Py_ssize_t b_ptr;
        if (!PyArg_ParseTuple(ct, "O!O!n", &PyType_Type, &void_p, &PyType_Type, &pointer, &b_ptr)) return NULL;
        if (b_ptr < (Py_ssize_t)sizeof(PyObject) || b_ptr > 256) {
            PyErr_SetString(PyExc_ValueError, "configure: an implausible ctypes layout offset");
            return NULL;
        }
        Py_INCREF(void_p);
        Py_INCREF(pointer);
        PyObject *old_v = ct_layout.void_p, *old_p = ct_layout.pointer;
        ct_layout.void_p = void_p;
        ct_layout.pointer = pointer;
        ct_layout.b_ptr = b_ptr;
        Py_XDECREF(old_v);
        Py_XDECREF(old_p);
    }
    Py_RETURN_NONE;
}

static PyObject *
mod_counts(PyObject *mod, PyObject *unused)
{
    return Py_BuildValue("{sLsLsLsL}", "exchange", n_exchange, "ndarray", n_ndarray, "ctypes", n_ctypes, "cai", n_cai);
}

static PyMethodDef module_methods[] = {
    {"configure", mod_configure, METH_VARARGS,
     "configure(array_layout, ctypes_layout, torch_reader=None, /)\n--\n\n"
     "The verified NumPy ndarray and ctypes object layouts and torch's reader (None: leave as is): "
     "(exchange function, tensor types, capsule[, stream classes read through cuda_stream])."},
    {"counts", mod_counts, METH_NOARGS,
     "counts($module, /)\n--\n\n{reader: values taken as is}: exchange (torch), ndarray (NumPy), ctypes, cai (__cuda_array_interface__)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_claunch", "C fast path of PreparedLaunch.launch.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__claunch(void)
{
    PyObject **interned[] = {&s_cai, &s_dlpack_device, &s_data, &s_typestr, &s_shape, &s_strides, &s_mask, &s_cuda_stream};
    const char *texts[] = {"__cuda_array_interface__", "__dlpack_device__", "data", "typestr", "shape", "strides", "mask", "cuda_stream"};
    for (int k = 0; k < 8; k++)
        if (!*interned[k] && !(*interned[k] = PyUnicode_InternFromString(texts[k]))) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    PyObject *tp = PyType_FromSpec(&Launcher_spec);
    if (!tp || PyModule_AddObject(m, "Launcher", tp) < 0) {
        Py_XDECREF(tp);
        Py_DECREF(m);
        return NULL;
    }
    /* the record fields init reads (tests/launch/test_spec.py checks them against cute_bind.launch.spec) */
    const char *const *lists[] = {launch_spec_fields, seq_leaf_fields};
    const char *names[] = {"LAUNCH_SPEC_FIELDS", "SEQ_LEAF_FIELDS"};
    for (int k = 0; k < 2; k++) {
        PyObject *t = cb_names(lists[k]);
        if (!t || PyModule_AddObject(m, names[k], t) < 0) { /* AddObject steals only on success */
            Py_XDECREF(t);
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
