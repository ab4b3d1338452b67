"""``cute_bind.compile`` as a drop-in for ``cute.compile``, and the hook that routes every ``cute.compile`` through it.

Host-only ``@cute.jit`` functions compile and run on the CPU, plain and with
``--enable-tvm-ffi`` (TVM-FFI takes CPU tensors for them): every row compares
the cached result's output with the DSL's own compile of the same arguments.
"""

from __future__ import annotations

import os
import threading
import types
import warnings

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()  # (pytest.importorskip would find the DSL's own torch.py once cutlass is imported)
pytest.importorskip("tvm_ffi")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack, make_fake_tensor  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind import dsl  # noqa: E402
from cute_bind.cache import cute_compile  # noqa: E402

KERNELS = """\
import cutlass
import cutlass.cute as cute

OFFSET = 1.0


@cute.jit
def axpy(a: cute.Tensor, n: cutlass.Int32, scale: cutlass.Constexpr = 2.0, *, bias: cutlass.Int32 = 0):
    for i in range(cute.size(a)):
        a[i] = a[i] * scale + n + bias + OFFSET


@cute.jit
def shifted(a: cute.Tensor, n: cutlass.Int32, bias: cutlass.Int32 = 1, flag: cutlass.Boolean = False):
    # a default TVM-FFI's wrapper keeps in its table (1) before one it writes into its code (False)
    for i in range(cute.size(a)):
        a[i] = a[i] + n + bias


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    @cute.jit
    def __call__(self, a: cute.Tensor):
        a[0] = a[0] * self.factor

    @cute.jit
    def run(self, a: cute.Tensor):
        a[0] = a[0] + self.factor
"""


