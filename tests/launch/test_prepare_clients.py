"""``prepare()`` takes what the clients' own calls take (issue 23, Build item 1), on the CPU.

- DSL numbers (``cutlass.Int32(-100)``, ``cutlass.Float32(0.0)``: quack's
  cross-entropy ``ignore_index``, split-k ``beta``) for scalar parameters of
  TVM-FFI and plain compiled functions, at prepare and at launch;
- structures the DSL compiles in (FlashAttention-4's ``aux_data=AuxData(None,
  None)``): the TVM-FFI array built once, passed for an equal value;
- bare ``tvm_ffi.Function`` objects (quack's warm disk cache:
  ``cute.runtime.load_module(path, enable_tvm_ffi=True)["func"]``);
- plain torch tensors for a function compiled from plain torch tensors
  (CUTLASS's ampere elementwise_add ``main``).

Every launch is compared with the compiled function's own call, on the C fast
path and on the pure-Python one. On the C path a spy in place of the handle's
compiled function (what its slow path calls) shows which launches the fast
path took: quack builds a fresh ``Int32`` and FlashAttention a fresh
``AuxData`` per call, so those must not fall to the slow path.
"""

import math
import struct
import warnings
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.optional import torch_or_skip

torch = torch_or_skip()
tvm_ffi = pytest.importorskip("tvm_ffi")
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind.launch.prepared import PreparedLaunch  # noqa: E402
from cute_bind.launch.tvm_ffi import PreparedTvmFfiLaunch  # noqa: E402

I32, F32 = cutlass.Int32, cutlass.Float32


class Aux(NamedTuple):
    """FlashAttention-4's ``AuxData``: ``None`` fields compile the branches away."""

    tensors: Any = None
    scalars: Any = None


@cute.jit
def affine(out: cute.Tensor, inp: cute.Tensor, shift: cutlass.Int32, scale: cutlass.Float32, aux: Aux):
    """out = inp * scale + shift (+ 1 when aux.tensors is given: a compile-time branch)."""
    for i in range(cute.size(out)):
        v = inp[i] * scale + cutlass.Float32(shift)
        if cutlass.const_expr(aux.tensors is not None):
            v = v + 1.0
        out[i] = v


@cute.jit
def affine_plain(out: cute.Tensor, inp: cute.Tensor, shift: cutlass.Int32, scale: cutlass.Float32):
    """The same without the structure, for a plain (non-TVM-FFI) compile."""
    for i in range(cute.size(out)):
        out[i] = inp[i] * scale + cutlass.Float32(shift)


@cute.jit
def add2d(a, b, c):
    """CUTLASS elementwise_add's host signature: unannotated tensors (its kernel, on the host)."""
    for i in range(cute.size(a, mode=[0])):
        for j in range(cute.size(a, mode=[1])):
            c[i, j] = a[i, j] + b[i, j]


def dyn(t: Any) -> Any:
    return from_dlpack(t).mark_layout_dynamic()


@pytest.fixture(scope="module")
def compiled() -> Any:
    y = torch.zeros(8)
    with warnings.catch_warnings():  # the DSL warns that aux is not a JitArgument (it compiles it in)
        warnings.simplefilter("ignore", UserWarning)
        return cute.compile(affine, dyn(y), dyn(y), I32(0), F32(1.0), Aux(), options="--enable-tvm-ffi")


