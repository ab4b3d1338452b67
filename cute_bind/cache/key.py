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

Values are read by their exact type, never through the object's own code:
no ``repr``, ``str``, ``==``, ``hash``, ``__getattr__``/``__getattribute__``
or property of a value's class is called (a client's object may hold a
``cute.Layout`` of a finished trace, whose ``repr`` crashes the process).
A few standard library types whose ``repr`` is exact (``range``,
``Decimal``, paths...) are spelled by it; DSL numbers made in Python
(``cutlass.Int32(3)``) by their value. A name bound to any other object
cannot be seen: such a key raises :class:`Uncacheable` (CB608, the compile
is not stored) unless the kernel vouches for it with ``cache_key=``. So does
any failure while spelling (an exception, a recursion too deep): the key
never raises anything else into ``bind()``.
"""

from __future__ import annotations

import array
import enum
import functools
import gc
import hashlib
import inspect
import linecache
import marshal
import os
import platform
import sys
import types
import typing
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # read at run time from sys.modules, where a value of their types is
    import fractions
    import pathlib
    import re

    import torch

from .. import dsl
from .exact import (
    _F64,
    _MISSING,
    _MODULE_DICT,
    _TYPE_DICT,
    _TYPE_MODULE,
    _TYPE_MRO,
    _TYPE_QUALNAME,
    Exact,
    Uncacheable,
    _class_lookup,
    _generic_getattribute,
    _instance_dict,
    _loaded,
    _read,
    _state,
    _type_name,
    constexpr_key,
    constexpr_value,
    dataclass_field_names,
    exact_form,
)

__all__ = ["FORMAT", "Exact", "Uncacheable", "canonical", "constexpr_key", "constexpr_value", "entry_key", "environment", "exact_form"]

#: Bumped when the entry layout or the key derivation changes (old entries are then ignored).
FORMAT = 1

#: Modules whose code is covered by a version in :func:`environment` (never hashed by source).
_COVERED = frozenset({"cute_bind", "builtins", "__future__", "typing", "typing_extensions"})


class KernelLike(typing.Protocol):
    """What a key is made for: a :class:`cute_bind.Kernel`, or ``cute_bind.compile``'s stand-in for a
    ``cute.compile`` target. Its ``fn`` is traced; ``name`` and ``cache_key`` are read where it has them."""

    @property
    def fn(self) -> object: ...


#: callables whose ``__module__``/``__qualname__`` are the interpreter's own fields (no class can override them)
_PLAIN_CALLABLES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


def _one_of(t: type, types_: tuple[type, ...]) -> bool:
    """``t in types_`` by identity (``in`` would call ``==``, which a metaclass may define)."""
    return any(t is c for c in types_)


def _qualname(obj: object) -> str:
    """``module.qualname`` of a class or a function; of anything else, its class's (never a foreign attribute read)."""
    t = type(obj)
    if issubclass(t, type):
        return _type_name(typing.cast(type, obj))
    if _one_of(t, _PLAIN_CALLABLES):
        module = getattr(obj, "__module__", None)
        if module is None and t is not types.FunctionType:
            objclass = getattr(obj, "__objclass__", None)  # a slot wrapper or method descriptor: its class's module
            module = _TYPE_MODULE(objclass) if isinstance(objclass, type) else None
        qualname = getattr(obj, "__qualname__", None)
        return f"{module if type(module) is str else '?'}.{qualname if type(qualname) is str else '?'}"
    return _type_name(t)


def _covered_module(name: str | None) -> bool:
    """Modules whose behaviour is pinned by a version in the key: the DSL, the standard library, cute_bind,
    and the array and compiler libraries of :data:`_VERSIONED` (by their own version, :func:`_version_tag`)."""
    if not name:
        return False
    root = name.partition(".")[0]
    return root in _COVERED or root in _VERSIONED or root in sys.stdlib_module_names or dsl.is_dsl_module_name(name)


#: Libraries a traced function may call while tracing (a client asks ``torch.cuda.get_device_capability()``)
#: whose code is pinned by their version: their sources are not hashed (torch's hold thread-locals and
#: C state no key can spell), their version is fed where the key meets them. Packages not named here
#: (the kernel's own package, quack, flash_attn) are hashed by source.
_VERSIONED = frozenset({"torch", "numpy", "jax", "jaxlib", "triton", "tvm_ffi", "cupy", "einops", "ml_dtypes", "scipy"})


