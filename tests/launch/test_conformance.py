"""Conformance: host functions in the styles real CuTe DSL code uses, prepared and bound.

Each case (``tests/kernels/styles.py``) is compiled exactly as such code
compiles it (``cute.compile`` with ``from_dlpack`` tensors marked at the call
site, fake tensors and fake streams, Constexpr values), given to
``cute_bind.prepare`` with the compile's arguments, then launched on two
argument sets with plain torch tensors; every tensor afterwards is bitwise
equal to what the direct call of the compiled function produced on a copy of
the same inputs. ``@cute_bind.kernel`` binds the annotated styles the same way.
Both launch fast paths (fixture ``path``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cuda.bindings.driver as cuda  # noqa: E402
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream  # noqa: E402

import cute_bind  # noqa: E402
from tests.kernels import styles as S  # noqa: E402


def dyn(t: Any) -> Any:
    return from_dlpack(t).mark_layout_dynamic()


def lead0(t: Any) -> Any:
    return from_dlpack(t).mark_layout_dynamic(leading_dim=0)


def compact1(t: Any) -> Any:
    return from_dlpack(t, assumed_align=16).mark_compact_shape_dynamic(mode=1, stride_order=(0, 1), divisibility=4)


def static(t: Any) -> Any:
    return from_dlpack(t)


@dataclass(frozen=True)
class Case:
    """One style: ``make(seed)`` gives the call's arguments with torch tensors (and lists of them);
    ``mark`` wraps each torch tensor as the compile marks it; ``constexpr`` are (index, value)
    compile-time arguments inserted for ``cute.compile`` only (a compiled call omits them)."""

    name: str
    fn: Any
    make: Callable[[int], list[Any]]
    mark: Callable[[Any], Any] = dyn
    constexpr: tuple[tuple[int, Any], ...] = ()
    compile_with: Callable[[list[Any]], list[Any]] | None = None  # e.g. fake tensors instead of the marked ones
    compile_scalars: dict[int, Any] = field(default_factory=dict)  # DSL-typed scalars the compile needs


def _r(seed: int, *shape: int) -> Any:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _n(seed: int) -> int:
    return 8 if seed == 1 else 13  # dynamic extents change between the argument sets


CASES = [
    Case("unannotated", S.add_unannotated, lambda s: [_r(s, _n(s)), _r(s + 9, _n(s)), torch.zeros(_n(s))]),
    Case("static_layout", S.axpy_static, lambda s: [_r(s, 8), _r(s + 9, 8), 0.5 * s], mark=static),
    Case(
        "leading_dim_0",
        S.scale_rows,
        lambda s: [torch.zeros(4, _n(s)).t(), _r(s, 4, _n(s)).t(), 1.5 + s],
        mark=lead0,
    ),
    Case(
        "compact_shape_dynamic",
        S.scale_rows,
        lambda s: [torch.zeros(4, 8 * s), _r(s, 4, 8 * s), -2.0 * s],
        mark=compact1,
    ),
    Case("list_of_tensors", S.sum_list, lambda s: [torch.zeros(_n(s)), [_r(s, _n(s)), _r(s + 1, _n(s)), _r(s + 2, _n(s))]]),
    Case("tuple_unannotated", S.sum_tuple_unannotated, lambda s: [torch.zeros(_n(s)), (_r(s, _n(s)), _r(s + 1, _n(s)))]),
    Case("twelve_tensors", S.many_tensors, lambda s: [torch.zeros(_n(s))] + [_r(s + k, _n(s)) for k in range(11)]),
    Case(
        "callable_object",
        S.Scaler(0.25),
        lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), 0.5 * s, cuda.CUstream(0)],
        constexpr=((2, True),),
    ),
    Case(
        "optional_none_and_value",
        S.windowed,
        lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), None, 3 + s, cuda.CUstream(0), 0.5],
        constexpr=((4, 4),),
        compile_scalars={3: cutlass.Int32(1)},
    ),
    Case(
        "optional_value_and_none_fake_stream",
        S.windowed,
        lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), 2 * s, None, cuda.CUstream(0), 0.25 * s],
        constexpr=((4, 2),),
        compile_with=lambda a: [a[0], a[1], cutlass.Int32(1), None, make_fake_stream(), a[5]],
    ),
    Case("optional_float_value", S.optional_float, lambda s: [torch.zeros(_n(s)), 0.5 * s], compile_scalars={1: cutlass.Float32(1.0)}),
    Case("optional_float_none", S.optional_float, lambda s: [torch.zeros(_n(s)), None]),
    Case(
        "optional_default_given_a_value",
        S.optional_window_default,
        lambda s: [torch.zeros(_n(s)), 3 + s],
        compile_scalars={1: cutlass.Int32(1)},
    ),
    Case("optional_default_left_out", S.optional_window_default, lambda s: [torch.zeros(_n(s))]),
    Case("optional_tensor_none", S.optional_tensor, lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), None, 1e-3 * s]),
    Case("optional_tensor_value", S.optional_tensor, lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), _r(s + 5, _n(s))]),
    Case(
        "fake_tensors",
        S.add_unannotated,
        lambda s: [_r(s, _n(s)), _r(s + 9, _n(s)), torch.zeros(_n(s))],
        compile_with=lambda a: [make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),))] * 3,
    ),
]


def _marked(case: Case, args: list[Any]) -> list[Any]:
    def one(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return case.mark(v)
        if isinstance(v, (list, tuple)):
            return type(v)(one(x) for x in v)
        return v

    return [one(v) for v in args]


def _with_constexprs(case: Case, args: list[Any]) -> list[Any]:
    out = list(args)
    for i, v in case.constexpr:
        out.insert(i, v)
    return out


def _tensors(args: list[Any]) -> list[Any]:
    out = []
    for v in args:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(_tensors(list(v)))
    return out


def _clone(args: list[Any]) -> list[Any]:
    def one(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            # the same strides (a transposed view stays transposed)
            return torch.empty_strided(v.shape, v.stride(), dtype=v.dtype).copy_(v)
        if isinstance(v, (list, tuple)):
            return type(v)(one(x) for x in v)
        return v

    return [one(v) for v in args]


def _compile(case: Case) -> tuple[Any, list[Any]]:
    first = case.make(1)
    marked = _marked(case, first)
    compile_args = case.compile_with(marked) if case.compile_with is not None else list(marked)
    for i, v in case.compile_scalars.items():
        compile_args[i] = v
    return cute.compile(case.fn, *_with_constexprs(case, compile_args)), marked


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_prepared_launch_matches_the_direct_call(case: Case, path: str) -> None:
    compiled, marked = _compile(case)
    handle = cute_bind.prepare(compiled, *marked)
    for seed in (1, 2):
        if case.mark is static and seed == 2:
            args = case.make(1)  # static extents: new values, same shapes
            args = [(a * 3 if isinstance(a, torch.Tensor) else a) for a in args]
        else:
            args = case.make(seed)
        direct = _clone(args)
        compiled(*_marked(case, direct))
        handle.launch(*args)
        for got, want in zip(_tensors(args), _tensors(direct)):
            assert got.numpy().tobytes() == want.numpy().tobytes()


def test_long_entry_symbols_are_cut_and_still_prepared() -> None:
    """The DSL cuts entry symbols at 180 characters: the last tensors' layouts are not in it."""
    compiled, marked = _compile(next(c for c in CASES if c.name == "twelve_tensors"))
    assert len(compiled.function_name) == 180
    assert len(cute_bind.prepare(compiled, *marked).slots) == 12


