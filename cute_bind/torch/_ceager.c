/*
 * Optional C eager call of a cute_bind.torch op (stable ABI, Python >= 3.10).
 *
 *   EagerCheck(spec).check(*tensors) -> int | None
 *   EagerCall(spec).call(*args, **kwargs) -> None
 *
 * An op's generated Python call (cute_bind/torch/custom_op.py) calls the
 * kernel directly when nothing else must see the call: no torch dispatch
 * mode, torch function mode or functorch transform active, every tensor input
 * exactly torch.Tensor or nn.Parameter, and no autograd to record (grad mode
 * off or no input requiring grad). Then it needs the stream: 0 for host
 * tensors (a meta tensor takes the registered op instead), else torch's
 * current stream of the tensors' device. Those are a handful of torch calls,
 * each cheap, with bytecode between them; this does the same checks in the
 * same order from C, given the op's plain tensor inputs (the first gives the
 * device), and returns the stream to launch on, or None where the Python call
 * must decide (it then makes every check again and takes the registered op,
 * raises, or launches, exactly as without this extension):
 *
 *   1. a value not exactly one of `tensor_types` -> None;
 *   2. any of `modes` (no-argument callables) true -> None;
 *   3. `grad_enabled()` true and any input's `requires_grad` true -> None;
 *   4. device = `get_device(tensors[0])`; below 0 (host): `is_meta` true ->
 *      None, else 0;
 *   5. with several visible devices (`current_device` not None), a current
 *      device other than the tensors' -> None (the Python call checks for a
 *      capture there, CB705); else `raw_stream(device)`, which must be an int.
 *
 * An Exception raised by any of these calls is cleared and gives None (the
 * Python call makes the same call and raises it with its own context); a
 * BaseException that is not an Exception (KeyboardInterrupt) propagates.
 *
 * Where the spec gives torch's DLPack exchange API (`reader`: its
 * dltensor_from_py_object_no_sync; `work_stream`: its current_work_stream,
 * both C functions of torch's, called with the GIL held), steps 4 and 5 read
 * the first tensor's device from its DLTensor view and the stream from
 * current_work_stream instead of two Python calls: a host tensor (kDLCPU)
 * gives 0, a CUDA tensor (kDLCUDA) its device id and that device's current
 * stream, anything else or a tensor the reader refuses (a meta tensor has no
 * DLTensor) None. Where it gives `grad_mode` (libtorch's
 * aoti_torch_grad_mode_is_enabled, a plain C function), step 3 reads grad
 * mode through it. cute_bind.torch.eager found them in torch's own table and
 * library and checked the reader and grad_mode against torch's answers
 * before building the spec.
 *
 * `requires_grad` and `is_meta` are the data descriptors torch.Tensor's
 * attributes resolve to (cute_bind.torch.eager checked that before building
 * the spec), read through their type's tp_descr_get: an attribute read
 * without the instance-dict and method-resolution-order look-ups.
 *
 * The spec is a frozen object read once by attribute (cute_bind.torch.eager
 * .EagerSpec, validated there and again here). What is read is owned until the
 * object is collected; nothing is changed after construction, so a call never
 * sees a half-built checker. `counts()` says how many calls returned a stream
 * and how many returned None (the tests check the path a call took).
 *
 * EagerCall is the whole eager call of a mutating op whose inputs are all
 * positional (plain tensors and other values) and whose kernel takes the
 * stream: a call of exactly `n` positional arguments is checked as above
 * (`check`, an EagerCheck, given the inputs at `tensors`), then the kernel is
 * called with `kernel_args` (per kernel parameter, in order: an input index,
 * -1 for the stream, or -2 - j for fixed[j]) and `bump` (torch's
 * _increment_version) is called with the inputs at `mutated`; it returns
 * None. Before the kernel, the tensors it writes are checked against torch's
 * in-place rules (writes_ok: no stride 0, no memory shared with another
 * written tensor or with part of an input; EagerCheck.writes is the same check
 * for the Python call). Everything else (keywords, another number of arguments,
 * a check that returned None, written tensors that may overlap: the Python
 * call raises CB708) is `fallback(*args, **kwargs)`, the op's generated
 * Python call, which decides as it always does. An error of the kernel
 * call or of the bump propagates as it would from the Python call.
 *
 * The GIL is held throughout; the arguments are the caller's, alive until
 * the call returns.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../launch/_cb_common.h" /* DLTensorC, cb_dltensor_reader, cb_decline, the DLPack device types */

