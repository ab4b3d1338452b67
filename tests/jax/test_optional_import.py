"""JAX stays optional: import cute_bind (and cute_bind.jax) never imports it; without it, op() is CB901."""

from __future__ import annotations

import subprocess
import sys

from tests.child import child_env


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=300)


def test_import_cute_bind_does_not_import_jax():
    proc = run("import sys, cute_bind, cute_bind.jax; print('jax' in sys.modules, 'jaxlib' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False False"


def test_op_without_jax_is_cb901():
    proc = run(
        "import sys; sys.modules['jax'] = None\n"
        "import cute_bind, cute_bind.jax\n"
        "from tests.jax import kernels as K\n"
        "try:\n"
        "    cute_bind.jax.op(K.scale, outputs={'out': 'x'})\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e.code)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OptionalDependencyError CB901"
