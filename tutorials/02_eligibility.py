"""Tutorial 2: eligibility, and reading a diagnostic.

Run it:  python tutorials/02_eligibility.py

`@cute_bind.kernel` checks every parameter's annotation when the decorator
runs, before anything compiles, and every error it (or bind/launch) raises is
a typed diagnostic with a catalog code. This script provokes a few, reads
them, fixes the function and runs it: on a GPU as a device kernel on torch
tensors, elsewhere as a host-only function on numpy arrays.
"""

from __future__ import annotations

import os


def gpu_available() -> bool:
    """True when a CUDA device can run kernels here (through torch if it is installed)."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        return bool(torch.cuda.is_available())
    try:
        import cuda.bindings.driver as drv

        (err,) = drv.cuInit(0)
        if err != drv.CUresult.CUDA_SUCCESS:
            return False
        err, count = drv.cuDeviceGetCount()
        return err == drv.CUresult.CUDA_SUCCESS and count > 0
    except Exception:
        return False


GPU = gpu_available()
if not GPU:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np

import cute_bind


# --8<-- [start:ineligible]
F32Ptr = cute_bind.Pointer[cutlass.Float32]


# A Float8 scalar: the DSL itself cannot pass one as a runtime argument, so
# it cannot be a slot.
def scale_fp8(out: F32Ptr, inp: F32Ptr, alpha: cutlass.Float8E4M3FN, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    for i in range(n):
        o[i] = x[i] * alpha.to(cutlass.Float32)


try:
    cute_bind.kernel(scale_fp8)
except cute_bind.KernelDefinitionError as err:
    print(err)  # the full message: code, kernel, parameter, expected, got, fix
    assert err.code == "CB104"
    assert err.kernel == "scale_fp8" and err.parameter == "alpha"
    assert "[CB104]" in str(err)
    assert isinstance(err, TypeError)  # every error is also the builtin you'd catch
    caught = err
else:
    raise AssertionError("a Float8 scalar parameter must be rejected")
# --8<-- [end:ineligible]

# --8<-- [start:read]
# The structured fields and the catalog entry behind the message.
entry = caught.diagnostic  # == cute_bind.CATALOG["CB104"]
assert entry is cute_bind.lookup("cb104")
print("code:     ", caught.code, entry.slug)
print("summary:  ", entry.summary)
print("raised as:", type(caught).__name__)
print("fix:      ", caught.fix.splitlines()[0], "...")
# The same text, from the shell:  python -m cute_bind explain CB104
# --8<-- [end:read]


# --8<-- [start:all-problems]
# Every problem at once, without raising: check_function() lists them all.
# (`out`, a tensor, is eligible; `sizes` nests a tuple in a tuple.)
def messy(
    out: cute.Tensor,
    n,
    alpha: cutlass.Float8E4M3FN,
    sizes: tuple[int, tuple[int, int]],
    *rest,
):
    pass


problems = cute_bind.check_function(messy)
for p in problems:
    print(f"  {p.code} at {p.parameter!r}: {p.diagnostic.summary}")
assert [p.code for p in problems] == ["CB101", "CB104", "CB113", "CB106"]

# Decorating raises the first one and lists the others under "also:".
try:
    cute_bind.kernel(messy)
except cute_bind.KernelDefinitionError as err:
    assert err.code == "CB101" and "also: CB104 at 'alpha'" in str(err)
    assert [e.code for e in err.details["all"]] == ["CB101", "CB104", "CB113", "CB106"]
# --8<-- [end:all-problems]


# --8<-- [start:eligible]
# Tensors, Float16/BFloat16 scalars and tuples of eligible kinds are slots
# (their old codes, CB103 and CB105, are retired and never raised).
def modern(
    out: cute.Tensor,
    inp: cute_bind.Tensor[cutlass.Float32, 2],
    beta: cutlass.BFloat16,
    sizes: tuple[cutlass.Int32, cutlass.Int32],
):
    pass


assert cute_bind.check_function(modern) == []
assert cute_bind.CATALOG["CB103"].retired and cute_bind.CATALOG["CB105"].retired
# --8<-- [end:eligible]


# --8<-- [start:fixed]
# The fix CB104 suggests: take the scalar as Float32 (convert inside if the
# math needs Float8).
@cute_bind.kernel
def scale_host(
    out: F32Ptr,
    inp: F32Ptr,
    alpha: cutlass.Float32,
    n: cutlass.Int32,
):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    for i in range(n):
        o[i] = x[i] * alpha


# --8<-- [end:fixed]


# --8<-- [start:device]
@cute.kernel
def scale_kernel(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        o[i] = x[i] * alpha


@cute_bind.kernel
def scale(
    out: cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem],
    inp: cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem],
    alpha: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    scale_kernel(out, inp, alpha, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


# --8<-- [end:device]


def expect(code: str, fn, *args, **kwargs) -> cute_bind.CuteBindError:
    """Call fn and check it raises the diagnostic `code`."""
    try:
        fn(*args, **kwargs)
    except cute_bind.CuteBindError as err:
        assert err.code == code, f"expected {code}, got {err.code}: {err}"
        print(f"  {code}: {str(err).splitlines()[0]}")
        return err
    raise AssertionError(f"expected {code}, nothing was raised")


N = 256


def run_on_cpu() -> None:
    # --8<-- [start:launch-errors]
    x = np.arange(N, dtype=np.float32)
    y = np.zeros_like(x)
    handle = scale_host.bind(y, x, 2.0, N)
    handle.launch(y, x, 2.0, N)
    assert np.array_equal(y, 2.0 * x)

    # Launch-time mistakes are typed too, and nothing is launched.
    err = expect("CB204", handle.launch, y, x, 2.0, 12.5)  # a float for an Int32 slot
    assert isinstance(err, TypeError) and err.parameter == "n"
    err = expect("CB205", handle.launch, y, x, 2.0, 2**40)  # does not fit Int32
    assert isinstance(err, ValueError)
    expect("CB210", handle.launch, y, x.astype(np.float64), 2.0, N)  # float64 data, Float32 slot
    expect("CB201", handle.launch, y, x, 2.0)  # 'n' missing
    expect("CB202", handle.launch, y, x, 2.0, N, 7)  # one too many
    expect("CB203", handle.launch, y, x, 2.0, N, n=N)  # 'n' twice

    # All launch-time errors share one base class.
    try:
        handle.launch(y, x, "2.0", N)
    except cute_bind.PreparedLaunchError as err:
        assert err.code == "CB204"
    # --8<-- [end:launch-errors]

    # The device version compiles here too (nothing is launched without a GPU).
    scale.compile(1 << 20, 1 << 20, 2.0, N, 0)
    print(
        "CPU: host-only scale_host ran; device scale compiled for",
        os.environ.get("CUTE_DSL_ARCH", "this GPU"),
    )


def run_on_gpu() -> None:
    # --8<-- [start:gpu]
    import torch

    x = torch.arange(N, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    stream = torch.cuda.current_stream()
    handle = scale.bind(y, x, 2.0, N, stream)
    handle.launch(y, x, 3.0, N, stream)
    torch.cuda.synchronize()
    assert torch.equal(y, 3.0 * x)

    expect("CB204", handle.launch, y, x, 2.0, 12.5, stream)
    expect("CB210", handle.launch, y, x.double(), 2.0, N, stream)  # float64 tensor
    expect("CB207", handle.launch, y, x[1:], 2.0, N - 1, stream)  # 4 bytes off a 16-byte slot
    # --8<-- [end:gpu]
    print("GPU: scale ran on", torch.cuda.get_device_name())


def main() -> None:
    if GPU:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("note: a GPU is present but torch is not installed; running the host-only variant")
            run_on_cpu()
            return
        run_on_gpu()
    else:
        print("note: no CUDA device; running the host-only variant")
        run_on_cpu()
    print("ok")


if __name__ == "__main__":
    main()
