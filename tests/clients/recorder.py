"""Record every ``cute.compile`` a production CuTe DSL client makes, and try cute_bind's two doors on each.

Run as ``python -m tests.clients.recorder --json OUT`` (from the repository
root, in an environment with ``tests/clients/requirements.txt`` installed).
It sets the environment for a CPU-only compile for the H200 (``sm_90a``;
``--target sm100``: FlashAttention-4's Blackwell kernels, ``sm_100a``)
before anything imports the DSL, then for each case drives the client
package's own public Python entry (quack's torch wrappers, FlashAttention-4's
``flash_attn_func`` and its autograd function's backward) with CPU tensors,
and records:

- every ``cute.compile`` call: the host function or callable object, the
  arguments and keywords exactly as given, the options, the compiled result
  and the time it took (``cute.compile[...]`` and module-level aliases of
  ``cute.compile`` in the client's modules included);
- every ``cute.runtime.load_module(...)[name]`` (quack's disk cache);
- what the client then passes to each compiled function (the proxy the client
  receives records the call and launches nothing: there is no GPU here).

Then for each record it tries, with the current cute_bind:

- ``prepare``: ``cute_bind.prepare(compiled, *call_args, **call_kwargs)``
  with the client's own call arguments (FlashAttention's fake CUDA tensors,
  see below, become CPU tensors of the same shape, strides and dtype);
- ``kernel``: ``cute_bind.kernel(host, compile_options=client's options)``
  then ``.compile(*compile_args, **compile_kwargs)`` with the client's own
  compile arguments;
- ``kernel_without_tvm_ffi`` (information only): the same without
  ``--enable-tvm-ffi``, to show the next refusal.

Getting only the compile on the CPU:

- quack: its torch wrappers run eagerly on CPU tensors (``cute_op`` calls the
  body directly outside ``torch.compile``); ``QUACK_CACHE_ENABLED=0`` keeps
  its disk cache out of the way except in the case that exercises it; the SM
  count (``torch.cuda.get_device_properties``) is the H200's (132); the two
  functional ops registered for CUDA only (``rmsnorm_bwd_f``, ``_dual``) get
  their own Python body as CPU kernel.
- FlashAttention-4: under torch's ``FakeTensorMode`` (its own CPU compile
  mode, ``flash_attn.cute.testing.maybe_fake_tensor_mode``) with
  ``FLASH_ATTENTION_ARCH=sm_90`` and ``FLASH_ATTENTION_NUM_SMS=132``. In that
  mode it compiles but skips its calls; ``interface.is_fake_mode`` is made to
  say ``False`` so it also makes its calls (with fake CUDA tensors, into the
  recording proxy), which gives the exact call arguments. The backward calls
  ``FlashAttnFunc.forward``/``.backward`` with a stand-in ``ctx``: autograd
  itself aborts a CPU-only torch on fake CUDA tensors.

``--markdown`` also prints the table of outcomes; the JSON holds, per
compile, the kinds of its compile and call arguments, each door's outcome,
every eligibility refusal of the host function (``check_function``) and how
each of its parameters' slots takes the client's compile value.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import inspect
import itertools
import json
import os
import sys
import time
import traceback
from typing import Any, Callable, Iterator

#: The environment a CPU-only compile for the H200 needs; set before the DSL is imported.
ENV = {
    "CUTE_DSL_ARCH": "sm_90a",
    "FLASH_ATTENTION_ARCH": "sm_90",
    "FLASH_ATTENTION_NUM_SMS": "132",
    "QUACK_CACHE_ENABLED": "0",  # quack's .o cache: only the case that exercises it turns it on
    "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "0",  # FlashAttention's disk cache (its default): compiles happen here
    "QUACK_ARCH": "sm_90",  # quack's GEMMs read the device's capability; the H200's (its own override for CPU compiles)
}
H200_SMS = 132
#: A B200's SM count: FlashAttention-4's sm100 kernels read it while tracing (their persistent scheduler's grid)
B200_SMS = 148

#: The compile targets (``--target``): the H200's (sm90: every case, and what the GPU suite runs), and
#: Blackwell's (sm100: FlashAttention-4's own Blackwell kernels, compiled and tried on the CPU only; no
#: machine lent here runs them).
TARGETS: dict[str, dict[str, str]] = {
    "sm90": ENV,
    "sm100": {
        **ENV,
        "CUTE_DSL_ARCH": "sm_100a",
        "FLASH_ATTENTION_ARCH": "sm_100",
        "FLASH_ATTENTION_NUM_SMS": str(B200_SMS),
        "QUACK_ARCH": "sm_100",
    },
}

_HERE = os.path.abspath(__file__)


# ------------------------------------------------------------------ records
@dataclasses.dataclass
class Call:
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    case: str  # a compile is reused by later cases whose compile key is the same (FlashAttention's decode)
    # GPU mode only (``Recorder(gpu=True)``): copies of every tensor argument just before and just after
    # the client's own call (``snapshot``), what tests/clients/bitwise.py compares each door with
    before: Any = None
    after: Any = None


@dataclasses.dataclass
class Recorded:
    """One ``cute.compile`` (or ``load_module(...)[name]``) the client made."""

    label: str
    case: str
    host: Any  # the callable given to cute.compile; None for a loaded function
    args: tuple[Any, ...]  # compile arguments after the host, as given
    kwargs: dict[str, Any]  # compile keywords, options left out
    options: Any
    compiled: Any
    seconds: float
    origin: str  # file:line of the client's call
    calls: list[Call] = dataclasses.field(default_factory=list)
    loaded_from: str | None = None
    #: a copy of a kernel object as it was before the client's compile traced it (None: a function, or
    #: an object that does not copy): tracing may set its attributes, and a compile of the traced object
    #: is another key than the one a fresh process compiles (the hook door compiles copies of this)
    pristine: Any = None


def pristine_copy(host: Any) -> Any:
    """``copy.deepcopy(host)`` for a kernel object (a callable instance), else ``None``."""
    import copy
    import inspect

    if host is None or inspect.isfunction(host) or inspect.ismethod(host) or isinstance(host, type):
        return None
    try:
        return copy.deepcopy(host)
    except Exception:  # noqa: BLE001 - an object that does not copy: the hook door compiles the client's own
        return None


class _Proxy:
    """What the client receives instead of the compiled function: its calls are recorded, nothing is launched."""

    def __init__(self, record: Recorded, recorder: Recorder) -> None:
        object.__setattr__(self, "_record", record)
        object.__setattr__(self, "_recorder", recorder)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = Call(args, dict(kwargs), self._recorder.case)
        self._record.calls.append(call)
        if not self._recorder.gpu:
            return None
        # GPU mode: the client's own call runs, between copies of its tensors (the reference)
        import torch

        call.before = snapshot((args, kwargs)) if self._recorder.snapshots else None
        result = self._record.compiled(*args, **kwargs)
        if self._recorder.snapshots:
            if torch.cuda.is_available():  # (the CPU tests of this mode call host-only functions)
                torch.cuda.synchronize()
            call.after = snapshot((args, kwargs))
        return result

    def __getattr__(self, name: str) -> Any:  # export_to_c and the like: the compiled function's own
        return getattr(self._record.compiled, name)


def _origin() -> str:
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == _HERE:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "?"
    path = frame.f_code.co_filename
    for marker in ("site-packages" + os.sep,):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{path}:{frame.f_lineno}"


def _host_name(host: Any) -> str:
    if host is None:
        return "loaded"
    if inspect.isfunction(host) or inspect.ismethod(host):
        return host.__name__
    return type(host).__name__


class Recorder:
    """Patches ``cute.compile`` and ``cute.runtime.load_module`` while active; collects :class:`Recorded`.

    ``gpu=True`` (on a CUDA machine): the proxy the client receives also makes
    the client's call, so the client computes its real results, and (with
    ``snapshots``) keeps copies of the call's tensors from just before and
    just after it (:attr:`Call.before`, :attr:`Call.after`).
    """

    def __init__(self, gpu: bool = False, snapshots: bool = True) -> None:
        self.records: list[Recorded] = []
        self.case = "?"
        self.gpu = gpu
        self.snapshots = snapshots

    def _add(self, record: Recorded) -> Recorded:
        same = sum(1 for r in self.records if r.case == record.case and r.label.split("#")[0] == record.label)
        if same:
            record.label += f"#{same + 1}"
        self.records.append(record)
        return record

    def compile_with(self, original: Any, fixed_options: Any = None) -> Any:
        recorder = self

        class RecordingCompile:
            def __call__(self, *args: Any, **kwargs: Any) -> Any:
                host, rest = args[0], args[1:]
                if str(getattr(host, "__module__", "")).split(".")[0] == "cutlass":
                    # the DSL's own compile (HardwareInfo's occupancy probe, ``self._host_function``, on
                    # the GPU): not the client's kernel, and the client never calls it
                    return original(*args, **kwargs)
                options = kwargs.get("options", fixed_options)
                pristine = pristine_copy(host)
                start = time.perf_counter()
                compiled = original(*args, **kwargs)
                seconds = time.perf_counter() - start
                record = recorder._add(
                    Recorded(
                        label=f"{recorder.case}:{_host_name(host)}",
                        case=recorder.case,
                        host=host,
                        args=rest,
                        kwargs={k: v for k, v in kwargs.items() if k != "options"},
                        options=options,
                        compiled=compiled,
                        seconds=seconds,
                        origin=_origin(),
                        pristine=pristine,
                    )
                )
                return _Proxy(record, recorder)

            def __getitem__(self, options: Any) -> Any:  # cute.compile[opts](...)
                return recorder.compile_with(original[options], options)

            def __getattr__(self, name: str) -> Any:
                return getattr(original, name)

        return RecordingCompile()

    @contextlib.contextmanager
    def active(self, case: str, prefixes: tuple[str, ...] = ("quack", "flash_attn")) -> Iterator[None]:
        import cutlass.cute as cute
        import cutlass.cute.runtime as runtime

        self.case = case
        original_compile = cute.compile
        original_load = runtime.load_module
        recorder = self

        class LoadedModule:
            def __init__(self, module: Any, path: str) -> None:
                self._module, self._path = module, path

            def __getitem__(self, name: str) -> Any:
                function = self._module[name]
                loaded = Recorded(
                    label=f"{recorder.case}:loaded", case=recorder.case, host=None, args=(), kwargs={}, options=None,
                    compiled=function, seconds=0.0, origin=_origin(), loaded_from=f"{self._path}[{name!r}]",
                )  # fmt: skip
                record = recorder._add(loaded)
                return _Proxy(record, recorder)

            def __getattr__(self, name: str) -> Any:
                return getattr(self._module, name)

        def load_module(path: Any, *args: Any, **kwargs: Any) -> Any:
            return LoadedModule(original_load(path, *args, **kwargs), str(path))

        patches: list[tuple[Any, str, Any]] = [
            (cute, "compile", self.compile_with(original_compile)),
            (runtime, "load_module", load_module),
        ]
        # the clients' own aliases of cute.compile (``from cutlass.cute import compile``, ``cute_compile_og``)
        for name, module in list(sys.modules.items()):
            if module is None or name.split(".")[0] not in prefixes:
                continue
            for attr, value in list(vars(module).items()):
                if value is original_compile:
                    patches.append((module, attr, patches[0][2]))
        saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patches]
        try:
            for owner, attr, value in patches:
                setattr(owner, attr, value)
            yield
        finally:
            for owner, attr, value in reversed(saved):
                setattr(owner, attr, value)


# ------------------------------------------------------------------ the clients' entries, driven on the CPU
#: set by ``record(..., gpu=True)``: the drivers then run on the GPU (their tensors made on CUDA, no shims)
_GPU = False
#: tensors a client passes by address (an int), kept for the process: recorded calls stay replayable
_KEEP_ALIVE: list[Any] = []


def _quack_shims() -> None:
    """quack on the CPU: the H200's SM count, and CPU kernels for its CUDA-only functional ops (their own body)."""
    rmsnorm = importlib.import_module("quack.rmsnorm")
    config = importlib.import_module("quack.rmsnorm_config")
    rmsnorm.get_sm_count = lambda N, device: config._get_sm_count_hopper(N, H200_SMS)
    # the GEMMs' persistent grid: quack asks cutlass.utils.HardwareInfo, which asks the driver
    importlib.import_module("cutlass.utils").HardwareInfo = _HardwareInfo
    for name in ("_rmsnorm_bwd_f", "_rmsnorm_bwd_f_dual"):
        op = getattr(rmsnorm, name, None)
        if op is not None and not getattr(op, "_cute_bind_cpu", False):
            op.register_kernel("cpu")(op._init_fn)
            op._cute_bind_cpu = True


