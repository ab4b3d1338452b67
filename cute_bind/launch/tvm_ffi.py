"""Prepared launches of functions compiled with ``cute.compile(..., options="--enable-tvm-ffi")``.

A TVM-FFI compiled function is called with torch tensors (any type offering
the DLPack exchange API), Python scalars and ``None``; its stream is either an
argument or, compiled with ``make_fake_stream(use_tvm_ffi_env_stream=True)``,
the TVM-FFI environment stream, which the TVM-FFI call sets to the tensors'
current stream (``torch.cuda.current_stream()``) for the call.

Its entry decodes and checks every argument itself (dtype, rank, shapes,
strides, alignment, device, integer ranges, constants compiled in), so
preparing it needs no descriptor of ours: ``prepare()`` classifies each
argument by its Python type once, as TVM-FFI's own argument setters class it
(a tensor; an int, bool, float or None; an object TVM-FFI writes as an int or
float, such as the DSL's ``cutlass.Int32(-100)``; a constant structure, a
tuple, list or NamedTuple of those scalars such as FlashAttention-4's
``AuxData(None, None)``, whose TVM-FFI array is built once), builds the
argument array, and a launch rewrites it in place and calls the entry
directly (``_ctvmffi.c``): a tensor is read with one
``dltensor_from_py_object_no_sync`` call into the handle's own ``DLTensor``
(the TVM-FFI call instead allocates a managed tensor and a TVM-FFI tensor
object per argument), and for a tensor not on the CPU the producer's current
work stream is the environment stream during the call, as in the TVM-FFI call.

Identity: the entry receives the same values as from the TVM-FFI call (a
``DLTensor`` pointer instead of a TVM-FFI tensor object holding the same
``DLTensor`` fields); outputs are bitwise identical. Anything the fast path
does not take as it is (a keyword, another type, an int beyond int64) is the
direct call of the compiled function, so behaviour, errors included, is the
TVM-FFI call's: a DSL number is written through its protocol method as
TVM-FFI writes it, a constant structure passes the prepared array only when
the value is the prepared one or equal to it with the same types throughout
(else the call builds its own, and its entry takes or refuses the change).
An error the entry reports is raised as CB309, chained to the
exception the TVM-FFI call raises for it. Not replicated: the TVM-FFI call
also installs the producer's tensor allocator for the call; CuTe DSL
functions never allocate through it.

A bare ``tvm_ffi.Function`` (the DSL's exports loaded back with
``cute.runtime.load_module(path, enable_tvm_ffi=True)[name]``) is prepared the
same way, its parameters being the positional values given.

Without the C extension a prepared TVM-FFI launch is the compiled function's
own call (correct, no faster).
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from typing import TYPE_CHECKING, Any, Callable, Final, NamedTuple, NoReturn, Protocol, SupportsIndex

from .. import diagnostics as D
from .. import dsl
from ..slots import describe_value, dlpack
from . import native
from .lifecycle import HandleState, Lifecycle
from .spec import TvmConstantArg, TvmFfiLaunchSpec, TvmKeepAlive, TvmStructureArg, TvmStructureNode, TvmTensorArg

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from . import _ctvmffi

__all__ = ["PreparedTvmFfiLaunch", "prepare_tvm_ffi"]

_REQUIRED = object()


def _c_launcher_class() -> type[_ctvmffi.Launcher] | None:
    module = native.load("cute_bind.launch._ctvmffi")
    if module is None:
        return None
    launcher: type[_ctvmffi.Launcher] = module.Launcher
    return launcher


def _kind_of(value: object) -> tuple[str, _ArgSpec]:
    """``(kind, spec)`` of one argument, as TVM-FFI's setters class it; ``("", None)`` if not taken.

    Kinds: ``n`` None, ``b`` bool, ``i`` int (an exact int, a ``numbers.Integral``, or a type
    TVM-FFI writes through ``__tvm_ffi_int__`` such as ``cutlass.Int32``), ``f`` float (likewise
    ``numbers.Real`` and ``__tvm_ffi_float__``: ``cutlass.Float32``), ``T`` a tensor of a type with
    the DLPack exchange API (spec: its reader, work-stream function and type), ``o`` a constant
    structure (spec: see :func:`_constant_spec`).
    """
    if value is None:
        return "n", None
    if value.__class__ is bool:
        return "b", None
    if value.__class__ is int:
        return "i", None
    if value.__class__ is float:
        return "f", None
    tp = type(value)
    found = dlpack.exchange_table(tp)
    if found is not None:
        return "T", TvmTensorArg(found.address, found.work_stream, tp)
    try:
        kind, _ = dsl.tvm_ffi_scalar_kind(tp)
    except Exception:  # a type whose attribute lookups raise: not taken (the caller says CB308)
        kind = ""
    if kind:
        return kind, None
    if dsl.tvm_ffi_constant_leaves_ok(value):
        try:
            return "o", _constant_spec(value)
        except Exception:  # TVM-FFI could not build its array: not taken (CB308)
            return "", None
    return "", None


def _protocol_kind(tp: type) -> str:
    """For the C launcher, once per new type of an int/float argument: ``"i"``/``"f"`` when TVM-FFI
    writes ``tp`` through ``__tvm_ffi_int__``/``__tvm_ffi_float__`` (which the launcher calls
    itself), else ``""`` (an ``Integral``/``Real`` that is not an exact int or float: the call)."""
    try:
        kind, protocol = dsl.tvm_ffi_scalar_kind(tp)
    except Exception:  # a type whose attributes raise: not taken as is
        return ""
    return kind if protocol else ""


_PLAIN: Final = frozenset({int, float, bool, str, type(None)})


class _TvmNumber(Protocol):
    """A value TVM-FFI writes as a number through its type's protocol (``cutlass.Int32``, ``cutlass.Float32``)."""

    def __tvm_ffi_int__(self) -> object: ...
    def __tvm_ffi_float__(self) -> object: ...


