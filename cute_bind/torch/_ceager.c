/*
 * Optional C eager call of a cute_bind.torch op (stable ABI, Python >= 3.10).
 *
 *   EagerOp(spec).call(*args, **kwargs)
 *
 * The op's generated Python __call__ (cute_bind/torch/custom_op.py) decides per
 * call whether the kernel may be called directly (no tracer, no mode, no
 * autograd) and then calls it on torch's current stream. For the common call
 * (every positional input given, no keywords, plain tensors) this does the same
 * in C, so the interpreter runs no bytecode between torch's entry points:
 *
 *   1. any torch dispatch mode, torch function mode or functorch transform
 *      active -> the Python call (which takes the registered op);
 *   2. a tensor input that is not exactly torch.Tensor or nn.Parameter, or
 *      grad mode on and a tensor input requiring grad -> the Python call;
 *   3. the first tensor's device: -1 (host) is stream 0 unless the tensor is
 *      a meta tensor (-> the Python call); else torch's current raw stream of
 *      that device, and with several visible devices a capture on another
 *      current device -> the Python call (which raises CB705). A kernel
 *      without a stream parameter calls default_stream_only(device) instead,
 *      which raises CB705 unless torch's current stream is the default one;
 *   4. kernel(*kernel_args), the inputs, fixed values and the stream in the
 *      kernel's parameter order; then _increment_version of the mutated
 *      inputs; returns None.
 *
 * Anything else (keywords, missing or extra arguments) goes to the Python call
 * with the arguments as given, which binds them and raises kernel(...)'s
 * errors. The tracer check of the Python call (torch.compiler's
 * is_dynamo_compiling) is not made here: under torch.compile the op's Python
 * call is inlined in this function's place (custom_op.py registers it with
 * torch.compiler.substitute_in_graph), so this code runs eagerly only.
 *
 * The spec is a frozen object read once by attribute (cute_bind.torch.custom_op
 * .EagerSpec, validated there and again here): n, tensors, mutated,
 * kernel_args, fixed, kernel, fallback, tensor_types, the torch entry points
 * (dispatch_modes, function_modes, functorch, grad_enabled, bump, raw_stream,
 * current_device, capturing, get_device), default_stream_only (None for a
 * kernel with a stream parameter) and several_devices.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define CE_MAX 64 /* inputs and kernel arguments an op may have on this path */

#define CE_XSETREF(dst, src)     \
    do {                         \
        PyObject *_old = (dst);  \
        (dst) = (src);           \
        Py_XDECREF(_old);        \
    } while (0)

typedef struct {
    PyObject_HEAD
    int ready;
    Py_ssize_t n;                   /* positional inputs: exactly n given */
    Py_ssize_t nt;                  /* plain tensor inputs (>= 1) */
    Py_ssize_t tidx[CE_MAX];        /* their input indices; tidx[0] gives the device */
    Py_ssize_t nmut;                /* mutated tensor inputs */
    Py_ssize_t midx[CE_MAX];
    Py_ssize_t nk;                  /* kernel arguments */
    Py_ssize_t ksrc[CE_MAX];        /* >= 0: input index; -1: the stream; -2 - j: fixed[j] */
    int several;                    /* more than one visible CUDA device */
    PyObject *fixed;                /* tuple */
    PyObject *kernel, *fallback, *tensor_t, *param_t;
    PyObject *dispatch_modes, *function_modes, *functorch, *grad_enabled;
    PyObject *bump, *raw_stream, *current_device, *capturing, *get_device;
    PyObject *default_stream_only; /* a kernel without a stream parameter: raises unless the current stream is 0 (else NULL) */
} EagerOp;

static PyObject *s_requires_grad, *s_is_meta;

/* fn() as a truth value: 1, 0, or -1 with an exception set */
static int
truthy(PyObject *fn)
{
    PyObject *o = PyObject_CallNoArgs(fn);
    if (o == NULL) return -1;
    int r = PyObject_IsTrue(o);
    Py_DECREF(o);
    return r;
}

