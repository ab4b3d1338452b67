"""Prepared launches of TVM-FFI compiled functions, on host functions (CPU, torch CPU tensors).

Each launch is checked bitwise against calling the compiled function itself
on a copy of the same inputs, on the C fast path and on the fallback (the
compiled call); errors the entry reports are the TVM-FFI call's, chained.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
pytest.importorskip("tvm_ffi")
import cuda.bindings.driver as cuda  # noqa: E402
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack, make_fake_stream  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind.launch.tvm_ffi import PreparedTvmFfiLaunch  # noqa: E402
from tests.kernels import styles as S  # noqa: E402


def dyn(t: Any) -> Any:
    return from_dlpack(t).mark_layout_dynamic()


def _r(seed: int, n: int) -> Any:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def windowed() -> Any:
    """windowed(out, inp, window_left=None, window_right: value, block=4 (Constexpr), stream, softcap=0.0)."""
    y = torch.zeros(8)
    return cute.compile(
        S.windowed, dyn(y), dyn(y), None, cutlass.Int32(1), 4, make_fake_stream(), cutlass.Float32(0.0), options="--enable-tvm-ffi"
    )


def test_prepare_gives_a_tvm_ffi_handle(windowed: Any, tvm_path: str) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    assert isinstance(h, PreparedTvmFfiLaunch)
    assert h.parameters == ("out", "inp", "window_left", "window_right", "stream", "softcap")
    assert h.fast_path == ("c" if tvm_path == "c" else "direct")
    assert "window_left: None" in repr(h)


CALLS = [
    ("positional", lambda s, n: ((torch.zeros(n), _r(s, n), None, 2 + s, 0, 0.25 * s), {})),
    ("default_softcap", lambda s, n: ((torch.zeros(n), _r(s, n), None, 5, 0), {})),
    ("keywords", lambda s, n: ((torch.zeros(n), _r(s, n)), {"window_left": None, "window_right": 7, "stream": 0, "softcap": 1.5})),
    ("int_for_float", lambda s, n: ((torch.zeros(n), _r(s, n), None, 3, 0, 2), {})),
]


@pytest.mark.parametrize("name, make", CALLS, ids=[c[0] for c in CALLS])
def test_launch_matches_the_direct_call(windowed: Any, name: str, make: Any, tvm_path: str) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    for seed, n in ((1, 8), (2, 13)):
        args, kwargs = make(seed, n)
        mine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        windowed(*args, **kwargs)
        assert h.launch(*mine, **kwargs) is None
        assert mine[0].numpy().tobytes() == args[0].numpy().tobytes()
        assert not torch.equal(mine[0], torch.zeros(n))  # the function did write


# keyword calls of the compiled function (out, inp, window_left, window_right, stream, softcap=0.0)
KEYWORD_CALLS = [
    ("last four by keyword", 2, {"window_left": None, "window_right": 7, "stream": 0, "softcap": 1.5}),
    ("every argument by keyword", 0, {"out": 0, "inp": 1, "window_left": None, "window_right": 3, "stream": 0, "softcap": 0.5}),
    ("out of order", 2, {"softcap": 2.5, "stream": 0, "window_right": 4, "window_left": None}),
    ("a default left out", 2, {"window_right": 6, "window_left": None, "stream": 0}),
    ("positional to the stream, softcap by keyword", 5, {"softcap": 1.25}),
    ("names made at run time", 2, {"".join(["window", "_left"]): None, "window_right": 2, "stream": 0}),
]


@pytest.mark.parametrize("name, npos, kwargs", KEYWORD_CALLS, ids=[c[0] for c in KEYWORD_CALLS])
def test_keyword_calls_are_placed_and_launched_without_the_compiled_call(
    windowed: Any, tvm_path: str, name: str, npos: int, kwargs: dict[str, Any]
) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    calls: list[Any] = []
    compiled = h._compiled

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(kw)
        return compiled(*args, **kw)

    h._compiled = counting
    for seed in (1, 2):
        out, inp = torch.zeros(13), _r(seed, 13)
        full = [out, inp, None, 3, 0, 0.0][:npos]
        given = {k: ((out, inp)[v] if k in ("out", "inp") else v) for k, v in kwargs.items()}
        ref = torch.zeros(13)
        swap = {id(out): ref}
        windowed(*[swap.get(id(a), a) for a in full], **{k: swap.get(id(v), v) for k, v in given.items()})
        assert h.launch(*full, **given) is None
        assert out.numpy().tobytes() == ref.numpy().tobytes()
        assert not torch.equal(ref, torch.zeros(13))
    # on the C launcher nothing reaches the compiled call; without it every launch is that call
    assert len(calls) == (0 if tvm_path == "c" else 2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"nonsense": 1, "window_right": 3, "window_left": None, "stream": 0},
        {"inp": torch.zeros(8), "window_right": 3, "window_left": None, "stream": 0},
        {"window_left": None, "stream": 0},
    ],
    ids=["unknown name", "given twice", "required left out"],
)
def test_keyword_calls_that_cannot_be_placed_are_refused_as_the_compiled_call_refuses_them(
    windowed: Any, tvm_path: str, kwargs: dict[str, Any]
) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(torch.zeros(8), torch.zeros(8), **kwargs)
    assert info.value.code == "CB202"


def test_entry_errors_are_cb309_chained_to_the_direct_calls(windowed: Any, tvm_path: str) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    bad = (torch.zeros(8), torch.zeros(8, dtype=torch.float64), None, 3, 0, 0.5)
    with pytest.raises(ValueError) as direct:
        windowed(*bad)
    with pytest.raises(ValueError) as info:
        h.launch(*bad)
    # both paths: the C launcher's entry call and the compiled call it falls back to
    assert info.value.code == "CB309"  # type: ignore[attr-defined]
    assert type(info.value.__cause__) is type(direct.value) and str(direct.value) in str(info.value.__cause__)


@pytest.mark.parametrize(
    "position, value",
    [(2, 5), (3, None), (3, 2**40)],
    ids=["value_for_none", "none_for_value", "int32_overflow"],
)
def test_what_the_entry_refuses_is_refused_as_the_direct_call_refuses_it(windowed: Any, position: int, value: Any, tvm_path: str) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    args = [torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5]
    args[position] = value
    with pytest.raises(Exception) as direct:
        windowed(*args)
    with pytest.raises(Exception) as info:
        h.launch(*args)
    assert isinstance(info.value, cute_bind.CuteBindError) and info.value.code == "CB309"
    cause = info.value.__cause__
    assert type(cause) is type(direct.value) and str(cause) == str(direct.value)


@pytest.mark.parametrize(
    "call, code",
    [
        (lambda h, a: h.launch(*a[:3]), "CB202"),  # too few: said as prepare() says it
        (lambda h, a: h.launch(*a, 1), "CB202"),  # too many
        (lambda h, a: h.launch(*a, nonsense=1), "CB202"),
        (lambda h, a: h.launch(torch.empty(8, device="meta"), *a[1:]), "CB309"),  # the conversion refuses a meta tensor
        (lambda h, a: h.launch(a[0], "x", *a[2:]), "CB309"),
    ],
    ids=["too_few", "too_many", "keyword", "meta_tensor", "str_for_tensor"],
)
def test_every_refusal_is_a_catalog_error_chained_to_the_calls_own(windowed: Any, tvm_path: str, call: Any, code: str) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    args = [torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5]
    with pytest.raises(cute_bind.CuteBindError) as info:
        call(h, args)
    assert info.value.code == code and info.value.__cause__ is not None


@pytest.mark.parametrize(
    "value, parameter",
    [("1.0", "softcap"), ((torch.zeros(2), None), "softcap"), (__import__("numpy").zeros(8, "float32"), "inp")],
    ids=["str", "structure_with_a_tensor", "numpy_array"],
)
def test_prepare_refuses_values_it_does_not_rewrite(windowed: Any, value: Any, parameter: str) -> None:
    args = [torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5]
    args[{"softcap": 5, "inp": 1}[parameter]] = value
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(windowed, *args)
    assert (info.value.code, info.value.parameter) == ("CB308", parameter)


def test_closed_handles_and_clones(windowed: Any, tvm_path: str) -> None:
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    c = h.clone()
    launch = h.launch
    h.close()
    with pytest.raises(cute_bind.PreparedLaunchError) as info:
        launch(torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    assert info.value.code == "CB404"
    y = torch.zeros(8)
    c.launch(y, torch.ones(8), None, 3, 0, 0.5)
    assert torch.equal(y, torch.full((8,), 3 * 1.5 * 4))


@pytest.mark.parametrize("how", ["copy", "deepcopy"])
def test_copies_are_clones_closing_one_leaves_the_other(windowed: Any, tvm_path: str, how: str) -> None:
    import copy

    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    c = copy.copy(h) if how == "copy" else copy.deepcopy(h)
    assert isinstance(c, PreparedTvmFfiLaunch) and c is not h
    c.close()
    assert c.closed and not h.closed
    y = torch.zeros(8)
    h.launch(y, torch.ones(8), None, 3, 0, 0.5)
    assert torch.equal(y, torch.full((8,), 3 * 1.5 * 4))


def test_a_handle_cannot_be_pickled_cb405(windowed: Any) -> None:
    import pickle

    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    with pytest.raises(cute_bind.CuteBindError) as info:
        pickle.dumps(h)
    assert info.value.code == "CB405"


def test_a_stream_default_of_the_compiled_function_is_taken_as_the_call_takes_it(tvm_path: str) -> None:
    """quack/FlashAttention style: `stream: cuda.CUstream = cuda.CUstream(0)` left out at prepare and launch."""
    scaler = S.Scaler(0.25)
    o, x = torch.zeros(8), _r(3, 8)
    marked = [from_dlpack(t).mark_layout_dynamic() for t in (o, x)]
    compiled = cute.compile(scaler, *marked, False, cutlass.Float32(1.0), make_fake_stream(), options="--enable-tvm-ffi")
    h = cute_bind.prepare(compiled, o, x, 0.5)  # the stream left out, as calling compiled(o, x, 0.5) leaves it
    mine, theirs = torch.zeros(8), torch.zeros(8)
    h.launch(mine, x, 0.75)
    compiled(theirs, x, 0.75)
    assert torch.equal(mine.view(torch.int32), theirs.view(torch.int32))
    h.launch(mine, x, 0.5, cuda.CUstream(0))  # a stream object given at launch: the call's own path
    compiled(theirs, x, 0.5, cuda.CUstream(0))
    assert torch.equal(mine.view(torch.int32), theirs.view(torch.int32))


class _FloatThatMoves:
    """A TVM-FFI float protocol value whose conversion moves ``out`` to new memory (``set_``)."""

    def __init__(self, value: float, out: Any, moved: Any) -> None:
        self.value, self.out, self.moved = value, out, moved

    def __tvm_ffi_float__(self) -> float:
        self.out.set_(self.moved)
        return self.value


def test_a_tensor_is_read_after_a_float_protocol_value_moves_it(windowed: Any, tvm_path: str) -> None:
    """The arguments' lifetime rule on the TVM-FFI launcher (issue 39 row 1): the tensors' DLTensors
    are written after every conversion that runs Python code, so the kernel writes where ``out``
    points when the entry runs (before: through the freed storage)."""
    h = cute_bind.prepare(windowed, torch.zeros(8), torch.zeros(8), None, 3, 0, 0.5)
    inp = _r(3, 8)
    expected = torch.zeros(8)
    windowed(expected, inp, None, 3, 0, 0.5)
    out, moved = torch.zeros(8), torch.zeros(8)
    h.launch(out, inp, None, 3, 0, _FloatThatMoves(0.5, out, moved))
    assert out.data_ptr() == moved.data_ptr()
    assert moved.numpy().tobytes() == expected.numpy().tobytes()
