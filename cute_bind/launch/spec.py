"""What crosses into the C launchers (``_claunch.c``, ``_ctvmffi.c``): one frozen, validated record per handle.

:class:`LaunchSpec` is built and checked in one place (``__post_init__``,
as cuda.core's ``LaunchConfig``) and handed to ``_claunch.Launcher(spec)``,
which reads each field once, by name, checking its type and length (it never
trusts the record), and keeps what it read alive. The
tuples that cross inside it are NamedTuples: :class:`SeqLeaf` (one element of
a sequence slot) and :class:`KeepAlive` (what the pointers point into).
:class:`TvmFfiLaunchSpec` is the same for ``_ctvmffi.Launcher(spec)``, with
:class:`TvmTensorArg`, :class:`TvmConstantArg` and :class:`TvmKeepAlive`.

``_claunch.LAUNCH_SPEC_FIELDS`` and ``_claunch.SEQ_LEAF_FIELDS`` (and
``_ctvmffi.TVM_FFI_LAUNCH_SPEC_FIELDS``, ``TENSOR_ARG_FIELDS``,
``CONSTANT_ARG_FIELDS``) list the names C reads; ``tests/launch/test_spec.py`` checks them against these
classes, and the ``.pyi`` stubs against the C module's text signatures.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

__all__ = [
    "CLASS_FORMATS",
    "FAST_CLASSES",
    "KeepAlive",
    "LaunchSpec",
    "SeqLeaf",
    "SEQUENCE_LEAF_CLASSES",
    "TVM_FFI_KINDS",
    "TVM_FFI_LEAF_KINDS",
    "TVM_FFI_NODE_OPS",
    "TvmConstantArg",
    "TvmFfiLaunchSpec",
    "TvmKeepAlive",
    "TvmStructureArg",
    "TvmStructureNode",
    "TvmTensorArg",
]

#: the fast classes the C launcher knows (SlotKind.fast; ``_claunch.c``'s enum) and the struct formats
#: each may write (None: any, written element by element or through struct); ``check_class`` in C agrees
CLASS_FORMATS: dict[str, str | None] = {
    "P": "Qq",
    "Z": "Qq",
    "B": "?",
    "I": "bhiqBHIQ",
    "R": "fd",
    "h": "H",
    "g": "H",
    "T": "Q",
    "S": None,
    "X": None,
}
FAST_CLASSES = frozenset(CLASS_FORMATS)
#: the classes a sequence element may have (not a sequence, not a Python writer)
SEQUENCE_LEAF_CLASSES = FAST_CLASSES - {"S", "X"}


class SeqLeaf(NamedTuple):
    """One element of a sequence slot (class "S"): how the C launcher writes it."""

    cls: str
    """its fast class (one of :data:`SEQUENCE_LEAF_CLASSES`)"""
    fmt: str
    """its struct format character"""
    offset: int
    """its first byte, absolute in the storage block"""
    size: int
    """its bytes (every write stays within them)"""
    spec: object
    """the record of its class, as a slot of that class has (``CTensorSpec``, ``CPointerSpec``,
    ``CStreamSpec``, ``CNumberSpec``), or None: exact values only"""


class KeepAlive(NamedTuple):
    """What the addresses of a :class:`LaunchSpec` point into, held by the C launcher.

    ``pin`` keeps the compiled module loaded: the launcher drops this record
    when the handle is closed or its module unloaded (``poison``), and each
    running launch holds its own reference until the entry point returns.
    """

    storage: bytearray
    cstorage: object
    argv: object
    result: bytearray
    cresult: object
    pin: object


def _check(ok: bool, what: str) -> None:
    # internal records only (built by PreparedLaunch from checked slot kinds): a failure is a bug here,
    # said as ValueError/TypeError as cuda.core's LaunchConfig does, never an assert
    if not ok:
        raise ValueError(f"LaunchSpec: {what}")


@dataclasses.dataclass(frozen=True)
class LaunchSpec:
    """The C fast path of one prepared handle: addresses, slot layout, callbacks (see the module docstring).

    ``n`` slots: ``fmts`` and ``classes`` hold one byte per slot, ``offsets``,
    ``sizes``, ``extras``, ``defaults`` and ``names`` one item per slot.
    """

    entry: int
    """address of the packed entry point ``void entry(void **argv)``"""
    argv: int
    """address of the handle's packed ``void*`` array"""
    storage: int
    """address of the storage block the slots are written into"""
    storage_size: int
    """its bytes"""
    result: int
    """address of the CUDA-result slot, or 0 when the function reports none"""
    fmts: bytes
    """per slot: its struct format character (``x`` for an empty slot)"""
    classes: bytes
    """per slot: its fast class (:data:`FAST_CLASSES`)"""
    offsets: tuple[int, ...]
    """per slot: its first byte in the storage block"""
    sizes: tuple[int, ...]
    """per slot: its bytes"""
    extras: tuple[Any, ...]
    """per slot: a tensor or pointer spec record, a tuple of :class:`SeqLeaf`, a writer (class "X") or None"""
    defaults: tuple[Any, ...]
    """per slot: its pre-coerced default, or ``required``"""
    names: tuple[str, ...]
    """per slot: its parameter's name (a keyword argument is placed by it)"""
    required: object
    """the sentinel of a parameter without default"""
    slow: Callable[[tuple[Any, ...], tuple[Any, ...], dict[str, Any]], Any]
    """the slow path: ``slow(values, extra, kwargs)``"""
    fail: Callable[[], Any]
    """raises the CUDA error the result slot holds"""
    busy_error: Callable[[], Any]
    """raises CB403 (a launch while one runs)"""
    ret: int | None
    """what a successful launch returns"""
    keep: KeepAlive
    """what the addresses point into, and the pin on the compiled module"""
    release_gil: bool = True
    """whether the entry point runs with the GIL released"""

    def __post_init__(self) -> None:
        n = len(self.classes)
        _check(
            isinstance(self.fmts, bytes) and isinstance(self.classes, bytes) and len(self.fmts) == n,
            "fmts and classes are bytes of one length",
        )
        for name in ("offsets", "sizes", "extras", "defaults", "names"):
            value = getattr(self, name)
            _check(isinstance(value, tuple) and len(value) == n, f"{name} is a tuple of {n} items (one per slot)")
        _check(all(type(v) is str for v in self.names) and len(set(self.names)) == n, "names are distinct str")
        for name in ("entry", "argv", "storage"):
            value = getattr(self, name)
            _check(type(value) is int and 0 < value < 1 << 64, f"{name} is a non-null address")
        _check(type(self.result) is int and 0 <= self.result < 1 << 64, "result is an address or 0")
        _check(type(self.storage_size) is int and self.storage_size >= 0, "storage_size is a size")
        _check(self.ret is None or type(self.ret) is int, "ret is an int or None")
        _check(type(self.release_gil) is bool, "release_gil is a bool")
        if not isinstance(self.keep, KeepAlive):
            raise TypeError("LaunchSpec: keep is a KeepAlive")
        for name in ("slow", "fail", "busy_error"):
            if not callable(getattr(self, name)):
                raise TypeError(f"LaunchSpec: {name} is callable")
        for i, (c, f, off, size, extra) in enumerate(
            zip(self.classes.decode("latin-1"), self.fmts.decode("latin-1"), self.offsets, self.sizes, self.extras)
        ):
            _check(c in FAST_CLASSES, f"slot {i}: unknown fast class {c!r}")
            allowed = CLASS_FORMATS[c]
            _check(allowed is None or f in allowed, f"slot {i}: class {c!r} cannot write format {f!r}")
            _check(
                type(off) is int and type(size) is int and 0 <= off and 0 <= size and off + size <= self.storage_size,
                f"slot {i}: within the storage",
            )
            if c == "S":
                _check(
                    isinstance(extra, tuple) and all(isinstance(leaf, SeqLeaf) for leaf in extra),
                    f"slot {i}: a sequence's leaves are SeqLeaf records",
                )
                for leaf in extra:
                    _check(leaf.cls in SEQUENCE_LEAF_CLASSES, f"slot {i}: a sequence leaf of class {leaf.cls!r}")
                    _check(
                        leaf.fmt in (CLASS_FORMATS[leaf.cls] or ""),
                        f"slot {i}: a leaf of class {leaf.cls!r} cannot write format {leaf.fmt!r}",
                    )
                    _check(
                        0 <= leaf.offset and 0 <= leaf.size and leaf.offset + leaf.size <= self.storage_size,
                        f"slot {i}: a leaf within the storage",
                    )
            elif c == "X":
                _check(extra is None or callable(extra), f"slot {i}: a writer or None")


