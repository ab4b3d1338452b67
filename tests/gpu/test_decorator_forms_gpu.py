"""Every decorator form launches a real device kernel as the plain ``@cute.jit`` compile does (GPU only).

The CPU suite (``tests/jit/test_decorator_forms.py``) runs host-only bodies and
compiles the device-kernel body; here the device-kernel body is bound and
launched on CUDA tensors under every form, and its output compared bitwise
with the plain ``@cute.jit`` function's.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

from tests.jit.test_decorator_forms import FORMS, REFERENCE, function_source  # noqa: E402

pytestmark = pytest.mark.gpu

HEADER = """\
import cutlass
import cutlass.cute as cute
import cute_bind
import cute_bind as cb
from cute_bind import kernel

F32 = cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]


@cute.kernel
def affine_kernel(out: cute.Pointer, n: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(256))
    i = cute.arch.thread_idx()[0]
    if i < n:
        t[i] = cutlass.Float32(i) * 3.0 + 1.0
    else:
        t[i] = cutlass.Float32(-1.0)


"""

BODY = """
affine_kernel(out, n).launch(grid=(1, 1, 1), block=(256, 1, 1))
"""


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    folder = tmp_path_factory.mktemp("gpu_forms")
    forms = {"reference": REFERENCE, **FORMS}
    for i, form in enumerate(forms.values()):
        (folder / f"gpu_forms_{i}.py").write_text(HEADER + function_source("launch_it", form, "", BODY).replace("out: I32", "out: F32"))
    sys.path.insert(0, str(folder))
    try:
        return {name: importlib.import_module(f"gpu_forms_{i}") for i, name in enumerate(forms)}
    finally:
        sys.path.remove(str(folder))


@pytest.mark.parametrize("form", list(FORMS))
def test_form_launches_the_device_kernel_like_plain_jit(modules: dict[str, object], form: str) -> None:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    for n in (0, 7, 200):
        ref = torch.full((256,), float("nan"), device="cuda")
        modules["reference"].launch_it(make_ptr(cutlass.Float32, ref.data_ptr(), cute.AddressSpace.gmem, assumed_align=16), n)  # type: ignore[attr-defined]
        out = torch.full((256,), float("nan"), device="cuda")
        k = modules[form].launch_it  # type: ignore[attr-defined]
        k.bind(out, n).launch(out, n)
        torch.cuda.synchronize()
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32)), (form, n)
