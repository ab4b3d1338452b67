"""The key never calls into a value it does not own (issue 39, row 14).

A client's operator object may hold ``cute.Layout`` values made in an earlier trace: their MLIR context is
gone, and ``repr`` of one segfaults the process. The disk cache's key reads values by their exact type only,
through ``type``'s and ``object``'s own machinery: no ``repr``, ``str``, ``format``, ``==``, ``hash``,
``__getattr__``/``__getattribute__`` or property of a value's class runs. What it cannot spell is
:class:`~cute_bind.cache.key.Uncacheable` (CB608: compiled, not stored), never a crash, never another error
and never a guess.
"""

from __future__ import annotations

import collections
import dataclasses
import decimal
import fractions
import pathlib
import re
import subprocess
import sys
import textwrap
import types
from types import SimpleNamespace

import pytest

from cute_bind.cache import canonical, key as key_module
from cute_bind.cache.key import Uncacheable
from tests.child import child_env

from .conftest import needs_disk_cache

#: every hook of a foreign class that ran, by name (each test starts with it empty)
CALLS: list[str] = []


class Boom(Exception):
    """What a hook raises: a key that lets it out called the hook."""


def _hook(name):
    def hook(self, *args, **kwargs):
        CALLS.append(name)
        raise Boom(name)

    hook.__name__ = name
    return hook


_HOOKS = ("__repr__", "__str__", "__format__", "__eq__", "__ne__", "__hash__", "__bool__", "__len__", "__iter__", "__getattr__")


class Loud:
    """Every method a careless key could call records the call and raises (a dead layout would crash instead)."""

    locals().update({name: _hook(name) for name in _HOOKS})


class LoudCallable(Loud):
    """Callable, so that a key asking ``hasattr(v, "__wrapped__")`` reaches its ``__getattr__``."""

    __call__ = _hook("__call__")


class Spying:
    """Every attribute read runs its class's code, ``__class__`` included (as ``isinstance`` reads it)."""

    def __getattribute__(self, name):
        CALLS.append(f"__getattribute__({name})")
        raise Boom(name)


class LoudMeta(type):
    """A metaclass whose ``==`` records and raises: ``t in (int, float)`` would call it (reflected first)."""

    __eq__ = _hook("metaclass.__eq__")
    __hash__ = type.__hash__


class OfLoudMeta(metaclass=LoudMeta):
    pass


@dataclasses.dataclass(frozen=True)
class Config:
    tile: int
    extra: object = None


@dataclasses.dataclass(frozen=True)
class SpyingConfig:
    tile: int

    def __getattribute__(self, name):
        CALLS.append(f"__getattribute__({name})")
        return object.__getattribute__(self, name)


@dataclasses.dataclass
class PropertyField:
    tile: int = 0


PropertyField.tile = property(_hook("tile-property"))  # a field read through a property runs code


class LoudPair(collections.namedtuple("LoudPair", "a b")):
    __iter__ = _hook("__iter__")
    __getitem__ = _hook("__getitem__")
    __len__ = _hook("__len__")
    __repr__ = _hook("__repr__")


class LazyModule(types.ModuleType):
    """A module whose attribute reads run code (as importlib.util.LazyLoader's)."""

    def __getattribute__(self, name):
        CALLS.append(f"module.__getattribute__({name})")
        raise Boom(name)


@pytest.fixture(autouse=True)
def _fresh_calls():
    CALLS.clear()
    yield
    CALLS.clear()


# (row, value): refused (Uncacheable), no hook called
REFUSED = [
    ("an object with every hook", lambda: Loud()),
    ("a callable object with __getattr__", lambda: LoudCallable()),
    ("an object whose metaclass defines ==", lambda: OfLoudMeta()),
    ("an object whose __getattribute__ runs code", lambda: Spying()),
    ("inside a list", lambda: [1, Loud()]),
    ("inside a tuple", lambda: (1, Spying())),
    ("a dict value", lambda: {"layout": Loud()}),
    ("a dataclass field", lambda: Config(128, Loud())),
    ("a dataclass whose __getattribute__ runs code", lambda: SpyingConfig(128)),
    ("a dataclass field read through a property", lambda: object.__new__(PropertyField)),
    ("a Constexpr value of the compile key", lambda: _exact((1, Loud()))),
]


def _exact(value):
    """An Exact as the compile key holds it (made without its own hash: the in-process key's business)."""
    e = key_module.Exact.__new__(key_module.Exact)
    e.value = value
    return e


