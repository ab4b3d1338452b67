"""Unions of eligible kinds with None: ``Int32 | int | None`` (FlashAttention-4's window sizes),
``Optional[Float32 | cute.Pointer]`` (quack's split-k alpha/beta).

The DSL checks a value against the union's members (``isinstance``) and compiles it by its
own kind (an ``int``/``Int32`` as a runtime Int32, a ``bool`` as a Boolean, a ``Float32`` as a
Float32, a pointer as a pointer, ``None`` as a constant). Every row launches through
``cute_bind.prepare`` of the DSL's compiled function, through ``@cute_bind.kernel``'s bound
handle and through ``kernel(*args)``, on both launch fast paths, and compares the output with
the DSL's own call of the same compiled function (and the C arguments' bytes with the DSL's
own marshalling of the same values).
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass.cute.runtime import make_ptr

import cute_bind
from cute_bind import dsl
from cute_bind.slots import OptionalKind, PointerKind, Rejected, ScalarKind, SequenceKind, Where, classify

F32 = cute_bind.Pointer[cutlass.Float32]


@cute.jit
def windows(out: F32, left: Int32 | int | None, right: Int32 | int | None):
    """FlashAttention-4's window sizes: None compiles the branch away, a value is a runtime Int32."""
    o = cute.make_tensor(out, cute.make_layout(2))
    if cutlass.const_expr(left is None):
        o[0] = Float32(-1.0)
    else:
        o[0] = Float32(left)
    if cutlass.const_expr(right is None):
        o[1] = Float32(-1.0)
    else:
        o[1] = Float32(right)


@cute.jit
def epilogue(out: F32, alpha: Optional[Float32 | cute.Pointer], beta: Float32 | cute.Pointer | None):
    """quack's split-k epilogue scalars: None, a Float32 value, or a pointer to one."""
    o = cute.make_tensor(out, cute.make_layout(2))
    if cutlass.const_expr(alpha is None):
        o[0] = Float32(1.0)
    elif cutlass.const_expr(isinstance(alpha, cute.Pointer)):
        o[0] = cute.make_tensor(alpha, cute.make_layout(1))[0]
    else:
        o[0] = alpha
    if cutlass.const_expr(beta is None):
        o[1] = Float32(1.0)
    elif cutlass.const_expr(isinstance(beta, cute.Pointer)):
        o[1] = cute.make_tensor(beta, cute.make_layout(1))[0]
    else:
        o[1] = beta


WINDOWS = cute_bind.kernel(max_specializations=None)(windows)  # 3 x 3 member combinations in the property test
EPILOGUE = cute_bind.kernel(epilogue)

# Scalars a pointer member points at (alive for the whole module).
_CELLS = np.array([3.5, -0.25, 7.0, 1e-3], np.float32)


def _cell(i: int) -> Any:
    return make_ptr(cutlass.Float32, _CELLS.ctypes.data + 4 * i, cute.AddressSpace.generic)


def _ptr(a: np.ndarray) -> Any:
    return make_ptr(cutlass.Float32, a.ctypes.data, cute.AddressSpace.generic)


# ------------------------------------------------------------------ classification
CLASSIFIED = [
    (Int32 | int | None, (("scalar", "Int32"), ("scalar", "Int32"))),
    (Optional[Float32 | cute.Pointer], (("scalar", "Float32"), ("pointer", None))),
    (Optional[Int32 | int], (("scalar", "Int32"), ("scalar", "Int32"))),
    (Optional[Int32 | Float32], (("scalar", "Int32"), ("scalar", "Float32"))),
    (tuple | list | None, (("sequence", None), ("sequence", None))),
    (cute.Tensor | cute.Pointer | None, (("tensor", None), ("pointer", None))),
    (Optional[Int32], (("scalar", "Int32"),)),  # one member: the optional slot it always was
]