class _HardwareInfo:
    """``cutlass.utils.HardwareInfo`` on the CPU (the class asks the driver): the target GPU's SM count."""

    sms = H200_SMS

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = device_id

    def get_device_multiprocessor_count(self) -> int:
        return self.sms

    def get_max_active_clusters(self, cluster_size: int, stream: Any = None) -> int:
        return self.sms // cluster_size


class _B200Info(_HardwareInfo):
    sms = B200_SMS


def _sm100_shims() -> None:
    """FlashAttention-4's sm100 kernels size their persistent grid from the device while tracing: a B200's, here."""
    utils = importlib.import_module("cutlass.utils")
    utils.HardwareInfo = _B200Info


def _bf16(*shape: int) -> Any:
    import torch

    return torch.randn(*shape, dtype=torch.bfloat16)


def quack_softmax_fwd() -> None:
    importlib.import_module("quack.softmax").softmax_fwd(_bf16(8, 1024))


def quack_softmax_bwd() -> None:
    importlib.import_module("quack.softmax").softmax_bwd(_bf16(8, 1024), _bf16(8, 1024))


def quack_rmsnorm_fwd() -> None:
    import torch

    m = importlib.import_module("quack.rmsnorm")
    x, w = _bf16(8, 4096), torch.randn(4096, dtype=torch.float32)
    m.rmsnorm_fwd(x, w, eps=1e-6)  # weight only
    m.rmsnorm_fwd(x, w, residual=_bf16(8, 4096), store_rstd=True)  # residual in and out, rstd
    m.rmsnorm_fwd(x, None, eps=1e-5)  # no weight