class Spy:
    """Stands in for a handle's compiled function: counts the launches that reached its slow path."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.calls = fn, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


def spied(handle: Any) -> Spy:
    spy = Spy(handle.compiled)
    handle._compiled = spy  # what _slow calls: the direct call, counted
    return spy


def _x(n: int = 8) -> Any:
    return torch.arange(n, dtype=torch.float32) - 3.5


# ------------------------------------------------------------------ DSL numbers, TVM-FFI
NUMBER_CALLS = [
    ("dsl_numbers", (I32(-100), F32(0.0)), True),
    ("plain_numbers", (3, 0.5), True),
    ("mixed", (I32(7), 1.25), True),
    ("mixed_other_way", (5, F32(-2.5)), True),
    ("other_dsl_types", (cutlass.Int64(2), cutlass.Float16(1.5)), True),  # other types, the same protocols
    ("boolean_for_int", (cutlass.Boolean(True), F32(2.0)), True),
    ("numpy_numbers", (__import__("numpy").int32(4), __import__("numpy").float32(0.75)), False),  # Integral/Real: the call
]


@pytest.mark.parametrize("name, values, fast", NUMBER_CALLS, ids=[c[0] for c in NUMBER_CALLS])
def test_dsl_numbers_prepare_and_launch_as_the_call_takes_them(compiled: Any, tvm_path: str, name: str, values: Any, fast: bool) -> None:
    h = cute_bind.prepare(compiled, torch.zeros(8), _x(), I32(-100), F32(0.0), Aux())
    assert isinstance(h, PreparedTvmFfiLaunch) and "shift: int, scale: float, aux: constant" in repr(h)
    spy = spied(h)
    for n in (8, 5):
        x, mine, theirs = _x(n), torch.zeros(n), torch.full((n,), float("nan"))
        compiled(theirs, x, *values, Aux())
        assert h.launch(mine, x, *values, Aux()) is None
        assert mine.numpy().tobytes() == theirs.numpy().tobytes()
    # quack builds a fresh Int32 per call: the C path takes DSL numbers as it takes ints and floats
    assert spy.calls == (0 if tvm_path == "c" and fast else 2)


class RaisingInt:
    """A number TVM-FFI writes through ``__tvm_ffi_int__``, which raises."""

    def __tvm_ffi_int__(self) -> int:
        raise ValueError("no int today")


class StrInt:
    """``__tvm_ffi_int__`` returns something TVM-FFI must convert itself (``int("x")`` fails)."""

    def __tvm_ffi_int__(self) -> Any:
        return "x"


@pytest.mark.parametrize(
    "value",
    [RaisingInt(), StrInt(), cutlass.Int64(2**40), F32(1.0)],
    ids=["protocol_raises", "protocol_gives_a_str", "beyond_int32", "float_for_int"],
)
def test_a_number_the_entry_refuses_is_refused_as_the_call_refuses_it(compiled: Any, tvm_path: str, value: Any) -> None:
    h = cute_bind.prepare(compiled, torch.zeros(8), _x(), I32(-100), F32(0.0), Aux())
    args = (torch.zeros(8), _x(), value, F32(0.5), Aux())
    with pytest.raises(Exception) as direct:
        compiled(*args)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(*args)
    assert info.value.code == "CB309"
    assert type(info.value.__cause__) is type(direct.value) and str(info.value.__cause__) == str(direct.value)


class Reentrant:
    """A number whose ``__tvm_ffi_int__`` first launches the same handle (as hostile or careless
    code may): that inner launch must not rewrite the outer one's arguments."""

    def __init__(self, value: int, launch: Any, out: Any) -> None:
        self.value, self.launch, self.out = value, launch, out

    def __tvm_ffi_int__(self) -> int:
        if self.launch is not None:
            launch, self.launch = self.launch, None
            launch(self.out, _x(5), shift=9, scale=F32(3.0), aux=Aux())  # other values, by keyword
        return self.value


def test_a_launch_from_inside_a_launch_leaves_the_outer_ones_arguments(compiled: Any, tvm_path: str) -> None:
    h = cute_bind.prepare(compiled, torch.zeros(8), _x(), I32(-100), F32(0.0), Aux())
    mine, inner = torch.zeros(8), torch.zeros(5)
    theirs, inner_theirs = torch.full((8,), float("nan")), torch.full((5,), float("nan"))
    compiled(theirs, _x(), 2, F32(0.5), Aux())
    compiled(inner_theirs, _x(5), 9, F32(3.0), Aux())
    h.launch(mine, _x(), Reentrant(2, h.launch, inner), F32(0.5), Aux())
    assert mine.numpy().tobytes() == theirs.numpy().tobytes()
    assert inner.numpy().tobytes() == inner_theirs.numpy().tobytes()


