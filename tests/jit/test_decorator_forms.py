"""Every decorator form compiles the function exactly as a plain ``@cute.jit`` does.

The DSL rewrites a function's Python control flow by re-reading its source, so
the forms are spelled in source files: each form becomes one module written to
a temporary folder and imported, holding one function per body. Every
(form, body) pair is bound and launched (and called) on the CPU, and the bytes
it writes are compared with the same body under a plain ``@cute.jit``. The
device-kernel body is compiled only (``CUTE_DSL_ARCH=sm_90a``), in a
subprocess so the target setting stays out of this process.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import cute_bind

ROOT = Path(__file__).resolve().parents[2]

HEADER = """\
import cutlass
import cutlass.cute as cute
import cute_bind
import cute_bind as cb
from cute_bind import kernel

I32 = cute_bind.Pointer[cutlass.Int32]


@cute.jit
def fill_helper(t: cute.Tensor, n: cutlass.Int32):
    for k in range(n):
        t[k] = 5 * k - n
"""

#: body name -> (extra parameters, body); every function takes (out: I32, n: Int32, ...)
BODIES: dict[str, tuple[str, str]] = {
    "straight": (
        "",
        """
        t = cute.make_tensor(out, cute.make_layout(8))
        t[0] = n * 3 + 1
        t[1] = n - 7
        """,
    ),
    "for": (
        "",
        """
        t = cute.make_tensor(out, cute.make_layout(8))
        for k in range(n):
            t[k] = k * k + n
        """,
    ),
    "if_else": (
        "",
        """
        t = cute.make_tensor(out, cute.make_layout(8))
        if n > 3:
            t[0] = n * 2
        else:
            t[0] = n - 100
        t[1] = n
        """,
    ),
    "while": (
        "",
        """
        t = cute.make_tensor(out, cute.make_layout(8))
        k = cutlass.Int32(0)
        acc = cutlass.Int32(1)
        while k < n:
            acc = acc * 2 + k
            k = k + 1
        t[0] = acc
        """,
    ),
    "helper": (
        "",
        """
        t = cute.make_tensor(out, cute.make_layout(8))
        fill_helper(t, n)
        """,
    ),
    "constexpr": (
        ", mode: cutlass.Constexpr[int]",
        """
        t = cute.make_tensor(out, cute.make_layout(8))
        if mode == 1:
            t[0] = n + 10
        else:
            for k in range(mode):
                t[k] = n * k
        """,
    ),
}

#: form name -> how the source spells it: decorator lines above `def`, or a
#: call applied after it ("call:" prefix, NAME is the function's name).
FORMS: dict[str, str] = {
    "bare": "@cute_bind.kernel",
    "options": "@cute_bind.kernel(checked=True)",
    "over_jit": "@cute_bind.kernel\n@cute.jit",
    "over_jit_call": "@cute_bind.kernel\n@cute.jit()",
    "options_over_jit": "@cute_bind.kernel(checked=True)\n@cute.jit",
    "options_over_jit_options": "@cute_bind.kernel(name='renamed')\n@cute.jit(preprocess=True)",
    "alias": "@cb.kernel",
    "alias_options": "@cb.kernel(checked=True)",
    "alias_over_jit": "@cb.kernel\n@cute.jit",
    "from_import": "@kernel",
    "from_import_options": "@kernel(checked=True)",
    "from_import_over_jit": "@kernel\n@cute.jit",
    "call_plain": "call:NAME = cute_bind.kernel(NAME)",
    "call_jitted": "@cute.jit\ncall:NAME = cute_bind.kernel(NAME)",
    "call_options": "call:NAME = cute_bind.kernel(checked=True)(NAME)",
}

REFERENCE = "@cute.jit"


def function_source(name: str, form: str, params: str, body: str) -> str:
    lines = form.split("\n")
    above = [line for line in lines if not line.startswith("call:")]
    after = [line[len("call:") :].replace("NAME", name) for line in lines if line.startswith("call:")]
    head = "\n".join(above + [f"def {name}(out: I32, n: cutlass.Int32{params}):"])
    return head + textwrap.indent(textwrap.dedent(body), "    ") + "\n".join(after) + "\n\n"


def module_source(form: str) -> str:
    return HEADER + "\n\n" + "".join(function_source(f"f_{b}", form, p, s) for b, (p, s) in BODIES.items())


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("decorator_forms")
    for i, form in enumerate([REFERENCE, *FORMS.values()]):
        (folder / f"forms_{i}.py").write_text(module_source(form), encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        loaded = {"reference": importlib.import_module("forms_0")}
        for i, name in enumerate(FORMS, start=1):
            loaded[name] = importlib.import_module(f"forms_{i}")
    finally:
        sys.path.remove(str(folder))
    return loaded


N_VALUES = (0, 1, 3, 5, 8)


def _args(body: str) -> list[tuple[Any, ...]]:
    """Runtime n values, and the Constexpr values for the body that takes one."""
    modes = (1, 3) if body == "constexpr" else (None,)
    return [(n,) if m is None else (n, m) for m in modes for n in N_VALUES]


def _reference_bytes(module: Any, body: str, args: tuple[Any, ...]) -> bytes:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    buf = (ctypes.c_int32 * 8)(*([-1] * 8))
    ptr = make_ptr(cutlass.Int32, ctypes.addressof(buf), cute.AddressSpace.generic)
    getattr(module, f"f_{body}")(ptr, *args)
    return bytes(buf)


@pytest.mark.parametrize("body", list(BODIES))
@pytest.mark.parametrize("form", list(FORMS))
def test_form_writes_the_bytes_plain_cute_jit_writes(modules: dict[str, Any], form: str, body: str) -> None:
    k = getattr(modules[form], f"f_{body}")
    assert isinstance(k, cute_bind.Kernel), f"{form}: the module's name is not a cute_bind kernel"
    for args in _args(body):
        expected = _reference_bytes(modules["reference"], body, args)
        buf = (ctypes.c_int32 * 8)(*([-1] * 8))
        handle = k.bind(ctypes.addressof(buf), *args)
        runtime = args[:1]
        ctypes.memset(buf, 0xFF, 32)
        handle.launch(ctypes.addressof(buf), *runtime)
        assert bytes(buf) == expected, f"{form}/{body}{args}: prepared launch"
        ctypes.memset(buf, 0xFF, 32)
        k(ctypes.addressof(buf), *args)
        assert bytes(buf) == expected, f"{form}/{body}{args}: calling the kernel"


def test_reference_bodies_really_branch_and_loop(modules: dict[str, Any]) -> None:
    # the comparison above would be empty if every body wrote the same bytes for every n
    for body in BODIES:
        outputs = {_reference_bytes(modules["reference"], body, a) for a in _args(body)}
        assert len(outputs) > 2, body


DEVICE_SCRIPT = """
import os, sys
os.environ["CUTE_DSL_ARCH"] = "sm_90a"
sys.path.insert(0, {root!r}); sys.path.insert(0, {folder!r})
import importlib
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import make_ptr
import cute_bind
ref = importlib.import_module("device_0")
cute.compile(ref.launch_it, make_ptr(cutlass.Float32, 1 << 20, cute.AddressSpace.gmem, 16), 128)
for i, form in enumerate({forms!r}, start=1):
    k = importlib.import_module(f"device_{{i}}").launch_it
    assert isinstance(k, cute_bind.Kernel), form
    k.compile(1 << 20, 128)
    print("compiled", form)
