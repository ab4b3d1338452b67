/* cute_bind.jax._cxla: the XLA FFI handler that launches a cute_bind kernel without Python.
 *
 * Written against XLA FFI's C API (xla/ffi/api/c_api.h, which jaxlib ships
 * under jaxlib/include): no XLA C++ header, no C++ compiler. The handler is
 * registered with XLA (jax.ffi.register_ffi_target, api_version=1: the typed
 * FFI) once per process under two names, one that declares the command-buffer
 * trait (XLA may capture it into a CUDA graph) and one that does not.
 *
 * What it launches is a *frame*: a prepared launch of one compiled
 * specialization (cute_bind.launch.prepared), copied here when the JAX call
 * is lowered: the packed entry point `void entry(void **argv)`, the storage
 * block as bind() wrote it (every number, every tensor's extents and strides,
 * fixed by the trace), where each of the storage's parts starts (one argv
 * pointer per part), whether the function reports a CUDA result, the
 * executor's extra argv pointers, and the *patches*: which 8-byte address in
 * the storage each XLA operand or result buffer goes to (a pointer slot, or a
 * tensor descriptor's data address) with the alignment the compiled code
 * assumes, and where the stream goes. A frame is made once and never freed or
 * changed (XLA executables may run it until the process ends); Python keeps
 * the prepared handle, and with it the compiled module, alive as long.
 *
 * The lowered custom call carries one attribute, `cute_bind_frame` (u64): the
 * frame's index in the low 32 bits and this process's nonce in the high 32,
 * so a program lowered in another process (jax.export, a serialized
 * executable) is refused with CB902 instead of launching an unrelated frame.
 *
 * Per execution: copy the template storage onto the stack (executions of one
 * executable may overlap in several threads; nothing shared is written),
 * write each buffer's address (checked against the compiled alignment) and
 * the stream, build argv, call the entry, read the result slot.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <stdlib.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xla/ffi/api/c_api.h"

#define CB_ATTR_NAME "cute_bind_frame"
#define CB_CHUNK_BITS 10
#define CB_CHUNK (1u << CB_CHUNK_BITS)
#define CB_MAX_CHUNKS 4096u /* 4M frames */
#define CB_STACK_STORAGE 2048
#define CB_STACK_ARGV 256

typedef void (*entry_fn)(void **);

typedef struct {
    int64_t offset; /* where the 8-byte address goes in the storage */
    int32_t source; /* 0: operand, 1: result */
    int32_t index;  /* which operand or result */
    uint64_t align; /* the buffer address must be a multiple of it (1: any) */
} Patch;

typedef struct {
    entry_fn entry;
    int64_t storage_size;
    unsigned char *storage; /* the template: never written after registration */
    int64_t nparts;
    int64_t *part_offsets;
    int has_result;
    int64_t nextra;
    void **extra;
    int64_t nargs, nrets;
    int64_t npatches;
    Patch *patches;
    int64_t stream_offset; /* -1: the function takes no stream */
    int cuda;              /* 1: the stream comes from XLA; 0 (host platform): 0 is written */
    int device;            /* the CUDA device the launch was bound for (its module is loaded there) */
    uint64_t launches;     /* executions that called the entry (atomic) */
    char name[160];        /* the kernel's name, for messages */
} Frame;

static Frame **chunks[CB_MAX_CHUNKS];
static uint32_t frame_count; /* published with release stores, read with acquire loads */
static uint32_t nonce;

static Frame *find_frame(uint64_t id) {
    if ((uint32_t)(id >> 32) != nonce) return NULL;
    uint32_t index = (uint32_t)id;
    if (index >= __atomic_load_n(&frame_count, __ATOMIC_ACQUIRE)) return NULL;
    return chunks[index >> CB_CHUNK_BITS][index & (CB_CHUNK - 1)];
}

/* ------------------------------------------------------------------ errors */

static XLA_FFI_Error *make_error(const XLA_FFI_Api *api, XLA_FFI_Error_Code code, const char *message) {
    XLA_FFI_Error_Create_Args args;
    memset(&args, 0, sizeof args);
    args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    args.extension_start = NULL;
    args.message = message;
    args.errc = code;
    return api->XLA_FFI_Error_Create(&args);
}