@pytest.fixture
def kernels(tmp_path, monkeypatch, cache_dir):
    """The kernels module, written and imported afresh (the DSL compiles from a source file)."""
    import importlib
    import sys

    root = tmp_path / "mods"
    root.mkdir()
    (root / "cb_compile_kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop("cb_compile_kernels", None)
    importlib.invalidate_caches()
    return importlib.import_module("cb_compile_kernels")


def _outcomes(mark):
    return [e.outcome for e in cute_bind.cache.history(since=mark)]


#: (label, how the result is called) for the plain and TVM-FFI forms
FORMS = [
    ("plain", None, lambda c, t: c(from_dlpack(t), cutlass.Int32(3))),
    ("tvm-ffi", "--enable-tvm-ffi", lambda c, t: c(t, 3)),
    ("tvm-ffi keyword", "--enable-tvm-ffi", lambda c, t: c(t, n=3, bias=1)),
]


@pytest.mark.parametrize("label,options,call", FORMS, ids=[f[0] for f in FORMS])
def test_a_hit_computes_what_the_dsl_compile_computes(kernels, label, options, call):
    arg = from_dlpack(torch.zeros(8))
    kw = {"options": options} if options else {}
    mark = cute_bind.cache.mark()
    cold = cute_bind.compile(kernels.axpy, arg, cutlass.Int32(1), **kw)
    warm = cute_bind.compile(kernels.axpy, arg, cutlass.Int32(1), **kw)
    assert _outcomes(mark) == ["compiled", "hit"]
    assert not isinstance(cold, cute_compile.CachedFunction)  # a miss gives the DSL's own function
    assert isinstance(warm, cute_compile.CachedFunction) and warm.tvm_ffi == bool(options)
    reference = cute.compile(kernels.axpy, arg, cutlass.Int32(1), **kw)  # the DSL alone
    outputs = []
    for fn in (reference, cold, warm):
        t = torch.arange(8, dtype=torch.float32)
        call(fn, t)
        outputs.append(t)
    assert torch.equal(outputs[0], outputs[1]) and torch.equal(outputs[0], outputs[2])


def test_bracket_options_are_the_string_options(kernels):
    arg = from_dlpack(torch.zeros(4))
    mark = cute_bind.cache.mark()
    cute_bind.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    bracket = cute_bind.compile[cutlass.base_dsl.compiler.EnableTVMFFI](kernels.axpy, arg, 1)
    assert _outcomes(mark) == ["compiled", "hit"]
    assert isinstance(bracket, cute_compile.CachedFunction) and bracket.tvm_ffi


@pytest.mark.parametrize("options", ["--opt-level 1", "--opt-level 2", "--enable-tvm-ffi --opt-level 1"])
def test_each_option_set_is_its_own_entry(kernels, options):
    arg = from_dlpack(torch.zeros(4))
    mark = cute_bind.cache.mark()
    cute_bind.compile(kernels.axpy, arg, 1)
    cute_bind.compile(kernels.axpy, arg, 1, options=options)
    cute_bind.compile(kernels.axpy, arg, 1, options=options)
    assert _outcomes(mark) == ["compiled", "compiled", "hit"]


def test_callable_objects_and_bound_methods_key_their_state(kernels):
    arg = from_dlpack(torch.zeros(4))
    mark = cute_bind.cache.mark()
    cute_bind.compile(kernels.Scaler(2.0), arg)
    cute_bind.compile(kernels.Scaler(3.0), arg)
    hit = cute_bind.compile(kernels.Scaler(3.0), arg)
    cute_bind.compile(kernels.Scaler(3.0).run, arg)
    method_hit = cute_bind.compile(kernels.Scaler(3.0).run, arg)
    assert _outcomes(mark) == ["compiled", "compiled", "hit", "compiled", "hit"]
    t = torch.ones(4)
    hit(from_dlpack(t))
    method_hit(from_dlpack(t))
    assert t[0].item() == 6.0  # 1 * 3 + 3


def test_fake_tensor_guards_are_in_the_key(kernels):
    mark = cute_bind.cache.mark()
    for n, div in ((8, 1), (16, 1), (8, 1)):
        cute_bind.compile(kernels.axpy, make_fake_tensor(cutlass.Float32, (n,), stride=(1,)), 1)
    sym = cute.sym_int(divisibility=4)
    cute_bind.compile(kernels.axpy, make_fake_tensor(cutlass.Float32, (sym,), stride=(1,)), 1)
    sym8 = cute.sym_int(divisibility=8)
    cute_bind.compile(kernels.axpy, make_fake_tensor(cutlass.Float32, (sym8,), stride=(1,)), 1)
    cute_bind.compile(kernels.axpy, make_fake_tensor(cutlass.Float32, (cute.sym_int(divisibility=8),), stride=(1,)), 1)
    assert _outcomes(mark) == ["compiled", "compiled", "hit", "compiled", "compiled", "hit"]


@pytest.mark.parametrize("option", ["--keep-ptx", "--dump-dir /tmp/cb_dump_never"])
def test_compiles_that_write_files_are_never_served(kernels, option, recwarn):
    arg = from_dlpack(torch.zeros(4))
    mark = cute_bind.cache.mark()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        first = cute_bind.compile(kernels.axpy, arg, 1, options=option)
        cute_bind.compile(kernels.axpy, arg, 1, options=option)
    assert _outcomes(mark) == ["uncached", "uncached"]
    assert not isinstance(first, cute_compile.CachedFunction)
    assert any("CB608" in str(w.message) for w in recwarn.list)


def test_an_unspellable_argument_is_compiled_not_stored(kernels):
    Opaque = types.SimpleNamespace  # an extension type's object: the key does not read it

    @cute.jit
    def f(a: cute.Tensor, extra: cutlass.Constexpr):
        a[0] = 1.0

    mark = cute_bind.cache.mark()
    with pytest.warns(cute_bind.CacheWarning, match="CB608"):
        compiled = cute_bind.compile(f, from_dlpack(torch.zeros(2)), Opaque())
    assert _outcomes(mark) == ["uncached"]
    t = torch.zeros(2)
    compiled(from_dlpack(t))
    assert t[0].item() == 1.0


def test_dsl_errors_pass_through_unchanged(kernels):
    def not_jit(a):
        return a

    with pytest.raises(Exception) as ours:
        cute_bind.compile(not_jit, 1)
    with pytest.raises(Exception) as theirs:
        cute.compile(not_jit, 1)
    assert type(ours.value) is type(theirs.value)


def test_export_to_c_on_a_hit_compiles_for_the_ir(kernels, tmp_path):
    arg = from_dlpack(torch.zeros(4))
    cute_bind.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    hit = cute_bind.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    assert isinstance(hit, cute_compile.CachedFunction)
    path = tmp_path / "k.o"
    hit.export_to_c(object_file_path=str(path), function_name="func")  # quack's call
    loaded = cute.runtime.load_module(str(path), enable_tvm_ffi=True)["func"]
    t1, t2 = torch.arange(4.0), torch.arange(4.0)
    loaded(t1, 3, 0)  # the bare function: positional only, the default given
    hit(t2, 3)
    assert torch.equal(t1, t2)


def test_prepare_takes_a_hit(kernels):
    arg = from_dlpack(torch.zeros(4))
    cute_bind.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    hit = cute_bind.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    t = torch.zeros(4)
    assert hit.positional((t, 3), {}) == (t, 3, 0)  # the keyword-only default, as the DSL's call fills it
    assert hit.positional((t,), {"n": 3, "bias": 1}) == (t, 3, 1)
    handle = hit.prepare(t, n=3)
    handle.launch(t, 3, 0)
    reference = torch.zeros(4)
    hit(reference, 3)
    assert torch.equal(t, reference)
    same = cute_bind.prepare(hit, t, 3, 0)  # the loaded function, positionally
    same.launch(t, 3, 0)


# ------------------------------------------------------------------ the hook
def test_install_routes_cute_compile_and_uninstall_restores(kernels):
    arg = from_dlpack(torch.zeros(4))
    assert not cute_bind.cache.is_installed()
    with cute_bind.cache.installed():
        assert dsl.hook_installed()
        mark = cute_bind.cache.mark()
        cute.compile(kernels.axpy, arg, 1)
        cute.compile[cutlass.base_dsl.compiler.EnableTVMFFI](kernels.axpy, arg, 1)
        from cutlass.cute import compile as aliased  # a package's own alias

        hit = aliased(kernels.axpy, arg, 1)
        assert _outcomes(mark) == ["compiled", "compiled", "hit"]
        assert isinstance(hit, cute_compile.CachedFunction)
    assert not dsl.hook_installed() and not cute_bind.cache.is_installed()
    mark = cute_bind.cache.mark()
    cute.compile(kernels.axpy, arg, 1)
    assert _outcomes(mark) == []


def test_install_nests_and_counts():
    cute_bind.cache.install()
    cute_bind.cache.install()
    cute_bind.cache.uninstall()
    assert dsl.hook_installed()
    cute_bind.cache.uninstall()
    assert not dsl.hook_installed()
    cute_bind.cache.uninstall()  # one too many: nothing to undo
    assert not dsl.hook_installed()


def test_the_decorator_keeps_its_own_claim(kernels, tmp_path):
    """A @cute_bind.kernel compile under the hook is the decorator's (one entry, no second through the hook)."""
    import ctypes

    @cute_bind.kernel
    @cute.jit
    def fill(out: cute_bind.Pointer[cutlass.Int32], v: cutlass.Int32):
        cute.make_tensor(out, cute.make_layout(1))[0] = v

    buf = (ctypes.c_int32 * 1)()
    with cute_bind.cache.installed():
        mark = cute_bind.cache.mark()
        fill.bind(ctypes.addressof(buf), 1)
        assert [e.kernel for e in cute_bind.cache.history(since=mark)] == ["fill"]


def test_a_package_cache_in_front_keeps_working(kernels, tmp_path):
    """quack's jit_cache: on its miss it calls cute.compile, exports what it gets and loads it next time."""
    store = {}

    def package_compile(n):
        path = tmp_path / f"pkg_{n}.o"
        if path.exists():
            return cute.runtime.load_module(str(path), enable_tvm_ffi=True)["func"]
        fn = cute.compile(kernels.axpy, from_dlpack(torch.zeros(n)), 1, options="--enable-tvm-ffi")
        fn.export_to_c(object_file_path=str(path), function_name="func")
        store[n] = fn
        return fn

    with cute_bind.cache.installed():
        first = package_compile(4)
        (tmp_path / "pkg_4.o").unlink()  # the package's cache is gone, ours is warm
        second = package_compile(4)
        third = package_compile(4)  # the package's own hit
    assert isinstance(second, cute_compile.CachedFunction) and dsl.is_tvm_ffi_function(third)
    outs = []
    for fn, args in ((first, (2,)), (second, (2,)), (third, (2, 0))):  # the bare loaded function: every argument
        t = torch.arange(4.0)
        fn(t, *args)
        outs.append(t)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])