#define EC_MAX_TYPES 8
#define EC_MAX_MODES 8
#define EC_MAX_ARGS 64 /* an op's inputs and its kernel's arguments on the C call */

/* METH_FASTCALL | METH_KEYWORDS (the typedef is not in the 3.10 limited API; the ABI is) */
typedef PyObject *(*fastcall_kw)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);

/* What an EagerCheck and an EagerCall both start with (EagerBase): whether init has read the spec,
 * and the calls taken in C and declined (to the Python path), for counts() */
#define EAGER_HEAD                                                                                                  \
    PyObject_HEAD                                                                                                   \
    int ready;                                                                                                      \
    unsigned long long taken, declined;

typedef struct {
    EAGER_HEAD
} EagerBase;

/* counts() of either type: (taken, declined) */
static PyObject *
eager_counts(PyObject *self, PyObject *unused)
{
    EagerBase *base = (EagerBase *)self;
    return Py_BuildValue("(KK)", base->taken, base->declined);
}

typedef struct {
    EAGER_HEAD
    Py_ssize_t ntypes, nmodes;
    PyObject *types[EC_MAX_TYPES];   /* owned */
    PyObject *modes[EC_MAX_MODES];   /* owned */
    PyObject *grad_enabled, *get_device, *raw_stream, *current_device; /* owned; current_device may be NULL */
    PyObject *requires_grad, *is_meta;                                  /* owned data descriptors */
    descrgetfunc requires_grad_get, is_meta_get;
    cb_dltensor_reader reader;                                          /* NULL: get_device and is_meta */
    int (*work_stream)(int32_t device_type, int32_t device_id, void **out); /* NULL: raw_stream */
    _Bool (*grad_mode)(void);                                           /* NULL: grad_enabled */
    PyObject *exchange;                                                 /* owned: what keeps reader and work_stream alive */
} EagerCheck;

/* A result's truth: 1, 0, or -1 with an exception set. Consumes `o` (NULL: the call raised). */
static int
truth(PyObject *o)
{
    if (o == NULL) return -1;
    int r = o == Py_True ? 1 : o == Py_False ? 0 : PyObject_IsTrue(o);
    Py_DECREF(o);
    return r;
}

/* The checks (see the top of this file). A new reference to the stream; Py_None (new
 * reference) where the Python call decides; NULL with a BaseException to propagate. */
static PyObject *
check(EagerCheck *self, PyObject *const *args, Py_ssize_t nargs)
{
    int r;
    PyObject *dev = NULL; /* get_device's answer (owned), passed to raw_stream as it is; released at decline */
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *tp = (PyObject *)Py_TYPE(args[i]);
        int known = 0;
        for (Py_ssize_t j = 0; j < self->ntypes && !known; j++) known = tp == self->types[j];
        if (!known) Py_RETURN_NONE;
    }
    for (Py_ssize_t m = 0; m < self->nmodes; m++) {
        if ((r = truth(PyObject_CallNoArgs(self->modes[m]))) != 0) goto decline;
    }
    r = self->grad_mode ? (int)self->grad_mode() : truth(PyObject_CallNoArgs(self->grad_enabled));
    if (r != 0) {
        if (r < 0) goto decline;
        for (Py_ssize_t i = 0; i < nargs; i++) {
            PyObject *t = args[i];
            if ((r = truth(self->requires_grad_get(self->requires_grad, t, (PyObject *)Py_TYPE(t)))) != 0) goto decline;
        }
    }
    PyObject *first = args[0];
    long long device;
    if (self->reader) {   /* steps 4 and 5 through the exchange API (see the top of this file) */
        DLTensorC dl;
        if (self->reader((void *)first, &dl) != 0) { /* refused: with an exception set, as a call that raised */
            r = PyErr_Occurred() ? -1 : 0;
            goto decline;
        }
        if (dl.device_type == CB_DL_CPU) return PyLong_FromLong(0);
        if (dl.device_type != CB_DL_CUDA || dl.device_id < 0) Py_RETURN_NONE;
        device = dl.device_id;
    } else {
        if ((dev = PyObject_CallFunctionObjArgs(self->get_device, first, NULL)) == NULL) {
            r = -1;
            goto decline;
        }
        device = PyLong_Check(dev) ? PyLong_AsLongLong(dev) : -2;
        if (device == -1 && PyErr_Occurred()) {
            r = -1;
            goto decline;
        }
        if (device < -1) { /* not an int (-2), or not a device index: the Python call decides */
            r = 0;
            goto decline;
        }
        if (device == -1) {
            Py_CLEAR(dev);
            if ((r = truth(self->is_meta_get(self->is_meta, first, (PyObject *)Py_TYPE(first)))) != 0) goto decline;
            return PyLong_FromLong(0);
        }
    }
    if (self->current_device != NULL) {
        PyObject *cur = PyObject_CallNoArgs(self->current_device);
        long long c = cur == NULL ? -1 : PyLong_Check(cur) ? PyLong_AsLongLong(cur) : -2;
        Py_XDECREF(cur);
        r = c == -1 && PyErr_Occurred() ? -1 : 0;
        if (r < 0 || c != device) goto decline;
    }
    if (self->reader) {
        void *s = NULL;
        if (self->work_stream(CB_DL_CUDA, (int32_t)device, &s) != 0) {
            r = PyErr_Occurred() ? -1 : 0;
            goto decline;
        }
        return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)s);
    }
    PyObject *stream = PyObject_CallFunctionObjArgs(self->raw_stream, dev, NULL);
    Py_CLEAR(dev);
    if (stream == NULL) {
        r = -1;
        goto decline;
    }
    if (!PyLong_Check(stream)) {
        Py_DECREF(stream);
        Py_RETURN_NONE;
    }
    return stream;