"""

DEVICE_HEADER = """\
import cutlass
import cutlass.cute as cute
import cute_bind
import cute_bind as cb
from cute_bind import kernel

F32 = cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]


@cute.kernel
def zero_kernel(out: cute.Pointer, n: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(128))
    i = cute.arch.thread_idx()[0]
    if i < n:
        t[i] = cutlass.Float32(0.0)


"""

DEVICE_BODY = """
for k in range(2):
    zero_kernel(out, n).launch(grid=(1, 1, 1), block=(128, 1, 1))
"""


def test_form_compiles_a_device_kernel_launch(tmp_path: Path) -> None:
    """The device-kernel body: compile only (no GPU needed), every form as under @cute.jit."""
    for i, form in enumerate([REFERENCE, *FORMS.values()]):
        src = DEVICE_HEADER + function_source("launch_it", form, "", DEVICE_BODY).replace("out: I32", "out: F32")
        (tmp_path / f"device_{i}.py").write_text(src, encoding="utf-8")
    script = DEVICE_SCRIPT.format(root=str(ROOT), folder=str(tmp_path), forms=list(FORMS))
    env = {k: v for k, v in os.environ.items() if k != "CUTE_BIND_CHECKED"}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("compiled") == len(FORMS)


#: forms that cannot work: (source, code raised when the module is imported)
REFUSED: dict[str, tuple[str, str]] = {
    "jit_over_kernel": ("@cute.jit\n@cute_bind.kernel", "CB116"),
    "jit_call_over_kernel": ("@cute.jit()\n@cute_bind.kernel(checked=True)", "CB116"),
    "kernel_over_device_kernel": ("@cute_bind.kernel\n@cute.kernel", "CB117"),
    "from_import_over_device_kernel": ("@kernel\n@cute.kernel", "CB117"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_form_that_cannot_work_is_a_catalog_error_at_decoration(tmp_path: Path, name: str) -> None:
    form, code = REFUSED[name]
    source = HEADER + "\n\n" + function_source("f", form, "", "\npass\n")
    (tmp_path / f"refused_{name}.py").write_text(source, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(cute_bind.KernelDefinitionError) as info:
            importlib.import_module(f"refused_{name}")
    finally:
        sys.path.remove(str(tmp_path))
    assert info.value.code == code
    # `cute-bind check` and the mypy plugin say the same, before anything is imported
    from cute_bind.static.rules import analyze_source

    (static,) = analyze_source(source).diagnostics()
    assert static.code == code and static.message == str(info.value).splitlines()[0]


FAILING = {
    # body, what the DSL's text must mention
    "name_error": ("t = cute.make_tensor(out, cute.make_layout(8))\nt[0] = n + undefined_name\n", "undefined_name"),
    "type_error": ("t = cute.make_tensor(out, cute.make_layout(8))\nt[0] = n + 'text'\n", "'str'"),
}


@pytest.mark.parametrize("case", list(FAILING))
@pytest.mark.parametrize("form", ["bare", "over_jit", "from_import_options", "call_plain"])
def test_dsl_compile_error_is_cb310_with_the_dsls_text(tmp_path: Path, form: str, case: str) -> None:
    body, mentioned = FAILING[case]
    module = f"failing_{form}_{case}"
    (tmp_path / f"{module}.py").write_text(HEADER + "\n\n" + function_source("f", FORMS[form], "", "\n" + body), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        k = importlib.import_module(module).f
    finally:
        sys.path.remove(str(tmp_path))
    buf = (ctypes.c_int32 * 8)()
    for attempt in (
        lambda: k.bind(ctypes.addressof(buf), 1),
        lambda: k(ctypes.addressof(buf), 1),
        lambda: k.compile(ctypes.addressof(buf), 1),
    ):
        with pytest.raises(cute_bind.KernelCompileError) as info:
            attempt()
        err = info.value
        assert err.code == "CB310" and isinstance(err, RuntimeError)
        assert err.__cause__ is not None and mentioned in str(err.__cause__)
        # the DSL's whole text, colour codes stripped
        assert cute_bind.diagnostics.exception_text(err.__cause__) in str(err) and "\x1b[" not in str(err)


def test_function_without_source_is_cb111(tmp_path: Path) -> None:
    import cutlass
    import cutlass.cute as cute

    namespace = {"cute": cute, "cutlass": cutlass, "cute_bind": cute_bind, "I32": cute_bind.Pointer[cutlass.Int32]}
    exec(function_source("f", "", "", BODIES["for"][1]), namespace)  # no source file
    k = cute_bind.kernel(namespace["f"])
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        k.bind(ctypes.addressof((ctypes.c_int32 * 8)()), 3)
    assert info.value.code == "CB111" and info.value.__cause__ is not None
    assert "source cannot be read" in str(info.value)


OTHERS = (
    HEADER
    + """

