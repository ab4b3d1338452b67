/*
 * The C launcher's values (see _claunch.h): how a launch reads each value its slot takes as is
 * and writes it into the storage block. The readers run no Python code on a value whose address
 * they read in the last pass (the arguments' lifetime rule, docs/concepts/safety.md); every
 * failure is "not taken as is" (cb_decline) and the slow path decides.
 */
#include "_claunch.h"

static int
pack_int(char *dst, char fmt, PyObject *v)
{
    if (fmt == 'Q') {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return cb_decline();
        memcpy(dst, &u, 8);
        return 1;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return cb_decline();
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
        if (*d == -1.0 && PyErr_Occurred()) return cb_decline(); /* beyond the double range */
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
    if (!cap) return cb_decline();
    char *table = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    if (!table) { Py_DECREF(cap); return cb_decline(); }
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
    dl->device_type = CB_DL_CPU;
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
    if (!iface) return cb_decline();
    int r = 0;
    PyObject *data = NULL, *typestr = NULL;
    if (!PyDict_Check(iface)) goto done;
    data = dict_item(iface, s_data);
    if (!data && PyErr_Occurred()) { r = cb_decline(); goto done; }
    if (!data || !PyTuple_Check(data) || PyTuple_Size(data) != 2) goto done;
    PyObject *a = PyTuple_GetItem(data, 0), *ro = PyTuple_GetItem(data, 1);
    if (!a || !ro || Py_TYPE(a) != &PyLong_Type || ro != Py_False) goto done; /* read-only, or not (address, False) */
    unsigned long long addr = PyLong_AsUnsignedLongLong(a);
    if (addr == (unsigned long long)-1 && PyErr_Occurred()) { r = cb_decline(); goto done; }
    if (!addr || (ps->align > 1 && addr % ps->align)) goto done; /* NULL (empty?) or misaligned: the slow path decides */
    {   /* strides None: C-contiguous (the interface's rule); any stride tuple: the slow path checks it (CB219) */
        PyObject *st = dict_item(iface, s_strides);
        if (!st && PyErr_Occurred()) { r = cb_decline(); goto done; }
        int strided = st && st != Py_None;
        Py_XDECREF(st);
        if (strided) goto done;
    }
    if (!ps->any_dtype) {
        typestr = dict_item(iface, s_typestr);
        if (!typestr && PyErr_Occurred()) { r = cb_decline(); goto done; }
        uint8_t code, bits;
        if (!typestr || !typestr_dtype(typestr, &code, &bits) || code != ps->code || bits != ps->bits || ps->lanes != 1) goto done;
    }
    if (ps->device_type) { /* bound to a device: the value must say it is on it */
        PyObject *dev = PyObject_CallMethodObjArgs(v, s_dlpack_device, NULL);
        if (!dev) { r = cb_decline(); goto done; }
        long long dt = -1, id = -1;
        if (PyTuple_Check(dev) && PyTuple_Size(dev) == 2 && PyLong_Check(PyTuple_GetItem(dev, 0)) && PyLong_Check(PyTuple_GetItem(dev, 1))) {
            dt = PyLong_AsLongLong(PyTuple_GetItem(dev, 0));
            if (!PyErr_Occurred()) id = PyLong_AsLongLong(PyTuple_GetItem(dev, 1));
        }
        Py_DECREF(dev);
        if (PyErr_Occurred()) { r = cb_decline(); goto done; }
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
        if (fn((void *)v, &dl) != 0) return cb_decline();
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
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return cb_decline();
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
        if (!a) return cb_decline();
        int ok = Py_TYPE(a) == &PyLong_Type;
        unsigned long long u = ok ? PyLong_AsUnsignedLongLong(a) : 0;
        Py_DECREF(a);
        if (!ok) return 0;
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return cb_decline();
        memcpy(dst, &u, 8);
        return 1;
    } else {
        return pack_cai(ps, dst, v);
    }
    if (!ps->any_dtype && (dl.code != ps->code || dl.bits != ps->bits || dl.lanes != ps->lanes)) return 0;
    if (dl.strides && (dl.ndim == 1 ? dl.strides[0] != 1 && dl.shape[0] > 1 : !cb_row_major(dl.ndim, dl.shape, dl.strides)))
        return 0; /* a strided view (t[::2], expand): CB233 from the slow path */
    if (dl.device_type == CB_DL_CUDA) {
        if (!ps->cuda_ok || (ps->device_type && (ps->device_type != CB_DL_CUDA || dl.device_id != ps->device_id))) return 0;
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
    if (!dev) return cb_decline();
    int r = 0;
    if (PyTuple_Check(dev) && PyTuple_Size(dev) == 2 && PyLong_Check(PyTuple_GetItem(dev, 0)) && PyLong_Check(PyTuple_GetItem(dev, 1))) {
        *dt = PyLong_AsLongLong(PyTuple_GetItem(dev, 0));
        if (!PyErr_Occurred()) *id = PyLong_AsLongLong(PyTuple_GetItem(dev, 1));
        r = PyErr_Occurred() ? cb_decline() : 1;
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
    if (!iface) return cb_decline();
    int r = 0;
    PyObject *items[5] = {NULL, NULL, NULL, NULL, NULL}; /* data, typestr, shape, strides, mask: new references */
    if (!PyDict_Check(iface)) goto done;
    PyObject *keys[5] = {s_data, s_typestr, s_shape, s_strides, s_mask};
    for (int k = 0; k < 5; k++) {
        items[k] = dict_item(iface, keys[k]);
        if (!items[k] && PyErr_Occurred()) { r = cb_decline(); goto done; }
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
    return cb_decline();
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
                CB_SETREF(ts->cai_type, tp);
                int r = read_cai_tensor(v, &dl, cai_shape, np_strides);
                if (r <= 0) return r;
                n_cai++;
                goto check;
            }
        }
        if (mode == PACK_DEFER) return DEFERRED; /* learned (Python code ran now): read with the others */
        if (ts->fn((void *)v, &dl) != 0) return cb_decline();
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
            /* an empty tensor's strides are never used (NumPy reports 0 for them), nor is the
             * stride of an extent-1 mode (its index is always 0: torch reports any stride there) */
            if (value != m->stat && !(stride && (empty || dl.shape[mode] == 1))) return 0;
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

/* A sequence slot: one leaf (class, format, absolute offset, its class's spec) per element. */


/* Element `k` of a sequence, written with its leaf's class and spec, as a slot of that class is. */
static int
pack_leaf(char *storage, const SeqSpec *ss, Py_ssize_t k, PyObject *item, int mode)
{
    return pack_value(ss->cls[k], ss->fmt[k], storage + ss->off[k], ss->tensors[k], ss->ptrs[k], ss->objs[k], NULL, item, NULL, mode);
}

/* Exact tuples and lists only: a subclass may override __iter__, and a sequence
 * is read by iterating it (the slow path's list(value)), never by its raw items.
 * A list is read from a snapshot tuple the launch holds until the call returns,
 * so another thread emptying the list cannot free an element under the call. */
static int
pack_sequence(char *storage, SeqSpec *ss, PyObject *v, PyObject **held, int mode) /* writes ss->pending: this launch's */
{
    PyObject *items;
    if (mode == PACK_PURE) { /* the deferred leaves of the snapshot taken before (held until the call returns) */
        items = *held;
        if (!items || PyTuple_Size(items) != ss->n) return 0;
        for (Py_ssize_t k = 0; k < ss->n; k++) {
            if (!ss->pending[k]) continue;
            int r = pack_leaf(storage, ss, k, PyTuple_GetItem(items, k), mode);
            if (r != 1) return r < 0 ? r : 0;
        }
        return 1;
    }
    if (Py_TYPE(v) == &PyTuple_Type) {
        Py_INCREF(v);
        items = v;
    } else if (Py_TYPE(v) == &PyList_Type) {
        items = PyList_AsTuple(v);
        if (!items) return cb_decline();
    } else return 0;
    { PyObject *old = *held; *held = items; Py_XDECREF(old); }
    if (PyTuple_Size(items) != ss->n) return 0;
    int deferred = 0;
    for (Py_ssize_t k = 0; k < ss->n; k++) {
        PyObject *item = PyTuple_GetItem(items, k);
        if (!item) return cb_decline();
        int r = pack_leaf(storage, ss, k, item, mode);
        ss->pending[k] = r == DEFERRED;
        if (r == DEFERRED) deferred = 1;
        else if (r <= 0) return r;
    }
    return deferred ? DEFERRED : 1;
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
    if (!h) return cb_decline();
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
    if (!n) return cb_decline();
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
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return cb_decline();
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
        if (!r) return cb_decline();
        { PyObject *old = *held; *held = r; Py_XDECREF(old); } /* what the writer read from (e.g. a DLPack capsule) lives until the call returns */
        return 1;
    }
    default:
        return 0;
    }
}