@pytest.mark.parametrize("annotation, members", CLASSIFIED, ids=[repr(c[0]) for c in CLASSIFIED])
def test_unions_with_none_are_optional_slots(annotation: Any, members: tuple[Any, ...]) -> None:
    found = classify(annotation)
    assert isinstance(found, OptionalKind)
    assert tuple((m.kind, getattr(m, "dtype_name", None)) for m in found.members) == members
    assert found.is_union == (len(members) > 1)


REJECTED = [
    (Int32 | str | None, "CB114", "str is not a pointer"),
    (Optional[Float32 | cute.Layout], "CB114", "Layout is not a pointer"),
    (Int32 | int, "CB102", None),  # no None: not an optional slot (as before)
]


@pytest.mark.parametrize("annotation, code, detail", REJECTED, ids=[repr(c[0]) for c in REJECTED])
def test_unions_with_an_ineligible_member_are_refused(annotation: Any, code: str, detail: str | None) -> None:
    found = classify(annotation)
    assert isinstance(found, Rejected) and found.diagnostic.code == code
    if detail is not None:
        assert found.detail is not None and detail in found.detail


# ------------------------------------------------------------------ which member a value is
_W = Where("k", "p")
MEMBERS = [
    # (annotation, value, bound kind's description, or the code at bind)
    (Int32 | int | None, 5, "int (as cutlass.Int32)"),
    (Int32 | int | None, Int32(5), "cutlass.Int32"),
    (Int32 | int | None, True, "bool (as cutlass.Boolean)"),  # isinstance(True, int); compiled as a Boolean, as the DSL does
    (Int32 | int | None, 2.5, "CB230"),
    (Int32 | int | None, "5", "CB230"),
    (Optional[Float32 | cute.Pointer], Float32(0.5), "cutlass.Float32"),
    (Optional[Float32 | cute.Pointer], 0.5, "cutlass.Float32"),  # a float: the Float32 member's own slot takes it
    (Optional[Float32 | cute.Pointer], "_cell", "Pointer[Float32]"),  # the element's own alignment goes unsaid
    (Optional[Float32 | cute.Pointer], 3, "CB230"),  # an int beside a pointer member: a number or an address?
    # of no member's own kind: the first scalar member whose slot takes it
    (Optional[Int32 | Float32], True, "cutlass.Int32"),
    (Optional[Int32 | Float32], np.float64(2.5), "cutlass.Float32"),
    (Optional[Float32 | cute.Pointer], "x", "CB230"),
    (Int32 | int | None, "_cell", "CB230"),
    (Optional[Int32 | Float32], 3, "cutlass.Int32"),
    (Optional[Int32 | Float32], 3.0, "cutlass.Float32"),
]


@pytest.mark.parametrize("annotation, value, expected", MEMBERS, ids=[f"{c[0]!r}-{c[1]!r}" for c in MEMBERS])
def test_a_value_binds_as_its_own_kind(annotation: Any, value: Any, expected: str) -> None:
    slot = classify(annotation)
    assert isinstance(slot, OptionalKind)
    value = _cell(0) if value == "_cell" else value
    if expected.startswith("CB"):
        with pytest.raises(cute_bind.LaunchArgumentError) as info:
            slot.bind(value, _W)
        assert (info.value.code, info.value.parameter) == (expected, "p")
        return
    bound = slot.bind(value, _W).slot
    assert isinstance(bound, OptionalKind) and bound.present and bound.inner is not None
    assert bound.inner.describe() == expected


def test_the_member_is_part_of_the_compile_key() -> None:
    k = cute_bind.kernel(windows)
    out = np.zeros(2, np.float32)
    k.bind(out.ctypes.data, 5, None)
    k.bind(out.ctypes.data, Int32(6), None)  # an int and an Int32: the same runtime Int32
    assert k.cache_info()["compiled"] == 1
    k.bind(out.ctypes.data, True, None)  # a Boolean
    k.bind(out.ctypes.data, None, None)  # a constant
    assert k.cache_info()["compiled"] == 3


