"""The JIT package: ``@cute_bind.kernel``, the annotated signature it reads, compiling per key.

``signature`` classifies each parameter through the slot registry at
decoration time (CB1xx); ``decorator`` holds :class:`Kernel`, the public
face; ``compiler`` binds, keys, caches and compiles (bind → key → cache →
compile → prepare); ``dispatch`` calls (a specialization per key, a prepared
handle per key and thread), talking to the compiler.
"""

from __future__ import annotations

from .decorator import Kernel, kernel
from .signature import KernelSignature, check_function, read_signature

__all__ = ["Kernel", "KernelSignature", "check_function", "kernel", "read_signature"]