def _protocol_value(value: object) -> object:
    """``value`` as TVM-FFI's call would read it through ``__tvm_ffi_int__``/``__tvm_ffi_float__``
    (called here), or ``value`` itself for anything else, and where the protocol raises or gives
    what TVM-FFI would convert further (a str): the call then reads it and refuses it its own way."""
    if type(value) in _PLAIN:
        return value
    kind = _protocol_kind(type(value))
    if not kind:
        return value
    try:
        number = typing.cast(_TvmNumber, value)  # _protocol_kind found the protocol on its type
        got = number.__tvm_ffi_int__() if kind == "i" else number.__tvm_ffi_float__()
    except Exception:  # noqa: BLE001 - the call raises it again, as a catalog error chained to it
        return value
    return got if type(got) is (int if kind == "i" else float) else value


def _structure_value(value: tuple[object, ...] | list[object], depth: int = 0) -> object:
    """A tuple/list argument with its protocol numbers converted (at any depth, as TVM-FFI's call
    converts every element), rebuilt around them with its own type (``tuple.__new__``: a
    NamedTuple's own ``__new__`` never runs, and TVM-FFI's array of it is the same); ``value``
    itself where nothing changed."""
    if depth >= dsl.TVM_FFI_CONSTANT_DEPTH:
        return value
    items = [_structure_value(v, depth + 1) if isinstance(v, (tuple, list)) else _protocol_value(v) for v in value]
    if all(a is b for a, b in zip(items, value)):
        return value
    return items if type(value) is list else tuple.__new__(type(value), items) if isinstance(value, tuple) else value


def _converted(value: object) -> object:
    """One argument with its protocol numbers converted, at any depth (structures rebuilt around them)."""
    if isinstance(value, (tuple, list)):
        return _structure_value(value)
    return _protocol_value(value)


def _protocols_converted(
    args: tuple[object, ...], kwargs: dict[str, object], unpacked: frozenset[str] = frozenset(), names: tuple[str, ...] = ()
) -> tuple[tuple[object, ...], dict[str, object]]:
    """The call's protocol numbers converted before the compiled call reads any tensor (the arguments'
    lifetime rule: TVM-FFI's own call reads each argument in order, so a ``__tvm_ffi_float__`` that
    frees an earlier tensor's storage would run after that tensor's address was read), inside
    structures too. The dataclasses of the ``unpacked`` parameters (``names``: the positional order)
    are unpacked first, all of them, as the call's keyword wrapper unpacks them before TVM-FFI
    converts anything; the call's own unpacking of the tuple it then gets gives the same tuple."""
    if unpacked:
        args = tuple(
            dsl.tvm_ffi_unpack(a) if i < len(names) and names[i] in unpacked and dsl.is_dataclass_instance(a) else a
            for i, a in enumerate(args)
        )
        kwargs = {k: dsl.tvm_ffi_unpack(v) if k in unpacked and dsl.is_dataclass_instance(v) else v for k, v in kwargs.items()}
    return tuple(_converted(a) for a in args), {k: _converted(v) for k, v in kwargs.items()}


