"""Structure parameters: NamedTuple and dataclass annotations whose fields are eligible kinds or None.

The shapes are FlashAttention-4's: ``aux_data: AuxData = AuxData()`` (every field None: no C
argument, a compile-time constant), ``blocksparse_tensors: Optional[BlockSparseTensors]`` (a
NamedTuple of tensors, some fields None), ``sink_tensors: LearnableSinkBwdTensors | None`` (four
tensors). The DSL flattens a structure into its fields' C arguments; every row compiles a host-only
function with the DSL (the structures holding ``from_dlpack`` tensors, as the DSL requires), launches
through ``cute_bind.prepare`` of that compiled function, ``@cute_bind.kernel``'s bound handle and
``kernel(*args)`` (structures holding plain torch tensors), and compares the outputs bitwise with
the DSL's own call.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import itertools
from typing import Any, NamedTuple, Optional

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cuda.bindings.driver as cuda  # noqa: E402
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Constexpr, Float32, Int32  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind.slots import OptionalKind, Rejected, Where, classify, infer_slot  # noqa: E402
from cute_bind.slots.structure import StructureKind  # noqa: E402


class AuxData(NamedTuple):
    tensors: tuple | list | None = None
    scalars: tuple | None = None


class SinkTensors(NamedTuple):
    dpsum: cute.Tensor
    lse: cute.Tensor
    sink: cute.Tensor
    dsink: cute.Tensor


class BlockSparse(NamedTuple):
    mask_block_cnt: cute.Tensor
    mask_block_idx: cute.Tensor
    full_block_cnt: cute.Tensor | None = None
    scale: Float32 | None = None


@dataclasses.dataclass(frozen=True)
class Epilogue:
    alpha: Float32
    n: Int32
    times: Constexpr[int] = 1
    bias: cute.Tensor | None = None


@cute.jit
def attention_like(
    out: cute.Tensor,
    sink_tensors: SinkTensors | None,
    blocksparse_tensors: Optional[BlockSparse],
    aux_data: AuxData = AuxData(),
):
    """out[0..4] from every field that is not None (a None field compiles its branch away)."""
    out[0] = Float32(-1.0)
    if cutlass.const_expr(sink_tensors is not None):
        out[0] = sink_tensors.dpsum[0] + sink_tensors.lse[1] + sink_tensors.sink[0] * sink_tensors.dsink[2]
    if cutlass.const_expr(blocksparse_tensors is not None):
        out[1] = blocksparse_tensors.mask_block_cnt[0] - blocksparse_tensors.mask_block_idx[1]
        if cutlass.const_expr(blocksparse_tensors.full_block_cnt is not None):
            out[2] = blocksparse_tensors.full_block_cnt[0]
        if cutlass.const_expr(blocksparse_tensors.scale is not None):
            out[3] = blocksparse_tensors.scale
    if cutlass.const_expr(aux_data.tensors is not None):
        out[4] = aux_data.tensors[0][0]
    if cutlass.const_expr(aux_data.scalars is not None):
        out[5] = Float32(aux_data.scalars[0])


@cute.jit
def with_epilogue(out: cute.Tensor, epi: Epilogue):
    out[0] = epi.alpha * Float32(epi.n) * Float32(epi.times)
    if cutlass.const_expr(epi.bias is not None):
        out[1] = epi.bias[0]


ATTENTION = cute_bind.kernel(max_specializations=None)(attention_like)
EPILOGUE = cute_bind.kernel(with_epilogue)


def _t(seed: int, n: int = 4) -> Any:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def _dyn(t: Any) -> Any:
    return from_dlpack(t).mark_layout_dynamic()


def _dsl(value: Any) -> Any:
    """``value`` with every torch tensor (also inside structures and tuples) as a dynamic ``from_dlpack`` tensor."""
    if isinstance(value, torch.Tensor):
        return _dyn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_dsl(v) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_dsl(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _dsl(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init})
    return value


# ------------------------------------------------------------------ classification
def test_structures_are_slots() -> None:
    assert isinstance(classify(AuxData), StructureKind)
    assert isinstance(classify(SinkTensors), StructureKind)
    assert isinstance(classify(Epilogue), StructureKind)
    optional = classify(Optional[BlockSparse])
    assert isinstance(optional, OptionalKind) and isinstance(optional.element, StructureKind)
    untyped = collections.namedtuple("Untyped", "a b")
    assert isinstance(classify(untyped), StructureKind)  # field kinds from the values at bind
    assert isinstance(infer_slot(AuxData()), StructureKind)  # an unannotated parameter given one


class Labelled(NamedTuple):
    scale: Float32
    label: str


class Compiled(NamedTuple):
    n: Int32
    k: Constexpr[int] = 3


class Unresolved(NamedTuple):
    x: "NoSuchType"  # noqa: F821 - unresolvable on purpose


class Holder(NamedTuple):
    me: "Holder"


class Streamed(NamedTuple):
    t: cute.Tensor
    stream: Optional[cuda.CUstream]


@dataclasses.dataclass
class StreamedData:
    t: cute.Tensor
    stream: cuda.CUstream


REJECTED = [
    (Labelled, "field 'label': str is not eligible"),
    (Unresolved, "cannot be resolved (NameError"),
    (Holder, "holds itself"),
    (Streamed, "field 'stream': a stream inside a NamedTuple"),  # the DSL adapts nothing inside a NamedTuple
]


@pytest.mark.parametrize("cls, detail", REJECTED, ids=[c[0].__name__ for c in REJECTED])
def test_structures_with_an_ineligible_field_are_cb125(cls: type, detail: str) -> None:
    found = classify(cls)
    assert isinstance(found, Rejected) and found.diagnostic.code == "CB125"
    assert found.detail is not None and detail in found.detail


class Raster(enum.Enum):  # an IntEnum is an int: DSL 4.8.1's plain (non-TVM-FFI) call passes it as one
    ALONG_M = 0
    ALONG_N = 1


class SchedulerOptions(NamedTuple):
    """quack's ``TileSchedulerOptions`` shape: numbers, a Constexpr IntEnum with a default, an optional pointer."""

    clusters: Int32
    raster: Constexpr[Raster] = Raster.ALONG_M
    swizzle: Int32 = Int32(8)
    semaphore: Optional[cute.Pointer] = None


