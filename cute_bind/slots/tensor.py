"""The tensor slot kind: a ``cute.Tensor`` parameter rewritten in place.

The DSL passes a tensor as one C pointer to a memref descriptor: the data
address, then each dynamic extent (``?`` in the layout) and each dynamic
stride, as a naturally aligned C struct (``{void*; i32 extents...; i64 or i32
strides...}``). Static extents and strides are constants of the compiled code.

``bind()`` builds the DSL tensor the compile needs (``from_dlpack`` plus the
annotation's layout marking, or the ``from_dlpack`` tensor it is given) and
records what the compiled code assumes: element type, rank, device, assumed
alignment, every static extent and stride, each dynamic mode's integer width
and divisibility. A launch then reads the new tensor through DLPack (one C call
for types offering the DLPack exchange API, such as torch tensors), checks it
against those facts and writes only the descriptor: data address and dynamic
values. Every check is always on: measured in the C fast path they cost a few
nanoseconds next to the DLPack read itself (see the benchmarks page).
"""

from __future__ import annotations

import struct
import typing
import weakref
from typing import Any, Hashable, NamedTuple

from .. import dsl
from .. import diagnostics as D
from .._generated import compile_source
from .._types import TensorSpec, tensor_spec_of
from . import dlpack as _dlpack
from .base import (
    Converter,
    Probe,
    NEGATIVE_FIX,
    Bound,
    Held,
    SlotKind,
    Unprobeable,
    Where,
    describe_value,
    invalid_dlpack,
    item_ranges,
    negative_view,
)
from .registry import register

__all__ = ["TensorKind", "CTensorSpec", "CMode"]

_WIDTH_FMT = {32: "i", 64: "q"}
_RANGE = {32: (-(1 << 31), (1 << 31) - 1), 64: (-(1 << 63), (1 << 63) - 1)}
_INT32_MAX = (1 << 31) - 1
_U64 = 1 << 64


class CMode(NamedTuple):
    """One mode (extent or stride) of a :class:`CTensorSpec`."""

    static: int  # the compiled-in value of a static mode (0 for a dynamic one)
    dynamic: int  # 1: the launch writes the value; 0: it must equal ``static``
    width: int  # 32 or 64 for a dynamic mode (0 for a static one)
    divisibility: int  # a dynamic value must be a multiple of it (1: any)
    offset: int  # byte offset of a dynamic value in the descriptor (-1 for a static one)


class CTensorSpec(NamedTuple):
    """What the C fast path's class "T" needs of a tensor slot: a typed record with a fixed
    field count, which ``_claunch.c`` checks (``TENSOR_SPEC_FIELDS``) before reading it.

    ``function``/``type``/``capsule`` are the bound value type's DLPack exchange
    function (its address), the type and its exchange-API capsule, or ``0``/
    ``None``/``None`` when the C code learns them at the first launch.
    """

    function: int
    type: Any
    capsule: Any
    api_offset: int  # where dltensor_from_py_object_no_sync sits in an exchange-API table
    dtype: tuple[int, int, int]  # DLPack (code, bits, lanes)
    device: tuple[int, int]  # DLPack (device type, device id)
    align: int  # the data address must be a multiple of it
    ndim: int
    modes: tuple[CMode, ...]  # extents then strides: 2 * ndim
    footprint32: int  # 1: 32-bit strides, the footprint must fit Int32


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:160].rstrip(".") if text else ""


def _empty(view: _dlpack.DLView) -> bool:
    return 0 in view.shape


def _mode_text(mode: dsl.Mode) -> str:
    """A mode as the DSL spells it in a layout: ``8``, ``?``, ``?{div=8}``, ``?{i64 div=8}``."""
    if mode.static is not None:
        return str(mode.static)
    attrs = " ".join(a for a in ("i64" if mode.width == 64 else "", f"div={mode.divisibility}" if mode.divisibility != 1 else "") if a)
    return f"?{{{attrs}}}" if attrs else "?"


def _leading_dim(view: _dlpack.DLView) -> int | None:
    """The leading dimension ``mark_layout_dynamic()`` deduces: the one mode of unit stride, or among
    several the one of extent above 1; ``None`` when there is none (then every stride is dynamic)."""
    units = [k for k, st in enumerate(view.strides) if st == 1]
    if len(units) > 1:
        units = [k for k in units if view.shape[k] > 1] or units[-1:]
    return units[0] if len(units) == 1 else units[-1] if units else None