decline:
    Py_XDECREF(dev);
    if (r < 0 && cb_decline() < 0) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the written tensors (CB708)
 *
 * writes_ok(self, tensors, nmut, n): 1 where none of the first `nmut` tensors (the op writes them)
 * overlaps itself, another written tensor or part of one of the others, by torch's in-place rules
 * as cute_bind.torch.custom_op._writes_checker states them; 0 where one may (or a tensor cannot be
 * read through the exchange API, or there is no reader): the Python check decides, and raises.
 * Reads each tensor's DLTensor view (no Python call); an exception the reader set is cleared (an
 * Exception) or propagates (-1, a BaseException). */
#define EC_MAX_DIMS 16

typedef struct {
    uintptr_t lo, hi; /* [first byte, one past the last); lo == hi: empty */
    int32_t device_type, device_id;
    int dense, zero;
} Span;

/* 1: read; 0: cannot tell (the Python check decides); -1: a BaseException to propagate */
static int
span_of(EagerCheck *self, PyObject *t, Span *s)
{
    DLTensorC dl;
    if (self->reader((void *)t, &dl) != 0) return PyErr_Occurred() ? (cb_decline() < 0 ? -1 : 0) : 0;
    if (dl.ndim < 0 || dl.ndim > EC_MAX_DIMS || dl.bits == 0) return 0;
    int64_t item = ((int64_t)dl.bits * (dl.lanes ? dl.lanes : 1) + 7) / 8;
    int64_t lo = 0, hi = 0, numel = 1, row = 1;
    int64_t st[EC_MAX_DIMS], sz[EC_MAX_DIMS];
    int nd = 0, zero = 0;
    for (int d = dl.ndim - 1; d >= 0; d--) {
        int64_t n = dl.shape[d];
        int64_t stride = dl.strides ? dl.strides[d] : row; /* no strides: compact row-major */
        row *= n;
        if (n == 0) {
            s->lo = s->hi = 0;
            return 1;
        }
        numel *= n;
        if (n > 1) {
            if (stride == 0) zero = 1;
            if (stride < 0) lo += (n - 1) * stride;
            else hi += (n - 1) * stride;
            st[nd] = stride < 0 ? -stride : stride;
            sz[nd] = n;
            nd++;
        }
    }
    for (int i = 1; i < nd; i++) { /* by stride: a dense layout's strides are the running products of the extents */
        int64_t a = st[i], b = sz[i];
        int j = i - 1;
        while (j >= 0 && st[j] > a) {
            st[j + 1] = st[j];
            sz[j + 1] = sz[j];
            j--;
        }
        st[j + 1] = a;
        sz[j + 1] = b;
    }
    int dense = !zero && lo == 0;
    int64_t expected = 1;
    for (int i = 0; i < nd && dense; i++) {
        dense = st[i] == expected;
        expected *= sz[i];
    }
    uintptr_t base = (uintptr_t)dl.data + (uintptr_t)dl.byte_offset;
    s->lo = base + (uintptr_t)(lo * item);
    s->hi = base + (uintptr_t)((hi + 1) * item);
    s->device_type = dl.device_type;
    s->device_id = dl.device_id;
    s->dense = dense;
    s->zero = zero;
    (void)numel;
    return 1;
}

