"""The one reader of a type's DLPack exchange table (``slots.dlpack.exchange_table``), no torch needed.

Tables are built here with ctypes: a header (DLPack version, then ``prev_api``), then the
function pointers in DLPackExchangeAPI's order; which of them are set is per case.
"""

import ctypes
from typing import Any

import pytest

from cute_bind.slots import dlpack as _dlpack

from cute_bind.slots.dlpack import capsule_new as _capsule_new  # noqa: E402 - our own PyCapsule_New function object

_READER = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)
_WORDS = 16 // ctypes.sizeof(ctypes.c_void_p)  # the header: version (2 x u32) and prev_api, 16 bytes


@_READER
def _reader(obj: Any, out: int) -> int:
    return 0


@_STREAM
def _stream(device_type: int, device_id: int, out: int) -> int:
    return 0


def _address(fn: Any) -> int:
    return int(ctypes.cast(fn, ctypes.c_void_p).value or 0)


def _exchanging(*, major: int = 1, reader: bool = True, stream: bool = True, name: bytes = b"dlpack_exchange_api") -> type:
    table = (ctypes.c_void_p * (_WORDS + 5))()
    ctypes.c_uint32.from_address(ctypes.addressof(table)).value = major
    if reader:
        table[_WORDS + 3] = _address(_reader)
    if stream:
        table[_WORDS + 4] = _address(_stream)
    capsule = _capsule_new(ctypes.addressof(table), name, None)
    return type("Exchanging", (), {"__dlpack_c_exchange_api__": capsule, "_keep": table})


# (case, table, (reader found, work stream found)) -- None: no exchange API taken
CASES = [
    ("reader and stream", dict(), (True, True)),
    ("reader, no stream", dict(stream=False), (True, False)),
    ("no reader", dict(reader=False), None),
    ("another major version", dict(major=2), None),
    ("major version 0", dict(major=0), None),
    ("a capsule of another name", dict(name=b"something_else"), None),
]


@pytest.mark.parametrize("case, table, expected", CASES, ids=[c[0] for c in CASES])
def test_exchange_table_reads_the_reader_and_the_work_stream(case: str, table: dict[str, Any], expected: Any) -> None:
    tp = _exchanging(**table)
    found = _dlpack.exchange_table(tp)
    if expected is None:
        assert found is None, case
        return
    assert found is not None, case
    assert (found.address == _address(_reader), found.work_stream == _address(_stream)) == expected, case
    assert found.address and found.capsule is tp.__dlpack_c_exchange_api__
    assert found.work_stream == (_address(_stream) if expected[1] else 0)


@pytest.mark.parametrize("value", [None, 3, "dlpack_exchange_api", object()])
def test_no_capsule_is_no_exchange_api(value: Any) -> None:
    tp = type("NotExchanging", (), {} if value is None else {"__dlpack_c_exchange_api__": value})
    assert _dlpack.exchange_table(tp) is None
    assert _dlpack.exchange_function(tp) is None


def test_exchange_table_reads_the_type_now_and_exchange_function_once() -> None:
    tp = type("Later", (), {})
    assert _dlpack.exchange_function(tp) is None  # cached: no API yet
    tp.__dlpack_c_exchange_api__ = _exchanging().__dlpack_c_exchange_api__  # type: ignore[attr-defined]
    assert _dlpack.exchange_table(tp) is not None  # the attribute that appeared later is read
    assert _dlpack.exchange_function(tp) is None  # the per-type cache keeps its first answer
