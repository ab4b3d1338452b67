"""A file with ineligible @cute_bind.kernel annotations (opened in Neovim by tests/lsp/test_neovim.py and docs/editors.md's screenshot).

Never imported: the language server reads it as text.
"""

from typing import Optional

import cutlass
import cutlass.cute as cute

import cute_bind


@cute_bind.kernel
def scale(out: cute.Pointer, alpha: cutlass.Float8E4M3FN, sizes: tuple[int, tuple[int, int]], mode: Optional[str], n):
    pass