/* the messages follow the catalog: [CODE] kernel, what, expected, got, fix */
static XLA_FFI_Error *frame_error(const XLA_FFI_Api *api, uint64_t id) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "[CB902] a cute_bind.jax call lowered in another process (frame %llu, this process's nonce %u); "
             "expected a program lowered in this process.\n  fix: Lower and compile the jitted function in the process that "
             "runs it: `jax.export` and serialized executables carry no cute_bind kernel.\n"
             "  (python -m cute_bind explain CB902)",
             (unsigned long long)id, (unsigned)nonce);
    return make_error(api, XLA_FFI_Error_Code_FAILED_PRECONDITION, msg);
}

/* ------------------------------------------------------------------ metadata */

static XLA_FFI_Error *metadata(XLA_FFI_CallFrame *call, XLA_FFI_Handler_Traits traits) {
    XLA_FFI_Metadata_Extension *ext = (XLA_FFI_Metadata_Extension *)call->extension_start;
    if (ext->extension_base.struct_size < XLA_FFI_Metadata_Extension_STRUCT_SIZE || ext->metadata == NULL ||
        ext->metadata->struct_size < XLA_FFI_Metadata_STRUCT_SIZE)
        return make_error(call->api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                          "cute_bind.jax: XLA's FFI metadata structures are smaller than the headers cute_bind was built with; "
                          "rebuild cute_bind against the installed jaxlib");
    ext->metadata->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
    ext->metadata->api_version.extension_start = NULL;
    ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
    ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
    ext->metadata->traits = traits;
    ext->metadata->state_type_id.type_id = 0; /* XLA_FFI_UNKNOWN_TYPE_ID: stateless */
    return NULL;
}

/* The checks every stage makes: the call frame's size, a metadata query, the stage, the attribute. */
static XLA_FFI_Error *enter(XLA_FFI_CallFrame *call, XLA_FFI_ExecutionStage stage, XLA_FFI_Handler_Traits traits, Frame **out,
                            int *answered) {
    *answered = 0;
    if (call->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE)
        return make_error(call->api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                          "cute_bind.jax: XLA's FFI call frame is smaller than the headers cute_bind was built with");
    if (call->extension_start != NULL && call->extension_start->type == XLA_FFI_Extension_Metadata) {
        *answered = 1;
        return metadata(call, traits);
    }
    if (call->stage != stage) {
        char msg[160];
        snprintf(msg, sizeof msg, "cute_bind.jax: handler of stage %d called at stage %d", (int)stage, (int)call->stage);
        return make_error(call->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, msg);
    }
    const XLA_FFI_Attrs *attrs = &call->attrs;
    for (int64_t i = 0; i < attrs->size; i++) {
        const XLA_FFI_ByteSpan *name = attrs->names[i];
        if (name == NULL || name->len != sizeof(CB_ATTR_NAME) - 1 || memcmp(name->ptr, CB_ATTR_NAME, name->len) != 0) continue;
        const XLA_FFI_Scalar *scalar = (const XLA_FFI_Scalar *)attrs->attrs[i];
        if (attrs->types[i] != XLA_FFI_AttrType_SCALAR || scalar == NULL || scalar->dtype != XLA_FFI_DataType_U64 ||
            scalar->value == NULL)
            break;
        uint64_t id;
        memcpy(&id, scalar->value, sizeof id);
        *out = find_frame(id);
        return *out == NULL ? frame_error(call->api, id) : NULL;
    }
    return make_error(call->api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      "cute_bind.jax: the custom call has no u64 attribute '" CB_ATTR_NAME "' (not lowered by cute_bind.jax)");
}

/* ------------------------------------------------------------------ stages */

