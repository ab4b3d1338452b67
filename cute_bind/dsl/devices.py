"""CUDA devices: how many there are, the architecture a compile targets, a compiled function's
executor per device, and CUDA error names.
"""

from __future__ import annotations

from typing import Any

from .. import diagnostics as D
from .. import settings
from .compiled import function_name, is_executor, is_unloaded

__all__ = [
    "cuda_error_name",
    "cuda_device_count",
    "target_arch",
    "executor_on_device",
]


def cuda_error_name(code: int) -> str:
    try:
        import cuda.bindings.runtime as rt

        return str(rt.cudaError_t(code).name)
    except Exception:
        return "unknown"


def cuda_device_count() -> int:
    """Number of CUDA devices the driver sees (0 without a driver)."""
    try:
        import cuda.bindings.driver as drv

        (err,) = drv.cuInit(0)
        if int(err) != 0:
            return 0
        err, count = drv.cuDeviceGetCount()
        return int(count) if int(err) == 0 else 0
    except Exception:
        return 0


def target_arch() -> str | None:
    """The architecture a compile targets now (hardware is consulted here, not at decoration)."""
    arch = settings.DSL_ARCH.text()
    if arch:
        return arch
    try:
        import cuda.bindings.driver as drv

        (err,) = drv.cuInit(0)
        if int(err) != 0:
            return None
        err, dev = drv.cuCtxGetDevice()
        if int(err) != 0:
            err, dev = drv.cuDeviceGet(0)
            if int(err) != 0:
                return None
        err, major = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        err2, minor = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        if int(err) or int(err2):
            return None
        return f"sm_{major}{minor}"
    except Exception:
        return None


def executor_on_device(compiled: Any, device: int, kernel: str | None = None) -> Any:
    """The executor of ``compiled`` for CUDA device ``device``: made once per device, kept on the compiled function.

    The DSL's executor takes its kernel functions from the CUDA context that is
    current when it is made (``compiled.to(...)``), and a compiled function's
    own default executor is made on whatever device is current at its first
    call. A handle bound with values on device ``device`` must call an
    executor made there, so that device's primary context is made current
    around ``compiled.to(device)``. An executor (``compiled.to(d)`` made by
    the caller) is returned as it is.
    """
    if is_executor(compiled):
        return compiled
    import cuda.bindings.driver as drv

    with compiled._executor_lock:
        executors = compiled.__dict__.setdefault("_cute_bind_executors", {})
        executor = executors.get(device)
        if executor is not None and not is_unloaded(executor.jit_module):
            return executor
        try:
            err, dev = drv.cuDeviceGet(device)
            if int(err) != 0:
                raise RuntimeError(f"cuDeviceGet({device}): {cuda_error_name(int(err))}")
            err, ctx = drv.cuDevicePrimaryCtxRetain(dev)
            if int(err) != 0:
                raise RuntimeError(f"cuDevicePrimaryCtxRetain({device}): {cuda_error_name(int(err))}")
            try:
                (err,) = drv.cuCtxPushCurrent(ctx)
                if int(err) != 0:
                    raise RuntimeError(f"cuCtxPushCurrent: {cuda_error_name(int(err))}")
                try:
                    executor = compiled.to(device)
                finally:
                    drv.cuCtxPopCurrent()
            finally:
                drv.cuDevicePrimaryCtxRelease(dev)  # the executor holds its own reference
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise D.error(
                D.NO_ENGINE,
                kernel=kernel or function_name(compiled),
                expected=f"a module that loads on CUDA device {device}",
                got=f"{type(exc).__name__}: {first[:160]}",
            ) from exc
        executors[device] = executor
        return executor
