"""Tutorial 10: kernels as torch ops -- eager, torch.compile and autograd.

Run it:  python tutorials/10_torch_ops.py

`cute_bind.torch.op("ns::name", kernel, ...)` registers a cute_bind kernel as
the torch custom op `torch.ops.ns.name`: torch gets a schema, a fake
implementation and an autograd hook, so `torch.compile(fullgraph=True)` traces
through it without a graph break. Called eagerly, the op skips torch's
dispatcher and calls the kernel directly, on torch's current stream.

The script builds a small model step around a fused scale-add kernel
(`out = x * alpha + residual`), runs it eagerly and compiled, and trains
through it with a forward and backward kernel pair. On a machine with a CUDA
GPU it uses device kernels on CUDA tensors (and CUDA graphs through
`mode="reduce-overhead"`); elsewhere host-only twins of the same kernels on
CPU tensors (torch.compile's CPU backend compiles C++, so the first compiled
call takes a while). Without torch it prints a note and stops.
"""

from __future__ import annotations

import os


def gpu_available() -> bool:
    """True when torch is installed and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


GPU = gpu_available()
if not GPU:
    # No device: compile device kernels for Hopper on the CPU (nothing is launched).
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind
import cute_bind.torch  # imports nothing from torch until an op is made

try:
    import torch
except ImportError:
    torch = None

T = 128
F32x2 = cute_bind.Tensor[cutlass.Float32, 2]


# --8<-- [start:device]
@cute.kernel
def scale_add_kernel(out: cute.Tensor, x: cute.Tensor, res: cute.Tensor, alpha: cutlass.Float32):
    """out[i, j] = x[i, j] * alpha + res[i, j], one element per thread."""
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    k = bidx * T + tidx
    rows = cute.size(out, mode=[0])
    if k < cute.size(out):
        i = k % rows
        j = k // rows
        out[i, j] = x[i, j] * alpha + res[i, j]


@cute_bind.kernel
def scale_add(out: F32x2, x: F32x2, res: F32x2, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """Host function: the grid from the extent, the launch on `stream` (the op passes torch's current one)."""
    n = cute.size(out)
    scale_add_kernel(out, x, res, alpha).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


@cute.kernel
def scale_kernel(out: cute.Tensor, g: cute.Tensor, alpha: cutlass.Float32):
    """out[i, j] = g[i, j] * alpha (the backward of scale-add with respect to x)."""
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    k = bidx * T + tidx
    rows = cute.size(out, mode=[0])
    if k < cute.size(out):
        out[k % rows, k // rows] = g[k % rows, k // rows] * alpha


@cute_bind.kernel
def scale(out: F32x2, g: F32x2, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    n = cute.size(out)
    scale_kernel(out, g, alpha).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


# --8<-- [end:device]


# --8<-- [start:host]
@cute_bind.kernel
def scale_add_host(out: F32x2, x: F32x2, res: F32x2, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """The host-only twin: same signature, a plain loop (runs on CPU tensors)."""
    for i in range(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = x[i, j] * alpha + res[i, j]


@cute_bind.kernel
def scale_host(out: F32x2, g: F32x2, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    for i in range(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = g[i, j] * alpha


# --8<-- [end:host]


def make_ops():
    # --8<-- [start:ops]
    fwd, bwd = (scale_add, scale) if GPU else (scale_add_host, scale_host)

    # Functional: the op allocates `out` like `x` and returns it.
    scale_add_op = cute_bind.torch.op("tutorial::scale_add", fwd, outputs={"out": cute_bind.torch.like("x")})
    scale_op = cute_bind.torch.op("tutorial::scale", bwd, outputs={"out": cute_bind.torch.like("g")})
    # Mutating: the caller passes `out`; nothing else to declare.
    scale_add_ = cute_bind.torch.op("tutorial::scale_add_", fwd, mutates_args=("out",))

    print(scale_add_op.schema)  # (Tensor x, Tensor res, Scalar alpha) -> Tensor
    print(scale_add_.schema)  # (Tensor(a0!) out, Tensor x, Tensor res, Scalar alpha) -> ()
    # --8<-- [end:ops]
    assert scale_add_op.schema == "(Tensor x, Tensor res, Scalar alpha) -> Tensor"
    assert scale_add_.schema == "(Tensor(a0!) out, Tensor x, Tensor res, Scalar alpha) -> ()"
    return scale_add_op, scale_op, scale_add_


def run_eager(scale_add_op, scale_add_, device):
    # --8<-- [start:eager]
    x = torch.randn(64, 32, device=device)
    res = torch.randn(64, 32, device=device)

    y = scale_add_op(x, res, 0.5)  # eager: straight to the kernel, on torch's current stream
    assert torch.equal(y, x * 0.5 + res)

    out = torch.empty_like(x)
    assert scale_add_(out, x, res, 0.5) is None  # the mutating form writes `out`
    assert torch.equal(out, y)

    # The same op through torch's dispatcher: the same bytes.
    assert torch.equal(torch.ops.tutorial.scale_add(x, res, 0.5), y)
    # torch checks what the op declares: schema, fake implementation, autograd, AOT dispatch.
    print(torch.library.opcheck(scale_add_op.overload, (x, res, 0.5)))
    # --8<-- [end:eager]


# --8<-- [start:autograd]
def register_backward(scale_add_op, scale_op):
    """d(x * alpha + res) = (grad * alpha, grad): the backward is the `scale` kernel."""

    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    def backward(ctx, grad):
        grad = grad.contiguous()  # the kernels are compiled for row-major tensors
        return scale_op(grad, ctx.alpha), grad, None

    scale_add_op.register_autograd(backward, setup_context=setup_context)


# --8<-- [end:autograd]


def run_model_step(scale_add_op, device):
    # --8<-- [start:step]
    def step(x, w, res):
        """A residual block: projection, fused scale-add (our kernel), activation."""
        h = x @ w
        return scale_add_op(h, res, 0.5).relu()

    def reference(x, w, res):
        return ((x @ w) * 0.5 + res).relu()

    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(64, 32, device=device, generator=g)
    w = torch.randn(32, 32, device=device, generator=g, requires_grad=True)
    res = torch.randn(64, 32, device=device, generator=g)

    # Eagerly, training through the op: autograd runs the backward kernel.
    loss = step(x, w, res).square().sum()
    loss.backward()
    w_ref = w.detach().clone().requires_grad_()
    reference(x, w_ref, res).square().sum().backward()
    assert torch.allclose(w.grad, w_ref.grad, rtol=1e-4, atol=1e-4)

    # Compiled: one graph, no break; the op is an ordinary node in it.
    explained = torch._dynamo.explain(step)(x, w, res)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(step, fullgraph=True)
    with torch.no_grad():
        assert torch.allclose(compiled(x, w, res), step(x, w, res))
    # --8<-- [end:step]
    print("model step: eager and compiled agree; gradients match the torch reference")


def run_cuda_graphs(scale_add_op):
    # --8<-- [start:graphs]
    def step(x, res):
        return scale_add_op(x, res, 2.0) + 1.0

    graphed = torch.compile(step, fullgraph=True, mode="reduce-overhead")  # CUDA graphs
    for seed in range(3):
        x = torch.randn(256, 64, device="cuda")
        res = torch.randn(256, 64, device="cuda")
        assert torch.equal(graphed(x, res), step(x, res))

    # Or capture by hand: the op launches on the capture stream (torch's current one).
    x, res = torch.randn(256, 64, device="cuda"), torch.randn(256, 64, device="cuda")
    step(x, res)  # warm up before capturing, as torch requires
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = step(x, res)
    x.copy_(torch.randn(256, 64, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2.0 + res + 1.0)
    # --8<-- [end:graphs]
    print("GPU: reduce-overhead and torch.cuda.graph replay the op on", torch.cuda.get_device_name())


def compile_device_kernels():
    # --8<-- [start:compile-only]
    # No GPU: compile the device kernels for sm_90a from CPU tensors (nothing runs).
    x = torch.zeros(64, 32)
    scale_add.compile(x, x, x, 0.5, 0)
    scale.compile(x, x, 0.5, 0)
    # --8<-- [end:compile-only]
    print("compiled the device kernels for", os.environ.get("CUTE_DSL_ARCH", "this GPU"))


def main() -> None:
    if torch is None:
        # the last line says "skipped", not "ok": nothing of this tutorial ran
        print("skipped: torch is not installed; cute_bind.torch needs it (pip install -e '.[torch]')")
        return
    device = "cuda" if GPU else "cpu"
    scale_add_op, scale_op, scale_add_ = make_ops()
    register_backward(scale_add_op, scale_op)  # before anything traces the op (opcheck below): CB707 after
    run_eager(scale_add_op, scale_add_, device)
    run_model_step(scale_add_op, device)
    if GPU:
        run_cuda_graphs(scale_add_op)
    else:
        print("note: no CUDA device; host-only kernels on CPU tensors")
        compile_device_kernels()
    print("ok")


if __name__ == "__main__":
    main()
