"""Float16/BFloat16 scalar slots and sequence slots, end to end on host-only functions.

Half scalars are written as 16-bit patterns: every row checks, on both launch
fast paths, that the handle's bytes equal what the DSL's own marshalling
writes for the same Python value (the direct call's bytes), including NaN
payloads, overflow, subnormals, ties and the BFloat16 truncation.
"""

from __future__ import annotations

import ctypes
import math
import struct

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cute_bind
from cute_bind import dsl
from cute_bind.slots import bfloat16_bits, float16_bits
from tests.kernels.host import F32, halves, seq_sum, seq_tensors, thalf_default
from tests.optional import torch_or_skip

HALVES = cute_bind.kernel(halves)
SEQ_SUM = cute_bind.kernel(seq_sum)


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


HALF_VALUES = [
    0.0, -0.0, 1.0, 1.1, -2.5, 0.1, 3.3,
    65504.0, 65519.99, 65520.0, -70000.0, 1e10, 1e300, -1e300,  # Float16 max, last value rounding to it, overflow
    3.4028234663852886e38, 3.5e38, -1e39,  # float32 max and beyond (BFloat16 overflow)
    math.inf, -math.inf, math.nan, -math.nan,
    _f64(0x7FF0000000000001), _f64(0xFFF0000000000001), _f64(0x7FF4000000000000),  # NaN payloads (low, negative, high)
    5.960464477539063e-08, 2.980232238769531e-08, 8.940696716308594e-08, 1e-10,  # Float16 subnormals, tie to 0, tie up
    1.0 + 2**-11, 1.0 + 3 * 2**-11, 1.0 + 2**-8 + 2**-20, 1.00390625,  # ties to even; the BFloat16 truncation case
    1e-45, 5e-324, 2**-149,  # float32 subnormal range
    3, -7, 2**20, 2**130,  # ints are converted like floats
]  # fmt: skip


@pytest.fixture(scope="module")
def out():
    return np.zeros(3, np.float32)


def _ptr(a):
    import cutlass
    from cutlass.cute.runtime import make_ptr

    return make_ptr(cutlass.Float32, a.ctypes.data)


def _direct_bytes(handle, values):
    """The bytes of each C argument the DSL's marshalling writes for Python values (as the direct call)."""
    addresses, keep = dsl.marshal(handle.compiled, tuple(values), {})
    chunks = [ctypes.string_at(a, s) for a, s in zip(addresses, [8, 2, 2, 4])]
    del keep
    return chunks


@pytest.mark.parametrize("value", HALF_VALUES, ids=[repr(v) for v in HALF_VALUES])
def test_half_bytes_identical_to_direct_call(value, out, path):
    handle = HALVES.bind(out, 1.0, 1.0, 1.0)
    handle.launch(out, value, value, 0.5)
    ours = [handle.slot_bytes(n) for n in ("out", "a", "b", "c")]
    assert ours == _direct_bytes(handle, (_ptr(out), value, value, 0.5))


@pytest.mark.parametrize("value", HALF_VALUES, ids=[repr(v) for v in HALF_VALUES])
def test_bit_functions_match_the_dsl(value):
    import cutlass

    def dsl_bits(t):
        (p,) = t(float(value)).__c_pointers__()
        return int.from_bytes(ctypes.string_at(p.value if isinstance(p, ctypes.c_void_p) else p, 2), "little")

    assert float16_bits(float(value)) == dsl_bits(cutlass.Float16)
    assert bfloat16_bits(float(value)) == dsl_bits(cutlass.BFloat16)


def test_bfloat16_truncates_like_the_direct_call():
    # documented: the DSL keeps the high half of the float32 value (no rounding)
    assert bfloat16_bits(1.0 + 2**-8 + 2**-20) == 0x3F80


def test_half_outputs_identical_to_direct_call(out, path):
    handle = HALVES.bind(out, 1.0, 1.0, 1.0)
    for a, b in [(1.1, 3.3), (65519.99, -1e39), (1e-7, 1e-45), (math.inf, math.nan)]:
        direct = np.zeros(3, np.float32)
        HALVES.call_dsl(direct, a, b, 2.0)
        handle.launch(out, a, b, 2.0)
        assert out.tobytes() == direct.tobytes()


