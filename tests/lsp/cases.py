"""The table the language-server tests run over: one source per code the static tools report,
the parameter it is about, and the quick fix expected (``None``: the catalog's fix in words only).

A fixed source is the case's source with ``fixed`` replacing ``before`` (one occurrence)."""

from __future__ import annotations

from dataclasses import dataclass

PRELUDE = """\
from typing import NamedTuple, Optional, Union
import torch
import cutlass
import cutlass.cute as cute
import cute_bind
"""


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    body: str  # the kernel (and what it needs), after PRELUDE
    parameter: str  # the parameter named in the message ("" for decorator codes)
    before: str | None = None  # text the quick fix replaces...
    fixed: str | None = None  # ...by this; None: no mechanical fix

    @property
    def source(self) -> str:
        return PRELUDE + "\n" + self.body


CASES = [
    Case("CB101-default", "CB101", "@cute_bind.kernel\ndef k(out: cute.Pointer, n=4):\n    pass\n", "n", "n=4", "n: int = 4"),
    Case(
        "CB101-call",
        "CB101",
        "@cute_bind.kernel\ndef k(out: cute.Pointer, scale):\n    pass\n\nk.bind(0, 2.5)\n",
        "scale",
        "scale)",
        "scale: float)",
    ),
    Case("CB101-unknown", "CB101", "@cute_bind.kernel\ndef k(out: cute.Pointer, n):\n    pass\n", "n"),
    Case("CB102", "CB102", "@cute_bind.kernel\ndef k(x: torch.Tensor):\n    pass\n", "x", "x: torch.Tensor", "x: cute.Tensor"),
    Case("CB102-words", "CB102", "class Params:\n    pass\n\n@cute_bind.kernel\ndef k(p: Params):\n    pass\n", "p"),
    Case(
        "CB104",
        "CB104",
        "@cute_bind.kernel\ndef k(alpha: cutlass.Float8E4M3FN):\n    pass\n",
        "alpha",
        "cutlass.Float8E4M3FN",
        "cutlass.Float32",
    ),
    Case("CB106", "CB106", "@cute_bind.kernel\ndef k(out: cute.Pointer, *rest):\n    pass\n", "rest"),
    Case("CB107", "CB107", '@cute_bind.kernel\ndef k(n: "Int32"):\n    pass\n', "n", '"Int32"', '"cutlass.Int32"'),
    Case(
        "CB113",
        "CB113",
        "@cute_bind.kernel\ndef k(sizes: tuple[int, tuple[int, int]]):\n    pass\n",
        "sizes",
        "tuple[int, tuple[int, int]]",
        "tuple[int, int, int]",
    ),
    Case(
        "CB114-keep",
        "CB114",
        "@cute_bind.kernel\ndef k(m: Optional[Union[cutlass.Int32, str]]):\n    pass\n",
        "m",
        "Optional[Union[cutlass.Int32, str]]",
        "Optional[cutlass.Int32]",
    ),
    Case(
        "CB114-constexpr",
        "CB114",
        "@cute_bind.kernel\ndef k(mode: Optional[str]):\n    pass\n",
        "mode",
        "mode: Optional[str]",
        "mode: cutlass.Constexpr[Optional[str]]",
    ),
    Case(
        "CB116",
        "CB116",
        "@cute.jit\n@cute_bind.kernel\ndef k(n: cutlass.Int32):\n    pass\n",
        "",
        "@cute.jit\n@cute_bind.kernel\n",
        "@cute_bind.kernel\n@cute.jit\n",
    ),
    Case("CB117", "CB117", "@cute_bind.kernel\n@cute.kernel\ndef k(n: cutlass.Int32):\n    pass\n", ""),
    Case("CB127", "CB127", "class K:\n    @cute_bind.kernel\n    @cute.jit\n    def k(self, n: cutlass.Int32):\n        pass\n", ""),
    Case(
        "CB125",
        "CB125",
        "class P(NamedTuple):\n    label: str\n\n@cute_bind.kernel\ndef k(p: P):\n    pass\n",
        "p",
    ),
]


def apply_edits(text: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """Apply (start line, start char, end line, end char, new text) edits, 0-based, as an editor does
    (all from the original text; the cases' sources are ASCII, so characters are UTF-16 units)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, char: int) -> int:
        return starts[min(line, len(lines))] + char

    out = text
    for sl, sc, el, ec, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[: offset(sl, sc)] + new + out[offset(el, ec) :]
    return out
