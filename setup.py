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


def local_headers(source: str) -> list[str]:
    """Every header ``source`` includes with ``#include "..."`` (its own folder's or a sibling package's),
    and theirs, as paths from the repository root: what a change of must rebuild the extension."""
    import os
    import re

    found: list[str] = []
    todo = [source]
    while todo:
        path = todo.pop()
        with open(path, encoding="utf-8") as f:
            names = re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), flags=re.M)
        for name in names:
            header = os.path.normpath(os.path.join(os.path.dirname(path), name))
            if os.path.isfile(header) and header not in found:  # a system or jaxlib header is not ours
                found.append(header)
                todo.append(header)
    return sorted(found)


def c_extension(name: str) -> Extension:
    """One optional C fast path: ``cute_bind/<package>/<module>.c`` (which may include files of its own,
    ``<module>_<part>.c``, as one translation unit), built for the stable ABI (its source defines
    Py_LIMITED_API 0x030A0000); its ``depends`` are the files its ``#include "..."`` lines name
    (:func:`local_headers`), so a change of any of them rebuilds every extension that uses it and the
    sdist ships them. Symbols are hidden: only the module's PyInit is exported."""
    source = name.replace(".", "/") + ".c"
    return Extension(
        name,
        [source],
        depends=local_headers(source),
        py_limited_api=True,
        extra_compile_args=["-O2", "-fvisibility=hidden"],
        extra_link_args=LINK_ARGS,
        optional=True,
    )


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
        c_extension("cute_bind.launch._claunch"),
        c_extension("cute_bind.launch._ctvmffi"),
        c_extension("cute_bind.graph._cgraph"),
        c_extension("cute_bind.torch._ceager"),
        c_extension("cute_bind.jit._cdispatch"),
        *xla_ffi_extension(),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
