/*
 * The C launcher's slot records (see _claunch.h), read once at init, each by field name
 * (cb_record): a cute_bind.slots record reordered or renamed on one side fails here, or in
 * tests/launch/test_spec.py, never as a silent wrong read. The launch loop reads only what they
 * parsed.
 */
#include "_claunch.h"

static long long
item_ll(PyObject *tuple, Py_ssize_t i)
{
    PyObject *o = PyTuple_GetItem(tuple, i);
    return o ? PyLong_AsLongLong(o) : -1;
}

/* The slot records init reads, each by field name (cb_record) in these orders (exported as
 * TENSOR_SPEC_FIELDS, MODE_FIELDS, POINTER_SPEC_FIELDS, STREAM_SPEC_FIELDS, NUMBER_SPEC_FIELDS;
 * tests/launch/test_spec.py checks them against cute_bind.slots' NamedTuples). */
static const char *const tensor_spec_fields[] = {
    "function", "type", "capsule", "api_offset", "dtype", "device", "align", "ndim", "modes", "footprint32", NULL};
static const char *const mode_fields[] = {"static", "dynamic", "width", "divisibility", "offset", NULL};
static const char *const pointer_spec_fields[] = {
    "function", "types", "capsule", "dtype", "cpu_ok", "cuda_ok", "device", "align", "other_type", "other_reader", NULL};
static const char *const stream_spec_fields[] = {"attr_types", "int_types", "reader", NULL};
static const char *const number_spec_fields[] = {"types", "reader", NULL};

/* A sequence leaf (a SeqLeaf record, read by name): exported as SEQ_LEAF_FIELDS. */
static const char *const seq_leaf_fields[] = {"cls", "fmt", "offset", "size", "spec", NULL};

static int parse_tensor_fields(PyObject *spec, Py_ssize_t slot_size, TensorSpec *ts);

/* spec: a cute_bind.slots.tensor.CTensorSpec record (tensor_spec_fields: function, type, capsule,
 * api_offset, (code, bits, lanes), (device_type, device_id), align, ndim, modes, footprint32)
 * with modes: extents then strides, each a CMode (mode_fields); None: no C class. `slot_size`:
 * the slot's bytes, which every write must stay within. */
static int
parse_tensor_spec(PyObject *spec, Py_ssize_t slot_size, TensorSpec **out)
{
    *out = NULL;
    if (spec == Py_None) return 0;
    PyObject *fields = cb_record(spec, "tensor spec", "CTensorSpec", tensor_spec_fields);
    if (!fields) return -1;
    TensorSpec *ts = PyMem_Calloc(1, sizeof(TensorSpec));
    if (!ts) { Py_DECREF(fields); PyErr_NoMemory(); return -1; }
    *out = ts;
    int r = parse_tensor_fields(fields, slot_size, ts);
    Py_DECREF(fields);
    return r;
}

