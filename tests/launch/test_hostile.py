"""Hostile use of a handle never crashes, corrupts or leaks (issue 19: the launch-side defects).

Each test is a regression test of one defect found by fuzzing or by the audit
of the C launcher, on both fast paths (the ``path`` fixture) and, where it
applies, checked mode. Cases that crashed the interpreter run in a
subprocess, so a regression fails the test instead of killing the run.
"""

from __future__ import annotations

import copy
import ctypes
import gc
import pickle
import textwrap
import threading
import weakref
from typing import Any

import cutlass
import numpy as np
import pytest

import cute_bind
from cute_bind import dsl
from cute_bind.launch import HandleState
from cute_bind.launch import codegen
from cute_bind.launch.spec import LaunchSpec
from cute_bind.slots import Bound, ScalarKind, SlotKind, Where, registry
from cute_bind.slots.scalar import CNumberSpec
from cute_bind.slots.stream import CStreamSpec
from tests.child import run_isolated
from tests.kernels.host import scale
from tests.kernels.hostile import fill_count
from tests.launch.test_spec import raw_spec
from tests.optional import torch_or_skip

SCALE = cute_bind.kernel(scale)


def _patch_entry(monkeypatch: Any, body: Any) -> None:
    """Route the handle's entry-point call through a C-callable Python function (keeps everything else real)."""
    fake = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(body)
    real = dsl.entry_point

    def patched(compiled: Any, kernel: Any = None) -> Any:
        e = real(compiled, kernel)
        return dsl.EntryPoint(ctypes.cast(fake, ctypes.c_void_p).value, e.result_ctype, e.extra_pointers, e.module, (e.keepalive, fake))

    monkeypatch.setattr(dsl, "entry_point", patched)


def arrays(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).standard_normal(64).astype(np.float32)
    return x, np.zeros(64, np.float32)


# ------------------------------------------------------------------ an extension kind whose converter runs our code
class HookedInt16(SlotKind):
    """An Int16 kind written through its converter ("X"), which calls ``hook`` first."""

    kind = "hooked"
    fmt = "h"
    fast = "X"
    hook: Any = None

    @classmethod
    def recognize(cls, annotation: Any) -> HookedInt16 | None:
        return cls() if annotation is cutlass.Int16 else None

    def expected(self) -> str:
        return "an int"

    def coerce(self, value: Any, where: Where, checked: bool = False) -> int:
        hook = HookedInt16.hook
        if hook is not None:
            HookedInt16.hook = None
            hook()
        return int(value)

    def converter(self, where: Where) -> Any:
        return self.coerce_converter(where)

    def bind(self, value: Any, where: Where) -> Bound:
        return Bound(packed=int(value), dsl_value=cutlass.Int16(int(value)), key=None, slot=self)


@pytest.fixture
def hooked(monkeypatch: Any) -> Any:
    monkeypatch.setattr(registry, "_KINDS", list(registry.kinds()))
    monkeypatch.setattr(registry, "_ELEMENT_KINDS", list(registry.element_kinds()))
    registry.register(HookedInt16, before=ScalarKind)
    yield HookedInt16
    HookedInt16.hook = None


# ------------------------------------------------------------------ 5: one handle shared by threads
@pytest.mark.parametrize("checked", [False, True], ids=["default", "checked"])
def test_overlapping_launch_raises_cb403_in_every_mode(path: str, checked: bool, monkeypatch: Any) -> None:
    """A launch while another launch of the same handle runs raises CB403 (default mode too), never races."""
    inside, release = threading.Event(), threading.Event()
    calls = []

    def slow_entry(argv: Any) -> None:  # stands in for a long launch: the first caller stays inside
        calls.append(1)
        if not inside.is_set():
            inside.set()
            release.wait(10)

    _patch_entry(monkeypatch, slow_entry)
    x, y = arrays()
    h = cute_bind.kernel(scale).bind(y, x, 1.0, 64, 0).with_checks(checked)
    t = threading.Thread(target=h.launch, args=(y.ctypes.data, x.ctypes.data, 1.0, 64, 0), name="first-launcher")
    t.start()
    assert inside.wait(10)
    before = h.storage_bytes()
    errors = []
    for args in [(y.ctypes.data, x.ctypes.data, 2.0, 3, 0), (y, x, 2.0, 3, 0)]:  # fast-path values, slow-path values
        with pytest.raises(cute_bind.LaunchRuntimeError) as info:
            h.launch(*args)
        errors.append(info.value.code)
    assert h.storage_bytes() == before  # the running launch's arguments were not touched
    release.set()
    t.join()
    assert errors == ["CB403", "CB403"]
    assert calls == [1]
    h.launch(y.ctypes.data, x.ctypes.data, 1.0, 64, 0)  # free again once the first launch returned
    assert calls == [1, 1]


