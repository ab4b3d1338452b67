"""cute_bind kernels as torch custom ops: ``cute_bind.torch.op("mylib::scale", scale, mutates_args=("out",))``.

An op made here is an ordinary ``torch.library`` operator
(``torch.ops.mylib.scale``) with a schema, fake implementation and autograd
hook torch understands, so ``torch.compile(fullgraph=True)``, FakeTensor,
``torch.library.opcheck`` and CUDA graphs work with it. Called eagerly, the
returned :class:`TorchOp` skips torch's dispatcher and calls the kernel
directly, at the kernel's own call speed, on torch's current stream.

torch is imported when an op is made, not when this module is: ``import
cute_bind`` never imports torch.
"""

from __future__ import annotations

from .custom_op import TorchOp, op
from .outputs import Like, OutputSpec, like
from .schema import OpParam, OpPlan

__all__ = ["Like", "OpParam", "OpPlan", "OutputSpec", "TorchOp", "like", "op"]