@cute.jit
def scheduled(opts: SchedulerOptions, out: cute.Pointer):
    # the structure first and a pointer after: DSL 4.8.1's own call rebuilds a NamedTuple holding a
    # Constexpr field wrongly in other shapes (a StopIteration in its tree_unflatten, or a value
    # shifted into the next parameter; no cute_bind involved), which quack's GEMM call avoids
    t = cute.make_tensor(out, cute.make_layout(1))
    if cutlass.const_expr(opts.raster == Raster.ALONG_M):
        t[0] = Float32(opts.clusters * opts.swizzle)
    else:
        t[0] = Float32(opts.clusters - opts.swizzle)


#: what each door compiles with (the trailing fields at their defaults: DSL 4.8.1's own call misreads
#: other shapes of this NamedTuple), and the calls made after it
COMPILED_WITH = SchedulerOptions(Int32(3), Raster.ALONG_N)
SCHEDULED_CALLS = [
    SchedulerOptions(Int32(7), Raster.ALONG_N, Int32(2)),
    (Int32(4), Raster.ALONG_N, Int32(9), None),  # a plain tuple, as the compiled function's own call takes
]


def _ptr(t: Any) -> Any:
    return cute.runtime.make_ptr(Float32, t.data_ptr(), cute.AddressSpace.generic)


