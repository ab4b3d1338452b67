"""Tutorial 11: porting FlashAttention-4 and quack kernels to cute_bind.

Run it:  python tutorials/11_porting_clients.py
Needs the released clients: pip install -r tests/clients/requirements.txt
(quack-kernels 0.6.5, flash-attn-4 4.0.0b36 and what they need).

Production CuTe DSL code compiles its kernels itself: quack builds callable
kernel classes (`Softmax(dtype, N)`, `RMSNorm(dtype, N)`) and compiles them
from the DSL's fake tensors with `--enable-tvm-ffi`; FlashAttention-4 does the
same behind `flash_attn_func`. Both doors of cute_bind take that code as
written:

- `cute_bind.prepare(compiled, *args)`: the package's own compiled function,
  prepared with the arguments the package passes it; `handle.launch(...)`
  replaces the per-call `compiled(...)`.
- `cute_bind.kernel(host, compile_options=...)`: the package's host object,
  compiled with the package's own fake tensors; `kernel(*args)` launches.

With a CUDA GPU every launch is compared bit for bit with the package's own
function. Without one, the kernels compile for sm_90a (FlashAttention-4 in its
CPU compile mode, torch's FakeTensorMode) and the handles are prepared from
CPU tensors of the same shapes; nothing is launched.
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib import metadata


def gpu_available() -> bool:
    """True when torch is installed and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


GPU = gpu_available()
if not GPU:
    # No device: compile for the H200 on the CPU (both packages read these once, at import).
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    os.environ.setdefault("FLASH_ATTENTION_ARCH", "sm_90")
    os.environ.setdefault("FLASH_ATTENTION_NUM_SMS", "132")


def clients_missing() -> list[str]:
    """The client distributions that are not installed (their metadata, without importing them)."""
    missing = []
    for dist in ("quack-kernels", "flash-attn-4"):
        try:
            metadata.version(dist)
        except metadata.PackageNotFoundError:
            missing.append(dist)
    return missing


if clients_missing():
    print(f"skipped: the client packages are not installed ({', '.join(clients_missing())}); "
          "pip install -r tests/clients/requirements.txt to run this tutorial")  # fmt: skip
    sys.exit(0)  # the last line says "skipped", not "ok": nothing of this tutorial ran

import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import make_fake_stream

import cute_bind

