"""CB204's fix names what the slot takes (its ``expected``), so a tensor slot's fix is about tensors."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest

import cute_bind


@cute_bind.kernel
def _three_kinds(out: cute.Tensor, a: cutlass.Int32, p: cute_bind.Pointer[cutlass.Float32]):
    out[0] = cutlass.Float32(a)


X = np.zeros(4, np.float32)

#: (argument given, index of the wrong one, how the fix must start, words it must hold)
ROWS = [
    ([[1.0, 2.0], 1, X.ctypes.data], "Pass a DLPack tensor", ("Tensor[Float32", "np.asarray(x)")),
    ([X.ctypes.data, 1, X.ctypes.data], "Pass a DLPack tensor", ("Tensor[Float32", "cute_bind.Pointer[...]")),
    ([X, 2.5, X.ctypes.data], "Pass an int in [-2147483648, 2147483647] for an Int32 slot", ("int(x)",)),
    ([X, 1, "s"], "Pass an address (int >= 0)", ("Pointer[Float32",)),
]


@pytest.fixture(scope="module")
def handle():
    return _three_kinds.bind(X, 1, X.ctypes.data)


@pytest.mark.parametrize(
    ("args", "start", "words"), ROWS, ids=["list-for-tensor", "address-for-tensor", "float-for-int", "str-for-pointer"]
)
def test_the_fix_names_what_the_slot_takes(handle, args, start, words):
    with pytest.raises(cute_bind.CuteBindError) as info:
        handle.launch(*args)
    assert info.value.code == "CB204"
    fix = info.value.fix
    assert fix.startswith(start), fix
    for word in words:
        assert word in fix, (word, fix)
    assert f"fix: {fix}" in str(info.value)
