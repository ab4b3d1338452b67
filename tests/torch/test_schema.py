"""A kernel's signature as a torch op schema: every slot kind's schema type, and what is refused."""

from __future__ import annotations

import keyword

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import pytest
from typing import Optional

from hypothesis import given
from hypothesis import strategies as st

import cute_bind
from cute_bind.torch.schema import parse_name, plan_op
from tests.kernels import host

F32 = cute_bind.Pointer[cutlass.Float32]


def _sig(fn):
    return cute_bind.kernel(fn).signature


# Kernels that only need a signature here (nothing compiles them).
def bare_tuple(out: cute.Tensor, ins: tuple, n: cutlass.Int32):
    pass


def mixed_tuple(out: F32, args: tuple[F32, cutlass.Float32]):
    pass


def bare_constexpr(out: cute.Tensor, mode: cutlass.Constexpr):
    pass


def kw_tensor(out: cute.Tensor, *, inp: cute.Tensor):
    pass


def odd_default(out: cute.Tensor, alpha: cutlass.Float32 = float("inf")):
    pass


def reserved(out: cute.Tensor, _cb_x: cutlass.Int32):
    pass


def two_streams(out: cute.Tensor, s1: cuda.CUstream, s2: cuda.CUstream):
    pass


def list_ptrs(outs: list[F32], n: int, flag: bool, x: float, half: cutlass.Float16, tf: cutlass.TFloat32):
    pass


def bool_defaults(out: cute.Tensor, flag: cutlass.Boolean = True, off: cutlass.Boolean = False, pb: bool = False, pt: bool = True):
    pass


def bool_constexpr(out: cute.Tensor, c: cutlass.Constexpr[bool] = True, d: cutlass.Constexpr[bool] = False):
    pass


def bool_as_number(
    out: cute.Tensor,
    flag: cutlass.Boolean = 1,
    off: cutlass.Boolean = 0,
    n: cutlass.Int32 = True,
    c: cutlass.Constexpr[int] = False,
    x: cutlass.Float32 = True,
):
    pass


def bool_kwonly(out: cute.Tensor, *, flag: cutlass.Boolean = False, c: cutlass.Constexpr[bool] = True):
    pass


def optional_scalars(
    out: cute.Tensor,
    n: Optional[cutlass.Int32],
    x: cutlass.Float32 | float | None = None,
    flag: Optional[cutlass.Boolean] = None,
    k: cutlass.Int32 | None = 3,
):
    pass


def mixed_union(out: cute.Tensor, beta: Optional[cutlass.Float32 | F32] = None):
    pass


def structure_no_default(out: cute.Tensor, aux: host.OptAux):
    pass


def optional_structure(out: cute.Tensor, aux: Optional[host.OptAux] = None, stream: cuda.CUstream = None):
    pass


