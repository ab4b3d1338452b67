"""A cute_bind.torch op's doors agree: its eager call, the same call taking the dispatcher (an input that
requires grad), ``torch.ops.<ns>.<name>`` and ``torch.compile`` bump the same versions, accept and refuse
the same values with the same codes, and refuse the same written tensors."""

from __future__ import annotations

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from tests.kernels import host  # noqa: E402
from tests.torch.conftest import dispatcher_calls  # noqa: E402


@pytest.fixture(scope="module")
def bump_ops():
    """The same kernel as an op with its Python call (no stream) and with its C call (a stream)."""
    return {
        "python call": cbt.op("cbtest::door_bump_py", host.tscale, mutates_args=("out",)),
        "C call": cbt.op("cbtest::door_bump_c", host.tscale_stream_default, mutates_args=("out",)),
    }


def _ops_namespace(op):
    ns, name = op.name.split("::")
    return getattr(getattr(torch.ops, ns), name)


#: (door, how it calls the op, goes through the dispatcher)
BUMP_DOORS = [
    ("eager", lambda op, y, x: op(y, x, 3.0), False),
    ("torch.ops packet", lambda op, y, x: _ops_namespace(op)(y, x, 3.0), True),
    ("torch.ops overload", lambda op, y, x: op.overload(y, x, 3.0), True),
    ("an input requires grad", lambda op, y, x: op(y, x.requires_grad_(), 3.0), True),
    ("torch.ops under enable_grad, input requires grad", lambda op, y, x: _ops_namespace(op)(y, x.requires_grad_(), 3.0), True),
]


@pytest.mark.parametrize("which", ["python call", "C call"])
@pytest.mark.parametrize(("door", "call", "dispatched"), BUMP_DOORS, ids=[d[0] for d in BUMP_DOORS])
def test_every_door_bumps_the_written_tensors_version_once(bump_ops, which, door, call, dispatched):
    """A tensor autograd saved and the op then overwrote: backward() must refuse (torch's own in-place rule),
    never give the gradient of the new values (3 instead of 1). The dispatcher's implementation bumps
    the version itself (the op has no ADInplaceOrView kernel): without it every dispatched row here fails."""
    op = bump_ops[which]
    w = torch.ones(4, requires_grad=True)
    y = torch.ones(4)
    z = (w * y).sum()  # saves y for backward
    before = y._version
    with torch.enable_grad():
        _, calls = dispatcher_calls(op.name, call, op, y, torch.ones(4))
    assert (calls >= 1) == dispatched, door
    assert torch.equal(y, torch.full((4,), 3.0))
    assert y._version == before + 1, (door, y._version - before)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    assert w.grad is None  # no gradient of 3 came back


def test_the_compiled_op_bumps_the_written_tensors_version():
    """torch.compile's graph writes the caller's tensor back (functionalization): autograd still sees it."""
    op = cbt.op("cbtest::door_bump_compiled", host.tscale_stream_default, mutates_args=("out",))
    torch._dynamo.reset()
    compiled = torch.compile(lambda y, x: op(y, x, 3.0), fullgraph=True, backend="aot_eager")
    w = torch.ones(4, requires_grad=True)
    y = torch.ones(4)
    z = (w * y).sum()
    before = y._version
    compiled(y, torch.ones(4))
    assert torch.equal(y, torch.full((4,), 3.0)) and y._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    torch._dynamo.reset()