# ------------------------------------------------------------------ the TVM-FFI launcher (_ctvmffi.c)
#: argument kinds the TVM-FFI launcher knows: tensor, int, address, bool, float, None, constant structure,
#: structure rewritten per launch
TVM_FFI_KINDS = frozenset("Tiabfnos")
#: a structure's node operations: tuple (its exact type, NamedTuples included), list, dataclass
#: (unpacked to a tuple of its fields, as the DSL's call does); a leaf is one of the leaf kinds
TVM_FFI_NODE_OPS = frozenset("tld")
TVM_FFI_LEAF_KINDS = frozenset("Tibfn")


class TvmTensorArg(NamedTuple):
    """A tensor argument of a TVM-FFI launch: how its type is read (``_ctvmffi.TENSOR_ARG_FIELDS``)."""

    reader: int
    """address of the type's ``dltensor_from_py_object_no_sync``"""
    work_stream: int
    """address of its current-work-stream function, or 0"""
    type: type
    """the exact type read through them"""


class TvmConstantArg(NamedTuple):
    """A constant-structure argument: the ``ffi.Array`` built once (``_ctvmffi.CONSTANT_ARG_FIELDS``)."""

    structure: object
    """a private snapshot of the value the array was built from"""
    array: object
    """the ``ffi.Array`` (held: ``handle`` points into it)"""
    handle: int
    """its object handle"""
    type_index: int
    """its TVM-FFI type index (an object: at least 64)"""