/* t.<name> as a truth value: 1, 0, or -1 with an exception set */
static int
attr_true(PyObject *t, PyObject *name)
{
    PyObject *o = PyObject_GetAttr(t, name);
    if (o == NULL) return -1;
    int r = PyObject_IsTrue(o);
    Py_DECREF(o);
    return r;
}

/* The Python call with the arguments as given (its first parameter, the op object, is unused: None). */
static PyObject *
go_python(EagerOp *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    PyObject *tuple = PyTuple_New(nargs + 1), *kw = NULL, *res = NULL;
    if (tuple == NULL) return NULL;
    Py_INCREF(Py_None);
    PyTuple_SetItem(tuple, 0, Py_None);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SetItem(tuple, i + 1, args[i]);
    }
    if (nkw) {
        kw = PyDict_New();
        if (kw == NULL) goto done;
        for (Py_ssize_t j = 0; j < nkw; j++) {
            if (PyDict_SetItem(kw, PyTuple_GetItem(kwnames, j), args[nargs + j]) < 0) goto done;
        }
    }
    PyObject *fallback = self->fallback;
    Py_INCREF(fallback);
    res = PyObject_Call(fallback, tuple, kw);
    Py_DECREF(fallback);
done:
    Py_DECREF(tuple);
    Py_XDECREF(kw);
    return res;
}

static PyObject *
eager_call(PyObject *selfobj, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    EagerOp *self = (EagerOp *)selfobj;
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "EagerOp is not initialised");
        return NULL;
    }
    if (kwnames != NULL || nargs != self->n) return go_python(self, args, nargs, kwnames);
    int r;
    if ((r = truthy(self->dispatch_modes)) != 0 || (r = truthy(self->function_modes)) != 0 || (r = truthy(self->functorch)) != 0)
        return r < 0 ? NULL : go_python(self, args, nargs, NULL);
    for (Py_ssize_t i = 0; i < self->nt; i++) {
        PyTypeObject *tp = Py_TYPE(args[self->tidx[i]]);
        if ((PyObject *)tp != self->tensor_t && (PyObject *)tp != self->param_t) return go_python(self, args, nargs, NULL);
    }
    if ((r = truthy(self->grad_enabled)) != 0) {
        if (r < 0) return NULL;
        for (Py_ssize_t i = 0; i < self->nt; i++) {
            if ((r = attr_true(args[self->tidx[i]], s_requires_grad)) != 0) return r < 0 ? NULL : go_python(self, args, nargs, NULL);
        }
    }
    PyObject *first = args[self->tidx[0]];
    PyObject *dev = PyObject_CallFunctionObjArgs(self->get_device, first, NULL);
    if (dev == NULL) return NULL;
    long long device = PyLong_AsLongLong(dev);
    if (device == -1 && PyErr_Occurred()) {
        Py_DECREF(dev);
        return NULL;
    }
    PyObject *stream;
    if (device < 0) {
        Py_DECREF(dev);
        if ((r = attr_true(first, s_is_meta)) != 0) return r < 0 ? NULL : go_python(self, args, nargs, NULL);
        stream = PyLong_FromLong(0);
    } else if (self->default_stream_only != NULL) {
        /* no stream parameter: the kernel launches on the default stream, so it must be torch's current one */
        PyObject *ok = PyObject_CallFunctionObjArgs(self->default_stream_only, dev, NULL);
        Py_DECREF(dev);
        if (ok == NULL) return NULL;
        Py_DECREF(ok);
        stream = PyLong_FromLong(0);
    } else {
        stream = PyObject_CallFunctionObjArgs(self->raw_stream, dev, NULL);
        if (stream != NULL && self->several) {
            /* a capture on another current device than the tensors': the Python call raises CB705 */
            PyObject *cur = PyObject_CallNoArgs(self->current_device);
            int other = cur == NULL ? -1 : PyObject_RichCompareBool(cur, dev, Py_NE);
            Py_XDECREF(cur);
            if (other > 0) other = truthy(self->capturing);
            if (other != 0) {
                Py_DECREF(dev);
                Py_DECREF(stream);
                return other < 0 ? NULL : go_python(self, args, nargs, NULL);
            }
        }
        Py_DECREF(dev);
    }
    if (stream == NULL) return NULL;
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
    Py_DECREF(kernel);
    Py_DECREF(kargs);
    if (res == NULL) return NULL;
    Py_DECREF(res);
    if (self->nmut) {
        PyObject *mut = PyTuple_New(self->nmut);
        if (mut == NULL) return NULL;
        for (Py_ssize_t i = 0; i < self->nmut; i++) {
            Py_INCREF(args[self->midx[i]]);
            PyTuple_SetItem(mut, i, args[self->midx[i]]);
        }
        PyObject *b = PyObject_CallFunctionObjArgs(self->bump, mut, NULL);
        Py_DECREF(mut);
        if (b == NULL) return NULL;
        Py_DECREF(b);
    }
    Py_RETURN_NONE;
}

