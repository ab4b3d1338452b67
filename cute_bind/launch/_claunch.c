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
 * (SEQ_LEAF_FIELDS, read by name).
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
#include "_claunch.h" /* the types, and the functions of the two files included below */

#include "_claunch_values.c"  /* reading and writing values: the launch loop's readers */
#include "_claunch_records.c" /* the slot records, read by name at init */

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
                CB_SETREF(self->pure[i], tp);
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
    CB_SETREF(self->refuse, Py_NewRef(refuse));
    Py_CLEAR(self->keep);
    Py_RETURN_NONE;
}
/* The LaunchSpec fields init reads, in this order (exported as LAUNCH_SPEC_FIELDS). */
enum { F_ENTRY, F_ARGV, F_STORAGE, F_STORAGE_SIZE, F_RESULT, F_FMTS, F_CLASSES, F_OFFSETS, F_SIZES, F_EXTRAS, F_DEFAULTS,
       F_NAMES, F_REQUIRED, F_SLOW, F_FAIL, F_BUSY_ERROR, F_RET, F_KEEP, F_RELEASE_GIL, N_SPEC_FIELDS };
static const char *const launch_spec_fields[N_SPEC_FIELDS + 1] = {
    "entry", "argv", "storage", "storage_size", "result", "fmts", "classes", "offsets", "sizes", "extras", "defaults",
    "names", "required", "slow", "fail", "busy_error", "ret", "keep", "release_gil", NULL};
/* The references a Launcher takes from those fields, X(member, field): with `refuse` and the per-slot specs, all it owns */
#define LAUNCHER_SPEC_REFS(X) \
    X(extras, F_EXTRAS) X(defaults, F_DEFAULTS) X(names, F_NAMES) X(required, F_REQUIRED) X(slow, F_SLOW) X(fail, F_FAIL) \
    X(busy_error, F_BUSY_ERROR) X(ret, F_RET) X(keep, F_KEEP)
static const int launch_spec_kinds[N_SPEC_FIELDS] = {
    CB_INT, CB_INT, CB_INT, CB_INT, CB_INT, CB_BYTES, CB_BYTES, CB_TUPLE, CB_TUPLE, CB_TUPLE, CB_TUPLE,
    CB_TUPLE, CB_ANY, CB_CALLABLE, CB_CALLABLE, CB_CALLABLE, CB_INT_OR_NONE, CB_TUPLE, CB_BOOL};

/* Launcher(spec): `spec` a LaunchSpec (any object with its fields: each is checked here). */
static int
Launcher_init(Launcher *self, PyObject *args, PyObject *kwds)
{
    PyObject *spec;
    PyObject *f[N_SPEC_FIELDS] = {NULL};
    uint64_t entry, argv, storage, result;
    int rc = -1;
    if (cb_init_once(self->fmt != NULL, "Launcher") < 0 || cb_no_keywords(kwds, "Launcher takes no keywords") < 0) return -1;
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
        if (parse_value_spec(cls[i], PyTuple_GetItem(extras, i), size, &self->tensors[i], &self->ptrs[i], &self->objs[i]) < 0) goto done;
        if (cls[i] == C_SEQ && parse_seq_spec(PyTuple_GetItem(extras, i), storage_size, &self->seqs[i]) < 0) goto done;
    }
    self->entry = (entry_fn)(uintptr_t)entry;
    self->argv = (void **)(uintptr_t)argv;
    self->storage = (char *)(uintptr_t)storage;
    self->storage_size = storage_size;
    self->result = result ? (volatile int32_t *)(uintptr_t)result : NULL;
    self->release_gil = f[F_RELEASE_GIL] == Py_True;
    /* the launcher keeps what it read (the references cb_field returned) */
    LAUNCHER_SPEC_REFS(CB_TAKE_FIELD)
    self->refuse = NULL;
    self->busy = 0;
    rc = 0;
done:
    for (int k = 0; k < N_SPEC_FIELDS; k++) Py_XDECREF(f[k]);
    return rc;
}

static int
Launcher_traverse(Launcher *self, visitproc visit, void *arg)
{
    LAUNCHER_SPEC_REFS(CB_VISIT_FIELD)
    Py_VISIT(self->refuse);
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (self->held) Py_VISIT(self->held[i]);
        if (self->pure) Py_VISIT(self->pure[i]);
        if (self->tensors && visit_value_spec(self->tensors[i], self->ptrs ? self->ptrs[i] : NULL, self->objs ? self->objs[i] : NULL, visit, arg))
            return -1;
        SeqSpec *ss = self->seqs ? self->seqs[i] : NULL;
        if (ss && ss->tensors && ss->ptrs && ss->objs)
            for (Py_ssize_t k = 0; k < ss->n; k++)
                if (visit_value_spec(ss->tensors[k], ss->ptrs[k], ss->objs[k], visit, arg)) return -1;
    }
    return 0;
}

