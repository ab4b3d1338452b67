"""``cute_bind.compile``'s key across processes: every input the DSL traces is in it (issue 41, "Done means").

One kernel per input (a closure cell, a default, a global, an instance
attribute, a plain object's attribute and its class's, a fake tensor's guard, an option, the target architecture, the DSL's
version), each depending on that input alone. A first process compiles every
kernel with value set ``A`` into an empty folder, a second with set ``B``:
each must compile again (not load ``A``'s entry) and compute ``B``'s result.

The same two processes with that input *dropped* from the key (``DROP=1``: the
child patches the key's reading of it away) must load ``A``'s entry for ``B``
and, where the kernel's output shows it, compute ``A``'s result: so every row
of this test fails if its input is ever left out of the key.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.cache.conftest import needs_disk_cache
from tests.child import child_env
from tests.optional import torch_or_skip

torch_or_skip()  # the child processes make their arguments with torch

KERNELS = """\
import os
import cutlass
import cutlass.cute as cute

V = float(os.environ["CB_VALUE"])
SCALE = V  # global
DEFAULT = V


def make_closure(f):
    @cute.jit
    def k_closure(a: cute.Tensor):
        a[0] = a[0] + f

    return k_closure


k_closure = make_closure(V)


@cute.jit
def k_global(a: cute.Tensor):
    a[0] = a[0] + SCALE


@cute.jit
def k_default(a: cute.Tensor, f: cutlass.Constexpr = DEFAULT):
    a[0] = a[0] + f


class Op:
    def __init__(self, f):
        self.f = f

    @cute.jit
    def __call__(self, a: cute.Tensor):
        a[0] = a[0] + self.f


op = Op(V)


class ClassOp:
    f = 0.0

    @cute.jit
    def __call__(self, a: cute.Tensor):
        a[0] = a[0] + self.f  # the class's attribute, as the process set it


ClassOp.f = V
class_op = ClassOp()


class Inner:
    def __init__(self, f):
        self.f = f


class Plan:  # a plain object holding another (quack's Hadamard operator holds its plan)
    def __init__(self, inner):
        self.inner = inner


PLAN = Plan(Inner(V))


@cute.jit
def k_nested(a: cute.Tensor):
    a[0] = a[0] + PLAN.inner.f


class Settings:
    f = 0.0


Settings.f = V  # set by the process: the class's source still says 0.0
SETTINGS = Settings()


@cute.jit
def k_class_attribute(a: cute.Tensor):
    a[0] = a[0] + SETTINGS.f


@cute.jit
def k_guard(a: cute.Tensor):
    a[0] = a[0] + cute.size(a)


@cute.jit
def k_plain(a: cute.Tensor):
    a[0] = a[0] + 1.0
"""

CHILD = """\
import json, os, sys, warnings
warnings.simplefilter("ignore")
import torch
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_tensor
import cute_bind
from cute_bind import dsl
from cute_bind.cache import key as key_module, cute_compile

if os.environ.get("CB_FAKE_DSL"):
    key_module.dsl.compiler_identity = lambda: (os.environ["CB_FAKE_DSL"],)
if os.environ.get("CB_DROP") == "1":
    # each input's reading, patched away (what a key without it would be)
    original_named = key_module._Hasher.named

    def named(self, label, value, names):
        if label.startswith("closure ") or label in ("SCALE",):
            return
        return original_named(self, label, value, names)

    key_module._Hasher.named = named
    original_function = key_module._Hasher.function

    def function(self, fn):
        saved = fn.__defaults__
        fn.__defaults__ = None  # the defaults, not fed
        try:
            original_function(self, fn)
        finally:
            fn.__defaults__ = saved

    key_module._Hasher.function = function
    key_module._feed_object = lambda h, obj, label: h.feed(label, h._class(type(obj)))  # no instance attributes
    key_module._state = lambda obj, cls: {}  # a plain object's own attributes
    key_module._Hasher._class_data = lambda self, t, depth: ""  # its classes' data attributes
    original_spelling = dsl.argument_spelling
    dsl.argument_spelling = lambda v, state: ("fake",) if dsl.is_fake_tensor(v) else original_spelling(v, state)
    original_resolved = dsl.resolved_options

    def resolved(callable_, options):
        r = original_resolved(callable_, options)
        r.spelling = ()
        return r

    dsl.resolved_options = resolved
    dsl.target_arch = lambda: None
    original_environment = key_module.environment
    key_module.environment = lambda: {**original_environment(), "dsl_env": "", "dsl": "fixed"}
    import cute_bind.cache.lookup as lookup
    lookup.environment = key_module.environment

import kernels

n = int(kernels.V)
rows = {}


