"""The GPU client check's own machinery (``tests/clients/bitwise.py``, the recorder's GPU mode), on the CPU.

The device job runs ``tests/gpu/test_clients_gpu.py`` on the H200; these
tests make sure that what it relies on can fail where it must: the bitwise
comparison (NaN payloads, -0.0, booleans, the tolerance only for tensors the
client itself does not reproduce), the recorder's GPU mode (the client's call
is made, between copies of its tensors) and the doors run over a recorded
compile, with a host-only function compiled with ``--enable-tvm-ffi`` as the
clients compile theirs. No client package is needed.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from tests.optional import torch_or_skip

torch = torch_or_skip()
pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed (the clients compile with --enable-tvm-ffi)")

from tests.clients import bitwise  # noqa: E402
from tests.cache.conftest import cache_dir, needs_disk_cache  # noqa: E402,F401  (cache_dir: a fixture)
from tests.clients.recorder import Recorder, snapshot  # noqa: E402


def _nan(payload: int) -> Any:
    return torch.tensor([struct.unpack("<f", struct.pack("<I", 0x7FC00000 | payload))[0]])


@pytest.mark.parametrize(
    "got,want,differs",
    [
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]), False),
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]), True),
        (torch.tensor([-0.0]), torch.tensor([0.0]), True),  # equal as numbers, other bits
        (_nan(1), _nan(2), True),  # both NaN, other payloads
        (_nan(1), _nan(1), False),
        (torch.tensor([True, False]), torch.tensor([True, True]), True),
        (torch.tensor([1, 2], dtype=torch.bfloat16), torch.tensor([1, 2], dtype=torch.bfloat16), False),
        (torch.tensor([1, 2], dtype=torch.int64), torch.tensor([1, 3], dtype=torch.int64), True),
    ],
)
def test_differing_compares_bits(got: Any, want: Any, differs: bool) -> None:
    found = bitwise.differing(((got,), {}), ((want,), {}), ["out"])
    assert bool(found) == differs, found
    if differs:
        assert found[0].startswith("out ")  # named after the compiled function's parameter


def test_differing_tolerates_only_what_the_client_does_not_reproduce() -> None:
    want = ((torch.tensor([1.0]), torch.tensor([1.0])), {})
    near = ((torch.tensor([1.0 + 1e-5]), torch.tensor([1.0 + 1e-5])), {})
    # the second tensor is nondeterministic in the client: compared within the tolerance, the first bitwise
    found = bitwise.differing(near, want, ["a", "b"], loose=frozenset({"[0][1]"}))
    assert len(found) == 1 and found[0].startswith("a ")
    far = ((torch.tensor([1.0]), torch.tensor([2.0])), {})
    found = bitwise.differing(far, want, ["a", "b"], loose=frozenset({"[0][1]"}))
    assert len(found) == 1 and "nondeterministic" in found[0] and found[0].startswith("b ")


def test_differing_reports_another_structure() -> None:
    found = bitwise.differing(((torch.zeros(1),), {}), ((torch.zeros(1), torch.zeros(1)), {}), [])
    assert found and "structure" in found[0]


@pytest.fixture
def recorded() -> Any:
    """A host-only twin of a client compile, recorded in GPU mode: compiled with --enable-tvm-ffi, then called."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack, make_fake_stream

    from cute_bind.bench.kernels import scale_tensors_host

    recorder = Recorder(gpu=True)
    n = 37
    x = torch.randn(n)
    out = torch.full((n,), math.nan)  # "before": NaN everywhere, as an uninitialised output may hold
    with recorder.active("test.scale"):
        mark = lambda t: from_dlpack(t).mark_layout_dynamic()  # noqa: E731
        fn = cute.compile(
            scale_tensors_host,
            mark(torch.zeros(n)),
            mark(torch.zeros(n)),
            cutlass.Float32(1.5),
            make_fake_stream(),
            options="--enable-tvm-ffi",
        )
        fn(out, x, 1.5, 0)  # the client's call, through the recording proxy: it runs
    (r,) = recorder.records
    return r, out, x


def test_gpu_mode_makes_the_clients_call_between_copies(recorded: Any) -> None:
    r, out, x = recorded
    (call,) = r.calls
    assert torch.equal(out, x * 1.5)  # the call was made
    (before_out, before_x, alpha, stream), _ = call.before
    assert torch.isnan(before_out).all() and torch.equal(before_x, x) and (alpha, stream) == (1.5, 0)
    assert torch.equal(call.after[0][0], x * 1.5)
    out.zero_()  # the copies are copies
    assert torch.equal(call.after[0][0], x * 1.5)


