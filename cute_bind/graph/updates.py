"""Staging new values into a recorded graph: ``update``, ``updater``, ``updaters``.

:class:`Updates` is the part of :class:`~cute_bind.graph.recorder.Graph` that writes a step's
new values: each through its slot's checks into the step's bytes and node buffers (a changed
derived value refused, CB803, or marked for re-recording), or, for a pointer rewritten in place,
straight into its one node buffer: a closure, or the C setter (``_cgraph.PointerSetter``) where
the extension is built. Nodes written are collected in the graph's dirty set for the next replay.
"""

from __future__ import annotations

import functools
import struct
from collections import abc
from typing import Any, Callable, Sequence

from .. import diagnostics as D
from ..diagnostics.errors import CuteBindError
from ..launch import PreparedLaunch
from ..launch.arguments import bind_arguments
from ..launch import native
from ..launch.lifecycle import HandleState, Lifecycle
from .steps import GraphStats, Phase, Step

__all__ = ["Updates"]

_U64 = 1 << 64


def _is_sequence(value: object) -> bool:
    """Whether ``value`` is a sequence of items (a str or bytes is not: its items are characters)."""
    return isinstance(value, abc.Sequence) and not isinstance(value, (str, bytes))


def _c_setter() -> Any:
    """The C pointer setter class (``_cgraph.PointerSetter``), or None: not built, or
    ``CUTE_BIND_PURE_PYTHON=1`` (read when an updater is made, like the launch paths)."""
    module = native.load("cute_bind.graph._cgraph")
    return None if module is None else module.PointerSetter