/* The CTensorSpec's fields, read by name into a tuple in tensor_spec_fields' order. */
static int
parse_tensor_fields(PyObject *spec, Py_ssize_t slot_size, TensorSpec *ts)
{
    PyObject *dtype = PyTuple_GetItem(spec, 4), *device = PyTuple_GetItem(spec, 5), *modes = PyTuple_GetItem(spec, 8);
    if (!PyTuple_Check(dtype) || PyTuple_Size(dtype) != 3 || !PyTuple_Check(device) || PyTuple_Size(device) != 2 || !PyTuple_Check(modes)) {
        PyErr_SetString(PyExc_TypeError, "tensor spec: dtype (3), device (2) and modes must be tuples");
        return -1;
    }
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
        PyObject *m = cb_record(PyTuple_GetItem(modes, k), "tensor spec: a mode", "CMode", mode_fields);
        if (!m) return -1;
        ts->modes[k].stat = item_ll(m, 0);
        ts->modes[k].dyn = (int)item_ll(m, 1);
        ts->modes[k].width = (int)item_ll(m, 2);
        ts->modes[k].div = item_ll(m, 3);
        ts->modes[k].off = (Py_ssize_t)item_ll(m, 4);
        Py_DECREF(m);
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

static int parse_ptr_fields(PyObject *spec, PtrSpec **out);

/* spec: a cute_bind.slots.pointer.CPointerSpec record (pointer_spec_fields: function, types,
 * capsule, dtype (code, bits, lanes) or None, cpu_ok, cuda_ok, device (type, id) or None, align,
 * other_type, other_reader); None: exact ints only. */
static int
parse_ptr_spec(PyObject *spec, PtrSpec **out)
{
    *out = NULL;
    if (spec == Py_None) return 0;
    PyObject *fields = cb_record(spec, "pointer spec", "CPointerSpec", pointer_spec_fields);
    if (!fields) return -1;
    int r = parse_ptr_fields(fields, out);
    Py_DECREF(fields);
    return r;
}

/* The CPointerSpec's fields, read by name into a tuple in pointer_spec_fields' order. */
static int
parse_ptr_fields(PyObject *spec, PtrSpec **out)
{
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

static int parse_object_fields(PyObject *spec, int stream, ObjSpec **out);

/* A slot's object spec from its record, or NULL for None (exact values only):
 *   a stream slot's cute_bind.slots.stream.CStreamSpec (attr_types, int_types, reader);
 *   a number slot's cute_bind.slots.scalar.CNumberSpec (types, reader).
 * Every group of types holds types only, and none of `exact` (the class writes those itself). */
static int
parse_object_spec(PyObject *spec, int stream, ObjSpec **out)
{
    const char *what = stream ? "stream spec" : "number spec";
    const char *record = stream ? "CStreamSpec" : "CNumberSpec";
    *out = NULL;
    if (spec == Py_None) return 0;
    PyObject *fields = cb_record(spec, what, record, stream ? stream_spec_fields : number_spec_fields);
    if (!fields) return -1;
    int r = parse_object_fields(fields, stream, out);
    Py_DECREF(fields);
    return r;
}

/* The CStreamSpec's or CNumberSpec's fields, read by name into a tuple in that record's order. */
static int
parse_object_fields(PyObject *spec, int stream, ObjSpec **out)
{
    const char *what = stream ? "stream spec" : "number spec";
    Py_ssize_t nfields = stream ? 3 : 2;
    PyObject *const exact[] = {(PyObject *)&PyLong_Type, stream ? NULL : (PyObject *)&PyFloat_Type, stream ? NULL : (PyObject *)&PyBool_Type};
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
    OBJ_SPEC_REFS(CB_CLEAR_REF, os)
    PyMem_Free(os);
}

static void
free_ptr_spec(PtrSpec *ps)
{
    if (!ps) return;
    PTR_SPEC_REFS(CB_CLEAR_REF, ps)
    PyMem_Free(ps);
}

static void
free_tensor_spec(TensorSpec *ts)
{
    if (!ts) return;
    TENSOR_SPEC_REFS(CB_CLEAR_REF, ts)
    PyMem_Free(ts->modes);
    PyMem_Free(ts);
}

static void
free_seq_spec(SeqSpec *ss)
{
    if (!ss) return;
    for (Py_ssize_t k = 0; k < ss->n; k++) {
        if (ss->tensors) free_tensor_spec(ss->tensors[k]);
        if (ss->ptrs) free_ptr_spec(ss->ptrs[k]);
        if (ss->objs) free_object_spec(ss->objs[k]);
    }
    PyMem_Free(ss->tensors);
    PyMem_Free(ss->ptrs);
    PyMem_Free(ss->objs);
    PyMem_Free(ss->pending);
    PyMem_Free(ss->cls);
    PyMem_Free(ss->fmt);
    PyMem_Free(ss->off);
    PyMem_Free(ss);
}


/* spec: ((class, format, offset, size, its class's spec record or None), ...), one per element,
 * offsets absolute in the storage block of `storage_size` bytes. */
static int parse_seq_leaf(PyObject *leaf, SeqSpec *ss, Py_ssize_t k, Py_ssize_t storage_size);

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
    ss->ptrs = PyMem_Calloc(n + 1, sizeof(PtrSpec *));
    ss->objs = PyMem_Calloc(n + 1, sizeof(ObjSpec *));
    ss->pending = PyMem_Calloc(n + 1, 1);
    if (!ss->cls || !ss->fmt || !ss->off || !ss->tensors || !ss->ptrs || !ss->objs || !ss->pending) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *leaf = cb_record(PyTuple_GetItem(spec, k), "a sequence leaf", "SeqLeaf", seq_leaf_fields);
        if (!leaf) return -1;
        int r = parse_seq_leaf(leaf, ss, k, storage_size);
        Py_DECREF(leaf);
        if (r < 0) return -1;
    }
    return 0;
}