def test_threads_sharing_a_handle_never_corrupt_the_process(path: str) -> None:
    """The issue's crash: threads launching one handle with different sizes (glibc abort before)."""
    run_isolated(
        """
        import threading, numpy as np, cute_bind
        from tests.kernels.host import scale
        k = cute_bind.kernel(scale)
        x = np.arange(64, dtype=np.float32)
        h = k.bind(np.zeros(64, np.float32), x, 1.0, 64, 0)
        bad = []
        def work(tid):
            n = 1 if tid % 2 else 64            # one thread's length with another's 1-float buffer overflows
            src = x[:n].copy()
            for i in range(20000):
                y = np.zeros(n, np.float32)     # a fresh buffer of exactly n floats
                try:
                    h.launch(y.ctypes.data, src.ctypes.data, 2.0, n, 0)
                except cute_bind.LaunchRuntimeError as e:
                    assert e.code == "CB403", e
                    continue
                if not np.array_equal(y, src * 2):
                    bad.append((tid, i))
        ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert not bad, (len(bad), bad[:5])
        """,
        path,
    )


# ------------------------------------------------------------------ 12, 13, 14: code run by a launch's own conversions
@pytest.mark.parametrize("form", ["address", "array"])
def test_reentrant_launch_never_mixes_arguments(path: str, hooked: Any, form: str) -> None:
    """A converter launching the same handle mid-launch: on the fast paths (addresses) it gets CB403;
    from the slow path (arrays: converted before anything is written) it may run; either way the outer
    launch runs with its own values only (before: 6 floats written into the outer 2-float buffer)."""
    buf = np.zeros(8, np.float32)  # the outer launch's 2 floats, then a canary
    big = np.zeros(64, np.float32)
    h = cute_bind.kernel(fill_count).bind(2, 1, buf)  # decorated after the kind joined
    assert type(h.slots["tag"]) is HookedInt16
    as_arg = (lambda a: a.ctypes.data) if form == "address" else (lambda a: a)
    inner = []

    def hook() -> None:
        try:
            h.launch(6, 9, as_arg(big))
            inner.append("ran")
        except cute_bind.LaunchRuntimeError as e:
            inner.append(e.code)

    hooked.hook = hook
    h.launch(2, 5, as_arg(buf))
    assert buf.tolist() == [5.0, 5.0] + [0.0] * 6  # the canary after the 2 floats is intact
    if form == "address":
        assert inner == ["CB403"]
    else:
        assert inner in (["CB403"], ["ran"])
        assert big[:7].tolist() == ([9.0] * 6 if inner == ["ran"] else [0.0] * 6) + [0.0]
    h.launch(6, 9, big)  # and the handle works afterwards
    assert big[:7].tolist() == [9.0] * 6 + [0.0]


@pytest.mark.parametrize("action", ["close", "unload"])
def test_close_or_unload_during_conversion_is_honoured(path: str, hooked: Any, action: str) -> None:
    buf = np.zeros(8, np.float32)
    h = cute_bind.kernel(fill_count).bind(2, 1, buf)
    assert type(h.slots["tag"]) is HookedInt16
    compiled = h.compiled
    hooked.hook = h.close if action == "close" else (lambda: dsl.unload(compiled))
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        h.launch(2, 5, buf.ctypes.data)
    assert info.value.code == ("CB404" if action == "close" else "CB402")
    assert not buf.any()  # the entry point was not called


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_in_a_converter_propagates_and_nothing_launches(path: str, hooked: Any, exc: type) -> None:
    buf = np.zeros(8, np.float32)
    h = cute_bind.kernel(fill_count).bind(2, 1, buf)

    def hook() -> None:
        raise exc()

    hooked.hook = hook
    with pytest.raises(exc):
        h.launch(2, 5, buf.ctypes.data)
    assert not buf.any()
    h.launch(2, 5, buf.ctypes.data)  # not left busy
    assert buf[:2].tolist() == [5.0, 5.0]


