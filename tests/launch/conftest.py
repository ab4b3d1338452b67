"""Fixtures shared by the launch tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(params=["c", "direct"])
def tvm_path(request: Any, monkeypatch: Any) -> str:
    """Run a TVM-FFI test on the C launcher and on the pure-Python one (the compiled function's own call)."""
    if request.param == "direct":
        monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    else:
        try:
            from cute_bind.launch import _ctvmffi  # noqa: F401
        except ImportError:
            pytest.skip("the TVM-FFI C fast path is not built")
        # the whole run on the pure-Python path (CUTE_BIND_PURE_PYTHON=1): this parameter is the C one
        monkeypatch.delenv("CUTE_BIND_PURE_PYTHON", raising=False)
    return str(request.param)