@pytest.mark.parametrize("bad, code", [("1.0", "CB204"), (None, "CB204"), (10**400, "CB205")])
def test_half_value_checks(bad, code, out, path):
    handle = HALVES.bind(out, 1.0, 1.0, 1.0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        handle.launch(out, bad, 1.0, 1.0)
    assert (info.value.code, info.value.parameter) == (code, "a")


def test_half_default_is_converted_on_every_path(path):
    k = cute_bind.kernel(thalf_default)
    x = np.full(4, 2.0, np.float32)
    handle = k.bind(x)
    handle.launch(x)  # default scale 0.5
    assert x.tolist() == [1.0] * 4
    handle.launch(x, 4.0)
    assert x.tolist() == [4.0] * 4
    assert handle.slot_bytes("scale") == struct.pack("<H", float16_bits(4.0))


# ------------------------------------------------------------------ sequences
def _arrays(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32)


def test_sequence_outputs_identical_to_direct_call(path):
    a, b, y = _arrays(0)
    handle = SEQ_SUM.bind(y, (a, b), (1.0, 1.0), 64)
    for seed, scales, n, as_list in [(1, (2.0, 0.5), 64, False), (2, (-1.0, 3.3), 17, True), (3, (0.0, 65504.0), 1, False)]:
        a, b, y = _arrays(seed)
        direct = np.zeros(64, np.float32)
        SEQ_SUM.call_dsl(direct, (a, b), scales, n)
        ins = [a.ctypes.data, b.ctypes.data] if as_list else (a.ctypes.data, b.ctypes.data)
        handle.launch(y, ins, list(scales) if as_list else scales, n)
        assert y.tobytes() == direct.tobytes()


def test_sequence_bytes_identical_to_direct_call(path):
    a, b, y = _arrays(4)
    handle = SEQ_SUM.bind(y, (a, b), (1.0, 1.0), 64)
    handle.launch(y, (b, a), (0.1, 1.1), 9)
    import cutlass

    # Typed elements: the DSL marshals a Python float inside a sequence as Float32
    # whatever the element annotation says (a Float16 element would read the low
    # half of a float32); cute_bind writes each element as its annotated kind.
    typed = (cutlass.Float32(0.1), cutlass.Float16(1.1))
    addresses, keep = dsl.marshal(handle.compiled, (_ptr(y), (_ptr(b), _ptr(a)), typed, 9), {})
    theirs = b"".join(ctypes.string_at(p, s) for p, s in zip(addresses, [8, 8, 8, 4, 2, 4]))
    del keep
    ours = (
        handle.slot_bytes("out")
        + handle.slot_bytes("ins")
        + handle.slot_bytes("scales")[:4]
        + handle.slot_bytes("scales")[4:6]
        + handle.slot_bytes("n")
    )
    assert ours == theirs
    assert handle.slots["ins"].parts == ("Q", "Q") and handle.slots["scales"].parts == ("f", "H")


SEQ_BAD = [
    (lambda a, b: ((a, b, a), (1.0, 1.0)), "CB215", "ins", cute_bind.LaunchValueError),
    (lambda a, b: ((a,), (1.0, 1.0)), "CB215", "ins", cute_bind.LaunchValueError),
    (lambda a, b: ((a, b), (1.0,)), "CB215", "scales", cute_bind.LaunchValueError),
    (lambda a, b: ((a, 1.5), (1.0, 1.0)), "CB204", "ins[1]", cute_bind.LaunchArgumentError),
    (lambda a, b: ((a, b), (1.0, "x")), "CB204", "scales[1]", cute_bind.LaunchArgumentError),
    (lambda a, b: (a, (1.0, 1.0)), "CB204", "ins", cute_bind.LaunchArgumentError),
    (lambda a, b: ("ab", (1.0, 1.0)), "CB204", "ins", cute_bind.LaunchArgumentError),
]


@pytest.mark.parametrize("make, code, param, cls", SEQ_BAD, ids=[f"{r[1]}-{r[2]}-{i}" for i, r in enumerate(SEQ_BAD)])
def test_sequence_checks(make, code, param, cls, path):
    a, b, y = _arrays(5)
    handle = SEQ_SUM.bind(y, (a, b), (1.0, 1.0), 64)
    ins, scales = make(a, b)
    with pytest.raises(cls) as info:
        handle.launch(y, ins, scales, 4)
    assert (info.value.code, info.value.kernel, info.value.parameter) == (code, "seq_sum", param)


def test_bare_tuple_of_tensors_takes_kinds_from_bind(path):
    torch = torch_or_skip()
    k = cute_bind.kernel(seq_tensors)
    handle = k.bind((torch.ones(4), torch.ones(6)), 2.0)
    assert [type(e).__name__ for e in handle.slots["outs"].elements] == ["TensorKind", "TensorKind"]
    t1, t2 = torch.arange(5, dtype=torch.float32), torch.arange(9, dtype=torch.float32)
    d1, d2 = t1.clone(), t2.clone()
    handle.launch((t1, t2), 3.0)
    k.call_dsl((d1, d2), 3.0)
    assert torch.equal(t1, d1) and torch.equal(t2, d2) and torch.equal(t1, torch.arange(5) * 3.0)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        handle.launch((t1,), 3.0)
    assert info.value.code == "CB215"


def test_bare_tuple_kinds_are_part_of_the_compile_key():
    k = cute_bind.kernel(seq_tensors)
    torch = torch_or_skip()
    k.bind((torch.ones(4),), 2.0)
    k.bind((torch.ones(4), torch.ones(4)), 2.0)
    k.bind((torch.ones(4, dtype=torch.float64),), 2.0)
    assert k.cache_info()["compiled"] == 3


def test_c_path_writes_sequences_without_python(monkeypatch):
    """On the C fast path a sequence of plain elements never runs cute_bind's Python sequence code."""
    if cute_bind.launch.fast_path() != "c":
        pytest.skip("the C fast path is not built")
    a, b, y = _arrays(6)
    handle = SEQ_SUM.bind(y, (a, b), (1.0, 1.0), 64)
    from cute_bind.slots import sequence as _sequence_slot

    def boom(*args, **kwargs):
        raise AssertionError("Python sequence path used")

    monkeypatch.setattr(_sequence_slot.SequenceKind, "coerce", boom)
    direct = np.zeros(64, np.float32)
    SEQ_SUM.call_dsl(direct, (a, b), (2.0, 0.5), 64)
    handle.launch(y.ctypes.data, (a.ctypes.data, b.ctypes.data), [2.0, 0.5], 64)
    assert y.tobytes() == direct.tobytes()


def _element_forms():
    """Sequence element forms the C launcher reads as the same top-level slot would: (id, make, reader)."""
    forms = [
        ("ndarray", lambda a, b: (a, b), "ndarray"),
        ("ndarray-list", lambda a, b: [a, b], "ndarray"),
        ("ctypes", lambda a, b: (ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(b.ctypes.data)), "ctypes"),
        ("mixed", lambda a, b: (a.ctypes.data, b), "ndarray"),
        ("torch", lambda a, b: tuple(__import__("torch").from_numpy(x) for x in (a, b)), "exchange"),
    ]
    return forms


@pytest.mark.parametrize("make, reader", [f[1:] for f in _element_forms()], ids=[f[0] for f in _element_forms()])
@pytest.mark.parametrize(
    "scales", [(2.0, 0.5), (np.float32(2.0), np.float16(0.5)), [np.float64(-1.25), 3]], ids=["floats", "numpy-scalars", "list"]
)
def test_c_path_reads_sequence_elements_as_their_slots(monkeypatch, make, reader, scales):
    """Arrays, ctypes pointers, torch tensors and NumPy scalars inside a sequence are read in C, as the
    same values given to a top-level slot are: no Python sequence code, no slow path, no dispatch."""
    if cute_bind.launch.fast_path() != "c":
        pytest.skip("the C fast path is not built")
    if reader == "exchange":
        torch_or_skip()
    from cute_bind.launch import _claunch
    from cute_bind.launch.prepared import PreparedLaunch
    from cute_bind.slots import sequence as _sequence_slot

    a, b, y = _arrays(7)
    k = cute_bind.kernel(seq_sum)
    handle = k.bind(y, (a, b), (1.0, 1.0), 64)
    k(y, make(a, b), scales, 64)  # the decorator's first call: its specialization, then its route
    direct = np.zeros(64, np.float32)
    SEQ_SUM.call_dsl(direct, (a, b), tuple(float(s) for s in scales), 64)

    def boom(*args, **kwargs):
        raise AssertionError("a Python path was taken")

    for owner, name in [(_sequence_slot.SequenceKind, "coerce"), (_sequence_slot.SequenceKind, "bind"), (PreparedLaunch, "_slow")]:
        monkeypatch.setattr(owner, name, boom)
    for launch in (handle.launch, k):
        y[:] = 0
        before = _claunch.counts()[reader]
        launch(y, make(a, b), scales, 64)
        assert _claunch.counts()[reader] > before
        assert y.tobytes() == direct.tobytes()


def _odd_elements():
    """Values for one pointer element of ``seq_sum``'s ``ins``: ones both paths take, and ones only the
    slow path judges (read-only, strided, other dtypes, numbers, None...). No NULL or empty array: the
    host function reads 8 floats through each element, wherever it points."""
    base = np.arange(64, dtype=np.float32)
    readonly = base.copy()
    readonly.flags.writeable = False
    return {
        "array": lambda: base.copy(),
        "int": lambda: base.ctypes.data,
        "c_void_p": lambda: ctypes.c_void_p(base.ctypes.data),
        "readonly": lambda: readonly,
        "strided": lambda: np.arange(128, dtype=np.float32)[::2],
        "float64": lambda: np.zeros(64, np.float64),
        "0-d": lambda: np.float32(1.0),
        "bool": lambda: True,
        "float": lambda: 1.5,
        "none": lambda: None,
        "negative": lambda: -8,
        "huge": lambda: 1 << 70,
        "string": lambda: "x",
        "object-array": lambda: np.array([object()] * 4),
    }


def _seq_outcome(make_a, make_b, scales):
    """What a launch of ``seq_sum`` with these elements does: ("ok", output bytes) or ("error", code, parameter)."""
    y = np.zeros(64, np.float32)
    a, b = np.ones(64, np.float32), np.ones(64, np.float32)
    handle = SEQ_SUM.bind(y, (a, b), (1.0, 1.0), 64)
    x, z = make_a(), make_b()
    try:
        handle.launch(y, (x, z), scales, 8)
    except cute_bind.CuteBindError as exc:
        return ("error", exc.code, exc.parameter)
    return ("ok", y.tobytes())


ODD = _odd_elements()


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(sorted(ODD)), st.sampled_from(sorted(ODD)), st.sampled_from([(2.0, 0.5), (np.float32(1.0), np.float16(3.0)), (1, "x")])
)
def test_sequence_elements_have_one_outcome_on_both_paths(a, b, scales):
    """Whatever a sequence's elements are, the C launcher's reading of them and the Python path's agree:
    the same bytes written, or the same catalog error for the same element."""
    if cute_bind.launch.fast_path() != "c":
        pytest.skip("the C fast path is not built")
    c = _seq_outcome(ODD[a], ODD[b], scales)
    with pytest.MonkeyPatch.context() as m:
        m.setenv("CUTE_BIND_PURE_PYTHON", "1")
        python = _seq_outcome(ODD[a], ODD[b], scales)
    assert c == python, (a, b, scales)