# ------------------------------------------------------------------ 16: objects a launch uses are owned by it
def test_list_elements_are_held_until_the_call_returns(path: str, monkeypatch: Any) -> None:
    torch = torch_or_skip()
    from tests.kernels.hostile import tsum

    seen = []
    lst: list[Any] = []

    def entry(argv: Any) -> None:  # another thread empties the list while the function runs
        ref = weakref.ref(lst[0])
        t = threading.Thread(target=lst.__setitem__, args=(0, None))
        t.start()
        t.join()
        gc.collect()
        seen.append(ref() is not None)

    _patch_entry(monkeypatch, entry)
    out = np.zeros(1, np.float32)
    h = cute_bind.kernel(tsum).bind(out, (torch.ones(4),), 4)
    for make in (lambda: torch.ones(8), lambda: np.ones(8, np.float32)):
        lst[:] = [make()]
        h.launch(out, lst, 8)
    assert seen == [True, True]


def test_list_elements_freed_by_another_thread_do_not_crash(path: str) -> None:
    torch_or_skip()  # the isolated child imports torch
    run_isolated(
        """
        import threading, numpy as np, torch, cute_bind
        from tests.kernels.hostile import tsum
        out = np.zeros(1, np.float32)
        h = cute_bind.kernel(tsum).bind(out, (torch.ones(4),), 4)
        stop = threading.Event()
        lst = [torch.ones(1 << 20)]
        def clobber():
            while not stop.is_set():
                lst[0] = torch.ones(1 << 20)
        t = threading.Thread(target=clobber); t.start()
        try:
            for _ in range(300):
                h.launch(out, lst, 1 << 20)
                assert out[0] == float(1 << 20), out
        finally:
            stop.set(); t.join()
        """,
        path,
    )


def test_capsule_owning_its_buffer_is_held_until_the_call_returns(path: str, monkeypatch: Any) -> None:
    """Item 1: an old-style producer exporting a fresh copy; its capsule must outlive the call."""
    refs: list[Any] = []
    alive = []

    class Exporter:
        def __init__(self, a: np.ndarray) -> None:
            self.a = a

        def __dlpack__(self, stream: Any = None) -> Any:  # the old signature: no copy= keyword
            fresh = self.a.astype(np.float32)  # a new buffer the capsule owns
            refs.append(weakref.ref(fresh))
            return fresh.__dlpack__()

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    def entry(argv: Any) -> None:
        gc.collect()
        alive.append(refs[-1]() is not None)

    from tests.kernels.host import tscale

    _patch_entry(monkeypatch, entry)
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    h = cute_bind.kernel(tscale).bind(y, x, 2.0)
    h.launch(y, Exporter(x), 2.0)
    h.with_checks().launch(y, Exporter(x), 2.0)
    assert alive == [True, True]


def test_capsule_owning_its_buffer_does_not_crash(path: str) -> None:
    run_isolated(
        """
        import numpy as np, cute_bind
        from tests.kernels.host import tscale
        class Exporter:
            def __init__(self, a): self.a = a
            def __dlpack__(self, stream=None): return self.a.astype(np.float32).__dlpack__()
            def __dlpack_device__(self): return (1, 0)
        n = 1 << 24                                   # 64 MiB: freed pages are returned to the system
        x, y = np.full(n, 3, np.float32), np.zeros(n, np.float32)
        h = cute_bind.kernel(tscale).bind(y[:8], x[:8], 2.0)
        for _ in range(2):
            h.launch(y, Exporter(x), 2.0)
        assert (y == 6).all()
        """,
        path,
    )


