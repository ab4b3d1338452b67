"""The cute_bind.jax tests: skipped where JAX is not installed (it is an optional extra; CI installs its CPU wheels).

The host-only kernels run through XLA's CPU client: every test but the GPU
module's runs with the CPU device as JAX's default (on a GPU machine too).
"""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")


@pytest.fixture(autouse=True)
def _cpu_default(request: pytest.FixtureRequest):
    if request.node.path.name == "test_gpu.py":
        yield
        return
    with jax.default_device(jax.devices("cpu")[0]):
        yield