def quack_rmsnorm_bwd() -> None:
    import torch

    m = importlib.import_module("quack.rmsnorm")
    x, w = _bf16(8, 4096), torch.randn(4096, dtype=torch.float32)
    rstd = torch.rand(8, dtype=torch.float32)
    m.rmsnorm_bwd(x, w, _bf16(8, 4096), rstd)


def quack_layernorm_fwd() -> None:
    import torch

    m = importlib.import_module("quack.rmsnorm")
    m.layernorm_fwd(_bf16(8, 4096), torch.randn(4096), torch.randn(4096), return_rstd=True, return_mean=True)


def quack_layernorm_bwd() -> None:
    import torch

    m = importlib.import_module("quack.rmsnorm")
    m.layernorm_bwd(_bf16(8, 4096), torch.randn(4096), _bf16(8, 4096), torch.rand(8), torch.randn(8))


def quack_cross_entropy() -> None:
    import torch

    m = importlib.import_module("quack.cross_entropy")
    x, target = _bf16(8, 8192), torch.randint(0, 8192, (8,), dtype=torch.int64)
    m.cross_entropy_fwd(x, target, return_lse=True)  # fwd
    m.cross_entropy_fwd(x, target, return_lse=True, return_dx=True)  # fwd + dx
    m.cross_entropy_bwd(x, target, torch.rand(8), torch.rand(8))  # bwd


def quack_topk() -> None:
    m = importlib.import_module("quack.topk")
    values, indices = m.topk_fwd(_bf16(8, 1024), 8)
    m.topk_bwd(_bf16(8, 8), None, indices, 1024)
    del values


def quack_rotary() -> None:
    import torch

    m = importlib.import_module("quack.rotary")
    x = _bf16(2, 64, 8, 128)
    cos, sin = torch.rand(64, 64, dtype=torch.float32), torch.rand(64, 64, dtype=torch.float32)
    m.apply_rotary(x, cos, sin)


def quack_split_k_reduce() -> None:
    import torch

    m = importlib.import_module("quack.split_k_reduce")
    ws = torch.randn(2 * 2, 128, 256, dtype=torch.float32)
    out = torch.empty(2, 128, 256, dtype=torch.bfloat16)
    c = _bf16(2, 128, 256)
    m.split_k_reduce(ws, out, 2, beta=0.0, C=c)  # beta as Float32(0.0)
    alpha = torch.tensor([2.0])
    # quack passes alpha.data_ptr(), an int: the GPU check (bitwise.py) replays the call later, so the
    # memory it points at must outlive this driver (freed, the caching allocator hands it out again)
    _KEEP_ALIVE.append(alpha)
    m.split_k_reduce(ws, out, 2, alpha=alpha)  # alpha as a device address


def quack_rms_final_reduce() -> None:
    importlib.import_module("quack.rms_final_reduce").rms_final_reduce(_bf16(8, 1024).float(), 1.0 / 1024)


def quack_hadamard() -> None:
    importlib.import_module("quack.transform.hadamard").hadamard_transform_fwd(_bf16(8, 1024), 0.5)


def _gemm_operands(m: int, n: int, k: int) -> tuple[Any, Any]:
    return _bf16(m, k), _bf16(k, n)


def quack_gemm() -> None:
    """quack's GEMM at a small (host-bound) shape with its default config (``tuned=False``: no autotuning)."""
    gi = importlib.import_module("quack.gemm_interface")
    gi.gemm(*_gemm_operands(256, 256, 256), tuned=False)


def quack_gemm_add() -> None:
    """``out = A @ B + C`` (the C operand and beta in the epilogue arguments)."""
    gi = importlib.import_module("quack.gemm_interface")
    a, b = _gemm_operands(256, 512, 256)
    gi.gemm_add(a, b, _bf16(256, 512), tuned=False)


