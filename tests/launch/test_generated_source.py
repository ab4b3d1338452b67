"""The pure-Python launch fast path is generated code: a traceback through it shows its lines."""

from __future__ import annotations

import ctypes
import traceback

import pytest

import cute_bind
from tests.kernels.host import fill_i32


def test_a_traceback_through_the_generated_launch_shows_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    buf = (ctypes.c_int32 * 8)()
    base = (ctypes.addressof(buf) + 15) // 16 * 16
    handle = cute_bind.kernel(fill_i32).bind(base, 1)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        handle.launch("not an address", 2)  # the generated guard sends it to the slow path, which raises
    assert info.value.code == "CB204"
    generated = [f for f in traceback.extract_tb(info.value.__traceback__) if f.filename.startswith("<cute_bind launch 2 slots-")]
    assert len(generated) == 1, [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert generated[0].name == "launch" and (generated[0].line or "").startswith("return _cb_slow((a0, a1, ), (), {})")