class TvmStructureNode(NamedTuple):
    """One node of a structure argument, in preorder (``_ctvmffi.STRUCTURE_NODE_FIELDS``)."""

    op: str
    """``t`` a tuple of exactly ``type``, ``l`` a list, ``d`` a dataclass of exactly ``type`` (its
    fields ``names`` read as attributes), or a leaf kind (``T``, ``i``, ``b``, ``f``, ``n``)"""
    type: object
    """``t``/``d``: the exact type taken; ``T``: the tensor type; else None"""
    arity: int
    """``t``/``l``/``d``: how many children (the array's size); a leaf: 0"""
    size: int
    """how many nodes its subtree holds, itself included (the next sibling is ``size`` nodes on)"""
    names: tuple[str, ...] | None
    """``d``: its field names, in ``dataclasses.fields`` order; else None"""
    address: int
    """a leaf: where its ``TVMFFIAny`` lies in the structure's array; else 0"""
    reader: int
    """``T``: the type's ``dltensor_from_py_object_no_sync``; else 0"""
    work_stream: int
    """``T``: its current-work-stream function, or 0"""


class TvmStructureArg(NamedTuple):
    """A structure argument rewritten per launch (``_ctvmffi.STRUCTURE_ARG_FIELDS``): the ``ffi.Array``
    TVM-FFI's call builds for it, built once per launcher, and its nodes."""

    nodes: tuple[TvmStructureNode, ...]
    """the structure's nodes in preorder, the root first"""
    array: object
    """the ``ffi.Array`` (held: the leaves' addresses point into it and its nested arrays)"""
    handle: int
    """its object handle (the argument passed)"""
    type_index: int
    """its TVM-FFI type index (``ffi.Array``)"""


class TvmKeepAlive(NamedTuple):
    """What the TVM-FFI launcher's addresses point into: the TVM-FFI function and the compiled function."""

    function: object
    compiled: object


