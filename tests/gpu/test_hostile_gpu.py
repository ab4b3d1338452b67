"""Hostile input on a CUDA device: refused with a code, never a fault (issue 19, on real device kernels).

Run on a GPU machine with ``python -m pytest -m gpu tests/gpu``; skipped where
no CUDA device exists. Checks, on both fast paths (the ``path`` fixture):
meta, fake and CPU tensors given to a device tensor slot, a meta tensor
given to a device pointer slot, and threads sharing one device handle (each
launch either completes correctly or raises CB403; the context stays usable).
"""

import threading
import warnings

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cute_bind  # noqa: E402
from cute_bind.bench.kernels import scale  # noqa: E402

pytestmark = pytest.mark.gpu


def _code(fn, *args):
    try:
        fn(*args)
    except cute_bind.CuteBindError as e:
        return e.code
    return None


def test_device_tensor_slot_refuses_meta_fake_and_host_tensors(path):
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tests.kernels.gpu import tensor2d

    out, x = torch.zeros(4, 8, device="cuda"), torch.ones(4, 8, device="cuda")
    h = cute_bind.kernel(tensor2d).bind(out, x, 1.0, 0.0, 0.0, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with FakeTensorMode():
            fake = torch.empty(4, 8, device="cuda")
    for handle in (h, h.with_checks()):
        assert _code(handle.launch, out, torch.empty(4, 8, device="meta"), 2.0, 0.0, 0.0, 0) in ("CB214", "CB216", "CB204")
        assert _code(handle.launch, out, fake, 2.0, 0.0, 0.0, 0) in ("CB216", "CB204")
        assert _code(handle.launch, out, torch.ones(4, 8), 2.0, 0.0, 0.0, 0) == "CB214"
        handle.launch(out, x, 2.0, 0.0, 0.0, 0)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2)


def test_device_pointer_slot_refuses_a_meta_tensor(path):
    n = 1024
    out, x = torch.zeros(n, device="cuda"), torch.ones(n, device="cuda")
    h = cute_bind.kernel(scale).bind(out, x, 1.0, n, 0)
    for handle in (h, h.with_checks()):
        assert _code(handle.launch, out, torch.empty(n, device="meta"), 2.0, n, 0) == "CB216"
        handle.launch(out, x, 3.0, n, 0)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 3)


def test_threads_sharing_a_device_handle(path):
    n = 1 << 16
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    h = cute_bind.kernel(scale).bind(torch.zeros(n, device="cuda"), x, 1.0, n, 0)
    outs = [torch.zeros(m, device="cuda") for m in (1, n, 7, n // 2)]
    refused = []
    done = {i: 0 for i in range(len(outs))}
    other: list[BaseException] = []

    def work(i, out):
        m = out.numel()
        for _ in range(2000):
            try:
                h.launch(out.data_ptr(), x.data_ptr(), 2.0, m, 0)
                done[i] += 1
            except cute_bind.LaunchRuntimeError as e:
                if e.code != "CB403":
                    other.append(e)
                refused.append(1)
            except BaseException as e:  # anything else is a defect; reported below, not lost in the thread
                other.append(e)

    threads = [threading.Thread(target=work, args=(i, o)) for i, o in enumerate(outs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()  # an overflow into another allocation would show as a fault here
    assert not other, other
    assert sum(done.values()) > 0
    for i, o in enumerate(outs):
        # a thread whose every launch was refused (CB403) wrote nothing; one that launched wrote exactly its own rows
        want = x[: o.numel()] * 2 if done[i] else torch.zeros_like(o)
        assert torch.equal(o, want), (i, done[i])
    print(
        f"threads sharing one device handle: {len(refused)} launches refused with CB403 of {4 * 2000}; launched per thread: {list(done.values())}"
    )
