"""PreparedLaunch: per-handle argument storage and the launch fast path.

``bind()``/``prepare()`` do all the work once: run the DSL's marshalling,
snapshot each slot's bytes into one contiguous storage block owned by the
handle, check those bytes against cute_bind's own packing, build the handle's
packed ``void**`` array (slot addresses, its own CUDA-result slot, the
executor's extra pointers) and generate the launch function.

``launch()`` then does the minimum: write each value into its slot of the
storage block, call the entry point with the precomputed array, read the result
slot. It is the C extension's ``Launcher.launch`` (``_claunch.c``) when built,
else a Python function generated per slot layout (one ``struct.pack_into`` and
a ctypes call). Values a fast path cannot write as they are (tensors, stream
objects, keywords, a wrong kind) go to the shared slow path, which binds the
arguments, runs each slot's ``coerce`` and raises catalog errors.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import threading
import weakref
from typing import Any, Callable, Generic, ParamSpec, Sequence

from .. import _dsl
from .. import diagnostics as D
from ..slots import Bound, SlotKind, Where, item_ranges
from .arguments import bind_arguments

__all__ = ["PreparedLaunch", "build"]

P = ParamSpec("P")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _checked_default() -> bool:
    return os.environ.get("CUTE_BIND_CHECKED", "") not in ("", "0")


def _c_launcher_class() -> Any:
    """The optional C fast path, unless absent or disabled with CUTE_BIND_PURE_PYTHON=1."""
    if os.environ.get("CUTE_BIND_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from ._claunch import Launcher
    except ImportError:
        return None
    return Launcher


def fast_path() -> str:
    """Which launch fast path new handles use: "c" or "python"."""
    return "c" if _c_launcher_class() is not None else "python"


def _first_code(fmt: str) -> str:
    return fmt.lstrip("0123456789")[:1] or "x"


class _Layout:
    """The storage layout of a slot list: one native struct, slots (and their parts) in order.

    Each part (one C argument the DSL marshals) starts at the offset native
    alignment gives it, exactly as if the whole list were one C struct.
    """

    def __init__(self, slots: Sequence[SlotKind]) -> None:
        fmt = "@" + "".join(s.fmt for s in slots)
        self.struct = struct.Struct(fmt)
        self.offsets: list[int] = []  # per slot: its first byte
        self.sizes: list[int] = []
        self.part_offsets: list[int] = []  # per part, all slots in order
        self.part_sizes: list[int] = []
        self.slot_parts: list[list[tuple[str, int]]] = []  # per slot: (part fmt, offset)
        prefix = "@"
        for s in slots:
            start = struct.calcsize(prefix)
            parts = []
            for part in s.parts:
                off = struct.calcsize(prefix + "0" + _first_code(part))
                prefix += part
                parts.append((part, off))
                self.part_offsets.append(off)
                self.part_sizes.append(struct.calcsize("@" + part))
            self.slot_parts.append(parts)
            first = parts[0][1] if parts else start
            self.offsets.append(first)
            self.sizes.append(struct.calcsize(prefix) - first)
        # round up so the block can be reused verbatim by clones
        self.size = max(8, (self.struct.size + 7) // 8 * 8)


def _flatten(slots: Sequence[SlotKind], packed: Sequence[Any]) -> list[Any]:
    """The struct items of per-slot packed values (multi-item slots pack tuples)."""
    out: list[Any] = []
    for slot, value in zip(slots, packed):
        if not slot.packs_tuple:
            out.append(value)
        else:
            out.extend(value)
    return out


class _Shared:
    """What all clones of one prepared launch share (read-only after build)."""

    def __init__(
        self,
        kernel: str,
        compiled: Any,
        entry: _dsl.EntryPoint,
        names: tuple[str, ...],
        slots: tuple[SlotKind, ...],
        defaults: dict[str, Any],
        constexpr_names: frozenset[str],
        layout: _Layout,
        returns: int | None,
    ) -> None:
        self.kernel = kernel
        self.compiled = compiled
        self.entry = entry
        self.names = names
        self.slots = slots
        self.defaults = defaults
        self.constexpr_names = constexpr_names
        self.layout = layout
        self.returns = returns
        self.wheres = tuple(Where(kernel, n) for n in names)
        self.hints = {n: s.expected() for n, s in zip(names, slots)}
        self.handles: weakref.WeakSet[PreparedLaunch[Any]] = weakref.WeakSet()
        # the DSL's re-entry check, run before every launch (DSL 4.8, PyIR-compiled functions only)
        self.guard: Callable[[], None] | None = None


_CODE_CACHE: dict[tuple[Any, ...], Any] = {}


def _fast_factory(slots: Sequence[SlotKind], converted: Sequence[bool], has_defaults: Sequence[bool], has_result: bool) -> Any:
    """Compile (once per slot shape) the factory of the launch fast path."""
    key = (tuple((s.fmt, s.guard("v"), s.packs_tuple, c) for s, c in zip(slots, converted)), tuple(has_defaults), has_result)
    factory = _CODE_CACHE.get(key)
    if factory is not None:
        return factory
    args = [f"a{i}" for i in range(len(slots))]
    x = "_cb_"
    params = ", ".join(f"{a}={x}D{i}" if d else f"{a}={x}M" for i, (a, d) in enumerate(zip(args, has_defaults)))
    guards = [g for s, a, c in zip(slots, args, converted) if not c and (g := s.guard(a)) is not None]
    # a converted slot packs what its converter returns (a tuple for multi-item slots)
    items = [(f"*{x}c{i}({a})" if s.packs_tuple else f"{x}c{i}({a})") if c else a for i, (s, a, c) in enumerate(zip(slots, args, converted))]
    bad = " or ".join(f"not ({g})" for g in guards)
    defaults = "".join(
        f"        if {a} is {x}D{i}:\n            {a} = {x}V{i}\n" for i, (a, d) in enumerate(zip(args, has_defaults)) if d
    )
    tup = "(" + "".join(f"{a}, " for a in args) + ")"
    free = [f"{x}M", f"{x}pack", f"{x}buf", f"{x}call", f"{x}argv", f"{x}res", f"{x}slow", f"{x}fail", f"{x}ret"]
    free += [f"{x}D{i}" for i, d in enumerate(has_defaults) if d] + [f"{x}V{i}" for i, d in enumerate(has_defaults) if d]
    free += [f"{x}c{i}" for i, c in enumerate(converted) if c]
    sep = "/, " if args else ""
    check = f"        if {x}res[0]:\n            {x}fail()\n" if has_result else ""
    # Keywords and extra positionals go to the slow path before defaults are
    # substituted, so it can still tell a defaulted parameter from a given one.
    guard_check = f"        if {bad}:\n            return {x}slow({tup}, (), {{}})\n" if bad else ""
    src = (
        f"def factory({', '.join(free)}):\n"
        f"    def launch({params}{', ' if args else ''}{sep}*{x}x, **{x}k):\n"
        f"        if {x}x or {x}k:\n"
        f"            return {x}slow({tup}, {x}x, {x}k)\n"
        f"{defaults}"
        f"{guard_check}"
        f"        try:\n"
        f"            {x}pack({x}buf, 0, {', '.join(items)})\n"
        f"        except Exception:\n"
        f"            return {x}slow({tup}, (), {{}})\n"
        f"        {x}call({x}argv)\n"
        f"{check}"
        f"        return {x}ret\n"
        f"    return launch\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(src, f"<cute_bind launch {len(slots)} slots>", "exec"), namespace)  # noqa: S102 - generated from slot formats only
    factory = namespace["factory"]
    _CODE_CACHE[key] = factory
    return factory


class PreparedLaunch(Generic[P]):
    """A bound launch of one compiled function, replayable cheaply.

    Made by ``kernel.bind(...)`` or ``cute_bind.prepare(compiled, ...)``.
    ``launch(*args, **kwargs)`` takes the same arguments as calling the
    compiled function (runtime parameters only; Constexpr values are fixed at
    bind), rewrites the handle's storage in place and calls the compiled entry
    point directly. It returns what the compiled call returns (``0`` when the
    function reports a CUDA result, else ``None``) and raises
    :class:`cute_bind.CudaLaunchError` on a non-zero CUDA result.

    Threading: a handle may be used by one thread at a time (hand it over
    between launches freely). Give concurrent threads their own handles with
    :meth:`clone`. Lifetime: the handle keeps its compiled module loaded; if
    the module is unloaded anyway, ``launch`` raises CB402.
    """

    launch: Callable[P, int | None]
    """Launch with new argument values: same arguments and return value as the compiled call.

    An instance attribute (the C fast path's bound method, or a generated
    function), so looking it up costs no bound-method creation; keeping a
    reference (``launch = handle.launch``) is fine and stays valid across
    unload and close, which then raise CB402/CB404.
    """

    def __init__(self, shared: _Shared, initial: bytes, checked: bool) -> None:
        self._shared = shared
        self._checked = checked
        self._closed = False
        layout = shared.layout
        self._storage = bytearray(layout.size)
        self._storage[: len(initial)] = initial
        self._cstorage = (ctypes.c_char * layout.size).from_buffer(self._storage)
        base = ctypes.addressof(self._cstorage)
        self._result = bytearray(8)
        self._cresult = (ctypes.c_char * 8).from_buffer(self._result)
        self._result_view = memoryview(self._result).cast("i")
        entry = shared.entry
        pointers = [base + off for off in layout.part_offsets]
        if entry.result_ctype is not None:
            pointers.append(ctypes.addressof(self._cresult))
        pointers.extend(entry.extra_pointers)
        self._argv = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        self._argv_address = ctypes.c_void_p(ctypes.addressof(self._argv))
        self._call: Any = _dsl.entry_function(entry.address)
        if shared.guard is not None:
            self._call = _guarded(shared.guard, self._call)
        self._lock = threading.Lock()
        self._owner: str | None = None
        self._launcher: Any = None  # the C fast path's object, when it is used
        self._default_sentinels: tuple[Any, ...] = ()
        self.launch = self._make_launch()
        shared.handles.add(self)
        if _dsl.is_unloaded(entry.module):
            self._poison(D.MODULE_UNLOADED)

    # ------------------------------------------------------------------ launch paths
    def _make_launch(self) -> Callable[..., int | None]:
        sh = self._shared
        # the C fast path calls the entry itself: a guarded handle takes the Python one
        launcher_class = None if self._checked or sh.guard is not None else _c_launcher_class()
        if launcher_class is not None:
            lay = sh.layout
            required = _Missing()
            self._launcher = launcher_class(
                sh.entry.address,
                ctypes.addressof(self._argv),
                ctypes.addressof(self._cstorage),
                ctypes.addressof(self._cresult) if sh.entry.result_ctype is not None else 0,
                "".join(s.fmt[:1] or "x" for s in sh.slots).encode(),
                "".join(s.fast for s in sh.slots).encode(),
                tuple(lay.offsets),
                tuple(self._c_extra(i, s) for i, s in enumerate(sh.slots)),
                tuple(sh.defaults.get(n, required) for n in sh.names),
                required,
                self._slow,
                self._fail,
                sh.returns,
                (self._storage, self._cstorage, self._argv, self._result, self._cresult, sh.entry.keepalive),
            )
            return self._launcher.launch  # type: ignore[no-any-return]
        if self._checked:
            slow = self._slow

            def launch(*args: Any, **kwargs: Any) -> int | None:
                return slow(args, (), kwargs, positional_raw=True)

            return launch
        has_defaults = [n in sh.defaults for n in sh.names]
        converters = [s.converter(w) for s, w in zip(sh.slots, sh.wheres)]
        factory = _fast_factory(sh.slots, [c is not None for c in converters], has_defaults, sh.entry.result_ctype is not None)
        default_sentinels = [_Missing() for n in sh.names if n in sh.defaults]
        default_values = [sh.defaults[n] for n in sh.names if n in sh.defaults]
        self._default_sentinels = tuple(default_sentinels)
        fn = factory(
            _MISSING,
            sh.layout.struct.pack_into,
            self._storage,
            self._call,
            self._argv_address,
            self._result_view,
            self._slow,
            self._fail,
            sh.returns,
            *default_sentinels,
            *default_values,
            *(c for c in converters if c is not None),
        )
        return fn  # type: ignore[no-any-return]

    def _c_extra(self, i: int, slot: SlotKind) -> Any:
        """What the C fast path's class for slot ``i`` needs: a tensor spec, or for the
        generic class "X" a writer that converts a value and packs each part in place."""
        if slot.fast == "T":
            return slot.c_spec()
        if slot.fast == "S":
            # one leaf per element: each element kind is one part at its own offset
            elements = getattr(slot, "elements", None) or ()
            offsets = [off for _, off in self._shared.layout.slot_parts[i]]
            return tuple((e.fast, e.fmt[:1] or "x", off, e.c_spec() if e.fast == "T" else None) for e, off in zip(elements, offsets))
        if slot.fast != "X":
            return None
        convert = slot.converter(self._shared.wheres[i])
        if convert is None:
            convert = functools.partial(slot.coerce, where=self._shared.wheres[i])
        parts = []
        for fmt, off in self._shared.layout.slot_parts[i]:
            st = struct.Struct("@" + fmt)
            parts.append((st, off, len(st.unpack(bytes(st.size)))))
        storage, packs_tuple = self._storage, slot.packs_tuple

        def write(value: Any) -> None:
            items = convert(value)
            if not packs_tuple:
                items = (items,)
            k = 0
            for st, off, n in parts:
                st.pack_into(storage, off, *items[k : k + n])
                k += n

        return write

    def _slow(self, given: tuple[Any, ...], extra: tuple[Any, ...], kwargs: dict[str, Any], positional_raw: bool = False) -> int | None:
        sh = self._shared
        if positional_raw:  # checked mode: plain *args
            given, extra = given[: len(sh.names)], given[len(sh.names) :]
        # The fast paths pass the positionals they got, padded with markers for
        # parameters not given (compared by identity: values may be arrays).
        not_given = {id(_MISSING), *(id(s) for s in self._default_sentinels)}
        args = []
        for v in given:
            if id(v) in not_given:
                break
            args.append(v)
        values = bind_arguments(sh.kernel, sh.names, frozenset(), sh.defaults, (*args, *extra), kwargs, sh.hints, sh.constexpr_names)
        packed = _flatten(sh.slots, [slot.coerce(values[w.parameter], w, self._checked) for slot, w in zip(sh.slots, sh.wheres)])
        if self._checked:
            return self._checked_call(packed)
        return self._write_and_call(packed)

    def _write_and_call(self, packed: list[Any]) -> int | None:
        sh = self._shared
        sh.layout.struct.pack_into(self._storage, 0, *packed)
        self._call(self._argv_address)
        if sh.entry.result_ctype is not None and self._result_view[0]:
            self._fail()
        return sh.returns

    def _checked_call(self, packed: list[Any]) -> int | None:
        sh = self._shared
        me = threading.current_thread().name
        if not self._lock.acquire(blocking=False):
            raise D.error(D.CONCURRENT_USE, kernel=sh.kernel, expected="one thread at a time per handle", got=str(self._owner))
        try:
            self._owner = me
            if self._closed:
                raise D.error(D.HANDLE_CLOSED, kernel=sh.kernel, expected="an open handle")
            if _dsl.is_unloaded(sh.entry.module):
                raise D.error(D.MODULE_UNLOADED, kernel=sh.kernel, expected="a loaded module")
            return self._write_and_call(packed)
        finally:
            self._owner = None
            self._lock.release()

    def _fail(self) -> None:
        code = int(self._result_view[0])
        self._result_view[0] = 0
        name = _dsl.cuda_error_name(code)
        raise D.error(
            D.CUDA_ERROR,
            kernel=self._shared.kernel,
            expected="cudaSuccess (0)",
            got=f"{name} ({code})",
            details={"cuda_error": code, "cuda_error_name": name},
        )

    def _poison(self, diagnostic: D.Diagnostic) -> None:
        """Make every later launch raise ``diagnostic`` (also through saved ``launch`` references)."""
        kernel = self._shared.kernel

        def refuse(_argv: Any = None) -> None:
            raise D.error(diagnostic, kernel=kernel, expected="a loaded module and an open handle")

        self._call = refuse
        if self._launcher is not None:
            self._launcher.poison(refuse)
            return
        fn = self.launch
        closure = getattr(fn, "__closure__", None) or ()
        for name, cell in zip(fn.__code__.co_freevars, closure):
            if name == "_cb_call":
                cell.cell_contents = refuse

    # ------------------------------------------------------------------ public API
    @property
    def kernel_name(self) -> str:
        """Name of the kernel this handle launches."""
        return self._shared.kernel

    @property
    def compiled(self) -> Any:
        """The compiled function (``cute.compile`` result or executor) this handle calls."""
        return self._shared.compiled

    @property
    def parameters(self) -> tuple[str, ...]:
        """Runtime parameter names, in launch order."""
        return self._shared.names

    @property
    def slots(self) -> dict[str, SlotKind]:
        """Slot kind of each runtime parameter."""
        return dict(zip(self._shared.names, self._shared.slots))

    @property
    def checked(self) -> bool:
        """Whether this handle runs the full checks (alignment of raw addresses, concurrent use) on every launch."""
        return self._checked

    @property
    def closed(self) -> bool:
        return self._closed

    def storage_bytes(self) -> bytes:
        """The bytes the entry point reads for the runtime slots, as last written."""
        lay = self._shared.layout
        return bytes(self._storage[: lay.struct.size])

    def slot_bytes(self, name: str) -> bytes:
        """The bytes of one slot, as last written."""
        lay = self._shared.layout
        i = self._shared.names.index(name)
        return bytes(self._storage[lay.offsets[i] : lay.offsets[i] + lay.sizes[i]])

    def clone(self) -> PreparedLaunch[P]:
        """A new handle for the same compiled function, with its own storage (e.g. one per thread)."""
        return PreparedLaunch(self._shared, self.storage_bytes(), self._checked)

    def with_checks(self, enabled: bool = True) -> PreparedLaunch[P]:
        """A clone that runs (or skips) the checked-mode checks on every launch."""
        return PreparedLaunch(self._shared, self.storage_bytes(), enabled)

    def close(self) -> None:
        """Release the handle's pin on the compiled module; later launches raise CB404."""
        if self._closed:
            return
        self._closed = True
        self._poison(D.HANDLE_CLOSED)

    def __enter__(self) -> PreparedLaunch[P]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        sh = self._shared
        slots = ", ".join(f"{n}: {s.describe()}" for n, s in zip(sh.names, sh.slots))
        state = " closed" if self._closed else (" checked" if self._checked else "")
        return f"<PreparedLaunch {sh.kernel}({slots}){state}>"


