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

Every path takes the handle's one launch token before writing the storage and
gives it back after the entry point returns (a second launch meanwhile raises
CB403), holds what the values were read through until then, and re-checks the
handle's state right before the call (docs/concepts/safety.md).
"""

from __future__ import annotations

import ctypes
import functools
import struct
import sys
import threading
import weakref
from dataclasses import InitVar, dataclass, field
from typing import Any, Callable, Final, Generic, NoReturn, ParamSpec, Sequence, SupportsIndex

from .. import diagnostics as D
from .. import dsl, settings
from ..slots import Bound, SlotKind, Where, item_ranges
from ..slots.base import conversion_order
from ..slots.stream import CStreamSpec
from . import native
from .arguments import bind_arguments
from .codegen import fast_factory, plain_only
from .layout import Layout, flatten
from .lifecycle import HandleState, Lifecycle
from .spec import CLASS_FORMATS, KeepAlive, LaunchSpec, SeqLeaf

__all__ = ["PreparedLaunch", "LaunchSnapshot", "HandleState", "NOT_GIVEN", "build", "fast_path"]

fast_path = native.fast_path  # which fast path new handles use (importable from here, as before)

P = ParamSpec("P")


class _NotGiven:
    """The one sentinel of the launch paths: "this parameter was not given".

    It is the default of every parameter of a generated launch function and
    the ``required`` marker handed to the C fast path, so a launch can tell a
    parameter left to its default from one given any value (``None`` and
    arrays included). It is private to this module, so no caller can pass it;
    it is compared by identity (``is``) only.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not given>"


NOT_GIVEN: Final = _NotGiven()


def _checked_default() -> bool:
    return settings.CHECKED.flag()


#: CB201 for a stream left out of ``handle.launch(...)``: why a ``stream=None`` default does not apply there.
#: A handle's launch writes exactly the values it is given (no look-up per launch): ``kernel(...)`` is the
#: call that finds the current stream for a left-out ``= None`` stream.
_STREAM_HINT: Final = (
    " (a prepared handle takes its stream explicitly, also one declared `= None`: pass the stream, e.g. "
    "torch.cuda.current_stream().cuda_stream or 0, or call the kernel itself, kernel(...), which fills in the current stream)"
)


@dataclass(eq=False)
class _Shared:
    """What all clones of one prepared launch share (read-only after build).

    Plain data only: the compiled function and its module are held by each
    handle's :class:`_Pin`, so closing every handle releases them. The
    fields after ``returns`` are derived from the others and ``entry``.
    """

    kernel: str
    names: tuple[str, ...]
    slots: tuple[SlotKind, ...]
    defaults: dict[str, Any]
    constexpr_names: frozenset[str]
    layout: Layout
    returns: int | None
    entry: InitVar[dsl.EntryPoint]
    entry_address: int = field(init=False)
    has_result: bool = field(init=False)
    extra_pointers: tuple[int, ...] = field(init=False)
    wheres: tuple[Where, ...] = field(init=False)
    #: per slot: whether it reads an address (converted after the others: the lifetime rule)
    reads: tuple[bool, ...] = field(init=False)
    hints: dict[str, str] = field(init=False)
    #: the pure-Python launch's keyword placement (the C launcher places them itself)
    place: Callable[[tuple[Any, ...], dict[str, Any]], list[Any] | None] = field(init=False)
    #: the DSL's re-entry check, run before every launch (DSL 4.8, PyIR-compiled functions only)
    guard: Callable[[], None] | None = field(init=False, default=None)

    def __post_init__(self, entry: dsl.EntryPoint) -> None:
        names, slots = self.names, self.slots
        self.entry_address = entry.address
        self.has_result = entry.result_ctype is not None
        self.extra_pointers = entry.extra_pointers
        self.wheres = tuple(Where(self.kernel, n) for n in names)
        self.reads = tuple(s.reads_address for s in slots)
        self.hints = {n: s.expected() + (_STREAM_HINT if s.kind == "stream" else "") for n, s in zip(names, slots)}
        self.place = functools.partial(_place_keywords, {n: i for i, n in enumerate(names)}, tuple(n in self.defaults for n in names))


