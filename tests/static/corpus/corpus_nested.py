"""A kernel defined inside a function: decorated when the function runs."""

import cutlass

import cute_bind


def make_kernel() -> object:
    from cutlass import Float8E4M3FN as LocalNarrow
    from cutlass import Float16 as LocalHalf
    from cutlass import Int32 as LocalInt

    @cute_bind.kernel
    def inner(
        n: LocalInt,
        m: cutlass.Int32,
        h: LocalHalf,
        f8: LocalNarrow,  # expect: CB104
        pair: tuple[LocalInt, LocalHalf],
        narrows: list[LocalNarrow],  # expect: CB113
        s: "LocalInt",  # expect: CB107
        t: "tuple[LocalInt]",  # expect: CB107
    ) -> None:
        pass

    return inner


made = make_kernel()