@pytest.mark.parametrize("opts", SCHEDULED_CALLS, ids=["namedtuple", "plain-tuple"])
def test_namedtuple_constexpr_fields_are_compile_time_constants(opts: Any) -> None:
    """A NamedTuple's Constexpr field (quack's ``TileSchedulerOptions.raster_order``) is traced as a
    constant with no C argument: every door equals the DSL's own call."""
    want = torch.zeros(1)
    as_nt = SchedulerOptions(*opts)
    cute.compile(scheduled, COMPILED_WITH, _ptr(want))(as_nt, _ptr(want))
    k = cute_bind.kernel(scheduled)
    got = [torch.zeros(1) for _ in range(3)]
    k.bind(COMPILED_WITH, got[0]).launch(opts, got[0])
    k(COMPILED_WITH, got[1])
    k(opts, got[1])
    cute_bind.prepare(cute.compile(scheduled, COMPILED_WITH, _ptr(got[2])), COMPILED_WITH, _ptr(got[2])).launch(as_nt, _ptr(got[2]))
    for g in got:
        assert torch.equal(g, want)
    assert want[0] == float(as_nt.clusters - as_nt.swizzle)  # the ALONG_N branch, with the call's numbers


def test_a_changed_namedtuple_constexpr_field_is_cb232() -> None:
    out = torch.zeros(1)
    handle = cute_bind.kernel(scheduled).bind(COMPILED_WITH, out)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        handle.launch(SchedulerOptions(Int32(3), Raster.ALONG_M), out)
    assert info.value.code == "CB232" and info.value.parameter == "opts.raster"


@cute.jit
def from_dataclass(out: cute.Tensor, s: StreamedData):
    out[0] = s.t[0]


def test_a_dataclass_takes_a_stream(path: str) -> None:
    k = cute_bind.kernel(from_dataclass)
    out = torch.zeros(1)
    handle = k.bind(out, StreamedData(_t(1), cuda.CUstream(0)))
    t = _t(2)
    handle.launch(out, StreamedData(t, cuda.CUstream(0)))
    assert out[0] == t[0]
    assert len(handle.slots["s"].parts) == 2  # the tensor's descriptor, the stream


def test_a_kernel_with_an_ineligible_structure_is_refused_at_decoration() -> None:
    def fn(out: cute.Tensor, params: Labelled) -> None:
        pass

    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(fn)
    assert (info.value.code, info.value.parameter) == ("CB125", "params")


# ------------------------------------------------------------------ launches equal the DSL's own call
def _attention_args(seed: int, sink: bool, sparse: bool, full: bool, aux: bool) -> list[Any]:
    return [
        torch.zeros(6),
        SinkTensors(_t(seed), _t(seed + 1), _t(seed + 2), _t(seed + 3)) if sink else None,
        BlockSparse(_t(seed + 4), _t(seed + 5), _t(seed + 6) if full else None, Float32(0.5 * seed) if full else None) if sparse else None,
        AuxData((_t(seed + 7),), (Float32(seed),)) if aux else AuxData(),
    ]


PATTERNS = list(itertools.product([False, True], repeat=4))  # which structures and fields hold values


@pytest.mark.parametrize(
    "sink, sparse, full, aux", PATTERNS, ids=["".join("SBFA"[i] if on else "-" for i, on in enumerate(p)) for p in PATTERNS]
)
def test_launches_match_the_dsl_call(sink: bool, sparse: bool, full: bool, aux: bool, path: str) -> None:
    bind = _attention_args(1, sink, sparse, full, aux)
    compiled = cute.compile(attention_like, *_dsl(bind))
    handles = [cute_bind.prepare(compiled, *_dsl(bind)), ATTENTION.bind(*bind)]
    for seed in (2, 3):
        args = _attention_args(seed, sink, sparse, full, aux)
        ref = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        compiled(*_dsl(ref))
        for launch in [h.launch for h in handles] + [ATTENTION]:
            args[0].zero_()
            launch(*args)
            assert args[0].numpy().tobytes() == ref[0].numpy().tobytes(), launch


def test_a_constant_structure_has_no_c_argument(path: str) -> None:
    handle = ATTENTION.bind(torch.zeros(6), None, None)  # aux_data left out: AuxData()
    assert handle.slots["aux_data"].parts == ()
    out = torch.zeros(6)
    handle.launch(out, None, None)
    handle.launch(out, None, None, AuxData())
    handle.launch(out, None, None, AuxData(None, None))
    assert out[0] == -1.0