#: (kernel, mutates_args, outputs, schema)
SCHEMAS = [
    (host.tscale, ("out",), (), "(Tensor(a0!) out, Tensor inp, Scalar alpha) -> ()"),
    (host.tscale, (), ("out",), "(Tensor inp, Scalar alpha) -> Tensor"),
    (host.tscale, "out", (), "(Tensor(a0!) out, Tensor inp, Scalar alpha) -> ()"),
    (host.scale, ("out",), (), "(Tensor(a0!) out, Tensor inp, Scalar alpha, Scalar n) -> ()"),
    (host.tscale_stream, ("out",), (), "(Tensor(a0!) out, Tensor inp, Scalar alpha) -> ()"),
    (host.with_default, ("out",), (), "(Tensor(a0!) out, Scalar value, Scalar extra=5) -> ()"),
    (host.with_constexpr, ("out",), (), "(Tensor(a0!) out, Scalar value, int offset) -> ()"),
    (host.thalf_default, ("out",), (), "(Tensor(a0!) out, Scalar scale=0.5) -> ()"),
    (host.seq_sum, ("out",), (), "(Tensor(a0!) out, Tensor[] ins, Scalar[] scales, Scalar n) -> ()"),
    (host.tsplit, (), ("lo", "hi"), "(Tensor inp, *, Scalar cut=0.0) -> (Tensor, Tensor)"),
    (host.tsplit, ("hi",), ("lo",), "(Tensor(a0!) hi, Tensor inp, *, Scalar cut=0.0) -> Tensor"),
    (host.tsum_list, ("out", "ins"), (), "(Tensor(a0!) out, Tensor(a1!)[] ins, Scalar[] weights) -> ()"),
    (list_ptrs, ("outs",), (), "(Tensor(a0!)[] outs, Scalar n, Scalar flag, Scalar x, Scalar half, Scalar tf) -> ()"),
    # number slots are Scalar (torch hands the value over unconverted); defaults spelled for the slot's kind:
    # True/False for a Boolean slot (its 0/1 too), a number's True/False as 1/0, a float slot's 1 as 1.0
    (bool_defaults, ("out",), (), "(Tensor(a0!) out, Scalar flag=True, Scalar off=False, Scalar pb=False, Scalar pt=True) -> ()"),
    (bool_constexpr, ("out",), (), "(Tensor(a0!) out, bool c=True, bool d=False) -> ()"),
    (bool_as_number, ("out",), (), "(Tensor(a0!) out, Scalar flag=True, Scalar off=False, Scalar n=1, int c=0, Scalar x=1.0) -> ()"),
    (bool_kwonly, (), ("out",), "(*, Scalar flag=False, bool c=True) -> Tensor"),
    # Optional[X] and unions whose members share a schema type are X?; a structure with a default is fixed (no argument)
    (host.topt, ("out",), (), "(Tensor(a0!) out, Tensor inp, Tensor? lse, Scalar alpha, Tensor? bias=None, Scalar? shift=None) -> ()"),
    (
        host.topt,
        ("out", "lse"),
        (),
        "(Tensor(a0!) out, Tensor inp, Tensor(a1!)? lse, Scalar alpha, Tensor? bias=None, Scalar? shift=None) -> ()",
    ),
    (host.topt, (), ("out", "lse"), "(Tensor inp, Scalar alpha, Tensor? bias=None, Scalar? shift=None) -> (Tensor, Tensor)"),
    (optional_scalars, ("out",), (), "(Tensor(a0!) out, Scalar? n, Scalar? x=None, Scalar? flag=None, Scalar? k=3) -> ()"),
    (optional_structure, ("out",), (), "(Tensor(a0!) out) -> ()"),
    (
        host.all_scalars,
        ("out",),
        (),
        "(Tensor(a0!) out, Scalar b, Scalar i8, Scalar i16, Scalar i32, Scalar i64, Scalar u8, Scalar u16, Scalar u32, "
        "Scalar u64, Scalar f32, Scalar f64, Scalar tf32, Scalar pb, Scalar pi, Scalar pf) -> ()",
    ),
]


@pytest.mark.parametrize(("fn", "mutates", "outputs", "schema"), SCHEMAS, ids=[f"{s[0].__name__}-{i}" for i, s in enumerate(SCHEMAS)])
def test_schema_of_each_slot_kind(fn, mutates, outputs, schema):
    plan = plan_op("lib::op", _sig(fn), mutates, outputs)
    assert plan.schema() == schema
    roles = {p.name: p.role for p in plan.params}
    assert all(roles[o] == "output" for o in plan.outputs)
    assert [p.name for p in plan.params] == [p.name for p in _sig(fn).params]  # every parameter, in order


_PYTHON_TYPE = {
    "bool": bool,
    "SymInt": int,
    "int": int,
    "float": float,
    "Optional[bool]": bool,
    "Optional[int]": int,
    "Optional[float]": float,
}


@pytest.mark.parametrize(("fn", "mutates", "outputs", "schema"), SCHEMAS, ids=[f"{s[0].__name__}-{i}" for i, s in enumerate(SCHEMAS)])
def test_torch_reads_each_default_as_the_kernel_default_of_its_type(fn, mutates, outputs, schema):
    """torch's own schema parser: a default has its parameter's type and the kernel's value (``bool b=1`` would be an int);
    a ``Scalar``'s default has the type of its slot's kind (a Boolean slot's a bool, a float slot's a float)."""
    from tests.optional import torch_or_skip

    torch = torch_or_skip()
    plan = plan_op("lib::op", _sig(fn), mutates, outputs)
    parsed = torch._C.parse_schema("lib::op" + plan.schema())
    defaults = {p.name: p.default for p in _sig(fn).params if p.has_default}
    numbers = {p.name: p.number for p in plan.inputs}
    for arg in parsed.arguments:
        if arg.name not in defaults:
            assert arg.default_value is None, arg.name
            continue
        if defaults[arg.name] is None:  # an optional input's None
            assert str(arg.type).startswith("Optional[") and arg.default_value is None, arg.name
            continue
        if str(arg.type).replace("Optional[", "").rstrip("]") == "number":  # torch spells Scalar so
            kind = {"bool": bool, "int": int, "float": float}[numbers[arg.name]]
        else:
            kind = _PYTHON_TYPE[str(arg.type)]
        assert type(arg.default_value) is kind, (arg.name, str(arg.type), arg.default_value)
        assert arg.default_value == kind(defaults[arg.name]), arg.name


