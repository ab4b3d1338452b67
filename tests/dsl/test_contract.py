"""Contract with nvidia-cutlass-dsl internals: each test fails with one clear message when a version breaks it."""

import ctypes

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import from_dlpack, make_ptr

import cute_bind
from cute_bind import dsl
from tests.kernels.host import scale_ptr


def test_pyproject_declares_the_same_range():
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text()
    m = re.search(r'"nvidia-cutlass-dsl([^"]+)"', text)
    assert m and m.group(1) == dsl.SUPPORTED_VERSIONS


def test_static_internals_present():
    problems = dsl.check_contract()
    assert not problems, "nvidia-cutlass-dsl lacks what cute_bind needs:\n" + "\n".join(problems)


def test_runtime_internals_work():
    """The deep check compiles, marshals, calls and unloads a host function on this DSL version."""
    problems = dsl.check_contract(deep=True)
    assert not problems, "nvidia-cutlass-dsl lacks what cute_bind needs:\n" + "\n".join(problems)


@pytest.fixture
def fresh_contract(monkeypatch):
    """The contract as if no bind had run yet in this process (one-time state reset, restored after)."""
    monkeypatch.setattr(dsl.contract, "_CONTRACT_OK", False)
    monkeypatch.setattr(dsl.contract, "_WARNED_VERSION", False)
    monkeypatch.delenv("CUTE_BIND_SKIP_DSL_CHECK", raising=False)


# What is removed from the installed DSL -> the line CB501 must name.
MISSING = [
    (
        "cutlass.base_dsl.jit_executor",
        "ExecutionArgs.generate_execution_args",
        "cutlass.base_dsl.jit_executor.ExecutionArgs.generate_execution_args is missing",
    ),
    ("cutlass.base_dsl.jit_executor", "JitModule.unload", "cutlass.base_dsl.jit_executor.JitModule.unload is missing"),
    ("cutlass.cute.runtime", "make_ptr", "cutlass.cute.runtime.make_ptr is missing"),
    ("cutlass.base_dsl.jit_executor", "JitExecutor", "cutlass.base_dsl.jit_executor.JitExecutor is missing"),
]


@pytest.mark.parametrize("module, attr, line", MISSING, ids=[m[1] for m in MISSING])
@pytest.mark.parametrize("version", ["4.8.1", "4.9.0"])
def test_missing_internal_is_cb501_naming_it(module, attr, line, version, monkeypatch, fresh_contract):
    import importlib

    owner = importlib.import_module(module)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    monkeypatch.delattr(owner, name)
    monkeypatch.setattr(dsl.version, "dsl_version", lambda: version)
    assert line in dsl.check_contract()
    with pytest.raises(cute_bind.DSLCompatibilityError) as info:
        dsl.require_contract_once()
    assert info.value.code == "CB501" and line in str(info.value) and version in str(info.value)


@pytest.mark.parametrize("version, warns", [("4.9.0", True), ("5.0.0", True), ("4.5.2", True), ("4.5.3", False), ("4.8.99", False)])
def test_version_number_alone_only_warns_once(version, warns, monkeypatch, fresh_contract):
    import warnings

    monkeypatch.setattr(dsl.version, "dsl_version", lambda: version)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dsl.require_contract_once()
        monkeypatch.setattr(dsl.contract, "_CONTRACT_OK", False)  # a second first-bind in the process
        dsl.require_contract_once()
    ours = [w for w in caught if issubclass(w.category, cute_bind.DSLVersionWarning)]
    assert len(ours) == (1 if warns else 0)
    if warns:
        assert ours[0].message.code == "CB503" and version in str(ours[0].message)


def test_skip_variable_skips_the_check(monkeypatch, fresh_contract):
    monkeypatch.delattr(__import__("cutlass.cute.runtime", fromlist=["x"]), "make_ptr")
    monkeypatch.setenv("CUTE_BIND_SKIP_DSL_CHECK", "1")
    dsl.require_contract_once()  # nothing raised


@pytest.fixture(scope="module")
def compiled():
    x = np.zeros(64, np.float32)
    args = (
        make_ptr(cutlass.Float32, x.ctypes.data),
        make_ptr(cutlass.Float32, x.ctypes.data),
        cutlass.Float32(1.0),
        cutlass.Int32(0),
        cuda.CUstream(0),
    )
    return cute.compile(scale_ptr, *args), args, x


def test_runtime_signature_readable(compiled):
    c, _, _ = compiled
    sig = dsl.runtime_signature(c)
    assert sig.names == ("out", "inp", "alpha", "n", "stream"), "ExecutionArgs._meta changed shape"


def test_marshal_gives_one_pointer_per_slot(compiled):
    c, args, _ = compiled
    addresses, keep = dsl.marshal(c, args, {})
    assert len(addresses) == 5 and all(isinstance(a, int) and a > 0 for a in addresses), "generate_execution_args changed its output"
    assert ctypes.c_float.from_address(addresses[2]).value == 1.0