static int
writes_ok(EagerCheck *self, PyObject *const *tensors, Py_ssize_t nmut, Py_ssize_t n)
{
    Span spans[EC_MAX_ARGS];
    if (self->reader == NULL || n > EC_MAX_ARGS) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = span_of(self, tensors[i], &spans[i]);
        if (r <= 0) return r;
    }
    for (Py_ssize_t i = 0; i < nmut; i++) {
        Span *a = &spans[i];
        if (a->lo == a->hi) continue;
        if (a->zero) return 0;
        for (Py_ssize_t j = 0; j < n; j++) {
            Span *b = &spans[j];
            if (j == i || b->lo == b->hi || a->device_type != b->device_type || a->device_id != b->device_id) continue;
            if (a->hi <= b->lo || b->hi <= a->lo) continue;
            if (!(a->dense && b->dense)) continue;                    /* torch's "too hard": allowed */
            if (a->lo == b->lo && a->hi == b->hi && j >= nmut) continue; /* exactly an input: in place */
            return 0;
        }
    }
    return 1;
}

/* `selfobj` as the EagerCheck whose methods it calls, or NULL with RuntimeError before its init has read a spec */
static inline EagerCheck *
ready_check(PyObject *selfobj)
{
    EagerCheck *self = (EagerCheck *)selfobj;
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "EagerCheck is not initialised");
        return NULL;
    }
    return self;
}

static PyObject *
eager_check_writes(PyObject *selfobj, PyObject *const *args, Py_ssize_t nargs)
{
    EagerCheck *self = ready_check(selfobj);
    if (self == NULL) return NULL;
    Py_ssize_t nmut = nargs >= 1 && PyLong_Check(args[0]) ? PyLong_AsSsize_t(args[0]) : -1;
    if (nmut == -1 && PyErr_Occurred()) return NULL;
    if (nmut < 0 || nmut > nargs - 1) {
        PyErr_SetString(PyExc_TypeError, "EagerCheck.writes() takes the number of written tensors, then the written tensors and the others");
        return NULL;
    }
    int r = writes_ok(self, args + 1, nmut, nargs - 1);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

/* check(), counted in the checker's counts() (its caller keeps `self` alive) */
static PyObject *
counted_check(EagerCheck *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *res = check(self, args, nargs);
    if (res == Py_None) self->declined++;
    else if (res != NULL) self->taken++;
    return res;
}

static PyObject *
eager_check_check(PyObject *selfobj, PyObject *const *args, Py_ssize_t nargs)
{
    EagerCheck *self = ready_check(selfobj);
    if (self == NULL) return NULL;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "EagerCheck.check() takes the op's tensor inputs (at least one)");
        return NULL;
    }
    return counted_check(self, args, nargs); /* the arguments are the caller's: alive until we return */
}

/* spec.<name>: a tuple of 1..max items of `kind` (CB_TYPE or CB_CALLABLE), each stored (owned) in out; its length, or -1 */
static Py_ssize_t
read_tuple(PyObject *spec, const char *name, int kind, Py_ssize_t min, Py_ssize_t max, PyObject **out)
{
    PyObject *t = PyObject_GetAttrString(spec, name);
    if (t == NULL) return -1;
    Py_ssize_t n = PyTuple_Check(t) ? PyTuple_Size(t) : -1;
    if (n < min || n > max) {
        PyErr_Format(PyExc_TypeError, "EagerCheck spec: %s must be a tuple of %zd to %zd items", name, min, max);
        Py_DECREF(t);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GetItem(t, i);
        if (kind == CB_TYPE ? !PyType_Check(o) : !PyCallable_Check(o)) {
            PyErr_Format(PyExc_TypeError, "EagerCheck spec: %s[%zd] must be %s, got %R", name, i,
                         kind == CB_TYPE ? "a type" : "callable", (PyObject *)Py_TYPE(o));
            for (Py_ssize_t j = 0; j < i; j++) Py_CLEAR(out[j]);
            Py_DECREF(t);
            return -1;
        }
        Py_INCREF(o);
        out[i] = o;
    }
    Py_DECREF(t);
    return n;
}

/* spec.<name>: a C function's address, an int in [0, 2**64) (0: none); -1 with an exception */
static int
read_address(PyObject *spec, const char *name, void **out)
{
    PyObject *o = PyObject_GetAttrString(spec, name);
    if (o == NULL) return -1;
    unsigned long long a = PyLong_Check(o) && !PyBool_Check(o) ? PyLong_AsUnsignedLongLong(o) : (unsigned long long)-1;
    Py_DECREF(o);
    if (a == (unsigned long long)-1) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "EagerCheck spec: %s must be a function's address, an int in [0, 2**64)", name);
        }
        return -1;
    }
    *out = (void *)(uintptr_t)a;
    return 0;
}

