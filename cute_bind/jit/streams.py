"""The stream a call that leaves its stream out launches on (torch's current stream, else the default one).

Read by :mod:`cute_bind.jit.dispatch` for ``kernel(...)`` calls that leave a stream declared ``= None``
out; torch is never imported here (a process without it has only the default stream).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from types import ModuleType
from typing import Callable

from .. import diagnostics as D

__all__ = ["StreamReader", "current_stream"]

_DEFAULT_STREAM = 0
_CUDA_DEVICE_TYPES = (2, 13)  # DLPack kDLCUDA, kDLCUDAManaged


class StreamReader(tuple[int, int, Callable[[], int] | None, object, Callable[[int], int]]):
    """``() -> stream`` for a left-out stream, which the C call path reads without calling it.

    A tuple ``(work_stream, device, current_device, keep, raw)``: ``work_stream`` is the address of
    torch's DLPack exchange API function ``current_work_stream`` (a C function of torch's, called with
    the GIL held), ``device`` the CUDA device or -1 for torch's current one: asked of
    ``current_device()`` (torch's C ``_cuda_getDevice``), or, where ``current_device`` is None, left
    to torch (both readers were seen to take -1 for the current device), ``keep`` the capsule that
    keeps the table alive. The C path
    (jit/_cdispatch.c) calls ``work_stream(kDLCUDA, device, &stream)`` itself: no Python call, no
    argument parsing (issue 44 item 7); a Python caller calls the object, which asks ``raw(device)``,
    torch's ``_cuda_getCurrentRawStream``: the same stream (torch's table answers with
    ``getCurrentCUDAStream(device)``, as that function does).
    """

    __slots__ = ()

    def __call__(self) -> int:
        _, device, current_device, _, raw = self
        return int(raw(device if device >= 0 or current_device is None else current_device()))


class _TorchStreams:
    """torch's raw current-stream reader, found once torch is imported with its CUDA initialised."""

    raw: Callable[[int], int] | None = None
    device: Callable[[], int] | None = None
    #: torch's DLPack exchange table: ``current_work_stream``'s address and the capsule holding it (0, None: none)
    work_stream: int = 0
    capsule: object = None
    never = False  # torch is a build without CUDA: every left-out stream is the default stream
    #: torch's readers take device -1 for its current device (checked once): a call without a device
    #: asks no current device first (one Python call less per left-out stream)
    resolves_current = False
    looked = False  # whether torch's installation was looked up (find_spec, once)

    def find(self) -> Callable[[int], int] | None:
        if self.never:
            return None
        torch = sys.modules.get("torch")  # never imported here: a process without torch has only the default stream
        if torch is None:
            if not self.looked:  # once: a file-system search per call costs tens of microseconds
                self.looked = True
                if importlib.util.find_spec("torch") is None:
                    self.never = True  # not installed: it cannot be imported later
            return None
        try:
            if not torch.backends.cuda.is_built():
                self.never = True
                return None
            if not torch.cuda.is_initialized():
                return None  # no stream can have been made current yet: torch's current stream is the default one
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if raw is None:  # a torch without the private reader: the public (slower) one

                def raw(device: int) -> int:
                    return int(torch.cuda.current_stream(device).cuda_stream)

            # torch's own C function where it has it: torch.cuda.current_device() is Python (its lazy-init
            # check, a no-op once CUDA is initialised, then this same call)
            self.device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
            self.raw = raw
            self._exchange(torch, raw)
        except Exception:
            return None
        return self.raw

    def _exchange(self, torch: ModuleType, raw: Callable[[int], int]) -> None:
        """Record torch's ``current_work_stream`` (its DLPack exchange table) for the C call path, where
        the table has one and it answers as ``raw`` does for the current device."""
        from ..slots import dlpack

        found = dlpack.exchange_table(torch.Tensor)
        if found is None or not found.work_stream or self.device is None:
            return
        device = int(self.device())
        if _read_work_stream(found.work_stream, device) == int(raw(device)):
            self.work_stream, self.capsule = found.work_stream, found.capsule
            self.resolves_current = _resolves_current(torch, found.work_stream, raw, device)

    def getter(self, device: int | None) -> Callable[[], int]:
        """The cheapest ``() -> stream`` for a left-out stream of a specialization on ``device``, for now:
        a :class:`StreamReader` where torch's exchange table gives ``current_work_stream`` (the C path
        calls it directly), else a Python callable.

        Errors surface as exceptions (the dispatch path turns them into CB221).
        """
        raw = self.raw or self.find()
        if raw is not None and self.work_stream and self.device is not None:
            current = None if device is None and self.resolves_current else self.device
            reader = StreamReader((self.work_stream, -1 if device is None else device, current, self.capsule, raw))
            return reader  # type: ignore[return-value]  # it is: mypy misses __call__ on a fixed-length tuple's subclass
        if raw is not None:
            if device is not None:
                return functools.partial(raw, device)  # all C: torch's raw current-stream reader
            current = self.device or (lambda: 0)
            return lambda: raw(current())
        if self.never:
            return int  # int() == 0: the default stream, forever in this process (torch absent or without CUDA)
        return functools.partial(current_stream, device)  # torch may initialise CUDA later: look each time


