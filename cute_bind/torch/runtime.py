"""torch's entry points the torch ops use, looked up once (torch is imported when the first op is made)."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

from .. import diagnostics as D

__all__ = ["Runtime", "import_torch", "runtime"]


def import_torch() -> ModuleType:
    """torch, or CB701 where it is not installed."""
    try:
        from .. import dsl

        torch: ModuleType = dsl.import_torch()
    except ImportError as exc:
        raise D.error(D.TORCH_MISSING, expected="PyTorch (pip install torch)", got=f"{type(exc).__name__}: {exc}") from exc
    return torch


def _always() -> bool:
    return True


class Runtime:
    """torch's entry points the generated call uses, looked up once."""

    def __init__(self, torch: ModuleType) -> None:
        C = torch._C
        self.torch = torch
        self.Tensor = torch.Tensor
        self.Parameter = torch.nn.Parameter
        # constant False eagerly, folded to True by torch.compile's tracer (cheaper than
        # is_compiling; the other tracers are caught by the mode checks below)
        self.compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)
        # a torch without one of these checks takes the dispatcher every time (always correct)
        self.dispatch_modes: Callable[[], int] = getattr(C, "_len_torch_dispatch_stack", _always)
        self.function_modes: Callable[[], bool] = getattr(C, "_is_torch_function_mode_enabled", _always)
        self.functorch: Callable[[], bool] = getattr(C, "_are_functorch_transforms_active", _always)
        self.grad_enabled = C.is_grad_enabled
        self.bump = C._increment_version
        self.empty_like = torch.empty_like
        self.contiguous = torch.contiguous_format
        raw = getattr(C, "_cuda_getCurrentRawStream", None)
        self.raw_stream: Callable[[int], int] = raw if raw is not None else (lambda d: int(torch.cuda.current_stream(d).cuda_stream))
        device = getattr(C, "_cuda_getDevice", None)
        self.current_device: Callable[[], int] = device if device is not None else torch.cuda.current_device
        capturing = getattr(C, "_cuda_isCurrentStreamCapturing", None)
        self.capturing: Callable[[], bool] = capturing if capturing is not None else torch.cuda.is_current_stream_capturing

    def several_devices(self) -> bool:
        """Whether this process sees more than one CUDA device (else a tensor's device is the current one)."""
        try:
            return bool(self.torch.cuda.is_available()) and int(self.torch.cuda.device_count()) > 1
        except Exception:  # noqa: BLE001 - a torch that cannot tell: keep the per-call check
            return True


_RUNTIME: Runtime | None = None


def runtime() -> Runtime:
    """The process's :class:`Runtime` (made at the first op)."""
    global _RUNTIME
    if _RUNTIME is None:
        _RUNTIME = Runtime(import_torch())
    return _RUNTIME
