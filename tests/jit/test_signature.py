"""Decoration-time eligibility: one row per annotation case."""

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest

import cute_bind
from cute_bind.slots import PointerKind, ScalarKind, SequenceKind, StreamKind, TensorKind
from tests.kernels import ineligible as K

CASES = [
    (K.no_annotation, "CB101", "n"),
    (K.custom_type, "CB102", "p"),
    (K.half, "CB104", "a"),
    (K.wide, "CB104", "a"),
    (K.bare_tensor_helper, "CB102", "a"),
    (K.nested_sequence, "CB113", "a"),
    (K.constexpr_element, "CB113", "a"),
    (K.narrow_float_element, "CB113", "a"),
    (K.varargs, "CB106", "rest"),
    (K.varkw, "CB106", "kw"),
    (K.unresolved, "CB107", "a"),
]


@pytest.mark.parametrize("fn, code, param", CASES, ids=[c[0].__name__ for c in CASES])
def test_ineligible_raises_at_decoration(fn, code, param):
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(fn)
    err = info.value
    assert isinstance(err, TypeError)
    assert (err.code, err.kernel, err.parameter) == (code, fn.__name__, param)
    assert f"[{code}]" in str(err) and fn.__name__ in str(err) and param in str(err)
    assert err.expected and err.got


def test_all_problems_reported_in_order():
    errors = cute_bind.check_function(K.several)
    assert [(e.code, e.parameter) for e in errors] == [("CB101", "a"), ("CB113", "b")]
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(K.several)
    assert info.value.code == "CB101" and "also: CB113 at 'b'" in str(info.value)
    assert [e.code for e in info.value.details["all"]] == ["CB101", "CB113"]


def test_sequence_element_problem_is_named():
    err = cute_bind.check_function(K.nested_sequence)[0]
    assert "element 1: tuple[int, int] is a sequence" in str(err)


ELIGIBLE_NEW = [
    (K.tensor, {"a": TensorKind}),
    (K.tensor_ok, {"a": TensorKind, "b": TensorKind, "c": ScalarKind, "d": ScalarKind}),
    (K.sequence, {"a": SequenceKind}),
    (K.sequence_typing, {"a": SequenceKind}),
    (K.list_param, {"a": SequenceKind}),
    (K.sequences_ok, dict.fromkeys("abcde", SequenceKind)),
]


@pytest.mark.parametrize("fn, kinds", ELIGIBLE_NEW, ids=[c[0].__name__ for c in ELIGIBLE_NEW])
def test_widened_kinds_eligible(fn, kinds):
    k = cute_bind.kernel(fn)
    assert {p.name: type(p.slot) for p in k.signature.params} == kinds


def test_sequence_annotations_fix_element_kinds():
    slots = {p.name: p.slot for p in cute_bind.kernel(K.sequences_ok).signature.params}
    assert [type(e) for e in slots["a"].elements] == [ScalarKind, ScalarKind]
    assert slots["b"].homogeneous.dtype_name == "Int32" and slots["b"].elements is None
    assert slots["c"].elements is None and slots["c"].homogeneous is None  # bare: kinds from the values
    assert isinstance(slots["d"].homogeneous, PointerKind)
    assert [type(e) for e in slots["e"].elements] == [TensorKind, ScalarKind]
    tensor_b = cute_bind.kernel(K.tensor_ok).signature.params[1].slot
    assert (tensor_b.spec.dtype.__name__, tensor_b.spec.rank, tensor_b.spec.align, tensor_b.spec.layout) == ("Float16", 2, 16, "dynamic")


def test_eligible_kinds_read_from_annotations():
    k = cute_bind.kernel(K.ok_all_kinds)
    kinds = {p.name: p.slot for p in k.signature.params}
    assert isinstance(kinds["a"], PointerKind) and isinstance(kinds["b"], PointerKind)
    assert kinds["b"].spec.dtype is cute_bind.Pointer[__import__("cutlass").Float32].__metadata__[0].dtype
    assert isinstance(kinds["c"], ScalarKind) and kinds["c"].dtype_name == "Int32"
    assert isinstance(kinds["d"], ScalarKind) and kinds["d"].dtype_name == "Float32"
    assert isinstance(kinds["e"], StreamKind)
    assert kinds["f"] is None  # Constexpr: compile-time, not a slot
    assert [p.name for p in k.signature.runtime] == ["a", "b", "c", "d", "e"]


def test_string_annotations_resolved():
    # tests/kernels/ineligible.py uses `from __future__ import annotations`
    assert cute_bind.check_function(K.ok_all_kinds) == []


def test_not_a_function():
    for obj in (42, K.Params, "text"):
        with pytest.raises(cute_bind.KernelDefinitionError) as info:
            cute_bind.kernel(obj)
        assert info.value.code == "CB108"