def quack_gemm_act() -> None:
    """A fused activation epilogue (relu), storing the pre-activation too."""
    gi = importlib.import_module("quack.gemm_interface")
    gi.gemm_act(*_gemm_operands(256, 256, 512), activation="relu", store_preact=True, tuned=False)


def quack_gemm_varlen_m() -> None:
    """Grouped GEMM over packed rows (``cu_seqlens_m``: three groups), as MoE layers call it."""
    import torch

    gi = importlib.import_module("quack.gemm_interface")
    lengths = (128, 64, 192)
    cu = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32)
    a = _bf16(sum(lengths), 256)
    b = _bf16(len(lengths), 256, 256)
    gi.gemm(a, b, cu_seqlens_m=cu, tuned=False)


def quack_disk_cache(tmp: str) -> None:
    """quack's own ``.o`` cache, as every warm quack process uses it: export, then ``load_module(..., enable_tvm_ffi=True)``."""
    cache = importlib.import_module("quack.cache")
    softmax = importlib.import_module("quack.softmax")
    cache.CACHE_ENABLED, cache.CACHE_DIR = True, tmp
    try:
        x = _bf16(8, 2048)
        softmax.Softmax.compile.cache_clear()
        softmax.softmax_fwd(x)  # cold: compiles and exports
        softmax.Softmax.compile.cache_clear()
        softmax.softmax_fwd(x)  # warm: load_module(path, enable_tvm_ffi=True)["func"]
    finally:
        cache.CACHE_ENABLED, cache.CACHE_DIR = False, None
        softmax.Softmax.compile.cache_clear()


@contextlib.contextmanager
def _fa4_fake_calls() -> Iterator[None]:
    """FlashAttention-4's CPU compile mode (FakeTensorMode), with its calls made (into the recording proxy).

    In GPU mode nothing: FlashAttention-4 runs as it does for its users, on real CUDA tensors.
    """
    if _GPU:
        yield
        return
    from torch._subclasses.fake_tensor import FakeTensorMode

    # the modules that skip their compiled call under FakeTensorMode: interface (the attention
    # kernels) and compute_block_sparsity (its block-sparsity kernel, for a mask_mod)
    modules = [importlib.import_module(f"flash_attn.cute.{m}") for m in ("interface", "compute_block_sparsity")]
    saved = [m.is_fake_mode for m in modules]
    for m in modules:
        m.is_fake_mode = lambda: False
    try:
        with FakeTensorMode():
            yield
    finally:
        for m, fake_mode in zip(modules, saved):
            m.is_fake_mode = fake_mode


def _fa4_qkv(batch: int, seqlen_q: int, seqlen_k: int, heads: int, heads_kv: int) -> tuple[Any, Any, Any]:
    import torch

    def make(s: int, h: int) -> Any:
        return torch.randn(batch, s, h, 128, dtype=torch.bfloat16, device="cuda")

    return make(seqlen_q, heads), make(seqlen_k, heads_kv), make(seqlen_k, heads_kv)


def fa4_fwd_sm90() -> None:
    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        fi.flash_attn_func(*_fa4_qkv(2, 256, 256, 16, 16))


def fa4_fwd_sm90_causal_gqa() -> None:
    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        fi.flash_attn_func(*_fa4_qkv(2, 256, 256, 16, 4), causal=True)


def fa4_fwd_sm90_decode() -> None:
    """The issue's decode shape: batch 1, one query token, 512 keys, 16 heads, head dim 128."""
    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        fi.flash_attn_func(*_fa4_qkv(1, 1, 512, 16, 16))


class _Ctx:
    """A stand-in for the autograd ``ctx`` FlashAttention's ``FlashAttnFunc`` gets."""

    saved_tensors: tuple[Any, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def set_materialize_grads(self, value: bool) -> None:
        pass


def fa4_fwd_sm90_varlen() -> None:
    """Packed sequences of three lengths (``cu_seqlens``), causal: what serving and packed training call."""
    import torch

    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        lengths = (100, 37, 250)
        cu = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device="cuda")

        def make(h: int) -> Any:
            return torch.randn(sum(lengths), h, 128, dtype=torch.bfloat16, device="cuda")

        fi.flash_attn_varlen_func(
            make(8), make(8), make(8), cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=250, max_seqlen_k=250, causal=True
        )


