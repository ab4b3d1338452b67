"""The C handler (cute_bind/jax/_cxla.c): frame registration checks, and the refusals XLA reports (CB902-CB904)."""

from __future__ import annotations

import ctypes

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cute_bind.jax as cj
from cute_bind.jax import frames
from cute_bind.jax.primitive import TARGET, TARGET_NO_GRAPH, register_targets
from tests.jax import kernels as K

cxla = frames.handler_module()


SCALE = cj.op(K.scale, outputs={"out": "x"})


def registered_frame():
    """The frame of SCALE(a, 2.0) for 4 floats (made by the first call, then the same one)."""
    jax.jit(lambda a: SCALE(a, 2.0))(np.ones(4, np.float32)).block_until_ready()
    (frame,) = [f for key, f in SCALE.frames.items() if ("alpha", 2.0) in key[2] and ("x", ((4,), "float32")) in key[3]]
    return frame


GOOD = dict(entry=1, storage=bytes(64), parts=(0, 8), has_result=False, extra=(), nargs=1, nrets=1, patches=((0, 0, 0, 1),), stream=-1)


def register(**changes):
    a = {**GOOD, **changes}
    return cxla.register(
        a["entry"], a["storage"], a["parts"], a["has_result"], a["extra"], a["nargs"], a["nrets"], a["patches"], a["stream"], False, "k"
    )


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"entry": 0}, "entry is null"),
        ({"parts": (64,)}, "a part offset outside the storage"),
        ({"patches": ((60, 0, 0, 1),)}, "a patch offset outside the storage"),
        ({"patches": ((0, 2, 0, 1),)}, "a patch source other than 0"),
        ({"patches": ((0, 0, 1, 1),)}, "a patch index past the buffers"),
        ({"patches": ((0, 1, 1, 1),)}, "a patch index past the buffers"),
        ({"patches": ((0, 0, 0, 3),)}, "a patch alignment that is not a power of two"),
        ({"patches": ((0, 0, 0),)}, "a patch is not a 4-tuple"),
        ({"stream": 60}, "stream_offset outside the storage"),
        ({"stream": -2}, "stream_offset below -1"),
        ({"nargs": -1}, "negative or huge buffer counts"),
    ],
)
def test_register_checks_every_offset(changes, message):
    with pytest.raises(ValueError, match=message):
        register(**changes)


def test_register_type_errors():
    with pytest.raises(TypeError):
        register(storage="not bytes")
    with pytest.raises(TypeError):
        register(parts=[0])


def test_launches_of_an_unknown_id():
    with pytest.raises(KeyError):
        cxla.launches(12345)
    with pytest.raises(KeyError):
        cxla.launches((cxla.NONCE << 32) | 0xFFFFFFF)


def test_ids_carry_the_process_nonce():
    frame = registered_frame()
    assert frame.id >> 32 == cxla.NONCE and 0 < cxla.NONCE < 1 << 31


def test_handlers_are_capsules_per_stage():
    for graph in (True, False):
        stages = cxla.handlers(graph)
        assert sorted(stages) == ["execute", "instantiate", "prepare"]
        assert all(type(c).__name__ == "PyCapsule" for c in stages.values())
    assert cxla.handlers(True)["execute"] is not cxla.handlers(False)["execute"]


def raw_call(target, frame_id, *operands, results=1):
    register_targets()
    out = [jax.ShapeDtypeStruct(operands[0].shape, operands[0].dtype)] * results
    return jax.jit(lambda *a: jax.ffi.ffi_call(target, out)(*a, cute_bind_frame=np.uint64(frame_id)))(*operands)


@pytest.mark.parametrize("target", [TARGET, TARGET_NO_GRAPH])
def test_a_foreign_frame_is_cb902(target):
    foreign = ((cxla.NONCE ^ 0x5A5A) << 32) | 0  # another process's nonce
    with pytest.raises(Exception, match=r"\[CB902\]"):
        raw_call(target, foreign, jnp.ones(4, jnp.float32))