def test_dataclass_fields_and_constants_match_the_dsl_call(path: str) -> None:
    for times, bias in [(1, None), (3, _t(9))]:
        bind = [torch.zeros(2), Epilogue(Float32(0.5), Int32(4), times, bias)]
        compiled = cute.compile(with_epilogue, *_dsl(bind))
        handles = [cute_bind.prepare(compiled, *_dsl(bind)), EPILOGUE.bind(*bind)]
        for alpha, n in [(1.5, 3), (-0.25, 7)]:
            epi = Epilogue(alpha, n, times, _t(10) if bias is not None else None)  # plain numbers: the fields' slots take them
            ref = torch.zeros(2)
            compiled(_dyn(ref), _dsl(Epilogue(Float32(alpha), Int32(n), times, epi.bias)))
            for launch in [h.launch for h in handles] + [EPILOGUE]:
                out = torch.zeros(2)
                launch(out, epi)
                assert out.numpy().tobytes() == ref.numpy().tobytes()


def test_python_numbers_inside_a_namedtuple_compile() -> None:
    """The DSL adapts nothing inside a NamedTuple (a Python number there does not compile);
    the structure slot gives it the field's DSL value."""
    out = torch.zeros(6)
    ATTENTION(out, None, BlockSparse(_t(1), _t(2), _t(3), 2.5), AuxData(None, (7, 0.5)))
    assert (out[3], out[5]) == (2.5, 7.0)


# ------------------------------------------------------------------ a launch keeps what was compiled
CHANGES = [
    # (values bound, values launched, code, parameter)
    ([None, None], [None, None, AuxData((_t(1),))], "CB225", "aux_data.tensors"),
    ([None, None, AuxData((_t(1),))], [None, None, AuxData()], "CB225", "aux_data.tensors"),
    ([None, None, AuxData((_t(1),))], [None, None, AuxData((_t(1), _t(2)))], "CB215", "aux_data.tensors"),
    ([None, BlockSparse(_t(1), _t(2))], [None, BlockSparse(_t(1), _t(2), _t(3))], "CB225", "blocksparse_tensors.full_block_cnt"),
    ([None, None], [SinkTensors(_t(1), _t(2), _t(3), _t(4)), None], "CB225", "sink_tensors"),
    ([None, None], [None, None, (None,)], "CB234", "aux_data"),  # a plain tuple of another arity than AuxData's
    ([None, None], [None, None, [None, None]], "CB204", "aux_data"),  # a list is not an AuxData
    ([SinkTensors(_t(1), _t(2), _t(3), _t(4)), None], [SinkTensors(_t(1), _t(2), _t(3), 1.0), None], "CB204", "sink_tensors.dsink"),
]


@pytest.mark.parametrize("bound, launched, code, param", CHANGES, ids=[f"{c[2]}-{c[3]}" for c in CHANGES])
def test_a_launch_keeps_what_was_compiled(bound: list[Any], launched: list[Any], code: str, param: str, path: str) -> None:
    out = torch.zeros(6)
    handle = ATTENTION.bind(out, *bound)
    handle.launch(out, *bound)
    with pytest.raises(cute_bind.CuteBindError) as info:
        handle.launch(out, *launched)
    assert (info.value.code, info.value.kernel, info.value.parameter) == (code, "attention_like", param)


def test_a_changed_constexpr_field_is_cb232(path: str) -> None:
    out = torch.zeros(2)
    handle = EPILOGUE.bind(out, Epilogue(Float32(1.0), Int32(1), 2))
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        handle.launch(out, Epilogue(Float32(1.0), Int32(1), 5))
    assert (info.value.code, info.value.parameter) == ("CB232", "epi.times")