static int
eager_check_init(PyObject *selfobj, PyObject *args, PyObject *kwargs)
{
    EagerCheck *self = (EagerCheck *)selfobj;
    PyObject *spec;
    if (cb_no_keywords(kwargs, "EagerCheck.__init__() takes no keyword arguments") < 0 ||
        !PyArg_ParseTuple(args, "O:EagerCheck", &spec) ||
        cb_init_once(self->ready || self->ntypes || self->grad_enabled, "EagerCheck") < 0)
        return -1;
    Py_ssize_t nt = read_tuple(spec, "tensor_types", CB_TYPE, 1, EC_MAX_TYPES, self->types);
    if (nt < 0) return -1;
    self->ntypes = nt;
    Py_ssize_t nm = read_tuple(spec, "modes", CB_CALLABLE, 0, EC_MAX_MODES, self->modes);
    if (nm < 0) return -1;
    self->nmodes = nm;
    if (!(self->grad_enabled = cb_field(spec, "EagerCheck spec", "grad_enabled", CB_CALLABLE))) return -1;
    if (!(self->get_device = cb_field(spec, "EagerCheck spec", "get_device", CB_CALLABLE))) return -1;
    if (!(self->raw_stream = cb_field(spec, "EagerCheck spec", "raw_stream", CB_CALLABLE))) return -1;
    PyObject *cur = cb_field(spec, "EagerCheck spec", "current_device", CB_CALLABLE | CB_OR_NONE);
    if (cur == NULL) return -1;
    if (cur == Py_None) Py_DECREF(cur);
    else self->current_device = cur;
    if (!(self->requires_grad = cb_field(spec, "EagerCheck spec", "requires_grad", CB_DESCRIPTOR))) return -1;
    if (!(self->is_meta = cb_field(spec, "EagerCheck spec", "is_meta", CB_DESCRIPTOR))) return -1;
    void *reader, *work_stream, *grad_mode;
    if (read_address(spec, "reader", &reader) < 0 || read_address(spec, "work_stream", &work_stream) < 0 ||
        read_address(spec, "grad_mode", &grad_mode) < 0)
        return -1;
    PyObject *exchange = PyObject_GetAttrString(spec, "exchange");
    if (exchange == NULL) return -1;
    if ((reader == NULL) != (work_stream == NULL) || (reader != NULL) == (exchange == Py_None)) {
        PyErr_SetString(PyExc_ValueError, "EagerCheck spec: reader, work_stream and exchange come together (all, or 0, 0 and None)");
        Py_DECREF(exchange);
        return -1;
    }
    self->exchange = exchange;
    memcpy(&self->reader, &reader, sizeof reader); /* object to function pointer: the address torch's table gave */
    memcpy(&self->work_stream, &work_stream, sizeof work_stream);
    memcpy(&self->grad_mode, &grad_mode, sizeof grad_mode);
    self->requires_grad_get = (descrgetfunc)PyType_GetSlot(Py_TYPE(self->requires_grad), Py_tp_descr_get);
    self->is_meta_get = (descrgetfunc)PyType_GetSlot(Py_TYPE(self->is_meta), Py_tp_descr_get);
    self->ready = 1;
    return 0;
}

/* What an EagerCheck owns besides its types, its modes and `exchange` (which keeps its function
 * pointers alive, so it is cleared last) */
#define EAGER_CHECK_REFS(X, o) X(o, grad_enabled) X(o, get_device) X(o, raw_stream) X(o, current_device) X(o, requires_grad) X(o, is_meta)

static int
eager_check_traverse(PyObject *selfobj, visitproc visit, void *arg)
{
    EagerCheck *self = (EagerCheck *)selfobj;
    int r = cb_visit_array(self->types, self->ntypes, visit, arg);
    if (r || (r = cb_visit_array(self->modes, self->nmodes, visit, arg))) return r;
    EAGER_CHECK_REFS(CB_VISIT_REF, self)
    Py_VISIT(self->exchange);
    Py_VISIT((PyObject *)Py_TYPE(selfobj)); /* heap type */
    return 0;
}

static int
eager_check_clear(PyObject *selfobj)
{
    EagerCheck *self = (EagerCheck *)selfobj;
    self->ready = 0; /* a call during clearing sees no fields */
    cb_clear_array(self->types, self->ntypes);
    cb_clear_array(self->modes, self->nmodes);
    EAGER_CHECK_REFS(CB_CLEAR_REF, self)
    self->reader = NULL; /* what keeps them alive goes next */
    self->work_stream = NULL;
    self->grad_mode = NULL;
    Py_CLEAR(self->exchange);
    return 0;
}

