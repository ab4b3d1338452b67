"""Preludes shared by the examples of several ranges.

Every example is a whole script (the docs print it, tests/diagnostics/test_catalog_examples.py runs it):
these are its first lines, joined to the rest with ``+``.
"""

PRELUDE = """\
import ctypes
import cutlass
import cutlass.cute as cute
import cute_bind
"""


# A host-only function (no device kernel inside) that compiles and runs on the
# CPU: the bind/launch examples below use it so they run anywhere.
FILL = (
    PRELUDE
    + """
@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value

buf = (ctypes.c_int32 * 1)()
addr = ctypes.addressof(buf)
"""
)

# FILL bound once: the examples of what a launch refuses start from this handle.
FILL_HANDLE = (
    FILL
    + """
handle = fill.bind(addr, 1)
"""
)