def test_the_hook_is_thread_safe(kernels):
    arg = from_dlpack(torch.zeros(4))
    cute_bind.compile(kernels.axpy, arg, 5)  # stored
    errors, results = [], []

    def worker():
        try:
            for _ in range(3):
                with cute_bind.cache.installed():
                    results.append(cute.compile(kernels.axpy, arg, 5))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 12
    assert not dsl.hook_installed()
    t = torch.zeros(4)
    for fn in results:
        fn(from_dlpack(t), cutlass.Int32(0))
    assert t[0].item() == 0.0 * 2.0**12 + sum(1.0 * 2.0**k for k in range(12))  # each call: a*2 + 0 + 0 + 1


def test_the_setting_installs_at_import(tmp_path):
    import subprocess
    import sys

    from tests.child import child_env

    code = "import cute_bind; from cute_bind import dsl; import cutlass.cute; print(dsl.hook_installed(), cute_bind.cache.is_installed())"
    for value, expected in (("1", "True True"), ("0", "False False"), ("", "False False")):
        out = subprocess.run([sys.executable, "-c", code], env=child_env(CUTE_BIND_COMPILE_HOOK=value), capture_output=True, text=True)
        assert out.stdout.strip() == expected, out.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-c", code], env=child_env(CUTE_BIND_COMPILE_HOOK="maybe"), capture_output=True, text=True)
    assert "CB609" in bad.stderr


