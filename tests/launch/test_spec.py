"""The typed C boundary (issue 25, item 3): one LaunchSpec, NamedTuples where tuples cross, stubs C agrees with.

``_claunch.Launcher(spec)`` reads the fields of a :class:`LaunchSpec` and of
every record inside it (slot specs, modes, sequence leaves) by name; the
modules export the names they read (``LAUNCH_SPEC_FIELDS``, ``TENSOR_SPEC_FIELDS``...,
one parametrized test over all of them), and every C function and method
carries a text signature. These tests hold the Python records, the ``.pyi`` stubs and the C
module to one another, so a parameter added on one side only fails here.
"""

from __future__ import annotations

import ast
import ctypes
import dataclasses
import inspect
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cute_bind
from cute_bind import dsl
from cute_bind.launch import native
from cute_bind.launch.native import TorchReader
from cute_bind.launch.spec import KeepAlive, LaunchSpec, SeqLeaf, TvmConstantArg, TvmFfiLaunchSpec, TvmKeepAlive, TvmTensorArg
from cute_bind.slots.dlpack import ArrayLayout, CtypesLayout
from cute_bind.slots.pointer import CPointerSpec
from cute_bind.slots.scalar import CNumberSpec
from cute_bind.slots.stream import CStreamSpec
from cute_bind.slots.tensor import CMode, CTensorSpec

LAUNCH = Path(cute_bind.__file__).parent / "launch"
_BUFFERS: list[Any] = []  # what raw records point into, for the whole session


def raw_spec(**fields: Any) -> Any:
    """A record with LaunchSpec's fields but none of its checks (what C must check itself); no slots by default."""
    buf = (ctypes.c_char * 64)()
    _BUFFERS.append(buf)
    base: dict[str, Any] = dict(
        entry=1, argv=ctypes.addressof(buf), storage=ctypes.addressof(buf), storage_size=64, result=0, fmts=b"", classes=b"",
        offsets=(), sizes=(), extras=(), defaults=(), required=object(), slow=print, fail=print, busy_error=print, ret=None,
        keep=KeepAlive(bytearray(), buf, None, bytearray(), None, None), release_gil=True,
    )  # fmt: skip
    base.update(fields)
    base.setdefault("names", tuple(f"p{i}" for i in range(len(base["fmts"]) if isinstance(base["fmts"], bytes) else 0)))
    return types.SimpleNamespace(**base)


def _claunch() -> Any:
    return pytest.importorskip("cute_bind.launch._claunch")


# ------------------------------------------------------------------ what C reads == the Python records
def _fields(record: type) -> tuple[str, ...]:
    """A record's field names: a dataclass's fields or a NamedTuple's."""
    if dataclasses.is_dataclass(record):
        return tuple(f.name for f in dataclasses.fields(record))
    return tuple(record._fields)  # type: ignore[attr-defined]


#: every record a C extension reads: (extension, the names it exports, the Python record). Each is read
#: by field name, so a field renamed, added or removed on one side only fails here, and a field
#: reordered cannot be read as another.
C_RECORDS = [
    ("cute_bind.launch._claunch", "LAUNCH_SPEC_FIELDS", LaunchSpec),
    ("cute_bind.launch._claunch", "SEQ_LEAF_FIELDS", SeqLeaf),
    ("cute_bind.launch._claunch", "TENSOR_SPEC_FIELDS", CTensorSpec),
    ("cute_bind.launch._claunch", "MODE_FIELDS", CMode),
    ("cute_bind.launch._claunch", "POINTER_SPEC_FIELDS", CPointerSpec),
    ("cute_bind.launch._claunch", "STREAM_SPEC_FIELDS", CStreamSpec),
    ("cute_bind.launch._claunch", "NUMBER_SPEC_FIELDS", CNumberSpec),
    ("cute_bind.launch._claunch", "ARRAY_LAYOUT_FIELDS", ArrayLayout),
    ("cute_bind.launch._claunch", "CTYPES_LAYOUT_FIELDS", CtypesLayout),
    ("cute_bind.launch._claunch", "TORCH_READER_FIELDS", TorchReader),
    ("cute_bind.launch._ctvmffi", "TVM_FFI_LAUNCH_SPEC_FIELDS", TvmFfiLaunchSpec),
    ("cute_bind.launch._ctvmffi", "TENSOR_ARG_FIELDS", TvmTensorArg),
    ("cute_bind.launch._ctvmffi", "CONSTANT_ARG_FIELDS", TvmConstantArg),
]


