"""Property-based fuzzing of every slot kind, on both fast paths and checked mode.

For each kind, hypothesis draws hostile and ordinary values (numbers of every
type and range, subclasses with overridden conversions, arrays and tensors of
any dtype, shape and strides, read-only and empty buffers, sequences of any
length and type...). Each value is launched through the fast path under test
(the ``path`` fixture: the C extension or the generated Python function) and
through checked mode, and the outcome (the slot's bytes, or the error code)
must agree between them and with a reference model written here from the
documented rules. Any other exception, a difference, or a crash fails the
test. Kernels whose values are never dereferenced run through a no-op entry
point, so random addresses are safe to store.

The default run is bounded for CI (``CUTE_BIND_FUZZ_EXAMPLES`` examples per
kind, 60 unless set). ``pytest -m fuzz_long tests/slots/test_fuzz.py`` runs
the same properties with thousands of examples (before a release).
"""

from __future__ import annotations

import ctypes
import math
import operator
import os
import struct
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_bind
from cute_bind import dsl
from tests.kernels.host import all_scalars, tscale
from tests.kernels.hostile import handle_of, reals, three
from tests.optional import torch_or_skip

CI_EXAMPLES = int(os.environ.get("CUTE_BIND_FUZZ_EXAMPLES", "60"))
LONG_EXAMPLES = int(os.environ.get("CUTE_BIND_FUZZ_LONG_EXAMPLES", "4000"))
OK = "ok"
U64 = 1 << 64


def _run(strategy: Any, check: Callable[[Any], None], examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def inner(value: Any) -> None:
        check(value)

    inner()


def outcome(handle: Any, args: tuple[Any, ...], slot: str) -> tuple[str, Any]:
    """("ok", the slot's bytes) or ("error", code); anything else propagates and fails the test."""
    try:
        handle.launch(*args)
    except cute_bind.CuteBindError as e:
        return ("error", e.code)
    return (OK, handle.slot_bytes(slot))


_NOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda argv: None)
_HANDLES: dict[tuple[str, str], Any] = {}


def handle_for(name: str, path: str, make: Callable[[], Any], noop: bool, monkeypatch: Any) -> Any:
    """One handle per kernel and fast path for the whole session (bind once: fuzzing is about launches)."""
    key = (name, path)
    if key not in _HANDLES:
        if noop:  # values are stored, never dereferenced
            real = dsl.entry_point

            def patched(compiled: Any, kernel: Any = None) -> Any:
                e = real(compiled, kernel)
                return dsl.EntryPoint(
                    ctypes.cast(_NOOP, ctypes.c_void_p).value, e.result_ctype, e.extra_pointers, e.module, (e.keepalive, _NOOP)
                )

            monkeypatch.setattr(dsl, "entry_point", patched)
        _HANDLES[key] = make()
        monkeypatch.undo()
        if path == "python":  # undo removed the fixture's setting too; later handles of this test need it
            monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    return _HANDLES[key]


def agree(handle: Any, args: tuple[Any, ...], slot: str, model: tuple[str, Any], checked_model: tuple[str, Any] | None = None) -> None:
    """The fast path, checked mode and the model agree (``checked_model``: where checked mode
    documents one more check, the alignment of raw integer addresses)."""
    fast = outcome(handle, args, slot)
    checked = outcome(_checked(handle), args, slot)
    if checked_model is not None:
        assert checked == checked_model or (checked_model[1] is None and checked[0] == OK), (
            f"checked {checked} != {checked_model} for {args!r}"
        )
    else:
        assert fast == checked, f"fast path {fast} != checked mode {checked} for {args!r}"
    if model[0] == "error":
        assert fast == model, f"{fast} != model {model} for {args!r}"
    elif model[0] == OK and model[1] is not None:
        assert fast[0] == OK and fast[1] == model[1], f"{fast} != model {model} for {args!r}"
    else:  # model: ok, bytes not modelled (a NaN payload)
        assert fast[0] == OK, f"{fast} for {args!r}"


_CHECKED: dict[int, Any] = {}


def _checked(handle: Any) -> Any:
    c = _CHECKED.get(id(handle))
    if c is None:
        c = _CHECKED[id(handle)] = handle.with_checks()
    return c


# ------------------------------------------------------------------ hostile building blocks
class IntSub(int):
    def __index__(self) -> int:
        return 7

    def __float__(self) -> float:
        return 2.5


class FloatSub(float):
    def __float__(self) -> float:
        return 2.5


class Indexable:
    def __init__(self, v: int) -> None:
        self.v = v

    def __index__(self) -> int:
        return self.v