/* Leaf `k` of a sequence: its SeqLeaf's fields, read by name into a tuple in seq_leaf_fields' order
 * (class, format, offset, size, spec). */
static int
parse_seq_leaf(PyObject *leaf, SeqSpec *ss, Py_ssize_t k, Py_ssize_t storage_size)
{
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
    return parse_value_spec(c[0], PyTuple_GetItem(leaf, 4), size, &ss->tensors[k], &ss->ptrs[k], &ss->objs[k]);
}

/* The spec record of one value of class `cls` (a slot's, or a sequence leaf's: the same records), into
 * the one of `ts`, `ps`, `os` its class reads: a CTensorSpec ("T"), a CPointerSpec ("P"), a CStreamSpec
 * ("Z") or a CNumberSpec (the number classes); None: exact values only. */
static int
parse_value_spec(char cls, PyObject *spec, Py_ssize_t size, TensorSpec **ts, PtrSpec **ps, ObjSpec **os)
{
    switch (cls) {
    case C_TENSOR: return parse_tensor_spec(spec, size, ts);
    case C_EXACT_INT: return parse_ptr_spec(spec, ps);
    case C_STREAM: case C_INT: case C_REAL: case C_F16: case C_BF16: case C_EXACT_BOOL:
        return parse_object_spec(spec, cls == C_STREAM, os);
    default: return 0;
    }
}

/* The references a value's specs own, for the collector (a tensor subclass or a reader may refer to
 * the handle), and their release (clear: the launch loop reads NULL as "none"). */
static int
visit_value_spec(TensorSpec *ts, PtrSpec *ps, ObjSpec *os, visitproc visit, void *arg)
{
    if (visit_tensor_spec(ts, visit, arg)) return -1;
    if (ps) {
        PTR_SPEC_REFS(CB_VISIT_REF, ps)
    }
    if (os) {
        OBJ_SPEC_REFS(CB_VISIT_REF, os)
    }
    return 0;
}

static void
clear_value_spec(TensorSpec *ts, PtrSpec *ps, ObjSpec *os)
{
    clear_tensor_spec(ts);
    if (ps) {
        ps->fn = NULL;
        PTR_SPEC_REFS(CB_CLEAR_REF, ps)
    }
    if (os) { /* type_in, pack_stream and pack_number read NULL as "none" */
        OBJ_SPEC_REFS(CB_CLEAR_REF, os)
    }
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

/* The types and capsules learned by tensor specs are owned references too:
 * the collector must see them (a tensor subclass may refer to the handle). */
static int
visit_tensor_spec(TensorSpec *ts, visitproc visit, void *arg)
{
    if (ts) {
        TENSOR_SPEC_REFS(CB_VISIT_REF, ts)
    }
    return 0;
}

static void
clear_tensor_spec(TensorSpec *ts)
{
    if (ts) {
        ts->fn = NULL;
        TENSOR_SPEC_REFS(CB_CLEAR_REF, ts)
    }
}
