"""The entry key: everything a compile depends on, hashed; a key that cannot be made stable is refused.

What goes in (see docs/concepts/cache.md):

- the source of the kernel's function and, recursively, of every function it
  can reach by name (its globals, its closure, attributes of user modules it
  names, methods of user classes): the DSL preprocesses and traces exactly
  that source; a function without source is hashed by its bytecode;
- the values of the plain constants those functions name (numbers, strings,
  tuples, enums...), read when the key is made, i.e. when the DSL would read
  them while tracing; default values and annotations;
- the compile key ``bind()`` computes (each slot's specialization, Constexpr
  values, target architecture, compile options) and the kernel's own
  ``cache_key=``;
- the environment: DSL version and CUDA variant, cute_bind's version and the
  hash of its sources, Python version, machine, CPU model and every
  ``CUTE_DSL_*`` setting.

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
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from .. import _dsl

__all__ = ["FORMAT", "Uncacheable", "entry_key", "environment", "canonical"]

#: Bumped when the entry layout or the key derivation changes (old entries are then ignored).
FORMAT = 1

#: Modules whose code is covered by a version in :func:`environment` (never hashed by source).
_COVERED = frozenset({"cute_bind", "builtins", "__future__", "typing", "typing_extensions"})


class Uncacheable(Exception):
    """The compile depends on something the key cannot spell; ``args[0]`` says what."""


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _covered_module(name: str | None) -> bool:
    """Modules whose behaviour is pinned by a version in the key: the DSL, the standard library, cute_bind."""
    if not name:
        return False
    root = name.partition(".")[0]
    return root in _COVERED or root in sys.stdlib_module_names or _dsl.is_dsl_module_name(name)


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
        code = _dsl.source_code(fn)
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
        if v is None or t in (bool, int, float, complex, str, bytes):
            return f"{t.__name__}:{v!r}"
        if t in (tuple, list):
            return f"{t.__name__}(" + ",".join(self.canon(x, depth + 1) for x in v) + ")"
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
            chain = _dsl.traced_functions(v)
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


@functools.lru_cache(maxsize=None)
def _cute_bind_sources() -> str:
    """cute_bind's version and a hash of its sources: a changed checkout is another compiler.

    Hashing every source costs milliseconds, so the hash is remembered in a
    small file under the temporary folder, named after the sources' sizes and
    modification times (what Python's own bytecode cache trusts too).
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files: list[tuple[str, str, os.stat_result]] = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                try:
                    files.append((os.path.relpath(path, root), path, os.stat(path)))
                except OSError:
                    continue
    files.sort()
    stamp = hashlib.sha256()
    for rel, _, st in files:
        stamp.update(f"{rel}:{st.st_size}:{st.st_mtime_ns};".encode())
    memo = Path(tempfile.gettempdir()) / f"cute_bind-sources-{stamp.hexdigest()[:32]}"
    try:
        digest = memo.read_text().strip()
    except OSError:
        digest = ""
    if len(digest) != 16:
        h = hashlib.sha256()
        for rel, path, _ in files:
            h.update(rel.encode())
            try:
                with open(path, "rb") as f:
                    h.update(f.read())
            except OSError:
                h.update(b"?")
        digest = h.hexdigest()[:16]
        try:
            tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
            tmp.write_text(digest)
            os.replace(tmp, memo)
        except OSError:
            pass
    version = getattr(sys.modules.get("cute_bind"), "__version__", "?")
    return f"{version}+{digest}"


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
        "dsl": " ".join(_dsl.compiler_identity()),
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
    for fn in _dsl.traced_functions(kernel.fn) or [kernel.fn]:
        if not hasattr(fn, "__code__") and callable(getattr(type(fn), "__call__", None)):
            # a callable object whose __call__ is @cute.jit: its class's method, and the object's
            # own attributes (read while tracing as self.x), spelled like any other data
            h.feed("callable-object", _qualname(type(fn)), h.canon(dict(getattr(fn, "__dict__", {}))))
            fn = inspect.unwrap(type(fn).__call__)
        h.function(fn)
    return h.hexdigest(), h.depends
