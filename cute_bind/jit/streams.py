"""The stream a call that leaves its stream out launches on (torch's current stream, else the default one).

Read by :mod:`cute_bind.jit.dispatch` for ``kernel(...)`` calls that leave a stream declared ``= None``
out; torch is never imported here (a process without it has only the default stream).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from typing import Callable

from .. import diagnostics as D

__all__ = ["current_stream"]

_DEFAULT_STREAM = 0
_CUDA_DEVICE_TYPES = (2, 13)  # DLPack kDLCUDA, kDLCUDAManaged


class _TorchStreams:
    """torch's raw current-stream reader, found once torch is imported with its CUDA initialised."""

    raw: Callable[[int], int] | None = None
    device: Callable[[], int] | None = None
    never = False  # torch is a build without CUDA: every left-out stream is the default stream
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

            self.device = torch.cuda.current_device
            self.raw = raw
        except Exception:
            return None
        return self.raw

    def getter(self, device: int | None) -> Callable[[], int]:
        """The cheapest ``() -> stream`` for a left-out stream of a specialization on ``device``, for now.

        Errors surface as exceptions (the dispatch path turns them into CB221).
        """
        raw = self.raw or self.find()
        if raw is not None:
            if device is not None:
                return functools.partial(raw, device)  # all C: torch's raw current-stream reader
            current = self.device or (lambda: 0)
            return lambda: raw(current())
        if self.never:
            return int  # int() == 0: the default stream, forever in this process (torch absent or without CUDA)
        return functools.partial(current_stream, device)  # torch may initialise CUDA later: look each time


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