static XLA_FFI_Error *check_counts(XLA_FFI_CallFrame *call, const Frame *f) {
    if (call->args.size == f->nargs && call->rets.size == f->nrets) return NULL;
    char msg[640];
    snprintf(msg, sizeof msg,
             "[CB903] kernel '%s': the custom call has %lld operands and %lld results; expected %lld and %lld "
             "(the frame it was lowered with).\n  fix: Call the kernel through `cute_bind.jax`; do not edit or reuse its custom call "
             "(`cute_bind_call`).\n  (python -m cute_bind explain CB903)",
             f->name, (long long)call->args.size, (long long)call->rets.size, (long long)f->nargs, (long long)f->nrets);
    return make_error(call->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, msg);
}

/* instantiate: once per executable, before any buffer exists (XLA passes none at this stage): the frame
 * must be this process's, so a foreign program fails here, before it runs anything */
static XLA_FFI_Error *instantiate(XLA_FFI_CallFrame *call) {
    Frame *f = NULL;
    int answered;
    return enter(call, XLA_FFI_ExecutionStage_INSTANTIATE, 0, &f, &answered);
}

/* prepare: before each execution; cute_bind asks XLA for no resources (no collectives, no scratch) */
static XLA_FFI_Error *prepare(XLA_FFI_CallFrame *call) {
    Frame *f = NULL;
    int answered;
    return enter(call, XLA_FFI_ExecutionStage_PREPARE, 0, &f, &answered);
}

static XLA_FFI_Error *execute(XLA_FFI_CallFrame *call, XLA_FFI_Handler_Traits traits) {
    Frame *f = NULL;
    int answered;
    XLA_FFI_Error *err = enter(call, XLA_FFI_ExecutionStage_EXECUTE, traits, &f, &answered);
    if (err != NULL || answered) return err;
    if ((err = check_counts(call, f)) != NULL) return err;

    /* the storage and argv of this execution: on the stack when small (they always are for real kernels) */
    _Alignas(16) unsigned char stack_storage[CB_STACK_STORAGE];
    void *stack_argv[CB_STACK_ARGV];
    int64_t nargv = f->nparts + (f->has_result ? 1 : 0) + f->nextra;
    unsigned char *storage = stack_storage;
    void **argv = stack_argv;
    void *heap = NULL;
    if (f->storage_size > CB_STACK_STORAGE || nargv > CB_STACK_ARGV) {
        heap = malloc((size_t)f->storage_size + 16 + sizeof(void *) * (size_t)(nargv + 1));
        if (heap == NULL) return make_error(call->api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "cute_bind.jax: out of memory");
        storage = (unsigned char *)heap;
        argv = (void **)(storage + ((f->storage_size + 15) & ~(int64_t)15));
    }
    memcpy(storage, f->storage, (size_t)f->storage_size);
    for (int64_t k = 0; k < f->npatches; k++) {
        const Patch *p = &f->patches[k];
        void **list = p->source == 0 ? call->args.args : call->rets.rets;
        const XLA_FFI_Buffer *buf = (const XLA_FFI_Buffer *)list[p->index];
        uint64_t address = (uint64_t)(uintptr_t)buf->data;
        if (p->align > 1 && address % p->align != 0) {
            free(heap);
            char msg[768];
            snprintf(msg, sizeof msg,
                     "[CB904] kernel '%s': XLA's buffer for %s %d is at 0x%llx; expected an address aligned to %llu bytes "
                     "(the alignment the compiled code assumes).\n  fix: Declare the alignment the kernel needs and no more in the "
                     "parameter's annotation (`cute_bind.Tensor[dtype, rank, align]`), or copy the array (`x + 0` inside jit gives a "
                     "buffer of its own).\n"
                     "  (python -m cute_bind explain CB904)",
                     f->name, p->source == 0 ? "operand" : "result", p->index, (unsigned long long)address,
                     (unsigned long long)p->align);
            return make_error(call->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, msg);
        }
        memcpy(storage + p->offset, &address, sizeof address);
    }
    if (f->cuda && call->api->struct_size >= offsetof(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get) + sizeof(void *)) {
        XLA_FFI_DeviceOrdinal_Get_Args dargs;
        memset(&dargs, 0, sizeof dargs);
        dargs.struct_size = XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE;
        dargs.ctx = call->ctx;
        XLA_FFI_Error *derr = call->api->XLA_FFI_DeviceOrdinal_Get(&dargs);
        if (derr == NULL && dargs.device_ordinal != f->device) {
            free(heap);
            char msg[640];
            snprintf(msg, sizeof msg,
                     "[CB911] kernel '%s': XLA runs the call on device %d; expected device %d, the one its launch was prepared "
                     "for when the call was lowered.\n  fix: Run cute_bind.jax calls on one GPU per process (the device JAX "
                     "lowers on first), e.g. CUDA_VISIBLE_DEVICES per process, or jax.default_device.\n"
                     "  (python -m cute_bind explain CB911)",
                     f->name, (int)dargs.device_ordinal, f->device);
            return make_error(call->api, XLA_FFI_Error_Code_FAILED_PRECONDITION, msg);
        }
        if (derr != NULL) {
            XLA_FFI_Error_Destroy_Args dd;
            memset(&dd, 0, sizeof dd);
            dd.struct_size = XLA_FFI_Error_Destroy_Args_STRUCT_SIZE;
            dd.error = derr;
            call->api->XLA_FFI_Error_Destroy(&dd); /* an XLA without device ordinals: nothing to check */
        }
    }
    if (f->stream_offset >= 0) {
        void *stream = NULL;
        if (f->cuda) {
            XLA_FFI_Stream_Get_Args sargs;
            memset(&sargs, 0, sizeof sargs);
            sargs.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
            sargs.ctx = call->ctx;
            XLA_FFI_Error *serr = call->api->XLA_FFI_Stream_Get(&sargs);
            if (serr != NULL) {
                free(heap);
                return serr;
            }
            stream = sargs.stream;
        }
        memcpy(storage + f->stream_offset, &stream, sizeof stream);
    }
    int64_t result[1] = {0};
    int64_t n = 0;
    for (int64_t k = 0; k < f->nparts; k++) argv[n++] = storage + f->part_offsets[k];
    if (f->has_result) argv[n++] = result;
    for (int64_t k = 0; k < f->nextra; k++) argv[n++] = f->extra[k];
    f->entry(argv);
    __atomic_add_fetch(&f->launches, 1, __ATOMIC_RELAXED);
    free(heap);
    int32_t code;
    memcpy(&code, result, sizeof code);
    if (f->has_result && code != 0) {
        char msg[640];
        snprintf(msg, sizeof msg,
                 "[CB401] kernel '%s': the launch reported CUDA error %d; expected cudaSuccess (0).\n  fix: Check the launch "
                 "configuration and the kernel's resources; run with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer to find the fault.\n"
                 "  (python -m cute_bind explain CB401)",
                 f->name, (int)code);
        return make_error(call->api, XLA_FFI_Error_Code_INTERNAL, msg);
    }
    return NULL;
}