# ------------------------------------------------------------------ a package's artifacts (item 3)
def test_adopt_a_package_export_then_compile_hits(kernels, tmp_path):
    """quack's .o cache: the package exported a TVM-FFI compile; adopting it makes cute_bind.compile load it."""
    arg = from_dlpack(torch.zeros(4))
    package = cute.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi")  # the DSL alone, as the package
    path = tmp_path / "pkg.o"
    package.export_to_c(object_file_path=str(path), function_name="func")
    os.chmod(path, 0o600)
    key = cute_bind.cache.adopt(path, kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    assert key is not None and [e.status for e in cute_bind.cache.info()] == ["ok"]
    mark = cute_bind.cache.mark()
    hit = cute_bind.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    assert _outcomes(mark) == ["hit"] and isinstance(hit, cute_compile.CachedFunction)
    ours, theirs = torch.arange(4.0), torch.arange(4.0)
    hit(ours, 3, 0)  # adopted: called positionally, as the package calls its own loaded function
    package(theirs, 3)
    assert torch.equal(ours, theirs)
    handle = cute_bind.prepare(hit, ours, 3, 0)  # and prepared (item 3)
    assert handle is not None


@pytest.mark.parametrize("mode", [0o664, 0o666])
def test_adopt_refuses_a_file_others_can_write(kernels, tmp_path, mode):
    arg = from_dlpack(torch.zeros(4))
    path = tmp_path / "pkg.o"
    cute.compile(kernels.axpy, arg, 1, options="--enable-tvm-ffi").export_to_c(object_file_path=str(path), function_name="func")
    os.chmod(path, mode)
    with pytest.raises(cute_bind.cache.UntrustedPath, match="writable"):
        cute_bind.cache.adopt(path, kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    assert cute_bind.cache.info() == []


def test_adopt_refuses_a_link_and_a_file_the_loader_refuses(kernels, tmp_path):
    arg = from_dlpack(torch.zeros(4))
    target = tmp_path / "real.o"
    target.write_bytes(b"not an object file")
    os.chmod(target, 0o600)
    link = tmp_path / "link.o"
    link.symlink_to(target)
    with pytest.raises(OSError):
        cute_bind.cache.adopt(link, kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    with pytest.raises(Exception):
        cute_bind.cache.adopt(target, kernels.axpy, arg, 1, options="--enable-tvm-ffi")
    assert cute_bind.cache.info() == []


def test_prepare_takes_a_plain_hit_with_tensor_parameters(kernels):
    """A loaded function has no IR; the argument types its compile's IR held come from the entry."""
    t = torch.arange(4.0)
    arg = from_dlpack(t)
    cute_bind.compile(kernels.axpy, arg, cutlass.Int32(1))
    hit = cute_bind.compile(kernels.axpy, arg, cutlass.Int32(1))
    assert isinstance(hit, cute_compile.CachedFunction) and hit.argument_types
    handle = cute_bind.prepare(hit, arg, cutlass.Int32(2))
    handle.launch(arg, cutlass.Int32(2))
    reference = torch.arange(4.0)
    cute.compile(kernels.axpy, from_dlpack(reference), cutlass.Int32(1))(from_dlpack(reference), cutlass.Int32(2))
    assert torch.equal(t, reference)
    with pytest.raises(cute_bind.CuteBindError, match="CB307"):
        cute_bind.prepare(hit.function, arg, cutlass.Int32(2))  # the bare loaded function: no types to check against
    # hit.prepare(...) is cute_bind.prepare(hit, ...): before, it prepared hit.function and was CB307
    same = hit.prepare(arg, cutlass.Int32(2))
    same.launch(arg, cutlass.Int32(5))
    cute.compile(kernels.axpy, from_dlpack(reference), cutlass.Int32(1))(from_dlpack(reference), cutlass.Int32(5))
    assert torch.equal(t, reference)
    assert repr(same).startswith("<PreparedLaunch axpy(")  # the user's name, not the loaded symbol's C-interface prefix


@pytest.mark.parametrize("options", [None, "--enable-tvm-ffi"], ids=["plain", "tvm-ffi"])
def test_prepare_chained_on_the_compile(kernels, options):
    """``cute_bind.compile(...).prepare(...)`` in one expression, on a miss (the DSL's own function,
    whose ``prepare`` held it weakly: ReferenceError) and on a hit."""
    kw = {"options": options} if options else {}
    for _ in range(2):  # the miss, then the hit
        t = torch.arange(4.0)
        arg = from_dlpack(t) if options is None else t
        n = cutlass.Int32(1) if options is None else 1
        handle = cute_bind.compile(kernels.axpy, from_dlpack(torch.zeros(4)), cutlass.Int32(1), **kw).prepare(arg, n)
        handle.launch(arg, n, *(() if options is None else (0,)))  # a TVM-FFI handle takes every argument
        assert t.tolist() == [i * 2.0 + 1 + 1.0 for i in range(4)]


def test_a_hit_keeps_defaults_of_both_kinds(kernels):
    arg = from_dlpack(torch.zeros(4))
    cute_bind.compile(kernels.shifted, arg, 1, options="--enable-tvm-ffi")
    mark = cute_bind.cache.mark()
    hit = cute_bind.compile(kernels.shifted, arg, 1, options="--enable-tvm-ffi")
    assert _outcomes(mark) == ["hit"] and isinstance(hit, cute_compile.CachedFunction)
    ours, theirs = torch.zeros(4), torch.zeros(4)
    hit(ours, 3)
    cute.compile(kernels.shifted, arg, 1, options="--enable-tvm-ffi")(theirs, 3)
    assert torch.equal(ours, theirs) and ours[0].item() == 4.0
    assert hit.positional((ours, 3), {}) == (ours, 3, 1, False)
