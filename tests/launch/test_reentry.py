"""A prepared launch never launches what the DSL's direct call would refuse (DSL 4.8 re-entry validation).

nvidia-cutlass-dsl 4.8 seals, with a function compiled under its PyIR
frontend, the trace-time Python values the compiled code baked in (module
globals, closure cells, the receiver of a jitted method) and re-checks them on
every direct call. Each case below compiles such a function, changes one of
those values, and checks that the direct call and the prepared launch both
refuse (CB504 for the handle, before anything runs), and both run again once
the value is restored. Runtime slot values are never part of the record.
"""

import ctypes

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import from_dlpack, make_ptr

import cute_bind
from cute_bind import dsl
from tests.kernels import reentry as R

pytestmark = pytest.mark.skipif(not dsl.features().spec_reentry, reason="the installed DSL has no re-entry validation (before 4.8)")

SENTINEL = -12345


def pyir_compile(fn, *args):
    """``cute.compile`` under the DSL's PyIR frontend (the trace then seals a re-entry record)."""
    from cutlass.cutlass_dsl import CuTeDSL

    with CuTeDSL.enable_pyir():
        return cute.compile(fn, *args)


def _global_case(monkeypatch):
    return (
        R.add_global,
        lambda: monkeypatch.setattr(R, "OFFSET", 5),
        lambda: monkeypatch.setattr(R, "OFFSET", 1),
        "OFFSET",
        lambda v: v * 2 + 1,
    )


def _dict_item_case(monkeypatch):
    return (
        R.add_global,
        lambda: monkeypatch.setitem(R.TABLE, "scale", 3),
        lambda: monkeypatch.setitem(R.TABLE, "scale", 2),
        "scale",
        lambda v: v * 2 + 1,
    )


def _receiver_case(monkeypatch):
    scaler = R.Scaler(3)
    return scaler, lambda: setattr(scaler, "k", 4), lambda: setattr(scaler, "k", 3), "'self'.k", lambda v: v * 3


def _closure_case(monkeypatch):
    fn, set_k = R.make_add_closure(4)
    return fn, lambda: set_k(7), lambda: set_k(4), "closure", lambda v: v + 4


CASES = {
    "module global": _global_case,
    "dict item of a global": _dict_item_case,
    "jitted method's self": _receiver_case,
    "closure cell": _closure_case,
}


@pytest.mark.parametrize("checked", [False, True], ids=["fast", "checked"])
@pytest.mark.parametrize("case", list(CASES))
def test_handle_refuses_exactly_when_the_direct_call_does(case, checked, monkeypatch):
    fn, drift, restore, where, expect = CASES[case](monkeypatch)
    out = np.zeros(1, np.int32)
    ptr = make_ptr(cutlass.Int32, out.ctypes.data)
    compiled = pyir_compile(fn, ptr, cutlass.Int32(1))
    handle = cute_bind.prepare(compiled, ptr, 1).with_checks(checked)
    addr = out.ctypes.data

    for value in (3, -8):
        compiled(ptr, cutlass.Int32(value))
        direct = out.copy()
        out[0] = SENTINEL
        assert handle.launch(addr, value) == 0
        assert out.tobytes() == direct.tobytes() and out[0] == expect(value)

    drift()
    with pytest.raises(Exception) as refused:
        compiled(ptr, cutlass.Int32(2))  # the DSL's own refusal
    assert "STALE_SPECIALIZATION" in str(refused.value)
    out[0] = SENTINEL
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        handle.launch(addr, 2)
    assert info.value.code == "CB504" and info.value.kernel and where in str(info.value)
    assert isinstance(info.value.__cause__, type(refused.value))  # the DSL's error, chained
    assert out[0] == SENTINEL, "a refused launch must not run the compiled code"
    with pytest.raises(cute_bind.LaunchRuntimeError) as at_bind:
        cute_bind.prepare(compiled, ptr, 1)
    assert at_bind.value.code == "CB504"

    restore()
    compiled(ptr, cutlass.Int32(6))
    direct = out.copy()
    out[0] = SENTINEL
    handle.launch(addr, 6)
    assert out.tobytes() == direct.tobytes()


def _every_slot_args(out, x, a, f, pair):
    return (
        make_ptr(cutlass.Int32, out.ctypes.data),
        from_dlpack(x).mark_layout_dynamic(),
        cutlass.Int32(a),
        cutlass.Float32(f),
        tuple(cutlass.Int32(p) for p in pair),
        cuda.CUstream(0),
    )


def test_runtime_slot_values_are_never_in_the_record():
    """Every runtime slot kind is traced as a staged value: new values never drift, and match the direct call."""
    out = np.zeros(4, np.int32)
    x = np.array([9, 0, 0], np.int32)
    compiled = pyir_compile(R.every_slot, *_every_slot_args(out, x, 3, 2.5, (1, 2)))
    record = compiled._pyir_spec[0]
    names = set(dsl.runtime_signature(compiled).names)
    assert record and not [root for root in record if root[0] == "arg" and root[1] in names]
    handle = cute_bind.prepare(compiled, *_every_slot_args(out, x, 3, 2.5, (1, 2)))
    rng = np.random.default_rng(1)
    for _ in range(5):
        x2 = rng.integers(-100, 100, size=int(rng.integers(1, 8)), dtype=np.int32)
        a, f, pair = int(rng.integers(-1000, 1000)), float(rng.integers(-50, 50)) + 0.25, tuple(int(v) for v in rng.integers(-9, 9, 2))
        compiled(*_every_slot_args(out, x2, a, f, pair))
        direct = out.copy()
        out.fill(SENTINEL)
        handle.launch(out.ctypes.data, x2, a, f, pair, 0)
        assert out.tobytes() == direct.tobytes()


def test_record_naming_a_runtime_parameter_is_refused_at_bind(monkeypatch):
    """cute_bind re-checks the record without the launch's values; one that read a slot's value could not be re-checked."""
    out = np.zeros(1, np.int32)
    ptr = make_ptr(cutlass.Int32, out.ctypes.data)
    compiled = pyir_compile(R.add_global, ptr, cutlass.Int32(1))
    record, *rest = compiled._pyir_spec
    monkeypatch.setattr(compiled, "_pyir_spec", ({**record, ("arg", "value", ()): 1}, *rest))
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        cute_bind.prepare(compiled, ptr, 1)
    assert info.value.code == "CB504" and info.value.parameter == "value"


def test_functions_without_a_record_are_not_guarded():
    """Compiled the ordinary way, nothing is re-checked and the handle keeps the C fast path where built."""
    from cute_bind.launch import fast_path

    out = np.zeros(1, np.int32)
    ptr = make_ptr(cutlass.Int32, out.ctypes.data)
    compiled = cute.compile(R.add_global, ptr, cutlass.Int32(1))
    assert getattr(compiled, "_pyir_spec", None) is None
    handle = cute_bind.prepare(compiled, ptr, 1)
    assert dsl.specialization_guard(compiled, "add_global", ["out", "value"]) is None
    if fast_path() == "c":
        assert type(handle.launch).__name__ == "builtin_function_or_method"


def test_guarded_handle_still_reports_unload():
    out = np.zeros(1, np.int32)
    ptr = make_ptr(cutlass.Int32, out.ctypes.data)
    compiled = pyir_compile(R.add_global, ptr, cutlass.Int32(1))
    handle = cute_bind.prepare(compiled, ptr, 1)
    dsl.unload(compiled)
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        handle.launch(ctypes.c_void_p(out.ctypes.data).value, 1)
    assert info.value.code == "CB402"
