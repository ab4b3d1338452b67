"""@cute_bind.kernel: compile cache keys, bind-time errors, plain calls, device kernels on the CPU."""

import ctypes
import os
import subprocess
import sys

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import make_ptr

import cute_bind
from tests.kernels.host import looping_undecorated, scale, scale_plain, scale_ptr, with_constexpr


def test_plain_function_and_jit_function_both_accepted():
    x = np.arange(64, dtype=np.float32)
    for k in (cute_bind.kernel(scale), scale_plain):
        y = np.zeros(64, np.float32)
        k(make_ptr(cutlass.Float32, y.ctypes.data), make_ptr(cutlass.Float32, x.ctypes.data), 2.0, 64, 0)
        assert np.array_equal(y, x * 2)


def test_compile_key_pointer_dtype_alignment_and_constexpr():
    k = cute_bind.kernel(scale_ptr)
    a = np.zeros(64, np.float32)
    base = (a.ctypes.data + 15) // 16 * 16 if a.ctypes.data % 16 else a.ctypes.data
    p4 = make_ptr(cutlass.Float32, a.ctypes.data, assumed_align=4)
    p16 = make_ptr(cutlass.Float32, base, assumed_align=16) if base == a.ctypes.data else p4
    c1 = k.compile(p4, p4, 1.0, 4, 0)
    c2 = k.compile(p4, p4, 9.0, 8, 0)  # runtime values: same key
    assert c1 is c2
    i32 = np.zeros(64, np.int32)
    key_f32 = k.compiler.bind((p4, p4, 1.0, 4, 0), {}).key
    key_i32 = k.compiler.bind((make_ptr(cutlass.Int32, i32.ctypes.data), p4, 1.0, 4, 0), {}).key
    assert key_f32 != key_i32  # dtype: a different compile key
    if p16 is not p4:
        assert k.compile(p16, p4, 1.0, 4, 0) is not c1  # alignment: new key
    kc = cute_bind.kernel(with_constexpr)
    o = np.zeros(1, np.int32)
    assert kc.compile(o, 1, 3) is kc.compile(o, 2, 3)
    assert kc.compile(o, 1, 3) is not kc.compile(o, 1, 4)
    assert kc.compile(o, 1, 1) is not kc.compile(o, 1, True)  # 1 == True, but not the same constexpr


def test_target_arch_is_part_of_the_key(monkeypatch):
    k = cute_bind.kernel(with_constexpr)
    o = np.zeros(1, np.int32)
    c = k.compile(o, 1, 2)
    from cute_bind import dsl

    monkeypatch.setattr(dsl, "target_arch", lambda: "sm_fake")
    c_other = k.compile(o, 1, 2)
    assert c_other is not c and k.cache_info()["compiled"] == 2


def test_raw_address_needs_a_dtype():
    k = scale_plain
    x = np.zeros(64, np.float32)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        k.bind(x.ctypes.data, x.ctypes.data, 1.0, 4, 0)
    assert (info.value.code, info.value.parameter) == ("CB208", "out")
    h = k.bind(x, x, 1.0, 4, 0)  # an array carries its dtype
    assert h.slots["out"].dtype is cutlass.Float32


def test_annotation_dtype_conflicts_with_value():
    k = cute_bind.kernel(scale)
    x = np.zeros(64, np.int32)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        k.bind(x, x, 1.0, 4, 0)
    assert info.value.code == "CB210"


def test_constexpr_must_be_hashable():
    k = cute_bind.kernel(with_constexpr)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        k.bind(np.zeros(1, np.int32), 1, [1, 2])
    assert (info.value.code, info.value.parameter) == ("CB209", "offset")


@pytest.mark.parametrize(
    "args, kwargs, code",
    [
        ((), {}, "CB201"),
        ((1, 2, 3, 4), {}, "CB202"),
        ((1,), {"out": 1, "value": 2, "offset": 1}, "CB203"),
        ((1, 2, 3), {"nope": 1}, "CB202"),
    ],
)
def test_bind_argument_errors(args, kwargs, code):
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.kernel(with_constexpr).bind(*args, **kwargs)
    assert info.value.code == code


DEVICE_SCRIPT = r"""
import os, sys
os.environ["CUTE_DSL_ARCH"] = "sm_90a"
sys.path.insert(0, {root!r})
import cute_bind
from cute_bind.bench.kernels import scale
k = cute_bind.kernel(scale)
c = k.compile(1 << 20, 1 << 20, 2.0, 4096, 0)
assert c is k.compile(2 << 20, 2 << 20, 3.0, 16, 0)
try:
    k.bind(1 << 20, 1 << 20, 2.0, 4096, 0)
except cute_bind.CuteBindError as e:
    print("BIND", e.code)
else:
    print("BIND ok")
if os.environ.get("CB_TEST_NO_GPU"):  # the call, too (with a GPU it would launch at these addresses)
    for _ in range(2):  # the first call compiles, the second finds the specialization
        try:
            k(1 << 20, 1 << 20, 2.0, 4096, 0)
        except cute_bind.CuteBindError as e:
            print("CALL", e.code)
"""


