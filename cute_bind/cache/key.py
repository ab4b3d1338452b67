"""The entry key: everything a compile depends on, hashed; a key that cannot be made stable is refused.

What goes in (see docs/concepts/cache.md):

- the source of the kernel's function and, recursively, of every function it
  can reach by name (its globals, its closure, attributes of user modules it
  names, methods of user classes and the class's source): the DSL
  preprocesses and traces exactly that source; a function without source is
  hashed by its bytecode;
- the values of the plain constants those functions name (numbers, strings,
  tuples, enums...), read when the key is made, i.e. when the DSL would read
  them while tracing, closure values included; default values and
  annotations; a callable object's own attributes. Floats are spelled by
  their bits (``-0.0`` is not ``0.0``; a NaN is its payload); arrays (NumPy,
  CPU torch tensors, ``memoryview``, ``bytearray``, ``array.array``) by a
  SHA-256 of their bytes with their dtype, shape and strides, never by a
  ``repr`` that rounds or elides (a tensor on another device is refused);
- the compile key ``bind()`` computes (each slot's specialization, Constexpr
  values, target architecture, compile options) and the kernel's own
  ``cache_key=``; in the process too, a Constexpr value is compared by
  :func:`constexpr_key` (bits of floats, types of nested values), not ``==``;
- the environment: the entry format, DSL version and CUDA variant,
  cute_bind's version and a hash of its sources' contents (made once per
  process, kept in memory only), Python version, machine, CPU model and
  every ``CUTE_DSL_*`` setting.

A name bound to an object whose state has no stable spelling (its ``repr``
shows an address) cannot be seen: such a key raises :class:`Uncacheable`
unless the kernel vouches for it with ``cache_key=``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import inspect
import linecache
import marshal
import os
import platform
import struct
import sys
import types
from typing import Any, Hashable

from .. import dsl

__all__ = ["FORMAT", "Exact", "Uncacheable", "canonical", "constexpr_key", "constexpr_value", "entry_key", "environment", "exact_form"]

#: Bumped when the entry layout or the key derivation changes (old entries are then ignored).
FORMAT = 1

#: Modules whose code is covered by a version in :func:`environment` (never hashed by source).
_COVERED = frozenset({"cute_bind", "builtins", "__future__", "typing", "typing_extensions"})


class Uncacheable(Exception):
    """The compile depends on something the key cannot spell; ``args[0]`` says what."""


# ------------------------------------------------------------------ exact values
_F64 = struct.Struct("<d")
_BARE = frozenset({int, str, bytes, type(None)})  # types whose == is exact between two values of the type
_DEPTH = 12  # nesting past which a value keeps its own equality (a cycle, or data no Constexpr holds)


def _loaded(name: str) -> Any:
    """NumPy or torch if this process imported it, else None: never imported here (a value of one of
    their types, subclasses defined elsewhere included, means the module already is)."""
    return sys.modules.get(name)


def exact_form(value: Any, depth: int = 0) -> Hashable:
    """A hashable form of ``value`` that another value shares only when a trace cannot tell them apart.

    ``==`` is not that: ``0.0 == -0.0`` (``1 / x`` or ``copysign`` differ), a NaN
    equals nothing, not even itself, and ``(1, 2) == (True, 2.0)``. Here floats
    (also inside complex numbers and NumPy scalars) are their bits, so ``-0.0``
    differs from ``0.0`` and a NaN equals a NaN of the same payload; nested
    values are tagged with their exact type. ``int``, ``str``, ``bytes`` and
    ``None`` stand for themselves (their ``==`` is already exact between
    values of one type, and no tagged form equals them); any other object is
    ``(its type, itself)``, i.e. keeps its own ``==`` within its type.

    Tagged forms are tuples whose first item is a type object, and a plain
    tuple's form never starts with one (a type inside it is tagged too), so two
    different values never share a form.
    """
    t = value.__class__
    if t is int or t is str or t is bytes or value is None:
        return value  # type: ignore[no-any-return]
    if t is float:
        return (float, _F64.pack(value))
    if t is bool:
        return (bool, value)
    if depth > _DEPTH:
        return (t, value)
    if t is tuple:
        return tuple([exact_form(x, depth + 1) for x in value])
    if t is complex:
        return (complex, _F64.pack(value.real), _F64.pack(value.imag))
    if t is frozenset:
        return (frozenset, frozenset([exact_form(x, depth + 1) for x in value]))
    if isinstance(value, tuple):  # a named tuple: its class and its items
        return (t, tuple([exact_form(x, depth + 1) for x in value]))
    np = _loaded("numpy")
    if np is not None and isinstance(value, np.generic):  # np.float32(-0.0), np.float64('nan'), ...
        return (t, value.dtype.str, value.tobytes())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(t, "__dataclass_params__", None)
        if params is not None and params.eq:  # compared by its fields: compare those exactly
            return (t, tuple([exact_form(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value) if f.compare]))
    return (t, value)


class Exact:
    """A Constexpr value in a compile key: equal to another when their :func:`exact_form` agree.

    ``value`` is the value itself (what the DSL is given); ``repr`` is its repr,
    so messages about specializations read as before.
    """

    __slots__ = ("value", "form", "_hash", "_flat")

    def __init__(self, value: Any) -> None:
        self.value = value
        # a tuple of ints and strings (a tile shape): equal to another tuple exactly when equal by ``==``
        # with items of the same types, two C-level comparisons instead of spelling the other value
        self._flat: tuple[type, ...] | None = None
        if value.__class__ is tuple and all(x.__class__ in _BARE for x in value):
            self._flat = tuple(map(type, value))
        form = exact_form(value)
        try:
            h = hash(form)
        except TypeError:  # a part the value's own hash skips (e.g. a field outside its eq) is unhashable
            form = (value.__class__, value)
            h = hash(form)
        self.form = form
        self._hash = h

    def __eq__(self, other: object) -> bool:
        if other.__class__ is Exact:
            return self.form == other.form
        return other is self.value or self.form == exact_form(other)

    def __ne__(self, other: object) -> bool:
        # the call path's check is ``compiled != given`` with ``given`` of the compiled value's class:
        # the same object (the common case: a constant passed again) needs no spelling
        if other is self.value:
            return False
        if self._flat is not None and other.__class__ is tuple:
            return other != self.value or tuple(map(type, other)) != self._flat
        if other.__class__ is Exact:
            return self.form != other.form
        return self.form != exact_form(other)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return repr(self.value)


def constexpr_key(value: Any) -> Any:
    """What stands for a Constexpr value in an in-process compile key (and the call path's checks).

    The value itself where ``==`` between two values of its type is already
    exact (the compile key holds the type beside it): ``int``, ``str``,
    ``bytes``, ``bool``, ``None``, enum members, and floats other than zero and
    NaN (two equal nonzero floats have the same bits). Anything else is
    wrapped in :class:`Exact`. Keeping the common values bare keeps the call
    path's check of them a single C-level comparison, as before.
    """
    t = value.__class__
    if t is int or t is str or t is bool or value is None or t is bytes:
        return value
    if t is float:
        if value == value and value != 0.0:
            return value
    elif isinstance(value, enum.Enum) and (t.__eq__ is object.__eq__ or isinstance(value, int)):
        return value  # members of one enum compare by identity (an int enum by its int: equal ints are one member)
    return Exact(value)


def constexpr_value(key_part: Any) -> Any:
    """The value :func:`constexpr_key` stands for."""
    return key_part.value if key_part.__class__ is Exact else key_part


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _covered_module(name: str | None) -> bool:
    """Modules whose behaviour is pinned by a version in the key: the DSL, the standard library, cute_bind."""
    if not name:
        return False
    root = name.partition(".")[0]
    return root in _COVERED or root in sys.stdlib_module_names or dsl.is_dsl_module_name(name)


def _last_line(code: types.CodeType) -> int:
    last = code.co_firstlineno
    for _, _, line in code.co_lines():
        if line is not None and line > last:
            last = line
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            last = max(last, _last_line(c))
    return last


@functools.lru_cache(maxsize=4096)
def _code_source(code: types.CodeType) -> str:
    """The source lines of one code object: from its first line (its first decorator) to the last line any of
    its bytecode (nested code included) comes from. Lines past that produce no code (comments, a closing
    bracket), so they cannot change what runs; no tokenizer is needed, unlike ``inspect.getsource``."""
    linecache.checkcache(code.co_filename)  # a file edited since it was cached is read again
    lines = linecache.getlines(code.co_filename)
    start = code.co_firstlineno - 1
    if lines and 0 <= start < len(lines):
        return "".join(lines[start : _last_line(code)])
    # no source (exec, a REPL): the bytecode is what runs
    return "bytecode:" + hashlib.sha256(marshal.dumps(code)).hexdigest()


def _names(code: types.CodeType) -> set[str]:
    """Every name a code object and the code nested in it can look up (globals and attributes)."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


class _Hasher:
    def __init__(self, lenient: bool = False) -> None:
        self.lenient = lenient  # spell an object without a stable repr by its type (the kernel's cache_key= vouches for it)
        self._h = hashlib.sha256()
        self._seen: set[int] = set()
        self.depends: list[str] = []  # functions hashed by source, for the entry's header

    def feed(self, *parts: str) -> None:
        for p in parts:
            b = p.encode("utf-8", "surrogatepass")
            self._h.update(len(b).to_bytes(8, "little"))
            self._h.update(b)

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    # -------------------------------------------------------------- functions
    def function(self, fn: Any) -> None:
        if id(fn) in self._seen:
            self.feed("seen", _qualname(fn))
            return
        self._seen.add(id(fn))
        code = dsl.source_code(fn)
        self.depends.append(_qualname(fn))
        self.feed("function", _qualname(fn), _code_source(code))  # decorators included: the block starts at the first
        self.feed("defaults", self.canon(fn.__defaults__), self.canon(fn.__kwdefaults__))
        self.feed("annotations", self.canon({k: _spell_annotation(v) for k, v in getattr(fn, "__annotations__", {}).items()}))
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell (a name assigned later)
                self.feed("closure-empty", name)
                continue
            self.named(f"closure {name}", contents, _names(code))
        names = _names(code)
        g = fn.__globals__
        for name in sorted(names):
            if name in g:
                self.named(name, g[name], names)

    def named(self, label: str, value: Any, names: set[str]) -> None:
        """One name a traced function can read: recurse into code, spell values."""
        if isinstance(value, types.ModuleType):
            self.feed("module", label, value.__name__)
            if not _covered_module(value.__name__) and id(value) not in self._seen:
                self._seen.add(id(value))
                for attr in sorted(names):
                    if attr in value.__dict__:
                        self.named(f"{value.__name__}.{attr}", value.__dict__[attr], names)
            return
        self.feed("name", label, self.canon(value))

    def canon(self, v: Any, depth: int = 0) -> str:
        """A stable spelling of a value; code is hashed recursively; raises :class:`Uncacheable`."""
        if depth > 12:
            raise Uncacheable("a value nested too deeply to spell")
        t = type(v)
        if v is None or t in (bool, int, str, bytes):
            return f"{t.__name__}:{v!r}"
        if t is float:  # by its bits: repr gives -0.0 and 0.0 apart, but every NaN the same spelling
            return "float:" + _F64.pack(v).hex()
        if t is complex:
            return "complex:" + _F64.pack(v.real).hex() + _F64.pack(v.imag).hex()
        if t is Exact:  # a Constexpr value in a compile key
            return self.canon(v.value, depth)
        if t in (tuple, list):
            return f"{t.__name__}(" + ",".join(self.canon(x, depth + 1) for x in v) + ")"
        if isinstance(v, tuple):  # a named tuple: its repr would round nothing, but spell its items like a tuple's
            return f"{self._class(t)}(" + ",".join(self.canon(x, depth + 1) for x in v) + ")"
        array = self._array(v, t, depth)
        if array is not None:
            return array
        if t in (set, frozenset):
            return f"{t.__name__}(" + ",".join(sorted(self.canon(x, depth + 1) for x in v)) + ")"
        if t is dict:
            return "dict(" + ",".join(sorted(f"{self.canon(k, depth + 1)}={self.canon(x, depth + 1)}" for k, x in v.items())) + ")"
        if isinstance(v, enum.Enum):
            return f"enum:{_qualname(t)}.{v.name}"
        if isinstance(v, type):
            return self._class(v)
        if isinstance(v, (staticmethod, classmethod)):
            return self.canon(v.__func__, depth + 1)
        if isinstance(v, property):
            return "property(" + ",".join(self.canon(f, depth + 1) for f in (v.fget, v.fset, v.fdel)) + ")"
        if isinstance(v, functools.partial):
            return f"partial({self.canon(v.func, depth + 1)},{self.canon(v.args, depth + 1)},{self.canon(v.keywords, depth + 1)})"
        if isinstance(v, (types.BuiltinFunctionType, types.MethodWrapperType, types.WrapperDescriptorType)):
            return f"builtin:{_qualname(v)}"
        if isinstance(v, types.MethodType):
            return f"method({self.canon(v.__func__, depth + 1)},{self.canon(v.__self__, depth + 1)})"
        if callable(v) and (inspect.isfunction(v) or hasattr(v, "__wrapped__")):
            chain = dsl.traced_functions(v)
            if chain:
                for f in chain:
                    if _covered_module(getattr(f, "__module__", None)):
                        self.feed("covered", _qualname(f))
                    else:
                        self.function(f)
                return "code:" + "|".join(_qualname(f) for f in chain)
        if dataclasses.is_dataclass(v):
            fields = ",".join(f"{f.name}={self.canon(getattr(v, f.name), depth + 1)}" for f in dataclasses.fields(v))
            return f"{self._class(t)}({fields})"
        text = repr(v)
        if " at 0x" in text or " object at " in text:
            if self.lenient:
                return f"opaque:{_qualname(t)}"
            raise Uncacheable(f"{_qualname(t)} {text[:80]} (its repr shows no state)")
        return f"{_qualname(t)}:{text}"

    def _array(self, v: Any, t: type, depth: int) -> str | None:
        """Arrays by their bytes, dtype, shape and strides (a repr rounds values and elides long arrays); None: not one."""
        if t is bytearray:
            return "bytearray:" + hashlib.sha256(v).hexdigest()
        if t is memoryview:
            try:
                return f"memoryview:{v.format}:{v.shape}:" + hashlib.sha256(v.tobytes()).hexdigest()
            except ValueError:  # released
                raise Uncacheable("a released memoryview") from None
        if t.__module__ == "array" and t.__name__ == "array":
            return f"array:{v.typecode}:" + hashlib.sha256(v.tobytes()).hexdigest()
        np = _loaded("numpy")
        if np is not None and isinstance(v, np.generic):  # np.float32(-0.0): by its bits
            return f"numpy:{_qualname(t)}:{v.dtype.str}:{v.tobytes().hex()}"
        if np is not None and isinstance(v, np.ndarray):
            dtype = v.dtype.str + (repr(v.dtype.descr) if v.dtype.fields else "")
            if v.dtype.hasobject:  # its bytes are addresses: spell the objects
                body = self.canon(v.tolist(), depth + 1)
            else:
                body = hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
            extra = ""
            if t is not np.ndarray and hasattr(v, "__dict__"):  # a subclass's own state (a masked array's mask)
                extra = self.canon(dict(vars(v)), depth + 1)
            return f"ndarray:{_qualname(t)}:{dtype}:{v.shape}:{v.strides}:{body}:{extra}"
        torch = _loaded("torch")
        if torch is not None and isinstance(v, torch.Tensor):
            return self._tensor(torch, v, t)
        return None

    def _tensor(self, torch: Any, v: Any, t: type) -> str:
        """A CPU torch tensor by its bytes; any other is refused.

        Reading another device's tensor would copy it to the host and wait for
        the device on every key made, and a traced function that names a device
        tensor more likely bakes in its address, which no key can spell across
        processes: it needs ``cache_key=`` (or to be a parameter).
        """
        if v.device.type != "cpu" or v.layout is not torch.strided or v.is_quantized:
            if self.lenient:
                return f"opaque:{_qualname(t)}"
            raise Uncacheable(f"a torch tensor on {v.device} ({v.layout}): only a dense CPU tensor is spelled by its bytes")
        data = v.detach().resolve_conj().resolve_neg().contiguous()
        raw = data.reshape(-1).view(torch.uint8).numpy().tobytes() if data.numel() else b""
        return f"tensor:{_qualname(t)}:{v.dtype}:{tuple(v.shape)}:{tuple(v.stride())}:" + hashlib.sha256(raw).hexdigest()

    def _class(self, cls: type) -> str:
        if _covered_module(cls.__module__) or id(cls) in self._seen:
            return f"type:{_qualname(cls)}"
        self._seen.add(id(cls))
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            source = ""  # a class without Python source (an extension type): its module's version covers it
        self.feed("class", _qualname(cls), source)
        for name, member in sorted(vars(cls).items()):
            if inspect.isfunction(member) or isinstance(member, (staticmethod, classmethod, property)):
                self.feed("member", name, self.canon(member, 1))
        return f"type:{_qualname(cls)}"


def _spell_annotation(annotation: Any) -> str:
    # annotations decide slot kinds; their repr is stable for every eligible kind
    text = repr(annotation)
    return text if " at 0x" not in text else _qualname(type(annotation))


def canonical(value: Any) -> str:
    """A stable spelling of ``value`` (what a ``cache_key=`` or a compile key is hashed as)."""
    return _Hasher().canon(value)


def _sources_digest(root: str) -> str:
    """A SHA-256 (16 hex digits) of every ``.py`` file under ``root``: relative paths and contents."""
    files: list[tuple[str, str]] = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                files.append((os.path.relpath(path, root), path))
    files.sort()
    h = hashlib.sha256()
    for rel, path in files:
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            data = b"?"
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def _cute_bind_sources() -> str:
    """cute_bind's version and a hash of its sources: a changed checkout is another compiler.

    The sources are read and hashed once per process, when the first key is
    made, and remembered nowhere else. That costs about a millisecond
    (~60 files, ~0.7 MB; 1-5 ms measured, a cold page cache the most), next to
    the tens of milliseconds that loading even one cached kernel takes. A memo
    keyed by the files' sizes and modification times would save that, but it
    has to live somewhere: in the shared temporary folder any local user can
    plant it (choosing part of every key) or a symlink for its write, and in
    the cache folder it is one more file to trust. A key of the stamp alone
    (paths, sizes, mtimes) would need no memo but would change with every
    reinstall of identical files and could miss an edit that keeps both
    size and mtime; the contents decide what runs, so they are hashed.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    version = getattr(sys.modules.get("cute_bind"), "__version__", "?")
    return f"{version}+{_sources_digest(root)}"


@functools.lru_cache(maxsize=None)
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", "rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
        for line in head.splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()


def environment() -> dict[str, str]:
    """What identifies the compiler and the machine in every key (also written into each entry's header)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("CUTE_DSL_")}
    return {
        "format": str(FORMAT),
        "dsl": " ".join(dsl.compiler_identity()),
        "cute_bind": _cute_bind_sources(),
        "python": f"{sys.implementation.cache_tag} {sys.version.split()[0]}",
        "machine": f"{platform.system()} {platform.machine()} {_cpu_model()}",
        "dsl_env": ";".join(f"{k}={env[k]}" for k in sorted(env)),
    }


def entry_key(kernel: Any, compile_key: Any) -> tuple[str, list[str]]:
    """``(key, functions hashed)`` for one compile of ``kernel`` (a :class:`cute_bind.Kernel`).

    Raises :class:`Uncacheable` when something the compile depends on has no
    stable spelling and the kernel gives no ``cache_key=``.
    """
    user_key = getattr(kernel, "cache_key", None)
    h = _Hasher(lenient=user_key is not None)
    h.feed("format", str(FORMAT), "kernel", repr(kernel))
    for k, v in environment().items():
        h.feed(k, v)
    h.feed("compile", h.canon(compile_key))
    if user_key is not None:
        h.feed("cache_key", h.canon(user_key))
    for fn in dsl.traced_functions(kernel.fn) or [kernel.fn]:
        if not hasattr(fn, "__code__") and callable(getattr(type(fn), "__call__", None)):
            # a callable object whose __call__ is @cute.jit: its class's method, and the object's
            # own attributes (read while tracing as self.x), spelled like any other data
            h.feed("callable-object", _qualname(type(fn)), h.canon(dict(getattr(fn, "__dict__", {}))))
            fn = inspect.unwrap(type(fn).__call__)
        h.function(fn)
    return h.hexdigest(), h.depends