/* spec.<name> as a tuple of indices in [lo, hi) into out[CE_MAX]; its length, or -1 with an exception */
static Py_ssize_t
read_indices(PyObject *spec, const char *name, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t *out)
{
    PyObject *t = PyObject_GetAttrString(spec, name);
    if (t == NULL) return -1;
    Py_ssize_t n = -1;
    if (!PyTuple_Check(t) || PyTuple_Size(t) > CE_MAX) {
        PyErr_Format(PyExc_ValueError, "EagerOp spec: %s must be a tuple of at most %d ints", name, CE_MAX);
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_Size(t); i++) {
        PyObject *item = PyTuple_GetItem(t, i);
        int is_int = PyLong_Check(item) && !PyBool_Check(item);
        Py_ssize_t v = is_int ? PyLong_AsSsize_t(item) : -1;
        if (v == -1 && PyErr_Occurred()) goto done;
        if (!is_int || v < lo || v >= hi) {
            PyErr_Format(PyExc_ValueError, "EagerOp spec: %s[%zd] out of range [%zd, %zd)", name, i, lo, hi);
            goto done;
        }
        out[i] = v;
    }
    n = PyTuple_Size(t);
done:
    Py_DECREF(t);
    return n;
}

/* spec.<name>, a new reference; must be callable (or a type, for `type`) */
static PyObject *
read_object(PyObject *spec, const char *name, int type)
{
    PyObject *o = PyObject_GetAttrString(spec, name);
    if (o == NULL) return NULL;
    if (type ? !PyType_Check(o) : !PyCallable_Check(o)) {
        PyErr_Format(PyExc_TypeError, "EagerOp spec: %s must be %s, got %R", name, type ? "a type" : "callable", (PyObject *)Py_TYPE(o));
        Py_DECREF(o);
        return NULL;
    }
    return o;
}