class Floaty:
    def __init__(self, v: float) -> None:
        self.v = v

    def __float__(self) -> float:
        return self.v


class Raising:
    def __index__(self) -> int:
        raise ValueError("no")

    def __float__(self) -> float:
        raise ValueError("no")


ints = st.one_of(
    st.integers(-(1 << 70), 1 << 70),
    st.sampled_from(
        [
            0,
            1,
            -1,
            127,
            128,
            -128,
            -129,
            255,
            256,
            32767,
            32768,
            -32769,
            65535,
            65536,
            (1 << 31) - 1,
            1 << 31,
            -(1 << 31) - 1,
            (1 << 32) - 1,
            1 << 32,
            (1 << 63) - 1,
            1 << 63,
            -(1 << 63) - 1,
            (1 << 64) - 1,
            1 << 64,
        ]
    ),
)
floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e39, -1e39, 65504.0, 65520.0, 6e-8, 1e-46, 1.00390625 + 2**-20])
numbers = st.one_of(
    ints,
    floats,
    st.booleans(),
    ints.map(IntSub),
    floats.map(FloatSub),
    ints.map(Indexable),
    floats.map(Floaty),
    st.just(Raising()),
    ints.filter(lambda v: -(1 << 63) <= v < (1 << 63)).map(np.int64),
    ints.filter(lambda v: 0 <= v < (1 << 8)).map(np.uint8),
    floats.map(np.float32),
    floats.map(np.float64),
    st.booleans().map(np.bool_),
    st.sampled_from([None, "1", b"1", 1j, [1], (1,), object()]),
)


# ------------------------------------------------------------------ the reference model
def model_int(value: Any, fmt: str) -> tuple[str, Any]:
    if isinstance(value, bool):
        value = int(value)
    elif isinstance(value, float) or value is None or isinstance(value, (str, bytes)):
        return ("error", "CB204")
    try:
        v = operator.index(value)
    except Exception:
        return ("error", "CB204")
    bits = 8 * struct.calcsize(fmt)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if fmt.islower() else (0, (1 << bits) - 1)
    if not lo <= v <= hi:
        return ("error", "CB205")
    return (OK, struct.pack("@" + fmt, v))


def model_bool(value: Any) -> tuple[str, Any]:
    if isinstance(value, (bool, np.bool_)):
        return (OK, struct.pack("?", bool(value)))
    if isinstance(value, float):
        return ("error", "CB204")
    try:
        v = operator.index(value)
    except Exception:
        return ("error", "CB204")
    return (OK, struct.pack("?", bool(v))) if v in (0, 1) else ("error", "CB205")


def _as_float(value: Any) -> float | tuple[str, str]:
    if isinstance(value, (str, bytes)) or value is None:
        return ("error", "CB204")
    try:
        return float(value)
    except OverflowError:
        return ("error", "CB205")
    except Exception:
        return ("error", "CB204")


def model_real(value: Any, kind: str) -> tuple[str, Any]:
    f = _as_float(value)
    if isinstance(f, tuple):
        return f
    with np.errstate(all="ignore"):
        if kind == "f":
            return (OK, np.float32(f).tobytes())
        if kind == "d":
            return (OK, struct.pack("d", f))
        if kind == "e":  # Float16: IEEE round to nearest even, overflow to an infinity
            return (OK, None) if math.isnan(f) else (OK, np.float16(f).tobytes())
        # BFloat16: the high half of the float32 value
        return (OK, None) if math.isnan(f) else (OK, struct.pack("H", int(np.float32(f).view(np.uint32)) >> 16))


# ------------------------------------------------------------------ scalars
SCALAR_SLOTS = {
    "b": ("bool", None), "i8": ("int", "b"), "i16": ("int", "h"), "i32": ("int", "i"), "i64": ("int", "q"),
    "u8": ("int", "B"), "u16": ("int", "H"), "u32": ("int", "I"), "u64": ("int", "Q"),
    "f32": ("real", "f"), "f64": ("real", "d"), "tf32": ("real", "f"), "pb": ("bool", None), "pi": ("int", "i"), "pf": ("real", "f"),
}  # fmt: skip
SCALAR_DEFAULTS = (True, 1, 2, 3, 4, 5, 6, 7, 8, 1.5, 2.5, 3.5, False, 9, 4.5)


