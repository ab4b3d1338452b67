"""Star imports: `from cute_bind import *` and `from cutlass import *` export no builtin's name,
so `int`, `float`, `tuple` and `list` stay Python's (the static tools once read them as
`cute_bind.int`, `cutlass.list`...)."""

from cutlass import *  # noqa: F403
from cute_bind import *  # noqa: F403

import cuda.bindings.driver as cuda  # after the star import: cutlass exports a `cuda` of its own
import cutlass.cute as cute


@kernel  # noqa: F405
def star_ok(
    out: cute.Tensor,
    xs: tuple[cute.Tensor, ...],
    ys: list[cute.Tensor],
    n: int,
    alpha: float,
    flag: bool,
    width: Int32,  # noqa: F405 - cutlass's, through the star import
    stream: cuda.CUstream,
):
    pass


@kernel  # noqa: F405
def star_bad(out: cute.Tensor, label: str):  # expect: CB102
    pass