static XLA_FFI_Error *execute_graph(XLA_FFI_CallFrame *call) {
    return execute(call, XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);
}

static XLA_FFI_Error *execute_plain(XLA_FFI_CallFrame *call) { return execute(call, 0); }

/* ------------------------------------------------------------------ Python */

static int read_i64(PyObject *tuple, Py_ssize_t i, int64_t *out) {
    PyObject *item = PyTuple_GetItem(tuple, i);
    if (item == NULL) return -1;
    long long v = PyLong_AsLongLong(item);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = (int64_t)v;
    return 0;
}

static void free_frame(Frame *f) {
    if (f == NULL) return;
    free(f->storage);
    free(f->part_offsets);
    free(f->extra);
    free(f->patches);
    free(f);
}

PyDoc_STRVAR(register_doc,
             "register(entry, storage, part_offsets, has_result, extra, nargs, nrets, patches, stream_offset, cuda, name, device=0) -> int\n"
             "--\n\n"
             "Copy one prepared launch into a frame the XLA handler runs; return the frame's id (the custom call's\n"
             "cute_bind_frame attribute). patches: tuple of (offset, source, index, align), source 0 an operand,\n"
             "1 a result. Every offset is checked against the storage size. Frames are never freed.");

static PyObject *py_register(PyObject *self, PyObject *args) {
    unsigned long long entry;
    PyObject *storage;
    PyObject *parts, *extra, *patches;
    int has_result, cuda;
    long long nargs, nrets, stream_offset;
    const char *name;
    int device = 0;
    if (!PyArg_ParseTuple(args, "KO!O!pO!LLO!Lps|i", &entry, &PyBytes_Type, &storage, &PyTuple_Type, &parts, &has_result, &PyTuple_Type,
                          &extra, &nargs, &nrets, &PyTuple_Type, &patches, &stream_offset, &cuda, &name, &device))
        return NULL;
    char *sbuf;
    Py_ssize_t slen;
    if (PyBytes_AsStringAndSize(storage, &sbuf, &slen) < 0) return NULL;
    Frame *f = (Frame *)calloc(1, sizeof(Frame));
    if (f == NULL) return PyErr_NoMemory();
    f->entry = (entry_fn)(uintptr_t)entry;
    f->storage_size = slen;
    f->storage = (unsigned char *)malloc(slen > 0 ? (size_t)slen : 1);
    f->nparts = PyTuple_Size(parts);
    f->part_offsets = (int64_t *)calloc((size_t)f->nparts + 1, sizeof(int64_t));
    f->nextra = PyTuple_Size(extra);
    f->extra = (void **)calloc((size_t)f->nextra + 1, sizeof(void *));
    f->npatches = PyTuple_Size(patches);
    f->patches = (Patch *)calloc((size_t)f->npatches + 1, sizeof(Patch));
    if (f->storage == NULL || f->part_offsets == NULL || f->extra == NULL || f->patches == NULL) {
        free_frame(f);
        return PyErr_NoMemory();
    }
    memcpy(f->storage, sbuf, (size_t)slen);
    f->has_result = has_result;
    f->cuda = cuda;
    f->device = device;
    f->nargs = nargs;
    f->nrets = nrets;
    f->stream_offset = stream_offset;
    snprintf(f->name, sizeof f->name, "%s", name);
    const char *bad = NULL;
    if (entry == 0) bad = "entry is null";
    if (nargs < 0 || nrets < 0 || nargs > INT32_MAX || nrets > INT32_MAX) bad = "negative or huge buffer counts";
    if (stream_offset >= 0 && stream_offset + 8 > f->storage_size) bad = "stream_offset outside the storage";
    if (stream_offset < -1) bad = "stream_offset below -1";
    if (device < 0) bad = "a negative device";
    for (int64_t k = 0; bad == NULL && k < f->nparts; k++) {
        if (read_i64(parts, k, &f->part_offsets[k]) < 0) goto fail;
        if (f->part_offsets[k] < 0 || f->part_offsets[k] >= f->storage_size) bad = "a part offset outside the storage";
    }
    for (int64_t k = 0; bad == NULL && k < f->nextra; k++) {
        int64_t v;
        if (read_i64(extra, k, &v) < 0) goto fail;
        f->extra[k] = (void *)(uintptr_t)v;
    }
    for (int64_t k = 0; bad == NULL && k < f->npatches; k++) {
        PyObject *item = PyTuple_GetItem(patches, k);
        if (!PyTuple_Check(item) || PyTuple_Size(item) != 4) {
            bad = "a patch is not a 4-tuple";
            break;
        }
        int64_t off, src, idx, align;
        if (read_i64(item, 0, &off) < 0 || read_i64(item, 1, &src) < 0 || read_i64(item, 2, &idx) < 0 || read_i64(item, 3, &align) < 0)
            goto fail;
        if (off < 0 || off + 8 > f->storage_size) bad = "a patch offset outside the storage";
        else if (src != 0 && src != 1) bad = "a patch source other than 0 (operand) or 1 (result)";
        else if (idx < 0 || idx >= (src == 0 ? nargs : nrets)) bad = "a patch index past the buffers";
        else if (align < 1 || (align & (align - 1)) != 0) bad = "a patch alignment that is not a power of two";
        f->patches[k].offset = off;
        f->patches[k].source = (int32_t)src;
        f->patches[k].index = (int32_t)idx;
        f->patches[k].align = (uint64_t)align;
    }
    if (bad != NULL) {
        PyErr_Format(PyExc_ValueError, "cute_bind.jax._cxla.register: %s", bad);
        goto fail;
    }
    uint32_t index = __atomic_load_n(&frame_count, __ATOMIC_RELAXED); /* writers hold the GIL */
    if (index >= CB_CHUNK * CB_MAX_CHUNKS) {
        PyErr_SetString(PyExc_OverflowError, "cute_bind.jax: too many frames in one process");
        goto fail;
    }
    uint32_t c = index >> CB_CHUNK_BITS;
    if (chunks[c] == NULL) {
        chunks[c] = (Frame **)calloc(CB_CHUNK, sizeof(Frame *));
        if (chunks[c] == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    chunks[c][index & (CB_CHUNK - 1)] = f;
    __atomic_store_n(&frame_count, index + 1, __ATOMIC_RELEASE);
    return PyLong_FromUnsignedLongLong(((unsigned long long)nonce << 32) | index);
fail:
    free_frame(f);
    return NULL;
}

static PyObject *py_launches(PyObject *self, PyObject *arg) {
    unsigned long long id = PyLong_AsUnsignedLongLong(arg);
    if (id == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    Frame *f = find_frame(id);
    if (f == NULL) {
        PyErr_SetString(PyExc_KeyError, "cute_bind.jax: no frame of this id in this process");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(__atomic_load_n(&f->launches, __ATOMIC_RELAXED));
}

static PyObject *capsule(void *fn) { return PyCapsule_New(fn, NULL, NULL); }

static PyObject *py_handlers(PyObject *self, PyObject *arg) {
    int graph = PyObject_IsTrue(arg);
    if (graph < 0) return NULL;
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    PyObject *i = capsule((void *)instantiate), *p = capsule((void *)prepare);
    PyObject *e = capsule(graph ? (void *)execute_graph : (void *)execute_plain);
    if (i == NULL || p == NULL || e == NULL || PyDict_SetItemString(d, "instantiate", i) < 0 || PyDict_SetItemString(d, "prepare", p) < 0 ||
        PyDict_SetItemString(d, "execute", e) < 0) {
        Py_XDECREF(i);
        Py_XDECREF(p);
        Py_XDECREF(e);
        Py_DECREF(d);
        return NULL;
    }
    Py_DECREF(i);
    Py_DECREF(p);
    Py_DECREF(e);
    return d;
}

static PyMethodDef methods[] = {
    {"register", py_register, METH_VARARGS, register_doc},
    {"launches", py_launches, METH_O, "launches(id) -> int\n--\n\nHow many executions of the frame called its entry point."},
    {"handlers", py_handlers, METH_O,
     "handlers(graph) -> dict\n--\n\nThe stage handlers as PyCapsules ({'instantiate', 'prepare', 'execute'}); graph: whether execute "
     "declares the command-buffer trait."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "cute_bind.jax._cxla", "The XLA FFI handler of cute_bind.jax.", -1, methods};

PyMODINIT_FUNC PyInit__cxla(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (nonce == 0) {
        /* a per-process value: a frame id from another process (an exported program) does not match */
        PyObject *os = PyImport_ImportModule("os");
        PyObject *bytes = os ? PyObject_CallMethod(os, "urandom", "i", 4) : NULL;
        Py_XDECREF(os);
        const char *raw = bytes ? PyBytes_AsString(bytes) : NULL;
        if (raw == NULL || PyBytes_Size(bytes) != 4) {
            Py_XDECREF(bytes);
            Py_DECREF(m);
            return NULL;
        }
        memcpy(&nonce, raw, 4);
        Py_DECREF(bytes);
        nonce &= 0x7FFFFFFFu; /* ids stay below 2**63: MLIR builds the u64 attribute from a signed 64-bit value */
        if (nonce == 0) nonce = 1;
    }
    if (PyModule_AddStringConstant(m, "ATTRIBUTE", CB_ATTR_NAME) < 0 || PyModule_AddIntConstant(m, "API_MAJOR", XLA_FFI_API_MAJOR) < 0 ||
        PyModule_AddIntConstant(m, "API_MINOR", XLA_FFI_API_MINOR) < 0 ||
        PyModule_AddIntConstant(m, "NONCE", (long)nonce) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
