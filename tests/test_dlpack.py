"""Reading tensors through DLPack: the exchange API route and the capsule route agree."""

import numpy as np
import pytest

from cute_bind import _dlpack

torch = pytest.importorskip("torch")

VALUES = [
    lambda: torch.arange(12, dtype=torch.float32).reshape(3, 4),
    lambda: torch.zeros(4, 6)[:, 1:5],
    lambda: torch.zeros(5, 3).t(),
    lambda: torch.zeros((), dtype=torch.float64),
    lambda: torch.zeros(7, dtype=torch.bfloat16),
    lambda: torch.zeros(2, 3, dtype=torch.int8)[1:],
]


@pytest.mark.parametrize("make", VALUES)
def test_exchange_and_capsule_routes_agree(make):
    t = make()
    assert _dlpack.exchange_function(type(t)) is not None, "torch has no DLPack exchange API"
    fast = _dlpack.read(t)
    slow = _dlpack.read_capsule(t.__dlpack__())
    assert fast == slow
    assert fast.address == t.data_ptr() and fast.shape == tuple(t.shape) and fast.strides == tuple(t.stride())


def test_numpy_reads_through_the_capsule():
    a = np.zeros((2, 5), np.int16)[:, ::2]
    v = _dlpack.read(a)
    assert _dlpack.exchange_function(np.ndarray) is None
    assert (v.address, v.shape, v.strides, v.dtype, v.device) == (a.ctypes.data, (2, 3), (5, 2), (0, 16, 1), (1, 0))


def test_not_a_tensor():
    with pytest.raises(TypeError):
        _dlpack.read(object())


@pytest.mark.parametrize("dtype, name", [((2, 32, 1), "Float32"), ((4, 16, 1), "BFloat16"), ((2, 32, 4), "DLPack dtype (code=2, bits=32, lanes=4)")])
def test_describe_dtype(dtype, name):
    assert _dlpack.describe_dtype(dtype) == name
