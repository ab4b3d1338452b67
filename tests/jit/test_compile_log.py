"""The line a specialization logs says where its compiled function came from (issue 44 item 5).

A first process compiles and logs "compiled in ... s"; a second process with the same disk cache
loads the entry and must say "loaded from the disk cache", not "compiled in 0.003 s"; a second
kernel object of the same function in the same process gets the compile its process already holds.
Each process is a fresh interpreter with logging at INFO, as a user turns it on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cache.conftest import needs_disk_cache
from tests.child import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import logging
import numpy as np
import cute_bind
from tests.kernels.host import scale_stream_default

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
cute_bind.kernel(scale_stream_default)(y, x, 2.0, 64)
assert np.array_equal(y, x * 2)
"""


def _logged(tmp_path: Path) -> list[str]:
    env = child_env(CUTE_BIND_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CUTE_BIND_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("cute_bind") and "specialization #1" in ln]


@needs_disk_cache  # (DSL 4.5.3 has no export: every process compiles)
def test_a_disk_cache_load_is_logged_as_a_load_not_a_compile(tmp_path: Path) -> None:
    (first,) = _logged(tmp_path)
    assert "(compiled in " in first, first
    (second,) = _logged(tmp_path)  # a new process, the same disk cache
    assert "(loaded from the disk cache in " in second and "compiled in" not in second, second
