"""GPU: a device kernel reloaded from the disk cache launches bitwise-identically to a fresh compile."""

import subprocess
import sys

import pytest

from tests.child import child_env
from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
from cute_bind import dsl  # noqa: E402
from cute_bind.bench.kernels import scale  # noqa: E402
from tests.kernels.gpu import ints  # noqa: E402

pytestmark = pytest.mark.gpu
N = 4096


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """A disk compile cache of the test's own (CUDA is required by tests/gpu/conftest.py)."""
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTE_BIND_CACHE", raising=False)


def _handles(fn, args):
    """(fresh handle, reloaded handle) of one device function, bound with the same arguments."""
    fresh = cute_bind.kernel(fn, cache=False).bind(*args)
    k = cute_bind.kernel(fn)
    k.bind(*args)  # compiles and stores
    k.clear_cache()
    before = cute_bind.cache.mark()
    loaded = k.bind(*args)
    assert [e.outcome for e in cute_bind.cache.history(since=before)] == ["hit"]
    assert dsl.is_loaded_from_binary(loaded.compiled)
    return fresh, loaded


def test_reloaded_scale_kernel_bitwise():
    x = torch.randn(N, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    o1, o2 = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    stream = torch.cuda.current_stream().cuda_stream
    fresh, loaded = _handles(scale, (o1.data_ptr(), x.data_ptr(), 1.75, N, stream))
    for alpha, n in [(1.75, N), (-3.0, N - 5), (0.0, 1)]:
        o1.fill_(float("nan"))
        o2.fill_(float("nan"))
        fresh.launch(o1.data_ptr(), x.data_ptr(), alpha, n, stream)
        loaded.launch(o2.data_ptr(), x.data_ptr(), alpha, n, stream)
        torch.cuda.synchronize()
        assert torch.equal(o1.view(torch.int32), o2.view(torch.int32))
        assert fresh.storage_bytes().replace(o1.data_ptr().to_bytes(8, "little"), b"") == loaded.storage_bytes().replace(
            o2.data_ptr().to_bytes(8, "little"), b""
        )


def test_reloaded_integer_kernel_bitwise():
    x = torch.randint(-(2**40), 2**40, (N,), device="cuda", dtype=torch.int64)
    o1, o2 = torch.zeros_like(x), torch.zeros_like(x)
    stream = torch.cuda.current_stream().cuda_stream
    args = (True, -5, 300, -70000, 2**40, 200, 60000, 2**31 + 5, 2**63 + 9, stream)
    fresh, loaded = _handles(ints, (o1.data_ptr(), x.data_ptr(), N, *args))
    fresh.launch(o1.data_ptr(), x.data_ptr(), N, *args)
    loaded.launch(o2.data_ptr(), x.data_ptr(), N, *args)
    torch.cuda.synchronize()
    assert torch.equal(o1, o2)


def test_entry_written_by_another_process_bitwise(tmp_path):
    """A separate process compiles and stores; this one loads that entry and matches a fresh compile."""
    code = (
        "import torch, cute_bind\n"
        "from cute_bind.bench.kernels import scale\n"
        "x = torch.zeros(16, device='cuda')\n"
        "cute_bind.kernel(scale).bind(x.data_ptr(), x.data_ptr(), 1.0, 16, 0)\n"
        "print(cute_bind.cache.history()[-1].outcome)\n"
    )
    env = child_env()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.split() == ["compiled"], proc.stderr
    x = torch.randn(N, device="cuda")
    o1, o2 = torch.zeros_like(x), torch.zeros_like(x)
    k = cute_bind.kernel(scale)
    loaded = k.bind(o2.data_ptr(), x.data_ptr(), 0.5, N, 0)
    assert cute_bind.cache.history()[-1].outcome == "hit"
    fresh = cute_bind.kernel(scale, cache=False).bind(o1.data_ptr(), x.data_ptr(), 0.5, N, 0)
    fresh.launch(o1.data_ptr(), x.data_ptr(), 0.5, N, 0)
    loaded.launch(o2.data_ptr(), x.data_ptr(), 0.5, N, 0)
    torch.cuda.synchronize()
    assert torch.equal(o1.view(torch.int32), o2.view(torch.int32))