@settings(max_examples=40, deadline=None)
@given(
    shift=st.integers(-(2**31), 2**31 - 1),
    scale=st.floats(width=32, allow_nan=False, allow_infinity=False),
    wrap=st.sampled_from(["dsl", "plain"]),
)
def test_any_int32_and_float32_launch_as_the_call(compiled: Any, shift: int, scale: float, wrap: str) -> None:
    """On the C path (when built): DSL numbers and plain ones, bitwise the call's output."""
    h = cute_bind.prepare(compiled, torch.zeros(8), _x(), I32(0), F32(1.0), Aux())
    values = (I32(shift), F32(scale)) if wrap == "dsl" else (shift, scale)
    mine, theirs = torch.zeros(8), torch.full((8,), float("nan"))
    compiled(theirs, _x(), *values, Aux())
    h.launch(mine, _x(), *values, Aux())
    assert mine.numpy().tobytes() == theirs.numpy().tobytes()


# ------------------------------------------------------------------ structures compiled in, TVM-FFI
STRUCTURE_CALLS = [
    ("a_fresh_equal_namedtuple", lambda: Aux(None, None), True),
    ("the_default", lambda: Aux(), True),
    ("a_plain_tuple", lambda: (None, None), False),  # another type, an equal array: the call
]


@pytest.mark.parametrize("name, make, fast", STRUCTURE_CALLS, ids=[c[0] for c in STRUCTURE_CALLS])
def test_a_structure_compiled_in_takes_the_fast_path_when_equal(compiled: Any, tvm_path: str, name: str, make: Any, fast: bool) -> None:
    h = cute_bind.prepare(compiled, torch.zeros(8), _x(), 2, 0.5, Aux(tensors=None, scalars=None))
    spy = spied(h)
    for shift in (1, -4):
        mine, theirs = torch.zeros(8), torch.full((8,), float("nan"))
        compiled(theirs, _x(), shift, 0.5, make())
        h.launch(mine, _x(), shift, 0.5, make())
        assert mine.numpy().tobytes() == theirs.numpy().tobytes()
    assert spy.calls == (0 if tvm_path == "c" and fast else 2)


@pytest.mark.parametrize(
    "value",
    [Aux(tensors=(1,)), (None,), (None, None, None), None],
    ids=["another_field", "too_short", "too_long", "none_for_the_structure"],
)
def test_another_structure_is_the_call_and_its_refusal(compiled: Any, tvm_path: str, value: Any) -> None:
    """A value other than the prepared one is the compiled function's own call: here its entry refuses."""
    h = cute_bind.prepare(compiled, torch.zeros(8), _x(), 2, 0.5, Aux())
    args = (torch.zeros(8), _x(), 2, 0.5, value)
    with pytest.raises(Exception) as direct:
        compiled(*args)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(*args)
    assert info.value.code == "CB309"
    assert type(info.value.__cause__) is type(direct.value) and str(info.value.__cause__) == str(direct.value)


@pytest.mark.parametrize(
    "value",
    [
        # a tensor or a DSL number inside (FlashAttention's aux_tensors, quack's scheduler arguments) is
        # prepared as a structure rewritten per launch: tests/launch/test_tvm_ffi_structures.py
        (2**70, None),  # beyond int64
        {"tensors": None},
        "aux",
        __import__("functools").reduce(lambda acc, _: (acc,), range(20), None),  # nested 20 deep
    ],
    ids=["huge_int_inside", "dict", "str", "too_deep"],
)
def test_prepare_refuses_structures_it_does_not_hold_fixed_cb308(compiled: Any, value: Any) -> None:
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(compiled, torch.zeros(8), _x(), 2, 0.5, value)
    assert (info.value.code, info.value.parameter) == ("CB308", "aux")


# ------------------------------------------------------------------ bare tvm_ffi.Function objects
def _recorder() -> tuple[Any, list[Any]]:
    """A ``tvm_ffi.Function`` over a Python callable that records what it receives (types included)."""
    seen: list[Any] = []

    def spell(v: Any) -> Any:
        if isinstance(v, (tvm_ffi.Array, list, tuple)):
            return [spell(x) for x in v]
        return (type(v).__name__, struct.pack("<d", v).hex() if isinstance(v, float) else v)  # floats by their bits

    def record(*args: Any) -> None:
        seen.append([spell(a) for a in args])

    return tvm_ffi.convert(record), seen


leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True))
structures = st.recursive(leaves, lambda inner: st.one_of(st.tuples(inner, inner), st.lists(inner, max_size=3)), max_leaves=8)
constants = st.one_of(st.tuples(structures), st.lists(structures, max_size=3), st.builds(Aux, structures, structures))