# ------------------------------------------------------------------ 6, 7, 8, 11: lifetime, copies, pickling
def test_bind_adds_no_unload_listener_per_handle(path: str) -> None:
    x, y = arrays()
    h0 = SCALE.bind(y, x, 1.0, 64, 0)
    module = h0._pin.entry.module
    listeners = module.__dict__["_cute_bind_unload_listeners"]
    before = len(listeners)
    for _ in range(200):
        SCALE.bind(y, x, 1.0, 64, 0).close()
    assert len(listeners) == before


def test_close_releases_the_compiled_function(path: str) -> None:
    x, y = arrays()
    k = cute_bind.kernel(scale)
    with k.bind(y, x, 1.0, 64, 0) as h:
        clone = h.clone()
        h.launch(y.ctypes.data, x.ctypes.data, 2.0, 64, 0)
        ref = weakref.ref(h.compiled)
    k.clear_cache()
    gc.collect()
    assert ref() is not None  # the open clone still pins it
    clone.close()
    gc.collect()
    assert ref() is None and h.state is HandleState.CLOSED
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        h.compiled
    assert info.value.code == "CB404"


def test_copy_is_a_clone(path: str) -> None:
    x, y = arrays(3)
    h = SCALE.bind(y, x, 1.0, 64, 0)
    for c in (copy.copy(h), copy.deepcopy(h)):
        assert c is not h and c.compiled is h.compiled and c._storage is not h._storage
        c.launch(y.ctypes.data, x.ctypes.data, 3.0, 64, 0)
        c.close()
        assert c.closed and not h.closed
    h.launch(y.ctypes.data, x.ctypes.data, 4.0, 64, 0)
    assert np.array_equal(y, x * np.float32(4.0))


def test_pickle_raises_cb405(path: str) -> None:
    x, y = arrays()
    h = SCALE.bind(y, x, 1.0, 64, 0)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        pickle.dumps(h)
    assert info.value.code == "CB405" and isinstance(info.value, TypeError)


def test_handle_and_learned_type_are_collected(path: str) -> None:
    """Item 17: a tensor subclass referring to the handle; the C class learns the type."""
    torch = torch_or_skip()
    from tests.kernels.host import tscale

    class Mine(torch.Tensor):
        pass

    x = torch.ones(8)
    y = torch.zeros(8)
    h = cute_bind.kernel(tscale).bind(y, x, 2.0)
    Mine.handle = h  # the type refers to the handle, which learns the type
    h.launch(y, x.as_subclass(Mine), 2.0)
    assert torch.equal(y, x * 2)
    refs = [weakref.ref(h), weakref.ref(Mine)]
    del h, Mine
    gc.collect()
    assert [r() for r in refs] == [None, None]