# ------------------------------------------------------------------ launches equal the DSL's own call
# (fn, kernel, values to bind with (DSL-typed: what cute.compile takes), launches as (ours, the DSL's))
LAUNCHES = [
    (
        "ints",
        windows,
        WINDOWS,
        (5, None),
        [((7, None), (7, None)), ((Int32(-3), None), (Int32(-3), None)), ((2**31 - 1, None), (2**31 - 1, None))],
    ),
    ("Int32s", windows, WINDOWS, (Int32(5), Int32(9)), [((2, -(2**31)), (Int32(2), Int32(-(2**31))))]),
    ("nones", windows, WINDOWS, (None, None), [((None, None), (None, None))]),
    ("bools", windows, WINDOWS, (True, False), [((True, True), (True, True)), ((False, True), (False, True))]),
    (
        "float32s",
        epilogue,
        EPILOGUE,
        (Float32(0.5), Float32(2.0)),
        [((Float32(1.25), Float32(-3.0)), (Float32(1.25), Float32(-3.0))), ((0.75, 4.0), (Float32(0.75), Float32(4.0)))],
    ),
    (
        "pointers",
        epilogue,
        EPILOGUE,
        ("_cell0", "_cell1"),
        [(("_cell2", "_cell3"), ("_cell2", "_cell3")), (("_addr1", "_addr0"), ("_cell1", "_cell0"))],
    ),
    ("mixed", epilogue, EPILOGUE, (None, "_cell0"), [((None, "_cell3"), (None, "_cell3"))]),
]


def _v(v: Any) -> Any:
    if isinstance(v, str) and v.startswith("_cell"):
        return _cell(int(v[5:]))
    if isinstance(v, str) and v.startswith("_addr"):
        return _CELLS.ctypes.data + 4 * int(v[5:])  # an int address for a pointer member, as quack passes data_ptr()
    return v


@pytest.mark.parametrize("name, fn, kernel, bind, launches", LAUNCHES, ids=[c[0] for c in LAUNCHES])
def test_launches_match_the_dsl_call(name: str, fn: Any, kernel: Any, bind: tuple[Any, ...], launches: list[Any], path: str) -> None:
    bind = tuple(_v(v) for v in bind)
    out, ref = np.zeros(2, np.float32), np.zeros(2, np.float32)
    compiled = cute.compile(fn, _ptr(ref), *bind)
    handles = [cute_bind.prepare(compiled, _ptr(out), *bind), kernel.bind(out.ctypes.data, *bind)]
    for ours, theirs in launches:
        ours, theirs = tuple(_v(v) for v in ours), tuple(_v(v) for v in theirs)
        ref[:] = 0
        compiled(_ptr(ref), *theirs)
        # an int address is taken by a handle bound to the pointer member; kernel(*args) binds by
        # the value's own kind, and an int there is no member (CB230), as for the DSL
        addresses = name == "pointers" and any(v.__class__ is int for v in ours)
        for launch in [h.launch for h in handles] + ([] if addresses else [kernel]):
            out[:] = 0
            launch(out.ctypes.data, *ours)
            assert out.tobytes() == ref.tobytes(), (ours, launch)


def test_scalar_members_write_the_dsl_bytes(path: str) -> None:
    out = np.zeros(2, np.float32)
    handle = WINDOWS.bind(out.ctypes.data, 5, True)
    handle.launch(out.ctypes.data, -77, False)
    addresses, keep = dsl.marshal(handle.compiled, (_ptr(out), -77, False), {})
    theirs = [ctypes.string_at(a, s) for a, s in zip(addresses, (8, 4, 1))]
    del keep
    assert [handle.slot_bytes(n) for n in ("out", "left", "right")] == theirs
    assert handle.slots["left"].parts == ("i",) and handle.slots["right"].parts == ("?",)