def test_device_kernel_compiles_on_cpu_and_bind_reports_cb304():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.conftest import HAS_GPU

    env = dict(os.environ, **({} if HAS_GPU else {"CB_TEST_NO_GPU": "1"}))
    r = subprocess.run([sys.executable, "-c", DEVICE_SCRIPT.format(root=root)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert ("BIND ok" if HAS_GPU else "BIND CB304") in r.stdout
    # kernel(...) says the same (before: the DSL's own uncoded DSLCudaRuntimeError through its direct call)
    assert HAS_GPU or r.stdout.count("CALL CB304") == 2, r.stdout


def test_kernel_repr_and_metadata():
    k = cute_bind.kernel(scale)
    assert k.__name__ == "scale" and k.__doc__
    assert "cute_bind.Kernel scale(out: Pointer[Float32]" in repr(k)


def test_checked_option_makes_checked_handles():
    k = cute_bind.kernel(checked=True)(scale)
    x = np.zeros(64, np.float32)
    h = k.bind(x, x, 1.0, 4, 0)
    assert h.checked
    with pytest.raises(cute_bind.LaunchValueError):
        h.launch(ctypes.addressof(ctypes.c_char.from_buffer(bytearray(8))) | 1, x, 1.0, 4, 0)


def test_call_form_on_a_plain_function_rewrites_its_control_flow():
    # no decorator in the source at all: compiled exactly as under @cute.jit
    k = cute_bind.kernel(looping_undecorated)
    out = np.zeros(1, np.int32)
    k.bind(out, 3).launch(out, 3)
    assert out[0] == 2


class _PlainCallable:
    """A callable object whose ``__call__`` is not @cute.jit: not a host function (CB108)."""

    def __call__(self, out: cute.Pointer, n: cutlass.Int32) -> None:
        pass


@pytest.mark.parametrize(
    "make, expected",
    [
        (
            lambda: __import__("tests.kernels.styles", fromlist=["Scaler"]).Scaler(0.5),
            "Scaler(out: cute.Tensor, inp: cute.Tensor, twice: Constexpr",
        ),
        (_PlainCallable, "CB108"),
    ],
    ids=["jit_call", "plain_call"],
)
def test_callable_objects(make, expected):
    """A callable object whose ``__call__`` is @cute.jit is a kernel over the parameters after ``self``."""
    obj = make()
    if expected.startswith("CB"):
        with pytest.raises(cute_bind.KernelDefinitionError) as info:
            cute_bind.kernel(obj)
        assert info.value.code == expected
        return
    k = cute_bind.kernel(obj)
    assert expected in repr(k) and "self" not in repr(k)
    assert k.fn is obj and not hasattr(k, "offset")  # the object's attributes stay its own


@pytest.mark.parametrize("options", ["--enable-tvm-ffi", "--opt-level 2 --enable-tvm-ffi"])
def test_tvm_ffi_compile_option_is_taken(options):
    """CB115 is retired: the client's own --enable-tvm-ffi compiles a TVM-FFI function (its handles are prepare()'s)."""
    k = cute_bind.kernel(compile_options=options)(scale)
    assert k.compile_options == options
    assert cute_bind.CATALOG["CB115"].retired


@pytest.mark.parametrize("path", ["c", "python"])
def test_a_kernel_copies_to_itself_and_pickles_by_reference(path):
    """Copying gave a raw TypeError on the C path and, on the pure-Python one, a second object sharing the
    first's compiles and counters; a kernel is a function: copies are itself, pickling is by name. In a
    fresh process per path (the call base is chosen at import)."""
    from tests.child import run_isolated

    run_isolated(
        """
        import copy, pickle
        import cute_bind
        from tests.kernels.host import scale, scale_plain
        k = cute_bind.kernel(scale)
        assert copy.copy(k) is k and copy.deepcopy(k) is k
        try:
            pickle.dumps(k)  # not reachable by its name: tests.kernels.host.scale is the undecorated function
        except pickle.PicklingError as e:
            assert "pickled by reference" in str(e), e
        else:
            raise AssertionError("pickled a kernel no name reaches")
        assert pickle.loads(pickle.dumps(scale_plain)) is scale_plain  # a module-level @cute_bind.kernel
        """,
        path,
    )


def test_slot_bytes_of_an_unknown_parameter_is_cb202():
    out = np.zeros(4, np.float32)
    h = cute_bind.kernel(scale).bind(out, out, 1.0, 4, 0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.slot_bytes("nope")
    assert info.value.code == "CB202" and "'nope'" in str(info.value)
    assert len(h.slot_bytes("alpha")) == 4
    h.close()