def check_scalars(path: str, monkeypatch: Any) -> Callable[[Any], None]:
    out = np.zeros(16)
    h = handle_for("all_scalars", path, lambda: cute_bind.kernel(all_scalars).bind(out, *SCALAR_DEFAULTS), False, monkeypatch)
    names = list(SCALAR_SLOTS)

    def check(drawn: tuple[int, Any]) -> None:
        i, value = drawn
        name = names[i]
        what, fmt = SCALAR_SLOTS[name]
        model = model_bool(value) if what == "bool" else model_int(value, fmt) if what == "int" else model_real(value, fmt)
        args = list(SCALAR_DEFAULTS)
        args[i] = value
        agree(h, (out.ctypes.data, *args), name, model)

    return check


def check_halves(path: str, monkeypatch: Any) -> Callable[[Any], None]:
    out = np.zeros(4)
    h = handle_for("reals", path, lambda: cute_bind.kernel(reals).bind(out, 0.0, 0.0, 0.0, 0.0), False, monkeypatch)

    def check(drawn: tuple[int, Any]) -> None:
        i, value = drawn
        name, kind = [("a", "f"), ("b", "d"), ("c", "e"), ("d", "g")][i]
        args = [1.0, 1.0, 1.0, 1.0]
        args[i] = value
        agree(h, (out.ctypes.data, *args), name, model_real(value, kind))

    return check


# ------------------------------------------------------------------ pointers
def _array(dtype: Any, n: int, writable: bool) -> np.ndarray:
    a = np.zeros(n, dtype)
    a.flags.writeable = writable
    return a


