"""Reading tensors through DLPack: the exchange API route and the capsule route agree."""

import ctypes
import datetime

import numpy as np
import pytest

from cute_bind.slots import dlpack as _dlpack
from tests.optional import torch_or_skip

torch = torch_or_skip()

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
    assert fast[:5] == slow[:5]  # the facts (a capsule read also holds the capsule: owner)
    assert fast.owner is None and slow.owner is not None
    assert fast.address == t.data_ptr() and fast.shape == tuple(t.shape) and fast.strides == tuple(t.stride())


def test_numpy_reads_through_the_capsule():
    a = np.zeros((2, 5), np.int16)[:, ::2]
    v = _dlpack.read(a)
    assert _dlpack.exchange_function(np.ndarray) is None
    assert (v.address, v.shape, v.strides, v.dtype, v.device) == (a.ctypes.data, (2, 3), (5, 2), (0, 16, 1), (1, 0))


class _NoStreamArray:
    """A DLPack producer that, like NumPy, refuses any ``stream`` keyword; counts its exports."""

    def __init__(self, array):
        self.array, self.calls = array, []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if "stream" in kwargs:
            raise RuntimeError("only stream=None")
        return self.array.__dlpack__()


def test_export_keywords_that_worked_are_tried_first():
    first, second = _NoStreamArray(np.arange(4.0)), _NoStreamArray(np.arange(6.0))
    assert _dlpack.read(first).shape == (4,)
    assert first.calls == [{"stream": -1, "copy": False}, {"copy": False}]
    # the next value of that type exports once, with the keywords that worked
    assert _dlpack.read(second).shape == (6,)
    assert second.calls == [{"copy": False}]


def test_not_a_tensor():
    with pytest.raises(TypeError):
        _dlpack.read(object())


@pytest.mark.parametrize(
    "dtype, name", [((2, 32, 1), "Float32"), ((4, 16, 1), "BFloat16"), ((2, 32, 4), "DLPack dtype (code=2, bits=32, lanes=4)")]
)
def test_describe_dtype(dtype, name):
    assert _dlpack.describe_dtype(dtype) == name


def _torch_values():
    values = [make() for make in VALUES]
    if torch.cuda.is_available():
        values += [
            torch.zeros(3, 5, device="cuda")[:, 1:],
            torch.zeros(4).pin_memory(),
            torch.zeros(2, device=f"cuda:{torch.cuda.device_count() - 1}"),
        ]
    return values


def test_torch_attribute_reader_agrees_with_the_exchange_api():
    """The Python paths read torch tensors by attribute: same facts as the exchange API (also CUDA and pinned tensors on a GPU machine)."""
    reader = _dlpack.reader_for(torch.Tensor)
    found = _dlpack.exchange_function(torch.Tensor)
    for t in _torch_values():
        assert reader(t) == _dlpack.read_exchange(found, t), (t.device, t.dtype, t.shape)
    assert reader(torch.zeros(4, device="meta")) is None and reader(torch.zeros(4).to_sparse()) is None


_USED = ctypes.create_string_buffer(b"used_dltensor")  # PyCapsule_SetName keeps the pointer: keep the buffer


class _Producer:
    """A __dlpack__ that hands back whatever capsule (or object) it was given."""

    def __init__(self, make):
        self.make = make

    def __dlpack__(self, *args, **kwargs):
        return self.make()


def _used_capsule():
    keep = np.zeros(4, np.float32)
    capsule = keep.__dlpack__()
    ctypes.pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ctypes.pythonapi.PyCapsule_SetName(capsule, _USED)  # what a consumer does when it takes the tensor
    return capsule


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: datetime.datetime_CAPI, "'datetime.datetime_CAPI'"),  # another API's capsule: its pointer is no DLTensor
        (_used_capsule, "'used_dltensor'"),  # consumed already: its memory may be freed
        (lambda: 12345, "not a capsule"),  # not a tensor at all: a TypeError (CB204 in a slot)
    ],
    ids=["foreign capsule", "used capsule", "not a capsule"],
)
def test_only_fresh_dlpack_capsules_are_read(make, fragment):
    with pytest.raises((_dlpack.InvalidDLPack, TypeError)) as info:
        _dlpack.read(_Producer(make))
    assert fragment in str(info.value)
    assert isinstance(info.value, TypeError) == (fragment == "not a capsule")
