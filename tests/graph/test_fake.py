"""The fake driver itself (cute_bind/graph/fake.py): what tests and examples without a GPU stand on."""

from __future__ import annotations

import numpy as np
import pytest

import cute_bind
from cute_bind.graph.fake import FakeDriver
from tests.kernels import graph_host as K


def _small_driver(capacity: int) -> FakeDriver:
    drv = FakeDriver(capacity)
    drv.kernel(1, "scale", (8, 8, 4, 4), K._scale_body)
    return drv


def test_more_launches_than_the_mailbox_holds_is_cb804_then_the_mailbox_works_again() -> None:
    """Launches past the capacity land in one spare record (never past the array: a write there
    corrupted the heap); the next drain says how many were lost, and later ones run."""
    drv = _small_driver(4)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    h = cute_bind.kernel(K.scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0, drv.mailbox)
    for _ in range(11):
        h.launch(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        drv.synchronize()
    assert info.value.code == "CB804" and "11 launches" in str(info.value) and "room for 4" in str(info.value)
    assert not out.any()  # nothing of the lost batch ran
    h.launch(out.ctypes.data, x.ctypes.data, 3.0, 64, 0)
    drv.synchronize()
    np.testing.assert_array_equal(out, x * np.float32(3.0))
    assert drv.executed == 1


@pytest.mark.parametrize("capacity", [0, -1, 1.5, True, 1 << 21, "4"])
def test_a_capacity_outside_the_range_is_refused(capacity: object) -> None:
    with pytest.raises(ValueError, match="capacity"):
        FakeDriver(capacity)  # type: ignore[arg-type]


def test_fake_launch_refuses_an_address_that_is_no_mailbox() -> None:
    from cute_bind.graph.fake import fake_launch

    with pytest.raises(ValueError, match="not the mailbox"):
        fake_launch(0x1000, 1, 1, 1)
