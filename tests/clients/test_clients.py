"""Production CuTe DSL clients through cute_bind's two doors (issue 23, Build item 4).

Every ``cute.compile`` that quack-kernels and flash-attn-4 make from their own
public Python entries (``recorder.CASES``) must go through both doors:
``cute_bind.prepare(compiled, *the client's call arguments)`` and
``cute_bind.kernel(host, compile_options=the client's options).compile(*the
client's compile arguments)``.

Skips where the pinned clients (``requirements.txt``) are not installed. The
availability check reads the installed distributions instead of importing the
packages (``pytest.importorskip`` would import them): quack replaces the DSL's
TVM-FFI argument converter at import, and the clients need ``CUTE_DSL_ARCH``
(``sm_90a``; ``sm_100a`` for FlashAttention-4's Blackwell kernels) before the
DSL is initialised, neither of which may reach the rest of the suite in this
process. So the clients run once per target in a subprocess (``python -m
tests.clients.recorder [--target sm100]``, about 40 s and 80 s on two cores),
which records and tries both doors; the tests read its result.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from typing import Any, Callable

import pytest

from tests.clients.recorder import TARGETS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REQUIREMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "requirements.txt")


def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


_MISSING = [d for d in ("quack-kernels", "flash-attn-4") if _installed(d) is None]
if _MISSING:
    pytest.skip(
        f"the client packages are not installed ({', '.join(_MISSING)}): see tests/clients/requirements.txt", allow_module_level=True
    )


#: Every compile the recorder's cases make, by label ``case:host class`` (``#n``: the n-th of that class in
#: the case). ``fa4.fwd_sm90_decode`` has no compile of its own: FlashAttention-4's compile key for it is
#: ``fa4.fwd_sm90``'s, so its call goes to that compiled function (and ``prepare`` is tried with both calls).
RECORDED = (
    "quack.softmax_fwd:Softmax",
    "quack.softmax_bwd:SoftmaxBackward",
    "quack.rmsnorm_fwd:RMSNorm",  # weight
    "quack.rmsnorm_fwd:RMSNorm#2",  # weight, residual in and out, rstd
    "quack.rmsnorm_fwd:RMSNorm#3",  # no weight
    "quack.rmsnorm_bwd:RMSNormBackward",
    "quack.layernorm_fwd:RMSNorm",
    "quack.layernorm_bwd:RMSNormBackward",
    "quack.cross_entropy:CrossEntropy",  # fwd
    "quack.cross_entropy:CrossEntropy#2",  # fwd + dx
    "quack.cross_entropy:CrossEntropyBackward",
    "quack.topk:TopK",
    "quack.topk:TopKBackward",
    "quack.rotary:RotaryKernel",
    "quack.split_k_reduce:SplitKReduce",  # beta as Float32(0.0)
    "quack.split_k_reduce:SplitKReduce#2",  # alpha as a device address
    "quack.rms_final_reduce:RmsFinalReduce",
    "quack.hadamard:HadamardTransform",
    "quack.disk_cache:Softmax",  # the cold compile quack exports to its .o cache
    "quack.disk_cache:loaded",  # the warm load: load_module(path, enable_tvm_ffi=True)["func"]
    "fa4.fwd_sm90:FlashAttentionForwardSm90",  # MHA, not causal (and the decode case's calls)
    "fa4.fwd_sm90_causal_gqa:FlashAttentionForwardSm90",
    "fa4.bwd_sm90:FlashAttentionForwardSm90",  # the training forward (with LSE)
    "fa4.bwd_sm90:FlashAttentionBackwardPreprocess",
    "fa4.bwd_sm90:FlashAttentionBackwardSm90",
    "fa4.bwd_sm90:FlashAttentionBackwardPostprocess",
    "fa4.fwd_sm90_varlen:FlashAttentionForwardSm90",  # packed sequences: cu_seqlens, causal
    "fa4.fwd_sm90_paged_kv:FlashAttentionForwardSm90",  # page_table, seqused_k, GQA
    # quack's GEMM family: NamedTuple epilogue/scheduler arguments (a Constexpr IntEnum field), the stream mid-signature
    "quack.gemm:GemmDefaultSm90",
    "quack.gemm_add:GemmDefaultSm90",  # C and beta in the epilogue arguments
    "quack.gemm_act:GemmMod_linear_act_epi_8d301ac730954aed__none_sm9",  # fused relu, the pre-activation stored
    "quack.gemm_varlen_m:GemmDefaultSm90",  # cu_seqlens_m: grouped rows
    # FlashAttention-4's forward variants (each its own compile) and backward variants
    "fa4.fwd_sm90_softcap:FlashAttentionForwardSm90",
    "fa4.fwd_sm90_sliding_window:FlashAttentionForwardSm90",
    "fa4.fwd_sm90_learnable_sink:FlashAttentionForwardSm90",
    "fa4.fwd_sm90_score_mod:FlashAttentionForwardSm90",  # a score_mod, no aux tensors
    "fa4.fwd_sm90_score_mod_aux:FlashAttentionForwardSm90",  # a score_mod reading an aux tensor (aux_data with tensors)
    "fa4.fwd_sm90_mask_mod_block_sparse:BlockSparsityKernel",  # FlashAttention-4's own block-sparsity kernel for a mask_mod
    "fa4.fwd_sm90_mask_mod_block_sparse:FlashAttentionForwardSm90",  # a mask_mod with block-sparse tensors (a NamedTuple of tensors)
    "fa4.bwd_sm90_causal_gqa:FlashAttentionForwardSm90",
    "fa4.bwd_sm90_causal_gqa:FlashAttentionBackwardSm90",  # (its preprocess is fa4.bwd_sm90's compile)
    "fa4.bwd_sm90_causal_gqa:FlashAttentionBackwardPostprocess",
    "fa4.bwd_sm90_varlen:FlashAttentionForwardSm90",
    "fa4.bwd_sm90_varlen:FlashAttentionBackwardPreprocess",
    "fa4.bwd_sm90_varlen:FlashAttentionBackwardSm90",
    "fa4.bwd_sm90_varlen:FlashAttentionBackwardPostprocess",
)

#: The same for FlashAttention-4's Blackwell kernels (``--target sm100``): compiled for ``sm_100a`` on the
#: CPU and tried through both doors; no machine lent here launches them. Unlike sm90, the decode shape
#: gets its own compile (another tile configuration).
RECORDED_SM100 = (
    "fa4.fwd_sm100:FlashAttentionForwardSm100",
    "fa4.fwd_sm100_causal_gqa:FlashAttentionForwardSm100",
    "fa4.fwd_sm100_decode:FlashAttentionForwardSm100",
    "fa4.bwd_sm100:FlashAttentionForwardSm100",
    "fa4.bwd_sm100:FlashAttentionBackwardPreprocess",
    "fa4.bwd_sm100:FlashAttentionBackwardSm100",
    "fa4.bwd_sm100:FlashAttentionBackwardPostprocess",
    "fa4.fwd_sm100_varlen:FlashAttentionForwardSm100",
    "fa4.fwd_sm100_paged_kv:FlashAttentionForwardSm100",
    "fa4.fwd_sm100_fp8:FlashAttentionForwardSm100",  # e4m3 q/k/v with per-(batch, kv-head) descales
)

#: each target's recorded compiles
LISTED: dict[str, tuple[str, ...]] = {"sm90": RECORDED, "sm100": RECORDED_SM100}


#: TEMPORARY: the doors that fail today, with the catalog code they fail with. Remove an entry when its
#: fix lands (a fixed door XPASSes meanwhile). A door that fails with another code than the one listed
#: is a real failure, so a fix that only moves the refusal elsewhere shows.
XFAIL: dict[tuple[str, str], str] = {}


class DoorRefused(AssertionError):
    """A door refused a client's compile; the subclass named after the catalog code is raised."""