def _copy(value: Any) -> Any:
    """An equal value built anew (same types throughout), as a caller building it per call has it."""
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple.__new__(type(value), [_copy(v) for v in value])
    if isinstance(value, float):
        return struct.unpack("<d", struct.pack("<d", value))[0]  # the same bits (a NaN's sign too), another object
    if isinstance(value, int) and not isinstance(value, bool):
        return int(str(value))
    return value


@settings(max_examples=60, deadline=None)
@given(prepared=constants, other=constants, number=st.integers(-(2**63), 2**63 - 1))
def test_a_bare_function_receives_what_its_own_call_passes(prepared: Any, other: Any, number: int) -> None:
    """Whatever the structure and the launch's values, the function receives (with types) what its
    own call passes; an equal structure built anew takes the C fast path."""
    fn, seen = _recorder()
    h = cute_bind.prepare(fn, cutlass.Int64(number), F32(0.5), prepared)
    assert h.parameters == ("arg0", "arg1", "arg2") and "arg2: constant" in repr(h)
    spy = spied(h)
    for values in ((cutlass.Int64(number), 0.25, _copy(prepared)), (number, F32(-1.5), other)):
        del seen[:]
        fn(*values)
        h.launch(*values)
        assert seen[1] == seen[0]
    if h.fast_path == "c":
        assert spy.calls <= 1  # the first launch (an equal copy) took the fast path


def test_a_list_changed_after_prepare_is_launched_as_it_is_now() -> None:
    fn, seen = _recorder()
    value = [1, 2.5]
    h = cute_bind.prepare(fn, value)
    value.append(None)  # the handle holds its own copy: the array it built is not this list's any more
    h.launch(value)
    fn(value)
    assert seen[0] == seen[1] == [[("int", 1), ("float", struct.pack("<d", 2.5).hex()), ("NoneType", None)]]


def test_a_loaded_function_prepares_and_launches_as_its_call(compiled: Any, tvm_path: str, tmp_path: Any) -> None:
    """quack's warm disk cache: ``load_module(path, enable_tvm_ffi=True)["func"]`` of an exported function."""
    path = str(tmp_path / "affine.o")
    compiled.export_to_c(path, function_name="func")
    loaded = cute.runtime.load_module(path, enable_tvm_ffi=True)["func"]
    assert not isinstance(loaded, type(compiled))
    h = cute_bind.prepare(loaded, torch.zeros(8), _x(), I32(-100), F32(0.0), Aux())
    assert isinstance(h, PreparedTvmFfiLaunch) and h.kernel_name == "tvm_ffi.Function"
    spy = spied(h)
    for values in ((I32(-100), F32(0.0)), (3, 0.5)):
        mine, theirs = torch.zeros(8), torch.full((8,), float("nan"))
        loaded(theirs, _x(), *values, Aux())
        h.launch(mine, _x(), *values, Aux())
        assert mine.numpy().tobytes() == theirs.numpy().tobytes()
    assert spy.calls == (0 if tvm_path == "c" else 2)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(torch.zeros(8), _x(), 1, 0.5, aux=Aux())  # positional only, as its call
    assert info.value.code == "CB202"
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(torch.zeros(8), _x(), 1)
    assert info.value.code == "CB202"


# ------------------------------------------------------------------ plain (non-TVM-FFI) compiled functions
@pytest.mark.parametrize(
    "values",
    [(I32(-100), F32(0.0)), (3, 0.5), (I32(7), 1.25), (5, F32(-2.5))],
    ids=["dsl_numbers", "plain_numbers", "mixed", "mixed_other_way"],
)
def test_plain_prepare_takes_dsl_numbers(values: Any) -> None:
    y = torch.zeros(8)
    c = cute.compile(affine_plain, dyn(y), dyn(y), I32(0), F32(1.0))
    h = cute_bind.prepare(c, torch.zeros(8), _x(), I32(-100), F32(0.0))
    assert isinstance(h, PreparedLaunch)
    mine, theirs = torch.zeros(8), torch.full((8,), float("nan"))
    c(theirs, _x(), *values)
    h.launch(mine, _x(), *values)
    assert mine.numpy().tobytes() == theirs.numpy().tobytes()


