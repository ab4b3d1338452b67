"""Shared fixtures of the graph tests (tests/graph/)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from tests.kernels import graph_host as K


@pytest.fixture
def clean_fake() -> Iterator[Any]:
    """The CPU's fake driver (``graph_host.FAKE``) with nothing pending before the test, and no capture left after it."""
    fake = K.FAKE
    fake.synchronize()
    fake._fail.clear()
    yield fake
    assert not fake._capturing, "a test left the fake driver capturing"
    fake.synchronize()