def fa4_fwd_sm90_paged_kv() -> None:
    """A paged KV cache (``page_table``: 4 pages of 128 keys per sequence, from a pool of 16), GQA."""
    import torch

    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        q = torch.randn(2, 64, 16, 128, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(16, 128, 4, 128, dtype=torch.bfloat16, device="cuda")
        v = torch.randn(16, 128, 4, 128, dtype=torch.bfloat16, device="cuda")
        pages = torch.arange(8, dtype=torch.int32, device="cuda").reshape(2, 4)
        seqused = torch.tensor([512, 300], dtype=torch.int32, device="cuda")
        fi.flash_attn_varlen_func(q, k, v, seqused_k=seqused, page_table=pages, causal=True)


def fa4_bwd_sm90() -> None:
    """``flash_attn_func``'s autograd function: ``FlashAttnFunc.forward`` (with LSE, as for training), then ``.backward``.

    Called directly with a stand-in ``ctx``: through autograd (tensors with
    ``requires_grad``, ``Function.apply``, ``.backward()``) a CPU-only torch
    aborts the process on fake CUDA tensors ("PyTorch is not linked with
    support for cuda devices", from the device guard).
    """
    import torch

    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        q, k, v = _fa4_qkv(2, 256, 256, 16, 16)
        ctx = _Ctx()
        out, _lse = fi.FlashAttnFunc.forward(ctx, q, k, v, causal=True, return_lse=True)
        fi.FlashAttnFunc.backward(ctx, torch.randn_like(out), None)


def _fa4_fwd(*shape: int, extra: Callable[[], dict[str, Any]] | None = None, **options: Any) -> None:
    """``flash_attn_func`` on (batch, seqlen_q, seqlen_k, heads, heads_kv); ``extra()`` makes tensor
    options inside the CPU compile mode (fake CUDA tensors)."""
    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        fi.flash_attn_func(*_fa4_qkv(*shape), **options, **(extra() if extra is not None else {}))


def fa4_fwd_sm90_softcap() -> None:
    _fa4_fwd(2, 256, 256, 16, 16, softcap=15.0)


def fa4_fwd_sm90_sliding_window() -> None:
    _fa4_fwd(2, 512, 512, 16, 16, causal=True, window_size=(128, 0))


def fa4_fwd_sm90_learnable_sink() -> None:
    import torch

    _fa4_fwd(2, 256, 256, 16, 16, extra=lambda: {"learnable_sink": torch.randn(16, dtype=torch.bfloat16, device="cuda")})


# FlashAttention-4 4.0.0b36 calls a score_mod as score_mod(scores, b, h, q_idx=, kv_idx=, seqlen_info=, aux_tensors=)
def _score_times_two(tSrS_ssa: Any, b_idx: Any, h_idx: Any, q_idx: Any, kv_idx: Any, seqlen_info: Any, aux_tensors: Any) -> Any:
    import cutlass.cute as cute

    return tSrS_ssa * cute.full_like(tSrS_ssa, 2)


def _score_head_bias(tSrS_ssa: Any, b_idx: Any, h_idx: Any, q_idx: Any, kv_idx: Any, seqlen_info: Any, aux_tensors: Any) -> Any:
    """A per-head bias read from an aux tensor (``aux_tensors[0][h]``)."""
    import cutlass
    import cutlass.cute as cute

    bias = aux_tensors[0]
    h = cute.make_rmem_tensor(1, cutlass.Int32)
    h.store(h_idx)
    value = cute.make_rmem_tensor(1, bias.element_type)
    value[0] = bias[h[0]]
    return tSrS_ssa + value.load().to(cutlass.Float32)


def _cute_jit(fn: Any) -> Any:
    import cutlass.cute as cute

    return cute.jit(fn)


def fa4_fwd_sm90_score_mod() -> None:
    _fa4_fwd(2, 256, 256, 16, 16, score_mod=_cute_jit(_score_times_two))


def fa4_fwd_sm90_score_mod_aux() -> None:
    import torch

    _fa4_fwd(2, 256, 256, 16, 16, score_mod=_cute_jit(_score_head_bias), extra=lambda: {"aux_tensors": [torch.randn(16, device="cuda")]})


# FlashAttention-4 4.0.0b36 calls a mask_mod as mask_mod(b, h, q_idx, kv_idx, seqlen_info, aux_tensors) -> Boolean
def _causal_mask(b_idx: Any, h_idx: Any, q_idx: Any, kv_idx: Any, seqlen_info: Any, aux_tensors: Any) -> Any:
    return q_idx >= kv_idx


def fa4_fwd_sm90_mask_mod_block_sparse() -> None:
    """A mask_mod with block sparsity: the block tensors made by FlashAttention-4's own
    compute_block_sparsity (a kernel of its own, compiled and launched like the others)."""
    import torch

    cbs = importlib.import_module("flash_attn.cute.compute_block_sparsity")
    mask = _cute_jit(_causal_mask)

    def extra() -> dict[str, Any]:
        blocks = cbs.compute_block_sparsity(128, 128, 2, 16, 512, 512, mask, None, torch.device("cuda"))
        return {"mask_mod": mask, "block_sparse_tensors": blocks._replace(block_size=(128, 128))}

    _fa4_fwd(2, 512, 512, 16, 16, extra=extra)


def _fa4_bwd(q: Any, k: Any, v: Any, **options: Any) -> None:
    import torch

    fi = importlib.import_module("flash_attn.cute.interface")
    ctx = _Ctx()
    out, _lse = fi.FlashAttnFunc.forward(ctx, q, k, v, return_lse=True, **options)
    fi.FlashAttnFunc.backward(ctx, torch.randn_like(out), None)


def fa4_bwd_sm90_causal_gqa() -> None:
    with _fa4_fake_calls():
        _fa4_bwd(*_fa4_qkv(2, 256, 256, 16, 4), causal=True)


def fa4_bwd_sm90_varlen() -> None:
    """The backward over packed sequences (``FlashAttnVarlenFunc``), causal."""
    import torch

    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        lengths = (100, 37, 250)
        cu = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device="cuda")

        def make(h: int) -> Any:
            return torch.randn(sum(lengths), h, 128, dtype=torch.bfloat16, device="cuda")

        ctx = _Ctx()
        q, k, v = make(8), make(8), make(8)
        out, _lse = fi.FlashAttnVarlenFunc.forward(
            ctx, q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=250, max_seqlen_k=250, causal=True, return_lse=True
        )
        fi.FlashAttnVarlenFunc.backward(ctx, torch.randn_like(out), None)


def fa4_fwd_sm100_fp8() -> None:
    """FP8 (e4m3) attention with per-(batch, kv-head) descales, a Blackwell-only path: compiled on the CPU only."""
    import torch

    fi = importlib.import_module("flash_attn.cute.interface")
    with _fa4_fake_calls():
        q, k, v = (t.to(torch.float8_e4m3fn) for t in _fa4_qkv(2, 256, 256, 16, 16))
        descale = [torch.ones(2, 16, dtype=torch.float32, device="cuda") for _ in range(3)]
        fi._flash_attn_fwd(q, k, v, q_descale=descale[0], k_descale=descale[1], v_descale=descale[2])


