"""A kernel defined inside a function: decorated when the function runs."""

import cutlass

import cute_bind


def make_kernel() -> object:
    from cutlass import Float16 as LocalHalf
    from cutlass import Int32 as LocalInt

    @cute_bind.kernel
    def inner(
        n: LocalInt,
        m: cutlass.Int32,
        h: LocalHalf,  # expect: CB104
        s: "LocalInt",  # expect: CB107
    ) -> None:
        pass

    return inner


made = make_kernel()
