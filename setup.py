"""Build the optional C fast paths (cute_bind.launch._claunch, cute_bind.launch._ctvmffi for TVM-FFI functions, cute_bind.jit._cdispatch, cute_bind.graph._cgraph for graph replays, cute_bind.torch._ceager for a torch op's eager checks, cute_bind.jax._cxla: the XLA FFI handler, where jaxlib's headers are found); everything else is in pyproject.toml.

The extension uses the stable ABI (abi3, Python >= 3.10). It is optional: when
no C compiler is available the install still succeeds and PreparedLaunch uses
its pure-Python fast path.
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Every extension names libc as a needed library on Linux, even one that calls no libc function (the
# linker's --as-needed drops it then): auditwheel reads the C library from the first extension it meets
# and refuses a wheel whose extension names none ("couldn't detect libc for python extension").
LINK_ARGS = ["-Wl,--no-as-needed", "-lc"] if sys.platform.startswith("linux") else []


class OptionalBuildExt(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler: fall back to the pure-Python launcher
            print(f"cute_bind: C fast path not built ({exc}); using the pure-Python launcher")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"cute_bind: C fast path not built ({exc}); using the pure-Python launcher")


def c_extension(name: str, depends: tuple[str, ...] = ()) -> Extension:
    """One optional C fast path: ``cute_bind/<room>/<module>.c``, built for the stable ABI (its
    source defines Py_LIMITED_API 0x030A0000); ``depends``: headers it shares, so a change
    rebuilds it and the sdist ships them."""
    return Extension(
        name,
        [name.replace(".", "/") + ".c"],
        depends=list(depends),
        py_limited_api=True,
        extra_compile_args=["-O2"],
        extra_link_args=LINK_ARGS,
        optional=True,
    )


COMMON = ("cute_bind/launch/_cb_common.h",)  # shared by both launchers


def xla_ffi_extension() -> list[Extension]:
    """cute_bind.jax._cxla, the XLA FFI handler: built only where jaxlib's FFI C header is found
    (jaxlib/include/xla/ffi/api/c_api.h, the `jax` extra installed in the build environment); else
    skipped and cute_bind.jax says so at its first lowering (CB901)."""
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("jaxlib")
    except (ImportError, ValueError):
        spec = None
    for root in spec.submodule_search_locations or () if spec is not None else ():
        include = os.path.join(root, "include")
        if os.path.isfile(os.path.join(include, "xla", "ffi", "api", "c_api.h")):
            ext = c_extension("cute_bind.jax._cxla")
            ext.include_dirs.append(include)
            return [ext]
    print("cute_bind: jaxlib's XLA FFI headers not found; cute_bind.jax._cxla not built")
    return []


setup(
    ext_modules=[
        c_extension("cute_bind.launch._claunch", COMMON),
        c_extension("cute_bind.launch._ctvmffi", COMMON),
        c_extension("cute_bind.graph._cgraph"),
        c_extension("cute_bind.torch._ceager"),
        c_extension("cute_bind.jit._cdispatch"),
        *xla_ffi_extension(),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