def test_entry_point_and_result_slot(compiled):
    c, _, _ = compiled
    e = dsl.entry_point(c)
    assert e.address, "entry point (capi_func) not resolvable"
    assert e.result_ctype is ctypes.c_int32, "JitExecutor.cuda_result is no longer an int32 slot"
    assert e.extra_pointers == (), "host-only executors should add no kernel pointers"


def test_runtime_pointer_fields(compiled):
    _, args, x = compiled
    assert dsl.runtime_pointer_fields(args[0]) == (x.ctypes.data, cutlass.Float32, cute.AddressSpace.generic, 4), (
        "make_ptr pointer internals changed"
    )


def test_unload_listener_fires(compiled):
    c, args, _ = compiled
    fired = []
    e = dsl.entry_point(c)
    dsl.add_unload_listener(e.module, lambda: fired.append(True))
    dsl.unload(c)
    assert fired == [True] and dsl.is_unloaded(e.module)


def test_dsl_missing_reports_cb502():
    import subprocess
    import sys

    code = "import sys; sys.modules['cutlass'] = None\nimport cute_bind\ndef f(x: int): pass\ntry:\n    cute_bind.kernel(f)\nexcept cute_bind.CuteBindError as e:\n    print(e.code)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "CB502" in out


# ------------------------------------------------------------------ tensors
TENSOR_LAYOUTS = [
    # (from_dlpack tensor, layout text cute_bind must read: "?" dynamic i32, "?{i64}" dynamic i64)
    (lambda: from_dlpack(np.zeros((3, 4), np.float32)), "(3,4):(4,1)"),
    (lambda: from_dlpack(np.zeros((3, 4), np.float32)).mark_layout_dynamic(), "(?,?):(?{i64},1)"),
    (lambda: from_dlpack(np.zeros((3, 4), np.float32), use_32bit_stride=True).mark_layout_dynamic(), "(?,?):(?,1)"),
    (
        lambda: from_dlpack(np.zeros((64, 32), np.float32)).mark_compact_shape_dynamic(mode=1, divisibility=16),
        "(64,?{div=16}):(?{i64 div=16},1)",
    ),
    (lambda: from_dlpack(np.zeros((3, 8), np.float32)[:, ::2]).mark_layout_dynamic(), "(?,?):(?{i64},?{i64})"),
    (lambda: from_dlpack(np.zeros((), np.float32)), "():()"),
]


@pytest.mark.parametrize("make, text", TENSOR_LAYOUTS, ids=[t for _, t in TENSOR_LAYOUTS])
def test_tensor_layout_readable_from_cache_key(make, text):
    layout = dsl.tensor_layout(make())
    assert layout.text == text, "the DSL tensor's __cache_key__ layout spelling changed"
    assert layout.dtype is cutlass.Float32


def test_dsl_tensor_descriptor_is_the_c_struct_cute_bind_writes():
    """The memref descriptor: {data address; i32 dynamic extents; i64 (or i32) dynamic strides}, naturally aligned."""
    import struct

    a = np.zeros((3, 8), np.float32)
    t = from_dlpack(a).mark_layout_dynamic()
    raw = ctypes.string_at(t.__c_pointers__()[0], struct.calcsize("@Qiiq"))
    assert struct.unpack("@Qiiq", raw) == (a.ctypes.data, 3, 8, 8), "the DSL's memref descriptor layout changed"


def test_dsl_tensor_class_and_capsule():
    t = from_dlpack(np.zeros(4, np.float32))
    assert dsl.is_dsl_tensor(t) and not dsl.is_dsl_tensor(np.zeros(4)), "cute.runtime._Tensor changed"
    from cute_bind.slots import dlpack as _dlpack

    view = _dlpack.read_capsule(dsl.dsl_tensor_capsule(t))
    assert view.shape == (4,) and view.dtype == (2, 32, 1), "from_dlpack tensors no longer keep their DLPack capsule"


def test_entry_argument_types_readable_from_the_ir():
    from tests.kernels.host import tcopy_any

    c = cute.compile(
        tcopy_any,
        from_dlpack(np.zeros((64, 32), np.float32)).mark_compact_shape_dynamic(mode=1, divisibility=16),
        from_dlpack(np.zeros((3, 8), np.float32)[:, ::2]).mark_layout_dynamic(),
        1.0,
    )
    types = dsl.entry_argument_types(c)
    assert types is not None, "compiled.ir_module / function_name no longer give the entry's signature"
    assert [dsl.descriptor_fields(t) for t in types] == [["ptr", "i32", "i64"], ["ptr", "i32", "i32", "i64", "i64"], ["f32"]]
