"""``os.fork()`` while another thread holds cute_bind's locks: the child may compile and launch (issue 22, row 10).

A lock held by another thread at the fork stays held in the child, where that
thread does not exist; without a reset the child's first compile (or first
miss of that kernel) waits forever. Each case runs in a process of its own
(``fork`` from pytest's process would copy it whole): a thread takes the locks
and waits, the main thread forks, the child compiles and launches host-only
kernels, and the parent reports how the child ended within a time limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child import child_env

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

SCRIPT = r"""
import ctypes, os, sys, threading, time
from cute_bind import dsl
from tests.kernels.wrapped import make_constant_writer

case, limit = sys.argv[1], float(sys.argv[2])
buf = (ctypes.c_int32 * 1)()
address = ctypes.addressof(buf)
k = make_constant_writer()
k(address, 1)  # compiled in the parent
held, release = threading.Event(), threading.Event()

def hold():
    k(address, 1)  # this thread's own call state, which the child never sees
    locks = {"compile lock": [dsl.hooks._COMPILE_LOCK], "kernel locks": [k._calls._lock, k.compiler.lock]}[case]
    for lock in locks:
        lock.acquire()
    held.set()
    release.wait()
    for lock in reversed(locks):
        lock.release()

t = threading.Thread(target=hold)
t.start()
held.wait()
pid = os.fork()
if pid == 0:
    code = 3
    try:
        fresh = make_constant_writer()
        fresh(address, 7)  # a new kernel: a compile
        ok = buf[0] == 7
        k(address, 8)  # a miss of the kernel whose locks the other thread held: a compile too
        k(address, 8)  # a hit
        ok = ok and buf[0] == 8 and k.cache_info()["hits"] >= 1
        code = 0 if ok else 4
    except BaseException as exc:
        print("child raised", repr(exc), flush=True)
    finally:
        os._exit(code)
deadline = time.monotonic() + limit
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("child hung", flush=True)
        break
    time.sleep(0.05)
release.set()
t.join()
"""


@pytest.mark.parametrize("case", ["compile lock", "kernel locks"])
def test_a_forked_child_compiles_and_launches_while_another_thread_held_the_locks(case: str) -> None:
    env = child_env()
    proc = subprocess.run([sys.executable, "-c", SCRIPT, case, "180"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "child exit 0" in proc.stdout, (proc.stdout, proc.stderr[-2000:])


CACHE_LOCK_SCRIPT = r"""
import fcntl, os, sys, tempfile, threading, time
from pathlib import Path
from cute_bind.cache.store import Store

root = Path(tempfile.mkdtemp())
key = "ab" * 32
store = Store(root)
store.ensure()
held, release = threading.Event(), threading.Event()

def hold():
    with store.lock(key):  # a compile of this key in progress, on another thread
        held.set()
        release.wait()

t = threading.Thread(target=hold)
t.start()
held.wait()
pid = os.fork()
if pid == 0:
    code = 3
    try:
        time.sleep(0.5)  # the parent's compile ends meanwhile
        fd = os.open(root / "v1" / "locks" / f"{key}.lock", os.O_RDWR)
        deadline = time.monotonic() + 20
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                code = 0
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    code = 5  # the key stays locked by the descriptor this child inherited
                    break
                time.sleep(0.05)
    finally:
        os._exit(code)
release.set()
t.join()
print("child exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def test_a_key_lock_released_in_the_parent_is_free_in_a_forked_child() -> None:
    """A flock lives until the last copy of its descriptor closes: a child forked while a key's lock was held
    keeps a copy, so the parent's close alone left the key locked (the child's own compile of it, and every
    other process's, waited as long as the child lived); the store unlocks before closing."""
    if sys.platform != "linux":
        pytest.skip("flock semantics checked on Linux")
    env = child_env()
    proc = subprocess.run([sys.executable, "-c", CACHE_LOCK_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "child exit 0" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