def test_decoration_does_not_compile(monkeypatch):
    import cutlass.cute as cute

    def boom(*a, **k):
        raise AssertionError("decoration compiled")

    monkeypatch.setattr(cute, "compile", boom)
    monkeypatch.setattr(cute, "jit", boom)
    k = cute_bind.kernel(K.ok_all_kinds)
    assert k.name == "ok_all_kinds"


@pytest.mark.parametrize(
    "options, param",
    [({"checked": 1}, "checked"), ({"name": 3}, "name"), ({"compile_options": 1.0}, "compile_options"), ({"bogus": True}, "bogus")],
)
def test_invalid_options(options, param):
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(**options)(K.ok_all_kinds)
    assert (info.value.code, info.value.parameter) == ("CB110", param)


@pytest.mark.parametrize("options", ["--bogus-flag", "--opt-level two"])
def test_compile_options_the_dsl_refuses_are_cb110_at_decoration(options, capsys):
    from cute_bind import dsl

    if dsl.compile_options_problem("--bogus-flag") is None:
        pytest.skip("the installed DSL has no compile-options parser to ask")
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(compile_options=options)(K.ok_all_kinds)
    assert (info.value.code, info.value.parameter) == ("CB110", "compile_options")
    assert repr(options) in str(info.value)
    assert "usage:" not in capsys.readouterr().err  # argparse's usage text is not printed


def test_compile_options_the_dsl_accepts_decorate():
    assert cute_bind.kernel(compile_options="--opt-level 2")(K.ok_all_kinds).compile_options == "--opt-level 2"


def test_bare_and_with_options():
    assert isinstance(cute_bind.kernel(K.ok_all_kinds), cute_bind.Kernel)
    k = cute_bind.kernel(name="renamed", checked=True)(K.ok_all_kinds)
    assert isinstance(k, cute_bind.Kernel) and k.name == "renamed" and k.checked


@pytest.mark.parametrize(
    "params, detail",
    [
        ((3,), "dtype"),
        ((__import__("cutlass").Float32, 3), "power of two"),
        ((__import__("cutlass").Float32, 2), "at least the element size"),
        ((__import__("cutlass").Float32, True), "power of two"),
        ((__import__("cutlass").Float32, 16, "gmem"), "address space"),
        ((), "1 to 3"),
    ],
)
def test_invalid_pointer_annotation(params, detail):
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.Pointer[params]
    assert info.value.code == "CB109" and detail in str(info.value)


def test_pointer_is_annotation_only():
    with pytest.raises(TypeError):
        cute_bind.Pointer()


class _Scaler:
    """A client's object whose host functions are methods (the DSL's HardwareInfo compiles
    ``self._host_function``, a ``@cute.jit`` method, as a bound method)."""

    def __init__(self, factor: float) -> None:
        self.factor = factor

    @cute.jit
    def jit_method(self, mX: cute.Tensor, mO: cute.Tensor):
        for i in range(cute.size(mX)):
            mO[i] = mX[i] * cutlass.Float32(self.factor)

    def plain_method(self, mX: cute.Tensor, mO: cute.Tensor):
        for i in range(cute.size(mX)):
            mO[i] = mX[i] * cutlass.Float32(self.factor)


BOUND_METHODS = [("@cute.jit method", lambda s: s.jit_method), ("plain method", lambda s: s.plain_method)]


@pytest.mark.parametrize("form, pick", BOUND_METHODS, ids=[m[0] for m in BOUND_METHODS])
def test_a_bound_method_takes_its_parameters_after_self(form, pick):
    """Before: ``cute_bind.kernel(obj.method)`` read ``self`` as the first parameter (CB101)."""
    k = cute_bind.kernel(pick(_Scaler(3.0)), cache=False)
    assert [p.name for p in k.signature.params] == ["mX", "mO"]
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    k(x, out)
    assert out.tobytes() == (x * np.float32(3.0)).tobytes()
    out2 = np.zeros(4, np.float32)
    k.bind(x, out2).launch(x, out2)
    assert out2.tobytes() == out.tobytes()


def test_a_method_decorated_in_its_class_body_is_cb127_and_its_fix_works():
    """Before: CB101 on `self`, whose fix (annotate it) cannot work: the object is traced, not launched."""
    with pytest.raises(cute_bind.KernelDefinitionError) as info:

        class Decorated:
            @cute_bind.kernel
            @cute.jit
            def host(self, mX: cute.Tensor, mO: cute.Tensor):
                pass

    assert info.value.code == "CB127" and "the method host in its class body" in str(info.value)
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(_Scaler.jit_method)  # the function from the class, no object bound
    assert info.value.code == "CB127"

    class Owner(_Scaler):
        def __init__(self, factor: float) -> None:
            super().__init__(factor)
            self.run = cute_bind.kernel(self.jit_method, cache=False)  # the fix, as CB127 spells it

    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    Owner(5.0).run(x, out)
    assert out.tobytes() == (x * np.float32(5.0)).tobytes()
