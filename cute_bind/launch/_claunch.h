/*
 * The C launcher's own header: what its three files share. _claunch.c holds the Launcher type's
 * methods, the launch loop, configure() and the module; _claunch_values.c reads and writes values
 * (the numbers, pointers, tensors, NumPy arrays, ctypes pointers, streams and sequences a launch
 * writes into the storage block); _claunch_records.c reads the slot records at init, each by field
 * name. _claunch.c includes the other two: the extension is one translation unit, so every
 * function stays static and the launch loop compiles exactly as it did in one file (no call
 * between files pays the ABI's argument passing). Everything the extensions share is in
 * _cb_common.h.
 */
#ifndef CUTE_BIND_CLAUNCH_H
#define CUTE_BIND_CLAUNCH_H

#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "_cb_common.h"

typedef void (*entry_fn)(void **);

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
/* What a TensorSpec owns (CB_VISIT_REF, CB_CLEAR_REF) */
#define TENSOR_SPEC_REFS(X, ts) X(ts, type) X(ts, capsule) X(ts, cai_type)

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
/* What a PtrSpec owns */
#define PTR_SPEC_REFS(X, ps) X(ps, types) X(ps, capsule) X(ps, other_type) X(ps, other_reader)

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
/* What an ObjSpec owns */
#define OBJ_SPEC_REFS(X, os) X(os, types) X(os, attr_types) X(os, reader)

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

/* A sequence slot's leaves: per element, its class, format, offset and the spec of its class (as a
 * slot's: a tensor, pointer or object spec, else NULL), so an element takes what the same top-level
 * slot takes. `pending` marks the leaves whose address the last pass reads (set by the first pass of
 * the launch running now: one launch at a time per launcher). */
typedef struct SeqSpec {
    Py_ssize_t n;
    char *cls;
    char *fmt;
    Py_ssize_t *off;
    TensorSpec **tensors;
    PtrSpec **ptrs;
    ObjSpec **objs;
    char *pending;
} SeqSpec;

/* The size in bytes of struct format char `fmt` (native), or 0. */
static inline Py_ssize_t
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

/* _claunch_values.c: write one value of class `cls` (a sequence: its elements) into the storage
 * (1 written, DEFERRED: its address is read in the last pass, 0 not taken as is, -1 propagate). */
static int pack_value(char cls, char fmt, char *dst, TensorSpec *ts, PtrSpec *ps, ObjSpec *os, PyObject *writer, PyObject *v,
                      PyObject **held, int mode);
static int pack_sequence(char *storage, SeqSpec *ss, PyObject *v, PyObject **held, int mode);

/* _claunch_records.c: the slot records, read by name at init (None: exact values only), and their release. */
static int parse_tensor_spec(PyObject *spec, Py_ssize_t slot_size, TensorSpec **out);
static int parse_ptr_spec(PyObject *spec, PtrSpec **out);
static int parse_object_spec(PyObject *spec, int stream, ObjSpec **out);
static int parse_seq_spec(PyObject *spec, Py_ssize_t storage_size, SeqSpec **out);
static int parse_value_spec(char cls, PyObject *spec, Py_ssize_t size, TensorSpec **ts, PtrSpec **ps, ObjSpec **os);
static int visit_value_spec(TensorSpec *ts, PtrSpec *ps, ObjSpec *os, visitproc visit, void *arg);
static void clear_value_spec(TensorSpec *ts, PtrSpec *ps, ObjSpec *os);
static int check_class(char cls, char fmt, Py_ssize_t off, Py_ssize_t size, Py_ssize_t storage_size);
static void free_tensor_spec(TensorSpec *ts);
static void free_ptr_spec(PtrSpec *ps);
static void free_object_spec(ObjSpec *os);
static void free_seq_spec(SeqSpec *ss);
static int visit_tensor_spec(TensorSpec *ts, visitproc visit, void *arg);
static void clear_tensor_spec(TensorSpec *ts);

#endif /* CUTE_BIND_CLAUNCH_H */
