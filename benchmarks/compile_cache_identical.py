"""Is what a hit serves the function this process would compile? (issue 41: the CPU side of "bitwise the same").

For each client case of tests/clients/recorder.py (quack, FlashAttention-4; CPU, ``CUTE_DSL_ARCH=sm_90a``)
a first process compiles through the hook into an empty folder; a second process, for every hit, compiles
the same call again with the DSL alone and exports it with the entry's symbol prefix: the object file must
be byte-identical to the entry's payload (the device code is inside it). Prints one line per compile.

    python benchmarks/compile_cache_identical.py [--cases quack.softmax_fwd,fa4.fwd_sm90]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r"""
import hashlib, json, sys, tempfile
sys.path.insert(0, ROOT)
import cute_bind
from cute_bind import dsl
from cute_bind.cache import cute_compile, store as store_module, key as key_module, settings
from tests.clients import recorder
recorder._Proxy.__cute_bind_compiled__ = None  # the recorder's stand-ins for compiled functions (see compile_cache_clients.py)
checks = []
if VERIFY:
    original = cute_compile.CachedFunction.__init__

    def init(self, *a, **k):
        original(self, *a, **k)
        fresh = self.fresh()  # the DSL's own compile of the same call
        with store_module.Store(settings.cache_dir()) as st:
            r = st.read(self.key, key_module.environment())
        prefix = r.header["prefix"]
        mine = dsl.export_tvm_ffi_object(fresh, prefix) if self.tvm_ffi else dsl.export_object(fresh, prefix)
        checks.append((r.header["kernel"], hashlib.sha256(mine).hexdigest() == hashlib.sha256(r.payload).hexdigest(), len(r.payload)))

    cute_compile.CachedFunction.__init__ = init
cute_bind.cache.install()
recorder.record(CASES, tempfile.mkdtemp(), snapshots=False)
print("RESULT " + json.dumps({"checks": checks, "events": [e.outcome for e in cute_bind.cache.history()]}))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="quack.softmax_fwd,quack.rmsnorm_fwd,quack.gemm,fa4.fwd_sm90,fa4.bwd_sm90")
    args = ap.parse_args()
    from tests.clients.recorder import ENV

    env = dict(os.environ, **ENV, CUTE_BIND_CACHE_DIR=tempfile.mkdtemp(prefix="cb_same_"), PYTHONPATH=ROOT)
    cases = args.cases.split(",")
    for verify in (False, True):
        code = CHILD.replace("ROOT", repr(ROOT)).replace("CASES", repr(cases)).replace("VERIFY", repr(verify))
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=3000)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(p.stderr[-3000:])
            return 1
        result = json.loads(line[7:])
        print(("second" if verify else "first"), "process:", {k: result["events"].count(k) for k in set(result["events"])})
        for kernel, same, size in result["checks"]:
            print(f"  {kernel}: {'byte-identical' if same else 'DIFFERS'} ({size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
