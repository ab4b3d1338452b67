"""The JIT package: ``@cute_bind.kernel``, the annotated signature it reads, compiling per key.

``signature`` classifies each parameter through the slot registry at
decoration time (CB1xx); ``decorator`` holds :class:`Kernel`, which compiles
per compile key and binds prepared launches.
"""

from __future__ import annotations

from .decorator import Kernel, kernel
from .signature import KernelSignature, check_function, read_signature

__all__ = ["Kernel", "KernelSignature", "check_function", "kernel", "read_signature"]