def _footprint(view: _dlpack.DLView) -> int:
    """Elements spanned by a tensor's layout: 1 + sum of (extent - 1) * |stride| (0 when empty)."""
    if any(e == 0 for e in view.shape):
        return 0
    return 1 + sum((e - 1) * abs(st) for e, st in zip(view.shape, view.strides))


class TensorKind(SlotKind):
    """A tensor: its memref descriptor (data address, dynamic extents and strides)."""

    kind = "tensor"
    #: its value's address is read by ``coerce`` (read after the other slots': the lifetime rule)
    reads_address = True
    fast = "T"
    packs_tuple = True

    def __init__(
        self,
        spec: TensorSpec | None = None,
        layout: dsl.TensorLayout | None = None,
        dtype: tuple[int, int, int] | None = None,
        device: tuple[int, int] | None = None,
        align: int = 1,
        value_type: type | None = None,
    ) -> None:
        self.spec = spec or TensorSpec()
        # resolved at bind(): what the compiled function assumes (None before)
        self.layout = layout
        self.dtype = dtype
        self.device = device
        self.align = align
        self.value_type = value_type
        # the value bound (weakly): what a TVM-FFI handle is prepared with (see sample())
        self._sample: Any = None
        # the last value type and its reader (Python paths); held here, not in a global
        # table, so a type referring to the handle can still be collected with it
        self._reader_cache: tuple[Any, Any] = (None, None)
        if layout is None:
            self.fmt = "Q"
            self._width = 1
            self.fast = "X"
            return
        fmt = "Q"
        for mode in (*layout.shape, *layout.stride):
            if mode.static is None:
                fmt += _WIDTH_FMT[mode.width]
        # the descriptor is a C struct holding a pointer: its size is a multiple of 8
        self.fmt = fmt + "0Q"
        self._width = 1 + sum(m.static is None for m in (*layout.shape, *layout.stride))
        # the C fast path reads any type offering the DLPack exchange API (it learns
        # a new one at its first launch); the bound value's type is its first guess
        self._exchange = _dlpack.exchange_function(value_type) if value_type is not None else None
        self.fast = "T"
        # (index into shape + strides, static value or None, lo, hi, divisibility), for pack_view
        self._plan = tuple((k, m.static, *_RANGE[m.width], m.divisibility) for k, m in enumerate((*layout.shape, *layout.stride)))
        # 32-bit dynamic strides: the compiled index arithmetic is 32-bit, so the
        # whole footprint must fit Int32 (the DSL refuses such a tensor at marshal time)
        self._footprint32 = any(m.static is None and m.width == 32 for m in layout.stride)

    def __repr__(self) -> str:
        return f"TensorKind({self.describe()})"

    @property
    def width(self) -> int:
        return self._width

    def describe(self) -> str:
        if self.layout is not None:
            return f"Tensor[{getattr(self.layout.dtype, '__name__', '?')}, {self.layout.text}]"
        if self.spec.dtype is None:
            return "cute.Tensor"
        return self.spec.describe()

    @classmethod
    def recognize(cls, annotation: object) -> TensorKind | None:
        tensor_cls = dsl.cute_tensor_class()
        base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
        if base is tensor_cls or (isinstance(base, type) and issubclass(base, tensor_cls)):
            return cls(tensor_spec_of(annotation))
        return None

    @classmethod
    def infer(cls, value: object) -> TensorKind | None:
        """An unannotated tensor: a ``from_dlpack`` tensor or any DLPack exporter (not a number)."""
        if dsl.is_dsl_tensor(value) or (hasattr(value, "__dlpack__") and not isinstance(value, (int, float))):
            return cls()
        return None

    def expected(self) -> str:
        return f"a DLPack tensor (torch tensor, NumPy array, ...) or a from_dlpack tensor for a {self.describe()} slot"

    # ------------------------------------------------------------------ reading values
    def _read(self, value: object, where: Where) -> _dlpack.DLView:
        if dsl.is_dsl_tensor(value):
            return _dlpack.read_capsule(dsl.dsl_tensor_capsule(value), consumed=True)
        if isinstance(value, (bool, int, float, str, bytes)) or value is None:
            raise self.refusal(where, value)
        if negative_view(value):
            raise self.refusal(where, value, f"{self.expected()} (a tensor with its negative bit set: {NEGATIVE_FIX})")
        if self.device is not None and _dlpack.reader_for(type(value)) is None:
            # an export-free device check first, so a foreign device is
            # reported as such and never exported
            device = _dlpack.device_of(value)
            if device is not None and device != self.device:
                raise self._device_error(device, where)
        try:
            return _dlpack.read(value)
        except _dlpack.InvalidDLPack as exc:
            raise invalid_dlpack(where, str(exc), describe_value(value)) from None
        except Exception as exc:  # not readable, or a hostile __dlpack__ that raised: a typed error
            # a read-only capsule, or NumPy refusing to export a read-only array through unversioned DLPack
            if isinstance(exc, _dlpack.ReadOnlyDLPack) or (
                isinstance(exc, BufferError)
                and (getattr(getattr(value, "flags", None), "writeable", True) is False or _dlpack.cai_read_only(value))
            ):
                raise where.error(D.READ_ONLY_BUFFER, expected="a writable tensor", got=describe_value(value)) from None
            raise where.error(
                D.WRONG_KIND, expected=self.expected(), got=f"{describe_value(value)} ({exc})", conversion=self.conversion()
            ) from None

    def _device_error(self, device: tuple[int, int], where: Where) -> Exception:
        return where.error(
            D.TENSOR_DEVICE_MISMATCH,
            expected=_dlpack.describe_device(self.device or (0, 0)),
            got=f"a tensor on {_dlpack.describe_device(device)}",
        )

    def _check_spec(self, dtype_name: str, rank: int, where: Where) -> None:
        spec = self.spec
        if spec.dtype is not None and dtype_name != spec.dtype.__name__:
            raise where.error(D.TENSOR_DTYPE_MISMATCH, expected=spec.describe(), got=f"a {dtype_name} tensor")
        if spec.rank is not None and rank != spec.rank:
            raise where.error(D.TENSOR_RANK_MISMATCH, expected=spec.describe(), got=f"a rank-{rank} tensor")

    # ------------------------------------------------------------------ slot protocol
    def sample(self) -> Any:
        """The value this slot was bound with, while it is alive (else ``None``).

        A TVM-FFI kernel's handle is prepared from the values of the call that
        made it: the value's type picks the entry's tensor reader.
        """
        ref = self._sample
        return ref() if ref is not None else None

    def _bound(self, bound: TensorKind, value: object) -> TensorKind:
        try:
            bound._sample = weakref.ref(value)
        except TypeError:  # not weak-referenceable: no sample (a TVM-FFI handle then calls the function itself)
            pass
        return bound

    def _bind_fake(self, value: object, where: Where) -> Bound:
        """A ``make_fake_tensor`` placeholder: the compile's spec itself (``Kernel.compile`` only)."""
        state = dsl.compiling()
        if state is None:
            raise where.error(
                D.COMPILE_ONLY_VALUE,
                expected=f"a real tensor ({self.expected()}); fake tensors are for kernel.compile(...)",
                got=describe_value(value),
            )
        self._check_spec(*dsl.fake_tensor_facts(value), where)
        return Bound(packed=None, dsl_value=value, key=dsl.fake_tensor_spelling(value, state), slot=self)

    def bind(self, value: Any, where: Where) -> Bound:
        if dsl.is_fake_tensor(value):
            return self._bind_fake(value, where)
        view = self._read(value, where)
        if self.spec.shape is not None and not dsl.is_dsl_tensor(value):
            return self._bind_shaped(value, view, where)
        if dsl.is_dsl_tensor(value):
            tensor = value  # the caller's from_dlpack tensor: its marking decides the layout
            self._check_spec(value.element_type.__name__, len(view.shape), where)
        else:
            dtype_name = _dlpack.describe_dtype(view.dtype)
            self._check_spec(dtype_name, len(view.shape), where)
            if not _dlpack.is_cute_dtype(view.dtype):
                raise where.error(
                    D.TENSOR_DTYPE_MISMATCH,
                    expected="a tensor of a CuTe element type (Float32, Float16, BFloat16, Int8, ..., Float8E4M3FN, ...)",
                    got=f"a {dtype_name} tensor",
                )
            # A tensor that requires grad is read like any other (its data, not autograd);
            # torch refuses to export it, so the DSL tensor is built from a detached view.
            source = value.detach() if getattr(value, "requires_grad", False) and hasattr(value, "detach") else value
            try:
                tensor = dsl.dsl_tensor(source, self.spec.align, self.spec.layout)
            except Exception as exc:  # the DSL's own refusal (e.g. no unit stride for the leading dimension)
                raise where.error(
                    D.TENSOR_LAYOUT_MISMATCH,
                    detail="the DSL cannot mark this tensor's layout",
                    expected=self.spec.describe(),
                    got=D.exception_summary(exc),
                ) from None
        try:
            layout = dsl.tensor_layout(tensor)
        except ValueError as exc:
            raise self.refusal(where, value, f"a tensor with a flat layout ({exc})") from None
        except Exception as exc:  # e.g. an element type the DSL cannot map
            raise where.error(
                D.TENSOR_DTYPE_MISMATCH, expected="a tensor of an element type the DSL takes", got=D.exception_summary(exc)
            ) from None
        if tensor is value and self.spec.align is not None and layout.assumed_align != self.spec.align:
            # the annotation promises an alignment the compiled code would not assume
            raise where.error(
                D.TENSOR_LAYOUT_MISMATCH,
                detail="the annotation's alignment and the from_dlpack tensor's assumed_align differ",
                expected=f"from_dlpack(t, assumed_align={self.spec.align}) for {self.spec.describe()}",
                got=f"assumed_align={layout.assumed_align}",
            )
        align = layout.assumed_align or max(1, int(getattr(layout.dtype, "width", 8)) // 8)
        bound = self._bound(
            TensorKind(self.spec, layout=layout, dtype=view.dtype, device=view.device, align=align, value_type=type(value)), value
        )
        if tensor is value and view.address == 0 and dsl.compiling() is not None:
            # a from_dlpack tensor of a meta or fake tensor (FlashAttention compiles from those):
            # its layout is the compile's; nothing is launched, so no descriptor
            return Bound(packed=None, dsl_value=tensor, key=(layout.cache_key, view.device[0]), slot=bound)
        packed = bound.pack_view(view, where)
        return Bound(packed=packed, dsl_value=tensor, key=(layout.cache_key, view.device[0]), slot=bound)

    def _bind_shaped(self, value: object, view: _dlpack.DLView, where: Where) -> Bound:
        """A tensor for a ``cute_bind.Tensor[dtype, (extent, ...), align, layout]`` slot: the layout
        is the annotation's, mode by mode (see ``TensorSpec``), compiled from a fake tensor of it."""
        spec = self.spec
        shape_spec = spec.shape or ()
        dtype_name = _dlpack.describe_dtype(view.dtype)
        self._check_spec(dtype_name, len(view.shape), where)
        elem = max(1, int(getattr(spec.dtype, "width", 8)) // 8)
        align = spec.align or elem
        shape: list[dsl.Mode] = []
        for i, (e, v) in enumerate(zip(shape_spec, view.shape)):
            if e.kind == "fixed" and v != e.value:
                raise self._layout_error(f"extent of mode {i}", f"{e.value} (the annotation {spec.describe()})", view, where)
            shape.append(dsl.Mode(None, 32, e.value) if e.kind == "dynamic" else dsl.Mode(int(v)))
        if spec.layout == "static":
            stride = [dsl.Mode(int(st)) for st in view.strides]
        else:
            lead = spec.layout if isinstance(spec.layout, int) else _leading_dim(view)
            if isinstance(lead, int) and view.strides[lead] != 1:
                raise self._layout_error(f"stride of mode {lead}", f"1 (the leading dimension of {spec.describe()})", view, where)
            # "align bytes" holds for every row: each dynamic stride is a multiple of it (in elements)
            div = max(1, align // elem) if spec.align is not None else 1
            stride = [dsl.Mode(1) if k == lead else dsl.Mode(None, 64, div) for k in range(len(view.strides))]
        text = f"({','.join(_mode_text(m) for m in shape)}):({','.join(_mode_text(m) for m in stride)})"
        gpu = view.device[0] in (2, 13)  # DLPack kDLCUDA, kDLCUDAManaged: gmem, as from_dlpack has it
        key = ("cute_bind.Tensor", spec.dtype.__name__, align, "gmem" if gpu else "generic", text)
        layout = dsl.TensorLayout(dtype=spec.dtype, shape=tuple(shape), stride=tuple(stride), assumed_align=align, text=text, cache_key=key)
        bound = self._bound(
            TensorKind(spec, layout=layout, dtype=view.dtype, device=view.device, align=align, value_type=type(value)), value
        )
        packed = bound.pack_view(view, where)
        descriptor = struct.pack("@" + bound.fmt, *packed)
        dsl_value = dsl.laid_out_tensor(
            spec.dtype,
            tuple(m.static if m.static is not None else (m.width, m.divisibility) for m in shape),
            tuple(m.static if m.static is not None else (m.width, m.divisibility) for m in stride),
            gpu,
            align,
            descriptor,
        )
        return Bound(packed=packed, dsl_value=dsl_value, key=(key, view.device[0]), slot=bound)

    def coerce(self, value: object, where: Where, checked: bool = False) -> tuple[int, ...] | Held:
        tp = type(value)  # the exact type: a proxy's __class__ may lie
        cached = self._reader_cache  # one tuple, replaced whole: safe across threads
        if cached[0] is tp:
            reader = cached[1]
        else:
            reader = _dlpack.reader_for(tp)
            self._reader_cache = (tp, reader)
        if reader is not None:
            view = reader(value)
            if view is not None:
                return self.pack_view(view, where)  # borrowed from ``value``, which the launch holds
        view = self._read(value, where)
        packed = self.pack_view(view, where)
        # read through a capsule that may own the memory: it lives as long as the packed items
        return packed if view.owner is None else Held(packed, view.owner)

    def converter(self, where: Where) -> Converter | None:
        """For the Python fast path: :meth:`coerce`, preceded for exact torch tensors and NumPy arrays
        by a check of this slot's facts generated for its layout (no DLView, no loop), which
        returns the descriptor's items when every fact holds and else leaves the value to ``coerce``."""
        return _direct_converter(self, where) or self.coerce_converter(where)

    def pack_view(self, view: _dlpack.DLView, where: Where) -> tuple[int, ...]:
        """Check one tensor's facts against the compiled ones; the descriptor's items."""
        if (
            view.dtype == self.dtype
            and view.device == self.device
            and 0 < view.address < _U64
            and not view.address % self.align
            and len(view.shape) == len(self._plan) // 2
        ):
            shape = view.shape
            values = shape + view.strides
            n = len(shape)
            out = [view.address]
            for k, static, lo, hi, div in self._plan:
                v = values[k]
                if static is None and lo <= v <= hi and not v % div:
                    out.append(v)
                elif static is None or (v != static and not (k >= n and shape[k - n] == 1)):
                    break  # an extent-1 mode's stride is never used (its index is always 0)
            else:
                if not self._footprint32 or _footprint(view) <= _INT32_MAX:
                    return tuple(out)
        return self._diagnose(view, where)

    def _diagnose(self, view: _dlpack.DLView, where: Where) -> tuple[int, ...]:
        """``pack_view`` step by step: raises the catalog error for the first fact that differs,
        or returns the items (an empty tensor: its strides are not checked against static ones,
        NumPy reports 0 for them; a NULL address is fine when it has no elements)."""
        layout = self.layout
        if layout is None:  # pragma: no cover - only bound slots are packed
            raise RuntimeError("an unbound tensor slot has no layout")
        empty = _empty(view)
        if not 0 <= view.address < _U64 or any(e < 0 for e in view.shape):
            raise invalid_dlpack(where, "an address beyond 64 bits or a negative extent", f"address {view.address:#x}, shape {view.shape}")
        if view.address == 0 and not empty:
            raise where.error(
                D.NULL_DATA,
                expected="a tensor that owns memory",
                got=f"a tensor of shape {view.shape} at address 0 (a meta or fake tensor?)",
            )
        if view.dtype != self.dtype:
            raise where.error(
                D.TENSOR_DTYPE_MISMATCH,
                expected=f"{_dlpack.describe_dtype(self.dtype or (0, 0, 0))} tensors",
                got=f"a {_dlpack.describe_dtype(view.dtype)} tensor",
            )
        if len(view.shape) != len(layout.shape):
            raise where.error(
                D.TENSOR_RANK_MISMATCH,
                expected=f"rank-{len(layout.shape)} tensors (layout {layout.text})",
                got=f"a rank-{len(view.shape)} tensor of shape {view.shape}",
            )
        if view.device != self.device:
            raise self._device_error(view.device, where)
        if view.address % self.align:
            raise where.error(D.MISALIGNED_POINTER, expected=f"{self.align} bytes", got=hex(view.address))
        shapes: list[int] = []
        strides: list[int] = []
        for what, modes, values, out in (("extent", layout.shape, view.shape, shapes), ("stride", layout.stride, view.strides, strides)):
            for i, (mode, v) in enumerate(zip(modes, values)):
                if mode.static is not None:
                    # an empty tensor's strides, and an extent-1 mode's, are never used
                    if v != mode.static and not (what == "stride" and (empty or view.shape[i] == 1)):
                        raise self._layout_error(f"{what} of mode {i}", f"{mode.static} (layout {layout.text})", view, where)
                    continue
                lo, hi = _RANGE[mode.width]
                if not lo <= v <= hi:
                    raise where.error(
                        D.INTEGER_OUT_OF_RANGE,
                        expected=f"the Int{mode.width} {what} of mode {i}",
                        got=f"{v} (shape {view.shape}, strides {view.strides})",
                    )
                if v % mode.divisibility:
                    raise self._layout_error(
                        f"{what} of mode {i}", f"a multiple of {mode.divisibility} (layout {layout.text})", view, where
                    )
                out.append(v)
        if self._footprint32 and _footprint(view) > _INT32_MAX:
            raise where.error(
                D.INTEGER_OUT_OF_RANGE,
                expected=f"Int32 index arithmetic: a footprint (1 + sum of (extent - 1) * |stride|) up to {_INT32_MAX} elements "
                f"(layout {layout.text} has 32-bit strides)",
                got=f"{_footprint(view)} (shape {view.shape}, strides {view.strides})",
            )
        return (view.address, *shapes, *strides)

    @staticmethod
    def _layout_error(detail: str, expected: str, view: _dlpack.DLView, where: Where) -> Exception:
        return where.error(D.TENSOR_LAYOUT_MISMATCH, detail=detail, expected=expected, got=f"shape {view.shape}, strides {view.strides}")

    def descriptor_groups(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """What this bound slot writes after the data address: the bit widths of its
        dynamic extents, then of its dynamic strides, in mode order (``None`` before bind).

        ``prepare()`` compares this with the compiled function's own argument
        type for the tensor (:func:`cute_bind.dsl.tensor_argument_groups`):
        equal groups mean the descriptor it writes is the one the compiled code
        reads, field for field. Static values and divisibilities are not in an
        argument type; they come from the value given to ``prepare()`` (a
        ``from_dlpack`` tensor marked as when compiling carries them exactly).
        """
        if self.layout is None:
            return None
        return (
            tuple(m.width for m in self.layout.shape if m.static is None),
            tuple(m.width for m in self.layout.stride if m.static is None),
        )

    def groups_pin_layout(self) -> bool:
        """Whether equal :meth:`descriptor_groups` also fix which modes are static.

        An argument type holds counts and widths, not positions: a rank-2
        ``(?,?):(?{i64},1)`` and ``(?,?):(1,?{i64})`` (another leading
        dimension) have the same groups. They pin the layout when no mode is
        static beside a dynamic one in the same group (all extents and all
        strides dynamic, or rank 1).
        """
        layout = self.layout
        if layout is None:
            return False
        if len(layout.shape) <= 1:
            return True
        return all(
            all(m.static is None for m in modes) or all(m.static is not None for m in modes) for modes in (layout.shape, layout.stride)
        ) and all(m.static is None for m in layout.stride)

    def schema_element(self) -> tuple[str, bool]:
        """A torch op passes it as a tensor."""
        return ("Tensor", True)

    def probe(self) -> Probe:
        """The value's type, element type, device and layout pattern (all of it for a static layout;
        for a dynamic one which modes have unit stride and which extent exceeds 1, as
        ``mark_layout_dynamic`` reads them)."""
        layout = self.spec.layout

        def probe(value: object) -> Hashable:
            if dsl.is_dsl_tensor(value) or isinstance(value, (bool, int, float, str, bytes)) or value is None:
                raise Unprobeable  # a from_dlpack tensor's own marking decides: the full path reads it
            try:
                view = _dlpack.read(value)
            except Exception:
                raise Unprobeable from None
            if layout == "static":
                return (value.__class__, view.dtype, view.device, view.shape, view.strides)
            units = tuple((s == 1, e > 1) for e, s in zip(view.shape, view.strides))
            return (value.__class__, view.dtype, view.device, units)

        return probe

    def c_spec(self) -> CTensorSpec | None:
        """The :class:`CTensorSpec` of the C fast path's class "T" (None before ``bind()``).

        Each mode is a :class:`CMode`: a static one carries its value (offset
        -1), a dynamic one its width, divisibility and the byte offset where
        the C code writes it (extents then strides, right after the data
        address, at the offsets ``struct`` gives).
        """
        layout = self.layout
        if layout is None:
            return None
        modes = []
        offsets = iter([start for start, _ in item_ranges(self.fmt)[1:]])  # after the data address
        for mode in (*layout.shape, *layout.stride):
            if mode.static is None:
                modes.append(CMode(0, 1, mode.width, mode.divisibility, next(offsets)))
            else:
                modes.append(CMode(mode.static, 0, 0, 1, -1))
        ex = self._exchange
        return CTensorSpec(
            function=ex.address if ex else 0,
            type=self.value_type if ex else None,
            capsule=ex.capsule if ex else None,
            api_offset=_dlpack.EXCHANGE_FROM_PYOBJECT_OFFSET,
            dtype=self.dtype or (0, 0, 0),
            device=self.device or (0, 0),
            align=self.align,
            ndim=len(layout.shape),
            modes=tuple(modes),
            footprint32=int(self._footprint32),
        )


_DIRECT_CACHE: dict[tuple[Any, ...], Any] = {}


def _direct_source(plan: tuple[tuple[int, Any, int, int, int], ...], torch_device: str | None, numpy: int, cai: int) -> str:
    """The source of a direct converter for one layout ``plan`` (see :meth:`TensorKind.converter`).

    ``torch_device``: the device test of an exact torch tensor (None: none read directly);
    ``numpy``: the item size of the slot's element type when exact NumPy arrays are read directly (0: not);
    ``cai``: that item size when ``__cuda_array_interface__`` exporters are read directly (0: not).
    """
    n = len(plan) // 2

    def checks(s: str, st: str) -> tuple[str, str]:
        conds, items = [f"len({s}) == {n}"], []
        for k, static, lo, hi, div in plan:
            v = f"{s}[{k}]" if k < n else f"{st}[{k - n}]"
            if static is not None and k >= n:  # an extent-1 mode's stride is never used
                conds.append(f"({v} == {static} or {s}[{k - n}] == 1)")
            elif static is not None:
                conds.append(f"{v} == {static}")
            else:
                conds.append(f"{lo} <= {v} <= {hi}" + (f" and not {v} % {div}" if div != 1 else ""))
                items.append(v)
        return " and ".join(conds), "".join(f", {i}" for i in items)

    lines = ["def factory(coerce, where, T0, T1, want_t, align, N, want_np, at, off, dev, want_ts, learn):"]
    if cai:
        # the one exporter type this slot reads directly, learnt at its first value (None: none yet),
        # and the last type that went to ``learn`` (each type is asked once, not per launch)
        lines += ["    cai = [None, None]"]
    lines += ["    def convert(t):", "        tp = type(t)"]
    if torch_device is not None:
        cond, items = checks("s", "st")
        lines += [
            "        if tp is T0 or tp is T1:",
            f"            if t.dtype is want_t and {torch_device}:",
            "                a = t.data_ptr()",
            "                s = t.shape",
            "                st = t.stride()",
            f"                if a and not a % align and {cond}:",
            f"                    return (a{items})",
        ]
    if numpy:
        cond, items = checks("s", "st")
        conv = ", ".join(f"b[{i}] // {numpy}" for i in range(n)) + ("," if n == 1 else "")
        ok = " and ".join(f"not b[{i}] % {numpy}" for i in range(n)) or "True"
        lines += [
            "        if tp is N:",
            "            if t.dtype is want_np and t.flags.writeable:",
            "                a = at(id(t) + off).value or 0",
            "                s = t.shape",
            "                b = t.strides",
            f"                if len(b) == {n} and {ok}:",
            f"                    st = ({conv})",
            f"                    if a and not a % align and {cond}:",
            f"                        return (a{items})",
        ]
    if cai:
        # an interface that is not plainly this slot's (read-only, masked, another device, an
        # element that is not an exact int...) goes to ``coerce``: read_cai and the catalog errors.
        # Every element is type-tested before it is compared or computed with: no method of the
        # producer's objects runs here but its own two (the property and __dlpack_device__)
        cond, items = checks("s", "st")
        # a negative extent is refused by read_cai (the export then reads the array): the plan's
        # ranges are the compiled integer widths, which take negatives
        ints = " and ".join([f"type(s[{i}]) is int and s[{i}] >= 0" for i in range(n)] + ["True"])
        compact = ", ".join("*".join([f"s[{j}]" for j in range(i + 1, n)] or ["1"]) for i in range(n)) + ("," if n == 1 else "")
        strided = " and ".join(
            [f"type(b[{i}]) is int" for i in range(n)] + ([f"not b[{i}] % {cai}" for i in range(n)] if cai != 1 else []) + ["True"]
        )
        conv = ", ".join(f"b[{i}] // {cai}" if cai != 1 else f"b[{i}]" for i in range(n)) + ("," if n == 1 else "")
        lines += [
            "        if tp is cai[0]:",
            "            try:",
            "                i = t.__cuda_array_interface__",
            "                d = t.__dlpack_device__()",
            "            except Exception:",
            "                return coerce(t, where)",
            "            if type(i) is dict and type(d) is tuple and len(d) == 2 and type(d[0]) is int and type(d[1]) is int and d == dev:",
            "                g = i.get",
            "                p = g('data')",
            "                s = g('shape')",
            "                b = g('strides')",
            "                y = g('typestr')",
            "                if type(p) is tuple and len(p) == 2 and p[1] is False and type(y) is str and y in want_ts"
            f" and type(s) is tuple and len(s) == {n} and g('mask') is None and {ints}:",
            "                    a = p[0]",
            "                    if type(a) is int and 0 < a < 18446744073709551616 and not a % align:",
            "                        if b is None:",
            f"                            st = ({compact})",
            f"                        elif type(b) is tuple and len(b) == {n} and {strided}:",
            f"                            st = ({conv})",
            "                        else:",
            "                            st = None",
            f"                        if st is not None and {cond}:",
            f"                            return (a{items})",
            "            return coerce(t, where)",
            "        if tp is not cai[1]:",
            "            cai[1] = tp",
            "            if cai[0] is None and learn(tp):",
            "                cai[0] = tp",
        ]
    lines += ["        return coerce(t, where)", "    return convert"]
    return "\n".join(lines) + "\n"


def _learn_cai(tp: type) -> bool:
    """Whether values of type ``tp`` are read through ``__cuda_array_interface__`` (CuPy, Numba)."""
    return _dlpack.reader_for(tp) is _dlpack.read_cai


def _direct_converter(kind: TensorKind, where: Where) -> Any:
    """The generated direct converter of a bound slot, or None (unbound, 32-bit footprint, nothing to read directly)."""
    import ctypes
    import sys

    if kind.layout is None or kind._footprint32 or kind.dtype is None or kind.device is None:
        return None
    torch = sys.modules.get("torch")
    want_t = None
    if torch is not None:
        names = {code: name for name, code in _dlpack.TORCH_DTYPE_CODES.items()}
        want_t = getattr(torch, names[kind.dtype], None) if kind.dtype in names else None
    device = kind.device
    torch_device = None
    if want_t is not None:
        torch_device = "t.is_cpu" if device == (1, 0) else (f"t.is_cuda and t.get_device() == {int(device[1])}" if device[0] == 2 else None)
    layout = _dlpack.array_layout() if device == (1, 0) else None
    want_np, item = None, 0
    if layout is not None:
        np = sys.modules["numpy"]
        for num, code, bits in layout.dtypes:
            if (code, bits, 1) == kind.dtype:
                for t in (
                    np.bool_,
                    np.int8,
                    np.int16,
                    np.int32,
                    np.int64,
                    np.uint8,
                    np.uint16,
                    np.uint32,
                    np.uint64,
                    np.float16,
                    np.float32,
                    np.float64,
                ):
                    if np.dtype(t).num == num:
                        want_np, item = np.dtype(t), np.dtype(t).itemsize
                        break
                if want_np is not None:
                    break
    want_ts = _dlpack.cai_typestrs(kind.dtype)
    cai = kind.dtype[1] // 8 if want_ts else 0
    if torch_device is None and want_np is None and not cai:
        return None
    key = (kind._plan, torch_device, item, cai)
    factory = _DIRECT_CACHE.get(key)
    if factory is None:
        namespace: dict[str, Any] = {}
        source = _direct_source(kind._plan, torch_device, item, cai)
        exec(compile_source(source, "tensor converter"), namespace)  # noqa: S102 - generated from a bound layout's integers only
        factory = _DIRECT_CACHE[key] = namespace["factory"]
    coerce = kind.coerce
    return factory(
        coerce,
        where,
        getattr(torch, "Tensor", None),
        getattr(getattr(torch, "nn", None), "Parameter", None),
        want_t,
        kind.align,
        layout.type if layout is not None and want_np is not None else None,
        want_np,
        ctypes.c_void_p.from_address,
        layout.data if layout is not None else 0,
        device,
        want_ts,
        _learn_cai,
    )


register(TensorKind)