static int
eager_init(PyObject *selfobj, PyObject *args, PyObject *kwargs)
{
    EagerOp *self = (EagerOp *)selfobj;
    PyObject *spec;
    if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "EagerOp() takes no keyword arguments");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O:EagerOp", &spec)) return -1;
    if (self->ready || self->kernel != NULL) { /* a running call reads the fields: they are set once */
        PyErr_SetString(PyExc_TypeError, "EagerOp cannot be initialised twice");
        return -1;
    }
    PyObject *nobj = PyObject_GetAttrString(spec, "n");
    if (nobj == NULL) return -1;
    Py_ssize_t n = PyLong_Check(nobj) ? PyLong_AsSsize_t(nobj) : -1;
    Py_DECREF(nobj);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n < 1 || n > CE_MAX) {
        PyErr_Format(PyExc_ValueError, "EagerOp spec: n must be an int in [1, %d]", CE_MAX);
        return -1;
    }
    Py_ssize_t nt = read_indices(spec, "tensors", 0, n, self->tidx);
    if (nt < 0) return -1;
    Py_ssize_t nmut = read_indices(spec, "mutated", 0, n, self->midx);
    if (nmut < 0) return -1;
    for (Py_ssize_t i = 0; i < nmut; i++) { /* only tensors have a version to bump */
        int found = 0;
        for (Py_ssize_t j = 0; j < nt; j++) found |= self->midx[i] == self->tidx[j];
        if (!found) {
            PyErr_SetString(PyExc_ValueError, "EagerOp spec: a mutated input that is not a tensor input");
            return -1;
        }
    }
    PyObject *fixed = PyObject_GetAttrString(spec, "fixed");
    if (fixed == NULL) return -1;
    if (!PyTuple_Check(fixed)) {
        PyErr_SetString(PyExc_TypeError, "EagerOp spec: fixed must be a tuple");
        Py_DECREF(fixed);
        return -1;
    }
    Py_ssize_t nk = read_indices(spec, "kernel_args", -2 - PyTuple_Size(fixed) + 1, n, self->ksrc);
    if (nk < 0 || nt < 1) {
        if (nk >= 0) PyErr_SetString(PyExc_ValueError, "EagerOp spec: an op without a plain tensor input has no C call");
        Py_DECREF(fixed);
        return -1;
    }
    PyObject *dso = PyObject_GetAttrString(spec, "default_stream_only");
    if (dso == NULL) {
        Py_DECREF(fixed);
        return -1;
    }
    int has_stream = 0;
    for (Py_ssize_t k = 0; k < nk; k++) has_stream |= self->ksrc[k] == -1;
    if (dso == Py_None ? !has_stream : (has_stream || !PyCallable_Check(dso))) {
        PyErr_SetString(PyExc_ValueError, "EagerOp spec: default_stream_only must be callable exactly when no kernel argument is the stream");
        Py_DECREF(dso);
        Py_DECREF(fixed);
        return -1;
    }
    if (dso == Py_None) {
        Py_DECREF(dso);
        dso = NULL;
    }
    PyObject *several = PyObject_GetAttrString(spec, "several_devices");
    int sev = several == NULL ? -1 : PyObject_IsTrue(several);
    Py_XDECREF(several);
    if (sev < 0) {
        Py_XDECREF(dso);
        Py_DECREF(fixed);
        return -1;
    }
    const char *callables[] = {"kernel", "fallback", "dispatch_modes", "function_modes", "functorch", "grad_enabled",
                               "bump", "raw_stream", "current_device", "capturing", "get_device"};
    PyObject *got[11] = {NULL};
    PyObject *types = NULL;
    for (int i = 0; i < 11; i++) {
        got[i] = read_object(spec, callables[i], 0);
        if (got[i] == NULL) goto fail;
    }
    types = PyObject_GetAttrString(spec, "tensor_types");
    if (types == NULL) goto fail;
    if (!PyTuple_Check(types) || PyTuple_Size(types) != 2 || !PyType_Check(PyTuple_GetItem(types, 0)) || !PyType_Check(PyTuple_GetItem(types, 1))) {
        PyErr_SetString(PyExc_TypeError, "EagerOp spec: tensor_types must be (torch.Tensor, torch.nn.Parameter)");
        goto fail;
    }
    self->n = n;
    self->nt = nt;
    self->nmut = nmut;
    self->nk = nk;
    self->several = sev;
    CE_XSETREF(self->fixed, fixed);
    PyObject **slots[] = {&self->kernel, &self->fallback, &self->dispatch_modes, &self->function_modes, &self->functorch,
                          &self->grad_enabled, &self->bump, &self->raw_stream, &self->current_device, &self->capturing,
                          &self->get_device};
    for (int i = 0; i < 11; i++) CE_XSETREF(*slots[i], got[i]);
    Py_INCREF(PyTuple_GetItem(types, 0));
    Py_INCREF(PyTuple_GetItem(types, 1));
    CE_XSETREF(self->tensor_t, PyTuple_GetItem(types, 0));
    CE_XSETREF(self->param_t, PyTuple_GetItem(types, 1));
    Py_DECREF(types);
    CE_XSETREF(self->default_stream_only, dso);
    self->ready = 1;
    return 0;