def _dsl_pointer(dtype: str, address: int, space: str, align: int) -> Any:
    """A ``cute.runtime.make_ptr`` pointer (the DSL's own pointer object)."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    return make_ptr(getattr(cutlass, dtype), address, getattr(cute.AddressSpace, space), assumed_align=align)


pointer_values = st.one_of(
    ints,
    st.tuples(
        st.sampled_from(["Int64", "Int32", "Float64"]),
        st.sampled_from([0, 8, 12, 16, 1 << 40, U64 - 8, U64 - 4]),
        st.sampled_from(["generic", "gmem"]),
        st.sampled_from([4, 8, 16]),
    )
    .filter(lambda t: t[1] % t[3] == 0)  # make_ptr itself refuses an address below its assumed alignment
    .map(lambda t: _dsl_pointer(*t)),
    numbers,
    st.builds(_array, st.sampled_from([np.int64, np.int32, np.float64, np.uint8]), st.integers(0, 4), st.booleans()),
    st.integers(0, U64 - 1).map(ctypes.c_void_p),
    st.builds(
        lambda v: type("Iface", (), {"__array_interface__": {"data": v, "typestr": "<i8", "shape": (1,)}})(),
        st.sampled_from([None, (0, False), (8, True), (16, False), ("x", False), (1.5, False), (-8, False), (1 << 64, False)]),
    ),
    st.builds(
        lambda v: type("DataPtr", (), {"data_ptr": lambda self: v, "numel": lambda self: 1})(),
        st.sampled_from([0, 8, -8, 1 << 64, 2.5, None, True]),
    ),
)


def _pointer_address(value: Any) -> int | tuple[str, str]:
    """What a pointer slot reads from ``value``: its address, or the error."""
    if dsl.is_runtime_pointer(value):  # a make_ptr pointer: its element type must be the slot's
        address, dtype, space, _align = dsl.runtime_pointer_fields(value)
        # the slot (cute_bind.Pointer[Int64]) is generic: a gmem pointer is another address space
        return address if dtype.__name__ == "Int64" and space.name == "generic" else ("error", "CB210")
    if isinstance(value, bool) or value is None or isinstance(value, (float, str, bytes, complex)):
        return ("error", "CB204")
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            return ("error", "CB217")
        if value.dtype != np.int64:
            return ("error", "CB210")
        return value.ctypes.data if value.size or value.ctypes.data else 8  # an empty array: any address
    if isinstance(value, np.generic):  # a NumPy scalar is a number, not an array
        if isinstance(value, (np.floating, np.bool_, np.complexfloating)):
            return ("error", "CB204")
        return operator.index(value)
    if isinstance(value, ctypes.c_void_p):
        return value.value or 0
    if hasattr(value, "data_ptr"):
        a = value.data_ptr()
        if isinstance(a, bool) or not isinstance(a, int):
            return ("error", "CB204")
        return ("error", "CB216") if a == 0 else a
    if hasattr(value, "__array_interface__"):
        data = value.__array_interface__["data"]
        if not (isinstance(data, tuple) and isinstance(data[0], int) and not isinstance(data[0], bool)):
            return ("error", "CB204")
        if data[1]:
            return ("error", "CB217")
        return ("error", "CB216") if data[0] == 0 else data[0]
    try:
        return operator.index(value)
    except Exception:
        return ("error", "CB204")


def model_pointer(value: Any, check_alignment: bool) -> tuple[str, Any]:
    a = _pointer_address(value)
    if isinstance(a, tuple):
        return a
    if not 0 <= a < U64:
        return ("error", "CB206")
    if check_alignment and a % 8:  # the Int64 pointer's alignment
        return ("error", "CB207")
    if isinstance(value, np.ndarray) and not value.size:
        return (OK, None)
    return (OK, struct.pack("Q", a))


def check_pointers(path: str, monkeypatch: Any) -> Callable[[Any], None]:
    out = np.zeros(3, np.int64)
    h = handle_for("three-noop", path, lambda: cute_bind.kernel(three).bind(out, (1, 2, 3)), True, monkeypatch)

    def check(value: Any) -> None:
        # a raw int address is taken as it is; checked mode also checks its alignment
        raw = value.__class__ is int
        model = model_pointer(value, not raw)
        agree(h, (value, (1, 2, 3)), "out", model, model_pointer(value, True) if raw else None)

    return check


# ------------------------------------------------------------------ streams
class TorchLikeStream:
    def __init__(self, v: Any) -> None:
        self.cuda_stream = v


class ProtoStream:
    def __init__(self, v: Any) -> None:
        self.v = v

    def __cuda_stream__(self) -> Any:
        return self.v


stream_values = st.one_of(
    ints,
    numbers,
    st.one_of(ints, st.sampled_from([None, 2.5, True])).map(TorchLikeStream),
    st.one_of(ints.map(lambda v: (0, v)), st.sampled_from([None, (0,), (0, None), "s"])).map(ProtoStream),
)


def model_stream(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool) or value is None or isinstance(value, (float, str, bytes)):
        return ("error", "CB204")
    if isinstance(value, int):
        handle: Any = value
    elif isinstance(value, TorchLikeStream):
        handle = value.cuda_stream
    elif isinstance(value, ProtoStream):
        p = value.v
        handle = p[1] if isinstance(p, tuple) and len(p) == 2 else None
    else:
        try:
            handle = operator.index(value)
        except Exception:
            return ("error", "CB204")
    if isinstance(handle, bool) or not isinstance(handle, int):
        return ("error", "CB204")
    return (OK, struct.pack("Q", handle)) if 0 <= handle < U64 else ("error", "CB205")


def check_streams(path: str, monkeypatch: Any) -> Callable[[Any], None]:
    out = np.zeros(1, np.int64)
    h = handle_for("handle_of", path, lambda: cute_bind.kernel(handle_of).bind(out, 0), False, monkeypatch)

    def check(value: Any) -> None:
        agree(h, (out.ctypes.data, value), "s", model_stream(value))

    return check


# ------------------------------------------------------------------ tensors
@st.composite
def tensor_values(draw: Any) -> Any:
    dtype = draw(st.sampled_from([np.float32, np.float32, np.float64, np.int32, np.float16]))
    ndim = draw(st.sampled_from([1, 1, 1, 2, 0]))
    shape = tuple(draw(st.integers(0, 9)) for _ in range(ndim))
    base = np.arange(int(np.prod(shape) or 0) * 4 + 8).astype(dtype)
    arr = base[: int(np.prod(shape))].reshape(shape) if ndim else np.array(1, dtype)
    if ndim and draw(st.booleans()):  # a strided view: every other element, or reversed
        step = draw(st.sampled_from([2, -1, 3]))
        arr = base[::step][: shape[0]] if ndim == 1 else arr[:, ::step] if shape[1] else arr
    if draw(st.booleans()) and arr.size:  # misaligned: one byte into the buffer
        raw = np.zeros(arr.nbytes + 16, np.uint8)
        arr = raw[1 : 1 + arr.nbytes].view(dtype).reshape(arr.shape) if arr.flags.c_contiguous else arr
    if ndim == 1 and draw(st.integers(0, 5)) == 0:
        # an extent at the Int32 bound, over a few elements of memory (the fuzz kernel reads none):
        # 2**31 - 1 is the largest a 32-bit mode takes, 2**31 must be refused (it wrapped to -2**31)
        big = draw(st.sampled_from([(1 << 31) - 2, (1 << 31) - 1, 1 << 31, (1 << 31) + 1]))
        arr = np.lib.stride_tricks.as_strided(base, shape=(big,), strides=(base.itemsize,))
    if draw(st.booleans()):
        arr.flags.writeable = False
    form = draw(st.sampled_from(["numpy", "numpy", "torch", "object"]))
    if form == "torch":
        torch = torch_or_skip()
        if not arr.flags.writeable and arr.size > 1 << 20:
            return arr  # a view at the Int32 bound: a copy would read far past its few elements
        try:
            return torch.from_numpy(arr.copy() if not arr.flags.writeable else arr)
        except Exception:
            return arr
    if form == "object":
        return draw(numbers)
    return arr


def model_tensor(value: Any, fmt: str) -> tuple[str, Any]:
    if isinstance(value, (bool, int, float, str, bytes)) or value is None:
        return ("error", "CB204")
    if not hasattr(value, "__dlpack__"):
        return ("error", "CB204")
    t = value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value
    if isinstance(t, np.ndarray) and not t.flags.writeable and not hasattr(value, "numpy"):
        return ("error", "CB217")  # read-only (NumPy refuses to export it through unversioned DLPack)
    if t.dtype != np.float32:
        return ("error", "CB211")
    if t.ndim != 1:
        return ("error", "CB212")
    if t.size == 0:  # any address (torch reports 0 for an empty tensor, NumPy its buffer's), any stride
        return (OK, None)
    if t.shape[0] > (1 << 31) - 1:  # an Int32 extent (the fuzz slot's layout is 32-bit)
        return ("error", "CB205")
    if t.ctypes.data % 4:
        return ("error", "CB207")
    stride = t.strides[0] // 4
    if t.size and stride != 1 and t.shape[0] != 1:  # an extent-1 mode's stride is never read
        return ("error", "CB213")
    return (OK, struct.pack("@" + fmt, t.ctypes.data, t.shape[0]))


def check_tensors(path: str, monkeypatch: Any) -> Callable[[Any], None]:
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    h = handle_for("tscale-noop", path, lambda: cute_bind.kernel(tscale).bind(y, x, 2.0), True, monkeypatch)
    fmt = h.slots["inp"].fmt

    def check(value: Any) -> None:
        agree(h, (y, value, 2.0), "inp", model_tensor(value, fmt))

    return check


# ------------------------------------------------------------------ sequences
class IterTuple(tuple):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return iter(list(tuple.__iter__(self))[::-1])


class IterList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return iter(list(list.__iter__(self))[::-1])


elements = st.one_of(ints, st.sampled_from([None, 2.5, True, False, "1", np.int32(4), np.float64(1.0)]), ints.map(Indexable))
sequence_values = st.one_of(
    st.builds(
        lambda items, make: make(items),
        st.lists(elements, min_size=0, max_size=5),
        st.sampled_from([tuple, list, IterTuple, IterList, lambda i: iter(i), lambda i: {k: v for k, v in enumerate(i)}]),
    ),
    numbers,
)


def model_sequence(value: Any) -> tuple[str, Any]:
    import collections.abc

    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, collections.abc.Sequence)):
        return ("error", "CB204")
    items = list(value)
    if len(items) != 3:
        return ("error", "CB215")
    packed = []
    for v in items:
        m = model_int(v, "i")
        if m[0] != OK:
            return m
        packed.append(m[1])
    return (OK, b"".join(packed))


def check_sequences(path: str, monkeypatch: Any) -> Callable[[Any], None]:
    out = np.zeros(3, np.int64)
    h = handle_for("three", path, lambda: cute_bind.kernel(three).bind(out, (1, 2, 3)), False, monkeypatch)

    def check(value: Any) -> None:
        agree(h, (out.ctypes.data, value), "vals", model_sequence(value))

    return check


# ------------------------------------------------------------------ the tests
KINDS = {
    "scalar": (st.tuples(st.integers(0, len(SCALAR_SLOTS) - 1), numbers), check_scalars),
    "half": (st.tuples(st.integers(0, 3), numbers), check_halves),
    "pointer": (pointer_values, check_pointers),
    "stream": (stream_values, check_streams),
    "tensor": (tensor_values(), check_tensors),
    "sequence": (sequence_values, check_sequences),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_fuzz(path: str, kind: str, monkeypatch: Any) -> None:
    strategy, make_check = KINDS[kind]
    _run(strategy, make_check(path, monkeypatch), CI_EXAMPLES)


@pytest.mark.fuzz_long
@pytest.mark.parametrize("kind", list(KINDS))
def test_fuzz_long(path: str, kind: str, monkeypatch: Any, request: Any) -> None:
    if "fuzz_long" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the long fuzzing run: pytest -m fuzz_long")
    strategy, make_check = KINDS[kind]
    _run(strategy, make_check(path, monkeypatch), LONG_EXAMPLES)