def _version_tag(name: str | None) -> str:
    """``@torch==2.13.0`` for a module of a :data:`_VERSIONED` library (its ``__version__``, read from the
    loaded module's dictionary), ``""`` for any other."""
    root = (name or "").partition(".")[0]
    if root not in _VERSIONED:
        return ""
    module = sys.modules.get(root)
    version = _MODULE_DICT(module).get("__version__") if module is not None else None
    return f"@{root}=={version if type(version) is str else '?'}"


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


#: per source file: (its text's SHA-256, {class qualname: (first line, last line)}); one parse per file and
#: text, where ``inspect.getsource`` parses the whole file again for every class (FlashAttention-4's key
#: read 28 classes: 1.3 s of its 1.9 s)
_CLASS_LINES: dict[str, tuple[bytes, dict[str, tuple[int, int]]]] = {}


def _class_index(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Every class of a module's source by qualname: its first line (its first decorator) and last line."""
    import ast

    index: dict[str, tuple[int, int]] = {}

    def walk(stmts: list[ast.stmt], prefix: str) -> None:
        # statements only: a class statement stands in a body, never inside an expression (walking
        # every expression node was most of a GEMM's first warm key, ~40,000 nodes for 7 files)
        for st in stmts:
            if isinstance(st, ast.ClassDef):
                qualname = prefix + st.name
                first = min([st.lineno, *(d.lineno for d in st.decorator_list)])
                index.setdefault(qualname, (first, st.end_lineno or st.lineno))
                walk(st.body, qualname + ".")
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(st.body, prefix + st.name + ".<locals>.")
            else:
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(st, field, None)
                    if type(inner) is list:
                        walk(inner, prefix)
                for clause in [*getattr(st, "handlers", ()), *getattr(st, "cases", ())]:  # except, match
                    walk(clause.body, prefix)

    walk(ast.parse("".join(lines)).body, "")
    return index


def _class_source(cls: type) -> str:
    """A class's source as ``inspect.getsource`` gives it (its decorators to its last line), with one parse
    per source file and text; ``inspect.getsource`` where the class is not found that way."""
    module = sys.modules.get(_TYPE_MODULE(cls) if type(_TYPE_MODULE(cls)) is str else "")
    filename = _MODULE_DICT(module).get("__file__") if module is not None else None
    qualname = _TYPE_QUALNAME(cls)
    if type(filename) is not str or not filename.endswith(".py") or type(qualname) is not str:
        return inspect.getsource(cls)
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    if not lines:
        return inspect.getsource(cls)
    digest = hashlib.sha256("".join(lines).encode("utf-8", "surrogatepass")).digest()
    cached = _CLASS_LINES.get(filename)
    if cached is None or cached[0] != digest:
        cached = _CLASS_LINES[filename] = (digest, _class_index(lines))
    span = cached[1].get(qualname)
    if span is None:
        return inspect.getsource(cls)
    return "".join(lines[span[0] - 1 : span[1]])


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
        #: plain objects spelled so far (by id: each is alive while the key is made), and those being
        #: spelled now: an object graph shared many times is spelled once, a cycle is refused at once
        self._objects: dict[int, str] = {}
        self._spelling: set[int] = set()
        self.depends: list[str] = []  # functions hashed by source, for the entry's header

    def feed(self, *parts: str) -> None:
        for p in parts:
            b = p.encode("utf-8", "surrogatepass")
            self._h.update(len(b).to_bytes(8, "little"))
            self._h.update(b)

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    # -------------------------------------------------------------- functions
    def function(self, obj: object) -> None:
        if id(obj) in self._seen:
            self.feed("seen", _qualname(obj))
            return
        self._seen.add(id(obj))
        code = dsl.source_code(obj)
        # a function, or an object that reads as one (it has a __code__); any other raises below (Uncacheable)
        fn = typing.cast(types.FunctionType, obj)
        self.depends.append(_qualname(fn))
        self.feed("function", _qualname(fn), _code_source(code))  # decorators included: the block starts at the first
        self.feed("defaults", self.canon(fn.__defaults__), self.canon(fn.__kwdefaults__))
        self.feed("annotations", self.canon({k: self.annotation(v) for k, v in fn.__annotations__.items()}))
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

    def named(self, label: str, value: object, names: set[str]) -> None:
        """One name a traced function can read: recurse into code, spell values."""
        t = type(value)
        if issubclass(t, types.ModuleType):
            if t is not types.ModuleType and _class_lookup(t, "__getattribute__") is not _class_lookup(
                types.ModuleType, "__getattribute__"
            ):
                # a lazy module (importlib.util.LazyLoader) loads on an attribute read: that runs its code
                raise Uncacheable(f"{label} is a module of class {_type_name(t)}, whose attribute reads run code")
            contents = _MODULE_DICT(value)
            module_name = contents.get("__name__")
            module_name = module_name if type(module_name) is str else "?"
            self.feed("module", label, module_name + _version_tag(module_name))
            if not _covered_module(module_name) and id(value) not in self._seen:
                self._seen.add(id(value))
                for attr in sorted(names):
                    if attr in contents:
                        self.named(f"{module_name}.{attr}", contents[attr], names)
            return
        try:
            spelled = self.canon(value)
        except Uncacheable as exc:
            raise Uncacheable(f"{label}: {exc}") from None
        self.feed("name", label, spelled)

    def canon(self, v: object, depth: int = 0) -> str:
        """A stable spelling of a value; code is hashed recursively; raises :class:`Uncacheable`.

        Only the value's exact type decides how it is read, and no method of the value's own class is
        called (no ``repr``, ``str``, ``==``, ``hash``, attribute hook or property): see :func:`_read`.
        """
        if depth > 12:
            raise Uncacheable("a value nested too deeply to spell")
        t = type(v)
        if v is None or t is bool or t is str or t is bytes:
            return f"{t.__name__}:{v!r}"
        if type(v) is int:
            try:
                return f"int:{v!r}"
            except ValueError:  # more digits than sys.get_int_max_str_digits() allows: hexadecimal is never limited
                return f"int:{hex(v)}"
        if t is float:  # by its bits: repr gives -0.0 and 0.0 apart, but every NaN the same spelling
            return "float:" + _F64.pack(v).hex()
        if type(v) is complex:
            return "complex:" + _F64.pack(v.real).hex() + _F64.pack(v.imag).hex()
        if type(v) is Exact:  # a Constexpr value in a compile key
            return self.canon(v.value, depth)
        if type(v) is tuple or type(v) is list:
            return f"{t.__name__}(" + ",".join(self.canon(x, depth + 1) for x in v) + ")"
        if issubclass(t, tuple) and isinstance(v, tuple):  # a named tuple (isinstance: t's own check, no __class__ read)
            # its items, read by tuple's own methods (not an __iter__ of its class)
            items = [tuple.__getitem__(v, i) for i in range(tuple.__len__(v))]
            return f"{self._class(t)}(" + ",".join(self.canon(x, depth + 1) for x in items) + ")"
        array = self._array(v, t, depth)
        if array is not None:
            return array
        if type(v) is set or type(v) is frozenset:
            return f"{t.__name__}(" + ",".join(sorted(self.canon(x, depth + 1) for x in v)) + ")"
        if type(v) is dict:
            return "dict(" + ",".join(sorted(f"{self.canon(k, depth + 1)}={self.canon(x, depth + 1)}" for k, x in v.items())) + ")"
        if issubclass(t, enum.Enum):
            name = _read(v, t, "_name_")
            if type(name) is not str:
                raise Uncacheable(f"a member of {_type_name(t)} without a name")
            return f"enum:{_type_name(t)}.{name}"
        if issubclass(t, type) and isinstance(v, type):  # a class (isinstance: t's own check, no __class__ read)
            return self._class(v)
        if type(v) is staticmethod or type(v) is classmethod:
            return self.canon(v.__func__, depth + 1)
        if type(v) is property:
            return "property(" + ",".join(self.canon(f, depth + 1) for f in (v.fget, v.fset, v.fdel)) + ")"
        if type(v) is functools.partial:
            return f"partial({self.canon(v.func, depth + 1)},{self.canon(v.args, depth + 1)},{self.canon(v.keywords, depth + 1)})"
        if _one_of(t, _PLAIN_CALLABLES) and t is not types.FunctionType:
            return f"builtin:{_qualname(v)}"
        if type(v) is types.MethodType:
            return f"method({self.canon(v.__func__, depth + 1)},{self.canon(v.__self__, depth + 1)})"
        if t is types.FunctionType or (callable(v) and _has_wrapped(v, t)):
            chain = dsl.traced_functions(v)
            if chain:
                for f in chain:
                    if _covered_module(getattr(f, "__module__", None)):
                        self.feed("covered", _qualname(f) + _version_tag(getattr(f, "__module__", None)))
                    else:
                        self.function(f)
                return "code:" + "|".join(_qualname(f) for f in chain)
            if t is types.FunctionType and _covered_module(v.__module__ if type(v.__module__) is str else None):
                return f"covered:{_qualname(v)}{_version_tag(v.__module__)}"  # the DSL's own function (or the standard library's): its version covers it
        if _compiled_function(t):
            # a compiled function held by a name the trace can see (a package's in-memory cache of its compiles):
            # the DSL cannot trace into one, so what it holds never changes a compile; spelled by its kind
            return f"compiled-function:{_type_name(t)}"
        fields = _class_lookup(t, "__dataclass_fields__")
        if fields is not _MISSING and type(fields) is dict:  # a dataclass instance: its fields, read as plain attributes
            names = dataclass_field_names(fields)
            try:
                values = [_read(v, t, n) for n in names]
            except Uncacheable:
                if self.lenient:
                    return f"opaque:{_type_name(t)}"
                raise
            spelled = ",".join(f"{n}={self.canon(x, depth + 1)}" for n, x in zip(names, values))
            return f"{self._class(t)}({spelled})"
        if type(v) is slice:
            return f"slice({self.canon((v.start, v.stop, v.step), depth + 1)})"
        known = _known_value(v, t)
        if known is not None:
            return known
        numeric = _dsl_number(v, t)
        if numeric is not None:
            return f"dsl-number:{_type_name(t)}:{self.canon(numeric, depth + 1)}"
        if _plain_class(t):
            # an object of a client's own Python class held by what the trace reads (quack's Hadamard
            # operator holds a HadamardTransformPlan): its class (source and methods) and its own
            # attributes, as for the callable object itself (_feed_object)
            return self._plain_object(v, t, depth)
        if self.lenient:
            return f"opaque:{_type_name(t)}"
        raise Uncacheable(
            f"a {_type_name(t)} value: the key spells numbers, strings, containers, enums, dataclasses, arrays, classes "
            "and functions, and never calls an object's own repr or methods"
        )

    def annotation(self, annotation: object) -> str:
        """An annotation's spelling: as a value, where that is refused its type (annotations decide slot kinds,
        which the compile key holds)."""
        if type(annotation) is str:
            return f"str:{annotation!r}"
        t = type(annotation)
        module = _TYPE_MODULE(t)
        typing_module = (type(module) is str and module == "typing") or t is types.GenericAlias or t is types.UnionType
        if typing_module:
            origin, args = typing.get_origin(annotation), typing.get_args(annotation)
            if origin is None:  # TypeVar, ForwardRef, a special form: typing's own repr names them
                return f"typing:{_type_name(t)}:{annotation!r}"
            parts = [self.annotation(origin), *(self.annotation(a) for a in args)]  # Annotated's metadata among the args
            return f"typing:{_type_name(t)}[" + ",".join(parts) + "]"
        if type(annotation) is list:  # Callable[[...], ...]'s argument list
            return "list[" + ",".join(self.annotation(a) for a in annotation) + "]"
        try:
            return self.canon(annotation)
        except Uncacheable:
            return f"opaque:{_type_name(t)}"

    def _array(self, v: object, t: type, depth: int) -> str | None:
        """Arrays by their bytes, dtype, shape and strides (a repr rounds values and elides long arrays); None: not one.

        A NumPy array (or scalar) is read through ``np.ndarray``'s (``np.generic``'s) own descriptors and
        methods, so a subclass's overrides never run; a torch tensor only where its class adds nothing
        that would run on the reads (see :meth:`_tensor`)."""
        if type(v) is bytearray:
            return "bytearray:" + hashlib.sha256(v).hexdigest()
        if type(v) is memoryview:
            try:
                return f"memoryview:{v.format}:{v.shape}:" + hashlib.sha256(v.tobytes()).hexdigest()
            except ValueError:  # released
                raise Uncacheable("a released memoryview") from None
        if type(v) is array.array:
            return f"array:{v.typecode}:" + hashlib.sha256(v.tobytes()).hexdigest()
        np = _loaded("numpy")
        if np is not None and issubclass(t, np.generic):  # np.float32(-0.0): by its bits
            g = np.generic
            return f"numpy:{_type_name(t)}:{g.dtype.__get__(v).str}:{g.tobytes(v).hex()}"
        if np is not None and issubclass(t, np.ndarray):
            a = np.ndarray
            dt = a.dtype.__get__(v)
            dtype = dt.str + (repr(dt.descr) if dt.fields else "")
            shape, strides = a.shape.__get__(v), a.strides.__get__(v)
            if dt.hasobject:  # its bytes are addresses: spell the objects
                body = self.canon(a.tolist(v), depth + 1)
            else:
                body = hashlib.sha256(a.tobytes(v)).hexdigest()  # C order, whatever the strides
            extra = ""
            if t is not np.ndarray:  # a subclass's own state (a masked array's mask)
                state = _instance_dict(v, t)
                if state is not None:
                    extra = self.canon(dict(state), depth + 1)
            return f"ndarray:{_type_name(t)}:{dtype}:{shape}:{strides}:{body}:{extra}"
        torch_ = _loaded("torch")
        if torch_ is not None and issubclass(t, torch_.Tensor):
            return self._tensor(torch_, typing.cast("torch.Tensor", v), t)
        return None

    def _tensor(self, torch: types.ModuleType, v: torch.Tensor, t: type) -> str:
        """A CPU torch tensor by its bytes; any other is refused.

        Reading another device's tensor would copy it to the host and wait for
        the device on every key made, and a traced function that names a device
        tensor more likely bakes in its address, which no key can spell across
        processes: it needs ``cache_key=`` (or to be a parameter). A subclass is
        read only when no class of its outside torch defines anything (methods,
        ``__torch_function__``, properties): its reads would run that code.
        """
        for klass in _TYPE_MRO(t):
            module = _TYPE_MODULE(klass)
            if klass is object or (type(module) is str and module.partition(".")[0] == "torch"):
                continue
            own = [n for n in _TYPE_DICT(klass) if n not in _INERT_CLASS_NAMES]
            if own:
                if self.lenient:
                    return f"opaque:{_type_name(t)}"
                raise Uncacheable(
                    f"a torch tensor of class {_type_name(t)}, which defines {sorted(own)[:3]} (reading it would run that code)"
                )
        if v.device.type != "cpu" or v.layout is not torch.strided or v.is_quantized:
            if self.lenient:
                return f"opaque:{_type_name(t)}"
            raise Uncacheable(f"a torch tensor on {v.device} ({v.layout}): only a dense CPU tensor is spelled by its bytes")
        data = v.detach().resolve_conj().resolve_neg().contiguous()
        raw = data.reshape(-1).view(torch.uint8).numpy().tobytes() if data.numel() else b""
        return f"tensor:{_type_name(t)}:{v.dtype}:{tuple(v.shape)}:{tuple(v.stride())}:" + hashlib.sha256(raw).hexdigest()

    def _plain_object(self, v: object, t: type, depth: int) -> str:
        known = self._objects.get(id(v))
        if known is not None:
            return known
        if id(v) in self._spelling:  # parent <-> child references: no finite spelling
            if self.lenient:
                return f"opaque:{_type_name(t)}"
            raise Uncacheable(f"a {_type_name(t)} object that refers back to itself")
        self._spelling.add(id(v))
        try:
            state = _state(v, t)
            spelled = f"object:{self._class(t)}{self._class_data(t, depth)}({self.canon(state, depth + 1)})"
        except Uncacheable:
            if self.lenient:
                return f"opaque:{_type_name(t)}"
            raise
        finally:
            self._spelling.discard(id(v))
        self._objects[id(v)] = spelled
        return spelled

    def _class_data(self, t: type, depth: int, lenient: bool = False) -> str:
        """The data attributes of a plain object's classes (``offset = 3`` in a class body, read as
        ``obj.offset``): the class source has their first values, not what the process set since.
        ``lenient``: one that cannot be spelled is named by its type."""
        parts = []
        for klass in _TYPE_MRO(t)[:-1]:
            if not _client_python_class(klass):
                continue  # a builtin's or the DSL's class: its version covers what it holds
            for name, member in sorted(_TYPE_DICT(klass).items(), key=lambda item: str(item[0])):
                if type(name) is not str or (name.startswith("__") and name.endswith("__")) or type(member) in _CLASS_CODE:
                    continue  # Python's own entries; methods and descriptors are spelled by _class
                try:
                    parts.append(f"{name}={self.canon(member, depth + 1)}")
                except Uncacheable:
                    if not lenient:
                        raise
                    parts.append(f"{name}=opaque:{_type_name(type(member))}")
        return "[" + ",".join(parts) + "]"

    def _class(self, cls: type) -> str:
        name = _type_name(cls)
        module = _TYPE_MODULE(cls) if type(_TYPE_MODULE(cls)) is str else None
        if _covered_module(module) or id(cls) in self._seen:
            return f"type:{name}{_version_tag(module)}"
        self._seen.add(id(cls))
        try:
            source = _class_source(cls)
        except (OSError, TypeError):
            source = ""  # a class without Python source (an extension type): its module's version covers it
        except Exception as exc:  # a source file changed into something ast cannot parse, a class that lies about itself
            raise Uncacheable(f"the source of class {name} cannot be read ({_type_name(type(exc))})") from None
        self.feed("class", name, source)
        for member_name, member in sorted(_TYPE_DICT(cls).items(), key=lambda item: str(item[0])):
            mt = type(member)
            if mt is types.FunctionType or mt is staticmethod or mt is classmethod or mt is property:
                self.feed("member", str(member_name), self.canon(member, 1))
        return f"type:{name}"


#: what every class's own dictionary holds without defining behaviour
_INERT_CLASS_NAMES = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__", "__slots__"})


#: class-dictionary entries that are code or attribute machinery, not data
_CLASS_CODE = (
    types.FunctionType,
    staticmethod,
    classmethod,
    property,
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
)
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (or type()), not by C code
_TYPE_FLAGS = type.__dict__["__flags__"].__get__


def _client_python_class(klass: type) -> bool:
    """Whether ``klass`` was made by a class statement (not C code) in a module whose version does not
    cover it (not the DSL's, the standard library's or cute_bind's)."""
    module = _TYPE_MODULE(klass)
    return bool(_TYPE_FLAGS(klass) & _HEAP_TYPE) and type(module) is str and not _covered_module(module)


def _plain_class(t: type) -> bool:
    """Whether ``t`` is a client's own Python class whose instances are spelled by their attributes:
    every class of its MRO but ``object`` made by a class statement (no builtin or extension base,
    whose instances hold state no attribute shows) outside the modules whose version covers them
    (the DSL's objects may hold IR handles), no metaclass of its own and no ``__getattr__`` or
    ``__getattribute__`` (attributes computed by code when read)."""
    if type(t) is not type:  # a metaclass of its own may change how attributes resolve
        return False
    mro = _TYPE_MRO(t)
    if len(mro) < 2:  # object() itself: a sentinel, whose identity is all it has
        return False
    for klass in mro[:-1]:
        if not _client_python_class(klass):
            return False
        own = _TYPE_DICT(klass)
        if "__getattr__" in own or "__getattribute__" in own:  # attributes made by code, not held
            return False
    return mro[-1] is object


def _has_wrapped(v: object, t: type) -> bool:
    """Whether ``v`` carries ``__wrapped__`` (a decorator's wrapper) in its own dictionary or its class's, and
    reading it runs no code of its class (no ``__getattribute__`` of its own)."""
    if t is not types.FunctionType and not _generic_getattribute(t):
        return False
    if _class_lookup(t, "__wrapped__") is not _MISSING:
        return True
    try:
        d = _instance_dict(v, t)
    except Uncacheable:
        return False
    return d is not None and "__wrapped__" in d


def _compiled_function(t: type) -> bool:
    """Whether ``t`` is a class of compiled functions: the DSL's (``cute.compile``'s result, its executor),
    ``tvm_ffi.Function`` (a reloaded one), or a class that says it stands for one (``__cute_bind_compiled__``,
    as :class:`~cute_bind.cache.CachedFunction`). Decided by the class, never by the object's own code."""
    if _class_lookup(t, "__cute_bind_compiled__") is not _MISSING:
        return True
    tvm_ffi = sys.modules.get("tvm_ffi")
    function = getattr(tvm_ffi, "Function", None) if tvm_ffi is not None else None
    if isinstance(function, type) and issubclass(t, function):
        return True
    executor = sys.modules.get("cutlass.base_dsl.jit_executor")
    for name in ("JitCompiledFunction", "JitExecutor"):
        cls = getattr(executor, name, None) if executor is not None else None
        if isinstance(cls, type) and issubclass(t, cls):
            return True
    return False


_TORCH_DTYPES: dict[int, str] = {}


def _torch_dtype_names(torch_: types.ModuleType) -> dict[int, str]:
    """``id(dtype) -> name`` for the dtypes torch's module binds (the least name of aliases); read once
    (the dtypes are torch's own objects, alive as long as the module)."""
    if not _TORCH_DTYPES:
        dtype = _MODULE_DICT(torch_).get("dtype")
        for name, value in sorted(_MODULE_DICT(torch_).items(), key=lambda item: str(item[0]), reverse=True):
            if type(value) is dtype and type(name) is str:
                _TORCH_DTYPES[id(value)] = name  # reverse order: the least name of aliases is written last
    return _TORCH_DTYPES


def _known_value(v: object, t: type) -> str | None:
    """The spelling of a value of a standard library type whose ``repr`` is exact and runs no foreign code
    (exact types only: a subclass may redefine it); None: not one."""
    if type(v) is range:
        return f"range:{v.start!r}:{v.stop!r}:{v.step!r}"
    if v is Ellipsis or v is NotImplemented:
        return f"const:{v!r}"
    # the modules as this process loaded them (never imported here: a value of their types means they are)
    decimal_ = sys.modules.get("decimal")
    if decimal_ is not None and t is decimal_.Decimal:
        return f"decimal:{v!r}"
    fractions_ = sys.modules.get("fractions")
    if fractions_ is not None and t is fractions_.Fraction:
        fraction = typing.cast("fractions.Fraction", v)
        if type(fraction.numerator) is int and type(fraction.denominator) is int:
            return f"fraction:{hex(fraction.numerator)}/{hex(fraction.denominator)}"
    pathlib_ = sys.modules.get("pathlib")
    if pathlib_ is not None and _one_of(t, (pathlib_.PurePosixPath, pathlib_.PureWindowsPath, pathlib_.PosixPath, pathlib_.WindowsPath)):
        return f"path:{t.__name__}:{os.fspath(typing.cast('pathlib.PurePath', v))!r}"
    driver = sys.modules.get("cuda.bindings.driver")
    if driver is not None and t is getattr(driver, "CUstream", None):
        # a stream default (CUTLASS's sgemm: ``stream = cuda.CUstream(CU_STREAM_DEFAULT)``): the special
        # handles (0 the default stream, 1 legacy, 2 per-thread) mean the same in every process; any
        # other handle is this process's own stream
        handle = int(typing.cast("typing.SupportsInt", v))
        if handle in (0, 1, 2):
            return f"custream:{handle}"
    torch_ = sys.modules.get("torch")
    if torch_ is not None and t is _MODULE_DICT(torch_).get("dtype"):
        # a torch dtype (quack's GEMM classes key a table by them): by its name in torch's module, found
        # by identity (its repr is torch's code), one name for aliases (torch.float is torch.float32)
        name = _torch_dtype_names(torch_).get(id(v))
        if name is not None:
            return f"torch-dtype:{name}"
    re_ = sys.modules.get("re")
    if re_ is not None and t is re_.Pattern:
        pattern = typing.cast("re.Pattern[str] | re.Pattern[bytes]", v)
        return f"pattern:{pattern.flags}:{pattern.pattern!r}"
    return None


def _dsl_number(v: object, t: type) -> object:
    """A DSL number made in Python (``cutlass.Int32(3)``): its plain Python value; None: not one (a number
    that holds an MLIR value from a trace has no value to read)."""
    if not dsl.is_numeric_type(t) or not _covered_module(_TYPE_MODULE(t) if type(_TYPE_MODULE(t)) is str else None):
        return None
    try:
        d = _instance_dict(v, t)
    except Uncacheable:
        return None
    value = None if d is None else d.get("value")
    return value if _one_of(type(value), (int, float, bool)) else None


def canonical(value: object) -> str:
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


#: ``CUTE_DSL_*`` settings that say where the DSL keeps its own caches and what it logs or prints, never
#: what it compiles (the DSL's own JIT key leaves them out: ``affects_compile=False`` in 4.8). A package
#: sets some per user (flashinfer points ``CUTE_DSL_CACHE_DIR`` into the home folder): in the key they
#: made the same compile miss across workspaces and refused another machine's bundle. The artifact
#: settings (``KEEP``, ``DUMP_DIR``) stay in: they ask for files a served compile does not write.
_NOT_COMPILE_SETTINGS = frozenset(
    f"CUTE_DSL_{name}"
    for name in (
        "CACHE_DIR",
        "NO_CACHE",
        "JIT_CACHE_MAX_ELEMS",
        "DISABLE_FILE_CACHING",
        "FILE_CACHING_CAPACITY",
        "LOG_TO_CONSOLE",
        "LOG_TO_FILE",
        "LOG_LEVEL",
        "JIT_TIME_PROFILING",
        "PRINT_AFTER_PREPROCESSOR",
        "PRINT_IR",
        "SHOW_STACKTRACE",
        "FILTER_STACKTRACE",
        "WARNINGS_IGNORE",
    )
)


def environment() -> dict[str, str]:
    """What identifies the compiler and the machine in every key (also written into each entry's header)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("CUTE_DSL_") and k not in _NOT_COMPILE_SETTINGS}
    return {
        "format": str(FORMAT),
        "dsl": " ".join(dsl.compiler_identity()),
        "cute_bind": _cute_bind_sources(),
        "python": f"{sys.implementation.cache_tag} {sys.version.split()[0]}",
        "machine": f"{platform.system()} {platform.machine()} {_cpu_model()}",
        "dsl_env": ";".join(f"{k}={env[k]}" for k in sorted(env)),
    }


def _traced(obj: object) -> list[object]:
    """:func:`dsl.traced_functions` of a function or a wrapper that carries ``__wrapped__`` (read without running
    the object's code); ``[]`` for any other object (a callable object's attributes are never asked for)."""
    t = type(obj)
    if t is types.FunctionType or _has_wrapped(obj, t):
        found: list[object] = list(dsl.traced_functions(obj))
        return found
    return []


def _first_unspelled(h: _Hasher, state: dict[str, object]) -> str | None:
    """``"self.x: why"`` for the first attribute of a callable object the key cannot spell (for the message)."""
    for name, value in state.items():
        try:
            h.canon(value)
        except Uncacheable as exc:
            return f"self.{name if type(name) is str else '?'}: {exc}"
    return None


def entry_key(kernel: KernelLike, compile_key: object) -> tuple[str, list[str]]:
    """``(key, functions hashed)`` for one compile of ``kernel`` (a :class:`cute_bind.Kernel`).

    Raises :class:`Uncacheable` when something the compile depends on has no
    stable spelling and the kernel gives no ``cache_key=``; also when spelling
    it fails in any other way (an exception, a recursion too deep): the
    compile is then not cached, and ``bind()`` goes on (CB608).
    """
    # the collector paused while the key is made (it parses source files: ~10^5 objects per module):
    # in a process whose heap a client's earlier compiles filled, every collection they trigger walks
    # all of it (quack's first GEMM key there: 287 ms, 42 ms paused; 25-60 ms in a fresh process)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _entry_key(kernel, compile_key)
    except Uncacheable:
        raise
    except RecursionError:
        raise Uncacheable("the functions and values the kernel reaches nest too deeply to spell") from None
    except Exception as exc:
        # never str() or repr() of the exception: it may come from (and be) a foreign object
        raise Uncacheable(f"spelling the compile's inputs raised {_type_name(type(exc))}") from exc
    finally:
        if collecting:
            gc.enable()


def _entry_key(kernel: KernelLike, compile_key: object) -> tuple[str, list[str]]:
    user_key = getattr(kernel, "cache_key", None)
    h = _Hasher(lenient=user_key is not None)
    # the kernel by its name and class, never its repr (a callable object's repr is its client's code)
    name = getattr(kernel, "name", None)
    h.feed("format", str(FORMAT), "kernel", name if type(name) is str else "?", _type_name(type(kernel)))
    for k, v in environment().items():
        h.feed(k, v)
    h.feed("compile", h.canon(compile_key))
    if user_key is not None:
        h.feed("cache_key", h.canon(user_key))
    target = kernel.fn
    if type(target) is types.MethodType:
        # a bound method (``cute.compile(op.run, ...)``): the DSL traces its function with the object as
        # ``self``, so the object's own attributes and class are in the key as for a callable object
        _feed_object(h, target.__self__, "bound-object")
        target = target.__func__
    for fn in _traced(target) or [target]:
        t = type(fn)
        call = _class_lookup(t, "__call__") if t is not types.FunctionType else _MISSING
        if call is not _MISSING:
            # a callable object whose __call__ is @cute.jit: its class (source and methods) and the object's
            # own attributes (read while tracing as self.x), spelled like any other data, read without
            # running the object's code (a client's operator object may hold layouts of a dead MLIR context)
            _feed_object(h, fn, "callable-object")
            fn = inspect.unwrap(typing.cast("typing.Callable[..., object]", call))
        h.function(fn)
    return h.hexdigest(), h.depends


def _feed_object(h: _Hasher, obj: object, label: str) -> None:
    """An object a traced method reads as ``self``: its class (source and methods), its classes' data
    attributes and its own attributes."""
    t = type(obj)
    state = _state(obj, t)
    try:
        spelled = h.canon(state)
    except Uncacheable as exc:
        raise Uncacheable(f"{_type_name(t)} object: {_first_unspelled(h, state) or exc}") from None
    # its classes' data attributes as the process has them (``Op.tile = 128`` set at run time); one the
    # key cannot spell is named by its type, as before class data was read (a client's class-level
    # lock or registry must not stop serving its kernels)
    h.feed(label, h._class(t), h._class_data(t, 0, lenient=True), spelled)