def run(label, fn, *args, options=None, size=4):
    mark = cute_bind.cache.mark()
    compiled = cute_bind.compile(fn, *args, options=options) if options else cute_bind.compile(fn, *args)
    t = torch.zeros(size)
    compiled(from_dlpack(t))
    rows[label] = {"outcome": [e.outcome for e in cute_bind.cache.history(since=mark)], "result": t[0].item()}


run("closure", kernels.k_closure, from_dlpack(torch.zeros(4)))
run("global", kernels.k_global, from_dlpack(torch.zeros(4)))
run("default", kernels.k_default, from_dlpack(torch.zeros(4)))
run("attribute", kernels.op, from_dlpack(torch.zeros(4)))
run("operator class attribute", kernels.class_op, from_dlpack(torch.zeros(4)))
run("nested", kernels.k_nested, from_dlpack(torch.zeros(4)))
run("class attribute", kernels.k_class_attribute, from_dlpack(torch.zeros(4)))
run("guard", kernels.k_guard, make_fake_tensor(cutlass.Float32, (n,), stride=(1,)), size=n)
run("option", kernels.k_plain, from_dlpack(torch.zeros(4)), options=f"--opt-level {n - 2}")
run("arch", kernels.k_plain, from_dlpack(torch.zeros(6)))
run("dsl", kernels.k_plain, from_dlpack(torch.zeros(5)))
print("ROWS " + json.dumps(rows))
"""

#: value sets A and B: every input differs (the option is --opt-level 0 vs 1, the arch sm_90a vs sm_100a); a
#: third process is set B again with another DSL identity
A, B = "2", "3"


def _child(tmp_path, cache, value, drop, arch, fake_dsl=""):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "child.py").write_text(CHILD)
    env = child_env(
        tmp_path,
        CUTE_BIND_CACHE_DIR=str(cache),
        CB_VALUE=value,
        CB_DROP="1" if drop else "0",
        CUTE_DSL_ARCH=arch,
        CB_FAKE_DSL=fake_dsl,
        PYTHONDONTWRITEBYTECODE="1",
    )
    p = subprocess.run([sys.executable, str(tmp_path / "child.py")], env=env, capture_output=True, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("ROWS "):
            return json.loads(line[5:])
    raise AssertionError(p.stderr[-4000:])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for drop in (False, True):
        root = tmp_path_factory.mktemp("drop" if drop else "full")
        cache = root / "cache"
        first = _child(root, cache, A, drop, "sm_90a")
        second = _child(root, cache, B, drop, "sm_100a")  # every input but the DSL's version differs
        third = _child(root, cache, B, drop, "sm_100a", fake_dsl="9.9.9-other")  # the DSL's version alone differs
        out[drop] = (first, second, third)
    return out


#: input -> what set B computes into a zeroed tensor (the kernel adds its input to a[0]); None: the output
#: does not show the input (an option, the arch, the DSL version), only the outcome does
EXPECTED_B = {
    "closure": 3.0,
    "global": 3.0,
    "default": 3.0,
    "attribute": 3.0,
    "nested": 3.0,
    "class attribute": 3.0,
    "operator class attribute": 3.0,
    "guard": 3.0,  # cute.size of the fake (3,) tensor
    "option": None,
    "arch": None,
    "dsl": None,
}
EXPECTED_A = {
    "closure": 2.0,
    "global": 2.0,
    "default": 2.0,
    "attribute": 2.0,
    "nested": 2.0,
    "class attribute": 2.0,
    "operator class attribute": 2.0,
    "guard": 2.0,
}


@needs_disk_cache
@pytest.mark.parametrize("name", sorted(EXPECTED_B))
def test_each_input_is_in_the_key(runs, name):
    first, second, third = runs[False]
    if name == "dsl":
        first, second = second, third
    assert first[name]["outcome"] == ["compiled"]
    assert second[name]["outcome"] == ["compiled"], f"{name}: set B loaded set A's entry"
    if EXPECTED_B[name] is not None:
        assert second[name]["result"] == EXPECTED_B[name]


@needs_disk_cache
@pytest.mark.parametrize("name", sorted(EXPECTED_B))
def test_dropping_an_input_loads_a_wrong_entry(runs, name):
    """The control: with the input dropped, set B is served set A's entry (and its result, where visible)."""
    first, second, third = runs[True]
    if name == "dsl":  # (the second process already loaded the first's entry: the arch is dropped too)
        second = third
    assert first[name]["outcome"] == ["compiled"]
    assert second[name]["outcome"] == ["hit"]
    if name in EXPECTED_A:
        assert second[name]["result"] == EXPECTED_A[name] != EXPECTED_B[name]


def test_the_kernels_module_is_valid_python():
    compile(textwrap.dedent(KERNELS), "kernels.py", "exec")
    compile(CHILD, "child.py", "exec")
