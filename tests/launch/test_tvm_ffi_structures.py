"""Prepared TVM-FFI launches of functions taking structures (issue 40, item 2), on host functions.

quack's GEMM family passes NamedTuples and dataclasses of tensors, DSL numbers and ``None``;
FlashAttention-4 passes tuples of tensors (``aux_data``), block-sparsity NamedTuples and FP8
descale tuples. TVM-FFI's call passes each as an ``ffi.Array`` of its leaves (nested arrays for
nested structures; a dataclass the DSL's call unpacks as the tuple of its fields), which the
compiled entry decodes like top-level arguments. ``prepare()`` takes them as the call takes them
and the C launcher rewrites the leaves of its own array per launch.

Every launch is compared bitwise with the compiled function's own call on copies of the same
inputs, on the C launcher and on the direct path (``tvm_path``); a spy in place of the handle's
compiled function counts the launches that reached the compiled call.
"""

from __future__ import annotations

import dataclasses
import types
import warnings
import weakref
from typing import Any, Callable

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
tvm_ffi = pytest.importorskip("tvm_ffi")
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind.launch.spec import TvmFfiLaunchSpec, TvmStructureArg, TvmStructureNode  # noqa: E402
from cute_bind.launch.tvm_ffi import PreparedTvmFfiLaunch  # noqa: E402
from tests.kernels import tvm_structures as K  # noqa: E402

I32, F32 = cutlass.Int32, cutlass.Float32
N = 8


def dyn(t: Any) -> Any:
    return from_dlpack(t).mark_layout_dynamic()


def _r(seed: int, salt: int) -> Any:
    return torch.randn(N, generator=torch.Generator().manual_seed(1000 * seed + salt))


class Spy:
    """Stands in for a handle's compiled function: counts the launches that reached its slow path."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.calls = fn, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


def spied(handle: Any) -> Spy:
    spy = Spy(handle.compiled)
    handle._compiled = spy
    return spy


def copied(value: Any) -> Any:
    """``value`` with every tensor cloned, structures rebuilt with their own types (numbers shared)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: copied(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init})
    if isinstance(value, tuple):
        return tuple.__new__(type(value), [copied(v) for v in value])
    if isinstance(value, list):
        return [copied(v) for v in value]
    return value


# ------------------------------------------------------------------ the cases: function, compile arguments, launch values
d = dyn(torch.zeros(N))

#: name -> (function, compile arguments, values(seed): the launch's arguments, out first)
CASES: dict[str, tuple[Any, tuple[Any, ...], Callable[[int], tuple[Any, ...]]]] = {
    # quack GEMM: scheduler NamedTuple (tensor, Int32, None), frozen epilogue dataclass (tensor, Float32, None)
    "gemm_namedtuple_and_dataclass": (
        K.gemm_like,
        (d, d, K.SchedulerArgs(d, I32(1)), K.EpilogueArgs(d, F32(1.0))),
        lambda s: (
            torch.zeros(N),
            _r(s, 1),
            K.SchedulerArgs(_r(s, 2), I32(s - 3)),
            K.EpilogueArgs(_r(s, 3), F32(0.25 * s)),
        ),
    ),
    # FA4 aux_data: a nested tuple of tensors
    "fa4_aux_tensors_nested": (
        K.aux_nested,
        (d, d, (d, (d, d))),
        lambda s: (torch.zeros(N), _r(s, 1), (_r(s, 2), (_r(s, 3), _r(s, 4)))),
    ),
    # FA4 block sparsity NamedTuple (two tensors, two None) and FP8 descale tuple (two tensors and None)
    "fa4_block_sparse_and_descale": (
        K.block_sparse,
        (d, d, K.BlockSparse(d, d), (d, d, None)),
        lambda s: (torch.zeros(N), _r(s, 1), K.BlockSparse(_r(s, 2), _r(s, 3)), (_r(s, 4), _r(s, 5), None)),
    ),
    # Python int and float leaves beside a tensor
    "python_scalar_leaves": (
        K.affine_struct,
        (d, d, K.Affine(d, I32(1), F32(1.0))),
        lambda s: (torch.zeros(N), _r(s, 1), K.Affine(_r(s, 2), 7 - 3 * s, 0.5 + s)),
    ),
    # a list of tensors
    "list_of_tensors": (
        K.list_sum,
        (d, [d, d, d], F32(1.0)),
        lambda s: (torch.zeros(N), [_r(s, 1), _r(s, 2), _r(s, 3)], F32(1.5 * s)),
    ),
    # a dataclass inside the (unpacked) epilogue dataclass, a None field
    "nested_dataclasses": (
        K.nested_epilogue,
        (d, d, K.Outer(K.Inner(d, F32(1.0)), d)),
        lambda s: (torch.zeros(N), _r(s, 1), K.Outer(K.Inner(_r(s, 2), F32(-0.5 * s)), _r(s, 3))),
    ),
}