_REFUSALS: dict[str, type[DoorRefused]] = {}


def _refusal(code: str) -> type[DoorRefused]:
    """One exception class per catalog code, so that ``xfail(raises=...)`` expects exactly that code."""
    if code not in _REFUSALS:
        _REFUSALS[code] = type(code, (DoorRefused,), {})
    return _REFUSALS[code]


def _doors(label: str) -> tuple[str, ...]:
    # a function loaded from quack's disk cache has no host function to decorate
    return ("prepare",) if label.endswith(":loaded") else ("prepare", "kernel")


def _params() -> list[Any]:
    out = []
    for target, labels in LISTED.items():
        for label in labels:
            for door in _doors(label):
                code = XFAIL.get((label, door))
                marks = (
                    [pytest.mark.xfail(strict=False, reason=f"{code} today (tests/clients XFAIL)", raises=_refusal(code))] if code else []
                )
                out.append(pytest.param(target, label, door, marks=marks, id=f"{label}-{door}"))
    return out


def _record(tmp_path_factory: pytest.TempPathFactory, target: str) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("clients") / f"recorded_{target}.json"
    env = {**os.environ, **TARGETS[target]}  # the target's compile, whatever this process was given
    proc = subprocess.run(
        [sys.executable, "-m", "tests.clients.recorder", "--target", target, "--json", str(out)],
        check=False,  # a failure is reported below, with the recorder's output
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0 or not out.exists():
        pytest.fail(f"the recorder failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    result: dict[str, Any] = json.loads(out.read_text())
    result["by_label"] = {r["label"]: r for r in result["records"]}
    return result


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict[str, Any]]:
    """Each target's recorder result, made on first use: every case driven once, in a subprocess, both
    doors tried on each compile."""
    results: dict[str, dict[str, Any]] = {}

    def get(target: str) -> dict[str, Any]:
        if target not in results:
            results[target] = _record(tmp_path_factory, target)
        return results[target]

    return get


@pytest.fixture(scope="module")
def recorded(recordings: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    return recordings("sm90")


def _pins() -> dict[str, str]:
    pins = {}
    with open(REQUIREMENTS) as fh:
        for line in fh:
            m = re.match(r"\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", line)
            if m:
                pins[m.group(1).lower()] = m.group(2)
    return pins


def test_clients_are_the_pinned_versions(recorded: dict[str, Any]) -> None:
    """The table below is for these versions: another version of a client may compile other kernels."""
    pins = _pins()
    for dist in ("quack-kernels", "flash-attn-4", "nvidia-cutlass-dsl"):
        assert recorded["versions"][dist] == pins[dist], f"{dist} {recorded['versions'][dist]} installed, {pins[dist]} pinned"


@pytest.mark.parametrize("target", sorted(LISTED))
def test_every_case_drives_its_client(recordings: Callable[[str], dict[str, Any]], target: str) -> None:
    result = recordings(target)
    assert result["target"] == target
    assert result["driver_failures"] == {}


@pytest.mark.parametrize("target", sorted(LISTED))
def test_the_recorded_compiles_are_the_listed_ones(recordings: Callable[[str], dict[str, Any]], target: str) -> None:
    """A compile the clients make that RECORDED (RECORDED_SM100) does not list, or one they no longer make, shows here."""
    assert sorted(recordings(target)["by_label"]) == sorted(LISTED[target])


@pytest.mark.parametrize("target", sorted(LISTED))
def test_every_compile_is_called_by_its_client(recordings: Callable[[str], dict[str, Any]], target: str) -> None:
    """``prepare`` is tried with the client's own call arguments: each compiled function must have been called."""
    assert [r["label"] for r in recordings(target)["records"] if not r["calls"]] == []


@pytest.mark.parametrize("target,label,door", _params())
def test_door(recordings: Callable[[str], dict[str, Any]], target: str, label: str, door: str) -> None:
    """``prepare`` with the client's call arguments, or ``kernel(host, compile_options=...).compile(...)``
    with its compile arguments, takes the client's compile."""
    row = recordings(target)["by_label"].get(label)
    assert row is not None, f"{label} was not recorded"
    result = row[door]
    if not result["ok"]:
        raise _refusal(result["code"] or "uncatalogued")(f"{label} {door}: {result['step']}: {result['error']}")