def _snapshot(value: object) -> object:
    """A private copy of a constant structure that nobody else can change: lists copied (tuples,
    NamedTuples included, rebuilt around copied lists with their own type), immutable parts shared."""
    if type(value) is list:
        return [_snapshot(v) for v in value]
    if isinstance(value, tuple):
        items = [_snapshot(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return tuple.__new__(type(value), items)
    return value


def _constant_spec(value: object) -> TvmConstantArg:
    """The :class:`TvmConstantArg` ``(structure, array, handle, type_index)`` of a constant structure: the ``ffi.Array``
    TVM-FFI's call would build from it, built once; a launch passes it for a value equal to
    ``structure`` (a snapshot: a list given at prepare may change later, the array would not)."""
    structure = _snapshot(value)
    array, handle, type_index = dsl.tvm_ffi_constant(structure)
    return TvmConstantArg(structure, array, handle, type_index)


class _StructurePlan(NamedTuple):
    """A structure argument as prepared: its nodes in preorder (leaves without their addresses, which
    each launcher's own array gives) and the form TVM-FFI's call gives it, every leaf ``None``."""

    nodes: tuple[TvmStructureNode, ...]
    template: tuple[object, ...]


#: what prepare keeps per argument: a tensor's reader, a constant's array, a structure's plan, or None
_ArgSpec = TvmTensorArg | TvmConstantArg | _StructurePlan | None


_LEAF_KINDS: Final = frozenset("Tibfn")


def _structure_plan(value: object, unpack: bool, kernel: str, parameter: str) -> _StructurePlan:
    """The :class:`_StructurePlan` of a structure argument (a tuple or NamedTuple, a list, a dataclass
    the call unpacks; nested; leaves tensors, numbers and None), walked beside what the call hands
    TVM-FFI (``unpack``: the DSL's keyword wrapper unpacks this parameter's dataclasses first).

    Refused: a dataclass the call does not unpack (CB316: TVM-FFI passes it as an opaque Python
    object, which no compiled entry decodes); a leaf of another kind, an int beyond int64, a value
    nested deeper than :data:`dsl.TVM_FFI_CONSTANT_DEPTH`, a list subclass, a structure the
    unpacking rebuilds into other values (CB308)."""
    given = dsl.tvm_ffi_unpack(value) if unpack and dsl.is_dataclass_instance(value) else value
    nodes: list[TvmStructureNode | None] = []

    def at(path: str, got: str) -> str:
        return got if path == parameter else f"{got} at {path}"

    def refuse(path: str, got: str) -> Exception:
        return D.error(D.TVM_FFI_UNSUPPORTED_ARGUMENT, kernel=kernel, parameter=parameter, expected=_EXPECTED, got=at(path, got))

    def visit(v: object, u: object, depth: int, path: str) -> tuple[object, ...] | None:
        if depth > dsl.TVM_FFI_CONSTANT_DEPTH:
            raise refuse(path, f"a structure nested more than {dsl.TVM_FFI_CONSTANT_DEPTH} deep")
        k = len(nodes)
        if dsl.is_dataclass_instance(v):
            if u is v or not unpack:
                raise D.error(
                    D.TVM_FFI_OPAQUE_DATACLASS,
                    kernel=kernel,
                    parameter=parameter,
                    expected="the tuple of its fields in its place (what TVM-FFI's call passes for a dataclass it unpacks)",
                    got=at(path, f"a dataclass ({type(v).__name__})")
                    + (" inside a structure" if depth else ", which this function's call does not unpack"),
                )
            names = tuple(f.name for f in dataclasses.fields(typing.cast("DataclassInstance", v)))  # is_dataclass_instance
            if type(u) is not tuple or len(u) != len(names):
                raise refuse(path, f"a {type(v).__name__} that TVM-FFI's unpacking turns into {describe_value(u)}")
            nodes.append(None)
            form = tuple(visit(getattr(v, n), u[j], depth + 1, f"{path}.{n}") for j, n in enumerate(names))
            nodes[k] = TvmStructureNode("d", type(v), len(names), len(nodes) - k, names, 0, 0, 0)
            return form
        if isinstance(v, tuple) or type(v) is list:
            if type(u) is not type(v) or len(u) != len(v):
                raise refuse(path, f"a {type(v).__name__} that TVM-FFI's unpacking turns into {describe_value(u)}")
            nodes.append(None)
            form = tuple(visit(x, u[j], depth + 1, f"{path}[{j}]") for j, x in enumerate(v))
            op = "l" if type(v) is list else "t"
            nodes[k] = TvmStructureNode(op, type(v) if op == "t" else None, len(v), len(nodes) - k, None, 0, 0, 0)
            return form
        if u is not v:
            raise refuse(path, f"{describe_value(v)}, which TVM-FFI's unpacking replaces with {describe_value(u)}")
        kind, spec = _kind_of(v)
        if kind not in _LEAF_KINDS or (type(v) is int and not -(2**63) <= v < 2**63):
            raise refuse(path, describe_value(v) + (" (beyond int64)" if type(v) is int else ""))
        if kind == "T":
            tensor = typing.cast(TvmTensorArg, spec)  # _kind_of's spec of a tensor
            nodes.append(TvmStructureNode("T", tensor.type, 0, 1, None, 0, tensor.reader, tensor.work_stream))
        else:
            nodes.append(TvmStructureNode(kind, None, 0, 1, None, 0, 0, 0))
        return None

    template = visit(value, given, 0, parameter)
    assert template is not None  # a structure's form is a tuple (None is a leaf's)
    return _StructurePlan(tuple(n for n in nodes if n is not None), template)


def _structure_arg(plan: _StructurePlan) -> TvmStructureArg:
    """A launcher's own :class:`TvmStructureArg` of a prepared structure: a new array (a handle's
    launcher rewrites its leaves in place, so no two launchers share one) and the leaves' addresses."""
    array, handle, type_index, leaves = dsl.tvm_ffi_structure_array(plan.template)
    addresses = iter(leaves)
    nodes = tuple(n._replace(address=next(addresses)) if n.op in _LEAF_KINDS else n for n in plan.nodes)
    if next(addresses, None) is not None:
        raise ValueError("the structure's array holds more leaves than its nodes")
    return TvmStructureArg(nodes, array, handle, type_index)


class _TvmFfiPlan(NamedTuple):
    """What :func:`prepare_tvm_ffi` read of one compiled function and its arguments: a handle, and each
    of its clones, builds its own launcher (its own argument array) from it."""

    kernel: str
    compiled: Any
    entry: dsl.TvmFfiEntry
    kinds: str
    specs: tuple[_ArgSpec, ...]
    defaults: tuple[object, ...]


class PreparedTvmFfiLaunch(Lifecycle):
    """A prepared launch of one TVM-FFI compiled function.

    Made by ``cute_bind.prepare(compiled, *args)`` for a function compiled
    with ``--enable-tvm-ffi``. ``launch(*args, **kwargs)`` takes what calling
    ``compiled`` takes and returns what it returns (``None``). Threading: one
    thread at a time per handle (the argument array is the handle's);
    :meth:`clone` gives another thread its own. ``close()``, ``with``,
    :attr:`state` and :attr:`closed` are the handle lifecycle
    (:class:`~cute_bind.launch.lifecycle.Lifecycle`).
    """

    launch: Callable[..., object]
    """Launch with new argument values (an instance attribute: the C launcher's bound method)."""

    def __init__(self, plan: _TvmFfiPlan) -> None:
        self._plan = plan
        kernel, compiled, entry, kinds, specs, defaults = plan
        self._kernel = kernel
        self._compiled = compiled
        self._unpacked = entry.unpacked
        self._names = tuple(p.name for p in entry.parameters)
        #: lifecycle: the gate holds the compiled call (the Python path), the refusal once closed
        self._open(self._slow)
        launcher_class = _c_launcher_class()
        self._launcher: _ctvmffi.Launcher | None = None
        if launcher_class is None:
            self.launch = self._direct
            return
        self._launcher = launcher_class(
            TvmFfiLaunchSpec(
                entry=entry.safe_call,
                self_handle=entry.handle,
                set_stream=entry.set_stream,
                move_error=entry.move_error,
                dec_ref=entry.dec_ref,
                kinds=kinds.encode(),
                specs=tuple(_structure_arg(s) if isinstance(s, _StructurePlan) else s for s in specs),  # kind "s"
                defaults=defaults,
                required=_REQUIRED,
                slow=self._slow,
                fail=self._fail,
                classify=_protocol_kind,
                keep=TvmKeepAlive(entry.function, compiled),
                names=_keyword_names(compiled, entry),
            )
        )
        self.launch = self._launcher.launch
        self._native = self._launcher  # told at close (Lifecycle._refuse_launches)

    def _direct(self, *args: object, **kwargs: object) -> object:
        return self._gate[0](args, kwargs)

    def _slow(self, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        """The compiled call itself (what the C launcher does not take as is); its errors as catalog errors."""
        args, kwargs = _protocols_converted(args, kwargs, self._unpacked, self._names)
        try:
            return self._compiled(*args, **kwargs)
        except D.CuteBindError:
            raise
        except Exception as exc:
            raise self._call_error(args, kwargs, exc) from exc

    def _call_error(self, args: tuple[object, ...], kwargs: dict[str, object], exc: Exception) -> Exception:
        try:  # a wrong count or keyword, said as prepare() says it
            _bind(self._plan.entry, self._kernel, args, kwargs)
        except D.CuteBindError as bad:
            return bad
        # what the entry or its argument conversion refused (a dtype, a read-only or meta tensor...)
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        return D.error(
            D.TVM_FFI_CALL_ERROR,
            kernel=self._kernel,
            expected="arguments the compiled function takes",
            got=f"{type(exc).__name__}: {first}",
        )

    def _fail(self, kind: str, message: str, backtrace: str) -> None:
        cause = dsl.tvm_ffi_error(kind, message, backtrace)
        first = message.strip().splitlines()[0] if message.strip() else kind
        raise D.error(
            D.TVM_FFI_CALL_ERROR,
            kernel=self._kernel,
            expected="arguments the compiled function takes",
            got=f"{type(cause).__name__}: {first}",
        ) from cause

    @property
    def kernel_name(self) -> str:
        """Name of the kernel this handle launches."""
        return self._kernel

    @property
    def compiled(self) -> Any:
        return self._compiled

    @property
    def parameters(self) -> tuple[str, ...]:
        """The entry's positional arguments, in order."""
        return tuple(p.name for p in self._plan.entry.parameters)

    @property
    def fast_path(self) -> str:
        """``"c"`` when launches call the entry directly, ``"direct"`` when they are the compiled call."""
        return "c" if self._launcher is not None else "direct"

    def clone(self) -> PreparedTvmFfiLaunch:
        """A new handle with its own argument array (e.g. one per thread)."""
        return PreparedTvmFfiLaunch(self._plan)

    def __copy__(self) -> PreparedTvmFfiLaunch:
        """``copy.copy(handle)`` is :meth:`clone`: a copy sharing the launcher would share its close."""
        return self.clone()

    def __deepcopy__(self, memo: dict[int, object]) -> PreparedTvmFfiLaunch:
        """``copy.deepcopy(handle)`` is :meth:`clone` too (the compiled function is never copied)."""
        return self.clone()

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise D.error(
            D.HANDLE_NOT_PICKLABLE,
            kernel=self._kernel,
            expected="a handle prepared in this process (prepare again after unpickling the arguments)",
            got="pickle of a PreparedTvmFfiLaunch",
        )

    def close(self) -> None:
        """Later launches raise CB404. Idempotent (:class:`~cute_bind.launch.lifecycle.Lifecycle`)."""
        self._leave_state(HandleState.CLOSED)

    def __enter__(self) -> PreparedTvmFfiLaunch:
        return self

    def __repr__(self) -> str:
        names = {"T": "tensor", "i": "int", "a": "address", "b": "bool", "f": "float", "n": "None", "o": "constant", "s": "structure"}
        params = ", ".join(f"{p.name}: {names[k]}" for p, k in zip(self._plan.entry.parameters, self._plan.kinds))
        return f"<PreparedTvmFfiLaunch {self._kernel}({params}){' closed' if self.closed else ''}>"


def _keyword_names(compiled: object, entry: dsl.TvmFfiEntry) -> tuple[str | None, ...] | None:
    """Per entry argument the keyword the compiled call takes for it (None: positional only); None
    for a bare ``tvm_ffi.Function``, whose call takes no keywords. Interned: a call's keywords are
    interned, so the C launcher finds them by identity."""
    if not dsl.is_compiled(compiled):
        return None
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(sys.intern(p.name) if p.kind in keyword else None for p in entry.parameters)


def _bind(entry: dsl.TvmFfiEntry, kernel: str, args: tuple[object, ...], kwargs: dict[str, object]) -> inspect.BoundArguments:
    """``args``/``kwargs`` bound to the entry's parameters; CB202 for a wrong count or keyword."""
    try:
        return inspect.Signature(list(entry.parameters)).bind(*args, **kwargs)
    except TypeError as exc:
        raise D.error(D.UNEXPECTED_ARGUMENT, kernel=kernel, expected="the compiled function's arguments", got=str(exc)) from None


_EXPECTED = (
    "a tensor of a DLPack-exchange type (torch.Tensor), an int, bool, float or None (or an object TVM-FFI writes "
    "as one: cutlass.Int32(...), cutlass.Float32(...)), or a structure of those: a tuple, list or NamedTuple "
    "(or a dataclass the compiled call unpacks), nested"
)


def prepare_tvm_ffi(compiled: object, kernel: str, args: tuple[object, ...], kwargs: dict[str, object]) -> PreparedTvmFfiLaunch:
    """Prepare a TVM-FFI compiled function for values like ``args``/``kwargs`` (nothing is launched).

    ``compiled`` is ``cute.compile(..., options="--enable-tvm-ffi")``'s result or a bare
    ``tvm_ffi.Function`` (``cute.runtime.load_module(path, enable_tvm_ffi=True)[name]``): its
    call is positional only, so its parameters are the values given, in order, named
    ``arg0``, ``arg1``...
    """
    bare = not dsl.is_compiled(compiled)
    try:
        entry = dsl.tvm_ffi_function_entry(compiled, len(args)) if bare else dsl.tvm_ffi_entry(compiled)
    except Exception as exc:
        raise D.error(D.NO_ENGINE, kernel=kernel, expected="an initialised TVM-FFI function", got=f"{type(exc).__name__}: {exc}") from exc
    if entry.converts_sequences:
        raise D.error(
            D.TVM_FFI_UNSUPPORTED_ARGUMENT,
            kernel=kernel,
            parameter=", ".join(p.name for p in entry.parameters),
            expected="tensors, int, bool, float or None (a sequence of pointers is rewritten by the DSL before each TVM-FFI call)",
            got="a function with a sequence of pointers",
        )
    bound = _bind(entry, kernel, args, kwargs)
    missing = dsl.tvm_ffi_missing()
    defaults_given = {} if bare else dsl.runtime_signature(compiled).defaults
    kinds: list[str] = []
    specs: list[_ArgSpec] = []
    defaults: list[object] = []
    for p in entry.parameters:
        default = p.default
        if default is missing:
            default = defaults_given.get(p.name, _REQUIRED)
        elif default is inspect.Parameter.empty:
            default = _REQUIRED
        value = bound.arguments.get(p.name, default)
        if isinstance(value, dsl.cuda_stream_class()):
            # a CUstream (given, or a `stream: cuda.CUstream = cuda.CUstream(0)` default): the entry takes
            # its handle, an int, as the direct call passes it
            value = int(value)  # type: ignore[call-overload]  # CUstream defines __int__
            if p.name not in bound.arguments:
                default = value
        kind, spec = _kind_of(value)
        if not kind and value is not _REQUIRED and (isinstance(value, (tuple, list)) or dsl.is_dataclass_instance(value)):
            if p.name in entry.no_structure:
                raise D.error(
                    D.TVM_FFI_UNSUPPORTED_ARGUMENT,
                    kernel=kernel,
                    parameter=p.name,
                    expected="a number or tensor here (the compiled function's parameter is annotated as one)",
                    got=describe_value(value),
                )
            kind, spec = "s", _structure_plan(value, p.name in entry.unpacked, kernel, p.name)
        if p.name in entry.pointer_parameters:
            # the DSL passes a pointer parameter's int address as is, after checking it is >= 0;
            # a make_ptr/ctypes pointer is converted by it (the direct call: the slow path)
            kind = "a" if kind == "i" and value.__class__ is int else ""
        if value is _REQUIRED or not kind:
            raise D.error(
                D.TVM_FFI_UNSUPPORTED_ARGUMENT,
                kernel=kernel,
                parameter=p.name,
                expected=_EXPECTED,
                got=describe_value(value) if value is not _REQUIRED else "no value",
            )
        kinds.append(kind)
        specs.append(spec)
        defaults.append(default)
    # Nothing is launched here: the entry checks each launch's values itself.
    return PreparedTvmFfiLaunch(_TvmFfiPlan(kernel, compiled, entry, "".join(kinds), tuple(specs), tuple(defaults)))