static PyMethodDef eager_check_methods[] = {
    {"check", (PyCFunction)(void (*)(void))eager_check_check, METH_FASTCALL,
     "check($self, /, *tensors)\n--\n\nThe stream the op's kernel launches on, or None where the Python call decides."},
    {"counts", eager_counts, METH_NOARGS,
     "counts($self, /)\n--\n\n(taken, declined): calls that returned a stream, calls that returned None."},
    {"writes", (PyCFunction)(void (*)(void))eager_check_writes, METH_FASTCALL,
     "writes($self, nmut, /, *tensors)\n--\n\nTrue where none of the first nmut tensors (written) overlaps itself, "
     "another written one or part of another; False where the Python check decides."},
    {NULL, NULL, 0, NULL},
};

CB_TYPE_SPEC(eager_check, "cute_bind.torch._ceager.EagerCheck", EagerCheck, Py_TPFLAGS_HAVE_GC,
             CB_INIT_GC_SLOTS(eager_check_init, cb_gc_dealloc, eager_check_traverse, eager_check_clear, eager_check_methods),
             {Py_tp_doc, "EagerCheck(spec).check(*tensors) -> stream or None: the eager checks of a cute_bind.torch op, in C."});


/* ------------------------------------------------------------------ EagerCall */

typedef struct {
    EAGER_HEAD
    Py_ssize_t n;                     /* positional inputs: exactly n given */
    Py_ssize_t nt, tidx[EC_MAX_ARGS]; /* the plain tensor inputs (>= 1), in order */
    Py_ssize_t nmut, midx[EC_MAX_ARGS];
    Py_ssize_t nk, ksrc[EC_MAX_ARGS]; /* >= 0: input index; -1: the stream; -2 - j: fixed[j] */
    PyObject *check;                  /* owned EagerCheck */
    PyObject *fixed;                  /* owned tuple */
    PyObject *kernel, *bump, *fallback;
} EagerCall;

static PyObject *EagerCheck_Type; /* set at module init (held for the life of the process) */

/* fallback(*args, **kwargs) with the call's own arguments */
static PyObject *
to_fallback(EagerCall *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    self->declined++;
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    PyObject *tuple = PyTuple_New(nargs), *kw = NULL, *res = NULL;
    if (tuple == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SetItem(tuple, i, args[i]);
    }
    if (nkw) {
        if ((kw = PyDict_New()) == NULL) goto done;
        for (Py_ssize_t j = 0; j < nkw; j++) {
            if (PyDict_SetItem(kw, PyTuple_GetItem(kwnames, j), args[nargs + j]) < 0) goto done;
        }
    }
    PyObject *fallback = self->fallback;
    Py_INCREF(fallback); /* alive through the call whatever it does */
    res = PyObject_Call(fallback, tuple, kw);
    Py_DECREF(fallback);
done:
    Py_DECREF(tuple);
    Py_XDECREF(kw);
    return res;
}

/* bump(tuple of the mutated inputs), where there are any: 0, or -1 with its exception */
static int
bump_mutated(EagerCall *self, PyObject *const *args)
{
    if (!self->nmut) return 0;
    PyObject *mut = PyTuple_New(self->nmut);
    if (mut == NULL) return -1;
    for (Py_ssize_t i = 0; i < self->nmut; i++) {
        Py_INCREF(args[self->midx[i]]);
        PyTuple_SetItem(mut, i, args[self->midx[i]]);
    }
    PyObject *bump = self->bump;
    Py_INCREF(bump);
    PyObject *res = PyObject_CallFunctionObjArgs(bump, mut, NULL);
    Py_DECREF(bump);
    Py_DECREF(mut);
    if (res == NULL) return -1;
    Py_DECREF(res);
    return 0;
}