@pytest.mark.parametrize("extension, exported, record", C_RECORDS, ids=[r[1] for r in C_RECORDS])
def test_c_reads_exactly_each_records_fields(extension: str, exported: str, record: type) -> None:
    module = pytest.importorskip(extension)
    assert getattr(module, exported) == _fields(record)


@pytest.mark.parametrize("record", [CTensorSpec, CMode, CPointerSpec, CStreamSpec, CNumberSpec, SeqLeaf], ids=lambda r: r.__name__)
def test_a_plain_tuple_is_no_record_for_c(record: type) -> None:
    """C reads the slot records by name: a tuple of the right length, read by position before, is refused."""
    claunch = _claunch()
    spec = tuple(range(len(_fields(record))))
    cases = {
        CTensorSpec: (b"T", b"Q", 16, spec),
        CMode: (b"T", b"Q", 16, CTensorSpec(0, None, None, 64, (2, 32, 1), (1, 0), 16, 1, (spec, spec), 0)),
        CPointerSpec: (b"P", b"Q", 8, spec),
        CStreamSpec: (b"Z", b"Q", 8, spec),
        CNumberSpec: (b"I", b"i", 4, spec),
        SeqLeaf: (b"S", b"Q", 8, (spec,)),
    }
    classes, fmts, size, extra = cases[record]
    with pytest.raises(TypeError, match=f"{record.__name__} record"):
        claunch.Launcher(raw_spec(fmts=fmts, classes=classes, offsets=(0,), sizes=(size,), extras=(extra,), defaults=(None,)))


def raw_tvm_spec(**fields: Any) -> Any:
    """A record with TvmFfiLaunchSpec's fields and none of its checks; no arguments by default."""
    base: dict[str, Any] = dict(
        entry=1, self_handle=0, set_stream=1, move_error=1, dec_ref=1, kinds=b"", specs=(), defaults=(), required=object(),
        slow=print, fail=print, classify=print, keep=TvmKeepAlive(None, None), names=None,
    )  # fmt: skip
    base.update(fields)
    return types.SimpleNamespace(**base)


TVM_WRONG = [
    ("entry", 0, ValueError),
    ("set_stream", "1", TypeError),
    ("kinds", "T", TypeError),
    ("specs", [], TypeError),
    ("slow", None, TypeError),
    ("keep", None, TypeError),
    ("kinds", b"Z", ValueError),
    ("kinds", b"i", ValueError),  # one kind, no spec or default
    ("names", ("a",), TypeError),  # one name, no argument
    ("names", ["a"], TypeError),
]


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(TvmFfiLaunchSpec)])
def test_the_tvm_ffi_launcher_reads_every_field_by_name(name: str) -> None:
    c = pytest.importorskip("cute_bind.launch._ctvmffi")
    record = raw_tvm_spec()
    delattr(record, name)
    with pytest.raises(AttributeError, match=name):
        c.Launcher(record)


@pytest.mark.parametrize("name, value, error", TVM_WRONG, ids=[f"{n}={v!r}" for n, v, _ in TVM_WRONG])
def test_the_tvm_ffi_launcher_checks_each_field_itself(name: str, value: Any, error: type) -> None:
    c = pytest.importorskip("cute_bind.launch._ctvmffi")
    c.Launcher(raw_tvm_spec())  # the record without the fault is taken
    with pytest.raises(error):
        c.Launcher(raw_tvm_spec(**{name: value}))
    with pytest.raises((TypeError, ValueError)):
        TvmFfiLaunchSpec(**vars(raw_tvm_spec(**{name: value})))
    assert TvmFfiLaunchSpec(**vars(raw_tvm_spec())).kinds == b""


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(LaunchSpec)])
def test_c_reads_every_field_by_name(name: str) -> None:
    """A record lacking any one field is refused by C with that field's AttributeError (C reads it)."""
    record = raw_spec()
    delattr(record, name)
    with pytest.raises(AttributeError, match=name):
        _claunch().Launcher(record)