static int
Launcher_clear(Launcher *self)
{
    LAUNCHER_SPEC_REFS(CB_CLEAR_FIELD)
    Py_CLEAR(self->refuse);
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (self->held) Py_CLEAR(self->held[i]);
        if (self->pure) Py_CLEAR(self->pure[i]);
        if (self->tensors) clear_value_spec(self->tensors[i], self->ptrs ? self->ptrs[i] : NULL, self->objs ? self->objs[i] : NULL);
        SeqSpec *ss = self->seqs ? self->seqs[i] : NULL;
        if (ss && ss->tensors && ss->ptrs && ss->objs)
            for (Py_ssize_t k = 0; k < ss->n; k++) clear_value_spec(ss->tensors[k], ss->ptrs[k], ss->objs[k]);
    }
    return 0;
}

static void
Launcher_dealloc(Launcher *self)
{
    PyObject_GC_UnTrack(self);
    Launcher_clear(self);
/* a per-slot array of specs (NULL: none): each spec, then the array */
#define FREE_SPECS(specs, free_spec)                                                                              \
    do {                                                                                                        \
        if (specs)                                                                                              \
            for (Py_ssize_t i = 0; i < self->n; i++) free_spec((specs)[i]);                                     \
        PyMem_Free(specs);                                                                                      \
    } while (0)
    FREE_SPECS(self->tensors, free_tensor_spec);
    FREE_SPECS(self->ptrs, free_ptr_spec);
    FREE_SPECS(self->objs, free_object_spec);
    FREE_SPECS(self->seqs, free_seq_spec);
#undef FREE_SPECS
    CB_FREE_ARRAYS(self->fmt, self->cls, self->off, self->held, self->byname, self->deferred, self->pure);
    cb_free_instance((PyObject *)self);
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

CB_TYPE_SPEC(Launcher, "cute_bind.launch._claunch.Launcher", Launcher, Py_TPFLAGS_HAVE_GC,
             CB_INIT_GC_SLOTS(Launcher_init, Launcher_dealloc, Launcher_traverse, Launcher_clear, Launcher_methods),
             {Py_tp_doc, "Launcher(spec, /)\n--\n\nThe C fast path of one prepared handle, from a cute_bind.launch.spec.LaunchSpec "
                         "(LAUNCH_SPEC_FIELDS: what it reads)."});

/* configure(array_layout, ctypes_layout[, torch_reader]): the foreign object layouts the readers
 * use, each None (left as is) or the record cute_bind.slots.dlpack verified against real objects:
 *   torch_reader: (exchange function address, (torch.Tensor, torch.nn.Parameter), capsule)
 *   array_layout: (ndarray type, data, nd, dims, strides, descr, flags, type_num, byteorder,
 *                  writeable bit, ((type number, code, bits), ...))
 *   ctypes_layout: (c_void_p, _Pointer, b_ptr offset) */
/* The records configure() reads, each by field name (exported as ARRAY_LAYOUT_FIELDS, CTYPES_LAYOUT_FIELDS,
 * TORCH_READER_FIELDS): cute_bind.slots.dlpack.ArrayLayout and CtypesLayout, cute_bind.launch.native.TorchReader. */
static const char *const array_layout_fields[] = {
    "type", "data", "nd", "dims", "strides", "descr", "flags", "type_num", "byteorder", "writeable", "dtypes", NULL};
static const char *const ctypes_layout_fields[] = {"void_p", "pointer", "b_ptr", NULL};
static const char *const torch_reader_fields[] = {"function", "types", "capsule", "streams", NULL};

static PyObject *
mod_configure(PyObject *mod, PyObject *args)
{
    PyObject *arr, *ct, *tr = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O:configure", &arr, &ct, &tr)) return NULL;
    /* each record read by name (cb_record) into a tuple held until this call returns: what is
     * parsed out of it is borrowed from it */
    PyObject *trec = NULL, *arec = NULL, *crec = NULL, *result = NULL;
    if (tr != Py_None && !(trec = cb_record(tr, "configure: torch's reader", "TorchReader", torch_reader_fields))) goto done;
    if (arr != Py_None && !(arec = cb_record(arr, "configure: NumPy's layout", "ArrayLayout", array_layout_fields))) goto done;
    if (ct != Py_None && !(crec = cb_record(ct, "configure: ctypes' layout", "CtypesLayout", ctypes_layout_fields))) goto done;
    if (trec) {
        unsigned long long fn;
        PyObject *types, *capsule, *streams;
        if (!PyArg_ParseTuple(trec, "KO!OO:configure", &fn, &PyTuple_Type, &types, &capsule, &streams)) goto done;
        if (streams == Py_None) streams = NULL; /* no stream classes */
        else if (!PyTuple_Check(streams)) {
            PyErr_SetString(PyExc_TypeError, "configure: torch's stream classes must be a tuple or None");
            goto done;
        }
        for (Py_ssize_t k = 0; k < PyTuple_Size(types); k++)
            if (!PyType_Check(PyTuple_GetItem(types, k))) {
                PyErr_SetString(PyExc_TypeError, "configure: torch reader types must be types");
                goto done;
            }
        for (Py_ssize_t k = 0; streams && k < PyTuple_Size(streams); k++)
            if (!PyType_Check(PyTuple_GetItem(streams, k))) {
                PyErr_SetString(PyExc_TypeError, "configure: torch stream classes must be types");
                goto done;
            }
        if (!fn) {
            PyErr_SetString(PyExc_ValueError, "configure: a null exchange function");
            goto done;
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
    if (arec) {
        PyObject *tp, *dtypes;
        ArrayLayout L;
        memset(&L, 0, sizeof L);
        if (!PyArg_ParseTuple(arec, "O!nnnnnnnnlO!", &PyType_Type, &tp, &L.data, &L.nd, &L.dims, &L.strides, &L.descr, &L.flags,
                              &L.type_num, &L.byteorder, &L.writeable, &PyTuple_Type, &dtypes))
            goto done;
        Py_ssize_t offs[] = {L.data, L.nd, L.dims, L.strides, L.descr, L.flags, L.type_num, L.byteorder};
        for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++)
            if (offs[k] < (Py_ssize_t)sizeof(PyObject) || offs[k] > 256) {
                PyErr_SetString(PyExc_ValueError, "configure: an implausible array layout offset");
                goto done;
            }
        for (Py_ssize_t k = 0; k < PyTuple_Size(dtypes); k++) {
            int num, code, bits;
            if (!PyArg_ParseTuple(PyTuple_GetItem(dtypes, k), "iii", &num, &code, &bits)) goto done;
            if (num < 0 || num >= NP_MAX_TYPES || bits <= 0 || bits > 64 || bits % 8 || code < 0 || code > 255) {
                PyErr_SetString(PyExc_ValueError, "configure: an implausible array dtype entry");
                goto done;
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
    if (crec) {
        PyObject *void_p, *pointer;
        Py_ssize_t b_ptr;
        if (!PyArg_ParseTuple(crec, "O!O!n", &PyType_Type, &void_p, &PyType_Type, &pointer, &b_ptr)) goto done;
        if (b_ptr < (Py_ssize_t)sizeof(PyObject) || b_ptr > 256) {
            PyErr_SetString(PyExc_ValueError, "configure: an implausible ctypes layout offset");
            goto done;
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
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(trec);
    Py_XDECREF(arec);
    Py_XDECREF(crec);
    return result;
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
    /* the record fields init reads (tests/launch/test_spec.py checks them against cute_bind.launch.spec) */
    static const cb_export exports[] = {
        {"Launcher", &Launcher_spec},
        {"LAUNCH_SPEC_FIELDS", .fields = launch_spec_fields},
        {"SEQ_LEAF_FIELDS", .fields = seq_leaf_fields},
        {"TENSOR_SPEC_FIELDS", .fields = tensor_spec_fields},
        {"MODE_FIELDS", .fields = mode_fields},
        {"POINTER_SPEC_FIELDS", .fields = pointer_spec_fields},
        {"STREAM_SPEC_FIELDS", .fields = stream_spec_fields},
        {"NUMBER_SPEC_FIELDS", .fields = number_spec_fields},
        {"ARRAY_LAYOUT_FIELDS", .fields = array_layout_fields},
        {"CTYPES_LAYOUT_FIELDS", .fields = ctypes_layout_fields},
        {"TORCH_READER_FIELDS", .fields = torch_reader_fields},
    };
    return CB_MODULE_INIT(&moduledef, exports);
}