@dataclasses.dataclass(frozen=True)
class TvmFfiLaunchSpec:
    """The C fast path of one prepared TVM-FFI launch (``_ctvmffi.Launcher(spec)``; ``n`` arguments).

    ``_ctvmffi.TVM_FFI_LAUNCH_SPEC_FIELDS`` lists the fields C reads, by name,
    checking each; ``tests/launch/test_spec.py`` holds the two to each other.
    """

    entry: int
    """address of the safe-call entry ``int entry(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)``"""
    self_handle: int
    """the function object handle passed as ``self``"""
    set_stream: int
    """address of ``TVMFFIEnvSetStream``"""
    move_error: int
    """address of ``TVMFFIErrorMoveFromRaised``"""
    dec_ref: int
    """address of ``TVMFFIObjectDecRef``"""
    kinds: bytes
    """per argument its kind (:data:`TVM_FFI_KINDS`)"""
    specs: tuple[object, ...]
    """per argument: a :class:`TvmTensorArg`, a :class:`TvmConstantArg`, a :class:`TvmStructureArg` or None"""
    defaults: tuple[object, ...]
    """per argument its default, or ``required``"""
    required: object
    """the sentinel of an argument without default"""
    slow: Callable[[tuple[object, ...], dict[str, object]], object]
    """the compiled call itself: ``slow(args, kwargs)``"""
    fail: Callable[[str, str, str], object]
    """raises the entry's error: ``fail(kind, message, backtrace)``"""
    classify: Callable[[type], str]
    """``"i"``/``"f"`` for a type TVM-FFI writes through its int/float protocol, else ``""``"""
    keep: TvmKeepAlive
    """what the addresses point into"""
    names: tuple[str | None, ...] | None
    """per argument its keyword name (None: positional only), or None: the function takes no keywords
    (a bare ``tvm_ffi.Function``); a keyword call is placed by these before it is written"""

    def __post_init__(self) -> None:
        n = len(self.kinds)
        if self.names is not None:
            _check(
                isinstance(self.names, tuple) and len(self.names) == n and all(v is None or type(v) is str for v in self.names),
                f"names is None or a tuple of {n} items, each a str or None",
            )
            given = [v for v in self.names if v is not None]
            _check(len(set(given)) == len(given), "names are distinct")
        _check(isinstance(self.kinds, bytes), "kinds is bytes")
        for name in ("specs", "defaults"):
            value = getattr(self, name)
            _check(isinstance(value, tuple) and len(value) == n, f"{name} is a tuple of {n} items (one per argument)")
        for name in ("entry", "set_stream", "move_error", "dec_ref"):
            value = getattr(self, name)
            _check(type(value) is int and 0 < value < 1 << 64, f"{name} is a non-null address")
        _check(type(self.self_handle) is int and 0 <= self.self_handle < 1 << 64, "self_handle is an address")
        if not isinstance(self.keep, TvmKeepAlive):
            raise TypeError("TvmFfiLaunchSpec: keep is a TvmKeepAlive")
        for name in ("slow", "fail", "classify"):
            if not callable(getattr(self, name)):
                raise TypeError(f"TvmFfiLaunchSpec: {name} is callable")
        for i, (k, spec) in enumerate(zip(self.kinds.decode("latin-1"), self.specs)):
            _check(k in TVM_FFI_KINDS, f"argument {i}: unknown kind {k!r}")
            if k == "T":
                _check(isinstance(spec, TvmTensorArg) and spec.reader > 0 and isinstance(spec.type, type), f"argument {i}: a TvmTensorArg")
            elif k == "o":
                _check(isinstance(spec, TvmConstantArg) and spec.handle > 0 and spec.type_index >= 64, f"argument {i}: a TvmConstantArg")
            elif k == "s":
                _check(
                    isinstance(spec, TvmStructureArg) and spec.handle > 0 and spec.type_index >= 64 and _nodes_ok(spec.nodes),
                    f"argument {i}: a TvmStructureArg whose nodes form one tree",
                )


def _nodes_ok(nodes: object) -> bool:
    """``nodes`` is a tuple of :class:`TvmStructureNode` forming one tree in preorder."""
    if not isinstance(nodes, tuple) or not nodes or not all(isinstance(nd, TvmStructureNode) for nd in nodes):
        return False
    if nodes[0].op not in TVM_FFI_NODE_OPS or nodes[0].size != len(nodes):
        return False
    for k, nd in enumerate(nodes):
        if nd.op in TVM_FFI_NODE_OPS:
            child, total = k + 1, 1
            for _ in range(nd.arity):
                if child >= len(nodes) or nodes[child].size < 1:
                    return False
                total += nodes[child].size
                child += nodes[child].size
            if total != nd.size or (nd.op == "d" and (not isinstance(nd.names, tuple) or len(nd.names) != nd.arity)):
                return False
        elif nd.op in TVM_FFI_LEAF_KINDS:
            if nd.size != 1 or nd.arity != 0 or nd.address <= 0 or (nd.op == "T" and nd.reader <= 0):
                return False
        else:
            return False
    return True