def other_decorator(fn):
    return fn


class other:
    kernel = staticmethod(other_decorator)


@other.kernel
@cute.jit
def not_ours(out: I32, n: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(8))
    t[0] = n
"""
)


def test_functions_cute_bind_does_not_jit_keep_the_dsls_own_decorator_rule(tmp_path: Path) -> None:
    """The widened rule applies only to functions cute_bind jits: a plain @cute.jit function under an
    attribute named `kernel` still gets the DSL's own UNSUP_DECORATOR_ORDER, even after cute_bind has
    installed its rule in this process."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    from cute_bind import dsl

    dsl.hooks._install_decorator_hook()
    (tmp_path / "not_ours_mod.py").write_text(OTHERS, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        fn = importlib.import_module("not_ours_mod").not_ours
    finally:
        sys.path.remove(str(tmp_path))
    buf = (ctypes.c_int32 * 8)()
    with pytest.raises(Exception) as info:
        cute.compile(fn, make_ptr(cutlass.Int32, ctypes.addressof(buf), cute.AddressSpace.generic), 1)
    text = cute_bind.diagnostics.exception_text(info.value)
    # 4.6 and later name the rule's code; 4.5 says it in words only
    assert "UNSUP_DECORATOR_ORDER" in text or "decorator must be the inner most decorator" in text, text
    assert not isinstance(info.value, cute_bind.CuteBindError)