static PyObject *
eager_call_call(PyObject *selfobj, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    EagerCall *self = (EagerCall *)selfobj;
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "EagerCall is not initialised");
        return NULL;
    }
    if ((kwnames != NULL && PyTuple_Size(kwnames) != 0) || nargs != self->n) return to_fallback(self, args, nargs, kwnames);
    PyObject *tensors[EC_MAX_ARGS];
    for (Py_ssize_t i = 0; i < self->nt; i++) tensors[i] = args[self->tidx[i]];
    PyObject *checker = self->check;
    Py_INCREF(checker);
    PyObject *stream = counted_check((EagerCheck *)checker, tensors, self->nt);
    Py_DECREF(checker);
    if (stream == NULL) return NULL;
    if (stream == Py_None) {
        Py_DECREF(stream);
        return to_fallback(self, args, nargs, NULL);
    }
    if (self->nmut) { /* the written tensors first, then the other tensor inputs (CB708: the Python call raises it) */
        PyObject *order[EC_MAX_ARGS];
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < self->nmut; i++) order[k++] = args[self->midx[i]];
        for (Py_ssize_t i = 0; i < self->nt; i++) {
            int written = 0;
            for (Py_ssize_t j = 0; j < self->nmut && !written; j++) written = self->midx[j] == self->tidx[i];
            if (!written) order[k++] = args[self->tidx[i]];
        }
        int ok = writes_ok((EagerCheck *)self->check, order, self->nmut, k);
        if (ok <= 0) {
            Py_DECREF(stream);
            if (ok < 0) return NULL;
            return to_fallback(self, args, nargs, NULL);
        }
    }
    PyObject *kargs = PyTuple_New(self->nk);
    if (kargs == NULL) {
        Py_DECREF(stream);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < self->nk; k++) {
        Py_ssize_t src = self->ksrc[k];
        PyObject *v = src >= 0 ? args[src] : src == -1 ? stream : PyTuple_GetItem(self->fixed, -2 - src);
        Py_INCREF(v);
        PyTuple_SetItem(kargs, k, v);
    }
    Py_DECREF(stream);
    PyObject *kernel = self->kernel;
    Py_INCREF(kernel);
    PyObject *res = PyObject_Call(kernel, kargs, NULL);
    Py_DECREF(kargs);
    Py_DECREF(kernel);
    if (res == NULL) return NULL;
    Py_DECREF(res);
    if (bump_mutated(self, args) < 0) return NULL; /* after the kernel, as the Python call and torch's dispatcher bump */
    self->taken++;
    Py_RETURN_NONE;
}

/* spec.<name> as a tuple of at most EC_MAX_ARGS ints in [lo, hi) into out; its length, or -1 */
static Py_ssize_t
read_indices(PyObject *spec, const char *name, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t *out)
{
    PyObject *t = PyObject_GetAttrString(spec, name);
    if (t == NULL) return -1;
    Py_ssize_t n = -1;
    if (!PyTuple_Check(t) || PyTuple_Size(t) > EC_MAX_ARGS) {
        PyErr_Format(PyExc_TypeError, "EagerCall spec: %s must be a tuple of at most %d ints", name, EC_MAX_ARGS);
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_Size(t); i++) {
        PyObject *item = PyTuple_GetItem(t, i);
        int is_int = PyLong_Check(item) && !PyBool_Check(item);
        Py_ssize_t v = is_int ? PyLong_AsSsize_t(item) : -1;
        if (v == -1 && PyErr_Occurred()) goto done;
        if (!is_int || v < lo || v >= hi) {
            PyErr_Format(PyExc_ValueError, "EagerCall spec: %s[%zd] is not in [%zd, %zd)", name, i, lo, hi);
            goto done;
        }
        out[i] = v;
    }
    n = PyTuple_Size(t);
done:
    Py_DECREF(t);
    return n;
}