@pytest.mark.parametrize("row, make", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_foreign_object_is_refused_without_calling_it(row, make):
    value = make()
    with pytest.raises(Uncacheable):
        canonical(value)
    assert CALLS == [], row
    # a kernel that vouches with cache_key= has such values spelled by their class, still without a call
    assert "opaque:" in key_module._Hasher(lenient=True).canon(value), row
    assert CALLS == [], row


def test_a_named_tuple_is_read_by_tuple_s_own_methods():
    a, b = LoudPair(1, 2), LoudPair(1, 3)
    assert canonical(a) != canonical(b)
    assert canonical(a) == canonical(LoudPair(1, 2))
    assert CALLS == []


def test_a_module_whose_attribute_reads_run_code_is_refused():
    lazy = LazyModule("lazy_thing")
    h = key_module._Hasher()
    with pytest.raises(Uncacheable, match="lazy"):
        h.named("lazy", lazy, {"x"})
    assert CALLS == []


def test_a_callable_kernel_object_is_read_without_its_code():
    """The kernel object itself: no ``__wrapped__``/``__dict__``/``__code__`` read through its hooks, no repr."""

    class Operator(Spying):
        def __call__(self, x):
            return x

    kernel = SimpleNamespace(name="op", fn=Operator(), cache_key=None)
    with pytest.raises(Uncacheable, match="Operator"):
        key_module.entry_key(kernel, ("ck",))
    assert CALLS == []


def test_any_failure_while_spelling_is_uncacheable(modules):
    """A class whose source file no longer parses (SyntaxError from inspect) and a chain of helpers deeper
    than the recursion limit: CB608's Uncacheable, not an exception out of bind()."""
    mod = modules.load(
        "cb_broken_source",
        """
        import cutlass
        import cutlass.cute as cute
        import cute_bind


        class Tiles:
            N = 4


        @cute_bind.kernel
        @cute.jit
        def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
            t = cute.make_tensor(out, cute.make_layout(1))
            t[0] = value + Tiles.N
        """,
    )
    (modules.root / "cb_broken_source.py").write_text("class Tiles:\n    N = (4\n")  # edited into a syntax error
    compile_key = mod.k._bind_values((0x1000, 5), {})[0]
    with pytest.raises(Uncacheable, match="SyntaxError"):
        key_module.entry_key(mod.k, compile_key)

    namespace: dict[str, object] = {}
    # deeper than the recursion limit as it stands (an earlier test or library may have raised it)
    depth = max(600, sys.getrecursionlimit())
    source = "def f0(x):\n    return x\n" + "".join(f"def f{i}(x):\n    return f{i - 1}(x)\n" for i in range(1, depth))
    exec(source, namespace)
    deep = SimpleNamespace(name="deep", fn=namespace[f"f{depth - 1}"], cache_key=None)
    with pytest.raises(Uncacheable, match="nest too deeply"):
        key_module.entry_key(deep, ("ck",))


def test_an_int_past_the_decimal_digit_limit_is_spelled():
    """``repr`` of an int of more than sys.get_int_max_str_digits() digits raises ValueError: hexadecimal then."""
    big = 10**5000
    assert canonical(big) != canonical(big + 1)
    assert canonical(big) == canonical(10**5000)
    assert canonical(7) == "int:7"  # small ints keep their spelling
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        assert canonical(10**700) != canonical(10**700 + 1)
    finally:
        sys.set_int_max_str_digits(old)


# (row, a, b, equal): values of a few standard library types, spelled exactly
KNOWN = [
    ("range", range(0, 8, 2), range(0, 8, 2), True),
    ("range step", range(0, 8, 2), range(0, 8, 4), False),
    ("slice", slice(1, 4), slice(1, 4), True),
    ("slice of floats by bits", slice(0.0, 1), slice(-0.0, 1), False),
    ("Decimal", decimal.Decimal("1.10"), decimal.Decimal("1.10"), True),
    ("Decimal trailing zero", decimal.Decimal("1.10"), decimal.Decimal("1.1"), False),
    ("Fraction", fractions.Fraction(1, 3), fractions.Fraction(2, 6), True),
    ("Fraction other", fractions.Fraction(1, 3), fractions.Fraction(1, 4), False),
    ("path", pathlib.PurePosixPath("/a/b"), pathlib.PurePosixPath("/a/b"), True),
    ("path other", pathlib.PurePosixPath("/a/b"), pathlib.PurePosixPath("/a/c"), False),
    ("pattern", re.compile("ab+"), re.compile("ab+"), True),
    ("pattern flags", re.compile("ab+"), re.compile("ab+", re.I), False),
    # repr elides a pattern past 200 characters: two patterns differing at the end had one spelling
    ("long patterns differing at the end", re.compile("a" * 300 + "b"), re.compile("a" * 300 + "c"), False),
    ("Ellipsis", ..., ..., True),
]


@pytest.mark.parametrize("row, a, b, equal", KNOWN, ids=[r[0] for r in KNOWN])
def test_standard_library_values_are_spelled_exactly(row, a, b, equal):
    assert (canonical(a) == canonical(b)) == equal, row


def test_dsl_numbers_made_in_python_are_spelled_by_value():
    import cutlass

    assert canonical(cutlass.Int32(3)) == canonical(cutlass.Int32(3))
    assert canonical(cutlass.Int32(3)) != canonical(cutlass.Int32(4))
    assert canonical(cutlass.Int32(3)) != canonical(cutlass.Int64(3))
    assert canonical(cutlass.Float32(-0.0)) != canonical(cutlass.Float32(0.0))


# ------------------------------------------------------------------ real layouts of a finished trace
GEMM = """\
import cutlass
import cutlass.cute as cute
import cute_bind

ESCAPED = []


@cute.jit
def _trace():
    ESCAPED.append(cute.make_layout((4, 8), stride=(8, 1)))  # kept past its trace: its MLIR context is gone


cute.compile(_trace)
LAYOUT = ESCAPED[0]


class Gemm:
    \"\"\"A client's operator object: layouts of an earlier trace, a scale, and a jitted __call__.\"\"\"

    def __init__(self, scale):
        self.a_layout = LAYOUT
        self.layouts = {"b": LAYOUT}
        self.scale = scale

    @cute.jit
    def __call__(self, out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = value * self.scale
"""

CHILD = """\
import ctypes
import dataclasses
import warnings

import cute_bind
from cute_bind.cache import canonical
from cute_bind.cache.key import Uncacheable

import cb_gemm

# the layout itself, and inside a container and a dataclass: refused, never repr'd (repr segfaults)
@dataclasses.dataclass
class Holder:
    layout: object

for value in (cb_gemm.LAYOUT, [cb_gemm.LAYOUT], {"l": cb_gemm.LAYOUT}, Holder(cb_gemm.LAYOUT)):
    try:
        canonical(value)
    except Uncacheable as exc:
        assert "_Layout" in str(exc), exc
    else:
        raise AssertionError("a layout was spelled")


def bind(kernel):
    buf = (ctypes.c_int32 * 1)()
    before = cute_bind.cache.mark()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", cute_bind.CacheWarning)
        kernel.bind(ctypes.addressof(buf), 5).launch(ctypes.addressof(buf), 5)
    codes = [w.message.code for w in record if isinstance(w.message, cute_bind.CacheWarning)]
    return buf[0], [e.outcome for e in cute_bind.cache.history(since=before)], codes, record


# the operator object as a kernel, the disk cache on: CB608, compiled and launched, not stored
gemm = cute_bind.kernel(cb_gemm.Gemm(3))
value, outcomes, codes, record = bind(gemm)
assert (value, outcomes, codes) == (15, ["uncached"], ["CB608"]), (value, outcomes, codes)
assert "self.a_layout" in str(record[0].message), record[0].message
gemm.clear_cache()
assert bind(gemm)[:2] == (15, ["uncached"])  # works again; warned once
assert cute_bind.cache.info() == []  # nothing stored under a guess

# vouched for with cache_key=: stored, then loaded
vouched = cute_bind.kernel(cache_key="gemm-v1")(cb_gemm.Gemm(3))
assert bind(vouched)[:3] == (15, ["compiled"], [])
vouched.clear_cache()
assert bind(vouched)[:3] == (15, ["hit"], [])
print("OK")
"""


@needs_disk_cache
def test_a_kernel_object_holding_layouts_of_a_finished_trace_is_not_cached(cache_dir, tmp_path):
    """Row 14 as a client hit it, with real ``cute.Layout`` values (in a child: the bug was a segfault)."""
    src = tmp_path / "gemm"
    src.mkdir()
    (src / "cb_gemm.py").write_text(GEMM)
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD)],
        env=child_env(src, PYTHONFAULTHANDLER="1"),
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
