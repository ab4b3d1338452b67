"""cute_bind kernels as JAX functions: ``cute_bind.jax.op(kernel, outputs={"out": "x"})`` inside ``jax.jit``.

The same :class:`cute_bind.Kernel` torch users call becomes a JAX function
whose call XLA launches without Python: a typed XLA FFI handler in C
(``_cxla.c``, registered once per process) runs the kernel's prepared launch
(the compiled specialization from cute_bind's compiler and disk cache, its
argument storage written when the call was lowered), with XLA's buffers and
stream. See docs/concepts/jax.md.

JAX is imported when an op is made, not when this module is: ``import
cute_bind`` and ``import cute_bind.jax`` never import JAX.
"""

from __future__ import annotations

from .op import JaxOp, op
from .plan import JaxParam, JaxPlan, Like, Shaped, like, shaped

__all__ = ["JaxOp", "JaxParam", "JaxPlan", "Like", "Shaped", "like", "op", "shaped"]