# ------------------------------------------------------------------ a launch keeps the member
CHANGES = [
    # (kernel, values bound, values launched, code, parameter)
    (EPILOGUE, (Float32(0.5), None), ("_cell0", None), "CB231", "alpha"),  # a pointer for the Float32 member
    (EPILOGUE, ("_cell0", None), (Float32(0.5), None), "CB231", "alpha"),  # a Float32 for the pointer member (never an address)
    (WINDOWS, (5, None), (True, None), "CB231", "left"),  # a Boolean for the Int32 member
    (WINDOWS, (True, None), (5, None), "CB231", "left"),
    (WINDOWS, (5, None), (None, None), "CB225", "left"),  # presence, as for Optional[X]
    (WINDOWS, (None, None), (5, None), "CB225", "left"),
    (WINDOWS, (5, None), (2.5, None), "CB204", "left"),  # of no member: the bound member's own check
    (WINDOWS, (5, None), (2**31, None), "CB205", "left"),
]


@pytest.mark.parametrize("kernel, bound, launched, code, param", CHANGES, ids=[f"{c[3]}-{c[2]!r}" for c in CHANGES])
def test_a_launch_keeps_the_bound_member(kernel: Any, bound: Any, launched: Any, code: str, param: str, path: str) -> None:
    out = np.zeros(2, np.float32)
    handle = kernel.bind(out.ctypes.data, *(_v(v) for v in bound))
    handle.launch(out.ctypes.data, *(_v(v) for v in bound))  # the member's class is seen once first
    with pytest.raises(cute_bind.CuteBindError) as info:
        handle.launch(out.ctypes.data, *(_v(v) for v in launched))
    assert (info.value.code, info.value.kernel, info.value.parameter) == (code, kernel.name, param)
    assert isinstance(info.value, (cute_bind.LaunchArgumentError, cute_bind.LaunchValueError))


def test_a_pointer_member_takes_int_addresses(path: str) -> None:
    out = np.zeros(2, np.float32)
    handle = EPILOGUE.bind(out.ctypes.data, _cell(0), None)
    handle.launch(out.ctypes.data, _CELLS.ctypes.data + 8, None)
    assert out[0] == _CELLS[2]


def test_a_float32_member_takes_what_its_slot_takes(path: str) -> None:
    out = np.zeros(2, np.float32)
    handle = EPILOGUE.bind(out.ctypes.data, Float32(0.5), None)
    handle.launch(out.ctypes.data, 3, None)  # an int: of no member, the Float32 slot takes it
    handle.launch(out.ctypes.data, np.float32(2.5), None)
    assert out[0] == 2.5
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        EPILOGUE.bind(out.ctypes.data, 3, None)  # bind (and a kernel call's) is by kind: an int may be an address here
    assert info.value.code == "CB230"


def test_kernel_calls_compile_one_specialization_per_member(path: str) -> None:
    k = cute_bind.kernel(epilogue)
    out = np.zeros(2, np.float32)
    for alpha, want in [(Float32(0.5), 0.5), (_cell(2), 7.0), (Float32(-2.0), -2.0), (None, 1.0), (_cell(0), 3.5)]:
        k(out.ctypes.data, alpha, Float32(0.0))
        assert out[0] == want
    assert k.cache_info()["specializations"] == 3


_INT32 = st.integers(-(2**31), 2**31 - 1)
_WINDOW = st.one_of(st.none(), _INT32, _INT32.map(Int32), st.booleans())


@settings(max_examples=40, deadline=None)
@given(left=_WINDOW, right=_WINDOW)
def test_kernel_calls_match_the_dsl_call_for_any_window(left: Any, right: Any) -> None:
    out, ref = np.zeros(2, np.float32), np.zeros(2, np.float32)
    WINDOWS(out.ctypes.data, left, right)
    windows(_ptr(ref), left, right)  # the DSL's own call (it compiles by the values' kinds)
    assert out.tobytes() == ref.tobytes()


def test_union_slot_describes_its_members() -> None:
    slot = classify(Optional[Float32 | cute.Pointer])
    assert isinstance(slot, OptionalKind)
    assert "cutlass.Float32 | cutlass.cute.Pointer" in slot.describe()
    assert isinstance(slot.members[0], ScalarKind) and isinstance(slot.members[1], PointerKind)
    seq = classify(tuple | list | None)
    assert isinstance(seq, OptionalKind) and all(isinstance(m, SequenceKind) for m in seq.members)