def test_kernel_calls_specialize_per_structure_shape(path: str) -> None:
    k = cute_bind.kernel(with_epilogue)
    out = torch.zeros(2)
    for times, want in [(1, 2.0), (3, 6.0), (1, 2.0), (3, 6.0)]:
        k(out, Epilogue(Float32(0.5), Int32(4), times))
        assert out[0] == want
    assert k.cache_info()["specializations"] == 2
    aux = cute_bind.kernel(attention_like)
    out = torch.zeros(6)
    aux(out, None, None)
    aux(out, None, None, AuxData((torch.full((4,), 7.0),)))  # the field was None: a new specialization
    assert out[4] == 7.0
    assert aux.cache_info()["specializations"] == 2


def test_structure_slots_hold_their_tensors_until_the_call_returns() -> None:
    slot = ATTENTION.bind(torch.zeros(6), SinkTensors(_t(1), _t(2), _t(3), _t(4)), None).slots["sink_tensors"]
    value = SinkTensors(_t(1), _t(2), _t(3), _t(4))
    held = slot.coerce(value, Where("attention_like", "sink_tensors"))
    assert len(held) == slot.width == 8  # each dynamic 1-D tensor: its address and extent
    assert any(o is value for o in held.owner)  # the structure (and so its tensors) is held


@cute.jit
def bare_tuple(out: cute.Tensor, epilogue_args: tuple):
    """quack's GEMMs annotate ``epilogue_args: tuple`` and pass a NamedTuple with None fields."""
    out[0] = epilogue_args.mask_block_cnt[0] - epilogue_args.mask_block_idx[1]
    if cutlass.const_expr(epilogue_args.scale is not None):
        out[1] = epilogue_args.scale


@pytest.mark.parametrize("scale", [None, Float32(2.5)], ids=["none-fields", "all-fields"])
def test_a_namedtuple_given_to_a_bare_tuple_annotation_binds_as_a_structure(scale: Any) -> None:
    args = BlockSparse(_t(1), _t(2), None, scale)
    want, got, again = torch.zeros(2), torch.zeros(2), torch.zeros(2)
    cute.compile(bare_tuple, _dyn(want), _dsl(args))(_dyn(want), _dsl(args))
    k = cute_bind.kernel(bare_tuple)
    k(got, args)
    handle = k.bind(again, args)
    handle.launch(again, args)
    assert torch.equal(got, want) and torch.equal(again, want)
    assert isinstance(handle.slots["epilogue_args"], StructureKind)


def _generic_fake(*shape: Any) -> Any:
    from cutlass.cute.runtime import make_fake_tensor

    return make_fake_tensor(Float32, shape, stride=(1,), memspace=cute.AddressSpace.generic)


def test_a_structure_holding_fake_tensors_serves_real_calls() -> None:
    """``kernel.compile`` (TVM-FFI, as quack compiles) with the client's fakes inside a NamedTuple (quack's
    ``EpilogueArguments`` holding ``mAuxOut``): the fakes give no launch storage, and real calls whose
    structure fits the fakes are served by that compile, not compiled again from the real tensors."""
    k = cute_bind.kernel(bare_tuple, cache=False, compile_options="--enable-tvm-ffi")
    fake = _generic_fake(cute.sym_int())
    k.compile(_generic_fake(2), BlockSparse(fake, fake, None, None))
    for seed in (3, 5):
        args = BlockSparse(_t(seed), _t(seed + 1), None, None)
        got, want = torch.zeros(2), torch.zeros(2)
        k(got, args)
        cute.compile(bare_tuple, _dyn(want), _dsl(args))(_dyn(want), _dsl(args))
        assert torch.equal(got, want)
    assert k.cache_info()["compiled"] == 1  # served by the fakes' compile


