"""The key's spelling of values: stable, type-aware, injective on plain data; and a failed compile releases its lock."""

from __future__ import annotations

import array
import ctypes
import enum
import threading
import fcntl
import os
import struct
import subprocess
import sys
import tempfile
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import cute_bind
from cute_bind.cache import canonical, key as key_module
from cute_bind.cache.settings import parse_size
from tests.optional import torch_or_skip


def _f64(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


#: NaNs of several payloads and signs (hypothesis draws NaN only as float("nan"))
nans = st.sampled_from([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001, 0x7FF0000000000001]).map(_f64)
floats = st.floats() | nans | st.sampled_from([0.0, -0.0])
plain = st.recursive(
    st.none() | st.booleans() | st.integers() | floats | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        | st.frozensets(st.integers(), max_size=4)
    ),
    max_leaves=12,
)


def _same(a, b):
    """Equal with the same types all the way down (what a compile could tell apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)  # 0.0 and -0.0 differ, a NaN is its payload
    if isinstance(a, frozenset):  # (plain draws frozensets of ints only)
        return a == b
    return a == b


@given(plain, plain)
def test_canonical_is_injective_on_plain_data(a, b):
    assert (canonical(a) == canonical(b)) == _same(a, b)


@given(plain)
def test_canonical_is_stable(a):
    import copy

    assert canonical(a) == canonical(copy.deepcopy(a))


class Color(enum.Enum):
    RED = 1


@dataclass(frozen=True)
class Tile:
    m: int
    n: int


class Opaque:
    pass


@pytest.mark.parametrize(
    "a, b, equal",
    [
        (1, 1.0, False),
        (1, True, False),
        ((1, 2), [1, 2], False),
        (Color.RED, 1, False),
        (Tile(64, 128), Tile(64, 128), True),
        (Tile(64, 128), Tile(128, 64), False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        (int, float, False),
    ],
)
def test_canonical_table(a, b, equal):
    assert (canonical(a) == canonical(b)) == equal


def test_special_stream_handles_are_spelled_and_others_refused():
    """A stream default (CUTLASS's sgemm: ``stream = cuda.CUstream(CU_STREAM_DEFAULT)``) made every compile
    of the function uncacheable (CB608); the special handles mean the same in every process."""
    import cuda.bindings.driver as cuda

    spelled = [canonical(cuda.CUstream(h)) for h in (0, 1, 2)]
    assert len(set(spelled)) == 3 and spelled[0] == canonical(cuda.CUstream(0)) and spelled[0] != canonical(0)
    with pytest.raises(key_module.Uncacheable, match="CUstream"):
        canonical(cuda.CUstream(0x7F0000001000))  # a stream of this process


class Plan:
    """A plain object (quack's Hadamard operator holds one): spelled by its class and attributes."""

    vec = 4

    def __init__(self, n, tail=None):
        self.n, self.tail = n, tail


class SlottedPlan:
    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n


class Computed:
    def __getattr__(self, name):  # attributes made by code when read: not spelled
        return 1


class ListPlan(list):  # a builtin's subclass: its items are no attribute
    pass


def test_plain_objects_are_spelled_by_class_and_attributes():
    assert canonical(Plan(8)) == canonical(Plan(8)) and canonical(Plan(8)) != canonical(Plan(16))
    assert canonical(Plan(8, Plan(2))) != canonical(Plan(8, Plan(3)))  # nested plain objects too
    assert canonical(Opaque()) != canonical(Plan(8)) and canonical(SlottedPlan(3)) != canonical(SlottedPlan(4))
    before = canonical(Plan(8))
    Plan.vec = 8  # a class attribute set by the process, not in the class's source
    try:
        assert canonical(Plan(8)) != before
    finally:
        Plan.vec = 4
    assert canonical(Plan(8)) == before


def test_object_graphs_are_spelled_once_and_cycles_refused_at_once(monkeypatch):
    """A plan shared by many holders is spelled once; a parent <-> child cycle is refused without
    walking it to the depth limit (ten children, each naming the parent: 10**12 paths otherwise)."""
    read: list[object] = []
    state = key_module._state
    monkeypatch.setattr(key_module, "_state", lambda obj, cls: read.append(obj) or state(obj, cls))
    shared = Plan(1)
    holders = Plan([Plan(shared) for _ in range(50)])
    spelled = canonical(holders)
    assert spelled.count("int:1") == 50 and len(read) == 52 and read.count(shared) == 1
    parent = Plan(None)
    parent.tail = [Plan(parent) for _ in range(10)]
    with pytest.raises(key_module.Uncacheable, match="refers back to itself"):
        canonical(parent)
    assert "opaque:" in key_module._Hasher(lenient=True).canon(parent)


@pytest.mark.parametrize(
    "value, named",
    [
        (object(), "object"),  # a sentinel: its identity is all it has
        (Computed(), "Computed"),
        (ListPlan([1]), "ListPlan"),
        (Plan(threading.Lock()), "lock"),  # an attribute the key cannot spell
        (Plan(8, Computed()), "Computed"),
    ],
)
def test_objects_whose_state_no_attribute_shows_are_refused(value, named):
    with pytest.raises(key_module.Uncacheable, match=named):
        canonical(value)


@given(st.integers(0, 10**6), st.sampled_from([("", 1), ("K", 1024), ("M", 1 << 20), ("G", 1 << 30), ("kb", 1024), ("MiB", 1 << 20)]))
def test_parse_size(n, unit):
    suffix, factor = unit
    assert parse_size(f"{n}{suffix}") == n * factor


def test_a_failed_compile_releases_the_key_lock(cache_dir, modules):
    mod = modules.load(
        "cb_broken",
        """\
        import cutlass
        import cutlass.cute as cute
        import cute_bind


        @cute_bind.kernel
        @cute.jit
        def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
            t = cute.make_tensor(out, cute.make_layout(1))
            t[0] = value + undefined_name  # noqa: F821 - fails while tracing
        """,
    )
    buf = (ctypes.c_int32 * 1)()
    with pytest.raises(Exception):
        mod.k.bind(ctypes.addressof(buf), 1)
    locks = list((cache_dir / "v1" / "locks").iterdir())
    assert len(locks) == 1
    fd = os.open(locks[0], os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the failed compile still held it
    finally:
        os.close(fd)
    assert cute_bind.cache.info() == []


# ------------------------------------------------------------------ floats by their bits (issue 22, rows 5 and 6)
NAN = _f64(0x7FF8000000000000)
NAN_OTHER = _f64(0x7FF8000000000001)  # another payload
NAN_NEG = _f64(0xFFF8000000000000)


@dataclass(frozen=True)
class Scale:
    x: float
    y: float = 1.0


Pair = namedtuple("Pair", "a b")


def _numpy():
    return pytest.importorskip("numpy")


FLOAT_ROWS = [
    # (a, b, same value for a compile)
    (0.0, -0.0, False),
    (float("nan"), float("nan"), True),  # two NaN objects of one payload
    (NAN, NAN_OTHER, False),
    (NAN, NAN_NEG, False),
    (1.5, 1.5, True),
    (complex(0.0, 1.0), complex(-0.0, 1.0), False),
    (complex(1.0, NAN), complex(1.0, float("nan")), True),
    (complex(NAN, 0.0), complex(NAN_OTHER, 0.0), False),
    ((0.0, 1), (-0.0, 1), False),
    ((float("nan"), 2), (float("nan"), 2), True),
    ((1, 2), (True, 2), False),  # equal by ==, not for a trace
    ((1, 2), (1.0, 2), False),
    (frozenset({0.0}), frozenset({-0.0}), False),
    (Scale(0.0), Scale(-0.0), False),
    (Scale(float("nan")), Scale(float("nan")), True),
    (Pair(0.0, 1), Pair(-0.0, 1), False),
    (Pair(NAN, 1), Pair(NAN_OTHER, 1), False),  # (a repr says nan for both)
    (Pair(1, 2), (1, 2), False),
]


@pytest.mark.parametrize("a, b, same", FLOAT_ROWS, ids=[f"{a!r}-vs-{b!r}" for a, b, _ in FLOAT_ROWS])
def test_floats_are_keyed_by_their_bits(a, b, same):
    """On disk (``canonical``) and in the process (``constexpr_key``, what a compile key holds)."""
    assert (canonical(a) == canonical(b)) == same
    ka, kb = key_module.constexpr_key(a), key_module.constexpr_key(b)
    assert (ka == kb) == same and (ka != kb) != same
    if same:
        assert hash(ka) == hash(kb)
    # the call path compares ``compiled != given``: the given value, bare
    assert (ka != b) != same and (kb != a) != same


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_numpy_float_scalars_are_keyed_by_their_bits(dtype):
    np = _numpy()
    t = getattr(np, dtype)
    zero, neg = t(0.0), t(-0.0)
    assert zero == neg  # what == sees
    assert canonical(zero) != canonical(neg)
    assert key_module.constexpr_key(zero) != key_module.constexpr_key(neg)
    nan = t(float("nan"))
    assert canonical(nan) == canonical(t(float("nan")))
    assert key_module.constexpr_key(nan) == key_module.constexpr_key(t(float("nan")))
    other = (
        t(NAN_OTHER)
        if dtype == "float64"
        else np.array([0x7E01 if dtype == "float16" else 0x7FC00001], dtype=f"uint{np.dtype(t).itemsize * 8}").view(t)[0]
    )
    assert repr(nan) == repr(other)  # a NaN of another payload: repr cannot tell
    assert canonical(nan) != canonical(other)
    assert key_module.constexpr_key(nan) != key_module.constexpr_key(other)
    assert canonical(t(1.0)) != canonical(np.float64(1.0) if dtype != "float64" else np.float32(1.0))


@given(plain, plain)
def test_exact_forms_are_injective_and_reflexive(a, b):
    """Two values share a form exactly when a compile could not tell them apart; a value always equals itself."""
    a, b = _freeze(a), _freeze(b)
    fa, fb = key_module.exact_form(a), key_module.exact_form(b)
    assert (fa == fb) == _same(a, b)
    assert fa == key_module.exact_form(a)  # NaN included
    ka = key_module.constexpr_key(a)
    assert ka == key_module.constexpr_key(a) and not (ka != a)
    assert (ka == key_module.constexpr_key(b)) == _same(a, b)


def _freeze(v):
    """plain's lists and dicts as tuples (a Constexpr value is hashable)."""
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple((k, _freeze(x)) for k, x in sorted(v.items()))
    if isinstance(v, tuple):
        return tuple(_freeze(x) for x in v)
    return v


@pytest.mark.parametrize("value", [3, "s", b"b", True, None, 1.5, Color.RED])
def test_common_constexpr_values_stay_bare(value):
    """The call path checks these with one C-level ``!=``, as before: no wrapper on the hit path."""
    assert key_module.constexpr_key(value) is value


@pytest.mark.parametrize("value", [0.0, -0.0, float("nan"), (1, 2), Scale(1.0), complex(1, 2)])
def test_other_constexpr_values_are_wrapped_and_unwrap(value):
    k = key_module.constexpr_key(value)
    assert isinstance(k, key_module.Exact)
    assert key_module.constexpr_value(k) is value and repr(k) == repr(value)


# ------------------------------------------------------------------ arrays by their bytes (issue 22, row 4)
def test_a_2000_element_array_edited_by_1e_9_in_one_element_is_another_key():
    np = _numpy()
    a = np.linspace(0.0, 1.0, 2000)
    b = a.copy()
    b[1234] += 1e-9
    assert repr(a) == repr(b)  # what the key used to read: rounded and elided
    assert canonical(a) != canonical(b)
    assert canonical(a) == canonical(a.copy())


def _array_rows():
    np = pytest.importorskip("numpy")
    a = np.arange(12, dtype=np.float32)
    return [
        ("dtype", a, a.astype(np.int32)),
        ("byte order", a, a.astype(">f4")),
        ("shape", a.reshape(3, 4), a.reshape(4, 3)),
        ("shape alone", np.zeros((2, 3)), np.lib.stride_tricks.as_strided(np.zeros(9), shape=(3, 2), strides=(24, 8))),
        ("order", a.reshape(3, 4), np.asfortranarray(a.reshape(3, 4))),
        ("negative zero", np.zeros(3), -np.zeros(3)),
        ("nan payload", np.array([NAN]), np.array([NAN_OTHER])),
        ("structured field names", np.zeros(2, dtype=[("x", "<f4")]), np.zeros(2, dtype=[("y", "<f4")])),
        ("object elements", np.array([1, "a"], dtype=object), np.array([1, "b"], dtype=object)),
        ("a masked array's mask", np.ma.masked_array([1, 2], mask=[0, 1]), np.ma.masked_array([1, 2], mask=[0, 0])),
        ("memoryview", memoryview(b"abc"), memoryview(b"abd")),
        ("bytearray", bytearray(b"abc"), bytearray(b"abd")),
        ("array.array", array.array("d", [0.0]), array.array("d", [-0.0])),
        ("array.array nan payload", array.array("d", [NAN]), array.array("d", [NAN_OTHER])),
    ]


def test_arrays_differ_by_bytes_dtype_shape_and_layout():
    for name, a, b in _array_rows():
        assert canonical(a) != canonical(b), name
        assert canonical(a) == canonical(a), name


def test_cpu_torch_tensors_are_keyed_by_bytes_and_others_are_refused():
    torch = torch_or_skip()  # the real torch (4.5-4.7 put a torch.py of the DSL on sys.path)
    a = torch.linspace(0, 1, 2000, dtype=torch.float64)
    b = a.clone()
    b[1234] += 1e-9
    assert canonical(a) != canonical(b) and canonical(a) == canonical(a.clone())
    assert canonical(a.float()) != canonical(a)
    assert canonical(torch.zeros(2, dtype=torch.bfloat16)) != canonical(-torch.zeros(2, dtype=torch.bfloat16))
    assert canonical(a.reshape(40, 50)) != canonical(a.reshape(50, 40))
    meta = torch.zeros(3, device="meta")
    with pytest.raises(key_module.Uncacheable, match="meta"):
        canonical(meta)
    assert key_module._Hasher(lenient=True).canon(meta).startswith("opaque:")  # cache_key= vouches for it


def test_a_released_memoryview_is_refused():
    m = memoryview(b"abc")
    m.release()
    with pytest.raises(key_module.Uncacheable, match="released"):
        canonical(m)


def test_spelling_plain_values_does_not_import_numpy():
    code = (
        "import sys, array\n"
        "from cute_bind.cache import canonical\n"
        "canonical([1.0, -0.0, (2, 'a'), bytearray(b'x'), memoryview(b'y'), array.array('i', [1]), {'k': 1j}])\n"
        "print('numpy' in sys.modules, 'torch' in sys.modules)\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------ cute_bind's sources (issue 22, row 12)
def test_the_sources_hash_keeps_nothing_in_the_temporary_folder(tmp_path, monkeypatch):
    """No file in the shared temporary folder is read or written when the key is made."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    touched: list[str] = []
    watching = [True]

    def hook(event, args):
        if (
            watching[0]
            and event in ("open", "os.rename", "os.replace", "os.remove")
            and args
            and isinstance(args[0], (str, bytes, os.PathLike))
        ):
            path = os.fsdecode(args[0])
            if path.startswith(str(shared)) or path.startswith(tempfile.gettempdir()):
                touched.append(f"{event} {path}")

    sys.addaudithook(hook)  # (audit hooks cannot be removed: it stops watching at the end)
    try:
        digest = key_module._cute_bind_sources.__wrapped__()
        key_module.environment()
    finally:
        watching[0] = False
    assert touched == [] and list(shared.iterdir()) == []
    assert digest.split("+")[1] == key_module._sources_digest(str(Path(key_module.__file__).resolve().parents[1]))


def test_the_sources_hash_reads_contents_not_stamps(tmp_path):
    """An edit that keeps a file's size and modification time is another compiler (a stamp would miss it)."""
    (tmp_path / "pkg").mkdir()
    f = tmp_path / "pkg" / "a.py"
    f.write_text("X = 1\n")
    (tmp_path / "b.txt").write_text("not a source")
    st = f.stat()
    before = key_module._sources_digest(str(tmp_path))
    f.write_text("X = 2\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert key_module._sources_digest(str(tmp_path)) != before
    f.write_text("X = 1\n")
    assert key_module._sources_digest(str(tmp_path)) == before
    (tmp_path / "b.txt").write_text("still not a source")
    assert key_module._sources_digest(str(tmp_path)) == before
    os.rename(f, tmp_path / "pkg" / "c.py")  # a renamed module is another program
    assert key_module._sources_digest(str(tmp_path)) != before


def test_array_subclasses_defined_elsewhere_are_keyed_by_their_bytes():
    np = _numpy()
    torch = torch_or_skip()  # the real torch (4.5-4.7 put a torch.py of the DSL on sys.path)

    class Table(np.ndarray):
        pass

    class Weights(torch.Tensor):
        pass

    a = np.linspace(0.0, 1.0, 2000)
    b = a.copy()
    b[1234] += 1e-9
    assert canonical(a.view(Table)) != canonical(b.view(Table))
    ta, tb = torch.from_numpy(a).as_subclass(Weights), torch.from_numpy(b).as_subclass(Weights)
    assert canonical(ta) != canonical(tb)


class Operator:
    """A callable kernel object's class (quack's GEMM classes hold class-level tables)."""

    tile = 64
    lock = threading.Lock()  # class data the key cannot spell: named by its type

    def __init__(self):
        self.n = 1


def _operator_digest():
    h = key_module._Hasher()
    key_module._feed_object(h, Operator(), "callable-object")
    return h.hexdigest()


def test_a_callable_objects_class_data_is_in_its_key(monkeypatch):
    before = _operator_digest()  # the lock does not make it uncacheable
    assert _operator_digest() == before
    monkeypatch.setattr(Operator, "tile", 128)  # set at run time: the source still says 64
    assert _operator_digest() != before
    monkeypatch.setattr(Operator, "tile", 64)
    monkeypatch.setattr(Operator, "lock", threading.RLock())  # an unspellable value of another type
    assert _operator_digest() != before


def _reference_class_index(text):
    """Every class statement found by visiting every node (the index's first form), for comparison."""
    import ast

    index = {}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                index.setdefault(prefix + child.name, (first, child.end_lineno))
                walk(child, prefix + child.name + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, prefix + child.name + ".<locals>.")
            else:
                walk(child, prefix)

    walk(ast.parse(text), "")
    return index


CLASS_PLACES = """\
import contextlib
class A:
    class B:
        pass
if True:
    class C: pass
else:
    class D: pass
try:
    class E: pass
except ImportError:
    class F: pass
else:
    class G: pass
finally:
    class H: pass
for _ in ():
    class I: pass
else:
    class J: pass
while False:
    class K: pass
with contextlib.nullcontext():
    class L: pass
match 1:
    case 1:
        class M: pass
def f():
    class N:
        def g(self):
            class O: pass
async def h():
    async with x:
        class P: pass
@decorated
class Q: pass
"""


@pytest.mark.parametrize("module", ["CLASS_PLACES", "inspect", "ast", "dataclasses", "typing", "cute_bind.cache.key"])
def test_the_class_index_finds_every_class_statement(module):
    import importlib

    text = CLASS_PLACES if module == "CLASS_PLACES" else open(importlib.import_module(module).__file__).read()
    index = key_module._class_index(text.splitlines(keepends=True))
    assert index == _reference_class_index(text) and index
    if module == "CLASS_PLACES":
        assert {
            "A.B",
            "C",
            "D",
            "E",
            "F",
            "G",
            "H",
            "I",
            "J",
            "K",
            "L",
            "M",
            "f.<locals>.N",
            "f.<locals>.N.g.<locals>.O",
            "h.<locals>.P",
        } <= set(index)
        assert index["Q"][0] == index["Q"][1] - 1  # from its decorator


def test_the_collector_is_paused_while_a_key_is_made_and_restored_after(monkeypatch):
    """Collections while the key parses sources walk the whole heap of a process full of a client's
    compiles; the collector is paused for the key and restored as it was, also when the key fails."""
    import gc

    seen = []

    def spelled(kernel, compile_key):
        seen.append(gc.isenabled())
        if compile_key == "fail":
            raise key_module.Uncacheable("a value")
        return "k", []

    monkeypatch.setattr(key_module, "_entry_key", spelled)
    assert gc.isenabled()
    assert key_module.entry_key(object(), 1) == ("k", [])
    with pytest.raises(key_module.Uncacheable):
        key_module.entry_key(object(), "fail")
    assert seen == [False, False] and gc.isenabled()
    gc.disable()  # a process that turned the collector off keeps it off
    try:
        key_module.entry_key(object(), 1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_torch_dtypes_are_spelled_by_name():
    """quack's GEMM classes key a table by torch dtypes: spelled by their name in torch's module
    (aliases alike), found by identity, never by repr."""
    from tests.optional import torch_or_skip

    torch = torch_or_skip()
    assert canonical(torch.float32) == canonical(torch.float) != canonical(torch.float16)
    assert len({canonical(d) for d in (torch.float32, torch.bfloat16, torch.int8, torch.float8_e4m3fn)}) == 4
    table = {torch.float16: "f16", torch.bfloat16: "bf16"}
    assert canonical(table) == canonical(dict(reversed(table.items()))) != canonical({torch.float16: "f16"})
