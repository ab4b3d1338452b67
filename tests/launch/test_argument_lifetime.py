"""The arguments' lifetime rule (issue 39 rows 1 and 3, docs/concepts/safety.md): every address a
launch writes is read after all user code of the conversion has run, and what it was read from is
held until the entry point returns.

Each case gives a number whose ``__float__``/``__index__`` frees or moves the memory of an argument
read before it in parameter order (``out.set_()``, ``ndarray.resize``, a structure field rebound):
the kernel must write into the memory the argument holds when the entry point runs. Before the rule
the launch wrote through the freed address (a segfault, a glibc abort, or another tensor overwritten).
Run on both fast paths, through ``handle.launch``, ``kernel(...)`` reusing a specialization, a
keyword call and checked mode.
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable

import numpy as np
import pytest

import cute_bind
from tests.child import run_isolated
from tests.kernels.host import scale, tscale, tsum_list
from tests.kernels.lifetime import Scaled, struct_scale
from tests.optional import torch_or_skip


class Moves:
    """A real number that runs ``action`` when it is converted (``float()``), as a user's number
    class may; :class:`MovesIndex` is the integer one (``operator.index()``)."""

    def __init__(self, value: float, action: Callable[[], None]) -> None:
        self.value, self.action, self.ran = value, action, 0

    def __float__(self) -> float:
        self.ran += 1
        self.action()
        return float(self.value)


class MovesIndex(Moves):
    """An integer that runs ``action`` when it is converted (``operator.index()``)."""

    __float__ = None  # type: ignore[assignment]  # an integer only: float() must not take it

    def __index__(self) -> int:
        self.ran += 1
        self.action()
        return int(self.value)


def _launchers(kernel: Any, bound_args: tuple[Any, ...]) -> dict[str, Callable[..., Any]]:
    """The doors a launch goes through, each already bound/compiled with ``bound_args``."""
    k = cute_bind.kernel(kernel)
    h = k.bind(*bound_args)
    k(*bound_args)  # the specialization kernel(...) reuses
    return {"launch": h.launch, "checked": h.with_checks().launch, "kernel": k}


DOORS = ["launch", "checked", "kernel"]


@pytest.mark.parametrize("door", DOORS)
def test_pointer_slot_read_after_a_float_moves_its_tensor(door: str, path: str) -> None:
    torch = torch_or_skip()
    out, inp = torch.zeros(64), torch.arange(64, dtype=torch.float32)
    go = _launchers(scale, (out, inp, 1.0, 4, 0))[door]
    moved = torch.zeros(64)
    alpha = Moves(3.0, lambda: out.set_(moved))  # out's first storage freed here
    go(out, inp, alpha, 4, 0)
    assert alpha.ran >= 1
    assert moved[:5].tolist() == [0.0, 3.0, 6.0, 9.0, 0.0]  # written where out points at the call


@pytest.mark.parametrize("door", DOORS)
def test_pointer_slot_read_after_an_index_moves_its_tensor(door: str, path: str) -> None:
    torch = torch_or_skip()
    out, inp = torch.zeros(64), torch.arange(64, dtype=torch.float32)
    go = _launchers(scale, (out, inp, 1.0, 4, 0))[door]
    moved = torch.zeros(64)
    n = MovesIndex(4, lambda: out.set_(moved))
    go(out, inp, 2.0, n, 0)
    assert moved[:5].tolist() == [0.0, 2.0, 4.0, 6.0, 0.0]


@pytest.mark.parametrize("door", DOORS)
def test_pointer_slot_read_after_a_float_resizes_its_array(door: str, path: str) -> None:
    inp = np.arange(64, dtype=np.float32)
    go = _launchers(scale, (np.zeros(64, np.float32), inp, 1.0, 4, 0))[door]
    moved = 0
    for _ in range(8):  # realloc may grow a block in place (at the heap's top): count the launches it moved
        out = np.zeros(64, np.float32)
        before = out.ctypes.data
        alpha = Moves(3.0, lambda out=out: out.resize(1 << 22, refcheck=False))  # 16 MiB: the old buffer freed
        go(out, inp, alpha, 4, 0)
        moved += out.ctypes.data != before
        assert out[:5].tolist() == [0.0, 3.0, 6.0, 9.0, 0.0]
    assert moved  # at least one launch read an address its own alpha moved


@pytest.mark.parametrize("door", DOORS)
def test_tensor_slot_read_after_a_float_moves_its_tensor(door: str, path: str) -> None:
    torch = torch_or_skip()
    out, inp = torch.zeros(4), torch.arange(4, dtype=torch.float32)
    go = _launchers(tscale, (out, inp, 1.0))[door]
    moved = torch.zeros(4)
    go(out, inp, Moves(3.0, lambda: out.set_(moved)))
    assert moved.tolist() == [0.0, 3.0, 6.0, 9.0]


@pytest.mark.parametrize("door", DOORS)
def test_keyword_call_reads_addresses_last(door: str, path: str) -> None:
    torch = torch_or_skip()
    out, inp = torch.zeros(4), torch.arange(4, dtype=torch.float32)
    go = _launchers(tscale, (out, inp, 1.0))[door]
    moved = torch.zeros(4)
    go(alpha=Moves(3.0, lambda: out.set_(moved)), inp=inp, out=out)
    assert moved.tolist() == [0.0, 3.0, 6.0, 9.0]


@pytest.mark.parametrize("door", DOORS)
def test_sequence_of_tensors_read_after_its_own_numbers(door: str, path: str) -> None:
    torch = torch_or_skip()
    out, a, b = torch.zeros(4), torch.ones(4), torch.ones(4)
    go = _launchers(tsum_list, (out, (a, b), (1.0, 1.0)))[door]
    moved = torch.full((4,), 10.0)
    go(out, (a, b), (Moves(1.0, lambda: a.set_(moved)), 2.0))
    assert out.tolist() == [12.0] * 4  # a's new storage (10) read, b * 2


@pytest.mark.parametrize("door", DOORS)
def test_structure_tensor_field_read_after_a_later_number_field(door: str, path: str) -> None:
    torch = torch_or_skip()
    out, inp = torch.zeros(4), torch.arange(4, dtype=torch.float32)
    go = _launchers(struct_scale, (Scaled(out, 1.0), inp))[door]
    moved = torch.zeros(4)
    go(Scaled(out, Moves(3.0, lambda: out.set_(moved))), inp)
    assert moved.tolist() == [0.0, 3.0, 6.0, 9.0]


@pytest.mark.parametrize("door", DOORS)
def test_structure_field_rebound_by_a_later_field_is_held(door: str, path: str) -> None:
    torch = torch_or_skip()
    inp = torch.arange(4, dtype=torch.float32)
    go = _launchers(struct_scale, (Scaled(torch.zeros(4), 1.0), inp))[door]
    s = Scaled(torch.zeros(4), 1.0)
    first = s.out
    s.alpha = Moves(3.0, lambda: setattr(s, "out", torch.zeros(4)))
    del first  # the structure's field was the tensor's last reference
    import weakref

    seen = weakref.ref(s.out)
    go(s, inp)
    # the tensor read (the field's value before the rebinding) was held through the call; nothing
    # else refers to it now
    assert seen() is None


def test_a_fresh_tensor_from_a_structure_field_lives_through_the_call(path: str) -> None:
    """A field whose getter builds a new tensor per read (64 MiB: unmapped when freed, so a write
    through its address after it is freed faults): the launch holds what it read."""
    torch_or_skip()
    run_isolated(
        """
        import dataclasses, torch, cute_bind
        from tests.kernels.lifetime import Scaled, struct_scale

        class Fresh(Scaled):
            pass

        made = []

        def fresh_out(self):
            t = torch.zeros(16 << 20)  # 64 MiB
            made.append(t.data_ptr())
            return t

        k = cute_bind.kernel(struct_scale)
        inp = torch.arange(16 << 20, dtype=torch.float32)
        h = k.bind(Scaled(torch.zeros(16 << 20), 1.0), inp)
        s = Scaled(torch.zeros(16 << 20), 2.0)
        Scaled.out = property(fresh_out, lambda self, v: None)  # every read of s.out is a new tensor
        for go in (h.launch, h.with_checks().launch, k):
            go(s, inp)
        assert len(made) >= 3, made
        """,
        path,
    )


# ------------------------------------------------------------------ property: any mover, any target, any door
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    form=st.sampled_from(["torch", "numpy"]),
    movers=st.lists(st.tuples(st.sampled_from(["alpha", "n"]), st.sampled_from(["out", "inp"])), min_size=1, max_size=3),
    door=st.sampled_from(DOORS),
    keywords=st.booleans(),
)
def test_numbers_that_move_any_argument_never_make_a_launch_write_freed_memory(
    path: str, form: str, movers: Any, door: str, keywords: bool
) -> None:
    """``alpha``'s ``__float__`` and ``n``'s ``__index__`` each move ``out`` or ``inp`` to new memory
    (torch ``set_``, NumPy ``resize``), in any combination: the kernel reads and writes the memory
    each holds when the entry point runs (under ASan in CI, any write through a freed address fails)."""
    if form == "torch":
        torch = torch_or_skip()
        out, inp = torch.zeros(64), torch.arange(64, dtype=torch.float32)
    else:
        out, inp = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    key = (path, form, door)
    if key not in _LAUNCHERS:  # one handle per path and door: each example launches with new arrays
        _LAUNCHERS[key] = _launchers(scale, (out, inp, 1.0, 4, 0))[door]
    go = _LAUNCHERS[key]
    arrays = {"out": out, "inp": inp}

    def move(name: str) -> Callable[[], None]:
        def run() -> None:
            a = arrays[name]
            if form == "torch":
                a.set_(a.clone())  # the old storage freed, same values
            else:
                a.resize(64 + 16, refcheck=False)  # a new buffer, same leading values

        return run

    actions: dict[str, list[Callable[[], None]]] = {"alpha": [], "n": []}
    for where, target in movers:
        actions[where].append(move(target))
    alpha = Moves(3.0, lambda: [f() for f in actions["alpha"]]) if actions["alpha"] else 3.0
    n = MovesIndex(4, lambda: [f() for f in actions["n"]]) if actions["n"] else 4
    if keywords:
        go(out=out, inp=inp, alpha=alpha, n=n, stream=0)
    else:
        go(out, inp, alpha, n, 0)
    assert [float(v) for v in out[:5]] == [0.0, 3.0, 6.0, 9.0, 0.0]


_LAUNCHERS: dict[tuple[str, str], Any] = {}


# ------------------------------------------------------------------ composites (review of this rule)
COMPOSITES = {
    # a tensor read inside one composite argument, a number of a later one frees it (set_): 64 MiB
    # tensors, unmapped when freed, so a write through the freed address faults
    "pointer and count in one sequence": """
        k = cute_bind.kernel(K.pointer_and_count)
        inp = torch.arange(4, dtype=torch.float32)
        h = k.bind((torch.zeros(4), 4), inp)
        def call(go, out):
            go((out, Moves(4, lambda: out.set_(torch.zeros(BIG)))), inp)
    """,
    "two structures": """
        k = cute_bind.kernel(K.two_structs)
        inp = torch.arange(4, dtype=torch.float32)
        h = k.bind(K.Scaled(torch.zeros(4), 1.0), K.Counted(inp, 4))
        def call(go, out):
            go(K.Scaled(out, 3.0), K.Counted(inp, Moves(4, lambda: out.set_(torch.zeros(BIG)))))
    """,
    "two unions": """
        k = cute_bind.kernel(K.two_unions)
        h = k.bind(torch.zeros(4), 5)
        def call(go, out):
            go(out, Moves(5, lambda: out.set_(torch.zeros(BIG))))
    """,
}


@pytest.mark.parametrize("case", list(COMPOSITES))
def test_a_later_composite_freeing_an_earlier_ones_tensor_is_memory_safe(path: str, case: str) -> None:
    """A composite argument (sequence, structure, union) reads its tensor's address in its own
    conversion; a later argument's number conversion then frees that tensor's storage. The launch
    holds the storage it read (or reads the address after the conversion), so the kernel writes
    into memory that is alive: before, a segfault on both paths."""
    torch_or_skip()
    prelude = """
        import torch, cute_bind
        import tests.kernels.lifetime as K
        BIG = 16 << 20  # 64 MiB of float32

        class Moves:
            def __init__(self, value, action):
                self.value, self.action = value, action
            def __index__(self):
                self.action()
                return self.value
    """
    doors = """
        for go in (h.launch, h.with_checks().launch, k, k):
            call(go, torch.zeros(BIG))
    """
    run_isolated("".join(textwrap.dedent(part) for part in (prelude, COMPOSITES[case], doors)), path)


def test_an_exporter_read_after_a_plain_tensor_is_left_to_the_slow_path(path: str) -> None:
    """A pointer value read through its own ``__array_interface__`` (whose code frees the plain tensor
    read before it) is read before any plain tensor: the pure-Python launch sends it to the slow path,
    C orders its reads (before: the pure-Python launch aborted in malloc)."""
    torch = torch_or_skip()
    out, inp = torch.zeros(64), torch.arange(64, dtype=torch.float32)
    go = _launchers(scale, (out, inp, 1.0, 4, 0))["launch"]
    moved = torch.zeros(64)
    src = np.arange(64, dtype=np.float32)

    class Exporter:
        @property
        def __array_interface__(self) -> dict[str, Any]:
            out.set_(moved)
            return src.__array_interface__

    go(out, Exporter(), 3.0, 4, 0)
    assert moved[:5].tolist() == [0.0, 3.0, 6.0, 9.0, 0.0]
