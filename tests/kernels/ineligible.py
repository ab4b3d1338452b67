"""Functions with eligible and ineligible signatures (decorated in the tests, not here)."""

from __future__ import annotations

from typing import Sequence

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind


class Params:
    pass


def ok_all_kinds(
    a: cute.Pointer, b: cute_bind.Pointer[cutlass.Float32], c: cutlass.Int32, d: float, e: cuda.CUstream, f: cutlass.Constexpr[int]
):
    pass


def no_annotation(a: cute.Pointer, n):
    pass


def custom_type(a: cute.Pointer, p: Params):
    pass


def tensor_ok(a: cute.Tensor, b: cute_bind.Tensor[cutlass.Float16, 2, 16], c: cutlass.Float16, d: cutlass.BFloat16):
    pass


def sequences_ok(
    a: tuple[int, int], b: Sequence[cutlass.Int32], c: list, d: tuple[cute.Pointer, ...], e: tuple[cute.Tensor, cutlass.Float16]
):
    pass


def nested_sequence(a: tuple[int, tuple[int, int]]):
    pass


def constexpr_element(a: tuple[cutlass.Constexpr[int], int]):
    pass


def narrow_float_element(a: list[cutlass.Float8E4M3FN]):
    pass


def bare_tensor_helper(a: cute_bind.Tensor):
    pass


def tensor(a: cute.Tensor):
    pass


def half(a: cutlass.Float8E5M2):
    pass


def wide(a: cutlass.Int128):
    pass


def sequence(a: tuple[int, int]):
    pass


def sequence_typing(a: Sequence[cutlass.Int32]):
    pass


def list_param(a: list):
    pass


def varargs(a: cute.Pointer, *rest: cutlass.Int32):
    pass


def varkw(a: cute.Pointer, **kw: cutlass.Int32):
    pass


def unresolved(a: Int32):  # noqa: F821 - the name is undefined on purpose
    pass


def several(a, b: tuple[Params], c: cutlass.Int32):
    pass