_COMPILED: dict[str, Any] = {}


def compiled_for(name: str) -> Any:
    if name not in _COMPILED:
        fn, args, _ = CASES[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the DSL warns of None members it compiles in
            _COMPILED[name] = cute.compile(fn, *args, options="--enable-tvm-ffi")
    return _COMPILED[name]


LAUNCHES = 12


@pytest.mark.parametrize("name", list(CASES))
def test_launches_match_the_compiled_call_without_it(name: str, tvm_path: str) -> None:
    compiled, values = compiled_for(name), CASES[name][2]
    h = cute_bind.prepare(compiled, *values(0))
    assert isinstance(h, PreparedTvmFfiLaunch) and "structure" in repr(h)
    spy = spied(h)
    for seed in range(1, LAUNCHES + 1):
        mine = values(seed)
        theirs = copied(mine)
        theirs[0].fill_(float("nan"))
        compiled(*theirs)
        assert h.launch(*mine) is None
        assert mine[0].numpy().tobytes() == theirs[0].numpy().tobytes()
        assert not torch.equal(mine[0], torch.zeros(N))  # the function did write
    # the C launcher takes every structure without the compiled call; the direct path is that call
    assert spy.calls == (0 if tvm_path == "c" else LAUNCHES)


def test_keyword_calls_and_clones(tvm_path: str) -> None:
    compiled, values = compiled_for("gemm_namedtuple_and_dataclass"), CASES["gemm_namedtuple_and_dataclass"][2]
    h = cute_bind.prepare(compiled, *values(0))
    c = h.clone()  # its own array: launches of the two interleave
    spies = spied(h), spied(c)
    for seed in range(1, 5):
        for handle in (h, c):
            out, a, sched, epi = values(seed + (handle is c))
            ref = torch.full((N,), float("nan"))
            compiled(ref, a, sched, epi)
            handle.launch(out, a, epi=epi, sched=sched)
            assert out.numpy().tobytes() == ref.numpy().tobytes()
    assert [s.calls for s in spies] == ([0, 0] if tvm_path == "c" else [4, 4])


# ------------------------------------------------------------------ another form: the compiled call
def _gemm(seed: int, **change: Any) -> tuple[Any, ...]:
    out, a, sched, epi = CASES["gemm_namedtuple_and_dataclass"][2](seed)
    return out, a, change.get("sched", sched), change.get("epi", epi)


OTHER_FORMS = [
    # numbers of another type at a number leaf: written as the launcher writes top-level ones (an int
    # leaf takes an int or a DSL integer, a float leaf a float or a DSL float): the fast path
    ("python_numbers_for_dsl_numbers", lambda s: _gemm(s, sched=K.SchedulerArgs(_r(s, 2), 5), epi=K.EpilogueArgs(_r(s, 3), 0.75)), "fast"),
    # the same leaves in another type: TVM-FFI builds the same array, the entry takes it (the call)
    ("plain_tuple_for_the_namedtuple", lambda s: _gemm(s, sched=(_r(s, 2), I32(2), None)), "call"),
    ("tuple_for_the_dataclass", lambda s: _gemm(s, epi=(_r(s, 3), F32(0.5), None)), "call"),
    ("int_for_a_float_leaf", lambda s: _gemm(s, epi=K.EpilogueArgs(_r(s, 3), 2)), "call"),
    # another form the entry refuses: a tensor where None was compiled in, another arity, no structure
    ("tensor_for_a_none_leaf", lambda s: _gemm(s, sched=K.SchedulerArgs(_r(s, 2), I32(2), _r(s, 4))), "refused"),
    ("shorter_tuple", lambda s: _gemm(s, sched=(_r(s, 2), I32(2))), "refused"),
    ("a_number_for_the_structure", lambda s: _gemm(s, epi=1.0), "refused"),
]


@pytest.mark.parametrize("name, make, outcome", OTHER_FORMS, ids=[f[0] for f in OTHER_FORMS])
def test_another_form_is_the_compiled_call(name: str, make: Any, outcome: str, tvm_path: str) -> None:
    compiled = compiled_for("gemm_namedtuple_and_dataclass")
    h = cute_bind.prepare(compiled, *_gemm(0))
    spy = spied(h)
    mine = make(1)
    theirs = copied(mine)
    if outcome != "refused":
        compiled(*theirs)
        h.launch(*mine)
        assert mine[0].numpy().tobytes() == theirs[0].numpy().tobytes()
    else:
        with pytest.raises(Exception) as direct:
            compiled(*theirs)
        with pytest.raises(cute_bind.CuteBindError) as info:
            h.launch(*mine)
        assert info.value.code == "CB309"
        assert type(info.value.__cause__) is type(direct.value) and str(info.value.__cause__) == str(direct.value)
    assert spy.calls == (0 if outcome == "fast" and tvm_path == "c" else 1)
    # the prepared form still takes the fast path afterwards
    again = _gemm(2)
    ref = copied(again)
    compiled(*ref)
    h.launch(*again)
    assert again[0].numpy().tobytes() == ref[0].numpy().tobytes()
    assert spy.calls == ((0 if outcome == "fast" else 1) if tvm_path == "c" else 2)


def test_a_structure_given_where_none_was_compiled_is_prepared_and_refused_by_the_entry(tvm_path: str) -> None:
    """prepare() cannot see what the compiled entry takes: a value its call refuses is the entry's CB309."""
    compiled = compiled_for("gemm_namedtuple_and_dataclass")
    args = _gemm(0, sched=K.SchedulerArgs(_r(0, 2), I32(1), _r(0, 4)))
    h = cute_bind.prepare(compiled, *args)
    with pytest.raises(Exception) as direct:
        compiled(*copied(args))
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(*args)
    assert info.value.code == "CB309" and str(info.value.__cause__) == str(direct.value)


# ------------------------------------------------------------------ the arguments' lifetime rule
class MovesFloat:
    """A number TVM-FFI writes through ``__tvm_ffi_float__``, which runs ``action`` first."""

    def __init__(self, value: float, action: Callable[[], None]) -> None:
        self.value, self.action, self.ran = value, action, 0

    def __tvm_ffi_float__(self) -> float:
        self.ran += 1
        self.action()
        return float(self.value)


def _scaled_into() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return cute.compile(K.scaled_into, K.ScaledOut(d, F32(1.0)), d, options="--enable-tvm-ffi")


def _scaled_box() -> Any:
    return cute.compile(K.scaled_box, K.ScaledBox(d, F32(1.0)), d, options="--enable-tvm-ffi")


def test_a_number_leaf_moving_a_tensor_leafs_storage_writes_into_the_new_storage(tvm_path: str) -> None:
    compiled = _scaled_into()
    inp = torch.arange(N, dtype=torch.float32)
    h = cute_bind.prepare(compiled, K.ScaledOut(torch.zeros(N), F32(1.0)), inp)
    for _ in range(3):
        out, moved = torch.zeros(N), torch.zeros(N)
        alpha = MovesFloat(3.0, lambda: out.set_(moved))  # out's old storage is freed here
        h.launch(K.ScaledOut(out, alpha), inp)
        assert alpha.ran == 1
        assert moved.tolist() == (inp * 3.0).tolist()


def test_a_dataclass_field_rebound_by_a_later_field_is_held_and_written(tvm_path: str) -> None:
    """The call unpacks the dataclass (reads out, then alpha) before converting alpha, whose conversion
    rebinds ``box.out``: the tensor read first is the one written, held through the call although
    nothing else refers to it, and released after."""
    compiled = _scaled_box()
    inp = torch.arange(N, dtype=torch.float32)
    h = cute_bind.prepare(compiled, K.ScaledBox(torch.zeros(N), F32(1.0)), inp)

    box = K.ScaledBox(torch.zeros(N), F32(1.0))
    first = weakref.ref(box.out)

    def rebind() -> None:
        # box.out was the first tensor's last reference: only what the launch holds keeps it alive
        box.out = torch.full((N,), -1.0)

    box.alpha = MovesFloat(2.0, rebind)
    h.launch(box, inp)
    assert box.out.tolist() == [-1.0] * N  # the tensor bound after the unpacking is not the one written
    assert first() is None  # held for the call, released after it
    # what the launch wrote, observed through a tensor kept alive, is what the compiled call writes
    for go in (h.launch, compiled):
        kept = torch.zeros(N)
        box = K.ScaledBox(kept, F32(1.0))
        box.alpha = MovesFloat(2.0, lambda: setattr(box, "out", torch.zeros(N)))
        go(box, inp)
        assert kept.tolist() == (inp * 2.0).tolist()


# ------------------------------------------------------------------ refusals
def test_a_dataclass_inside_a_structure_is_refused_cb316() -> None:
    compiled = compiled_for("fa4_aux_tensors_nested")
    epi = K.EpilogueArgs(torch.zeros(N), F32(1.0))
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(compiled, torch.zeros(N), torch.zeros(N), (epi, (torch.zeros(N), torch.zeros(N))))
    assert (info.value.code, info.value.parameter) == ("CB316", "aux_data")
    assert "aux_data[0]" in str(info.value)


def test_a_bare_function_takes_structures_and_refuses_a_dataclass_cb316(tmp_path: Any, tvm_path: str) -> None:
    """A function loaded back (quack's disk cache) has no keyword wrapper: it unpacks nothing, so a
    dataclass is an opaque object for it (CB316); its tuple of fields is taken, and NamedTuples as they are."""
    compiled = compiled_for("gemm_namedtuple_and_dataclass")
    path = str(tmp_path / "gemm.o")
    compiled.export_to_c(path, function_name="func")
    loaded = cute.runtime.load_module(path, enable_tvm_ffi=True)["func"]
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(loaded, *_gemm(0))
    assert (info.value.code, info.value.parameter) == ("CB316", "arg3")

    def fields_of(args: tuple[Any, ...]) -> tuple[Any, ...]:
        epi = args[3]
        return (*args[:3], tuple(getattr(epi, f.name) for f in dataclasses.fields(epi)))

    h = cute_bind.prepare(loaded, *fields_of(_gemm(0)))
    spy = spied(h)
    for seed in (1, 2, 3):
        mine = fields_of(_gemm(seed))
        theirs, compiled_ref = copied(mine), copied(_gemm(seed))
        loaded(*theirs)
        compiled(*compiled_ref)
        h.launch(*mine)
        assert mine[0].numpy().tobytes() == theirs[0].numpy().tobytes() == compiled_ref[0].numpy().tobytes()
    assert spy.calls == (0 if tvm_path == "c" else 3)


@pytest.mark.parametrize(
    "value, where",
    [
        ((torch.zeros(N), "x"), "a str"),
        ((torch.zeros(N), __import__("numpy").zeros(N, "float32")), "ndarray"),
        ((torch.zeros(N), 2**70), "beyond int64"),
        ((torch.zeros(N), {"a": 1}), "dict"),
    ],
    ids=["str_leaf", "numpy_leaf", "huge_int_leaf", "dict_leaf"],
)
def test_a_leaf_prepare_does_not_rewrite_is_refused_cb308(value: Any, where: str) -> None:
    compiled = compiled_for("fa4_aux_tensors_nested")
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(compiled, torch.zeros(N), torch.zeros(N), value)
    assert (info.value.code, info.value.parameter) == ("CB308", "aux_data")
    assert "aux_data[1]" in str(info.value)


def test_a_structure_for_a_parameter_annotated_as_a_number_is_refused_cb308() -> None:
    compiled = compiled_for("list_of_tensors")
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(compiled, torch.zeros(N), [torch.zeros(N)] * 3, (torch.zeros(2), None))
    assert (info.value.code, info.value.parameter) == ("CB308", "scale")


# ------------------------------------------------------------------ the records the C launcher reads
def test_c_reads_the_structure_records_in_their_field_order() -> None:
    c = pytest.importorskip("cute_bind.launch._ctvmffi")
    assert (c.STRUCTURE_ARG_FIELDS, c.STRUCTURE_NODE_FIELDS) == (TvmStructureArg._fields, TvmStructureNode._fields)


def _spec_with(nodes: Any) -> types.SimpleNamespace:
    array = tvm_ffi.convert((None,))
    arg = TvmStructureArg(nodes, array, int(array.__chandle__()), 71)
    return types.SimpleNamespace(
        entry=1, self_handle=0, set_stream=1, move_error=1, dec_ref=1, kinds=b"s", specs=(arg,), defaults=(None,),
        required=object(), slow=print, fail=print, classify=print, keep=cute_bind.launch.spec.TvmKeepAlive(None, None), names=None,
    )  # fmt: skip


GOOD_LEAF = TvmStructureNode("i", None, 0, 1, None, 4096, 0, 0)
BAD_NODES = [
    ("empty", ()),
    ("a_leaf_as_root", (GOOD_LEAF,)),
    ("size_too_small", (TvmStructureNode("t", tuple, 1, 1, None, 0, 0, 0), GOOD_LEAF)),
    ("children_overflow", (TvmStructureNode("t", tuple, 2, 2, None, 0, 0, 0), GOOD_LEAF)),
    ("unknown_op", (TvmStructureNode("t", tuple, 1, 2, None, 0, 0, 0), GOOD_LEAF._replace(op="x"))),
    ("leaf_without_address", (TvmStructureNode("t", tuple, 1, 2, None, 0, 0, 0), GOOD_LEAF._replace(address=0))),
    ("dataclass_without_names", (TvmStructureNode("d", tuple, 1, 2, None, 0, 0, 0), GOOD_LEAF)),
    ("tensor_without_reader", (TvmStructureNode("t", tuple, 1, 2, None, 0, 0, 0), GOOD_LEAF._replace(op="T", type=tuple))),
]


@pytest.mark.parametrize("nodes", [b[1] for b in BAD_NODES], ids=[b[0] for b in BAD_NODES])
def test_malformed_structure_nodes_are_refused_by_the_record_and_by_c(nodes: Any) -> None:
    c = pytest.importorskip("cute_bind.launch._ctvmffi")
    good = (TvmStructureNode("t", tuple, 1, 2, None, 0, 0, 0), GOOD_LEAF)
    c.Launcher(_spec_with(good))  # the well-formed record is taken
    TvmFfiLaunchSpec(**vars(_spec_with(good)))
    with pytest.raises(ValueError):
        c.Launcher(_spec_with(nodes))
    with pytest.raises(ValueError):
        TvmFfiLaunchSpec(**vars(_spec_with(nodes)))