def _resolves_current(torch: ModuleType, work_stream: int, raw: Callable[[int], int], device: int) -> bool:
    """Whether torch's two readers take device -1 for the current device: asked while a stream other
    than the current one is made current, both must name it (a torch that refuses -1, or reads it
    otherwise, is asked its current device first, as before).

    That stream is CUDA's per-thread default stream (handle 2; the legacy one, 1, where that one is
    current), wrapped by torch without a CUDA call: creating a stream here could be the first use of
    torch's stream pool, a CUDA call that would break a graph capture in progress."""
    try:
        handle = 1 if int(raw(device)) == 2 else 2
        with torch.cuda.stream(torch.cuda.ExternalStream(handle, device=device)):
            return _read_work_stream(work_stream, -1) == handle and int(raw(-1)) == handle
    except Exception:
        return False


def _read_work_stream(address: int, device: int) -> int:
    """``current_work_stream(kDLCUDA, device)`` through ctypes (checked once against torch's answer)."""
    import ctypes

    reader = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))(address)
    out = ctypes.c_void_p(0)
    if reader(_CUDA_DEVICE_TYPES[0], device, ctypes.byref(out)) != 0:
        raise RuntimeError(f"torch's current_work_stream failed for cuda:{device}")
    return int(out.value or 0)


_TORCH = _TorchStreams()


def current_stream(device: int | None, kernel: str = "kernel", parameter: str = "stream") -> int:
    """The stream a call that leaves its stream out launches on (a raw ``CUstream`` handle).

    - torch imported, built with CUDA and its CUDA initialised: torch's current
      stream of ``device`` (``torch.cuda.current_stream(device)``), where
      ``device`` is the CUDA device of the call's tensor arguments; for a
      kernel without tensor parameters (``device`` None), of torch's current
      device (``torch.cuda.current_device()``);
    - otherwise (torch not imported, a CPU-only build, CUDA not initialised
      yet): ``0``, the default stream, which is also torch's current stream
      in that state.

    Raises CB221 when torch raises.
    """
    raw = _TORCH.raw or _TORCH.find()
    if raw is None:
        return _DEFAULT_STREAM
    try:
        if device is None:
            device = _TORCH.device() if _TORCH.device is not None else 0
        return raw(device)
    except Exception as exc:
        where = "torch's current device" if device is None else f"cuda:{device}"
        raise D.error(
            D.CURRENT_STREAM_UNAVAILABLE, kernel=kernel, parameter=parameter, expected=where, got=f"{type(exc).__name__}: {exc}"
        ) from exc