#: case name -> (modules it needs, driver); a driver given ``tmp`` gets a private folder
CASES: dict[str, tuple[tuple[str, ...], Callable[..., None]]] = {
    "quack.softmax_fwd": (("quack",), quack_softmax_fwd),
    "quack.softmax_bwd": (("quack",), quack_softmax_bwd),
    "quack.rmsnorm_fwd": (("quack",), quack_rmsnorm_fwd),
    "quack.rmsnorm_bwd": (("quack",), quack_rmsnorm_bwd),
    "quack.layernorm_fwd": (("quack",), quack_layernorm_fwd),
    "quack.layernorm_bwd": (("quack",), quack_layernorm_bwd),
    "quack.cross_entropy": (("quack",), quack_cross_entropy),
    "quack.topk": (("quack",), quack_topk),
    "quack.rotary": (("quack",), quack_rotary),
    "quack.split_k_reduce": (("quack",), quack_split_k_reduce),
    "quack.rms_final_reduce": (("quack",), quack_rms_final_reduce),
    "quack.hadamard": (("quack", "quack.transform.hadamard"), quack_hadamard),
    "quack.disk_cache": (("quack",), quack_disk_cache),
    "quack.gemm": (("quack", "quack.gemm_interface"), quack_gemm),
    "quack.gemm_add": (("quack", "quack.gemm_interface"), quack_gemm_add),
    "quack.gemm_act": (("quack", "quack.gemm_interface"), quack_gemm_act),
    "quack.gemm_varlen_m": (("quack", "quack.gemm_interface"), quack_gemm_varlen_m),
    "fa4.fwd_sm90": (("flash_attn.cute.interface",), fa4_fwd_sm90),
    "fa4.fwd_sm90_causal_gqa": (("flash_attn.cute.interface",), fa4_fwd_sm90_causal_gqa),
    "fa4.fwd_sm90_decode": (("flash_attn.cute.interface",), fa4_fwd_sm90_decode),
    "fa4.bwd_sm90": (("flash_attn.cute.interface",), fa4_bwd_sm90),
    "fa4.fwd_sm90_varlen": (("flash_attn.cute.interface",), fa4_fwd_sm90_varlen),
    "fa4.fwd_sm90_paged_kv": (("flash_attn.cute.interface",), fa4_fwd_sm90_paged_kv),
    "fa4.fwd_sm90_softcap": (("flash_attn.cute.interface",), fa4_fwd_sm90_softcap),
    "fa4.fwd_sm90_sliding_window": (("flash_attn.cute.interface",), fa4_fwd_sm90_sliding_window),
    "fa4.fwd_sm90_learnable_sink": (("flash_attn.cute.interface",), fa4_fwd_sm90_learnable_sink),
    "fa4.fwd_sm90_score_mod": (("flash_attn.cute.interface",), fa4_fwd_sm90_score_mod),
    "fa4.fwd_sm90_score_mod_aux": (("flash_attn.cute.interface",), fa4_fwd_sm90_score_mod_aux),
    "fa4.fwd_sm90_mask_mod_block_sparse": (("flash_attn.cute.interface",), fa4_fwd_sm90_mask_mod_block_sparse),
    "fa4.bwd_sm90_causal_gqa": (("flash_attn.cute.interface",), fa4_bwd_sm90_causal_gqa),
    "fa4.bwd_sm90_varlen": (("flash_attn.cute.interface",), fa4_bwd_sm90_varlen),
}

#: The sm100 target's cases (``--target sm100``): FlashAttention-4's entries above, compiled for Blackwell.
#: The same drivers; FLASH_ATTENTION_ARCH (``TARGETS["sm100"]``) picks its Sm100 kernels.
#: The sm90 entries compiled for sm100 too (the newer sm90 rows are not: each is compiled and launched on
#: the H100/H200 only)
_SM100_OF = (
    "fa4.fwd_sm90",
    "fa4.fwd_sm90_causal_gqa",
    "fa4.fwd_sm90_decode",
    "fa4.bwd_sm90",
    "fa4.fwd_sm90_varlen",
    "fa4.fwd_sm90_paged_kv",
)
SM100_CASES: dict[str, tuple[tuple[str, ...], Callable[..., None]]] = {
    **{name.replace("_sm90", "_sm100"): CASES[name] for name in _SM100_OF},
    "fa4.fwd_sm100_fp8": (("flash_attn.cute.interface",), fa4_fwd_sm100_fp8),  # FlashAttention-4's FP8 is sm100-only
}
ALL_CASES = {**CASES, **SM100_CASES}
#: each target's cases
TARGET_CASES = {"sm90": CASES, "sm100": SM100_CASES}


# ------------------------------------------------------------------ describing values
def describe(value: Any) -> str:
    """A short kind of one argument, as the report's table spells it."""
    if value is None:
        return "None"
    tp = type(value)
    mod = tp.__module__ or ""
    if tp in (bool, int, float, str):
        return f"{tp.__name__}({value!r})"
    if mod.startswith("torch") and tp.__name__ in ("Tensor", "FakeTensor", "Parameter"):
        fake = "fake " if tp.__name__ == "FakeTensor" else ""
        return f"{fake}torch.Tensor{tuple(value.shape)} {str(value.dtype).replace('torch.', '')} stride={tuple(value.stride())}"
    if isinstance(value, tuple) and hasattr(tp, "_fields"):
        inner = ", ".join(f"{f}={describe(getattr(value, f))}" for f in tp._fields)
        return f"NamedTuple {tp.__name__}({inner})"
    if isinstance(value, (tuple, list)):
        return f"{tp.__name__}[{', '.join(describe(v) for v in value)}]"
    if dataclasses.is_dataclass(value):
        return f"dataclass {tp.__name__}"
    if mod.startswith("cutlass"):
        if tp.__name__ in ("_FakeTensor", "_Tensor", "_FakeStream", "_Pointer"):
            text = str(value).replace("\n", " ")
            return f"{tp.__name__} {text[:90]}"
        try:
            return f"cutlass.{tp.__name__}({value.value!r})"
        except Exception:
            return f"cutlass {tp.__name__}"
    return f"{mod}.{tp.__name__}"


def parameter_names(host: Any) -> list[str]:
    if host is None:
        return []
    fn = inspect.unwrap(host if inspect.isfunction(host) else type(host).__call__)
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []
    return names[1:] if not inspect.isfunction(host) else names