@cute.jit
def seq_constexpr(out: F32, ins: tuple[F32, F32], k: cutlass.Constexpr):
    """out[0] = ins[0][0] * k + ins[1][0]: one specialization per k."""
    o = cute.make_tensor(out, cute.make_layout(1))
    a = cute.make_tensor(ins[0], cute.make_layout(1))
    b = cute.make_tensor(ins[1], cute.make_layout(1))
    o[0] = a[0] * cutlass.Float32(k) + b[0]


@pytest.mark.parametrize("as_list", [False, True], ids=["tuple", "list"])
def test_a_kernel_with_a_sequence_switches_keys_by_probe(monkeypatch, as_list):
    """Calls cycling over more specializations than a thread keeps routes for reach the dispatch path;
    the sequence's probe (its length and each element's probe) finds each one without the full key."""
    k = cute_bind.kernel(seq_constexpr)
    y, a, b = np.zeros(1, np.float32), np.full(1, 2.0, np.float32), np.full(1, 1.0, np.float32)
    ins = [a, b] if as_list else (a, b)
    factors = range(1, 8)  # 7 > the routes a thread tries (jit.dispatch._ROUTES)
    for f in factors:
        k(y, ins, f)
    compile_key = k.compiler.bind_values

    def no_full_key(*args, **kwargs):
        raise AssertionError("the full compile key was computed for a known specialization")

    monkeypatch.setattr(k.compiler, "bind_values", no_full_key)
    for _ in range(2):
        for f in factors:
            k(y, ins, f)
            assert y[0] == 2.0 * f + 1.0
    monkeypatch.setattr(k.compiler, "bind_values", compile_key)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        k(y, (a,), 3)
    assert info.value.code == "CB215"