static int
eager_call_init(PyObject *selfobj, PyObject *args, PyObject *kwargs)
{
    EagerCall *self = (EagerCall *)selfobj;
    PyObject *spec;
    if (cb_no_keywords(kwargs, "EagerCall.__init__() takes no keyword arguments") < 0 ||
        !PyArg_ParseTuple(args, "O:EagerCall", &spec) || cb_init_once(self->ready || self->check != NULL, "EagerCall") < 0)
        return -1;
    PyObject *nobj = PyObject_GetAttrString(spec, "n");
    if (nobj == NULL) return -1;
    Py_ssize_t n = PyLong_Check(nobj) && !PyBool_Check(nobj) ? PyLong_AsSsize_t(nobj) : -1;
    Py_DECREF(nobj);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n < 1 || n > EC_MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "EagerCall spec: n must be an int in [1, %d]", EC_MAX_ARGS);
        return -1;
    }
    self->n = n;
    if ((self->nt = read_indices(spec, "tensors", 0, n, self->tidx)) < 0) return -1;
    if (self->nt < 1) {
        PyErr_SetString(PyExc_ValueError, "EagerCall spec: tensors must name at least one input (the device comes from the first)");
        return -1;
    }
    if ((self->nmut = read_indices(spec, "mutated", 0, n, self->midx)) < 0) return -1;
    for (Py_ssize_t i = 0; i < self->nmut; i++) { /* only tensors have a version to bump */
        int found = 0;
        for (Py_ssize_t j = 0; j < self->nt && !found; j++) found = self->tidx[j] == self->midx[i];
        if (!found) {
            PyErr_Format(PyExc_ValueError, "EagerCall spec: mutated[%zd] is not a tensor input", i);
            return -1;
        }
    }
    PyObject *fixed = PyObject_GetAttrString(spec, "fixed");
    if (fixed == NULL) return -1;
    if (!PyTuple_Check(fixed) || PyTuple_Size(fixed) > EC_MAX_ARGS) {
        PyErr_Format(PyExc_TypeError, "EagerCall spec: fixed must be a tuple of at most %d values", EC_MAX_ARGS);
        Py_DECREF(fixed);
        return -1;
    }
    self->fixed = fixed;
    if ((self->nk = read_indices(spec, "kernel_args", -2 - PyTuple_Size(fixed) + 1, n, self->ksrc)) < 0) return -1;
    Py_ssize_t streams = 0;
    for (Py_ssize_t k = 0; k < self->nk; k++) streams += self->ksrc[k] == -1;
    if (streams != 1) {
        PyErr_SetString(PyExc_ValueError, "EagerCall spec: kernel_args must pass the stream (-1) exactly once");
        return -1;
    }
    PyObject *chk = PyObject_GetAttrString(spec, "check");
    if (chk == NULL) return -1;
    if (!PyObject_TypeCheck(chk, (PyTypeObject *)EagerCheck_Type) || !((EagerCheck *)chk)->ready) {
        PyErr_Format(PyExc_TypeError, "EagerCall spec: check must be an initialised EagerCheck, got %R", (PyObject *)Py_TYPE(chk));
        Py_DECREF(chk);
        return -1;
    }
    self->check = chk;
    if (!(self->kernel = cb_field(spec, "EagerCall spec", "kernel", CB_CALLABLE))) return -1;
    if (!(self->bump = cb_field(spec, "EagerCall spec", "bump", CB_CALLABLE))) return -1;
    if (!(self->fallback = cb_field(spec, "EagerCall spec", "fallback", CB_CALLABLE))) return -1;
    self->ready = 1;
    return 0;
}

/* What an EagerCall owns */
#define EAGER_CALL_REFS(X, o) X(o, check) X(o, fixed) X(o, kernel) X(o, bump) X(o, fallback)

static int
eager_call_traverse(PyObject *selfobj, visitproc visit, void *arg)
{
    EagerCall *self = (EagerCall *)selfobj;
    EAGER_CALL_REFS(CB_VISIT_REF, self)
    Py_VISIT((PyObject *)Py_TYPE(selfobj));
    return 0;
}

static int
eager_call_clear(PyObject *selfobj)
{
    EagerCall *self = (EagerCall *)selfobj;
    self->ready = 0;
    EAGER_CALL_REFS(CB_CLEAR_REF, self)
    return 0;
}

static PyMethodDef eager_call_methods[] = {
    {"call", (PyCFunction)(void (*)(void))(fastcall_kw)eager_call_call, METH_FASTCALL | METH_KEYWORDS,
     "call($self, /, *args, **kwargs)\n--\n\nThe op's eager call: the kernel launched here, or the op's Python call."},
    {"counts", eager_counts, METH_NOARGS,
     "counts($self, /)\n--\n\n(taken, declined): calls that launched here, calls that went to the Python call."},
    {NULL, NULL, 0, NULL},
};

CB_TYPE_SPEC(eager_call, "cute_bind.torch._ceager.EagerCall", EagerCall, Py_TPFLAGS_HAVE_GC,
             CB_INIT_GC_SLOTS(eager_call_init, cb_gc_dealloc, eager_call_traverse, eager_call_clear, eager_call_methods),
             {Py_tp_doc, "EagerCall(spec).call(*args, **kwargs): the eager call of a cute_bind.torch op, in C."});

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_ceager",
    "The eager checks of a cute_bind.torch op in C (optional; see cute_bind.torch.eager).", -1, NULL,
};

PyMODINIT_FUNC
PyInit__ceager(void)
{
    static const cb_export exports[] = {
        {"EagerCheck", &eager_check_spec, &EagerCheck_Type},
        {"EagerCall", &eager_call_spec},
    };
    return CB_MODULE_INIT(&moduledef, exports);
}