def kinds(host: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[list[str]]:
    names = parameter_names(host)
    out = [[names[i] if i < len(names) else f"#{i}", describe(v)] for i, v in enumerate(args)]
    out += [[k, describe(v)] for k, v in kwargs.items()]
    return out


def call_kinds(record: Recorded) -> list[list[str]]:
    if not record.calls:
        return []
    call = record.calls[0]
    names: list[str] = []
    wrapper = getattr(record.compiled, "_kwargs_wrapper", None)
    if wrapper is not None:
        names = list(inspect.signature(wrapper).parameters)
    out = [[names[i] if i < len(names) else f"#{i}", describe(v)] for i, v in enumerate(call.args)]
    out += [[k, describe(v)] for k, v in call.kwargs.items()]
    return out


# ------------------------------------------------------------------ the two doors
def _real(value: Any) -> Any:
    """A fake (meta) torch tensor as a CPU tensor of the same shape, strides, storage offset and dtype; containers mapped."""
    tp = type(value)
    if tp.__name__ == "FakeTensor":
        import torch

        shape, stride, offset = tuple(value.shape), tuple(value.stride()), int(value.storage_offset())
        extent = offset + (1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 0)
        base = torch.zeros(max(extent, 1), dtype=value.dtype)
        return torch.as_strided(base, shape, stride, offset)
    if isinstance(value, tuple) and hasattr(tp, "_fields"):
        return tp(*(_real(v) for v in value))
    if isinstance(value, (tuple, list)):
        return tp(_real(v) for v in value)
    if isinstance(value, dict):
        return {k: _real(v) for k, v in value.items()}
    return value


def snapshot(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """A copy of ``value`` with every torch tensor copied (GPU mode's reference of a call).

    Each tensor's whole storage is copied, so its storage offset and strides,
    the bytes outside its view and aliasing between the tensors of one call
    (one copy per storage) are the same in the copy; containers are mapped.
    """
    import torch

    memo = {} if memo is None else memo
    tp = type(value)
    if isinstance(value, torch.Tensor):
        storage = value.untyped_storage()
        key = storage.data_ptr()
        if key not in memo:
            raw = torch.empty(0, dtype=torch.uint8, device=value.device).set_(storage)
            memo[key] = raw.clone()
        base = memo[key]
        item = value.element_size()
        flat = base[: (base.numel() // item) * item].view(value.dtype)
        return torch.as_strided(flat, tuple(value.shape), tuple(value.stride()), int(value.storage_offset()))
    if isinstance(value, tuple) and hasattr(tp, "_fields"):
        return tp(*(snapshot(v, memo) for v in value))
    if isinstance(value, (tuple, list)):
        return tp(snapshot(v, memo) for v in value)
    if isinstance(value, dict):
        return {k: snapshot(v, memo) for k, v in value.items()}
    return value


def outcome(exc: BaseException | None, step: str = "") -> dict[str, Any]:
    if exc is None:
        return {"ok": True, "code": None, "step": step, "error": ""}
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return {"ok": False, "code": getattr(exc, "code", None), "step": step, "error": f"{type(exc).__name__}: {first}"}


def try_prepare(record: Recorded) -> dict[str, Any]:
    """``prepare`` with each call the client made (ok when every one prepares; else the first refusal)."""
    import cute_bind

    if not record.calls:
        return {"ok": False, "code": None, "step": "", "error": "no call recorded (the client did not call it)"}
    handle = None
    for i, call in enumerate(record.calls):
        try:
            handle = cute_bind.prepare(record.compiled, *_real(call.args), **_real(call.kwargs))
        except Exception as exc:
            result = outcome(exc, f"prepare (call {i + 1} of {len(record.calls)}, case {call.case})")
            return result
    result = outcome(None, "prepare")
    result["handle"] = repr(handle)
    return result


def _without_tvm_ffi(options: Any) -> Any:
    if not isinstance(options, str):
        return options
    rest = " ".join(t for t in options.split() if t != "--enable-tvm-ffi")
    return rest or None


def try_kernel(record: Recorded, options: Any) -> dict[str, Any]:
    import cute_bind

    if record.host is None:
        return {"ok": False, "code": None, "step": "", "error": "n/a (a loaded function has no host function)"}
    try:
        kernel = cute_bind.kernel(record.host, compile_options=options)
    except Exception as exc:
        return outcome(exc, "kernel()")
    try:
        kernel.compile(*record.args, **record.kwargs)
    except Exception as exc:
        return outcome(exc, ".compile()")
    return outcome(None, ".compile()")


def eligibility(record: Recorded) -> list[str]:
    """Every refusal ``cute_bind.check_function`` reports for the host function (all parameters, not only the first)."""
    import cute_bind

    if record.host is None:
        return []
    return [f"{e.code} {e.parameter}: {e.got}" for e in cute_bind.check_function(record.host)]


def per_parameter(record: Recorded) -> list[dict[str, Any]]:
    """Each parameter of the host function as the decorator sees it: its slot kind (or the refusal), and
    how that slot takes the value the client gave ``cute.compile`` (information for the lead; read-only use
    of cute_bind's slot classification)."""
    from cute_bind.diagnostics.errors import CuteBindError
    from cute_bind.jit.signature import _resolve, unwrap
    from cute_bind.slots import Constexpr, Rejected, Where, classify

    host = record.host
    if host is None:
        return []
    fn = host if inspect.isfunction(host) else type(host).__call__
    base = unwrap(fn)
    params = list(inspect.signature(base).parameters.values())
    if not inspect.isfunction(host):
        params = params[1:]
    positional = dict(zip([p.name for p in params], record.args))
    values = {**positional, **record.kwargs}
    kernel = _host_name(host)
    out = []
    for p in params:
        row: dict[str, Any] = {"parameter": p.name, "annotation": None, "slot": None, "bind": None}
        given = values.get(p.name, p.default)
        row["value"] = describe(given) if given is not inspect.Parameter.empty else "(not given)"
        if p.annotation is inspect.Parameter.empty:
            row["slot"] = "CB101 no annotation"
            out.append(row)
            continue
        annotation, err = _resolve(base, p.name, p.annotation, kernel)
        row["annotation"] = str(annotation if err is None else p.annotation)
        if err is not None:
            row["slot"] = f"{err.code}"
            out.append(row)
            continue
        found = classify(annotation)
        if isinstance(found, Rejected):
            row["slot"] = f"{found.diagnostic.code} ({found.detail or found.got})"
            out.append(row)
            continue
        if isinstance(found, Constexpr):
            row["slot"] = "Constexpr"
            out.append(row)
            continue
        row["slot"] = found.describe()
        if given is inspect.Parameter.empty:
            out.append(row)
            continue
        try:
            found.bind(given, Where(kernel, p.name))
            row["bind"] = "ok"
        except CuteBindError as exc:
            row["bind"] = f"{exc.code}: {exc.got}"
        except Exception as exc:  # a slot's own bug, reported as such
            row["bind"] = f"{type(exc).__name__}: {exc}"
        out.append(row)
    return out


# ------------------------------------------------------------------ running
def record(cases: list[str], tmp: str, gpu: bool = False, snapshots: bool = True) -> tuple[Recorder, dict[str, str]]:
    """Drive each case's client and record its compiles; returns the recorder and the cases whose driver failed.

    ``gpu=True`` (a CUDA machine): the drivers make their tensors on the GPU
    (under ``torch.device("cuda")``), without the CPU shims, and every call
    the client makes runs (see :class:`Recorder`).
    """
    global _GPU
    _GPU = gpu
    recorder = Recorder(gpu=gpu, snapshots=snapshots)
    problems: dict[str, str] = {}
    for case in cases:
        modules, driver = ALL_CASES[case]
        try:
            for name in modules:
                importlib.import_module(name)
            if case.startswith("quack.") and not gpu:
                _quack_shims()
            if case in SM100_CASES and not gpu:
                _sm100_shims()
            device: Any = contextlib.nullcontext()
            if gpu:
                import torch

                device = torch.device("cuda")
            with recorder.active(case), device:
                if "tmp" in inspect.signature(driver).parameters:
                    driver(tmp=os.path.join(tmp, case))
                else:
                    driver()
        except Exception as exc:  # the driver itself failed: reported, the other cases go on
            problems[case] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            traceback.print_exc()
    return recorder, problems


def run(cases: list[str], tmp: str, target: str = "sm90") -> dict[str, Any]:
    started = time.perf_counter()
    recorder, problems = record(cases, tmp)
    rows = []
    for r in recorder.records:
        rows.append(
            {
                "label": r.label,
                "case": r.case,
                "host": f"{type(r.host).__module__}.{type(r.host).__qualname__}"
                if r.host is not None and not inspect.isfunction(r.host)
                else getattr(r.host, "__qualname__", None),
                "origin": r.origin,
                "loaded_from": r.loaded_from,
                "options": r.options,
                "compile_seconds": round(r.seconds, 3),
                "compile_args": kinds(r.host, r.args, r.kwargs),
                "calls": [c.case for c in r.calls],
                "call_args": call_kinds(r),
                "compiled_type": type(r.compiled).__name__,
                "prepare": try_prepare(r),
                "kernel": try_kernel(r, r.options),
                "kernel_without_tvm_ffi": try_kernel(r, _without_tvm_ffi(r.options)) if r.host is not None else None,
                "kernel_eligibility": eligibility(r),
                "parameters": per_parameter(r),
            }
        )
    import cutlass

    versions = {}
    for dist in ("quack-kernels", "flash-attn-4", "nvidia-cutlass-dsl", "apache-tvm-ffi", "torch"):
        try:
            from importlib.metadata import version

            versions[dist] = version(dist)
        except Exception:
            versions[dist] = None
    return {
        "env": {k: os.environ.get(k) for k in ENV},
        "target": target,
        "versions": versions,
        "cutlass": getattr(cutlass, "__version__", None),
        "seconds": round(time.perf_counter() - started, 1),
        "driver_failures": problems,
        "records": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    def door(o: dict[str, Any] | None) -> str:
        if o is None:
            return "n/a"
        if o["ok"]:
            return "ok"
        return f"{o['code'] or ''} {o['error']}".strip().replace("|", "\\|")

    lines = ["| kernel | options | compile s | prepare | kernel() | kernel() without --enable-tvm-ffi |", "|---|---|---|---|---|---|"]
    for r in result["records"]:
        lines.append(
            f"| {r['label']} | {r['options']!r} | {r['compile_seconds']} | {door(r['prepare'])} | {door(r['kernel'])} | {door(r['kernel_without_tvm_ffi'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the result here (default: stdout)")
    parser.add_argument("--markdown", action="store_true", help="also print the table")
    parser.add_argument("--tmp", default=None, help="a private folder (quack's disk cache case)")
    parser.add_argument(
        "--target",
        choices=sorted(TARGETS),
        default="sm90",
        help="the compile target: sm90 (the H200, default) or sm100 (FlashAttention-4's Blackwell kernels)",
    )
    parser.add_argument("cases", nargs="*", help=f"cases to run (default: all of the target's): {', '.join(ALL_CASES)}")
    ns = parser.parse_args(argv)
    own = TARGET_CASES[ns.target]
    unknown = [c for c in ns.cases if c not in own]
    if unknown:
        parser.error(f"unknown case(s) for --target {ns.target}: {unknown}")
    for key, value in TARGETS[ns.target].items():
        os.environ.setdefault(key, value)
    for key in ("CUTE_DSL_ARCH", "FLASH_ATTENTION_ARCH"):  # a target given, an architecture set otherwise: refused
        if os.environ[key] != TARGETS[ns.target][key]:
            parser.error(f"{key}={os.environ[key]} is set: --target {ns.target} compiles for {TARGETS[ns.target][key]}")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cute_bind_clients_") as tmp:
        result = run(ns.cases or list(own), ns.tmp or tmp, ns.target)
    text = json.dumps(result, indent=1, default=str)
    if ns.json:
        with open(ns.json, "w") as fh:
            fh.write(text)
    else:
        print(text)
    if ns.markdown:
        print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
