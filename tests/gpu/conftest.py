"""The device suite: tests that need a CUDA device torch can see (run by benchmarks/device_job.sh on the GPU
machine). On a machine without one, tests/conftest.py skips every test here (the ``gpu`` keyword of this
folder); the fixture below skips them where torch is installed but sees no device."""

from __future__ import annotations

import pytest

from tests.optional import torch_or_skip


@pytest.fixture(autouse=True)
def _require_cuda() -> None:
    """Every test of the device suite needs a CUDA device torch can see."""
    torch = torch_or_skip()  # (pytest.importorskip would find the DSL's own torch.py once cutlass is imported)
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
