"""The bench's Triton scale kernel (imported only where Triton is installed; ``import triton`` fails elsewhere).

Kept apart from :mod:`cute_bind.bench.kernels` because Triton compiles from
source files and is optional: importing this module raises ImportError
without it.
"""

from __future__ import annotations

# Triton's decorators are untyped.
# mypy: disable-error-code="untyped-decorator,import-not-found,import-untyped,name-defined,no-any-return,misc"

from typing import Any

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _scale_kernel(out_ptr, in_ptr, alpha, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]  # a triton kernel: triton reads parameter annotations as its own types
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask) * alpha, mask=mask)


def scale(out: Any, inp: Any, alpha: float) -> Any:
    """out = inp * alpha, launched the usual Triton way: ``kernel[grid](...)`` on torch's current stream."""
    n = out.numel()
    return _scale_kernel[(triton.cdiv(n, BLOCK),)](out, inp, alpha, n, BLOCK=BLOCK)