@pytest.mark.parametrize("door", bitwise.DOORS)
def test_every_door_is_bitwise_on_fresh_copies(recorded: Any, door: str) -> None:
    r, _, _ = recorded
    outcome = bitwise._door(r, door, {0: frozenset()})
    assert outcome["ok"], outcome


def test_a_door_that_computes_other_bits_fails(recorded: Any) -> None:
    r, _, _ = recorded
    (call,) = r.calls
    args, kwargs = snapshot(call.after)
    args[0][3] = -args[0][3]  # the reference says otherwise at one element: the door must not pass
    call.after = (args, kwargs)
    outcome = bitwise._door(r, "prepare", {0: frozenset()})
    assert not outcome["ok"] and outcome["code"] == "BITWISE"
    assert "1 of 37 elements differ" in outcome["error"], outcome


def test_nondeterminism_is_measured_on_the_clients_own_call(recorded: Any) -> None:
    r, _, _ = recorded
    assert bitwise._nondeterministic(r) == {0: frozenset()}
    (call,) = r.calls
    args, kwargs = snapshot(call.after)
    args[0][0] = args[0][0] + 1.0  # as if the client's first result were not reproducible
    call.after = (args, kwargs)
    assert bitwise._nondeterministic(r) == {0: frozenset({"[0][0]"})}


def test_markdown_names_every_door() -> None:
    result = {
        "device": "dev",
        "records": [
            {"label": "q:A", "calls": ["q"], "nondeterministic": [], "doors": {d: {"ok": True} for d in bitwise.DOORS}},
            {
                "label": "q:B",
                "calls": ["q"],
                "nondeterministic": ["dq"],
                "doors": {"prepare": {"ok": False, "code": "CB308", "error": "x | y"}},
            },
        ],
    }
    text = bitwise.markdown(result)
    assert text.count("ok, bitwise") == len(bitwise.DOORS) and "CB308 x \\| y" in text and "nondeterministic in: dq" in text
    result["records"][0]["doors"]["hook"] = {"ok": True, "served": True, "miss_s": 1.25, "hit_s": 0.0312}
    assert "| ok, bitwise (served; miss 1.250 s, hit 0.031 s) |" in bitwise.markdown(result)


@needs_disk_cache
@pytest.mark.usefixtures("cache_dir")
def test_the_hook_door_calls_a_function_served_from_the_disk_cache(recorded: Any) -> None:
    r, _, _ = recorded
    outcome = bitwise._door(r, "hook", {0: frozenset()})
    assert outcome["ok"] and outcome["served"] is True, outcome
    assert {"miss_s", "hit_s"} <= outcome.keys() and min(outcome["miss_s"], outcome["hit_s"]) >= 0, outcome
    (call,) = r.calls
    args, kwargs = snapshot(call.after)
    args[0][3] = -args[0][3]  # a served function is compared as strictly as the others
    call.after = (args, kwargs)
    outcome = bitwise._door(r, "hook", {0: frozenset()})
    assert not outcome["ok"] and outcome["code"] == "BITWISE", outcome


class _TracingScale:
    """A kernel object that sets an attribute while it is traced (as class kernels keep tiling plans):
    the traced object is another key than a fresh one, and one the cache cannot spell (CB608)."""

    @cute.jit
    def __call__(self, mO: cute.Tensor, mX: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream):
        self.plan = object()  # noqa: B018 - the traced state
        for i in range(cute.size(mX, mode=[0])):
            mO[i] = mX[i] * alpha


@needs_disk_cache
@pytest.mark.usefixtures("cache_dir")
def test_the_hook_door_compiles_the_object_as_it_was_before_the_clients_compile() -> None:
    """The first device run: FlashAttention-4's and quack's GEMM objects were "not served: compiled" by the
    hook door (compiled twice, each a miss), because it compiled the object the client's compile had traced."""
    from cutlass.cute.runtime import from_dlpack, make_fake_stream

    recorder = Recorder(gpu=True)
    n = 16
    x, out = torch.randn(n), torch.zeros(n)
    host = _TracingScale()
    with recorder.active("test.tracing"):
        mark = lambda t: from_dlpack(t).mark_layout_dynamic()  # noqa: E731
        fn = cute.compile(
            host, mark(torch.zeros(n)), mark(torch.zeros(n)), cutlass.Float32(2.0), make_fake_stream(), options="--enable-tvm-ffi"
        )
        fn(out, x, 2.0, 0)
    (r,) = recorder.records
    assert hasattr(r.host, "plan") and not hasattr(r.pristine, "plan")
    outcome = bitwise._door(r, "hook", {0: frozenset()})
    assert outcome["ok"] and outcome["served"] is True, outcome