# ------------------------------------------------------------------ 18: a kind's C class must fit its format
class WideInt32(ScalarKind):
    """An extension kind declaring the 64-bit class for 4-byte storage."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.fast = "P"

    @classmethod
    def recognize(cls, annotation: Any) -> WideInt32 | None:
        return cls("Int32") if annotation is cutlass.Int32 else None


def test_c_class_not_fitting_the_format_is_refused_at_bind(path: str, monkeypatch: Any) -> None:
    monkeypatch.setattr(registry, "_KINDS", list(registry.kinds()))
    monkeypatch.setattr(registry, "_ELEMENT_KINDS", list(registry.element_kinds()))
    registry.register(WideInt32, before=ScalarKind)
    x, y = arrays()
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        cute_bind.kernel(scale).bind(y, x, 1.0, 64, 0)
    assert (info.value.code, info.value.parameter) == ("CB406", "n")


@pytest.mark.parametrize(
    "classes, fmts, offsets, sizes, storage",
    [
        (b"P", b"i", (0,), (4,), 8),  # 8-byte class, 4-byte format
        (b"I", b"q", (4,), (8,), 8),  # past the end of the storage
        (b"R", b"f", (-4,), (4,), 8),  # a negative offset
        (b"Y", b"Q", (0,), (8,), 8),  # an unknown class
        (b"Z", b"i", (0,), (4,), 8),  # the stream class (8 bytes) for a 4-byte format
        (b"h", b"f", (0,), (4,), 8),  # a half class for a float format
    ],
)
def test_c_launcher_checks_every_slot_at_init(
    classes: bytes, fmts: bytes, offsets: tuple[int, ...], sizes: tuple[int, ...], storage: int
) -> None:
    claunch = pytest.importorskip("cute_bind.launch._claunch")
    fields = dict(storage_size=storage, fmts=fmts, classes=classes, offsets=offsets, sizes=sizes, extras=(None,), defaults=(None,))
    with pytest.raises(ValueError):
        claunch.Launcher(raw_spec(**fields))  # C checks it itself: the record need not be a LaunchSpec
    with pytest.raises(ValueError):
        LaunchSpec(**vars(raw_spec(**fields)))  # and LaunchSpec refuses it before C sees it


def test_tensor_spec_record_is_checked_by_c() -> None:
    claunch = pytest.importorskip("cute_bind.launch._claunch")
    for spec in [(0, None, None), (0,) * 11]:
        with pytest.raises(TypeError, match="CTensorSpec"):
            claunch.Launcher(raw_spec(fmts=b"Q", classes=b"T", offsets=(0,), sizes=(16,), extras=(spec,), defaults=(None,)))


@pytest.mark.parametrize(
    "spec, error",
    [
        ((), TypeError),  # no CStreamSpec record
        ((int,) * 4, TypeError),
        (([], (), None), TypeError),  # attr_types not a tuple
        (((1,), (), None), TypeError),  # not types
        (((int,), (), None), TypeError),  # int is never read as a stream object
        (((), (), 5), TypeError),  # reader not callable
    ],
)
def test_stream_spec_record_is_checked_by_c(spec: Any, error: type[Exception]) -> None:
    claunch = pytest.importorskip("cute_bind.launch._claunch")
    if len(spec) == 3:  # a record with wrong values (C reads records by name: a bare tuple is none)
        spec = CStreamSpec._make(spec)
    with pytest.raises(error, match="stream spec"):
        claunch.Launcher(raw_spec(fmts=b"Q", classes=b"Z", offsets=(0,), sizes=(8,), extras=(spec,), defaults=(None,)))


@pytest.mark.parametrize(
    "classes, fmt, spec",
    [
        (b"I", b"i", ()),  # no CNumberSpec record
        (b"R", b"f", ([], None)),  # types not a tuple
        (b"R", b"d", ((float,), None)),  # float is the exact path, never a listed type
        (b"I", b"q", ((int,), None)),
        (b"B", b"?", ((bool,), None)),
        (b"h", b"H", ((), 3)),  # reader not callable
    ],
)
def test_number_spec_record_is_checked_by_c(classes: bytes, fmt: bytes, spec: Any) -> None:
    claunch = pytest.importorskip("cute_bind.launch._claunch")
    if len(spec) == 2:  # a record with wrong values (C reads records by name: a bare tuple is none)
        spec = CNumberSpec._make(spec)
    size = {b"i": 4, b"f": 4, b"d": 8, b"q": 8, b"?": 1, b"H": 2}[fmt]
    with pytest.raises(TypeError, match="number spec"):
        claunch.Launcher(raw_spec(fmts=fmt, classes=classes, offsets=(0,), sizes=(size,), extras=(spec,), defaults=(None,)))


# ------------------------------------------------------------------ item 18 of issue 18: the generated source
def test_fast_factory_docstring_sample_is_what_the_generator_writes() -> None:
    from cute_bind.slots import PointerKind

    slots = [PointerKind(), ScalarKind("Float16"), ScalarKind("Int32")]
    src = codegen.fast_source(slots, [False, True, False], [False, False, True], True)
    doc = codegen.fast_factory.__doc__ or ""
    sample = textwrap.dedent(doc.split("::\n\n", 1)[1].split("\n\n    ``_cb_M``", 1)[0])
    assert sample.strip() == src.strip()
    for name in (codegen.Gen.GATE, codegen.Gen.LEAVE):
        assert name in src