# (field, a value of the wrong type, the error C raises)
WRONG_TYPES = [
    ("entry", "1", TypeError),
    ("entry", -1, ValueError),
    ("argv", 1.5, TypeError),
    ("storage", 1 << 64, ValueError),
    ("storage_size", None, TypeError),
    ("result", b"", TypeError),
    ("fmts", "Q", TypeError),
    ("classes", ["P"], TypeError),
    ("offsets", [0], TypeError),
    ("sizes", None, TypeError),
    ("extras", [], TypeError),
    ("defaults", {}, TypeError),
    ("names", ["x"], TypeError),
    ("slow", None, TypeError),
    ("fail", 1, TypeError),
    ("busy_error", "x", TypeError),
    ("ret", 1.0, TypeError),
    ("keep", None, TypeError),
    ("release_gil", 1, TypeError),
    ("entry", 0, ValueError),  # null
    ("fmts", b"Q", ValueError),  # one format, no class
]


@pytest.mark.parametrize("name, value, error", WRONG_TYPES, ids=[f"{n}={v!r}" for n, v, _ in WRONG_TYPES])
def test_c_checks_each_field_type_itself(name: str, value: Any, error: type) -> None:
    with pytest.raises(error):
        _claunch().Launcher(raw_spec(**{name: value}))
    with pytest.raises((TypeError, ValueError)):
        LaunchSpec(**vars(raw_spec(**{name: value})))  # and LaunchSpec refuses each before C sees it


def test_a_well_formed_raw_record_is_taken() -> None:
    """The checks above fail for the named field only: the same record otherwise builds a launcher."""
    launcher = _claunch().Launcher(raw_spec())
    with pytest.raises(TypeError, match="twice"):
        launcher.__init__(raw_spec())
    assert LaunchSpec(**vars(raw_spec())).storage_size == 64