fail:
    for (int i = 0; i < 11; i++) Py_XDECREF(got[i]);
    Py_XDECREF(types);
    Py_XDECREF(dso);
    Py_DECREF(fixed);
    return -1;
}

static int
eager_traverse(PyObject *selfobj, visitproc visit, void *arg)
{
    EagerOp *self = (EagerOp *)selfobj;
    Py_VISIT(self->fixed);
    Py_VISIT(self->kernel);
    Py_VISIT(self->fallback);
    Py_VISIT(self->tensor_t);
    Py_VISIT(self->param_t);
    Py_VISIT(self->dispatch_modes);
    Py_VISIT(self->function_modes);
    Py_VISIT(self->functorch);
    Py_VISIT(self->grad_enabled);
    Py_VISIT(self->bump);
    Py_VISIT(self->raw_stream);
    Py_VISIT(self->current_device);
    Py_VISIT(self->capturing);
    Py_VISIT(self->get_device);
    Py_VISIT(self->default_stream_only);
    Py_VISIT((PyObject *)Py_TYPE(selfobj));
    return 0;
}

static int
eager_clear(PyObject *selfobj)
{
    EagerOp *self = (EagerOp *)selfobj;
    self->ready = 0; /* a call reaching a cleared op raises instead of reading NULL */
    Py_CLEAR(self->fixed);
    Py_CLEAR(self->kernel);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->tensor_t);
    Py_CLEAR(self->param_t);
    Py_CLEAR(self->dispatch_modes);
    Py_CLEAR(self->function_modes);
    Py_CLEAR(self->functorch);
    Py_CLEAR(self->grad_enabled);
    Py_CLEAR(self->bump);
    Py_CLEAR(self->raw_stream);
    Py_CLEAR(self->current_device);
    Py_CLEAR(self->capturing);
    Py_CLEAR(self->get_device);
    Py_CLEAR(self->default_stream_only);
    return 0;
}

static void
eager_dealloc(PyObject *selfobj)
{
    PyTypeObject *tp = Py_TYPE(selfobj);
    PyObject_GC_UnTrack(selfobj);
    eager_clear(selfobj);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(selfobj);
    Py_DECREF(tp);
}

static PyMethodDef eager_methods[] = {
    {"call", (PyCFunction)(void (*)(void))eager_call, METH_FASTCALL | METH_KEYWORDS,
     "call($self, /, *args, **kwargs)\n--\n\nCall the op eagerly: the kernel directly when nothing traces or records, else the Python call."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot eager_slots[] = {
    {Py_tp_init, eager_init},
    {Py_tp_dealloc, eager_dealloc},
    {Py_tp_traverse, eager_traverse},
    {Py_tp_clear, eager_clear},
    {Py_tp_methods, eager_methods},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_doc, "EagerOp(spec, /)\n--\n\nThe C eager call of one cute_bind.torch op (see the module source)."},
    {0, NULL},
};

static PyType_Spec eager_spec = {
    "cute_bind.torch._ceager.EagerOp", sizeof(EagerOp), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, eager_slots,
};

static struct PyModuleDef ce_module = {
    PyModuleDef_HEAD_INIT, "_ceager", "C eager call of cute_bind.torch ops (torch entry points called from C).", -1, NULL,
};

PyMODINIT_FUNC
PyInit__ceager(void)
{
    PyObject *m = PyModule_Create(&ce_module);
    if (m == NULL) return NULL;
    s_requires_grad = PyUnicode_InternFromString("requires_grad");
    s_is_meta = PyUnicode_InternFromString("is_meta");
    PyObject *tp = PyType_FromSpec(&eager_spec);
    if (s_requires_grad == NULL || s_is_meta == NULL || tp == NULL || PyModule_AddObject(m, "EagerOp", tp) < 0) {
        Py_XDECREF(tp);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
