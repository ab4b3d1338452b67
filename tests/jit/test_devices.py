"""Which device a bound handle launches on: the one CUDA device its values live on.

On a machine with several GPUs, ``kernel.bind`` with values on device d uses the
compiled function's executor for d (the DSL's executor takes its kernel
functions from the context current when it is made); values on two devices are
CB214. These CPU tests use stand-in device values (never dereferenced) and
stand in for the executor; tests/gpu/test_multi_gpu.py runs the real thing.
"""

import pytest

import cute_bind
from cute_bind import dsl
from tests.kernels.host import two_buffers
from tests.slots.test_pointer_device import CudaArray


@pytest.fixture
def gpus(monkeypatch):
    """Pretend the driver sees ``n`` GPUs; record the executors asked for."""
    made = []

    def executor_on_device(compiled, device, kernel=None):
        made.append(device)
        return compiled.to(None)  # a host-only function: any executor runs it

    monkeypatch.setattr(dsl, "executor_on_device", executor_on_device)

    def set_count(n):
        monkeypatch.setattr(dsl, "cuda_device_count", lambda: n)
        return made

    return set_count


def test_values_on_two_devices_are_cb214_at_bind(gpus):
    gpus(2)
    k = cute_bind.kernel(two_buffers)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        k.bind(CudaArray(0), CudaArray(1), 4)
    assert info.value.code == "CB214" and info.value.parameter == "b" and "cuda:0" in str(info.value) and "cuda:1" in str(info.value)


@pytest.mark.parametrize("count, device, per_device", [(1, 0, False), (2, 0, True), (2, 1, True), (8, 5, True)])
def test_handle_uses_the_executor_for_its_values_device(gpus, count, device, per_device):
    made = gpus(count)
    k = cute_bind.kernel(two_buffers)
    h = k.bind(CudaArray(device), CudaArray(device, 0x7F00_0001_0000), 4)
    compiled = k.compile(CudaArray(device), CudaArray(device), 4)
    assert made == ([device] if per_device else [])
    assert (h.compiled is compiled) == (not per_device)
    with pytest.raises(cute_bind.LaunchValueError) as info:  # refused before anything runs
        h.launch(CudaArray(device), CudaArray(device + 1), 4)
    assert info.value.code == "CB214" and info.value.parameter == "b"


def test_values_without_a_device_name_none(gpus):
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    made = gpus(2)
    k = cute_bind.kernel(two_buffers)
    k.bind(CudaArray(1), make_ptr(cutlass.Float32, 0x7F00_0000_0000, cute.AddressSpace.gmem), 4)  # the tensor decides
    assert made == [1]
    h = k.bind(
        make_ptr(cutlass.Float32, 0x7F00_0000_0000, cute.AddressSpace.gmem),
        make_ptr(cutlass.Float32, 0x7F00_0000_0000, cute.AddressSpace.gmem),
        4,
    )
    assert made == [1] and h.compiled is k.compile(CudaArray(1), CudaArray(1), 4)  # no device named: the compiled function itself


def test_executor_on_device_keeps_an_executor_and_reports_a_device_it_cannot_use():
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    p = make_ptr(cutlass.Float32, 0x7F00_0000_0000, cute.AddressSpace.gmem)
    compiled = cute.compile(two_buffers, p, p, cutlass.Int32(4))
    executor = compiled.to(None)
    assert dsl.executor_on_device(executor, 1) is executor  # made by the caller: used as it is
    if dsl.cuda_device_count() == 0:
        with pytest.raises(cute_bind.CuteBindError) as info:
            dsl.executor_on_device(compiled, 0, "two_buffers")
        assert info.value.code == "CB304" and "CUDA device 0" in str(info.value)
