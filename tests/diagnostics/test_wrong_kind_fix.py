"""CB204's fix names what the slot takes (its ``expected``) and its own kind's conversion only, so a
tensor slot's fix is about tensors and a float slot's about floats."""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
import pytest

import cute_bind
from cute_bind import diagnostics as D
from cute_bind.slots.base import Where, wrong_kind


@cute_bind.kernel
def _kinds(
    out: cute.Tensor,
    a: cutlass.Int32,
    p: cute_bind.Pointer[cutlass.Float32],
    f: cutlass.Float32,
    b: cutlass.Boolean,
    s: cuda.CUstream,
    t: tuple[cutlass.Int32, cutlass.Int32],
):
    out[0] = cutlass.Float32(a) * f


X = np.zeros(4, np.float32)
GOOD = [X, 1, X.ctypes.data, 2.0, True, 0, (1, 2)]

#: (parameter index, wrong value, how the fix must start, words it must hold, its kind's name in the catalog)
ROWS = [
    (0, [1.0, 2.0], "Pass a DLPack tensor", ("Tensor[Float32", "np.asarray(x)"), "tensor"),
    (0, X.ctypes.data, "Pass a DLPack tensor", ("Tensor[Float32", "cute_bind.Pointer[...]"), "tensor"),
    (1, 2.5, "Pass an int in [-2147483648, 2147483647] for an Int32 slot", ("int(x)",), "integer"),
    (2, "s", "Pass an address (int >= 0)", ("Pointer[Float32", "data_ptr()"), "pointer"),
    (2, [1, 2], "Pass an address (int >= 0)", ("np.asarray(x, dtype)",), "pointer"),
    (3, "2.0", "Pass a real number (float or int) for a Float32 slot", ("float(x)",), "float"),
    (4, 2.5, "Pass a bool (or 0/1) for a Boolean slot", ("bool(x)",), "boolean"),
    (5, "s", "Pass a stream handle (int)", ("torch.cuda.current_stream()",), "stream"),
    (6, {1, 2}, "Pass a tuple or list of 2 elements", ("not a string, a set",), "sequence"),
    (3, np.ones(3, np.float32), "Pass a real number (float or int) for a Float32 slot", ("x.item()",), "float"),
    (1, np.ones(2, np.int32), "Pass an int in [-2147483648, 2147483647] for an Int32 slot", ("x.item()",), "integer"),
]
IDS = ["list-for-tensor", "address-for-tensor", "float-for-int", "str-for-pointer", "list-for-pointer"]
IDS += ["str-for-float", "float-for-bool", "str-for-stream", "set-for-tuple", "array-for-float", "array-for-int"]


@pytest.fixture(scope="module")
def handle():
    return _kinds.bind(*GOOD)


@pytest.mark.parametrize(("index", "value", "start", "words", "kind"), ROWS, ids=IDS)
def test_the_fix_names_what_the_slot_takes_and_its_own_conversion(handle, index, value, start, words, kind):
    args = list(GOOD)
    args[index] = value
    with pytest.raises(cute_bind.CuteBindError) as info:
        handle.launch(*args)
    assert info.value.code == "CB204"
    fix = info.value.fix
    assert fix.startswith(start), fix
    for word in words:
        assert word in fix, (word, fix)
    assert fix.endswith(D.WRONG_KIND_CONVERSIONS[kind]), fix
    others = [text for name, text in D.WRONG_KIND_CONVERSIONS.items() if name != kind]
    assert not any(text in fix for text in others), fix  # no other kind's advice
    assert f"fix: {fix}" in str(info.value)


def test_the_kernel_call_gives_the_same_fix(handle):
    with pytest.raises(cute_bind.CuteBindError) as info:
        _kinds(X, 1, X.ctypes.data, "2.0", True, 0, (1, 2))
    assert info.value.code == "CB204" and info.value.fix.endswith(D.WRONG_KIND_CONVERSIONS["float"])


def test_every_kinds_conversion_is_in_the_explanation():
    text = " ".join(D.WRONG_KIND.explanation.split())
    for name, conversion in D.WRONG_KIND_CONVERSIONS.items():
        if name != "other":
            assert f"{name}: {' '.join(conversion.split())}" in text, name


def test_an_extension_kind_without_its_own_sentence_gets_the_general_one():
    where = Where("k", "p")
    error = wrong_kind(where, "a thing", object())
    assert error.fix == "Pass a thing. " + D.WRONG_KIND_CONVERSIONS["other"]
