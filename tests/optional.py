"""Optional dependencies of the tests: skip cleanly where they are missing.

``torch_or_skip()`` is not enough: with nvidia-cutlass-dsl 4.6 or
4.7 imported, the DSL's ``base_dsl/`` folder is on ``sys.path`` and holds a
``torch.py``, so where torch is not installed ``import torch`` raises a bare
``ImportError`` from that file and ``importorskip`` errors instead of skipping.
"""

from typing import Any

import pytest

from cute_bind import dsl


def torch_or_skip() -> Any:
    """The real torch module, or skip the calling test (or module, at import)."""
    try:
        return dsl.import_torch()
    except ModuleNotFoundError:
        pytest.skip("torch is not installed", allow_module_level=True)
