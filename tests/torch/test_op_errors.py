"""Mistakes in calling a cute_bind.torch op raise what kernel(...) raises for them (CB201-CB204, CB209).

Every row makes the same mistake with the op and with its kernel (a mutating op
takes exactly the kernel's arguments, less the stream) and asserts both raise
the same code for the same parameter. The property test does it for every
mix of positional values and keywords; correct calls never reach the slow
binding or the diagnosis (they run only after a call was refused or failed).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from tests.kernels import host  # noqa: E402
from tests.torch.conftest import dispatcher_calls  # noqa: E402


def _ops():
    """Mutating ops over kernels of every parameter form: plain, a default, keyword-only, a sequence, a Constexpr."""
    return {
        "tscale": cbt.op("cbtest::err_tscale", host.tscale, mutates_args=("out",)),
        "with_default": cbt.op("cbtest::err_with_default", host.with_default, mutates_args=("out",)),
        "tsplit": cbt.op("cbtest::err_tsplit", host.tsplit, mutates_args=("lo", "hi")),
        "fill_kwonly": cbt.op("cbtest::err_fill_kwonly", host.fill_kwonly, mutates_args=("out",)),
        "tsum_list": cbt.op("cbtest::err_tsum_list", host.tsum_list, mutates_args=("out",)),
        "taxpy": cbt.op("cbtest::err_taxpy", host.taxpy_inplace, mutates_args=("y",)),
    }


@pytest.fixture(scope="module")
def ops():
    return _ops()


def f32(n=8):
    return torch.arange(n, dtype=torch.float32)


def i32(n=8):
    return torch.zeros(n, dtype=torch.int32)


#: (case, op name, positional arguments, keyword arguments, code, parameter named, chained to torch's or Python's error)
MISTAKES = [
    ("None for the first tensor", "tscale", lambda: (None, f32(), 2.0), {}, "CB204", "out", True),
    ("None for a middle tensor", "tscale", lambda: (f32(), None, 2.0), {}, "CB204", "inp", False),
    ("None for a tensor by keyword", "tscale", lambda: (), {"out": None, "inp": f32(), "alpha": 2.0}, "CB204", "out", True),
    ("a number for a tensor", "tscale", lambda: (f32(), 3, 2.0), {}, "CB204", "inp", True),
    ("a string for a float", "tscale", lambda: (f32(), f32(), "a"), {}, "CB204", "alpha", False),
    ("None for a float", "tscale", lambda: (f32(), f32(), None), {}, "CB204", "alpha", False),
    ("too many positional", "tscale", lambda: (f32(), f32(), 2.0, 3.0), {}, "CB202", "#4", False),
    ("too few positional", "tscale", lambda: (f32(), f32()), {}, "CB201", "alpha", False),
    ("no argument at all", "tscale", lambda: (), {}, "CB201", "out", False),
    ("a keyword missing", "tscale", lambda: (), {"out": f32(), "inp": f32()}, "CB201", "alpha", False),
    ("unknown keyword", "tscale", lambda: (f32(), f32(), 2.0), {"beta": 1.0}, "CB202", "beta", False),
    (
        "unknown keyword among keywords",
        "tscale",
        lambda: (),
        {"out": f32(), "inp": f32(), "alpha": 2.0, "alhpa": 1.0},
        "CB202",
        "alhpa",
        False,
    ),
    ("duplicate keyword", "tscale", lambda: (f32(), f32(), 2.0), {"alpha": 1.0}, "CB203", "alpha", False),
    ("duplicate of the first", "tscale", lambda: (f32(), f32()), {"out": f32(), "alpha": 1.0}, "CB203", "out", False),
    ("a default's parameter twice", "with_default", lambda: (i32(), 1, 2), {"extra": 3}, "CB203", "extra", False),
    ("too many after a default", "with_default", lambda: (i32(), 1, 2, 3), {}, "CB202", "#4", False),
    ("a default given, a required one not", "with_default", lambda: (i32(),), {"extra": 3}, "CB201", "value", False),
    ("keyword-only given positionally", "tsplit", lambda: (f32(), f32(), f32(), 0.5), {}, "CB202", "#4", False),
    ("keyword-only misspelt", "tsplit", lambda: (f32(), f32(), f32()), {"cutt": 0.5}, "CB202", "cutt", False),
    ("required keyword-only missing", "fill_kwonly", lambda: (i32(),), {}, "CB201", "value", False),
    ("None for a tensor sequence", "tsum_list", lambda: (f32(), None, (1.0, 2.0)), {}, "CB204", "ins", True),
    ("an unhashable Constexpr", "taxpy", lambda: (f32(), f32(), 2.0, [1]), {}, "CB209", "k", False),
]


def _raised(fn, args, kwargs):
    with pytest.raises(cute_bind.CuteBindError) as info:
        fn(*args, **kwargs)
    return info.value


@pytest.mark.parametrize(("case", "name", "args", "kwargs", "code", "parameter", "chained"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_op_raises_what_the_kernel_raises(ops, case, name, args, kwargs, code, parameter, chained):
    op = ops[name]
    err = _raised(op, args(), kwargs)
    assert (err.code, err.parameter, err.kernel) == (code, parameter, op.kernel.name), case
    assert isinstance(err, cute_bind.LaunchArgumentError) and isinstance(err, TypeError)
    assert f"[{code}]" in str(err) and "fix:" in str(err)
    # wrapping torch's refusal (or the AttributeError of the generated code) keeps it as the cause
    assert (err.__cause__ is not None) == chained, repr(err.__cause__)
    assert not isinstance(err.__cause__, cute_bind.CuteBindError)
    # the same mistake with kernel(...): the same code for the same parameter
    ref = _raised(op.kernel, args(), kwargs)
    assert (ref.code, ref.parameter) == (code, parameter), case


@pytest.mark.parametrize(
    ("case", "args", "parameter"),
    [
        ("None", lambda: (None, f32(), 2.0), "out"),
        ("a number", lambda: (f32(), 7, 2.0), "inp"),
    ],
)
def test_dispatcher_path_raises_the_same(ops, case, args, parameter):
    """The registered op (what torch.compile's graphs and torch.ops calls reach) diagnoses values too."""
    op = ops["tscale"]
    grad = f32().requires_grad_()  # an input that needs grad: the call takes the dispatcher
    values = tuple(grad if isinstance(a, torch.Tensor) and i == 1 else a for i, a in enumerate(args()))
    err = _raised(op, values, {})
    assert (err.code, err.parameter) == ("CB204", parameter), case
    if case == "None":  # torch hands None to a Tensor parameter as it is: the implementation diagnoses it
        err = _raised(op.overload, args(), {})
        assert (err.code, err.parameter) == ("CB204", "out")
        assert isinstance(err.__cause__, AttributeError)


def test_call_with_a_subclass_tensor_still_works_and_a_wrong_value_is_diagnosed(ops):
    """The dispatcher path's diagnosis returns when every value is of its kind: torch's own error stands."""

    class Sub(torch.Tensor):
        pass

    op = ops["tscale"]
    y = torch.zeros(8)
    _, calls = dispatcher_calls(op.name, op, y, f32().as_subclass(Sub), 2.0)
    assert calls >= 1 and torch.equal(y, f32() * 2.0)
    err = _raised(op, (y, f32().as_subclass(Sub), "x"), {})
    assert (err.code, err.parameter) == ("CB204", "alpha")


def _spy(op, monkeypatch):
    """Make the generated call's slow binding and diagnosis record that they ran."""
    namespace = op._python_call.__globals__
    seen = []
    for key in ("_cb_bind", "_cb_diagnose"):
        real = namespace[key]

        def spy(*a, _real=real, _key=key):
            seen.append(_key)
            return _real(*a)

        monkeypatch.setitem(namespace, key, spy)
    return seen


#: (op name, correct calls: positional, keywords, a mix, defaults left out)
CORRECT = [
    (
        "tscale",
        [
            lambda: ((torch.zeros(8), f32(), 2.0), {}),
            lambda: ((), {"out": torch.zeros(8), "inp": f32(), "alpha": 2.0}),
            lambda: ((torch.zeros(8),), {"alpha": 2.0, "inp": f32()}),
        ],
    ),
    (
        "with_default",
        [lambda: ((i32(), 1), {}), lambda: ((i32(), 1, 2), {}), lambda: ((i32(),), {"value": 1}), lambda: ((i32(), 1), {"extra": 2})],
    ),
    (
        "tsplit",
        [
            lambda: ((f32(), f32(), f32()), {}),
            lambda: ((f32(), f32(), f32()), {"cut": 1.0}),
            lambda: ((), {"lo": f32(), "hi": f32(), "inp": f32()}),
        ],
    ),
    ("fill_kwonly", [lambda: ((i32(),), {"value": 3}), lambda: ((), {"out": i32(), "value": 3})]),
]


@pytest.mark.parametrize(("name", "calls"), CORRECT, ids=[c[0] for c in CORRECT])
def test_correct_calls_never_reach_the_slow_binding_or_the_diagnosis(ops, monkeypatch, name, calls):
    op = ops[name]
    seen = _spy(op, monkeypatch)
    for make in calls:
        args, kwargs = make()
        assert op(*args, **kwargs) is None
    assert seen == []
    err = _raised(op, (), {"nope": 1})  # the spies are live: a mistake goes through them
    assert err.code == "CB202" and seen == ["_cb_bind"]


def test_correct_calls_write_what_the_kernel_writes(ops):
    """Keywords and defaults bind to the same parameters as kernel(...) binds them."""
    op = ops["with_default"]
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((), {"value": 4}), ((), {"extra": 3, "value": 4}), ((6,), {"extra": 0})]:
        a, b = i32(1), i32(1)
        op(a, *args, **kwargs)
        op.kernel(b, *args, **kwargs)
        assert torch.equal(a, b) and a.item() != 0, (args, kwargs)


