"""What authoring errors say: short, specific, and the same words as the static tools."""

from __future__ import annotations

import numpy as np
import pytest

import cute_bind
from cute_bind import _whitelist as W
from cute_bind.slots.base import describe_value
from cute_bind.static.rules import analyze_source
from tests.kernels.host import fill_i32


@pytest.mark.parametrize(
    "value, shown, hidden",
    [
        (np.arange(100, dtype=np.float32).reshape(10, 10), "ndarray of shape (10, 10) and dtype float32", "99."),
        (np.zeros(3), "ndarray of shape (3,) and dtype float64", "0., 0."),
        (np.float32(2.5), "2.5", None),  # a 0-d NumPy scalar shows its value
        ("a\nb" * 50, "str 'a\\nb", "\n"),  # one line, truncated
        (2.5, "float 2.5", None),
    ],
)
def test_got_describes_a_value_in_one_short_line(value: object, shown: str, hidden: str | None) -> None:
    text = describe_value(value)
    assert shown in text and "\n" not in text and len(text) <= 80
    if hidden is not None:
        assert hidden not in text


def test_array_in_a_scalar_slot_is_named_by_shape_and_the_fix_starts_with_what_the_slot_takes() -> None:
    k = cute_bind.kernel(fill_i32)
    buf = np.zeros(4, np.int32)
    h = k.bind(buf, 1)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        h.launch(buf, np.arange(1000.0))
    err = info.value
    assert err.code == "CB204" and "ndarray of shape (1000,)" in str(err) and "999" not in str(err)
    # the fix is the slot's own (issue 24: a tensor slot's fix was the generic scalar/pointer advice)
    assert "for an Int32 slot" in err.expected and err.fix.startswith(f"Pass {err.expected}.")


@pytest.mark.parametrize(
    "call, code, suggestion",
    [
        (lambda k, a: k.bind(a, valeu=1), "CB202", "did you mean 'value'?"),
        (lambda k, a: k.bind(a, 1).launch(a, vlaue=1), "CB202", "did you mean 'value'?"),
        (lambda k, a: cute_bind.kernel(chekced=True), "CB110", "did you mean 'checked'?"),
        (lambda k, a: cute_bind.kernel(compile_option="x"), "CB110", "did you mean 'compile_options'?"),
        (lambda k, a: k.bind(a, zzz=1), "CB202", None),  # nothing close: no guess
    ],
)
def test_keyword_typo_gets_did_you_mean(call, code: str, suggestion: str | None) -> None:  # type: ignore[no-untyped-def]
    k = cute_bind.kernel(fill_i32)
    addr = np.zeros(4, np.int32)
    with pytest.raises(cute_bind.CuteBindError) as info:
        call(k, addr)
    assert info.value.code == code
    if suggestion is None:
        assert "did you mean" not in str(info.value)
    else:
        assert suggestion in str(info.value)


@pytest.mark.parametrize(
    "options, named",
    [({"chekced": True}, "<the function @cute_bind.kernel(...) decorates>"), ({"name": "scale", "chekced": True}, "scale")],
)
def test_an_option_typo_names_the_kernel_to_be_not_a_kernel_called_kernel(options, named) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(**options)  # refused before any function comes
    assert info.value.code == "CB110" and info.value.kernel == named and "kernel 'kernel'" not in str(info.value)


RUNTIME_VS_STATIC = """\
import cutlass
import cutlass.cute as cute
import cute_bind
import numpy as np


def f8(out: cute.Pointer, alpha: cutlass.Float8E4M3FN):
    pass


def arr(out: cute.Pointer, x: np.ndarray):
    pass
"""


@pytest.mark.parametrize(
    "name, code, got, expected",
    [
        ("f8", "CB104", "cutlass.Float8E4M3FN", W.RUNTIME_SCALARS_SUMMARY),
        ("arr", "CB102", "numpy.ndarray", W.ELIGIBLE_SUMMARY),
    ],
)
def test_rejections_name_types_as_the_static_checker_does(tmp_path, name: str, code: str, got: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    import importlib
    import sys

    (tmp_path / "rejections_mod.py").write_text(RUNTIME_VS_STATIC)
    sys.path.insert(0, str(tmp_path))
    try:
        fn = getattr(importlib.import_module("rejections_mod"), name)
    finally:
        sys.path.remove(str(tmp_path))
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(fn)
    err = info.value
    assert (err.code, err.got, err.expected) == (code, got, expected)
    static = analyze_source(RUNTIME_VS_STATIC.replace(f"def {name}(", f"@cute_bind.kernel\ndef {name}(")).diagnostics()
    assert [(d.code, d.got, d.expected) for d in static] == [(code, got, expected)]
    assert len(expected) < 250  # the list of everything eligible lives in the docs, not in every message


def test_cb102_fix_points_arrays_at_tensor_and_pointer_annotations() -> None:
    fix = cute_bind.CATALOG["CB102"].fix
    assert "cute.Tensor" in fix and "cute_bind.Pointer[" in fix