def _guarded(guard: Callable[[], None], call: Any) -> Callable[[Any], None]:
    """``call`` preceded by ``guard`` (which raises when the direct call would refuse)."""

    def guarded_call(argv: Any) -> None:
        guard()
        call(argv)

    return guarded_call


def _on_module_unload(shared_ref: weakref.ref[_Shared]) -> Callable[[], None]:
    def notify() -> None:
        sh = shared_ref()
        if sh is not None:
            for handle in list(sh.handles):
                handle._poison(D.MODULE_UNLOADED)

    return notify


def build(
    *,
    kernel: str,
    compiled: Any,
    names: Sequence[str],
    bounds: Sequence[Bound],
    defaults: dict[str, Any],
    constexpr_names: Sequence[str] = (),
    checked: bool | None = None,
) -> PreparedLaunch[Any]:
    """Run the DSL's marshalling once and build a handle from its bytes."""
    _dsl.require_contract_once()
    guard = _dsl.specialization_guard(compiled, kernel, names)
    if _dsl.workspace_argument_count(compiled):
        raise D.error(D.WORKSPACE_ARGUMENTS, kernel=kernel, expected="0", got=str(_dsl.workspace_argument_count(compiled)))
    slots = tuple(b.slot for b in bounds)
    layout = _Layout(slots)
    # The DSL's own marshalling, once, with the DSL objects for these values.
    addresses, keepalive = _dsl.marshal(compiled, tuple(b.dsl_value for b in bounds), {})
    if len(addresses) != len(layout.part_offsets):
        raise D.error(
            D.UNSUPPORTED_MARSHALLING,
            kernel=kernel,
            parameter=", ".join(names),
            expected=f"one C pointer per scalar, pointer, stream, tensor or sequence element ({len(layout.part_offsets)})",
            got=f"{len(addresses)} C pointers in all",
        )
    snapshot = bytearray(layout.size)
    for off, size, addr in zip(layout.part_offsets, layout.part_sizes, addresses):
        snapshot[off : off + size] = ctypes.string_at(addr, size)
    del keepalive
    ours = layout.struct.pack(*_flatten(slots, [b.packed for b in bounds]))
    for name, parts in zip(names, layout.slot_parts):
        for fmt, off in parts:
            # Padding bytes (inside a tensor descriptor, or at its end) are never
            # read by the function and the DSL leaves them uninitialised: compare
            # the items only.
            items = item_ranges(fmt)
            theirs_items = b"".join(bytes(snapshot[off + a : off + b]) for a, b in items)
            ours_items = b"".join(ours[off + a : off + b] for a, b in items)
            if ours_items != theirs_items:
                size = items[-1][1] if items else 0
                raise D.error(
                    D.SNAPSHOT_MISMATCH,
                    kernel=kernel,
                    parameter=name,
                    expected=repr(bytes(snapshot[off : off + size])),
                    got=repr(ours[off : off + size]),
                )
    entry = _dsl.entry_point(compiled, kernel)
    # Defaults are pre-coerced so a call relying on them stays on the fast path.
    # Kinds with a converter keep the raw default (their fast paths convert it)
    # after checking it once here.
    packed_defaults = {}
    for name, slot, where in zip(names, slots, (Where(kernel, n) for n in names)):
        if name in defaults:
            coerced = slot.coerce(defaults[name], where)
            packed_defaults[name] = coerced if slot.converter(where) is None else defaults[name]
    returns = 0 if entry.result_ctype is not None else None
    shared = _Shared(kernel, compiled, entry, tuple(names), slots, packed_defaults, frozenset(constexpr_names), layout, returns)
    shared.guard = guard
    _dsl.add_unload_listener(entry.module, _on_module_unload(weakref.ref(shared)))
    return PreparedLaunch(shared, bytes(snapshot), _checked_default() if checked is None else checked)