def test_a_structure_with_a_default_is_fixed_to_it():
    """FlashAttention-4's ``aux_data``: no schema type carries a NamedTuple, so the op passes its default."""
    plan = plan_op("lib::op", _sig(host.topt), ("out",), ())
    fixed = [p for p in plan.params if p.role == "fixed"]
    assert [(p.name, p.default) for p in fixed] == [("aux", host.OptAux())]
    assert "aux" not in [p.name for p in plan.inputs]
    plan = plan_op("lib::op", _sig(optional_structure), ("out",), ())
    assert [(p.name, p.role) for p in plan.params[1:]] == [("aux", "fixed"), ("stream", "stream")] and plan.params[1].default is None


def test_stream_is_no_argument_of_the_op():
    plan = plan_op("lib::op", _sig(host.scale), ("out",), ())
    assert plan.stream is not None and plan.stream.name == "stream"
    assert "stream" not in [p.name for p in plan.inputs]


#: (kernel, mutates_args, outputs, code, parameter named in the error)
REFUSED = [
    (bare_tuple, ("out",), (), "CB702", "ins"),
    (mixed_tuple, ("out",), (), "CB702", "args"),
    (bare_constexpr, ("out",), (), "CB702", "mode"),
    (kw_tensor, ("out",), (), "CB702", "inp"),
    (odd_default, ("out",), (), "CB702", "alpha"),
    (reserved, ("out",), (), "CB702", "_cb_x"),
    (two_streams, ("out",), (), "CB702", "s2"),
    (mixed_union, ("out",), (), "CB702", "beta"),  # Float32 | Pointer: float or Tensor, no one schema type
    (structure_no_default, ("out",), (), "CB702", "aux"),  # no schema type and no default to fix it to
    (host.topt, ("aux",), (), "CB703", "aux"),
    (host.tscale, ("alpha",), (), "CB703", "alpha"),
    (host.tscale, ("nope",), (), "CB703", "nope"),
    (host.tscale, ("out",), ("out",), "CB703", "out"),
    (host.tscale, (), (), "CB703", None),
    (host.tscale, (), ("alpha",), "CB703", "alpha"),
    (host.scale, ("stream",), (), "CB703", "stream"),
    (host.tsum_list, (), ("ins",), "CB703", "ins"),
    (host.with_constexpr, ("offset",), (), "CB703", "offset"),
    (host.tscale, (1,), (), "CB703", "1"),
]


@pytest.mark.parametrize(
    ("fn", "mutates", "outputs", "code", "parameter"), REFUSED, ids=[f"{r[0].__name__}-{r[3]}-{i}" for i, r in enumerate(REFUSED)]
)
def test_refused_with_a_catalog_error(fn, mutates, outputs, code, parameter):
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        plan_op("lib::op", _sig(fn), mutates, outputs)
    err = info.value
    assert err.code == code and err.kernel == fn.__name__
    assert err.parameter == parameter
    assert f"[{code}]" in str(err) and "fix:" in str(err)


IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))


@given(IDENT, IDENT)
def test_names_of_two_identifiers_parse(ns, name):
    assert parse_name(f"{ns}::{name}", "k") == (ns, name)


@given(st.one_of(st.text(max_size=20), st.integers(), st.none()))
def test_other_names_are_cb704(name):
    parts = name.split("::") if isinstance(name, str) else []
    valid = len(parts) == 2 and all(p.isidentifier() for p in parts) and not keyword.iskeyword(parts[1])
    if valid:
        assert parse_name(name, "k") == tuple(parts)
    else:
        with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB704\]"):
            parse_name(name, "k")