def _place_keywords(
    index: dict[str, int], has_default: tuple[bool, ...], given: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[Any] | None:
    """A keyword call's values in slot order (NOT_GIVEN where left to a default), or None where the
    slow path must decide: a name of no parameter, one given twice, a required parameter left out."""
    placed = list(given)
    for name, value in kwargs.items():
        i = index.get(name)
        if i is None or placed[i] is not NOT_GIVEN:
            return None
        placed[i] = value
    for value, default in zip(placed, has_default):
        if value is NOT_GIVEN and not default:
            return None
    return placed


class _Pin:
    """What keeps the compiled function loaded: shared by a handle and its clones, dropped at close."""

    __slots__ = ("compiled", "entry", "__weakref__")

    def __init__(self, compiled: object, entry: dsl.EntryPoint) -> None:
        self.compiled = compiled
        self.entry = entry


# One unload listener per compiled module (not one per bind): the handles of
# each module, held weakly, are poisoned when it unloads.
_MODULE_HANDLES: weakref.WeakKeyDictionary[Any, weakref.WeakSet[PreparedLaunch[...]]] = weakref.WeakKeyDictionary()


def _track(module: object, handle: PreparedLaunch[...]) -> None:
    handles = _MODULE_HANDLES.get(module)
    if handles is None:
        handles = _MODULE_HANDLES[module] = weakref.WeakSet()
        dsl.add_unload_listener(module, _on_module_unload(handles))
    handles.add(handle)


def _on_module_unload(handles: weakref.WeakSet[PreparedLaunch[...]]) -> Callable[[], None]:
    def notify() -> None:
        for handle in list(handles):
            handle._leave_state(HandleState.UNLOADED)

    return notify


#: C fast classes and the struct formats each may write (checked at bind for every kind; LaunchSpec checks them again)
_C_CLASS_FORMATS: Final = CLASS_FORMATS


def _check_fast_class(kernel: str, name: str, slot: SlotKind) -> None:
    """A kind's C class must fit its storage format (an 8-byte "P" write into a 4-byte slot would overflow)."""
    fast = getattr(slot, "fast", "X")
    allowed = _C_CLASS_FORMATS.get(fast, "")
    ok = fast in _C_CLASS_FORMATS and (allowed is None or (len(slot.fmt) > 0 and slot.fmt[0] in allowed))
    if fast == "S":
        ok = all(getattr(e, "fast", "X") not in ("S", "X") for e in getattr(slot, "elements", None) or ()) and all(
            _C_CLASS_FORMATS.get(e.fast) is None or e.fmt[:1] in (_C_CLASS_FORMATS[e.fast] or "")
            for e in getattr(slot, "elements", None) or ()
        )
    if not ok:
        raise D.error(
            D.INCONSISTENT_SLOT_KIND,
            kernel=kernel,
            parameter=name,
            expected=f"a C class among {sorted(_C_CLASS_FORMATS)} that writes format {slot.fmt!r}",
            got=f"{type(slot).__name__} with fast={fast!r}, fmt={slot.fmt!r}",
        )


def _class_spec(slot: SlotKind) -> object:
    """The C record of a slot's fast class (a sequence element's too): a CTensorSpec ("T"), a
    CPointerSpec ("P"), a CStreamSpec ("Z"), a CNumberSpec (the number classes and "B"), or None
    (exact values only)."""
    spec = slot.c_spec()
    if isinstance(spec, CStreamSpec) and spec.reader is not None and native.C_LAYOUTS[2] is None:
        # bound before torch was imported: a torch stream reaches the reader until C learns torch's classes
        spec = spec._replace(reader=native.learning_stream_reader(spec.reader))
    return spec


@dataclass(frozen=True)
class LaunchSnapshot:
    """A handle's launch as plain data, for a launcher outside cute_bind's own paths to copy.

    Made by :meth:`PreparedLaunch.snapshot` (``cute_bind.jax`` copies it into
    its XLA FFI handler). Everything is a copy: changing the handle later
    changes nothing here, and nothing here changes the handle.
    """

    kernel: str
    #: runtime parameter names and slot kinds, in launch order
    names: tuple[str, ...]
    slots: tuple[SlotKind, ...]
    #: per slot: the offset of its first byte in :attr:`storage`
    offsets: tuple[int, ...]
    #: per part (one C argument of the entry point), all slots in order: its offset in :attr:`storage`
    part_offsets: tuple[int, ...]
    #: the whole storage block, as last written (the entry point's argument bytes)
    storage: bytes
    #: the compiled entry point's address, whether it reports a CUDA result (one int32 slot after the
    #: parts in its argument array) and the argument array's extra pointers after that
    entry_address: int
    has_result: bool
    extra_pointers: tuple[int, ...]
    #: whether the DSL re-validates before every call (a Python guard): then the entry point alone is not the call
    guarded: bool


class PreparedLaunch(Lifecycle, Generic[P]):
    """A bound launch of one compiled function, replayable cheaply.

    Made by ``kernel.bind(...)`` or ``cute_bind.prepare(compiled, ...)``.
    ``launch(*args, **kwargs)`` takes the same arguments as calling the
    compiled function (runtime parameters only; Constexpr values are fixed at
    bind), rewrites the handle's storage in place and calls the compiled entry
    point directly. It returns what the compiled call returns (``0`` when the
    function reports a CUDA result, else ``None``) and raises
    :class:`cute_bind.CudaLaunchError` on a non-zero CUDA result.

    Threading: a handle may be used by one thread at a time (hand it over
    between launches freely); a launch that overlaps another launch of the
    same handle raises CB403 instead of racing on its storage. Give
    concurrent threads their own handles with :meth:`clone`. Lifetime: the
    handle keeps its compiled module loaded until :meth:`close`; if the module
    is unloaded anyway, ``launch`` raises CB402. ``copy.copy``/``deepcopy``
    give a clone; a handle cannot be pickled (CB405). ``close()``, ``with``,
    :attr:`state` and :attr:`closed` are the handle lifecycle
    (:class:`~cute_bind.launch.lifecycle.Lifecycle`).
    """

    launch: Callable[P, int | None]
    """Launch with new argument values: same arguments and return value as the compiled call.

    An instance attribute (the C fast path's bound method, or a generated
    function), so looking it up costs no bound-method creation; keeping a
    reference (``launch = handle.launch``) is fine and stays valid across
    unload and close, which then raise CB402/CB404.
    """

    def __init__(self, shared: _Shared, pin: _Pin, initial: bytes, checked: bool) -> None:
        self._shared = shared
        self._checked = checked
        self._pin: _Pin | None = pin
        layout = shared.layout
        self._storage = bytearray(layout.size)
        self._storage[: len(initial)] = initial
        self._cstorage = (ctypes.c_char * layout.size).from_buffer(self._storage)
        base = ctypes.addressof(self._cstorage)
        self._result = bytearray(8)
        self._cresult = (ctypes.c_char * 8).from_buffer(self._result)
        self._result_view = memoryview(self._result).cast("i")
        pointers = [base + off for off in layout.part_offsets]
        if shared.has_result:
            pointers.append(ctypes.addressof(self._cresult))
        pointers.extend(shared.extra_pointers)
        self._argv = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        self._argv_address = ctypes.c_void_p(ctypes.addressof(self._argv))
        call: Any = dsl.entry_function(shared.entry_address)
        if shared.guard is not None:
            call = _guarded(shared.guard, call)
        # a Python-path launch holds the entry it read from the gate until it returns: through it,
        # the pin, so a close or unload meanwhile cannot unload the code under the running call
        call._cute_bind_pin = pin
        #: lifecycle (HandleState); the gate holds the entry point, the refusal once OPEN is left
        self._open(call)
        #: the Python paths' one launch token (the C fast path keeps its own flag): a launch pops it
        #: before writing the storage and appends it back after the entry point returns; an empty
        #: list means busy (CB403). list.pop/append are atomic, and 4x cheaper than a Lock's
        #: acquire(False)/release (measured: see docs/concepts/safety.md)
        self._token: list[bool] = [True]
        #: ends a launch: gives the token back
        self._leave: Callable[[bool], None] = self._token.append
        self._owner: str | None = None  # checked mode: the thread inside a launch, for CB403's message
        self._launcher: Any = None  # the C fast path's object, when it is used
        self.launch = self._make_launch()
        self._native = self._launcher  # told at close or unload (Lifecycle._refuse_launches)
        _track(pin.entry.module, self)
        if dsl.is_unloaded(pin.entry.module):
            self._leave_state(HandleState.UNLOADED)

    # ------------------------------------------------------------------ launch paths
    def _make_launch(self) -> Callable[..., int | None]:
        sh = self._shared
        # the C fast path calls the entry itself: a guarded handle takes the Python one
        launcher_class = None if self._checked or sh.guard is not None else native.c_launcher_class()
        if launcher_class is not None:
            lay = sh.layout
            assert self._pin is not None  # a new handle is open
            self._launcher = launcher_class(
                LaunchSpec(
                    entry=sh.entry_address,
                    argv=ctypes.addressof(self._argv),
                    storage=ctypes.addressof(self._cstorage),
                    storage_size=lay.size,
                    result=ctypes.addressof(self._cresult) if sh.has_result else 0,
                    fmts="".join(s.fmt[:1] or "x" for s in sh.slots).encode(),
                    classes="".join(s.fast for s in sh.slots).encode(),
                    offsets=tuple(lay.offsets),
                    sizes=tuple(lay.sizes),
                    extras=tuple(self._c_extra(i, s) for i, s in enumerate(sh.slots)),
                    defaults=tuple(sh.defaults.get(n, NOT_GIVEN) for n in sh.names),
                    names=tuple(sys.intern(n) for n in sh.names),  # a call's keywords are interned: C finds them by identity
                    required=NOT_GIVEN,
                    slow=self._slow,
                    fail=self._fail,
                    busy_error=self._busy,
                    ret=sh.returns,
                    keep=KeepAlive(self._storage, self._cstorage, self._argv, self._result, self._cresult, self._pin),
                )
            )
            launch: Callable[..., int | None] = self._launcher.launch  # the C launcher's bound method
            return launch
        if self._checked:
            slow = self._slow

            def launch(*args: object, **kwargs: object) -> int | None:
                return slow(args, (), kwargs, positional_raw=True)

            return launch
        has_defaults = [n in sh.defaults for n in sh.names]
        converters = [plain_only(s, s.converter(w)) for s, w in zip(sh.slots, sh.wheres)]
        # a value a slot's guard refuses (a tensor for a pointer) is read by its kind's fallback first
        fallbacks = [
            plain_only(s, s.fallback(w)) if c is None and s.guard("v") is not None else None
            for s, w, c in zip(sh.slots, sh.wheres, converters)
        ]
        factory = fast_factory(
            sh.slots, [c is not None for c in converters], has_defaults, sh.has_result, [f is not None for f in fallbacks]
        )
        fn = factory(
            NOT_GIVEN,
            sh.layout.struct.pack_into,
            self._storage,
            self._gate,
            self._argv_address,
            self._result_view,
            self._slow,
            self._fail,
            sh.returns,
            self._token.pop,
            self._leave,
            self._busy,
            sh.place,
            *(sh.defaults[n] for n in sh.names if n in sh.defaults),
            *(c for c in converters if c is not None),
            *(f for f in fallbacks if f is not None),
        )
        generated: Callable[..., int | None] = fn  # the generated launch function
        return generated

    def _c_extra(self, i: int, slot: SlotKind) -> object:
        """What the C fast path's class for slot ``i`` needs: a tensor spec, the leaves of a
        sequence, or for the generic class "X" a writer that converts a value, packs each part
        in place and returns what it converted (the launch holds it until the call returns)."""
        if slot.fast not in ("S", "X"):
            return _class_spec(slot)
        if slot.fast == "S":
            # one leaf per element: each element kind is one part at its own offset, with its class's
            # spec (a tuple of tensors, arrays or NumPy scalars is read in C as those slots are)
            elements = getattr(slot, "elements", None) or ()
            leaves = self._shared.layout.slot_parts[i]
            return tuple(
                SeqLeaf(e.fast, e.fmt[:1] or "x", off, struct.calcsize("@" + fmt), _class_spec(e))
                for e, (fmt, off) in zip(elements, leaves)
            )
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

        def write(value: object) -> object:
            converted = convert(value)
            items = converted if packs_tuple else (converted,)
            k = 0
            for st, off, n in parts:
                st.pack_into(storage, off, *items[k : k + n])
                k += n
            return converted

        return write

    def _busy(self) -> None:
        """Raise CB403: the handle is inside another launch (another thread, or code run by this launch)."""
        owner = self._owner
        raise D.error(
            D.CONCURRENT_USE,
            kernel=self._shared.kernel,
            expected="one launch at a time per handle (clone() one per thread)",
            got=f"in thread {owner}" if owner else "by another thread or by code its own launch ran",
        )

    def _slow(self, given: tuple[Any, ...], extra: tuple[Any, ...], kwargs: dict[str, Any], positional_raw: bool = False) -> int | None:
        sh = self._shared
        if self._launcher is not None:
            native.learn_torch_in_c()  # torch imported since: its tensors are read in C from the next launch on
        if positional_raw:  # checked mode: plain *args
            given, extra = given[: len(sh.names)], given[len(sh.names) :]
        # The fast paths pass the positionals they got, padded with NOT_GIVEN
        # for parameters not given (compared by identity: values may be arrays);
        # a value after a gap was placed there by keyword, and is one again.
        args = []
        gap = False
        for name, v in zip(sh.names, given):
            if v is NOT_GIVEN:
                gap = True
            elif gap:
                kwargs = {**kwargs, name: v}
            else:
                args.append(v)
        values = bind_arguments(sh.kernel, sh.names, frozenset(), sh.defaults, (*args, *extra), kwargs, sh.hints, sh.constexpr_names)
        # ``coerced`` holds what the values were read through (DLPack capsules,
        # list snapshots) until the entry point returns; numbers are converted before any
        # address is read (the lifetime rule: a __float__ may free another argument's memory)
        named = [values[w.parameter] for w in sh.wheres]
        coerced: list[Any] = [None] * len(named)
        for i in conversion_order(sh.reads, named):
            coerced[i] = sh.slots[i].coerce(named[i], sh.wheres[i], self._checked)
        packed = flatten(sh.slots, coerced)
        if self._checked:
            return self._checked_call(packed)
        return self._write_and_call(packed)

    def _write_and_call(self, packed: list[Any]) -> int | None:
        sh = self._shared
        if self._launcher is not None:  # the C fast path's flag guards the storage
            result: int | None = self._launcher.write_and_call(sh.layout.struct.pack(*packed))  # the C launcher returns `ret`
            return result
        self._enter()
        try:
            sh.layout.struct.pack_into(self._storage, 0, *packed)
            self._gate[0](self._argv_address)
            if sh.has_result and self._result_view[0]:
                self._fail()
        finally:
            self._leave(True)
        return sh.returns

    def _checked_call(self, packed: list[Any]) -> int | None:
        sh = self._shared
        self._enter()
        try:
            self._owner = threading.current_thread().name
            pin = self._pin
            if self._state is not HandleState.OPEN or pin is None:
                raise self._refusal_error()
            if dsl.is_unloaded(pin.entry.module):  # unloaded, its listener not run yet
                raise self._refusal_error(HandleState.UNLOADED)
            sh.layout.struct.pack_into(self._storage, 0, *packed)
            self._gate[0](self._argv_address)  # the refusal once closed or unloaded
            if sh.has_result and self._result_view[0]:
                self._fail()
            return sh.returns
        finally:
            self._owner = None
            self._leave(True)

    def _call_with(self, data: bytes) -> None:
        """Write ``data`` (``storage_bytes()``-shaped) over the runtime slots and call the entry point.

        For ``cute_bind.graph``, which replays a recorded launch's bytes (and
        probe variants of them) under stream capture; raises like ``launch``
        (CB401 on a CUDA result, CB402/CB404 once unloaded or closed).
        """
        self._storage[: len(data)] = data
        self._gate[0](self._argv_address)
        if self._shared.has_result and self._result_view[0]:
            self._fail()

    def _fail(self) -> None:
        code = int(self._result_view[0])
        self._result_view[0] = 0
        name = dsl.cuda_error_name(code)
        raise D.error(
            D.CUDA_ERROR,
            kernel=self._shared.kernel,
            expected="cudaSuccess (0)",
            got=f"{name} ({code})",
            details={"cuda_error": code, "cuda_error_name": name},
        )

    def _release(self, state: HandleState) -> None:
        """Drop the pin (Lifecycle): a launch running now holds its own (C: ``keep``; Python: the entry it called)."""
        self._pin = None

    def _enter(self) -> None:
        """Take the launch token, or raise CB403 (the slow and checked paths)."""
        try:
            self._token.pop()
        except IndexError:
            self._busy()

    def _pinned(self) -> _Pin:
        pin = self._pin
        if pin is None or self._state is not HandleState.OPEN:
            raise self._refusal_error()
        return pin

    # ------------------------------------------------------------------ public API
    @property
    def kernel_name(self) -> str:
        """Name of the kernel this handle launches."""
        return self._shared.kernel

    @property
    def compiled(self) -> Any:
        """The compiled function (``cute.compile`` result or executor) this handle calls.

        Raises CB404 once the handle is closed (it no longer holds it).
        """
        return self._pinned().compiled

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
        """Whether this handle runs the full checks (alignment of raw addresses, owner names) on every launch."""
        return self._checked

    def storage_bytes(self) -> bytes:
        """The bytes the entry point reads for the runtime slots, as last written."""
        lay = self._shared.layout
        return bytes(self._storage[: lay.struct.size])

    def slot_bytes(self, name: str) -> bytes:
        """The bytes of one slot, as last written."""
        lay = self._shared.layout
        names = self._shared.names
        if name not in names:
            raise D.error(
                D.UNEXPECTED_ARGUMENT,
                kernel=self._shared.kernel,
                parameter=str(name),
                expected=f"a runtime parameter of the handle ({', '.join(names)})",
                got=repr(name),
            )
        i = names.index(name)
        return bytes(self._storage[lay.offsets[i] : lay.offsets[i] + lay.sizes[i]])

    def snapshot(self) -> LaunchSnapshot:
        """The launch as plain data (:class:`LaunchSnapshot`): entry point, argument layout, storage bytes.

        For a launcher that makes the call itself (``cute_bind.jax``'s XLA
        handler); read once when it is set up, never per launch. It reads the
        handle as it is, whatever its :attr:`state`: the entry point is only
        callable while the handle (or another holder) keeps its module loaded.
        """
        sh = self._shared
        return LaunchSnapshot(
            kernel=sh.kernel,
            names=sh.names,
            slots=sh.slots,
            offsets=tuple(sh.layout.offsets),
            part_offsets=tuple(sh.layout.part_offsets),
            storage=bytes(self._storage),
            entry_address=sh.entry_address,
            has_result=sh.has_result,
            extra_pointers=tuple(int(x) for x in sh.extra_pointers),
            guarded=sh.guard is not None,
        )

    def clone(self) -> PreparedLaunch[P]:
        """A new handle for the same compiled function, with its own storage (e.g. one per thread)."""
        return PreparedLaunch(self._shared, self._pinned(), self.storage_bytes(), self._checked)

    def with_checks(self, enabled: bool = True) -> PreparedLaunch[P]:
        """A clone that runs (or skips) the checked-mode checks on every launch."""
        return PreparedLaunch(self._shared, self._pinned(), self.storage_bytes(), enabled)

    def __copy__(self) -> PreparedLaunch[P]:
        """``copy.copy(handle)`` is :meth:`clone`: a copy sharing storage would share the busy flag and close."""
        return self.clone()

    def __deepcopy__(self, memo: dict[int, object]) -> PreparedLaunch[P]:
        """``copy.deepcopy(handle)`` is :meth:`clone` too (the compiled function is never copied)."""
        return self.clone()

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise D.error(
            D.HANDLE_NOT_PICKLABLE,
            kernel=self._shared.kernel,
            expected="a handle bound in this process (bind again after unpickling the arguments)",
            got="pickle of a PreparedLaunch",
        )

    def close(self) -> None:
        """Release the handle's pin on the compiled module; later launches raise CB404.

        The module itself is released once no handle or clone pins it and
        nothing else (the kernel's compile cache, your own reference) holds
        the compiled function. Idempotent (:class:`~cute_bind.launch.lifecycle.Lifecycle`).
        """
        self._leave_state(HandleState.CLOSED)

    def __enter__(self) -> PreparedLaunch[P]:
        return self

    def __repr__(self) -> str:
        sh = self._shared
        slots = ", ".join(f"{n}: {s.describe()}" for n, s in zip(sh.names, sh.slots))
        state = f" {self._state.value}" if self._state is not HandleState.OPEN else (" checked" if self._checked else "")
        return f"<PreparedLaunch {sh.kernel}({slots}){state}>"


def _guarded(guard: Callable[[], None], call: Any) -> Callable[[Any], None]:
    """``call`` preceded by ``guard`` (which raises when the direct call would refuse)."""

    def guarded_call(argv: Any) -> None:
        guard()
        call(argv)

    return guarded_call


def build(
    *,
    kernel: str,
    compiled: Any,
    names: Sequence[str],
    bounds: Sequence[Bound],
    defaults: dict[str, object],
    constexpr_names: Sequence[str] = (),
    checked: bool | None = None,
) -> PreparedLaunch[Any]:
    """Run the DSL's marshalling once and build a handle from its bytes."""
    dsl.require_contract_once()
    guard = dsl.specialization_guard(compiled, kernel, names)
    if dsl.workspace_argument_count(compiled):
        raise D.error(D.WORKSPACE_ARGUMENTS, kernel=kernel, expected="0", got=str(dsl.workspace_argument_count(compiled)))
    slots = tuple(b.slot for b in bounds)
    for name, slot in zip(names, slots):
        _check_fast_class(kernel, name, slot)
    layout = Layout(slots)
    # The DSL's own marshalling, once, with the DSL objects for these values.
    addresses, keepalive = dsl.marshal(compiled, tuple(b.dsl_value for b in bounds), {})
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
    ours = layout.struct.pack(*flatten(slots, [b.packed for b in bounds]))
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
    entry = dsl.entry_point(compiled, kernel)
    # Defaults are pre-coerced so a call relying on them stays on the fast path.
    # Kinds with a converter keep the raw default (their fast paths convert it)
    # after checking it once here.
    # A default the compiled slot cannot take (``window: Optional[Int32] = None``
    # compiled with a value) stays raw: a launch that leaves the parameter out
    # then raises the slot's own error (CB225), as it would for ``None`` passed.
    packed_defaults = {}
    for name, slot, where in zip(names, slots, (Where(kernel, n) for n in names)):
        if name in defaults:
            try:
                coerced = slot.coerce(defaults[name], where)
            except D.CuteBindError:
                packed_defaults[name] = defaults[name]
                continue
            packed_defaults[name] = coerced if slot.converter(where) is None else defaults[name]
    returns = 0 if entry.result_ctype is not None else None
    shared = _Shared(kernel, tuple(names), slots, packed_defaults, frozenset(constexpr_names), layout, returns, entry)
    shared.guard = guard
    # the storage starts as our own packing (equal to the DSL's, item for item, as checked above):
    # the padding the DSL leaves uninitialised is zero, as every later struct.pack writes it, so the
    # fast paths (which write items only) and the slow path leave the same bytes
    initial = ours + bytes(snapshot[len(ours) :])
    return PreparedLaunch(shared, _Pin(compiled, entry), initial, _checked_default() if checked is None else checked)