def test_launch_spec_is_frozen() -> None:
    spec = LaunchSpec(**vars(raw_spec()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.entry = 2  # type: ignore[misc]


# (what is wrong in a LaunchSpec of one slot, fields) -> LaunchSpec refuses it
ONE_SLOT = dict(fmts=b"Q", classes=b"P", offsets=(0,), sizes=(8,), extras=(None,), defaults=(None,))
BAD_SPECS = [
    ("a slot past the storage", dict(offsets=(60,))),
    ("an unknown class", dict(classes=b"Y")),
    ("a class writing another format", dict(classes=b"B")),
    ("a sequence leaf that is a bare tuple", dict(classes=b"S", extras=((("P", "Q", 0, 8, None),),))),
    ("a sequence leaf of a writer class", dict(classes=b"S", extras=((SeqLeaf("X", "Q", 0, 8, None),),))),
    ("keep as a bare tuple", dict(keep=(None,) * 6)),
    ("extras of another length", dict(extras=(None, None))),
    ("names of another length", dict(names=("x", "y"))),
    ("a name that is not a str", dict(names=(b"x",))),
    ("a writer that is not callable", dict(classes=b"X", extras=(3,))),
]


@pytest.mark.parametrize("what, fields", BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
def test_launch_spec_validates_in_one_place(what: str, fields: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        LaunchSpec(**vars(raw_spec(**{**ONE_SLOT, **fields})))


def test_a_bound_handle_hands_c_one_launch_spec_with_named_leaves(monkeypatch: Any) -> None:
    """What PreparedLaunch gives C: a LaunchSpec, its keep a KeepAlive, a sequence's leaves SeqLeaf records."""
    _claunch()
    monkeypatch.delenv("CUTE_BIND_PURE_PYTHON", raising=False)  # the C launcher is what is examined
    from tests.kernels.host import seq_sum

    seen: list[Any] = []
    real = native.c_launcher_class()

    def recording(spec: Any) -> Any:
        seen.append(spec)
        return real(spec)

    monkeypatch.setattr(native, "c_launcher_class", lambda: recording)
    a, b, y = (np.zeros(64, np.float32) for _ in range(3))
    handle = cute_bind.kernel(seq_sum).bind(y, (a, b), (1.0, 1.0), 64)
    (spec,) = seen
    assert type(spec) is LaunchSpec and type(spec.keep) is KeepAlive and spec.keep.pin is handle._pin
    leaves = [leaf for cls, extra in zip(spec.classes.decode(), spec.extras) if cls == "S" for leaf in extra]
    assert len(leaves) == 4 and all(type(leaf) is SeqLeaf for leaf in leaves)
    handle.launch(y, (a.ctypes.data, b.ctypes.data), (2.0, 0.5), 64)


def test_bare_call_returns_a_named_tuple() -> None:
    assert dsl.BareCall._fields == ("entry", "packed", "address", "raw_entry", "raw_arg")
    assert inspect.signature(dsl.bare_call).return_annotation in ("BareCall", dsl.BareCall)


# ------------------------------------------------------------------ the stubs == the C module
def _stub(name: str) -> dict[str, Any]:
    """``{name: ast node}`` of a stub's top level (classes keep their methods)."""
    tree = ast.parse((LAUNCH / f"{name}.pyi").read_text())
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _stub_params(fn: ast.FunctionDef, drop_self: bool) -> list[tuple[str, str]]:
    a = fn.args
    params = [(p.arg, "POSITIONAL_ONLY") for p in a.posonlyargs] + [(p.arg, "POSITIONAL_OR_KEYWORD") for p in a.args]
    if a.vararg:
        params.append((a.vararg.arg, "VAR_POSITIONAL"))
    params += [(p.arg, "KEYWORD_ONLY") for p in a.kwonlyargs]
    if a.kwarg:
        params.append((a.kwarg.arg, "VAR_KEYWORD"))
    return params[1:] if drop_self else params


def _c_params(obj: Any, drop_self: bool) -> list[tuple[str, str]]:
    assert obj.__text_signature__, f"{obj!r} has no text signature in its C docstring"
    params = [(p.name, p.kind.name) for p in inspect.signature(obj).parameters.values()]
    return params[1:] if drop_self else params


@pytest.mark.parametrize("module", ["_claunch", "_ctvmffi"])
def test_stubs_declare_what_the_c_module_parses(module: str) -> None:
    c = pytest.importorskip(f"cute_bind.launch.{module}")
    stub = _stub(module)
    public = {n for n in dir(c) if not n.startswith("_")}
    assert set(stub) == public, f"{module}.pyi declares {sorted(stub)}, the C module has {sorted(public)}"
    for name, node in stub.items():
        obj = getattr(c, name)
        if isinstance(node, ast.FunctionDef):
            assert _stub_params(node, False) == _c_params(obj, False), name
        elif isinstance(node, ast.ClassDef):
            methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
            assert set(methods) - {"__init__"} == {m for m in dir(obj) if not m.startswith("_")}, name
            assert _stub_params(methods["__init__"], True) == _c_params(obj, False), f"{name}.__init__"
            for m, fn in methods.items():
                if m != "__init__":
                    assert _stub_params(fn, True) == _c_params(getattr(obj, m), True), f"{name}.{m}"


def test_a_prepared_tvm_ffi_handle_hands_c_one_spec_with_named_arguments(monkeypatch: Any) -> None:
    pytest.importorskip("cute_bind.launch._ctvmffi")
    pytest.importorskip("tvm_ffi")
    monkeypatch.delenv("CUTE_BIND_PURE_PYTHON", raising=False)  # the C launcher is what is examined
    from cute_bind.launch import tvm_ffi as T
    from tests.launch.test_lifecycle import _tvm_compiled

    seen: list[Any] = []
    real = T._c_launcher_class()
    monkeypatch.setattr(T, "_c_launcher_class", lambda: lambda spec: (seen.append(spec), real(spec))[1])
    h = cute_bind.prepare(_tvm_compiled(), 1)
    h.launch(2)
    (spec,) = seen
    assert type(spec) is TvmFfiLaunchSpec and type(spec.keep) is TvmKeepAlive and spec.kinds == b"i"
    assert type(T._kind_of((1, None, 2.0))[1]) is TvmConstantArg
    from tests.optional import torch_or_skip

    torch = torch_or_skip()  # not importorskip: the DSL's own torch.py shadows a missing torch under DSL 4.5-4.7
    assert type(T._kind_of(torch.zeros(2))[1]) is TvmTensorArg


@pytest.mark.parametrize(
    "args, record",
    [
        (((1,) * 11, None, None), "ArrayLayout"),
        ((None, (1, 2, 3), None), "CtypesLayout"),
        ((None, None, (1, (), None, None)), "TorchReader"),
    ],
    ids=["numpy", "ctypes", "torch"],
)
def test_configure_reads_its_records_by_name(args: tuple[Any, ...], record: str) -> None:
    """configure() reads NumPy's and ctypes' layouts and torch's reader by field name: a tuple of the
    fields' values is refused."""
    with pytest.raises(TypeError, match=f"{record} record"):
        _claunch().configure(*args)
