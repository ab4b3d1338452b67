"""The pointer slot kind: a 64-bit address, read from ints, pointers, tensors and array exporters."""

from __future__ import annotations

import ctypes
import operator
import sys
import typing
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, NamedTuple, Sequence

from .. import dsl
from .. import diagnostics as D
from .._types import PointerSpec, pointer_spec_of
from . import dlpack as _dlpack
from .base import Probe, NEGATIVE_FIX, U64, Bound, HeldAddress, SlotKind, Unprobeable, Where, describe_value, invalid_dlpack, negative_view
from .registry import register

__all__ = ["PointerKind", "CPointerSpec"]


class CPointerSpec(NamedTuple):
    """What the C fast path's class "P" needs to take a tensor or an array for a pointer slot
    as is (``_claunch.c`` checks the field count, ``POINTER_SPEC_FIELDS``): the facts
    :meth:`PointerKind.coerce` checks, fixed at bind. Anything else goes to the slow path.
    """

    function: int  # torch's DLPack exchange function (dltensor_from_py_object_no_sync), or 0
    types: tuple[type, ...]  # the exact types read through it (torch.Tensor, torch.nn.Parameter)
    capsule: object  # their exchange-API capsule (kept alive with the handle), or None
    dtype: tuple[int, int, int] | None  # DLPack (code, bits, lanes) the value must say, None: any
    cpu_ok: int  # host memory is taken (a slot not in gmem)
    cuda_ok: int  # CUDA memory is taken (a slot in gmem or of unknown space)
    device: tuple[int, int] | None  # the (DLPack type, id) device the slot was bound on, None: any
    align: int
    other_type: type | None = None  # one more exact type C hands to other_reader (the DSL's make_ptr pointers)
    other_reader: Callable[[object], int | None] | None = None  # value -> address, or None: not taken as is


# --------------------------------------------------------------------------- pointers
# array-interface typestr without its byte order ("f4") -> CuTe type name, from the DLPack module's table
_NUMPY_TYPESTR = {t: _dlpack.describe_dtype(dtype) for t, dtype in _dlpack.TYPESTR_DTYPES.items()}
# str(torch dtype) -> CuTe type name, from the DLPack module's torch dtype table
_TORCH_DTYPES = {f"torch.{name}": _dlpack.describe_dtype(code) for name, code in _dlpack.TORCH_DTYPE_CODES.items()}


@dataclass(frozen=True)
class _PointerValue:
    address: int
    dtype_name: str | None  # None: the value does not say
    space: object  # cute.AddressSpace or None
    align: int | None
    host: bool = False  # pageable host memory: never valid for a gmem slot
    device: tuple[int, int] | None = None  # (DLPack device type, id) when the value says (tensors, arrays)
    owner: object = None  # what the address was read through (a DLPack capsule, a buffer export): held until the launch returns

    def held(self) -> int:
        """The address, holding ``owner`` where there is one."""
        return self.address if self.owner is None else HeldAddress(self.address, self.owner)


def _dtype_name(dtype: object) -> str | None:
    return getattr(dtype, "__name__", None) if dtype is not None else None


def _pointer_probe(value: object) -> Hashable:
    """A pointer slot's probe (:meth:`PointerKind.probe`)."""
    cls = value.__class__
    if cls is int:
        return int
    if dsl.is_runtime_pointer(value):
        _, dtype, space, align = dsl.runtime_pointer_fields(value)
        return (cls, dtype, int(getattr(space, "value", 0)), align)
    if callable(getattr(value, "data_ptr", None)) and hasattr(value, "dtype"):
        return (cls, str(value.dtype), bool(getattr(value, "is_cuda", False)))
    for attr in ("__cuda_array_interface__", "__array_interface__"):
        iface = getattr(value, attr, None)
        if isinstance(iface, dict):
            return (cls, attr, str(iface.get("typestr", "")))
    raise Unprobeable