@pytest.mark.parametrize("bad", ["value_for_none", "none_for_value"])
def test_optional_presence_is_kept(bad: str, path: str) -> None:
    case = next(c for c in CASES if c.name == "optional_none_and_value")  # window_left None, window_right a value
    compiled, marked = _compile(case)
    handle = cute_bind.prepare(compiled, *marked)
    args = case.make(1)
    if bad == "value_for_none":
        args[2] = 5
    else:
        args[3] = None
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        handle.launch(*args)
    assert (info.value.code, info.value.parameter) == ("CB225", "window_left" if bad == "value_for_none" else "window_right")


# ------------------------------------------------------------------ @cute_bind.kernel on the annotated styles
KERNEL_CASES = [
    ("windowed_none_value", S.windowed_kernel, lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), None, 3 + s, 4, cuda.CUstream(0)]),
    ("windowed_value_none", S.windowed_kernel, lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), 1 + s, None, 2, cuda.CUstream(0), 0.5]),
    ("optional_tensor", cute_bind.kernel(S.optional_tensor), lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), _r(s + 3, _n(s))]),
    ("optional_tensor_none", cute_bind.kernel(S.optional_tensor), lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), None, 0.125]),
    ("callable_object", cute_bind.kernel(S.Scaler(0.25)), lambda s: [torch.zeros(_n(s)), _r(s, _n(s)), True, 0.5 * s, cuda.CUstream(0)]),
    ("list_of_tensors", cute_bind.kernel(S.sum_list), lambda s: [torch.zeros(_n(s)), [_r(s, _n(s)), _r(s + 1, _n(s))]]),
]


@pytest.mark.parametrize("name, kernel, make", KERNEL_CASES, ids=[c[0] for c in KERNEL_CASES])
def test_kernel_bind_matches_calling_the_kernel(name: str, kernel: Any, make: Callable[[int], list[Any]], path: str) -> None:
    constexpr_at = [p.index for p in kernel.signature.params if p.is_constexpr]
    first = make(1)
    handle = kernel.bind(*first)
    for seed in (1, 2):
        args = make(seed)
        direct = _clone(args)
        kernel(*direct)
        handle.launch(*[a for i, a in enumerate(args) if i not in constexpr_at])
        for got, want in zip(_tensors(args), _tensors(direct)):
            assert got.numpy().tobytes() == want.numpy().tobytes()


def test_an_optional_default_the_handle_was_not_compiled_for_is_cb225_at_launch():
    """Compiled with a value, a handle may still be prepared (its None default is not coerced at bind);
    leaving the parameter out at launch is the same mistake as passing None: CB225."""
    out = torch.zeros(4)
    compiled = cute.compile(S.optional_window_default, from_dlpack(out).mark_layout_dynamic(), cutlass.Int32(1))
    h = cute_bind.prepare(compiled, out, 3)
    h.launch(out, 5)
    assert out.tolist() == [5.0] * 4
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        h.launch(out)
    assert info.value.code == "CB225"
    bound = cute_bind.kernel(S.optional_window_default).bind(out, 2)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        bound.launch(out)
    assert info.value.code == "CB225"