def test_another_operand_count_is_cb903():
    frame = registered_frame()
    with pytest.raises(Exception, match=r"\[CB903\] kernel 'scale'"):
        raw_call(TARGET, frame.id, jnp.ones(4, jnp.float32), jnp.ones(4, jnp.float32))


def test_no_attribute_is_refused():
    register_targets()
    with pytest.raises(Exception, match="no u64 attribute 'cute_bind_frame'"):
        jax.jit(lambda a: jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct((4,), jnp.float32))(a))(jnp.ones(4, jnp.float32))


def test_a_misaligned_buffer_is_cb904_before_any_launch():
    """A frame that asks more alignment than XLA's CPU buffers have: refused before the entry runs
    (the entry here is a function that would crash: it is never called)."""
    frame_id = register(entry=ctypes.cast(ctypes.pythonapi.Py_FatalError, ctypes.c_void_p).value, patches=((0, 0, 0, 1 << 40),))
    with pytest.raises(Exception, match=r"\[CB904\] kernel 'k'"):
        raw_call(TARGET, frame_id, jnp.ones(4, jnp.float32))
    assert cxla.launches(frame_id) == 0


def test_counts_only_executions_that_launched():
    frame = registered_frame()
    n = frame.launches()
    g = jax.jit(lambda a: SCALE(a, 2.0))
    for _ in range(4):
        g(np.ones(4, np.float32)).block_until_ready()
    assert frame.launches() == n + 4


def test_another_device_is_cb911_before_any_launch():
    """A CUDA frame bound for device 5, run by XLA on device 0 (the CPU client's ordinal): refused before the
    entry (a function that would crash) or the stream is touched."""
    fatal = ctypes.cast(ctypes.pythonapi.Py_FatalError, ctypes.c_void_p).value
    frame_id = cxla.register(fatal, bytes(64), (0,), False, (), 1, 1, ((0, 0, 0, 1),), 8, True, "k", 5)
    with pytest.raises(Exception, match=r"\[CB911\] kernel 'k': XLA runs the call on device 0; expected device 5"):
        raw_call(TARGET, frame_id, jnp.ones(4, jnp.float32))
    assert cxla.launches(frame_id) == 0


def test_a_frame_copies_its_handles_snapshot():
    """frames.py reads the handle through PreparedLaunch.snapshot(): the public copy of its launch data."""
    frame = registered_frame()
    handle = frame.handle
    snap = handle.snapshot()
    assert snap.kernel == handle.kernel_name and snap.names == handle.parameters
    assert dict(zip(snap.names, snap.slots)) == handle.slots
    assert snap.storage[: len(handle.storage_bytes())] == handle.storage_bytes()
    for name, offset in zip(snap.names, snap.offsets):
        assert snap.storage[offset : offset + len(handle.slot_bytes(name))] == handle.slot_bytes(name)
    assert not snap.guarded and snap.entry_address != 0
    with pytest.raises(AttributeError):
        snap.storage = b""  # frozen: a copy, never a view of the handle


def test_lowering_ignores_what_another_library_sets_on_ctypes_pythonapi() -> None:
    """The GPU machine's first run failed every lowering with CB204 "expected CFunctionType instance instead
    of NoneType": a library there sets ``ctypes.pythonapi.PyCapsule_New.argtypes`` with a ``CFUNCTYPE``
    destructor, and the placeholders' ``__dlpack__`` shared that one process-wide function object."""
    shared = ctypes.pythonapi.PyCapsule_New
    saved = (shared.restype, shared.argtypes)
    destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    shared.restype, shared.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, destructor]
    try:
        op = cj.op(K.scale, outputs={"out": "x"})
        got = jax.jit(lambda a: op(a, 3.0))(np.arange(8, dtype=np.float32))
        assert np.asarray(got).tobytes() == (np.arange(8, dtype=np.float32) * np.float32(3.0)).tobytes()
        assert shared.argtypes[2] is destructor  # and cute_bind left the other library's setting as it was
    finally:
        shared.restype, shared.argtypes = saved