#: per op: (its positional parameters, a valid value for each parameter; tsplit's cut is keyword-only)
_VALUES = {
    "tscale": (("out", "inp", "alpha"), lambda: {"out": torch.zeros(4), "inp": f32(4), "alpha": 2.0}),
    "with_default": (("out", "value", "extra"), lambda: {"out": i32(1), "value": 1, "extra": 2}),
    "tsplit": (("lo", "hi", "inp"), lambda: {"lo": f32(4), "hi": f32(4), "inp": f32(4), "cut": 1.0}),
}


def _outcome(fn, args, kwargs):
    try:
        fn(*args, **kwargs)
    except cute_bind.CuteBindError as err:
        return err.code, err.parameter
    return "ok"


@pytest.fixture(scope="module")
def property_ops():
    mutated = {"tscale": ("out",), "with_default": ("out",), "tsplit": ("lo", "hi")}
    return {name: cbt.op(f"cbtest::prop_{name}", getattr(host, name), mutates_args=mut) for name, mut in mutated.items()}


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(_VALUES)),
    n_positional=st.integers(0, 5),
    keywords=st.lists(st.sampled_from(["out", "inp", "alpha", "value", "extra", "lo", "hi", "cut", "beta"]), unique=True, max_size=5),
)
def test_any_mix_of_positional_and_keywords_binds_as_kernel_does(property_ops, name, n_positional, keywords):
    op = property_ops[name]
    positional, values = _VALUES[name]
    v = values()
    args = tuple(v[n] for n in positional[:n_positional]) + (1.5,) * max(0, n_positional - len(positional))
    kwargs = {k: v.get(k, 1.0) for k in keywords}
    v2 = values()  # the kernel writes its own tensors
    args2 = tuple(v2[n] for n in positional[:n_positional]) + args[len(positional) :]
    kwargs2 = {k: v2.get(k, 1.0) for k in keywords}
    result = _outcome(op, args, kwargs)
    assert result == _outcome(op.kernel, args2, kwargs2)
    if result == "ok":  # bound to the same parameters: the same bytes written
        assert all(torch.equal(v[n], v2[n]) for n in v if isinstance(v[n], torch.Tensor))
