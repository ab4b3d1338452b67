"""The cute_bind.jax tests: skipped where JAX is not installed (it is an optional extra; CI installs its CPU wheels)."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")

# XLA's CPU client: the tests run host-only kernels through XLA's CPU FFI
jax.config.update("jax_platforms", "cpu")
