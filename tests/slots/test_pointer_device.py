"""A pointer slot remembers the CUDA device of the value it was bound with; a value that says it lives on another device is CB214."""

import pytest

import cute_bind
from cute_bind.slots import PointerKind, Where

W = Where("k", "p")


class CudaArray:
    """Stands in for a CUDA tensor on device ``index`` (torch-like: data_ptr, is_cuda, dtype, __dlpack_device__); never dereferenced."""

    is_cuda = True

    class _Dtype:
        def __str__(self) -> str:
            return "torch.float32"

    dtype = _Dtype()

    def __init__(self, index: int, address: int = 0x7F00_0000_0000, dlpack: bool = True) -> None:
        self.index, self.address, self.dlpack = index, address, dlpack

    def data_ptr(self) -> int:
        return self.address

    def get_device(self) -> int:
        return self.index

    def __getattr__(self, name: str):
        if name == "__dlpack_device__" and self.dlpack:
            return lambda: (2, self.index)
        raise AttributeError(name)


@pytest.mark.parametrize("dlpack", [True, False], ids=["__dlpack_device__", "get_device"])
@pytest.mark.parametrize("how", ["bind", "prepare"])
def test_pointer_slot_refuses_another_devices_memory(how, dlpack):
    slot = getattr(PointerKind(), how)(CudaArray(1, dlpack=dlpack), W).slot
    assert slot.device == (2, 1)
    assert slot.coerce(CudaArray(1, 0x7F00_0000_1000, dlpack), W) == 0x7F00_0000_1000
    assert slot.coerce(0x7F00_0000_2000, W) == 0x7F00_0000_2000  # an int address says nothing about its device
    with pytest.raises(cute_bind.LaunchValueError) as info:
        slot.coerce(CudaArray(0, dlpack=dlpack), W)
    assert info.value.code == "CB214" and "cuda:1" in str(info.value) and "cuda:0" in str(info.value)


def test_pointer_slot_bound_with_an_int_takes_any_device():
    slot = PointerKind(cute_bind.PointerSpec()).bind(CudaArray(0), W).slot
    unbound = PointerKind().prepare(0x7F00_0000_0000, W).slot
    assert unbound.device is None and unbound.coerce(CudaArray(3), W) == 0x7F00_0000_0000
    assert slot.device == (2, 0)