class PointerKind(SlotKind):
    """A pointer: 64-bit address storage.

    Accepts ``int`` addresses, ``make_ptr`` pointers, objects with an integer
    ``data_ptr()`` (torch tensors), ``__cuda_array_interface__`` /
    ``__array_interface__`` exporters (CuPy, NumPy) and ctypes pointers; on the
    checked path only, writable buffer-protocol objects (``memoryview``,
    ``array.array``, ctypes arrays: the buffer's format is the element type)
    and other ``__dlpack__`` exporters (JAX, MLX: an export per launch), each
    held until the launch returns (:class:`~cute_bind.slots.base.HeldAddress`).
    """

    kind = "pointer"
    #: its value's address is read by ``coerce`` (read after the other slots': the lifetime rule)
    reads_address = True
    fmt = "Q"
    fast = "P"

    def __init__(
        self,
        spec: PointerSpec | None = None,
        dtype: Any = None,
        space: Any = None,
        align: int | None = None,
        device: tuple[int, int] | None = None,
    ) -> None:
        self.spec = spec or PointerSpec()
        # resolved at bind(): what the compiled function assumes (None: unknown)
        self.dtype = dtype
        self.space = space
        self.align = align
        # the CUDA device of the value bound (a tensor's): a value that says it
        # lives on another device is refused (CB214); an int address says nothing
        self.device = device
        self._dtype_name = _dtype_name(dtype)

    def __repr__(self) -> str:
        return f"PointerKind({self.describe()})"

    def describe(self) -> str:
        if self.dtype is None and self.spec.dtype is None:
            return "cute.Pointer"
        dtype = self.dtype or self.spec.dtype
        align = self.spec.align
        if align is None and self.align is not None and self.align * 8 != getattr(dtype, "width", None):
            align = self.align  # an alignment beyond the element's own (the default) is part of what was compiled
        return PointerSpec(dtype, align, self.space or self.spec.space).describe()

    @classmethod
    def recognize(cls, annotation: object) -> PointerKind | None:
        pointer_cls = dsl.cute_pointer_class()
        spec = pointer_spec_of(annotation)
        base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
        if base is pointer_cls or (isinstance(base, type) and issubclass(base, pointer_cls)):
            return cls(spec)
        return None

    def expected(self) -> str:
        return f"an address (int >= 0), a tensor or array, a ctypes pointer or a make_ptr pointer for a {self.describe()} slot"

    def guard(self, var: str) -> str | None:
        return f"{var}.__class__ is int"

    # -- reading values
    def _read(self, value: Any, where: Where) -> _PointerValue:
        # bool before int: True is an int but never an address.
        if isinstance(value, bool) or value is None or isinstance(value, (float, str, bytes)):
            raise self.refusal(where, value)
        if isinstance(value, int):
            return _PointerValue(self._check_range(value, where), None, None, None)
        if dsl.is_numeric_type(type(value)):
            # a DSL number (cutlass.Float32(0.5)) has __index__: read as an address it would be a
            # made-up one (0 for 0.5), so it is refused like a Python float
            raise self.refusal(where, value)
        if dsl.is_runtime_pointer(value):
            address, dtype, space, align = dsl.runtime_pointer_fields(value)
            return _PointerValue(self._check_range(address, where), _dtype_name(dtype), space, align)
        np = sys.modules.get("numpy")
        if np is not None and isinstance(value, np.generic):
            # a NumPy scalar is a number, not an array to take the address of (an ndarray subclass,
            # np.memmap or np.matrix, is an array: read below through its interface)
            if isinstance(value, (float, complex)) or not hasattr(value, "__index__") or type(value).__name__ in ("bool_", "bool"):
                raise self.refusal(where, value)
            return _PointerValue(self._check_range(operator.index(value), where), None, None, None)
        data_ptr = getattr(value, "data_ptr", None)
        if data_ptr is not None and callable(data_ptr):
            try:
                address = data_ptr()
            except Exception as exc:  # e.g. a sparse torch tensor has no single data pointer
                raise self.refusal(
                    where, value, f"{self.expected()} (its data_ptr() raised {type(exc).__name__}: {_first_line(exc)})"
                ) from None
            if isinstance(address, bool) or not isinstance(address, int):
                raise self.refusal(where, value)
            if address == 0 and not _is_empty(value):
                raise _null_data(where, value)
            if negative_view(value):
                raise self.refusal(where, value, f"{self.expected()} (a tensor with its negative bit set: {NEGATIVE_FIX})")
            stride = getattr(value, "stride", None)
            if callable(stride) and hasattr(value, "shape"):
                shape, strides = tuple(value.shape), tuple(stride())
                if not _row_major(shape, strides):
                    raise _strided(where, value, shape, strides)
            is_cuda = bool(getattr(value, "is_cuda", False))
            space = dsl.dsl().cute.AddressSpace.gmem if is_cuda else None
            pinned = getattr(value, "is_pinned", None)
            host = not is_cuda and not (callable(pinned) and bool(pinned()))
            return _PointerValue(
                self._check_range(address, where),
                self._torch_dtype(value, where),
                space,
                None,
                host,
                _cuda_device(value) if is_cuda else None,
            )
        for attr, on_device in (("__cuda_array_interface__", True), ("__array_interface__", False)):
            iface = getattr(value, attr, None)
            if isinstance(iface, dict) and "data" in iface:
                data = iface["data"]
                if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], int) and not isinstance(data[0], bool)):
                    # None (a buffer-protocol export), a missing address...: nothing to point at
                    raise self.refusal(where, value, f"{self.expected()} (its {attr}['data'] is {data!r}, not (address, read_only))")
                address, read_only = data
                if read_only:
                    raise self._read_only(value, where)
                if address == 0 and not _is_empty(value):
                    raise _null_data(where, value)
                spelled = iface.get("typestr")
                order, typestr = (spelled[:1], spelled[1:]) if isinstance(spelled, str) else ("", "")
                if not typestr or not typestr[0].isalpha():
                    raise _mismatch(where, self.describe(), f"{attr} typestr {spelled!r}, which names no element type")
                if order not in ("<", "|", "=") or (order == "=" and sys.byteorder != "little"):
                    raise _mismatch(where, self.describe(), f"{attr} typestr {spelled!r}, not little-endian data")
                space = dsl.dsl().cute.AddressSpace.gmem if on_device else None
                device = _cuda_device(value) if on_device else None
                dtype = _NUMPY_TYPESTR.get(typestr)
                if dtype is None and _foreign_typestr(typestr, iface.get("descr")):
                    self._refuse_foreign_elements(f"{attr} typestr {spelled!r}", typestr[0] == "O", where)
                byte_strides, shape = iface.get("strides"), tuple(iface.get("shape") or ())
                itemsize = _typestr_size(typestr)
                if byte_strides is not None:
                    elements = tuple(b // itemsize if itemsize and isinstance(b, int) and b % itemsize == 0 else None for b in byte_strides)
                    if not _row_major(shape, elements):
                        raise _strided(where, value, shape, tuple(byte_strides))
                # else a type cute_bind's table does not name (ml_dtypes' bfloat16 is '<V2', float8_e5m2
                # '<f1'): the value does not say, as an int address does not
                return _PointerValue(self._check_range(address, where), dtype, space, None, not on_device, device)
        if isinstance(value, (ctypes.c_void_p, ctypes._Pointer)):
            return _PointerValue(self._check_range(ctypes.cast(value, ctypes.c_void_p).value or 0, where), None, None, None)
        not_an_integer: Exception | None = None
        if hasattr(type(value), "__index__"):  # numpy integer scalars, a 0-d array holding an address...
            try:
                address = operator.index(value)
            except Exception as exc:  # not an integer after all, or a hostile __index__ that raised
                not_an_integer = exc
            else:
                return _PointerValue(self._check_range(address, where), None, None, None)
        # memory the value exports (an array offering only __dlpack__, a buffer), else a typed error
        if hasattr(value, "__dlpack__"):
            return self._read_dlpack(value, where)
        if _has_buffer(value):
            return self._read_buffer(value, where)
        if not_an_integer is None:
            try:
                operator.index(value)  # no __index__: raises the TypeError the refusal is chained to
            except Exception as exc:
                not_an_integer = exc
        raise self.refusal(where, value) from not_an_integer

    def _read_dlpack(self, value: object, where: Where) -> _PointerValue:
        """A ``__dlpack__`` object that offers no address otherwise (JAX, MLX...): its export's data
        address, element type and device; the export is held until the launch returns."""
        try:
            view = _dlpack.read(value)
        except _dlpack.InvalidDLPack as exc:
            raise invalid_dlpack(where, str(exc), describe_value(value)) from None
        except _dlpack.ReadOnlyDLPack:
            raise self._read_only(value, where) from None
        except Exception as exc:  # a producer that cannot export in place, or a hostile __dlpack__
            raise self.refusal(
                where, value, f"{self.expected()} (its __dlpack__() raised {type(exc).__name__}: {_first_line(exc)})"
            ) from None
        device_type = view.device[0]
        if device_type not in _POINTER_DEVICES:
            raise self.refusal(
                where,
                value,
                f"{self.expected()} (its memory is on {_dlpack.describe_device(view.device)}, which a CUDA kernel does not address)",
            )
        if view.address == 0 and all(view.shape):
            raise _null_data(where, value)
        if not _row_major(view.shape, view.strides):
            raise _strided(where, value, view.shape, view.strides)
        dtype = _dlpack.describe_dtype(view.dtype) if _dlpack.is_cute_dtype(view.dtype) else None
        if dtype is None:
            raise _mismatch(where, self.describe(), f"a pointer to {_dlpack.describe_dtype(view.dtype)} data")
        on_device = device_type == _DL_CUDA
        return _PointerValue(
            self._check_range(view.address, where),
            dtype,
            dsl.dsl().cute.AddressSpace.gmem if on_device else None,
            None,
            host=device_type == _DL_CPU,
            device=view.device if on_device else None,
            owner=view.owner,
        )

    def _read_buffer(self, value: Any, where: Where) -> _PointerValue:
        """A buffer-protocol object (a ``memoryview``, ``bytearray``, ``array.array``, ctypes array):
        the address of its first byte, its element type from the buffer's format; host memory.
        The export is held until the launch returns (a ``bytearray`` cannot be resized meanwhile)."""
        try:
            view = memoryview(value)
        except Exception as exc:  # a hostile __buffer__ that raised
            raise self.refusal(where, value) from exc
        if view.readonly:
            raise self._read_only(value, where)
        if not view.c_contiguous:
            raise self.refusal(where, value, f"{self.expected()} (a buffer that is not contiguous: pass its base object)")
        dtype = _buffer_dtype(view.format, view.itemsize)
        if dtype is None:
            raise _mismatch(
                where,
                self.describe(),
                f"a buffer of format {view.format!r} ({view.itemsize}-byte items), not one element type in native byte order",
            )
        if view.nbytes == 0:
            return _PointerValue(0, dtype, None, None, host=True, owner=view)
        try:
            first = ctypes.c_char.from_buffer(view)  # holds its own export of the buffer
        except Exception as exc:  # noqa: BLE001 - not a plain writable buffer after all
            raise self.refusal(where, value, f"{self.expected()} ({type(exc).__name__}: {_first_line(exc)})") from None
        return _PointerValue(self._check_range(ctypes.addressof(first), where), dtype, None, None, host=True, owner=first)

    @staticmethod
    def _read_only(value: object, where: Where) -> Exception:
        return where.error(
            D.READ_ONLY_BUFFER,
            expected="a writable array (a kernel may store through the pointer)",
            got=f"{describe_value(value)} (read-only)",
        )

    def _torch_dtype(self, value: object, where: Where) -> str | None:
        dtype = getattr(value, "dtype", None)
        if dtype is None:
            return None
        name = _TORCH_DTYPES.get(str(dtype))
        if name is None and (getattr(dtype, "is_complex", False) is True or str(dtype).startswith("torch.q")):
            # complex and quantized: no CuTe element type holds them; another dtype the table does
            # not name (float8_e8m0fnu, float4_e2m1fn_x2...) does not say, as before
            self._refuse_foreign_elements(f"a torch tensor of dtype {dtype}", False, where)
        return name

    def _refuse_foreign_elements(self, got: str, python_objects: bool, where: Where) -> None:
        """CB210 for memory whose element type CuTe has none of, where the slot names an element
        type; an array of Python object references is refused by every pointer slot (a kernel
        storing through it would corrupt the interpreter's objects)."""
        if python_objects:
            raise _mismatch(where, self.describe(), f"{got}: an array of Python object references, not data a kernel can use")
        if self._dtype_name is not None or self.spec.dtype is not None:  # bound, or annotated with one
            raise _mismatch(
                where, self.describe(), f"{got}: complex, date, text, record or quantized data, which no CuTe element type holds"
            )

    @staticmethod
    def _check_range(address: int, where: Where) -> int:
        if not 0 <= address < U64:
            raise where.error(D.INVALID_ADDRESS, expected="an address in [0, 2**64)", got=str(address))
        return address

    def _check_alignment(self, address: int, where: Where) -> None:
        if self.align and address % self.align:
            raise where.error(D.MISALIGNED_POINTER, expected=f"{self.align} bytes", got=hex(address))

    @staticmethod
    def _check_not_host(pv: _PointerValue, space: object, expected: str, where: Where) -> None:
        if pv.host and space is not None and space == dsl.dsl().cute.AddressSpace.gmem:
            raise _mismatch(
                where, expected, "pageable host memory (a CPU tensor or array), which a kernel cannot read through a gmem pointer"
            )

    def _check_device(self, pv: _PointerValue, where: Where) -> None:
        if pv.device is not None and self.device is not None and pv.device != self.device:
            raise where.error(
                D.TENSOR_DEVICE_MISMATCH,
                expected=_dlpack.describe_device(self.device),
                got=f"a pointer into memory on {_dlpack.describe_device(pv.device)}",
            )

    def _check_matches(self, pv: _PointerValue, where: Where) -> None:
        self._check_not_host(pv, self.space, self.describe(), where)
        self._check_device(pv, where)
        if pv.dtype_name is not None and self._dtype_name is not None and pv.dtype_name != self._dtype_name:
            raise _mismatch(where, self.describe(), f"a pointer to {pv.dtype_name} data")
        if pv.space is not None and self.space is not None and pv.space != self.space and pv.space != _generic():
            raise _mismatch(where, self.describe(), f"a pointer in address space {getattr(pv.space, 'name', pv.space)}")

    # -- the fast paths for values other than int addresses
    def _accepts(self) -> tuple[bool, bool]:
        """(host memory taken, CUDA memory taken), as :meth:`_check_matches` decides for a CPU/CUDA tensor."""
        gmem = dsl.dsl().cute.AddressSpace.gmem if self.space is not None else None
        return (self.space is None or self.space != gmem, self.space is None or self.space == gmem)

    def schema_element(self) -> tuple[str, bool]:
        """A torch op passes it as a tensor."""
        return ("Tensor", True)

    def probe(self) -> Probe:
        """The value's type and what it says of its element type and memory (an int: just ``int``)."""
        return _pointer_probe

    def c_spec(self) -> CPointerSpec:
        """The :class:`CPointerSpec` of this (bound) slot: torch tensors, NumPy arrays, ctypes
        pointers and ``__cuda_array_interface__`` exporters are then written by the C fast path."""
        torch = sys.modules.get("torch")
        found = _dlpack.exchange_function(torch.Tensor) if torch is not None else None
        types = tuple(
            t for t in (getattr(torch, "Tensor", None), getattr(getattr(torch, "nn", None), "Parameter", None)) if isinstance(t, type)
        )
        cpu_ok, cuda_ok = self._accepts()
        read_pointer = self._runtime_pointer_reader()

        return CPointerSpec(
            function=found.address if found else 0,
            types=types if found else (),
            capsule=found.capsule if found else None,
            dtype=_dlpack.dtype_code(self._dtype_name) if self._dtype_name is not None else None,
            cpu_ok=int(cpu_ok),
            cuda_ok=int(cuda_ok),
            device=self.device,
            align=self.align or 1,
            other_type=dsl.runtime_pointer_type(),
            other_reader=read_pointer,
        )

    def _runtime_pointer_reader(self) -> Callable[[object], int | None] | None:
        """For the fast paths: a ``make_ptr`` pointer's address when it passes every check
        :meth:`coerce` makes (``_check_matches``, the alignment), else None, never an error
        (the value then takes the checked path, which raises the catalog error with the
        parameter's name). None where the DSL has no such pointer type."""
        if dsl.runtime_pointer_type() is None:
            return None
        want, space, align = self._dtype_name, self.space, self.align or 1
        generic = _generic() if space is not None else None
        fields = dsl.runtime_pointer_fields

        def read_pointer(value: object) -> int | None:
            try:
                address, dtype, pspace, _ = fields(value)
            except Exception:  # noqa: BLE001 - not readable as a pointer: the checked path says why
                return None
            name = _dtype_name(dtype)
            if want is not None and name is not None and name != want:
                return None
            if space is not None and pspace is not None and pspace != space and pspace != generic:
                return None
            if not 0 <= address < U64 or address % align:
                return None
            return address

        return read_pointer

    def fallback(self, where: Where) -> Callable[[object], int]:
        """For the Python fast path: a value that is not an int, read at the cost of a few attribute
        reads when it is a torch tensor, a NumPy array or a ctypes pointer that passes every check
        :meth:`coerce` makes, else through :meth:`coerce` itself (raising its catalog error)."""
        coerce = self.coerce
        cpu_ok, cuda_ok = self._accepts()
        align = self.align or 1
        device = self.device
        ttypes: tuple[type, ...] = ()
        want_t = None

        def learn_torch() -> bool:
            """Read torch's tensor types and this slot's dtype once torch is imported (it may be
            imported after the handle was bound); True when they were learned by this call."""
            nonlocal ttypes, want_t
            torch = sys.modules.get("torch")
            if torch is None or ttypes or not isinstance(getattr(torch, "Tensor", None), type):
                return False
            ttypes = tuple(t for t in (torch.Tensor, getattr(getattr(torch, "nn", None), "Parameter", None)) if isinstance(t, type))
            names = {v: k for k, v in _TORCH_DTYPES.items()}
            want_t = getattr(torch, names[self._dtype_name].removeprefix("torch."), None) if self._dtype_name in names else None
            return True

        learn_torch()
        layout = _dlpack.array_layout()
        np_type = layout.type if layout is not None else None
        want_np = None
        if layout is not None and self._dtype_name is not None:
            typestr = {v: k for k, v in _NUMPY_TYPESTR.items()}.get(self._dtype_name)
            want_np = sys.modules["numpy"].dtype(typestr) if typestr else None
        np_data = layout.data if layout is not None else 0
        untyped = self._dtype_name is None  # the value says the type (prepare() of an untyped pointer)
        ct = _dlpack.ctypes_layout()
        void_p, ptr_base, b_ptr = (ct.void_p, ct.pointer, ct.b_ptr) if ct is not None else (None, None, 0)
        at = ctypes.c_void_p.from_address
        ptr_type, read_ptr = dsl.runtime_pointer_type(), self._runtime_pointer_reader()

        def read(value: Any) -> int:
            tp = type(value)
            if tp in ttypes:
                # a slot of a type torch has none of: the slow path decides (it compares what each says)
                if value.dtype is want_t if want_t is not None else untyped and not value.dtype.is_complex:
                    ok = (cuda_ok and (device is None or device == (2, value.get_device()))) if value.is_cuda else cpu_ok
                    if ok:
                        a: int = value.data_ptr()
                        if a and not a % align and value.is_contiguous():
                            return a
            elif tp is np_type:
                # a slot of a type NumPy has none of (BFloat16, Float8...): the slow path decides, as in C
                # (an ml_dtypes array may hold it); an untyped slot takes any array of plain data
                if want_np is not None:
                    taken = value.dtype is want_np
                else:
                    taken = untyped and value.dtype.kind not in _FOREIGN_KINDS and value.dtype.fields is None
                if taken and cpu_ok and value.flags.writeable and value.flags.c_contiguous:
                    a = at(id(value) + np_data).value or 0
                    if a and not a % align:
                        return a
            elif tp is void_p or (ptr_base is not None and issubclass(tp, ptr_base)):
                buf = at(id(value) + b_ptr).value  # the object's own storage (ctypes.addressof)
                if buf:
                    a = at(buf).value or 0
                    if not a % align:
                        return a
            elif tp is ptr_type and read_ptr is not None:
                p = read_ptr(value)
                if p is not None:
                    return p
            elif tp is not bool and issubclass(tp, int):
                a = int.__index__(value)  # an IntEnum member: its own value, no override of it read
                if 0 <= a < U64 and not a % align:
                    return a
            elif not ttypes and learn_torch():
                return read(value)  # once: torch was imported after bind
            return coerce(value, where)

        return read

    # -- slot protocol
    def coerce(self, value: object, where: Where, checked: bool = False) -> int:
        if value.__class__ is int:
            address = self._check_range(value, where)
            if checked:
                self._check_alignment(address, where)
            return address
        pv = self._read_checked(value, where)
        self._check_matches(pv, where)
        self._check_alignment(pv.address, where)
        return pv.held()

    def _read_checked(self, value: object, where: Where) -> _PointerValue:
        """:meth:`_read`, where whatever a hostile attribute or protocol method raises is a typed error."""
        try:
            return self._read(value, where)
        except D.CuteBindError:
            raise
        except Exception as exc:
            raise self.refusal(where, value) from exc

    def bind(self, value: object, where: Where) -> Bound:
        pv = self._read_checked(value, where)
        spec = self.spec
        dtype_name = _dtype_name(spec.dtype) or pv.dtype_name
        if spec.dtype is not None and pv.dtype_name is not None and pv.dtype_name != _dtype_name(spec.dtype):
            raise _mismatch(where, spec.describe(), f"a pointer to {pv.dtype_name} data")
        if dtype_name is None:
            raise where.error(D.POINTER_DTYPE_UNKNOWN, expected="cute.Pointer", got=describe_value(value))
        dtype = getattr(dsl.dsl().cutlass, dtype_name)
        space = spec.space if spec.space is not None else (pv.space if pv.space is not None else _generic())
        if spec.space is not None and pv.space is not None and pv.space != spec.space:
            raise _mismatch(where, spec.describe(), f"a pointer in address space {getattr(pv.space, 'name', pv.space)}")
        align = spec.align or pv.align or max(1, int(getattr(dtype, "width", 8)) // 8)
        self._check_not_host(pv, space, spec.describe(), where)
        bound = PointerKind(spec, dtype=dtype, space=space, align=align, device=pv.device)
        bound._check_alignment(pv.address, where)
        dsl_value = dsl.make_pointer(dtype, pv.address, space, align)
        return Bound(packed=pv.held(), dsl_value=dsl_value, key=(dtype_name, int(getattr(space, "value", 0)), align), slot=bound)

    def prepare(self, value: object, where: Where) -> Bound:
        """Bind for an already compiled function: learn what the value says, compile nothing."""
        pv = self._read_checked(value, where)
        dtype = getattr(dsl.dsl().cutlass, pv.dtype_name) if pv.dtype_name else self.spec.dtype
        space = pv.space if pv.space is not None else self.spec.space
        align = pv.align or self.spec.align
        bound = PointerKind(self.spec, dtype=dtype, space=space, align=align, device=pv.device)
        bound._check_alignment(pv.address, where)
        if dsl.is_runtime_pointer(value):
            dsl_value = value
        else:
            dsl_value = dsl.make_pointer(dsl.dsl().cutlass.Uint8, pv.address, space or _generic(), 1)
        return Bound(packed=pv.held(), dsl_value=dsl_value, key=None, slot=bound)


#: NumPy dtype kinds no CuTe element type holds: objects, complex, datetime/timedelta, text
_FOREIGN_KINDS = frozenset("OcMmUS")


def _foreign_typestr(typestr: str, descr: object) -> bool:
    """Whether an array-interface typestr (its byte order removed) names data no CuTe element type
    holds: objects, complex, dates, text, or a record (a void type whose ``descr`` names fields; an
    unnamed one, as ml_dtypes' bfloat16 '<V2', may be any 2-byte type)."""
    if typestr[0] in _FOREIGN_KINDS:
        return True
    if typestr[0] == "V" and isinstance(descr, list):
        return any(isinstance(d, tuple) and d and d[0] not in ("", None) for d in descr)
    return False


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:120] if text else ""


def _is_empty(value: object) -> bool:
    """Whether an array-like value has no elements (then a NULL data address is harmless)."""
    for attr in ("numel", "size"):
        n = getattr(value, attr, None)
        try:
            n = n() if callable(n) else n
        except Exception:
            continue
        if isinstance(n, int) and not isinstance(n, bool):
            return n == 0
    return False


def _mismatch(where: Where, expected: str, got: str) -> Exception:
    """CB210 for the value of ``where``: memory of another element type, address space or byte order."""
    return where.error(D.POINTER_MISMATCH, expected=expected, got=got)


def _typestr_size(typestr: str) -> int:
    """The item size in bytes an array interface's typestr (without its byte order) says, or 0."""
    digits = typestr[1:]
    return int(digits) if digits.isdigit() else 0


def _row_major(shape: Sequence[int], strides: Sequence[int | None] | None) -> bool:
    """Whether elements of extents ``shape`` at element ``strides`` (None: compact) follow one another
    in memory, as a pointer slot reads them (a mode of extent 1 may have any stride; an empty value is
    taken); the C fast path's ``cb_row_major`` is the same rule."""
    if strides is None:
        return True
    if 0 in shape:
        return True
    expect = 1
    for extent, stride in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if extent == 1:
            continue
        if stride != expect:
            return False
        expect *= extent
    return True


def _strided(where: Where, value: object, shape: Iterable[object], strides: Iterable[object]) -> Exception:
    """CB233: a strided view given to a pointer slot."""
    return where.error(
        D.POINTER_NOT_CONTIGUOUS,
        expected="contiguous memory (one element after another, row-major)",
        got=f"{describe_value(value)} with element strides {tuple(strides)} for shape {tuple(shape)}",
    )


def _null_data(where: Where, value: object) -> Exception:
    return where.error(
        D.NULL_DATA,
        expected="an array or tensor that owns memory (a raw int address is taken as it is)",
        got=f"{describe_value(value)} at address 0 (a meta or fake tensor?)",
    )


def _cuda_device(value: object) -> tuple[int, int] | None:
    """The (DLPack type, id) CUDA device a tensor or array says it lives on, or None."""
    device = _dlpack.device_of(value)  # __dlpack_device__: torch, CuPy, JAX...
    if device is not None:
        return device
    get = getattr(value, "get_device", None)  # torch-like objects without DLPack
    if callable(get):
        try:
            index = get()
        except Exception:
            return None
        if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
            return (2, index)
    return None


#: DLPack device types a pointer slot takes: host (kDLCPU), CUDA, pinned host, managed
_DL_CPU, _DL_CUDA = 1, 2
_POINTER_DEVICES = frozenset((_DL_CPU, _DL_CUDA, 3, 13))
#: struct format codes (byte order taken off) -> array-interface kind; the size comes from the buffer's itemsize
_FORMAT_KINDS = {"f": "f", "d": "f", "e": "f", "b": "i", "h": "i", "i": "i", "l": "i", "q": "i", "n": "i",
                 "B": "u", "H": "u", "I": "u", "L": "u", "Q": "u", "N": "u", "c": "u", "?": "b"}  # fmt: skip


def _has_buffer(value: Any) -> bool:
    """Whether ``value`` exports the buffer protocol (``memoryview(value)`` would work)."""
    if isinstance(value, (memoryview, bytearray)):
        return True
    if isinstance(value, ctypes._SimpleCData):
        return False  # a ctypes number (c_uint64(address)) is a value, not memory to point into
    try:
        memoryview(value).release()
    except Exception:  # noqa: BLE001 - no buffer (TypeError), or a hostile one: not this reader's
        return False
    return True


def _buffer_dtype(fmt: str, itemsize: int) -> str | None:
    """The CuTe element type a native-order buffer format says (``"f"`` -> Float32), or None: a
    format of structures, big-endian data or anything else says nothing a pointer checks."""
    code = fmt[1:] if fmt[:1] in "@=<" else fmt
    if fmt[:1] == "<" and sys.byteorder != "little":
        return None
    kind = _FORMAT_KINDS.get(code)
    return _NUMPY_TYPESTR.get(f"{kind}{itemsize}") if kind else None


def _generic() -> object:
    return dsl.dsl().cute.AddressSpace.generic


register(PointerKind)