class Updates(Lifecycle):
    """The update paths of a graph (its base class): the state they share is set by ``Graph.__init__``."""

    _phase: Phase
    _steps: list[Step]
    _dirty: dict[int, tuple[Any, Any]]  # node index -> (node handle, parameter record) to rewrite
    _pending: set[int]  # steps to re-record before the next replay
    _policy: dict[tuple[int, int], str]
    _derived: str
    stats: GraphStats

    # ------------------------------------------------------------------ replay
    def _require_ready(self, detail: str) -> None:
        if self._phase is not Phase.READY:
            if self._state is not HandleState.OPEN:
                raise self._refusal_error(detail=detail)
            raise self._misuse(detail, "a recorded graph", f"a graph that is {self._phase.value}")

    def _misuse(self, detail: str, expected: str, got: str) -> CuteBindError:
        kernel = self._steps[0].kernel if self._steps else "(none recorded yet)"
        return D.error(D.GRAPH_MISUSE, kernel=kernel, detail=detail, expected=expected, got=got)

    def _step(self, key: Step | int | PreparedLaunch[...]) -> Step:
        if isinstance(key, Step):
            if key._graph() is self:
                return key
        elif isinstance(key, int) and not isinstance(key, bool):
            if 0 <= key < len(self._steps):
                return self._steps[key]
        elif isinstance(key, PreparedLaunch):
            found = [s for s in self._steps if s.handle is key]
            if len(found) == 1:
                return found[0]
            raise self._misuse(
                "a handle names a step only when it was recorded once", "a handle recorded once", f"{len(found)} steps of it"
            )
        raise self._misuse("updates name a recorded step", f"a step of this graph (0..{len(self._steps) - 1})", repr(key))

    def _slot_index(self, step: Step, parameter: str) -> int:
        try:
            return step.names.index(parameter)
        except ValueError:
            raise self._misuse(
                f"step {step.index} has no runtime parameter '{parameter}'", ", ".join(step.names), repr(parameter)
            ) from None

    def _updatable(self, step: Step, parameter: str) -> int:
        """The slot index of a parameter an update names; a stream is refused (it was accepted and
        did nothing: every step runs on the replay's stream)."""
        j = self._slot_index(step, parameter)
        if step.slots[j].kind == "stream":
            raise self._misuse(
                f"step {step.index}'s stream '{parameter}' is not updated: the graph runs on the replay's stream",
                "g.replay(stream=s) to run the graph on another stream",
                f"an update of '{parameter}'",
            )
        return j

    @staticmethod
    def _bind_all(st: Step, args: Sequence[Any]) -> dict[str, Any]:
        sh = st.handle._shared
        return bind_arguments(sh.kernel, sh.names, frozenset(), sh.defaults, tuple(args), {}, sh.hints, sh.constexpr_names)

    def update(self, step: Step | int | PreparedLaunch[...], /, **values: object) -> None:
        """Stage new values for parameters of ``step``; the next ``replay`` runs with them."""
        self._require_ready("updates apply to a recorded graph")
        st = self._step(step)
        for name, value in values.items():
            self._set(st, self._updatable(st, name), value)

    def _set(self, st: Step, j: int, value: object) -> None:
        self._require_ready("updates apply to a recorded graph")  # also a saved updater after close()
        slot = st.slots[j]
        packed = slot.coerce(value, st.wheres[j])
        vals = packed if slot.packs_tuple else (packed,)
        scratch, data = st.scratch, st.data
        k = 0
        for s, off, n in st.writers[j]:
            s.pack_into(scratch, off, *vals[k : k + n])
            k += n
        changed = []
        for it, eff, where in st.state[j]:  # stream items are not in it
            a, b = it.start, it.end
            new = scratch[a:b]
            # an in-place item's current value is in its node buffer (the pointer fast path writes only there)
            cur = where[0][0].buf[where[0][1] : where[0][1] + b - a] if where else data[a:b]
            if new != cur:
                changed.append((it, eff, where, new))
        derived = [c for c in changed if not c[1].in_place]
        if derived:
            policy = self._policy.get((st.index, j), "rerecord" if self._derived == "rerecord" else "fixed")
            if policy != "rerecord":
                it, eff = derived[0][0], derived[0][1]
                raise D.error(
                    D.GRAPH_FIXED_VALUE_CHANGED,
                    kernel=st.kernel,
                    parameter=st.names[j],
                    detail=f"{it.name}: {eff.how}, in step {st.index}",
                    expected="the recorded value (policy 'fixed')",
                    got=repr(value),
                )
            self._pending.add(st.index)
        # the graph holds what it was given (the tensor, array or buffer itself, and what its address
        # was read through) until the slot's next update or close(): the caller may drop it after
        # update()/replay() returns while the nodes keep its address
        st.owners[j] = None if type(value) in (int, float, bool) else (value, packed)
        dirty = self._dirty
        for it, _eff, where, new in changed:
            data[it.start : it.end] = new
            for buf, off in where:
                buf.buf[off : off + len(new)] = new
                dirty[buf.key] = buf.pair

    def updater(self, step: Step | int | PreparedLaunch[...], parameter: str) -> Callable[[Any], None]:
        """A function that stages a new value of ``parameter`` of ``step`` (the replay loop's fast path).

        For a pointer rewritten in place it writes an int address straight
        into the node buffers; other values go through ``update``'s checks.
        """
        self._require_ready("updaters belong to a recorded graph (after the with block)")
        st = self._step(step)
        j = self._updatable(st, parameter)
        items = st.slot_items[j]
        set_slow = self._set
        if st.slots[j].kind == "pointer" and len(items) == 1 and st.effects[items[0]].in_place:
            it = items[0]
            pack = struct.Struct("<Q").pack_into
            dirty = self._dirty

            def locations() -> tuple[tuple[tuple[bytearray, int], ...], tuple[tuple[int, Any], ...]]:
                """(bytearray, offset) pairs, the step's own copy first, then each node buffer; and the dirty keys."""
                plan = st.plan.get(it, ())
                return ((st.data, it.start), *((buf.buf, off) for buf, off in plan)), tuple({buf.key: buf.pair for buf, _ in plan}.items())

            targets, keys = locations()
            if len(targets) == 2 and len(keys) == 1:  # the common case: one location in one node
                # only the node buffer is written: the step's copy is read back from it when
                # needed (_sync), so the fast path is one pack and one dict store. ``ref``
                # ([buffer, offset, node index, (node, record)]) is rewritten by every
                # (re-)recording, so this function stays valid across re-records.
                ref = st.fast.setdefault(it, [None, 0, 0, None])
                st.refresh_fast()
                cset = _c_setter()
                if cset is not None:  # the same steps in C: a bound METH_O method, no Python frame
                    setter: Callable[[Any], None] = cset(ref, dirty, functools.partial(set_slow, st, j)).set  # a bound METH_O
                    return setter

                def set_pointer(value: object) -> None:
                    r = ref
                    if value.__class__ is not int or not 0 <= value < _U64 or r[0] is None:
                        set_slow(st, j, value)
                        return
                    pack(r[0], r[1], value)
                    dirty[r[2]] = r[3]

                return set_pointer

            # several locations: (targets, keys) of the current recording, rebuilt after a re-record
            where: list[Any] = [self.stats.rerecords, targets, keys]

            def set_pointer_n(value: object) -> None:
                if value.__class__ is not int or not 0 <= value < _U64 or self._phase is not Phase.READY:
                    set_slow(st, j, value)
                    return
                if where[0] != self.stats.rerecords:
                    where[:] = [self.stats.rerecords, *locations()]
                for b, off in where[1]:
                    pack(b, off, value)
                dirty.update(where[2])

            return set_pointer_n

        def set_value(value: object) -> None:
            set_slow(st, j, value)

        return set_value

    def updaters(self, targets: Sequence[tuple[Step | int | PreparedLaunch[...], str]], /) -> Callable[[Sequence[object]], None]:
        """One function that stages a value for each ``(step, parameter)`` of ``targets``: the
        batched form of :meth:`updater`, for a replay loop that changes the same parameters of
        many steps each time (``set_all([out0, out1, ...])``, a list or tuple of as many values,
        in the order of ``targets``).

        Int addresses for pointers rewritten in place are written in one C call (no Python
        frame per value); every other value goes through that parameter's :meth:`updater`.
        A value list of another length raises CB806 and stages nothing.
        """
        self._require_ready("updaters belong to a recorded graph (after the with block)")
        if not _is_sequence(targets):  # the annotation says Sequence; a caller may pass anything
            raise self._misuse("updaters takes a sequence of (step, parameter) pairs", "a list of pairs", type(targets).__name__)
        setters = []
        for target in targets:
            if not (isinstance(target, tuple) and len(target) == 2 and isinstance(target[1], str)):
                raise self._misuse("updaters takes a sequence of (step, parameter) pairs", "a (step, parameter) pair", repr(target))
            setters.append(self.updater(*target))
        count = len(setters)
        cgraph = native.load("cute_bind.graph._cgraph")
        batch = None
        if cgraph is not None and all(getattr(f, "__self__", None).__class__ is cgraph.PointerSetter for f in setters):
            batch = functools.partial(cgraph.set_pointers, tuple(getattr(f, "__self__", None) for f in setters))
        misuse = self._misuse

        def wrong(values: object) -> CuteBindError:
            got = f"{len(values)} values" if isinstance(values, (list, tuple)) else type(values).__name__
            return misuse(
                "a batched updater takes one value per (step, parameter) it was made for", f"a list or tuple of {count} values", got
            )

        if batch is not None:

            def set_all_c(values: Sequence[object]) -> None:
                if batch(values) is False:
                    raise wrong(values)

            return set_all_c

        def set_all(values: Sequence[object]) -> None:
            if not isinstance(values, (list, tuple)) or len(values) != count:
                raise wrong(values)
            # a snapshot: a setter's conversion may change the list (the C batch reads one too)
            for f, v in zip(setters, tuple(values)):
                f(v)

        return set_all
