"""cute_bind.jit.compiler: the typed compile key, its disk-cache spelling, and the dispatcher's interface to it."""

from __future__ import annotations

import ast
import inspect
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_bind
from cute_bind import dsl
from cute_bind.cache import key as cache_key_module
from cute_bind.cache.key import constexpr_value
from cute_bind.jit import dispatch as dispatch_mod
from cute_bind.jit.keys import CompileKey, ConstexprPart, SlotPart
from cute_bind.jit.dispatch import CallSite, Specialization
from tests.kernels.host import add_constexpr_stream, scale_ptr, with_constexpr

ADDRESS = 0x1000  # a stand-in address: binding reads it, nothing is compiled or launched
F32 = np.zeros(64, np.float32)  # an untyped cute.Pointer takes its dtype from the value

# (kernel, arguments, runtime parameter names, Constexpr parameter names and values)
KEY_ROWS = [
    ("pointers and numbers", scale_ptr, (F32, F32, 2.0, 4, 0), ("out", "inp", "alpha", "n", "stream"), ()),
    ("a Constexpr between runtime values", with_constexpr, (ADDRESS, 1, 3), ("out", "value"), (("offset", 3),)),
    ("a Constexpr and a left-out stream", add_constexpr_stream, (ADDRESS, 1, -2), ("out", "value", "stream"), (("offset", -2),)),
]


@pytest.mark.parametrize("row, fn, args, runtime, constexpr", KEY_ROWS, ids=[r[0] for r in KEY_ROWS])
def test_the_key_has_named_parts(row, fn, args, runtime, constexpr):
    k = cute_bind.kernel(fn, compile_options=None)
    key = k.compiler.bind(args, {}).key
    assert isinstance(key, CompileKey), row
    assert all(isinstance(p, SlotPart) for p in key.slots) and tuple(p.name for p in key.slots) == runtime, row
    assert all(isinstance(p, ConstexprPart) for p in key.constexpr), row
    assert tuple((p.name, p.type, constexpr_value(p.value)) for p in key.constexpr) == tuple((n, type(v), v) for n, v in constexpr), row
    assert (key.arch, key.options, key.env_streams) == (dsl.target_arch(), None, frozenset()), row


@pytest.mark.parametrize("row, fn, args, runtime, constexpr", KEY_ROWS, ids=[r[0] for r in KEY_ROWS])
def test_the_disk_cache_hashes_the_key_as_it_always_did(row, fn, args, runtime, constexpr):
    """The disk cache is given ``((parts in parameter order), arch, options)`` with plain tuple parts, so the
    entries written before the key had names keep their keys (the named form would spell differently)."""
    k = cute_bind.kernel(fn)
    key = k.compiler.bind(args, {}).key
    parts = {p.name: (p.name, p.key) for p in key.slots} | {p.name: (p.name, p.type, p.value) for p in key.constexpr}
    legacy = (tuple(parts[p.name] for p in k.signature.params), key.arch, key.options)
    assert k.compiler.cache_form(key) == legacy and type(k.compiler.cache_form(key)[0][0]) is tuple, row
    entry = cache_key_module.entry_key(k, k.compiler.cache_form(key))[0]
    assert entry == cache_key_module.entry_key(k, legacy)[0], row
    assert entry != cache_key_module.entry_key(k, key)[0], row  # why cache_form exists


def _bits(v: float) -> bytes:
    return struct.pack("<d", v)


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(st.floats(allow_nan=True), st.integers(-(2**70), 2**70), st.booleans()),
    st.one_of(st.floats(allow_nan=True), st.integers(-(2**70), 2**70), st.booleans()),
)
def test_constexpr_parts_are_equal_exactly_when_the_values_are(a, b):
    """Equal keys iff the same type and (floats) the same bits: ``1 == True`` and ``0.0 == -0.0`` are two keys,
    a NaN finds its own."""
    k = _CONSTEXPR_KERNEL
    ka, kb = (k.compiler.bind((ADDRESS, 1, v), {}).key for v in (a, b))
    same = type(a) is type(b) and (_bits(a) == _bits(b) if type(a) is float else a == b)
    assert (ka == kb) == same
    if type(a) is float and math.isnan(a):
        assert ka == k.compiler.bind((ADDRESS, 1, a), {}).key


_CONSTEXPR_KERNEL = cute_bind.kernel(with_constexpr)


def test_an_env_stream_compile_names_its_stream():
    from cutlass.cute.runtime import make_fake_stream

    k = cute_bind.kernel(scale_ptr)
    for env, expected in ((True, frozenset({"stream"})), (False, frozenset())):
        with dsl.compile_only():
            key = k.compiler.bind((F32, F32, 2.0, 4, make_fake_stream(use_tvm_ffi_env_stream=env)), {}).key
        assert key.env_streams == expected, env


def test_the_dispatcher_uses_the_compiler_interface_and_the_call_site_only():
    """dispatch.py reaches its kernel only through :class:`CallSite`'s methods (never Kernel privates),
    and tells key parts apart by their type, not by their length."""
    tree = ast.parse(inspect.getsource(dispatch_mod))
    site = {n for n in vars(CallSite) if n.startswith("_") and not n.startswith("__")}
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "kernel"
    }
    assert used and used <= site, used - site
    aliases = [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "kernel"
    ]  # fmt: skip
    assert not aliases  # ``k = self.kernel`` would hide what is reached
    lengths = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and ast.unparse(node) in ("len(p)", "len(part)", "len(x)")]
    assert not lengths, [ast.unparse(n) for n in lengths]


def test_specializations_are_the_records_with_their_source():
    k = cute_bind.kernel(with_constexpr)
    out = np.zeros(1, np.int32)
    k(out.ctypes.data, 1, 3)
    k._calls.clear()  # the dispatch forgets; the compiled function stays in memory
    k(out.ctypes.data, 1, 3)
    (record,) = k.specializations()
    assert type(record) is Specialization and (record.source, record.compiled) == ("memory", False)
    assert out[0] == 4


def test_tensors_on_several_devices_name_them_when_a_stream_is_left_out():
    """A specialization keeps its devices as numbers (no ``"__devices__"`` description): CB220 names them."""
    k = cute_bind.kernel(add_constexpr_stream)
    key = k.compiler.bind((ADDRESS, 1, 0), {}).key
    info = Specialization(index=1, parameters=(), arch=None, reason="first call", compiled=True, seconds=0.0)
    spec = dispatch_mod._Spec(key, info, None, None, (0, 1), {})
    assert spec.device == -1
    with pytest.raises(cute_bind.LaunchValueError) as raised:
        k._calls._stream_for(spec, "stream")
    assert (raised.value.code, raised.value.got) == ("CB220", "cuda:0, cuda:1")