@pytest.mark.parametrize(
    "args, parameter",
    [
        (BlockSparse(_t(1), _t(2), _t(3), None), "epilogue_args.full_block_cnt"),  # None at compile: a constant
        (BlockSparse(_t(1).double(), _t(2), None, None), "epilogue_args.mask_block_cnt"),  # another dtype
    ],
    ids=["none-given-a-tensor", "dtype"],
)
def test_a_structure_of_fakes_refuses_what_its_compile_did_not_assume(args: Any, parameter: str) -> None:
    """Such a call is not served (the guard names the field) and compiles for its own values instead."""
    k = cute_bind.kernel(bare_tuple, cache=False, compile_options="--enable-tvm-ffi")
    fake = _generic_fake(cute.sym_int())
    k.compile(_generic_fake(2), BlockSparse(fake, fake, None, None))
    values = {"out": torch.zeros(2), "epilogue_args": args}
    served, refusals = k.compiler.serve(values, k.compiler.bind_values(values))
    assert served is None and [r.parameter for r in refusals] == [parameter]
    got, want = torch.zeros(2), torch.zeros(2)
    if args.mask_block_cnt.dtype != torch.float32:
        # the call's own compile fails (a Float64 stored into the Float32 out): CB315 names the guard
        with pytest.raises(cute_bind.KernelCompileError) as info:
            k(got, args)
        assert info.value.code == "CB315" and f"parameter '{parameter}'" in str(info.value)
        return
    k(got, args)  # compiled for the call's own values
    cute.compile(bare_tuple, _dyn(want), _dsl(args))(_dyn(want), _dsl(args))
    assert torch.equal(got, want) and k.cache_info()["compiled"] == 2


@dataclasses.dataclass
class LoopScale:
    scale: Float32
    bias: Float32


@cute.jit
def _loop_reads(out: cute.Tensor, p: LoopScale):
    # the fields read inside a dynamic loop: the DSL's tracing writes its traced values into the
    # dataclass object it compiles (Float32(?)), which then marshals no more
    for i in range(cute.size(out)):
        out[i] = p.scale * Float32(i) + p.bias


def test_a_dataclass_the_dsl_traces_into_launches_on_the_first_call(path: str) -> None:
    """Before: the first ``kernel(out, p)`` and ``bind(out, p)`` raised the DSL's ``ValueError: only
    float is supported`` from cute_bind's marshalling (the compile had rewritten the very objects it
    then marshalled); the compile now gets copies, and the caller's object is left as it was."""
    for door in ("call", "bind"):
        k = cute_bind.kernel(_loop_reads, cache=False)
        out = torch.zeros(6)
        p = LoopScale(Float32(2.0), Float32(0.5))
        if door == "call":
            k(out, p)
        else:
            k.bind(out, p).launch(out, p)
        assert out.tolist() == [2.0 * i + 0.5 for i in range(6)], door
        assert type(p.scale) is Float32 and p.scale.value == 2.0 and p.bias.value == 0.5  # not traced into
        out2 = torch.zeros(6)
        k(out2, LoopScale(Float32(1.0), Float32(0.0)))  # the same compile, a new object
        assert out2.tolist() == [float(i) for i in range(6)]
        assert k.cache_info()["compiled"] == 1


def test_a_dataclass_cute_compile_traced_into_is_refused_with_the_reason() -> None:
    """``cute.compile`` leaves its traced values in the dataclass it was given (the DSL's own call then
    fails with "only float is supported"); prepare() with that object says so (it said "got ArithValue ?")."""
    out = torch.zeros(4)
    p = LoopScale(Float32(2.0), Float32(0.5))
    compiled = cute.compile(_loop_reads, from_dlpack(out), p)
    with pytest.raises(cute_bind.CuteBindError) as info:
        cute_bind.prepare(compiled, from_dlpack(out), p)
    assert info.value.code == "CB204" and "parameter 'p.scale'" in str(info.value)
    assert "holding a traced value" in str(info.value) and "Pass a new object" in str(info.value)
    handle = cute_bind.prepare(compiled, from_dlpack(out), LoopScale(Float32(2.0), Float32(0.5)))  # a new object
    handle.launch(out, LoopScale(Float32(1.0), Float32(1.0)))
    assert out.tolist() == [i + 1.0 for i in range(4)]