# ------------------------------------------------------------------ plain tensors compiled from plain tensors
def test_plain_tensors_prepare_for_a_function_compiled_from_plain_tensors() -> None:
    """elementwise_add's ``main``: ``cute.compile(fn, a, b, c)`` and ``compiled(a, b, c)`` with torch tensors."""
    a, b, c = torch.randn(3, 4), torch.randn(3, 4), torch.zeros(3, 4)
    compiled = cute.compile(add2d, a, b, c)
    h = cute_bind.prepare(compiled, a, b, c)
    assert h.slots["c"].layout.text == "(?,?):(?{i64},1)"  # as the direct call reads it
    for m, n in ((3, 4), (5, 7)):
        a, b = torch.randn(m, n), torch.randn(m, n)
        mine, theirs = torch.zeros(m, n), torch.full((m, n), float("nan"))
        compiled(a, b, theirs)
        h.launch(a, b, mine)
        assert mine.numpy().tobytes() == theirs.numpy().tobytes()
    with pytest.raises(cute_bind.LaunchValueError) as info:  # another leading dimension: refused, never misread
        h.launch(torch.zeros(4, 3).t(), b[:3, :4], mine[:3, :4])
    assert info.value.code == "CB213"


def test_a_compile_named_from_a_tensor_printed_in_scientific_notation_prepares() -> None:
    """The DSL names the compile after its arguments' text: ``2.0494e+00`` puts a ``+`` in it, and
    the IR prints that entry quoted (``@"add2d_..."``). It is read as any other (once CB307)."""
    a = torch.tensor([[8.4549e-05, 2.0494, 0.5, 1.0], [3.0, -1.0, 7.25, 0.125], [1e-3, 2e3, -5.0, 9.0]])
    b, c = torch.randn(3, 4), torch.zeros(3, 4)
    compiled = cute.compile(add2d, a, b, c)
    assert "+" in compiled.function_name
    h = cute_bind.prepare(compiled, a, b, c)
    mine, theirs = torch.zeros(3, 4), torch.full((3, 4), float("nan"))
    compiled(a, b, theirs)
    h.launch(a, b, mine)
    assert mine.numpy().tobytes() == theirs.numpy().tobytes()


def test_plain_tensors_are_refused_for_a_function_compiled_from_marked_tensors_only() -> None:
    """A compile from from_dlpack tensors only: its marking is not recorded, so a plain tensor's reading is a guess."""
    compiled = cute.compile(add2d, dyn(torch.zeros(3, 4)), dyn(torch.zeros(3, 4)), dyn(torch.zeros(3, 4)))
    with pytest.raises(cute_bind.LaunchValueError) as info:
        cute_bind.prepare(compiled, torch.zeros(3, 4), torch.zeros(3, 4), torch.zeros(3, 4))
    assert info.value.code == "CB306"
    assert len(cute_bind.prepare(compiled, *(dyn(torch.zeros(3, 4)) for _ in range(3))).slots) == 3


def test_numpy_arrays_prepare_as_the_direct_call_reads_them() -> None:
    np = __import__("numpy")
    a = torch.randn(3, 4)
    compiled = cute.compile(add2d, a, a.clone(), torch.zeros(3, 4))
    h = cute_bind.prepare(compiled, a.numpy(), a.numpy(), np.zeros((3, 4), np.float32))
    mine, theirs = np.zeros((3, 4), np.float32), np.full((3, 4), np.nan, np.float32)
    compiled(a.numpy(), a.numpy(), theirs)
    h.launch(a.numpy(), a.numpy(), mine)
    assert mine.tobytes() == theirs.tobytes() and not math.isnan(float(mine[0, 0]))


class DLPackOnly:
    """A DLPack exporter the DSL has no argument adapter for: its direct call does not read it as a tensor."""

    def __init__(self, t: Any) -> None:
        self.t = t

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.t.__dlpack_device__()


def test_a_tensor_the_direct_call_does_not_read_so_is_refused_cb306() -> None:
    a = torch.randn(3, 4)
    compiled = cute.compile(add2d, a, a.clone(), torch.zeros(3, 4))
    with pytest.raises(cute_bind.LaunchValueError) as info:
        cute_bind.prepare(compiled, DLPackOnly(a), a, torch.zeros(3, 4))
    assert (info.value.code, info.value.parameter) == ("CB306", "a")