DEVICE = "cuda" if GPU else "cpu"
M, N = 8, 4096


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit, NaN payloads included (bf16 viewed as int16)."""
    return a.shape == b.shape and torch.equal(a.view(torch.int16), b.view(torch.int16))


def quack_softmax_prepare(x: torch.Tensor) -> None:
    # --8<-- [start:quack-prepare]
    from quack.softmax import Softmax, softmax_fwd

    # quack's own compile: Softmax(BFloat16, N) from fake tensors (dynamic rows,
    # static N, 16-byte aligned), --enable-tvm-ffi; cached by quack per (dtype, N)
    compiled = Softmax.compile(cutlass.BFloat16, cutlass.BFloat16, N)
    out = torch.empty_like(x)
    handle = cute_bind.prepare(compiled, x, out)  # the arguments quack passes it
    if GPU:
        handle.launch(x, out)  # what compiled(x, out) does, on torch's current stream
        assert same_bits(out, softmax_fwd(x))
    # --8<-- [end:quack-prepare]
    print("quack Softmax, prepare:", handle)


def quack_rmsnorm_kernel(x: torch.Tensor, weight: torch.Tensor) -> None:
    # --8<-- [start:quack-kernel]
    from quack.compile_utils import make_fake_tensor
    from quack.rmsnorm import RMSNorm, rmsnorm_fwd

    # the decorator over quack's kernel class, compiled as quack compiles it
    rmsnorm = cute_bind.kernel(RMSNorm(cutlass.BFloat16, N), compile_options="--enable-tvm-ffi")
    rows, div = cute.sym_int(), 4  # quack's divisibility: gcd(N, 128 // each dtype's width)
    x_fake = make_fake_tensor(cutlass.BFloat16, (rows, N), div)  # dynamic rows, static N
    w_fake = make_fake_tensor(cutlass.Float32, (N,), div)
    rmsnorm.compile(
        x_fake, w_fake, None, None, x_fake, None, None, None,  # x, weight, bias, residual, out, ...
        cutlass.Float32(0), make_fake_stream(use_tvm_ffi_env_stream=True),
    )  # fmt: skip
    out = torch.empty_like(x)
    if GPU:
        rmsnorm(x, weight, None, None, out, None, None, None, 1e-6)  # quack's call, the stream left out
        assert same_bits(out, rmsnorm_fwd(x, weight, eps=1e-6)[0])
    # --8<-- [end:quack-kernel]
    print("quack RMSNorm, kernel:", rmsnorm)


def quack_softmax_op(x: torch.Tensor) -> None:
    # --8<-- [start:quack-op]
    import cute_bind.torch as cbt
    from quack.compile_utils import make_fake_tensor
    from quack.softmax import Softmax, softmax_fwd

    softmax = cute_bind.kernel(Softmax(cutlass.BFloat16, N), compile_options="--enable-tvm-ffi")
    rows = cute.sym_int()
    fakes = [make_fake_tensor(cutlass.BFloat16, (rows, N), 8) for _ in range(2)]  # Softmax.compile's own
    softmax.compile(*fakes, make_fake_stream(use_tvm_ffi_env_stream=True))
    # an op that allocates its output as quack's softmax_fwd does (torch.empty_like(x))
    op = cbt.op("tutorial11::softmax", softmax, outputs={"mO": "mX"})
    assert op.schema == "(Tensor mX) -> Tensor"
    if GPU:
        assert same_bits(op(x), softmax_fwd(x))  # eager: straight to softmax(x, out), the stream left out
    # --8<-- [end:quack-op]
    print("quack Softmax, torch op:", op.name, op.schema)


# --8<-- [start:fa4-args]
def fa4_call_args(q, k, v, out):
    """The arguments FlashAttention-4 gives its compiled sm90 forward (flash_attn/cute/interface.py,
    `_flash_attn_fwd`): no LSE, no varlen, paging, window, sink or block sparsity."""
    from flash_attn.cute.utils import AuxData

    scale = q.shape[-1] ** -0.5
    return (q, k, v, out, None, scale, None, None, None, None, None, None, None, None, None, AuxData(None, None), None, None)


# --8<-- [end:fa4-args]


def fa4_compile(batch: int, keys: int):
    """FlashAttention-4 compiles on its first call; its compiled function, from its own cache."""
    # --8<-- [start:fa4-compile]
    from flash_attn.cute import flash_attn_func, interface

    def qkv():
        return [torch.randn(batch, s, 16, 128, dtype=torch.bfloat16, device="cuda") for s in (1, keys, keys)]

    with warnings.catch_warnings():  # two upstream warnings of FlashAttention-4's first call (the page says why)
        warnings.filterwarnings("ignore", "Argument aux_data .* cannot be converted to a JitArgument", UserWarning)
        warnings.filterwarnings("ignore", "Accessing the data pointer of FakeTensor is deprecated", UserWarning)
        if GPU:
            q, k, v = qkv()
            reference, _ = flash_attn_func(q, k, v)  # compiles (once per configuration), then runs
        else:
            from torch._subclasses.fake_tensor import FakeTensorMode

            with FakeTensorMode():  # FlashAttention-4's CPU compile mode: it compiles and skips the call
                flash_attn_func(*qkv())
            q, k, v = [torch.randn(batch, s, 16, 128, dtype=torch.bfloat16) for s in (1, keys, keys)]
            reference = None
    (compiled,) = interface._flash_attn_fwd.compile_cache.cache.values()
    # --8<-- [end:fa4-compile]
    return compiled, (q, k, v), reference


def fa4_decode(steps: int = 4) -> None:
    compiled, (q, k, v), reference = fa4_compile(batch=1, keys=512)
    # --8<-- [start:fa4-decode]
    out = torch.empty_like(q)
    handle = cute_bind.prepare(compiled, *fa4_call_args(q, k, v, out))
    if GPU:
        for _ in range(steps):  # a decode loop: new q (and k, v) each step, same positions
            handle.launch(*fa4_call_args(q, k, v, out))
        assert same_bits(out, reference)
    # --8<-- [end:fa4-decode]
    print("FlashAttention-4 forward, prepare:", handle)


def main() -> None:
    x = torch.randn(M, N, dtype=torch.bfloat16, device=DEVICE)
    weight = torch.randn(N, dtype=torch.float32, device=DEVICE)
    if not GPU:
        print("note: no CUDA device; compiling for", os.environ["CUTE_DSL_ARCH"], "and preparing only")
    quack_softmax_prepare(x)
    quack_rmsnorm_kernel(x, weight)
    quack_softmax_op(x)
    fa4_decode()
    print("ok")


if __name__ == "__main__":
    main()
