"""The production clients through cute_bind's doors on the GPU, bit for bit against their own calls (issue 23).

For every compile that quack-kernels and flash-attn-4 make from their own
public entries (``tests/clients/recorder.py``'s cases, driven on CUDA tensors),
each door (``prepare``, ``kernel``, ``kernel-bind``: see
``tests/clients/bitwise.py``) runs on fresh copies of the inputs of every
call the client made, and every tensor argument afterwards must equal the
client's own result bit for bit.

Skips without a CUDA device or without the client packages. Like
``tests/clients/test_clients.py`` (whose ``RECORDED`` list and ``XFAIL``
table this module uses: a door that fails there with a code fails here with
the same code, and is expected to), the clients run in a subprocess: quack
replaces the DSL's TVM-FFI argument converter when imported, and the clients
need ``CUTE_DSL_ARCH`` set before the DSL starts. On the device machine:
``bash benchmarks/device_job.sh clients``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from typing import Any

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _installed(dist: str) -> bool:
    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


_MISSING = [d for d in ("quack-kernels", "flash-attn-4") if not _installed(d)]
if _MISSING:
    pytest.skip(
        f"the client packages are not installed ({', '.join(_MISSING)}): see tests/clients/requirements.txt "
        "(on the device machine: bash benchmarks/device_job.sh clients)",
        allow_module_level=True,
    )
if not torch.cuda.is_available():
    pytest.skip("torch sees no CUDA device", allow_module_level=True)

from tests.clients.bitwise import DOORS  # noqa: E402
from tests.clients.recorder import ENV  # noqa: E402
from tests.clients.test_clients import RECORDED, XFAIL  # noqa: E402

#: Compiles the clients make on the GPU only (first H100 run of the wider set): FlashAttention-4 keys
#: its compile cache by more than the CPU recorder's shapes give, so the decode shape and the causal
#: GQA backward's pre- and post-process get compiles of their own there.
GPU_ONLY = (
    "fa4.fwd_sm90_decode:FlashAttentionForwardSm90",
    "fa4.bwd_sm90_causal_gqa:FlashAttentionBackwardPreprocess",
    "fa4.bwd_sm90_causal_gqa:FlashAttentionBackwardPostprocess#2",
)
#: Listed compiles the clients do not make on the GPU, and why (the client raises before compiling).
NOT_ON_GPU = {
    "quack.gemm_act:GemmMod_linear_act_epi_8d301ac730954aed__none_sm9": (
        "quack's own epilogue key raises on the DSL 4.8.1's _LOC_TRANSFORMS ContextVar (TypeError, no fail-closed semantic key)"
    ),
}


class DoorFailed(AssertionError):
    """A door refused a client's compile on the GPU, or gave other bits; the subclass is named after the code."""


_FAILURES: dict[str, type[DoorFailed]] = {}


def _failure(code: str) -> type[DoorFailed]:
    """One class per code ("BITWISE" for other bits), so ``xfail(raises=...)`` expects exactly that code."""
    if code not in _FAILURES:
        _FAILURES[code] = type(code.replace("/", "_"), (DoorFailed,), {})
    return _FAILURES[code]


def _params() -> list[Any]:
    out = []
    for label in [*(r for r in RECORDED if r not in NOT_ON_GPU), *GPU_ONLY]:
        for door in DOORS:
            if label.endswith(":loaded") and door != "prepare":
                continue  # a function loaded from quack's disk cache has no host function to decorate
            # the CPU suite's table: kernel, kernel-bind and kernel-stream are the same door (the decorator)
            code = XFAIL.get((label, "prepare" if door == "prepare" else "kernel"))
            marks = [pytest.mark.xfail(strict=False, reason=f"{code} in tests/clients XFAIL", raises=_failure(code))] if code else []
            out.append(pytest.param(label, door, marks=marks, id=f"{label}-{door}"))
    return out


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``python -m tests.clients.bitwise``: every case on the GPU, every door compared; run once."""
    out = tmp_path_factory.mktemp("clients_gpu") / "bitwise.json"
    env = {**os.environ, **ENV}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.clients.bitwise", "--json", str(out), "--markdown"],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    print(proc.stdout)  # the table (shown with pytest -s, and in the device job's log)
    if proc.returncode != 0 or not out.exists():
        pytest.fail(f"tests.clients.bitwise failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-8000:]}")
    data: dict[str, Any] = json.loads(out.read_text())
    keep = os.environ.get("CUTE_BIND_CLIENTS_GPU_JSON")  # the device job keeps the result beside its logs
    if keep:
        with open(keep, "w") as fh:
            fh.write(out.read_text())
    data["by_label"] = {r["label"]: r for r in data["records"]}
    return data


def test_every_case_drives_its_client_on_the_gpu(result: dict[str, Any]) -> None:
    cases = {label.split(":")[0] for label in NOT_ON_GPU}
    assert set(result["driver_failures"]) <= cases, result["driver_failures"]


def test_the_gpu_compiles_are_the_cpu_ones(result: dict[str, Any]) -> None:
    """On the GPU the clients compile what the CPU suite records for sm_90a, and the GPU-only compiles;
    a listed compile the GPU does not make is a driver failure with the reason NOT_ON_GPU gives."""
    expected = sorted({*RECORDED, *GPU_ONLY} - set(NOT_ON_GPU))
    assert sorted(result["by_label"]) == expected


def test_every_compile_is_called_and_reproducible(result: dict[str, Any]) -> None:
    """Each compiled function was called by its client, and its call made again ran."""
    assert [r["label"] for r in result["records"] if not r["calls"]] == []
    assert {r["label"]: r["client_again"]["error"] for r in result["records"] if "client_again" in r} == {}


@pytest.mark.parametrize("label,door", _params())
def test_door_bitwise(result: dict[str, Any], label: str, door: str) -> None:
    """The door takes the client's compile and computes exactly what the client's own call computes."""
    row = result["by_label"].get(label)
    assert row is not None, f"{label} was not recorded on the GPU"
    outcome = row["doors"][door]
    if outcome["code"] == "n/a":  # a door that does not apply (a kernel without a stream, a loaded function)
        pytest.skip(outcome["error"])
    if not outcome["ok"]:
        raise _failure(outcome["code"] or "uncatalogued")(f"{label} {door}: {outcome['step']}: {outcome['error']}")
