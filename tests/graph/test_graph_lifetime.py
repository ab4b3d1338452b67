"""A recorded graph keeps the compiled module of every launch it recorded loaded until it is closed (issue 22, row 9).

The graph's kernel nodes point into the modules of the launches recorded;
closing a recorded handle and clearing its kernel's compile cache must not
let a module go while the graph can still be replayed. On the CPU (the fake
driver) the module's lifetime is its compiled function's: watched weakly.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest

import cute_bind
from tests.kernels import graph_host as K

FAKE = K.FAKE
N = 64


pytestmark = pytest.mark.usefixtures("clean_fake")  # tests/graph/conftest.py


def arr(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def addr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


def _collected(ref: weakref.ref[Any]) -> bool:
    gc.collect()
    return ref() is None


# what lets go of the module besides the graph: (close the handles, clear the kernel's cache, clone the handle)
RELEASES = [
    ("close_and_clear", True, True, False),
    ("close_only_then_drop_kernel", True, False, False),
    ("clear_only_then_drop_handle", False, True, False),
    ("a_closed_clone_recorded", True, True, True),
]


@pytest.mark.parametrize("name, close, clear, clone", RELEASES, ids=[r[0] for r in RELEASES])
def test_the_graph_keeps_the_module_until_it_is_closed(name: str, close: bool, clear: bool, clone: bool) -> None:
    out, inp = arr(0), arr(1)
    k = cute_bind.kernel(K.scale)
    h = k.bind(addr(out), addr(inp), 2.0, N, 0, K.BOX)
    recorded = h.clone() if clone else h
    with cute_bind.graph(0, driver=FAKE) as g:
        g.launch(recorded, addr(out), addr(inp), 2.0, N, 0)
    compiled = weakref.ref(h.compiled)
    if close:
        h.close()
        recorded.close()
    if clear:
        k.clear_cache()
    del k, h, recorded
    assert not _collected(compiled)  # the graph holds it
    out[:] = 0
    g.replay({0: {"alpha": 3.0}})
    assert out.tobytes() == (inp * np.float32(3.0)).tobytes()
    g.close()
    if close:
        assert _collected(compiled)  # and lets it go when closed
    else:  # an open handle pins its module itself, and the graph's steps still hold the handle
        assert not _collected(compiled)
        del g
        assert _collected(compiled)


def test_a_graph_whose_recording_failed_keeps_nothing() -> None:
    out, inp = arr(0), arr(1)
    k = cute_bind.kernel(K.scale)
    h = k.bind(addr(out), addr(inp), 2.0, N, 0, K.BOX)
    compiled = weakref.ref(h.compiled)
    with pytest.raises(RuntimeError, match="in the block"):
        with cute_bind.graph(0, driver=FAKE) as g:
            g.launch(h, addr(out), addr(inp), 2.0, N, 0)
            raise RuntimeError("in the block")
    h.close()
    k.clear_cache()
    del k, h
    assert _collected(compiled)  # the graph object is still here, closed: it pins nothing
    assert "closed" in repr(g)


def test_a_rerecord_after_the_handle_closed_is_refused() -> None:
    out, inp = arr(0), arr(1)
    k = cute_bind.kernel(K.scale_grid)
    h = k.bind(addr(out), addr(inp), 2.0, N, 0, K.BOX)
    with cute_bind.graph(0, driver=FAKE, derived="rerecord") as g:
        g.launch(h, addr(out), addr(inp), 2.0, N, 0)
    h.close()
    k.clear_cache()
    captures = g.stats.captures
    with pytest.raises(cute_bind.PreparedLaunchError) as info:
        g.replay({0: {"n": N // 2}})  # n shapes the grid: a re-record, which launches the closed handle
    assert info.value.code == "CB404"
    assert g.stats.rerecords == 0 and g.stats.captures == captures  # nothing was captured again
    g.close()
